// Runs a program as a child process and captures what it prints: the one place tiletune spawns
// processes (the host compiler of the CPU backend, compute-sanitizer over a replaying tiletune).
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tiletune {

struct ChildProcessOptions {
  // Set in the child's environment on top of ours (a name given here replaces ours).
  std::vector<std::pair<std::string, std::string>> environment;
  // Without one the child runs as long as it likes, in our process group (so Ctrl-C reaches it
  // too). With one it gets a process group of its own, and the whole group is killed with SIGKILL
  // when the time is up: a tool that forks helpers (compute-sanitizer does) leaves none behind.
  std::optional<std::chrono::milliseconds> timeout;
  // Like `timeout`, but measured from the child's last output: a child that reports its progress
  // may run as long as it likes, as long as it is never silent for this long.
  std::optional<std::chrono::milliseconds> silence_timeout;
};

struct ChildProcessResult {
  int exit_code = 0;       // 128 + the signal when killed by one (137 after a timeout)
  std::string output;      // stdout and stderr together, in the order they were written
  bool timed_out = false;  // killed because the timeout (or the silence timeout) passed
  bool silent = false;     // of those, killed for its silence
  std::optional<std::chrono::milliseconds> timeout;  // the one it ran under, for messages

  // "exit code 3", "killed by signal 11 (Segmentation fault)", "killed after the 60 s timeout",
  // "killed after 2 s without output".
  std::string describe_exit() const;
};

// The program could not be started at all (not found, not executable): its errno is kept so that
// callers can word their own message.
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& message, int error_number)
      : std::runtime_error(message), error_number_(error_number) {}
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

// Runs argv[0] (looked up in PATH when it has no '/') with the rest as its arguments; its stdin is
// /dev/null. Waits until it has exited (or the timeout passed) and returns its exit code and
// everything it printed. Throws SpawnError when it cannot be started, std::runtime_error when a
// pipe cannot be made.
ChildProcessResult run_child_process(const std::vector<std::string>& argv,
                                     const ChildProcessOptions& options = {});

}  // namespace tiletune
