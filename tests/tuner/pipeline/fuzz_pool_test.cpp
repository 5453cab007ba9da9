// The fuzz pool without a GPU: stand-in workers (shell scripts speaking the worker protocol) show
// that the workers start with the pool, that requests run side by side and come back in order,
// fuzz only, that a worker which dies costs only its request, that a pool whose workers cannot
// start hands every request back, and that the caller's own worker (the helper) fuzzes beside the
// pool's, so that a round never waits for a worker to start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tuner/pipeline/fuzz_pool.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A worker that says it is ready, then answers each request after `work` seconds with a passed
// fuzz. The requests whose configuration names CRASH kill it; a request asking to measure is
// refused as an environment failure, so the tests see that the pool never asks for one.
// With `log`, each worker appends every request it is given to the file log/PID.
std::vector<std::string> stand_in_worker(const std::string& work, const std::string& log = "") {
  WorkerReply ready;
  ready.kind = WorkerReply::Kind::ready;
  ready.device.name = "stand-in";
  WorkerReply passed;
  passed.kind = WorkerReply::Kind::result;
  passed.fuzz_passed = true;
  WorkerReply refused;
  refused.kind = WorkerReply::Kind::fatal;
  refused.text = "asked to measure";
  setenv("TT_READY", encode(ready).c_str(), 1);
  setenv("TT_PASSED", encode(passed).c_str(), 1);
  setenv("TT_REFUSED", encode(refused).c_str(), 1);
  return {"/bin/sh", "-c",
          "printf '%s\\n' \"$TT_READY\" >&4\n"
          "while read -r line <&3; do\n" +
          (log.empty() ? std::string() : "  printf '%s\\n' \"$line\" >> '" + log + "'/$$\n") +
          "  case \"$line\" in\n"
          "    *CRASH*) kill -SEGV $$ ;;\n"
          "    *'\"measure\":false'*) sleep " + work + "; printf '%s\\n' \"$TT_PASSED\" >&4 ;;\n"
          "    *) printf '%s\\n' \"$TT_REFUSED\" >&4 ;;\n"
          "  esac\n"
          "done"};
}

// The same worker, `seconds` slower to say it is ready (a CUDA context that takes long to create).
std::vector<std::string> slow_to_start(std::vector<std::string> argv, const std::string& seconds) {
  argv.back() = "sleep " + seconds + "\n" + argv.back();
  return argv;
}

// The configurations one stand-in worker process was asked for, in order (its file in `log`).
std::vector<std::string> configs_in(const std::filesystem::path& file) {
  std::vector<std::string> configs;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const std::size_t at = line.find("\"config\":\"");
    if (at != std::string::npos) configs.push_back(line.substr(at + 10, 3));
  }
  return configs;
}

// The configurations a stand-in worker given `log` was asked for, over all its processes.
std::vector<std::string> logged_configs(const std::filesystem::path& log) {
  std::vector<std::string> configs;
  for (const auto& file : std::filesystem::directory_iterator(log)) {
    for (std::string& config : configs_in(file.path())) configs.push_back(std::move(config));
  }
  std::sort(configs.begin(), configs.end());
  return configs;
}

// Waits (5 s at most) until the pool has started `workers` workers: they start on their own.
void wait_for_workers(const FuzzPool& pool, int workers) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (pool.workers_started() < workers && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
}

std::filesystem::path fresh_log(const std::string& name) {
  const std::filesystem::path log = std::filesystem::temp_directory_path() /
                                    ("tiletune-fuzz-pool-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(log);
  std::filesystem::create_directories(log);
  return log;
}

std::vector<EvaluationRequest> requests(const std::vector<std::string>& configs) {
  std::vector<EvaluationRequest> list;
  for (const std::string& config : configs) {
    EvaluationRequest request;
    request.tmpl.name = "stand_in";
    request.config = config;
    request.shape = {8, 8, 8};
    list.push_back(request);  // measure stays true: the pool must turn it off
  }
  return list;
}

TEST(FuzzPool, FuzzesSideBySideAndAnswersInOrder) {
  FuzzPool pool(stand_in_worker("0.4"), 10s, 4);
  EXPECT_EQ(pool.size(), 4u);
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = pool.fuzz(requests({"A=1", "A=2", "A=3", "A=4", "A=5", "A=6", "A=7", "A=8"}));
  const auto wall = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(outcomes.size(), 8u);
  for (const auto& outcome : outcomes) {
    ASSERT_TRUE(outcome.has_value());
    EXPECT_TRUE(outcome->fuzz_passed);
  }
  // One at a time would take 3.2 s; four at a time 0.8 s plus the workers' start.
  EXPECT_LT(wall, 2.4s) << "the requests did not run side by side";
  EXPECT_EQ(pool.workers_started(), 4);
  EXPECT_EQ(pool.unavailable(), "");
}

// The configurations each of 3 workers was given, in order, fuzzing A=1 .. A=6 of `families`.
std::vector<std::string> given_per_worker(const std::vector<std::string>& families) {
  const std::filesystem::path log = fresh_log("families");
  {
    FuzzPool pool(stand_in_worker("0.2", log.string()), 10s, 3);
    const auto outcomes = pool.fuzz(requests({"A=1", "A=2", "A=3", "A=4", "A=5", "A=6"}), families);
    EXPECT_EQ(outcomes.size(), 6u);
    for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.has_value() && outcome->fuzz_passed);
  }
  std::vector<std::string> per_worker;
  for (const auto& file : std::filesystem::directory_iterator(log)) {
    std::string configs;
    for (const std::string& config : configs_in(file.path())) configs += config + " ";
    per_worker.push_back(configs);
  }
  std::filesystem::remove_all(log);
  return per_worker;
}

// Configurations of one family draw the same cases: side by side, they go to one worker, which
// keeps the cases' references from the first for the next; a family larger than a worker's share
// of the round is shared out, so that no worker waits.
TEST(FuzzPool, RequestsOfOneFamilyGoToOneWorkerOneAfterTheOther) {
  EXPECT_THAT(given_per_worker({"x", "x", "y", "y", "z", "z"}),
              ::testing::UnorderedElementsAre("A=1 A=2 ", "A=3 A=4 ", "A=5 A=6 "));
  EXPECT_THAT(given_per_worker({"x", "x", "x", "x", "x", "x"}),
              ::testing::UnorderedElementsAre("A=1 A=2 ", "A=3 A=4 ", "A=5 A=6 "));
}

TEST(FuzzPool, WorkersStartWithThePoolNotWithItsFirstRound) {
  FuzzPool pool(stand_in_worker("0"), 10s, 3);
  wait_for_workers(pool, 3);
  EXPECT_EQ(pool.workers_started(), 3) << "the workers waited for a round to start";
}

// The lane's own worker, idle while its group is fuzzed, takes requests too: while the pool's
// workers are still starting, it takes them all.
TEST(FuzzPool, TheHelperFuzzesWhileThePoolsWorkersStart) {
  const std::filesystem::path helper_log = fresh_log("helper");
  WorkerClient helper(stand_in_worker("0.05", helper_log.string()), 10s);
  helper.device();  // started, as a lane's worker is before its first group
  FuzzPool pool(slow_to_start(stand_in_worker("0.05"), "3"), 10s, 2);
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = pool.fuzz(requests({"A=1", "A=2", "A=3", "A=4"}), {}, &helper);
  const auto wall = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(outcomes.size(), 4u);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.has_value() && outcome->fuzz_passed);
  EXPECT_LT(wall, 2s) << "the round waited for the pool's workers to start";
  EXPECT_THAT(logged_configs(helper_log), ::testing::ElementsAre("A=1", "A=2", "A=3", "A=4"));
  std::filesystem::remove_all(helper_log);
}

// Once they have started, the pool's workers share the round with the helper.
TEST(FuzzPool, ThePoolsWorkersAndTheHelperShareARound) {
  const std::filesystem::path helper_log = fresh_log("shared-helper");
  const std::filesystem::path pool_log = fresh_log("shared-pool");
  WorkerClient helper(stand_in_worker("0.3", helper_log.string()), 10s);
  helper.device();
  FuzzPool pool(stand_in_worker("0.3", pool_log.string()), 10s, 2);
  wait_for_workers(pool, 2);
  const auto outcomes = pool.fuzz(requests({"A=1", "A=2", "A=3", "A=4", "A=5", "A=6"}), {}, &helper);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.has_value() && outcome->fuzz_passed);
  const std::vector<std::string> by_helper = logged_configs(helper_log);
  const std::vector<std::string> by_pool = logged_configs(pool_log);
  EXPECT_FALSE(by_helper.empty());
  EXPECT_GE(by_pool.size(), 2u) << "the pool's started workers were left idle";
  EXPECT_EQ(by_helper.size() + by_pool.size(), 6u) << "a request was fuzzed twice, or not at all";
  std::filesystem::remove_all(helper_log);
  std::filesystem::remove_all(pool_log);
}

TEST(FuzzPool, AWorkerThatDiesCostsOnlyItsRequest) {
  FuzzPool pool(stand_in_worker("0.05"), 10s, 2);
  const auto outcomes = pool.fuzz(requests({"A=1", "CRASH=1", "A=3", "A=4"}));
  ASSERT_EQ(outcomes.size(), 4u);
  ASSERT_TRUE(outcomes[1].has_value());
  EXPECT_FALSE(outcomes[1]->fuzz_passed);
  EXPECT_EQ(outcomes[1]->result.status, ResultStatus::crashed);
  EXPECT_THAT(outcomes[1]->result.detail, HasSubstr("signal 11"));
  EXPECT_EQ(outcomes[1]->result.config, "CRASH=1");
  for (const std::size_t i : {0u, 2u, 3u}) {
    ASSERT_TRUE(outcomes[i].has_value());
    EXPECT_TRUE(outcomes[i]->fuzz_passed) << i;
  }
  // The next round finds a fresh worker in the dead one's place.
  const auto again = pool.fuzz(requests({"B=1", "B=2"}));
  EXPECT_TRUE(again[0]->fuzz_passed);
  EXPECT_TRUE(again[1]->fuzz_passed);
  EXPECT_EQ(pool.workers_started(), 3);
}

// A worker that dies and cannot start again (its device refuses a new context) leaves the pool:
// the request it was about to fuzz comes back empty, the others' workers finish the round and
// serve the next ones.
TEST(FuzzPool, AWorkerThatCannotRestartLeavesThePoolAndTheRoundStillEnds) {
  const std::filesystem::path marker = fresh_log("no-restart") / "crashed";
  WorkerReply no_device;
  no_device.kind = WorkerReply::Kind::fatal;
  no_device.text = "no second CUDA context on this device";
  setenv("TT_NO_DEVICE", encode(no_device).c_str(), 1);
  // Each request takes the other worker long enough that the crashed one comes back for the next.
  std::vector<std::string> argv = stand_in_worker("0.5");
  // Once one worker has crashed, no worker starts again.
  argv.back() = "if [ -e '" + marker.string() + "' ]; then printf '%s\n' \"$TT_NO_DEVICE\" >&4; exit 0; fi\n" +
                argv.back();
  argv.back().replace(argv.back().find("kill -SEGV $$"), 13, "touch '" + marker.string() + "'; kill -SEGV $$");
  FuzzPool pool(argv, 10s, 2);
  wait_for_workers(pool, 2);  // both started before the crash
  const auto outcomes = pool.fuzz(requests({"CRASH=1", "A=2", "A=3", "A=4", "A=5", "A=6"}));
  ASSERT_EQ(outcomes.size(), 6u);
  ASSERT_TRUE(outcomes[0].has_value());
  EXPECT_EQ(outcomes[0]->result.status, ResultStatus::crashed);
  int empty = 0;
  for (std::size_t i = 1; i < outcomes.size(); ++i) {
    if (!outcomes[i]) {
      ++empty;
    } else {
      EXPECT_TRUE(outcomes[i]->fuzz_passed) << i;
    }
  }
  EXPECT_EQ(empty, 1) << "the worker that could not restart should hand back the one request it took";
  EXPECT_THAT(pool.unavailable(), HasSubstr("no second CUDA context"));
  const auto again = pool.fuzz(requests({"B=1", "B=2"}));
  for (const auto& outcome : again) EXPECT_TRUE(outcome.has_value() && outcome->fuzz_passed);
  std::filesystem::remove_all(marker.parent_path());
}

TEST(FuzzPool, WorkersThatCannotStartHandEveryRequestBack) {
  WorkerReply no_device;
  no_device.kind = WorkerReply::Kind::fatal;
  no_device.text = "no second CUDA context on this device";
  setenv("TT_NO_DEVICE", encode(no_device).c_str(), 1);
  FuzzPool pool({"/bin/sh", "-c", "printf '%s\\n' \"$TT_NO_DEVICE\" >&4"}, 10s, 3);
  const auto outcomes = pool.fuzz(requests({"A=1", "A=2", "A=3", "A=4", "A=5"}));
  ASSERT_EQ(outcomes.size(), 5u);
  for (const auto& outcome : outcomes) EXPECT_FALSE(outcome.has_value());
  EXPECT_THAT(pool.unavailable(), HasSubstr("no second CUDA context"));
  // Later rounds do not try again.
  const auto again = pool.fuzz(requests({"A=6"}));
  EXPECT_FALSE(again[0].has_value());
  // With the caller's worker as helper, nothing comes back empty.
  WorkerClient helper(stand_in_worker("0"), 10s);
  const auto helped = pool.fuzz(requests({"A=7", "A=8"}), {}, &helper);
  for (const auto& outcome : helped) EXPECT_TRUE(outcome.has_value() && outcome->fuzz_passed);
}

TEST(FuzzPool, AnEnvironmentFailureOfAWorkerReachesTheCaller) {
  stand_in_worker("0");  // for its messages
  FuzzPool pool({"/bin/sh", "-c",
                 "printf '%s\\n' \"$TT_READY\" >&4\n"
                 "while read -r line <&3; do printf '%s\\n' \"$TT_REFUSED\" >&4; done"},
                10s, 2);
  EXPECT_THROW(pool.fuzz(requests({"A=1", "A=2", "A=3"})), std::runtime_error);
}

}  // namespace
}  // namespace tiletune
