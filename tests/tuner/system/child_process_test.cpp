// run_child_process on ordinary POSIX tools (sh, cat, head): exit codes, merged output, extra
// environment, timeouts that take the whole process group down, programs that do not exist.
#include "tuner/system/child_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

ChildProcessOptions with_timeout(std::chrono::milliseconds timeout) {
  ChildProcessOptions options;
  options.timeout = timeout;
  return options;
}

ChildProcessOptions with_environment(const std::string& name, const std::string& value) {
  ChildProcessOptions options;
  options.environment = {{name, value}};
  return options;
}

ChildProcessResult shell(const std::string& script, const ChildProcessOptions& options = {}) {
  return run_child_process({"sh", "-c", script}, options);
}

TEST(ChildProcess, ReturnsTheExitCode) {
  EXPECT_EQ(run_child_process({"true"}).exit_code, 0);
  EXPECT_EQ(shell("exit 3").exit_code, 3);
  EXPECT_EQ(shell("exit 3").describe_exit(), "exit code 3");
}

TEST(ChildProcess, ReportsDeathBySignalAs128PlusTheSignal) {
  const ChildProcessResult result = shell("kill -SEGV $$");
  EXPECT_EQ(result.exit_code, 128 + SIGSEGV);
  EXPECT_FALSE(result.timed_out);
  EXPECT_THAT(result.describe_exit(), HasSubstr("killed by signal 11"));
}

TEST(ChildProcess, MergesStdoutAndStderrInTheOrderWritten) {
  const ChildProcessResult result = shell("echo one; echo two >&2; echo three; echo four >&2");
  EXPECT_EQ(result.output, "one\ntwo\nthree\nfour\n");
}

TEST(ChildProcess, PassesArgumentsUnchangedAndFindsProgramsInPath) {
  const ChildProcessResult result =
      run_child_process({"printf", "[%s]", "two words", "it's", "$HOME", ""});
  EXPECT_EQ(result.output, "[two words][it's][$HOME][]");
}

TEST(ChildProcess, ReadsOutputLargerThanThePipe) {
  const ChildProcessResult result = run_child_process({"head", "-c", "3000000", "/dev/zero"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output.size(), 3000000u);
}

TEST(ChildProcess, GivesTheChildAnEmptyStdin) {
  // cat would wait for a terminal or our own stdin otherwise.
  const ChildProcessResult result = run_child_process({"cat"}, with_timeout(10s));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "");
}

TEST(ChildProcess, AddsEnvironmentVariablesAndReplacesOursOfTheSameName) {
  ASSERT_EQ(setenv("TILETUNE_CHILD_TEST_INHERITED", "kept", 1), 0);
  ASSERT_EQ(setenv("TILETUNE_CHILD_TEST_REPLACED", "ours", 1), 0);
  ChildProcessOptions options;
  options.environment = {{"TILETUNE_CHILD_TEST_REPLACED", "theirs"},
                         {"TILETUNE_CHILD_TEST_NEW", "with spaces = and equals"}};
  const ChildProcessResult result = shell(
      "printf '%s|%s|%s|' \"$TILETUNE_CHILD_TEST_INHERITED\" \"$TILETUNE_CHILD_TEST_REPLACED\" "
      "\"$TILETUNE_CHILD_TEST_NEW\"; env | grep -c '^TILETUNE_CHILD_TEST_REPLACED='",
      options);
  EXPECT_EQ(result.output, "kept|theirs|with spaces = and equals|1\n");
  // Our own environment is left alone.
  EXPECT_STREQ(std::getenv("TILETUNE_CHILD_TEST_REPLACED"), "ours");
  unsetenv("TILETUNE_CHILD_TEST_INHERITED");
  unsetenv("TILETUNE_CHILD_TEST_REPLACED");
}

TEST(ChildProcess, RejectsABadEnvironmentVariableName) {
  EXPECT_THROW(run_child_process({"true"}, with_environment("A=B", "c")), std::invalid_argument);
  EXPECT_THROW(run_child_process({"true"}, with_environment("", "c")), std::invalid_argument);
}

TEST(ChildProcess, ATimeoutThatIsNotReachedChangesNothing) {
  const auto start = std::chrono::steady_clock::now();
  const ChildProcessResult result = shell("echo quick; exit 4", with_timeout(30s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.output, "quick\n");
}

// True when the process is gone or a zombie nobody has reaped yet (a container's init may never).
bool dead(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

TEST(ChildProcess, ATimeoutKillsTheWholeProcessGroupAndKeepsWhatWasPrinted) {
  const auto start = std::chrono::steady_clock::now();
  // The shell starts a grandchild, prints its pid and waits: both must be killed.
  const ChildProcessResult result =
      shell("sleep 60 & echo \"$!\"; echo waiting >&2; wait", with_timeout(500ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL);
  EXPECT_THAT(result.describe_exit(), HasSubstr("timeout"));
  EXPECT_THAT(result.describe_exit(), HasSubstr("500 ms"));
  const std::string::size_type newline = result.output.find('\n');
  ASSERT_NE(newline, std::string::npos) << result.output;
  const std::string grandchild = result.output.substr(0, newline);
  EXPECT_THAT(result.output, HasSubstr("waiting\n"));
  bool grandchild_dead = false;
  for (int i = 0; i < 100 && !grandchild_dead; ++i) {
    grandchild_dead = dead(grandchild);
    if (!grandchild_dead) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(grandchild_dead) << "the grandchild " << grandchild << " outlived the timeout";
}

// A silence timeout measures the quiet between outputs, not the whole run: a child printing
// every 100 ms runs well past it, one that stops printing is killed.
TEST(ChildProcess, ASilenceTimeoutLetsATalkativeChildRunAndKillsASilentOne) {
  ChildProcessOptions options;
  options.silence_timeout = 400ms;
  const auto start = std::chrono::steady_clock::now();
  const ChildProcessResult talkative =
      shell("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo $i; sleep 0.1; done", options);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1000ms);
  EXPECT_FALSE(talkative.timed_out) << talkative.output;
  EXPECT_EQ(talkative.exit_code, 0);

  const ChildProcessResult silent = shell("echo started; sleep 30", options);
  EXPECT_TRUE(silent.timed_out);
  EXPECT_TRUE(silent.silent);
  EXPECT_EQ(silent.output, "started\n");
  EXPECT_THAT(silent.describe_exit(), HasSubstr("400 ms without output"));
}

TEST(ChildProcess, AMissingProgramThrowsWithItsNameAndCause) {
  try {
    run_child_process({"tiletune-no-such-program-here", "--version"});
    FAIL() << "expected a SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_THAT(e.what(), HasSubstr("tiletune-no-such-program-here"));
    EXPECT_THAT(e.what(), HasSubstr("No such file or directory"));
  }
  EXPECT_THROW(run_child_process({"/nonexistent/dir/program"}), SpawnError);
  EXPECT_THROW(run_child_process({}), std::invalid_argument);
}

TEST(ChildProcess, AFileThatIsNotExecutableCannotBeStarted) {
  const std::string path = ::testing::TempDir() + "tiletune_not_executable.sh";
  std::ofstream(path) << "#!/bin/sh\necho ran\n";
  try {
    run_child_process({path});
    FAIL() << "expected a SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_EQ(e.error_number(), EACCES);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tiletune
