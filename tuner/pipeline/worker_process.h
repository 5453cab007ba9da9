// A long-lived child process spoken to in lines: the tuner's evaluation worker. Requests go down
// one pipe (the child's descriptor 3), replies come up another (its descriptor 4); the child's
// stdout and stderr are the parent's stderr, so a kernel's printf cannot garble the protocol.
//
// The parent guards every wait with a watchdog: a child silent for longer is killed with its
// whole process group. A child that dies is reported with how it died (signal, exit code), and
// the next start() spawns a fresh one.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tiletune {

// The child is gone: it died, or the watchdog killed it. `what()` says which, and how.
class WorkerGone : public std::runtime_error {
 public:
  WorkerGone(const std::string& message, bool timed_out)
      : std::runtime_error(message), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

class WorkerProcess {
 public:
  // The descriptors the child finds its pipes on.
  static constexpr int kRequestFd = 3;
  static constexpr int kReplyFd = 4;

  explicit WorkerProcess(std::vector<std::string> argv);
  ~WorkerProcess();  // kills the child if it still runs
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Spawns the child unless it runs. Throws std::runtime_error when it cannot be started.
  void start();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Sends one line (a newline is appended). Throws WorkerGone when the child has died.
  void send(const std::string& line);

  // The next line the child writes, waiting at most `watchdog`. Throws WorkerGone when the child
  // dies first (or exits after its last line) or stays silent for longer, after killing it.
  std::string receive(std::chrono::milliseconds watchdog);

  // Kills the child (SIGKILL to its group) and reaps it; nothing when it is not running.
  void stop();

 private:
  // Reaps the child and describes its death: "killed by signal 11 (Segmentation fault)".
  std::string reap();
  void close_pipes();

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int request_fd_ = -1;  // our end: we write
  int reply_fd_ = -1;    // our end: we read
  std::string buffered_;  // read but not yet returned
};

}  // namespace tiletune
