#include "tuner/pipeline/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace tiletune {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const char* what, int error) {
  throw std::runtime_error(fmt::format("starting the evaluation worker: {}: {}", what,
                                       std::strerror(error)));
}

void check(int error, const char* what) {
  if (error != 0) fail(what, error);
}

// A pipe whose ends sit above the descriptors the child expects, close-on-exec: dup2 onto 3 and
// 4 in the child then never meets an end already there, and no other child inherits them. The
// first ends are close-on-exec from their creation too (pipe2): a worker that another thread
// spawned between pipe() and close() kept a copy of this one's reply pipe, so that the pool saw
// this worker's crash only when its request timed out (a flaky FuzzPool test under load).
void make_pipe(int ends[2]) {
  int raw[2];
  if (pipe2(raw, O_CLOEXEC) != 0) fail("pipe2", errno);
  for (int i = 0; i < 2; ++i) {
    ends[i] = fcntl(raw[i], F_DUPFD_CLOEXEC, 10);
    const int error = errno;
    close(raw[i]);
    if (ends[i] < 0) fail("fcntl", error);
  }
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = strsignal(WTERMSIG(status));
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), name ? name : "unknown");
  }
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

WorkerProcess::WorkerProcess(std::vector<std::string> argv) : argv_(std::move(argv)) {
  if (argv_.empty()) throw std::invalid_argument("no worker program");
}

WorkerProcess::~WorkerProcess() { stop(); }

void WorkerProcess::start() {
  if (running()) return;
  // A worker that dies while we write to it must end in WorkerGone, not kill us with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int requests[2], replies[2];
  make_pipe(requests);
  make_pipe(replies);

  posix_spawn_file_actions_t actions;
  check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
  check(posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0),
        "posix_spawn_file_actions_addopen");
  check(posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO),
        "posix_spawn_file_actions_adddup2");
  check(posix_spawn_file_actions_adddup2(&actions, requests[0], kRequestFd),
        "posix_spawn_file_actions_adddup2");
  check(posix_spawn_file_actions_adddup2(&actions, replies[1], kReplyFd),
        "posix_spawn_file_actions_adddup2");
  posix_spawnattr_t attributes;
  check(posix_spawnattr_init(&attributes), "posix_spawnattr_init");
  // A group of its own, so that the watchdog kills whatever the worker started too.
  check(posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP), "posix_spawnattr_setflags");
  check(posix_spawnattr_setpgroup(&attributes, 0), "posix_spawnattr_setpgroup");

  std::vector<char*> arguments;
  for (std::string& word : argv_) arguments.push_back(word.data());
  arguments.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, arguments.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(requests[0]);
  close(replies[1]);
  if (spawned != 0) {
    close(requests[1]);
    close(replies[0]);
    fail(argv_[0].c_str(), spawned);
  }
  pid_ = pid;
  request_fd_ = requests[1];
  reply_fd_ = replies[0];
  buffered_.clear();
}

void WorkerProcess::send(const std::string& line) {
  if (!running()) throw WorkerGone("the worker is not running", false);
  const std::string text = line + '\n';
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(request_fd_, text.data() + written, text.size() - written);
    if (n > 0) {
      written += std::size_t(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      throw WorkerGone("the worker died: " + reap(), false);
    }
  }
}

std::string WorkerProcess::receive(std::chrono::milliseconds watchdog) {
  if (!running()) throw WorkerGone("the worker is not running", false);
  const Clock::time_point deadline = Clock::now() + watchdog;
  for (;;) {
    if (const std::size_t end = buffered_.find('\n'); end != std::string::npos) {
      std::string line = buffered_.substr(0, end);
      buffered_.erase(0, end + 1);
      return line;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      stop();
      throw WorkerGone(fmt::format("the worker was silent for {} s and was killed",
                                   std::chrono::duration<double>(watchdog).count()),
                       true);
    }
    pollfd descriptor{reply_fd_, POLLIN, 0};
    const int ready = poll(&descriptor, 1, int(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t n = read(reply_fd_, buffer, sizeof buffer);
    if (n > 0) {
      buffered_.append(buffer, std::size_t(n));
    } else if (n == 0 || errno != EINTR) {
      throw WorkerGone("the worker died: " + reap(), false);
    }
  }
}

void WorkerProcess::stop() {
  if (!running()) return;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  reap();
}

std::string WorkerProcess::reap() {
  close_pipes();
  int status = 0;
  pid_t done;
  do {
    done = waitpid(pid_, &status, 0);
  } while (done < 0 && errno == EINTR);
  pid_ = -1;
  return done < 0 ? std::string("ended") : describe_status(status);
}

void WorkerProcess::close_pipes() {
  if (request_fd_ >= 0) close(request_fd_);
  if (reply_fd_ >= 0) close(reply_fd_);
  request_fd_ = reply_fd_ = -1;
}

}  // namespace tiletune
