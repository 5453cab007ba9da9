// The evaluation worker's process machinery without a GPU: line exchange over descriptors 3 and
// 4, a child that dies (how is reported), a silent child killed by the watchdog, restarts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tuner/pipeline/worker_process.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Alive and not a zombie: /proc/PID/stat's state field is not Z.
bool running_process(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t state = line.rfind(')') + 2;
  return state < line.size() && line[state] != 'Z';
}

WorkerProcess shell(const std::string& script) { return WorkerProcess({"/bin/sh", "-c", script}); }

TEST(WorkerProcess, ExchangesLinesOverItsTwoDescriptors) {
  WorkerProcess worker = shell("while read line <&3; do echo \"got $line\" >&4; done");
  worker.start();
  worker.send("one");
  EXPECT_EQ(worker.receive(5s), "got one");
  worker.send("two");
  worker.send("three");
  EXPECT_EQ(worker.receive(5s), "got two");
  EXPECT_EQ(worker.receive(5s), "got three");
}

TEST(WorkerProcess, AChildThatDiesIsReportedWithItsSignal) {
  WorkerProcess worker = shell("read line <&3; kill -SEGV $$");
  worker.start();
  worker.send("go");
  try {
    worker.receive(5s);
    FAIL() << "the child died: receive must throw";
  } catch (const WorkerGone& e) {
    EXPECT_FALSE(e.timed_out());
    EXPECT_THAT(e.what(), HasSubstr("signal 11"));
  }
  EXPECT_FALSE(worker.running());
}

TEST(WorkerProcess, LinesWrittenBeforeExitingAreReceivedFirst) {
  WorkerProcess worker = shell("echo last >&4; exit 3");
  worker.start();
  EXPECT_EQ(worker.receive(5s), "last");
  try {
    worker.receive(5s);
    FAIL() << "the child exited";
  } catch (const WorkerGone& e) {
    EXPECT_THAT(e.what(), HasSubstr("exited with code 3"));
  }
}

TEST(WorkerProcess, TheWatchdogKillsASilentChildAndItsGroup) {
  // The shell's own child (sleep) must go too: the watchdog kills the whole group.
  WorkerProcess worker = shell("sleep 300 & echo $! >&4; wait");
  worker.start();
  const pid_t grandchild = std::stoi(worker.receive(5s));
  const auto start = std::chrono::steady_clock::now();
  try {
    worker.receive(300ms);
    FAIL() << "the child is silent: the watchdog must end it";
  } catch (const WorkerGone& e) {
    EXPECT_TRUE(e.timed_out());
    EXPECT_THAT(e.what(), HasSubstr("silent"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(worker.running());
  // The killed sleep may linger as a zombie until init reaps it; it must not keep running.
  for (int i = 0; i < 50 && running_process(grandchild); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(running_process(grandchild)) << "the worker's own child outlived it";
}

TEST(WorkerProcess, StartsAFreshChildAfterADeath) {
  WorkerProcess worker = shell("read line <&3; echo \"pid $$\" >&4; exit 0");
  worker.start();
  worker.send("a");
  const std::string first = worker.receive(5s);
  EXPECT_THROW(worker.receive(5s), WorkerGone);
  worker.start();
  worker.send("b");
  const std::string second = worker.receive(5s);
  EXPECT_THAT(first, HasSubstr("pid "));
  EXPECT_NE(first, second);
}

TEST(WorkerProcess, SendingToADeadChildThrowsInsteadOfRaisingSigpipe) {
  WorkerProcess worker = shell("exit 0");
  worker.start();
  std::this_thread::sleep_for(200ms);
  EXPECT_THROW(
      {
        for (int i = 0; i < 100; ++i) worker.send(std::string(4096, 'x'));
        worker.receive(5s);
      },
      WorkerGone);
}

TEST(WorkerProcess, AProgramThatCannotStartThrows) {
  WorkerProcess worker({"/nonexistent/tiletune-worker"});
  EXPECT_THROW(worker.start(), std::runtime_error);
}

}  // namespace
}  // namespace tiletune
