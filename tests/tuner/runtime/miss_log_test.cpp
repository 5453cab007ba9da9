// The runtime library's record of missed problems (tuner/runtime/miss_log.h): each distinct
// problem written once per MissLog, from any thread; a database that cannot be opened is an error
// naming it; a write that fails warns once on stderr and never throws.
#include "tuner/runtime/miss_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/result_records.h"

namespace tiletune::runtime {
namespace {

class MissLogTest : public ResultStoreTest {};

const GemmProblem kPacked = GemmProblem::packed({100, 200, 300});
const GemmProblem kPadded{{100, 200, 300}, 320, 256, 256};

TEST_F(MissLogTest, CreatesTheDatabaseAndRecordsEachProblemOnce) {
  MissLog log(db_path());
  log.record("NVIDIA H200", "tiled", kPacked);
  log.record("NVIDIA H200", "tiled", kPacked);
  log.record("NVIDIA H200", "tiled", kPadded);
  log.record("NVIDIA H200", "warp_tiled", kPacked);
  log.record("NVIDIA H200", "warp_tiled", kPacked);
  ResultStore store(db_path(), ResultStore::Access::read_only);
  const auto missed = store.missed_problems();
  ASSERT_EQ(missed.size(), 3u);
  for (const MissedProblem& row : missed) EXPECT_EQ(row.count, 1) << row.problem.to_string();

  // Another MissLog (another process of the application) counts it again.
  MissLog later(db_path());
  later.record("NVIDIA H200", "tiled", kPacked);
  EXPECT_EQ(store.missed_problems("NVIDIA H200", "tiled").front().count, 2);
}

TEST_F(MissLogTest, ThreadsRecordingTogetherWriteEachProblemOnce) {
  MissLog log(db_path());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&log] {
      for (std::int64_t m = 1; m <= 20; ++m) log.record("NVIDIA H200", "tiled", GemmProblem::packed({m, 64, 64}));
    });
  }
  for (auto& thread : threads) thread.join();
  ResultStore store(db_path(), ResultStore::Access::read_only);
  const auto missed = store.missed_problems();
  ASSERT_EQ(missed.size(), 20u);
  for (const MissedProblem& row : missed) EXPECT_EQ(row.count, 1) << row.problem.to_string();
}

TEST_F(MissLogTest, ADatabaseThatCannotBeOpenedIsAnErrorNamingIt) {
  const std::filesystem::path not_a_folder = dir_ / "file";
  std::ofstream(not_a_folder) << "a file, not a folder\n";
  const std::filesystem::path path = not_a_folder / "tiletune.db";
  try {
    MissLog log(path);
    ADD_FAILURE() << "opened " << path;
  } catch (const DatabaseError& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with(path.string() + ": ")) << error.what();
  }
}

// Writes that fail (here a trigger refuses every insert, as a full disk would) cost one warning
// line, the first time, and no exception.
TEST_F(MissLogTest, AFailingWriteWarnsOnceAndNeverThrows) {
  MissLog log(db_path());
  exec_file(db_path(), "CREATE TRIGGER refuse BEFORE INSERT ON missed_problems "
                       "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
  testing::internal::CaptureStderr();
  log.record("NVIDIA H200", "tiled", kPacked);
  log.record("NVIDIA H200", "tiled", kPadded);
  log.record("NVIDIA H200", "warp_tiled", kPacked);
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings, "tiletune: cannot record the missed problem " + kPacked.to_string() +
                          " of tiled on NVIDIA H200 in " + db_path().string() +
                          ": recording a missed problem: database or disk is full\n");
  ResultStore store(db_path(), ResultStore::Access::read_only);
  EXPECT_TRUE(store.missed_problems().empty());
}

}  // namespace
}  // namespace tiletune::runtime
