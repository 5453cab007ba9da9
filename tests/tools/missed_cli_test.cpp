// The missed problems as a user meets them: `tiletune list --missed` prints what the runtime
// library recorded (Options::record_misses), and `tiletune tune --missed` tunes exactly those
// shapes on this GPU, then forgets the misses of each shape that has a winner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "tests/support/gpu_test.h"
#include "tests/support/result_records.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::run_tiletune;
using testing_tools::TiletuneRun;

namespace fs = std::filesystem;

using testing_support::kTemplates;
const GemmProblem kPacked = GemmProblem::packed({40, 36, 20});
const GemmProblem kPadded{{40, 36, 20}, 24, 40, 36};
const GemmProblem kOddK = GemmProblem::packed({40, 36, 22});

std::vector<std::string> described(const std::vector<MissedProblem>& missed) {
  std::vector<std::string> rows;
  for (const MissedProblem& row : missed) {
    rows.push_back(row.gpu_name + " " + row.template_name + " " + row.problem.to_string() + " x" +
                   std::to_string(row.count));
  }
  return rows;
}

// A folder of its own for each test; the CPU backend's kernel cache in the build folder, shared
// with the other CLI tests (never the user's).
class MissedCli : public testing_tools::TiletuneFolderTest {
 protected:
  MissedCli() : TiletuneFolderTest("tiletune_missed_cli_") {}

  fs::path db() const { return dir_ / "missed.db"; }

  // tiled.cu renamed tiled_k4, which requires K % 4 == 0: no configuration admits 40x36x22.
  fs::path write_tiled_k4() const {
    std::ifstream in(kTemplates / "tiled.cu");
    std::string source((std::istreambuf_iterator<char>(in)), {});
    const std::string name = "// tiletune: name tiled\n";
    const std::size_t at = source.find(name);
    EXPECT_NE(at, std::string::npos);
    source.replace(at, name.size(), "// tiletune: name tiled_k4\n// tiletune: require K % 4 == 0\n");
    const fs::path path = dir_ / "tiled_k4.cu";
    std::ofstream(path) << source;
    return path;
  }
};

TEST_F(MissedCli, ListMissedPrintsEveryMissInAFixedOrder) {
  {
    ResultStore store(db());
    store.record_miss("NVIDIA H200", "tiled", kPadded);
    store.record_miss("NVIDIA H200", "tiled", kPacked);
    store.record_miss("NVIDIA H200", "tiled", kPacked);
    store.record_miss("NVIDIA A100", "warp_tiled", kOddK);
  }
  const TiletuneRun run = tiletune({"list", "--missed", "--db", db().string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err, "") << run;
  const std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 5u) << run;
  EXPECT_THAT(lines[0], HasSubstr("missed problems")) << run;
  EXPECT_THAT(lines[2], ::testing::MatchesRegex(" *NVIDIA A100 +warp_tiled +40x36x22 lda=22 ldb=36 ldc=36 +1  "
                                                "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}"))
      << run;
  EXPECT_THAT(lines[3], ::testing::MatchesRegex(" *NVIDIA H200 +tiled +40x36x20 lda=20 ldb=36 ldc=36 +2  .*"))
      << run;
  EXPECT_THAT(lines[4], ::testing::MatchesRegex(" *NVIDIA H200 +tiled +40x36x20 lda=24 ldb=40 ldc=36 +1  .*"))
      << run;
  // The plain list is unchanged by the misses.
  const TiletuneRun plain = tiletune({"list", "--db", db().string()});
  EXPECT_EQ(plain.exit_code, 0) << plain;
  EXPECT_THAT(plain.out, Not(HasSubstr("missed"))) << plain;
}

TEST_F(MissedCli, ListMissedWithoutMissesSaysSo) {
  { ResultStore store(db()); }
  const TiletuneRun run = tiletune({"list", "--missed", "--db", db().string()});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, "no missed problems\n") << run;
  expect_one_line_failure(tiletune({"list", "--missed", "--db", (dir_ / "none.db").string()}), 2);
  EXPECT_FALSE(fs::exists(dir_ / "none.db"));
}

TEST_F(MissedCli, TuneMissedWithAShapeIsBadInput) {
  { ResultStore store(db()); }
  const TiletuneRun run = tiletune({"tune", "--missed", "--shape", "64x64x64", "--db", db().string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr("--missed")) << run;
  EXPECT_THAT(run.err, HasSubstr("--shape")) << run;
}

TEST_F(MissedCli, TuneWithoutTemplatesNeedsMissed) {
  const TiletuneRun run = tiletune({"tune", "--shape", "64x64x64", "--db", db().string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr("--missed")) << run;
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(MissedCli, TuneMissedOnAMissingDatabaseIsBadInputAndCreatesNothing) {
  const TiletuneRun run = tiletune({"tune", "--missed", "--backend", "cpu", "--db", db().string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr(db().string() + ": no such database")) << run;
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(MissedCli, TuneMissedWithABadTemplateIsBadInput) {
  { ResultStore store(db()); }
  const TiletuneRun run =
      tiletune({"tune", "--missed", (dir_ / "missing.cu").string(), "--db", db().string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr("missing.cu")) << run;
}

bool gpu_present() {
  try {
    GpuDevice device;
    return true;
  } catch (const GpuUnavailable&) {
    return false;
  }
}

// Without a GPU: exit 3 in one line, and the database (its misses, its schema version) untouched.
TEST_F(MissedCli, TuneMissedWithoutAGpuIsAnEnvironmentErrorAndKeepsTheMisses) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: this checks the no-GPU path";
  {
    ResultStore store(db());
    store.record_miss("NVIDIA H200", "tiled", kPacked);
  }
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{(kTemplates / "tiled.cu").string()}}) {
    std::vector<std::string> args{"tune", "--missed", "--db", db().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const TiletuneRun run = tiletune(args);
    expect_one_line_failure(run, 3);
    ResultStore store(db(), ResultStore::Access::read_only);
    EXPECT_EQ(store.missed_problems().size(), 1u);
    EXPECT_TRUE(store.gpus().empty()) << "nothing registered";
  }
}

TEST_F(MissedCli, TuneMissedWithNothingMissedOnThisGpuIsOneLine) {
  {
    ResultStore store(db());
    store.record_miss("NVIDIA H200", "tiled", kPacked);
  }
  const TiletuneRun run = tiletune({"tune", "--missed", "--backend", "cpu", "--db", db().string()});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, "nothing was missed on CPU backend in " + db().string() + ": nothing to tune\n") << run;
  EXPECT_EQ(run.err, "") << run;
  EXPECT_EQ(ResultStore(db(), ResultStore::Access::read_only).missed_problems().size(), 1u);
}

// Only the library records misses, of problems it checked; rows edited in (sizes of zero or less)
// are passed over with a line each, never "tuned" into records at impossible shapes.
TEST_F(MissedCli, TuneMissedSkipsImpossibleProblemsEditedIntoTheDatabase) {
  {
    ResultStore store(db());
    store.record_miss("CPU backend", "tiled", kPacked);
  }
  exec_file(db(), "UPDATE missed_problems SET m = 0");
  const TiletuneRun run = tiletune({"tune", "--missed", "--backend", "cpu", "--db", db().string()});
  EXPECT_THAT(run.err, HasSubstr("is no valid problem: skipped")) << run;
  EXPECT_EQ(query_file(db(), "SELECT count(*) FROM results"), "0") << run;
}

// The whole round on the CPU backend (whose GPU name is "CPU backend"): the recorded templates
// tune their missed shapes; a shape that got a winner loses its misses (every leading dimension),
// one without a correct configuration keeps them, as do other GPUs'; a template without a source,
// or one today's parser refuses, is said and skipped. Then a template given as a file.
TEST_F(MissedCli, TuneMissedTunesExactlyTheMissedShapesAndForgetsThoseTuned) {
  const KernelTemplate tiled_k4 = load_template(write_tiled_k4());
  {
    ResultStore store(db());
    store.register_template({tiled_k4.name, tiled_k4.source_hash, tiled_k4.path.string(), tiled_k4.source});
    store.register_template({"ancient", "00000000000000aa", "ancient.cu",
                             "// tiletune: name ancient\n// tiletune: frobnicate\n"});
    store.record_miss("CPU backend", "tiled_k4", kPacked);
    store.record_miss("CPU backend", "tiled_k4", kPadded);
    store.record_miss("CPU backend", "tiled_k4", kPadded);
    store.record_miss("CPU backend", "tiled_k4", kOddK);
    store.record_miss("CPU backend", "naive", kPacked);
    store.record_miss("CPU backend", "ancient", kPacked);
    store.record_miss("NVIDIA H200", "tiled_k4", kPacked);
  }
  const std::vector<std::string> tune{"tune", "--missed", "--backend", "cpu", "--strategy", "random",
                                      "--budget", "2", "--cases", "20", "--db", db().string()};
  const TiletuneRun run = tiletune(tune);
  EXPECT_EQ(run.exit_code, 1) << run;  // 40x36x22 has no correct configuration
  EXPECT_THAT(run.err, HasSubstr("tiled_k4: 2 missed shapes for 3 problems (met 4 times): 40x36x20, 40x36x22\n"))
      << run;
  EXPECT_THAT(run.err, HasSubstr("tiletune: naive was missed but the database has no source of it")) << run;
  EXPECT_THAT(run.err, HasSubstr("tiletune: the recorded version 00000000000000aa of ancient is refused"))
      << run;
  EXPECT_THAT(run.out, HasSubstr("missed shapes: 1 tuned (their misses forgotten), 1 still without a "
                                 "correct configuration"))
      << run;
  {
    ResultStore store(db(), ResultStore::Access::read_only);
    EXPECT_TRUE(store.best("CPU backend", kPacked.shape, "tiled_k4").has_value());
    EXPECT_EQ(described(store.missed_problems()),
              (std::vector<std::string>{
                  "CPU backend ancient " + kPacked.to_string() + " x1",
                  "CPU backend naive " + kPacked.to_string() + " x1",
                  "CPU backend tiled_k4 " + kOddK.to_string() + " x1",
                  "NVIDIA H200 tiled_k4 " + kPacked.to_string() + " x1",
              }));
  }

  // Files given: only those missed are tuned; tiled, which nobody missed, is said and skipped.
  std::vector<std::string> with_files = tune;
  with_files.push_back((kTemplates / "naive.cu").string());
  with_files.push_back((kTemplates / "tiled.cu").string());
  const TiletuneRun given = tiletune(with_files);
  EXPECT_EQ(given.exit_code, 0) << given;
  EXPECT_THAT(given.err, HasSubstr("tiletune: nothing of tiled was missed on CPU backend: skipped\n")) << given;
  EXPECT_THAT(given.err, HasSubstr("naive: 1 missed shape for 1 problem (met 1 time): 40x36x20\n")) << given;
  EXPECT_THAT(given.err, Not(HasSubstr("tiled_k4:"))) << given;
  ResultStore store(db(), ResultStore::Access::read_only);
  EXPECT_TRUE(store.best("CPU backend", kPacked.shape, "naive").has_value());
  EXPECT_EQ(described(store.missed_problems()),
            (std::vector<std::string>{
                "CPU backend ancient " + kPacked.to_string() + " x1",
                "CPU backend tiled_k4 " + kOddK.to_string() + " x1",
                "NVIDIA H200 tiled_k4 " + kPacked.to_string() + " x1",
            }));
}

// On the GPU: a problem missed on this very GPU is tuned, and forgotten once it has a winner.
class MissedGpuTune : public testing_support::GpuTest {};

TEST_F(MissedGpuTune, TuneMissedTunesAndForgetsTheMissesOfThisGpu) {
  const fs::path dir = fs::temp_directory_path() / ("tiletune_missed_gpu_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path db = dir / "missed.db";
  const std::string gpu = device_->properties().name;
  {
    ResultStore store(db);
    store.record_miss(gpu, "tiled", GemmProblem::packed({96, 160, 64}));
    store.record_miss(gpu, "tiled", GemmProblem{{96, 160, 64}, 68, 164, 160});
  }
  const fs::path cache = fs::path(TILETUNE_BINARY_DIR) / "tests" / "tools" / "missed-gpu-cache";
  const TiletuneRun run = run_tiletune(dir, {"tune", "--missed", (kTemplates / "tiled.cu").string(),
                                             "--cases", "20", "--db", db.string()},
                                       {{"TILETUNE_CACHE_DIR", cache.string()}});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.err, HasSubstr("tiled: 1 missed shape for 2 problems (met 2 times): 96x160x64\n")) << run;
  ResultStore store(db, ResultStore::Access::read_only);
  EXPECT_TRUE(store.best(gpu, {96, 160, 64}, "tiled").has_value());
  EXPECT_TRUE(store.missed_problems().empty());
  EXPECT_THAT(run.out, HasSubstr("missed shapes: 1 tuned (their misses forgotten), 0 still without"))
      << run;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiletune
