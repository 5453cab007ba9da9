// `tiletune tune --shard I/N` and `tiletune merge` as a cluster uses them, on the CPU backend: a
// tune run as one process and as shards into their own databases, given their files and shapes in
// other orders, then merged, gives the one process's database row for row (timings aside); guided
// shards share out the template and shape pairs; a shard without work says so; bad arguments and
// inputs are one line and exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "db/result_store.h"
#include "tests/support/database_rows.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/source_tree.h"
#include "tuner/core/configurations.h"
#include "tuner/core/kernel_template.h"
#include "tuner/search/tune_shard.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::TiletuneRun;

namespace fs = std::filesystem;
using testing_support::DatabaseDump;
using testing_support::rows;

using testing_support::kTemplates;

// Every table of a tune's file, rows read by what identifies them, without what a measurement on
// the CPU backend makes differ from run to run: results' times, runs, TFLOP/s and the detail of an
// ok result (it says whether the confirmation re-measured it, which each shard does among its own
// best); search steps without their run, number and time (a multiset per template and shape);
// recorded_at everywhere. Kept: every key, status, configuration, failure detail, ptxas figure,
// fuzz pass count, template version (source, path, precision, order) and GPU column.
std::vector<std::string> dump_without_timings(const fs::path& path) {
  using D = DatabaseDump;
  DatabaseDump dump(path);
  dump.add("results", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, " + D::shape +
                          ", x.status, CASE WHEN x.status = 'ok' THEN '' ELSE x.detail END, "
                          "x.registers, x.static_shared_bytes, x.dynamic_shared_bytes, x.spill_bytes, "
                          "x.driver_version, x.nvrtc_version FROM results x" + D::joins_with_shape);
  dump.add("fuzz_passes",
           "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, x.cases FROM fuzz_passes x" + D::joins);
  dump.add("missed_problems",
           "SELECT gpu_name, template_name, m, n, k, lda, ldb, ldc, count FROM missed_problems");
  dump.add("counters", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, " + D::shape +
                           ", x.metric, x.value FROM counters x" + D::joins_with_shape);
  dump.add("bench_results", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, " + D::shape +
                                " FROM bench_results x" + D::joins_with_shape);
  dump.add("search_trace", "SELECT " + D::gpu + ", " + D::tmpl + ", " + D::shape +
                               ", x.strategy, x.config, x.status, x.recorded_earlier FROM "
                               "search_trace x" + D::joins_with_shape);
  return dump.lines();
}

// The (template, shape) pairs a file holds results of.
std::set<std::string> tuned_pairs(const fs::path& path) {
  const std::vector<std::string> pairs = rows(
      path, "SELECT DISTINCT t.name || ' ' || s.m || 'x' || s.n || 'x' || s.k FROM results r "
            "JOIN templates t ON t.id = r.template_id JOIN shapes s ON s.id = r.shape_id");
  return {pairs.begin(), pairs.end()};
}

// A folder of its own per test; compiled kernels kept in the build folder across tests and runs
// (the CPU tune tests' cache), so that each configuration is built once.
class ShardMerge : public testing_tools::TiletuneFolderTest {
 protected:
  ShardMerge() : TiletuneFolderTest("tiletune_shard_") {}

  // tune of the kernels at the shapes on the CPU backend, into `db`, with `extra` arguments.
  TiletuneRun tune(const std::vector<std::string>& kernels, const std::vector<std::string>& shapes,
                   const fs::path& db, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args{"tune"};
    for (const std::string& kernel : kernels) args.push_back((kTemplates / kernel).string());
    for (const std::string& shape : shapes) {
      args.push_back("--shape");
      args.push_back(shape);
    }
    for (const char* arg : {"--backend", "cpu", "--cases", "5", "--db"}) args.push_back(arg);
    args.push_back(db.string());
    args.insert(args.end(), extra.begin(), extra.end());
    return tiletune(args);
  }
};

struct Sharding {
  const char* name;
  std::vector<std::string> strategy;  // the tune's --strategy and --budget
  int shards;
};

void PrintTo(const Sharding& sharding, std::ostream* os) { *os << sharding.name; }

class ShardedTune : public ShardMerge, public ::testing::WithParamInterface<Sharding> {};

// The proof that sharding changes nothing but who does the work: shard 1 is given the files and
// shapes in reverse order, and the shards' files are merged in reverse order too.
TEST_P(ShardedTune, MergedShardsHoldTheOneProcessTuneRowForRow) {
  const Sharding& sharding = GetParam();
  const std::vector<std::string> kernels{"tiled.cu", "naive.cu"};
  const std::vector<std::string> shapes{"40x36x20", "33x31x17"};
  const TiletuneRun whole = tune(kernels, shapes, dir_ / "one.db", sharding.strategy);
  ASSERT_EQ(whole.exit_code, 0) << whole;

  std::vector<std::string> merge_args{"merge", (dir_ / "merged.db").string()};
  for (int i = sharding.shards - 1; i >= 0; --i) {
    const fs::path db = dir_ / ("shard_" + std::to_string(i) + ".db");
    std::vector<std::string> extra = sharding.strategy;
    extra.push_back("--shard");
    extra.push_back(std::to_string(i) + "/" + std::to_string(sharding.shards));
    const bool reversed = i == 1;
    const TiletuneRun shard = tune(reversed ? std::vector<std::string>{kernels.rbegin(), kernels.rend()} : kernels,
                                   reversed ? std::vector<std::string>{shapes.rbegin(), shapes.rend()} : shapes,
                                   db, extra);
    ASSERT_EQ(shard.exit_code, 0) << shard;
    ASSERT_TRUE(fs::exists(db)) << shard;
    merge_args.push_back(db.string());
  }
  const TiletuneRun merged = tiletune(merge_args);
  ASSERT_EQ(merged.exit_code, 0) << merged;
  EXPECT_THAT(merged.out, HasSubstr(fmt::format("merged {} databases into ", sharding.shards))) << merged;

  const std::vector<std::string> expected = dump_without_timings(dir_ / "one.db");
  ASSERT_GT(rows(dir_ / "one.db", "SELECT 1 FROM results").size(), 8u) << "a tune that did something";
  EXPECT_EQ(dump_without_timings(dir_ / "merged.db"), expected);
  // Every shard did some of it (the partition is not all in one shard).
  for (int i = 0; i < sharding.shards; ++i) {
    EXPECT_FALSE(rows(dir_ / ("shard_" + std::to_string(i) + ".db"), "SELECT 1 FROM results").empty()) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, ShardedTune,
    ::testing::Values(Sharding{"Exhaustive", {}, 3},
                      // a count budget is the whole tune's: the shards do the one process's first 4
                      Sharding{"RandomWithABudget", {"--strategy", "random", "--budget", "4", "--seed", "5"}, 2}),
    [](const auto& info) { return std::string(info.param.name); });

// Guided shards search whole (template, shape) pairs, each pair in exactly one shard.
TEST_F(ShardMerge, GuidedShardsShareOutTheTemplateAndShapePairs) {
  const std::vector<std::string> guided{"--strategy", "annealing", "--budget", "2"};
  std::set<std::string> all;
  std::size_t tuned = 0;
  for (int i = 0; i < 2; ++i) {
    const fs::path db = dir_ / ("shard_" + std::to_string(i) + ".db");
    std::vector<std::string> extra = guided;
    extra.push_back("--shard");
    extra.push_back(std::to_string(i) + "/2");
    const TiletuneRun run = tune({"tiled.cu", "naive.cu"}, {"40x36x20", "33x31x17"}, db, extra);
    ASSERT_EQ(run.exit_code, 0) << run;
    const std::set<std::string> pairs = tuned_pairs(db);
    EXPECT_EQ(pairs.size(), 2u) << run;
    tuned += pairs.size();
    all.insert(pairs.begin(), pairs.end());
  }
  EXPECT_EQ(tuned, 4u);
  EXPECT_EQ(all, (std::set<std::string>{"naive 33x31x17", "naive 40x36x20", "tiled 33x31x17",
                                        "tiled 40x36x20"}));
}

// A shard that owns nothing of the tune says so in one line, exits 0 and leaves an empty database
// for the merge: guided, more shards than pairs; exhaustive, a shard that owns none of the space.
TEST_F(ShardMerge, AShardWithoutWorkSaysSoInOneLine) {
  const TiletuneRun guided = tune({"tiled.cu"}, {"40x36x20"}, dir_ / "guided.db",
                                  {"--strategy", "annealing", "--shard", "3/4"});
  EXPECT_EQ(guided.exit_code, 0) << guided;
  EXPECT_EQ(lines_of(guided.out), std::vector<std::string>{fmt::format(
                                      "shard 3/4: no work in this tune (annealing strategy), nothing "
                                      "tuned; {} holds nothing of it", (dir_ / "guided.db").string())})
      << guided;
  EXPECT_EQ(guided.err, "") << guided;

  const KernelTemplate tiled = load_template(kTemplates / "tiled.cu");
  const GemmShape shape{40, 36, 20};
  const std::vector<Configuration> space = enumerate_configurations(tiled, &shape);
  unsigned idle = 0;
  const auto owns_any = [&](unsigned index) {
    const TuneShard shard = TuneShard::parse(fmt::format("{}/100", index));
    return std::any_of(space.begin(), space.end(), [&](const Configuration& config) {
      return shard.owns_configuration(tiled.source_hash, config.to_string());
    });
  };
  while (owns_any(idle)) ++idle;
  const TiletuneRun exhaustive = tune({"tiled.cu"}, {"40x36x20"}, dir_ / "exhaustive.db",
                                      {"--shard", fmt::format("{}/100", idle)});
  EXPECT_EQ(exhaustive.exit_code, 0) << exhaustive;
  EXPECT_THAT(exhaustive.out, StartsWith(fmt::format("shard {}/100: no work in this tune", idle))) << exhaustive;
  EXPECT_EQ(lines_of(exhaustive.out).size(), 1u) << exhaustive;

  const TiletuneRun merged = tiletune({"merge", (dir_ / "merged.db").string(),
                                       (dir_ / "guided.db").string(), (dir_ / "exhaustive.db").string()});
  EXPECT_EQ(merged.exit_code, 0) << merged;
  EXPECT_TRUE(rows(dir_ / "merged.db", "SELECT 1 FROM results").empty());
}

TEST_F(ShardMerge, BadShardsAreOneLineAndExit2) {
  for (const char* shard : {"3/3", "2/1", "0/0", "a/b", "1"}) {
    const TiletuneRun run = tune({"tiled.cu"}, {"40x36x20"}, dir_ / "bad.db", {"--shard", shard});
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, StartsWith(fmt::format("tiletune: --shard '{}': ", shard))) << run;
    EXPECT_FALSE(fs::exists(dir_ / "bad.db")) << shard;
  }
  const TiletuneRun missed = tiletune({"tune", "--missed", "--shard", "0/2", "--backend", "cpu"});
  expect_one_line_failure(missed, 2);
}

// merge refuses OUT among its inputs, a missing input and a file of an unknown schema version,
// naming it, in one line; nothing is written.
TEST_F(ShardMerge, MergeRefusalsAreOneLineAndExit2) {
  const TiletuneRun tuned = tune({"naive.cu"}, {"40x36x20"}, dir_ / "a.db");
  ASSERT_EQ(tuned.exit_code, 0) << tuned;
  const std::string a = (dir_ / "a.db").string();

  const TiletuneRun itself = tiletune({"merge", a, a});
  expect_one_line_failure(itself, 2);
  EXPECT_THAT(itself.err, HasSubstr("it is the database merged into")) << itself;

  const TiletuneRun missing = tiletune({"merge", (dir_ / "out.db").string(), (dir_ / "none.db").string()});
  expect_one_line_failure(missing, 2);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "future.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x); PRAGMA user_version = 9;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const TiletuneRun future = tiletune({"merge", (dir_ / "out.db").string(), a, (dir_ / "future.db").string()});
  expect_one_line_failure(future, 2);
  EXPECT_THAT(future.err, HasSubstr((dir_ / "future.db").string() + ": schema version 9")) << future;
  EXPECT_FALSE(fs::exists(dir_ / "out.db"));

  const TiletuneRun ok = tiletune({"merge", (dir_ / "out.db").string(), a});
  ASSERT_EQ(ok.exit_code, 0) << ok;
  EXPECT_THAT(ok.out, StartsWith(a + " (schema 8): gpus 1 added, templates 1 added, shapes 1 added, "
                                     "results ")) << ok;
  const TiletuneRun again = tiletune({"merge", (dir_ / "out.db").string(), a});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, StartsWith(a + " (schema 8): nothing new\n")) << again;
}

}  // namespace
}  // namespace tiletune
