// Several tuner processes on one database file (fork()ed children, each with its own
// ResultStore): writers that race from the file's creation on lose nothing, and a writer killed
// with SIGKILL in the middle of a transaction leaves a database whose every row is whole.
//
// The children use no GoogleTest assertions (they would report in the wrong process): they end
// with _exit(0) when all went well and _exit(1) otherwise, and the parent checks.
#include "db/result_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "tests/support/result_records.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Waits for the child; kills it first if it has not ended by the deadline (a hung writer must
// fail the test, not hang it). Returns waitpid's status.
int wait_for_child(pid_t pid, Clock::duration limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "child " << pid << " did not finish in time";
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Registers the GPU and the template, then records `count` results named prefix + i as fast as
// it can, reading back between writes. Runs in a child; never returns.
[[noreturn]] void racing_writer(const fs::path& path, const std::string& prefix, int count) {
  int exit_code = 0;
  try {
    ResultStore store(path);
    const GpuRecord gpu = h200();
    const std::int64_t gpu_id = store.register_gpu(gpu);
    store.register_template(make_template("tiled", "h1"));
    for (int i = 0; i < count; ++i) {
      const std::string config = prefix + std::to_string(i);
      store.record_result(gpu_id, gpu,
                          make_result("tiled", "h1", config, kSquare, ResultStatus::ok, 1.0 + i));
      if (!store.has_result(gpu_id, "h1", config, kSquare)) {
        std::fprintf(stderr, "writer %s: %s not found after recording it\n", prefix.c_str(),
                     config.c_str());
        exit_code = 1;
      }
      // The other writer's rows come and go in between; this one's must all be there.
      if (i % 10 == 0) {
        int own = 0;
        for (const auto& [name, result] : store.recorded_results(gpu_id, "h1", kSquare)) {
          own += name.starts_with(prefix);
        }
        if (own != i + 1) {
          std::fprintf(stderr, "writer %s: %d of its %d results found\n", prefix.c_str(), own, i + 1);
          exit_code = 1;
        }
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "writer %s: %s\n", prefix.c_str(), error.what());
    exit_code = 1;
  }
  _exit(exit_code);
}

class ConcurrentProcessesTest : public ResultStoreTest {};

// Two processes start on a file that does not exist yet: both create-or-open it, register the
// same GPU and template, and write 300 results each, interleaved.
TEST_F(ConcurrentProcessesTest, TwoWriterProcessesLoseNothing) {
  constexpr int kEach = 300;
  const pid_t a = fork();
  ASSERT_GE(a, 0);
  if (a == 0) racing_writer(db_path(), "a", kEach);
  const pid_t b = fork();
  if (b == 0) racing_writer(db_path(), "b", kEach);
  const int a_status = wait_for_child(a, std::chrono::minutes(3));
  ASSERT_GE(b, 0);
  const int b_status = wait_for_child(b, std::chrono::minutes(3));
  EXPECT_TRUE(WIFEXITED(a_status) && WEXITSTATUS(a_status) == 0) << "writer a " << describe(a_status);
  EXPECT_TRUE(WIFEXITED(b_status) && WEXITSTATUS(b_status) == 0) << "writer b " << describe(b_status);

  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const std::int64_t gpu_id = store.register_gpu(gpu);
  const auto recorded = store.recorded_results(gpu_id, "h1", kSquare);
  EXPECT_EQ(recorded.size(), 2u * kEach);
  for (const char* prefix : {"a", "b"}) {
    for (int i = 0; i < kEach; ++i) {
      const auto found = recorded.find(prefix + std::to_string(i));
      ASSERT_NE(found, recorded.end()) << prefix << i;
      EXPECT_DOUBLE_EQ(found->second.median_ms, 1.0 + i);
    }
  }
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM gpus"), "1");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM templates"), "1");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM results"), std::to_string(2 * kEach));
  EXPECT_EQ(query_file(db_path(), "PRAGMA integrity_check"), "ok");
}

// Records the problem shared by every writer and one of its own, `count` times each, as a
// runtime library's processes would. Runs in a child; never returns.
[[noreturn]] void missing_writer(const fs::path& path, const std::string& name, int count) {
  int exit_code = 0;
  try {
    ResultStore store(path);
    for (int i = 0; i < count; ++i) {
      store.record_miss("NVIDIA H200", "tiled", GemmProblem::packed({100, 200, 300}));
      store.record_miss("NVIDIA H200", name, GemmProblem::packed({100, 200, 300}));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "writer %s: %s\n", name.c_str(), error.what());
    exit_code = 1;
  }
  _exit(exit_code);
}

// Two processes miss the same problem at once, from the file's creation on: every miss counts.
TEST_F(ConcurrentProcessesTest, TwoProcessesRecordingTheSameMissCountEveryOne) {
  constexpr int kEach = 200;
  const pid_t a = fork();
  ASSERT_GE(a, 0);
  if (a == 0) missing_writer(db_path(), "a", kEach);
  const pid_t b = fork();
  if (b == 0) missing_writer(db_path(), "b", kEach);
  const int a_status = wait_for_child(a, std::chrono::minutes(3));
  ASSERT_GE(b, 0);
  const int b_status = wait_for_child(b, std::chrono::minutes(3));
  EXPECT_TRUE(WIFEXITED(a_status) && WEXITSTATUS(a_status) == 0) << "writer a " << describe(a_status);
  EXPECT_TRUE(WIFEXITED(b_status) && WEXITSTATUS(b_status) == 0) << "writer b " << describe(b_status);

  ResultStore store(db_path());
  const auto missed = store.missed_problems("NVIDIA H200");
  ASSERT_EQ(missed.size(), 3u);
  EXPECT_EQ(missed[0].template_name, "a");
  EXPECT_EQ(missed[0].count, kEach);
  EXPECT_EQ(missed[1].template_name, "b");
  EXPECT_EQ(missed[1].count, kEach);
  EXPECT_EQ(missed[2].template_name, "tiled");
  EXPECT_EQ(missed[2].count, 2 * kEach);
  EXPECT_EQ(query_file(db_path(), "PRAGMA integrity_check"), "ok");
}

// The result that the killed writer records as its i-th: a detail of several KiB, so that each
// transaction spans many pages and a kill lands inside one.
ResultRecord killed_writer_result(const std::string& prefix, int i) {
  ResultRecord result = make_result("tiled", "h1", prefix + std::to_string(i), kSquare,
                                    ResultStatus::wrong_result, 0.5 + i);
  for (int line = 0; result.detail.size() < 4000u + 1000u * (i % 7); ++line) {
    result.detail += result.config + " line " + std::to_string(line) + " of a long counterexample\n";
  }
  result.registers = i % 256;
  result.spill_bytes = 4 * i;
  return result;
}

// Records killed_writer_result(prefix, 0), (prefix, 1), ... until killed (or, should nobody kill
// it, for 60 seconds). Runs in a child; never returns.
[[noreturn]] void writer_to_be_killed(const fs::path& path, const std::string& prefix) {
  try {
    ResultStore store(path);
    const GpuRecord gpu = h200();
    const std::int64_t gpu_id = store.register_gpu(gpu);
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    for (int i = 0; Clock::now() < give_up; ++i) {
      store.record_result(gpu_id, gpu, killed_writer_result(prefix, i));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "writer %s: %s\n", prefix.c_str(), error.what());
  }
  _exit(1);
}

// Each round a child writes as fast as it can and is killed after some rows, at a random moment;
// then the file must open, pass SQLite's integrity check, and hold a gapless run of the round's
// rows (results are committed in order), every one of them whole.
TEST_F(ConcurrentProcessesTest, WriterKilledMidTransactionLeavesAConsistentDatabase) {
  const GpuRecord gpu = h200();
  std::int64_t gpu_id = 0;
  {
    ResultStore store(db_path());
    gpu_id = store.register_gpu(gpu);
    store.register_template(make_template("tiled", "h1"));
  }
  std::mt19937 random(7);
  std::size_t total = 0;
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string prefix = "r" + std::to_string(round) + "-";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) writer_to_be_killed(db_path(), prefix);

    // Let it write some rows, then kill it a random moment later.
    const std::size_t wanted = 30 + random() % 40;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    {
      ResultStore watcher(db_path());
      const auto rows = [&watcher] {
        const auto summary = watcher.summary();  // one group: this GPU, template and shape
        return summary.empty() ? std::size_t{0} : static_cast<std::size_t>(summary[0].results);
      };
      while (rows() < total + wanted && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 3000));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    const int status = wait_for_child(child, std::chrono::seconds(30));
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer ended before it was killed: " << describe(status);

    ResultStore store(db_path());
    EXPECT_EQ(query_file(db_path(), "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
    const auto recorded = store.recorded_results(gpu_id, "h1", kSquare);
    std::set<int> numbers;
    for (const auto& [config, result] : recorded) {
      if (!config.starts_with(prefix)) continue;
      const int i = std::stoi(config.substr(prefix.size()));
      numbers.insert(i);
      expect_same_result(result, killed_writer_result(prefix, i));
    }
    ASSERT_GE(numbers.size(), wanted);
    EXPECT_EQ(*numbers.rbegin(), static_cast<int>(numbers.size()) - 1) << "a gap in the rows";
    total += numbers.size();
    EXPECT_EQ(recorded.size(), total) << "earlier rounds' rows are all still there";
  }
}

}  // namespace
}  // namespace tiletune
