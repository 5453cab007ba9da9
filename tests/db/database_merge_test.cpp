// merge_databases (db/database_merge.h): every table joined with its evidence, ids matched by what
// identifies them, each rule for a key held twice, the order of template versions, idempotence and
// the same outcome in any order of inputs, inputs of older schemas read, and refusals (an unknown
// schema, OUT among the inputs, a broken input) that leave OUT as it was and the inputs untouched.
#include "db/database_merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tests/support/database_rows.h"
#include "tests/support/result_records.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using testing_support::DatabaseDump;
using testing_support::rows;
using ::testing::HasSubstr;

GpuRecord h100() {
  GpuRecord gpu = h200();
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.sm_count = 132;
  gpu.memory_bytes = 85'000'000'000ULL;
  return gpu;
}

// Every table of a file as its rows read by what identifies them (no row ids), every column
// else; template versions with their order within their name rather than their numbers.
std::vector<std::string> dump(const fs::path& path) {
  using D = DatabaseDump;
  DatabaseDump dump(path);
  dump.add("results", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, " + D::shape +
                          ", x.status, x.detail, x.median_ms, x.min_ms, x.max_ms, x.runs, x.tflops, "
                          "x.registers, x.static_shared_bytes, x.dynamic_shared_bytes, x.spill_bytes, "
                          "x.driver_version, x.nvrtc_version, x.recorded_at FROM results x" +
                          D::joins_with_shape);
  dump.add("fuzz_passes", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, x.cases, x.recorded_at "
                          "FROM fuzz_passes x" + D::joins);
  dump.add("missed_problems", "SELECT * FROM missed_problems");
  dump.add("counters", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, " + D::shape +
                           ", x.metric, x.value, x.ncu_version, x.recorded_at FROM counters x" +
                           D::joins_with_shape);
  dump.add("bench_results", "SELECT " + D::gpu + ", " + D::tmpl + ", x.config, " + D::shape +
                                ", x.ours_ms, x.cublas_ms, x.recorded_at FROM bench_results x" +
                                D::joins_with_shape);
  dump.add("search_trace", "SELECT x.run_id, " + D::gpu + ", " + D::tmpl + ", " + D::shape +
                               ", x.seq, x.strategy, x.config, x.status, x.median_ms, "
                               "x.recorded_earlier, x.recorded_at FROM search_trace x" +
                               D::joins_with_shape);
  return dump.lines();
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The current version of a template name in a file.
std::string current_version(const fs::path& path, const std::string& name) {
  return query_file(path, ("SELECT source_hash FROM templates WHERE name = '" + name +
                           "' ORDER BY registered_seq DESC LIMIT 1").c_str());
}

TraceRecord trace_step(const std::string& run_id, const std::string& name, const std::string& hash,
                       int seq, const std::string& config) {
  TraceRecord step;
  step.run_id = run_id;
  step.template_name = name;
  step.template_hash = hash;
  step.shape = kSquare;
  step.seq = seq;
  step.strategy = "exhaustive";
  step.config = config;
  step.status = ResultStatus::ok;
  step.median_ms = 1.0 + seq;
  return step;
}

class DatabaseMergeTest : public ResultStoreTest {
 protected:
  fs::path file(const std::string& name) const { return dir_ / name; }
  fs::path out() const { return dir_ / "out.db"; }

  // A file with one template version and one result on a GPU, all recorded at `at`.
  fs::path one_result(const std::string& name, const GpuRecord& gpu, const std::string& hash,
                      ResultRecord result, const std::string& at) {
    const fs::path path = file(name);
    {
      ResultStore store(path);
      const std::int64_t gpu_id = store.register_gpu(gpu);
      store.register_template(make_template(result.template_name, hash));
      result.template_hash = hash;
      store.record_result(gpu_id, gpu, result);
    }
    exec_file(path, "UPDATE results SET recorded_at = '" + at + "'");
    return path;
  }
};

// Two files of different GPUs (registered in another order, so that their ids differ), template
// names and shapes, every table filled: the merged file holds the rows of both, each read by what
// identifies it.
TEST_F(DatabaseMergeTest, EveryTableOfEveryInputIsKeptWithItsEvidence) {
  const fs::path a = file("a.db"), b = file("b.db");
  {
    ResultStore store(a);
    const std::int64_t gpu = store.register_gpu(h200());
    TemplateRecord tiled = make_template("tiled", "h1");
    tiled.precision = Precision::tf32;
    store.register_template(tiled);
    store.record_result(gpu, h200(), make_result("tiled", "h1", "TILE=16", kSquare, ResultStatus::ok, 1.5));
    ResultRecord wrong = make_result("tiled", "h1", "TILE=32", kSquare, ResultStatus::wrong_result, 0);
    wrong.detail = "C[3,4] = 1 expected 2";
    store.record_result(gpu, h200(), wrong);
    ResultRecord batched = make_result("tiled", "h1", "TILE=16", kSquare, ResultStatus::ok, 40);
    batched.op = {Op::n, Op::t};
    batched.batch = 96;
    store.record_result(gpu, h200(), batched);
    store.record_fuzz_pass(gpu, "tiled", "h1", "TILE=16", 30);
    store.record_counters(gpu, {"", "tiled", "h1", "TILE=16", kSquare, {{"dram_bytes", 1e6}, {"ipc", 2.5}},
                                "2025.1", ""});
    store.record_bench(gpu, {"", "tiled", "h1", "TILE=16", kSquare, 1.5, 1.2, ""});
    store.record_trace(gpu, trace_step("00000000000000aa", "tiled", "h1", 1, "TILE=16"));
    store.record_trace(gpu, trace_step("00000000000000aa", "tiled", "h1", 2, "TILE=32"));
    store.record_miss("NVIDIA H200", "tiled", GemmProblem::packed(kTall));
  }
  {
    ResultStore store(b);
    const std::int64_t other = store.register_gpu(h100());
    const std::int64_t gpu = store.register_gpu(h200());
    ASSERT_NE(gpu, 1);
    store.register_template(make_template("naive", "n1"));
    store.record_result(gpu, h200(), make_result("naive", "n1", "BLOCK=8", kTall, ResultStatus::ok, 9.0));
    store.record_result(other, h100(), make_result("naive", "n1", "BLOCK=8", kTall, ResultStatus::ok, 8.0));
    store.record_fuzz_pass(other, "naive", "n1", "BLOCK=8", 100);
    store.record_trace(other, trace_step("00000000000000bb", "naive", "n1", 1, "BLOCK=8"));
    store.record_miss("NVIDIA H100 80GB HBM3", "naive", GemmProblem::packed(kSquare));
  }
  const auto merged = merge_databases(out(), {a, b});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].schema_version, 8);
  EXPECT_EQ(merged[0].added.at("results"), 3);
  EXPECT_EQ(merged[1].added.at("results"), 2);
  EXPECT_EQ(merged[0].added.at("counters"), 2);

  std::vector<std::string> expected = dump(a);
  const std::vector<std::string> from_b = dump(b);
  expected.insert(expected.end(), from_b.begin(), from_b.end());
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());  // the shared H200
  EXPECT_EQ(dump(out()), expected);
  // And the store reads them as it reads its own: the tf32 template, the fuzz cases of a winner.
  const ResultStore store(out(), ResultStore::Access::read_only);
  EXPECT_EQ(store.templates().at(1).precision, Precision::tf32);
  EXPECT_EQ(store.best("NVIDIA H100 80GB HBM3", kTall)->config, "BLOCK=8");
  const auto batched = store.best("NVIDIA H200", kSquare, std::nullopt, Precision::tf32, TunedFor{{Op::n, Op::t}, 96});
  ASSERT_TRUE(batched.has_value()) << "a record of transposes and a batch keeps both";
  EXPECT_EQ(batched->median_ms, 40);
  std::map<std::string, int> fuzz_cases;
  for (const CurrentResult& row : store.current_results()) {
    fuzz_cases[row.gpu.name + " " + row.result.config] = row.fuzz_cases;
  }
  EXPECT_EQ(fuzz_cases, (std::map<std::string, int>{{"NVIDIA H100 80GB HBM3 BLOCK=8", 100},
                                                    {"NVIDIA H200 BLOCK=8", 0},
                                                    {"NVIDIA H200 TILE=16", 30}}));
}

// A result recorded twice: the later recording wins, as a second recording into one file would;
// in the same second an ok result beats a failure, then the one with more timed runs.
TEST_F(DatabaseMergeTest, AResultHeldTwiceIsTheLaterRecordingThenOkThenMoreRuns) {
  const ResultRecord ok = make_result("tiled", "h1", "TILE=16", kSquare, ResultStatus::ok, 1.5);
  ResultRecord timeout = make_result("tiled", "h1", "TILE=16", kSquare, ResultStatus::timeout, 0);
  timeout.runs = 0;
  timeout.detail = "the worker was silent for 30 s";
  ResultRecord more_runs = ok;
  more_runs.runs = 40;
  more_runs.median_ms = 1.4;

  struct Case {
    ResultRecord first, second;
    std::string first_at, second_at;
    ResultRecord winner;
  };
  const std::vector<Case> cases{
      {ok, timeout, "2025-01-01 10:00:00", "2025-01-01 11:00:00", timeout},
      {timeout, ok, "2025-01-01 10:00:00", "2025-01-01 11:00:00", ok},
      {timeout, ok, "2025-01-01 10:00:00", "2025-01-01 10:00:00", ok},
      {ok, more_runs, "2025-01-01 10:00:00", "2025-01-01 10:00:00", more_runs},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const fs::path first = one_result("first" + std::to_string(i) + ".db", h200(), "h1", c.first, c.first_at);
    const fs::path second = one_result("second" + std::to_string(i) + ".db", h200(), "h1", c.second, c.second_at);
    for (const bool reversed : {false, true}) {
      const fs::path merged = file("merged" + std::to_string(i) + (reversed ? "r" : "") + ".db");
      merge_databases(merged, reversed ? std::vector{second, first} : std::vector{first, second});
      const auto recorded = ResultStore(merged).recorded_results(1, "h1", kSquare);
      ASSERT_EQ(recorded.size(), 1u);
      SCOPED_TRACE("case " + std::to_string(i) + (reversed ? ", inputs reversed" : ""));
      expect_same_result(recorded.at("TILE=16"), c.winner);
      EXPECT_EQ(recorded.at("TILE=16").recorded_at, c.second_at);
    }
  }
  // A full tie keeps the row already there.
  const fs::path there = one_result("there.db", h200(), "h1", ok, "2025-01-01 10:00:00");
  ResultRecord same_time = ok;
  same_time.median_ms = 2.0;
  const fs::path tie = one_result("tie.db", h200(), "h1", same_time, "2025-01-01 10:00:00");
  const auto merged = merge_databases(there, {tie});
  EXPECT_EQ(merged[0].replaced.at("results"), 0);
  EXPECT_DOUBLE_EQ(ResultStore(there).recorded_results(1, "h1", kSquare).at("TILE=16").median_ms, 1.5);
}

// Fuzz passes keep the most cases; counters go by profile, the later replacing all the earlier's
// metrics; bench rows the later; missed problems the larger count and the widest span of sightings;
// search steps are all kept; a GPU's driver is that of its latest rows. In either order of inputs.
TEST_F(DatabaseMergeTest, EachTableHasItsRuleForAKeyHeldTwice) {
  const fs::path early = file("early.db"), late = file("late.db");
  GpuRecord newer_driver = h200();
  newer_driver.driver_version = 13010;
  newer_driver.nvrtc_version = "13.1";
  const auto fill = [](const fs::path& path, const GpuRecord& gpu, int cases,
                       std::map<std::string, double> metrics, double ours_ms, const char* run_id,
                       int misses) {
    ResultStore store(path);
    const std::int64_t id = store.register_gpu(gpu);
    store.register_template(make_template("tiled", "h1"));
    store.record_result(id, gpu, make_result("tiled", "h1", "TILE=16", kSquare, ResultStatus::ok, 1.5));
    store.record_fuzz_pass(id, "tiled", "h1", "TILE=16", cases);
    store.record_counters(id, {"", "tiled", "h1", "TILE=16", kSquare, metrics, "2025.1", ""});
    store.record_bench(id, {"", "tiled", "h1", "TILE=16", kSquare, ours_ms, 1.0, ""});
    store.record_trace(id, trace_step(run_id, "tiled", "h1", 1, "TILE=16"));
    for (int i = 0; i < misses; ++i) store.record_miss(gpu.name, "tiled", GemmProblem::packed(kTall));
  };
  fill(early, h200(), 100, {{"dram_bytes", 1e6}, {"ipc", 2.5}}, 1.5, "00000000000000aa", 3);
  fill(late, newer_driver, 30, {{"dram_bytes", 2e6}}, 1.4, "00000000000000bb", 1);
  const auto at = [](const fs::path& path, const std::string& time) {
    exec_file(path, "UPDATE results SET recorded_at = '" + time + "'; UPDATE fuzz_passes SET recorded_at = '" +
                        time + "'; UPDATE counters SET recorded_at = '" + time +
                        "'; UPDATE bench_results SET recorded_at = '" + time +
                        "'; UPDATE search_trace SET recorded_at = '" + time +
                        "'; UPDATE missed_problems SET first_seen = '" + time + "', last_seen = '" + time + "'");
  };
  at(early, "2025-01-01 10:00:00");
  at(late, "2025-01-02 10:00:00");

  for (const bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "late first" : "early first");
    const fs::path merged = file(reversed ? "reversed.db" : "merged.db");
    merge_databases(merged, reversed ? std::vector{late, early} : std::vector{early, late});
    EXPECT_EQ(rows(merged, "SELECT cases, recorded_at FROM fuzz_passes"),
              std::vector<std::string>{"100|2025-01-02 10:00:00"});
    EXPECT_EQ(rows(merged, "SELECT metric, value, recorded_at FROM counters"),
              std::vector<std::string>{"dram_bytes|2000000.0|2025-01-02 10:00:00"});
    EXPECT_EQ(rows(merged, "SELECT ours_ms FROM bench_results"), std::vector<std::string>{"1.4"});
    EXPECT_EQ(rows(merged, "SELECT count, first_seen, last_seen FROM missed_problems"),
              std::vector<std::string>{"3|2025-01-01 10:00:00|2025-01-02 10:00:00"});
    EXPECT_EQ(rows(merged, "SELECT run_id FROM search_trace"),
              (std::vector<std::string>{"00000000000000aa", "00000000000000bb"}));
    EXPECT_EQ(rows(merged, "SELECT driver_version, nvrtc_version FROM gpus"),
              std::vector<std::string>{"13010|13.1"});
  }
}

// The current version of a name is the one tuned last, whichever file it comes from: h2 was tuned
// after h1 in one file, h1 again later in another. Within one second, a file's own order stands,
// and a version registered last that recorded nothing yet stays after those before it.
TEST_F(DatabaseMergeTest, TemplateVersionsAreOrderedByWhenTheyWereLastTuned) {
  const ResultRecord result = make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5);
  const fs::path both = file("both.db"), again = file("again.db");
  {
    ResultStore store(both);
    const std::int64_t gpu = store.register_gpu(h200());
    for (const char* hash : {"h1", "h2"}) {
      store.register_template(make_template("tiled", hash));
      ResultRecord r = result;
      r.template_hash = hash;
      store.record_result(gpu, h200(), r);
    }
  }
  exec_file(both, "UPDATE results SET recorded_at = CASE template_id WHEN 1 THEN '2025-01-01 10:00:00' "
                  "ELSE '2025-01-01 11:00:00' END");
  ASSERT_EQ(current_version(both, "tiled"), "h2");
  one_result("again.db", h200(), "h1", result, "2025-01-01 12:00:00");

  merge_databases(file("a.db"), {both});
  EXPECT_EQ(current_version(file("a.db"), "tiled"), "h2");
  merge_databases(file("ab.db"), {both, again});
  EXPECT_EQ(current_version(file("ab.db"), "tiled"), "h1");
  merge_databases(file("ba.db"), {again, both});
  EXPECT_EQ(current_version(file("ba.db"), "tiled"), "h1");
  merge_databases(file("into.db"), {both});  // into a file that holds h2 current already
  merge_databases(file("into.db"), {again});
  EXPECT_EQ(current_version(file("into.db"), "tiled"), "h1");

  // Recorded in the same second: the file's order; h3 registered last, nothing recorded yet.
  exec_file(both, "UPDATE results SET recorded_at = '2025-01-01 10:00:00'");
  merge_databases(file("same_second.db"), {both});
  EXPECT_EQ(current_version(file("same_second.db"), "tiled"), "h2");
  ResultStore(both).register_template(make_template("tiled", "h3"));
  merge_databases(file("unrecorded.db"), {both});
  EXPECT_EQ(current_version(file("unrecorded.db"), "tiled"), "h3");
  EXPECT_EQ(rows(file("unrecorded.db"), "SELECT source_hash FROM templates ORDER BY registered_seq"),
            (std::vector<std::string>{"h1", "h2", "h3"}));
}

// Merging an input again changes nothing, nor does merging the merged file's own inputs in another
// order; the registered_seq numbers themselves stay.
TEST_F(DatabaseMergeTest, MergingIsIdempotentAndTheSameInEitherOrder) {
  const fs::path a = one_result("a.db", h200(), "h1",
                                make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                "2025-01-01 10:00:00");
  const fs::path b = one_result("b.db", h100(), "h2",
                                make_result("tiled", "", "TILE=32", kTall, ResultStatus::ok, 2.5),
                                "2025-01-01 11:00:00");
  ResultStore(a).record_trace(1, trace_step("00000000000000aa", "tiled", "h1", 1, "TILE=16"));
  merge_databases(out(), {a, b});
  const std::vector<std::string> once = dump(out());
  const std::vector<std::string> seqs = rows(out(), "SELECT source_hash, registered_seq FROM templates");
  const auto again = merge_databases(out(), {a, b, a});
  for (const MergedInput& input : again) {
    for (const auto& [table, added] : input.added) EXPECT_EQ(added, 0) << table;
    for (const auto& [table, replaced] : input.replaced) EXPECT_EQ(replaced, 0) << table;
  }
  EXPECT_EQ(dump(out()), once);
  EXPECT_EQ(rows(out(), "SELECT source_hash, registered_seq FROM templates"), seqs);
  merge_databases(file("reversed.db"), {b, a});
  EXPECT_EQ(dump(file("reversed.db")), once);
}

// An input of a schema this tiletune does not know, or no tiletune database, is refused with the
// file and its version named before anything is written: OUT stays as it was, or is not made.
TEST_F(DatabaseMergeTest, AnUnknownSchemaIsRefusedBeforeAnythingIsWritten) {
  const fs::path good = one_result("good.db", h200(), "h1",
                                   make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                   "2025-01-01 10:00:00");
  const fs::path newer = file("newer.db"), foreign = file("foreign.db");
  exec_file(newer, std::string("CREATE TABLE future (x); PRAGMA user_version = 9;"));
  exec_file(foreign, "CREATE TABLE notes (text TEXT);");

  try {
    merge_databases(out(), {good, newer});
    FAIL() << "a version 9 input was merged";
  } catch (const DatabaseError& e) {
    EXPECT_THAT(e.what(), HasSubstr(newer.string() + ": schema version 9 is not one this tiletune reads"));
  }
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_THROW(merge_databases(out(), {good, foreign}), DatabaseError);
  EXPECT_FALSE(fs::exists(out()));

  merge_databases(out(), {good});
  const std::string before = bytes_of(out());
  const std::vector<std::string> rows_before = dump(out());
  const fs::path other = one_result("other.db", h100(), "h9",
                                    make_result("naive", "", "B=8", kTall, ResultStatus::ok, 1.0),
                                    "2025-01-01 10:00:00");
  EXPECT_THROW(merge_databases(out(), {other, newer}), DatabaseError);
  EXPECT_EQ(dump(out()), rows_before);
  EXPECT_EQ(bytes_of(out()), before);
}

// OUT given as an input too is refused, by another path as well.
TEST_F(DatabaseMergeTest, MergingAFileIntoItselfIsRefused) {
  const fs::path a = one_result("a.db", h200(), "h1",
                                make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                "2025-01-01 10:00:00");
  const std::vector<std::string> before = dump(a);
  EXPECT_THROW(merge_databases(a, {a}), DatabaseError);
  fs::create_directories(dir_ / "sub");
  EXPECT_THROW(merge_databases(a, {dir_ / "sub" / ".." / "a.db"}), DatabaseError);
  EXPECT_EQ(dump(a), before);
}

// A template name that is no identifier (edited in by hand: tiletune records none) would become a
// path outside an export's folder and text in its C++: such an input is refused before anything
// is written, and reading it through the store is refused too.
TEST_F(DatabaseMergeTest, AnInputWhoseTemplateNameIsNoIdentifierIsRefused) {
  const fs::path good = one_result("good.db", h200(), "h1",
                                   make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                   "2025-01-01 10:00:00");
  const fs::path edited = one_result("edited.db", h200(), "h2",
                                     make_result("naive", "", "B=8", kSquare, ResultStatus::ok, 1.0),
                                     "2025-01-01 10:00:00");
  exec_file(edited, "UPDATE templates SET name = '../../../escaped/tiled'");
  try {
    merge_databases(out(), {good, edited});
    FAIL() << "a template named ../../../escaped/tiled was merged";
  } catch (const DatabaseError& e) {
    EXPECT_THAT(e.what(), HasSubstr(edited.string() + ": template name \"../../../escaped/tiled\" "
                                    "is not an identifier: nothing merged"));
  }
  EXPECT_FALSE(fs::exists(out()));
  try {
    ResultStore(edited, ResultStore::Access::read_only).templates();
    FAIL() << "the store read a template named ../../../escaped/tiled";
  } catch (const DatabaseError& e) {
    EXPECT_THAT(e.what(), HasSubstr("template name \"../../../escaped/tiled\" is not an identifier"));
  }
}

// The inputs are only read: their bytes are the same afterwards, a tune's file still open for
// writing in this process included.
TEST_F(DatabaseMergeTest, InputsAreNeverChanged) {
  const fs::path a = one_result("a.db", h200(), "h1",
                                make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                "2025-01-01 10:00:00");
  const fs::path b = one_result("b.db", h200(), "h1",
                                make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.0),
                                "2025-01-01 11:00:00");
  ResultStore writing(b);  // a live writer's -wal file
  writing.record_fuzz_pass(1, "tiled", "h1", "TILE=16", 30);
  fs::path b_wal = b;
  b_wal += "-wal";
  const std::string a_bytes = bytes_of(a), b_bytes = bytes_of(b), b_wal_bytes = bytes_of(b_wal);
  merge_databases(out(), {a, b});
  EXPECT_EQ(bytes_of(a), a_bytes);
  EXPECT_EQ(bytes_of(b), b_bytes);
  EXPECT_EQ(bytes_of(b_wal), b_wal_bytes);
  EXPECT_EQ(rows(out(), "SELECT cases FROM fuzz_passes"), std::vector<std::string>{"30"})
      << "what the writer committed is read from its -wal file";
}

// A row that names a template its file does not hold (a broken file) fails the merge: OUT keeps
// the rows it had, and a file the merge created is removed.
TEST_F(DatabaseMergeTest, AFailureLeavesOutAsItWas) {
  const fs::path good = one_result("good.db", h200(), "h1",
                                   make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                   "2025-01-01 10:00:00");
  const fs::path broken = one_result("broken.db", h100(), "h2",
                                     make_result("naive", "", "B=8", kTall, ResultStatus::ok, 1.0),
                                     "2025-01-01 10:00:00");
  exec_file(broken, "UPDATE results SET template_id = 99");  // foreign keys are off here
  EXPECT_THROW(merge_databases(out(), {good, broken}), DatabaseError);
  EXPECT_FALSE(fs::exists(out()));
  merge_databases(out(), {good});
  const std::vector<std::string> before = dump(out());
  try {
    merge_databases(out(), {broken});
    FAIL() << "a result without its template was merged";
  } catch (const DatabaseError& e) {
    EXPECT_THAT(e.what(), HasSubstr("merging the results of " + broken.string()));
  }
  EXPECT_EQ(dump(out()), before);
}

// Files of schema versions 2 to 5 are read as they are, without the tables they did not have yet:
// their templates are fp32.
TEST_F(DatabaseMergeTest, OlderSchemaVersionsAreMerged) {
  for (const int version : {2, 3, 4, 5}) {
    SCOPED_TRACE("version " + std::to_string(version));
    const std::string name = "v" + std::to_string(version);
    const fs::path old = one_result(name + ".db", h200(), "h1",
                                    make_result("tiled", "", "TILE=16", kSquare, ResultStatus::ok, 1.5),
                                    "2025-01-01 10:00:00");
    std::string downgrade = R"sql(
        DROP TABLE search_trace; DROP VIEW template_versions;
        ALTER TABLE templates DROP COLUMN precision;
        CREATE VIEW template_versions AS SELECT t.*, t.registered_seq = (SELECT max(v.registered_seq)
          FROM templates v WHERE v.name = t.name) AS is_current FROM templates t;)sql";
    if (version < 5) downgrade += "DROP TABLE counters; DROP TABLE bench_results;";
    if (version < 4) downgrade += "DROP TABLE missed_problems;";
    if (version < 3) downgrade += "DROP TABLE fuzz_passes;";
    exec_file(old, downgrade + "PRAGMA user_version = " + std::to_string(version) + ";");
    const auto merged = merge_databases(file(name + "_out.db"), {old});
    EXPECT_EQ(merged[0].schema_version, version);
    const ResultStore store(file(name + "_out.db"), ResultStore::Access::read_only);
    EXPECT_EQ(store.best("NVIDIA H200", kSquare)->config, "TILE=16");
    EXPECT_EQ(store.templates().at(0).precision, Precision::fp32);
  }
}

}  // namespace
}  // namespace tiletune
