#include "tuner/system/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

extern char** environ;

namespace tiletune {
namespace {

using Clock = std::chrono::steady_clock;

// Closes a descriptor on every way out of run_child_process.
class Descriptor {
 public:
  explicit Descriptor(int fd = -1) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

class SpawnActions {
 public:
  SpawnActions() { check(posix_spawn_file_actions_init(&actions_), "posix_spawn_file_actions_init"); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions_); }
  posix_spawn_file_actions_t* get() { return &actions_; }

  static void check(int error, const char* what) {
    if (error != 0) throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(error)));
  }

 private:
  posix_spawn_file_actions_t actions_;
};

class SpawnAttributes {
 public:
  SpawnAttributes() { SpawnActions::check(posix_spawnattr_init(&attributes_), "posix_spawnattr_init"); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  ~SpawnAttributes() { posix_spawnattr_destroy(&attributes_); }
  posix_spawnattr_t* get() { return &attributes_; }

 private:
  posix_spawnattr_t attributes_;
};

// Our environment with the extra variables set (replacing ours of the same name).
std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  for (const auto& [name, value] : extra) {
    if (name.empty() || name.find('=') != std::string::npos) {
      throw std::invalid_argument(fmt::format("bad environment variable name '{}'", name));
    }
  }
  std::vector<std::string> result;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    const bool replaced = std::any_of(extra.begin(), extra.end(),
                                      [&](const auto& variable) { return variable.first == name; });
    if (!replaced) result.emplace_back(text);
  }
  for (const auto& [name, value] : extra) result.push_back(name + "=" + value);
  return result;
}

std::string describe_duration(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return fmt::format("{} s", duration.count() / 1000);
  return fmt::format("{} ms", duration.count());
}

// Appends whatever the pipe holds; false at end of file (or on an error reading it).
bool read_some(int fd, std::string& output) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      output.append(buffer, std::size_t(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Waits for the pipe to be readable: true when it is, false when `wait` passed first.
bool wait_readable(int fd, std::optional<std::chrono::milliseconds> wait) {
  pollfd descriptor{fd, POLLIN, 0};
  const int milliseconds = wait ? int(std::clamp<std::int64_t>(wait->count(), 0, INT_MAX)) : -1;
  for (;;) {
    const int ready = poll(&descriptor, 1, milliseconds);
    if (ready >= 0) return ready > 0;
    // Anything but an interruption: let read() find out what is wrong with the pipe.
    if (errno != EINTR) return true;
  }
}

}  // namespace

std::string ChildProcessResult::describe_exit() const {
  if (silent && timeout) return fmt::format("killed after {} without output", describe_duration(*timeout));
  if (timed_out) {
    return timeout ? fmt::format("killed after the {} timeout", describe_duration(*timeout))
                   : std::string("killed after its timeout");
  }
  if (exit_code > 128 && exit_code < 128 + NSIG) {
    const char* name = strsignal(exit_code - 128);
    return fmt::format("killed by signal {} ({})", exit_code - 128, name ? name : "unknown");
  }
  return fmt::format("exit code {}", exit_code);
}

ChildProcessResult run_child_process(const std::vector<std::string>& argv,
                                     const ChildProcessOptions& options) {
  if (argv.empty() || argv[0].empty()) throw std::invalid_argument("no program to run");
  std::vector<std::string> words = argv;
  std::vector<char*> arguments;
  for (std::string& word : words) arguments.push_back(word.data());
  arguments.push_back(nullptr);
  std::vector<std::string> environment = child_environment(options.environment);
  std::vector<char*> environment_pointers;
  for (std::string& entry : environment) environment_pointers.push_back(entry.data());
  environment_pointers.push_back(nullptr);

  // Close-on-exec, so that a child spawned meanwhile by another thread does not inherit the write
  // end and keep our read from ever seeing end of file.
  int pipe_ends[2];
  if (pipe2(pipe_ends, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  Descriptor read_end(pipe_ends[0]);
  Descriptor write_end(pipe_ends[1]);

  SpawnActions actions;
  SpawnActions::check(
      posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0),
      "posix_spawn_file_actions_addopen");
  SpawnActions::check(posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), STDOUT_FILENO),
                      "posix_spawn_file_actions_adddup2");
  SpawnActions::check(posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), STDERR_FILENO),
                      "posix_spawn_file_actions_adddup2");
  SpawnAttributes attributes;
  if (options.timeout || options.silence_timeout) {
    // A group of its own (led by the child), so that a timeout can kill all of it.
    SpawnActions::check(posix_spawnattr_setflags(attributes.get(), POSIX_SPAWN_SETPGROUP),
                        "posix_spawnattr_setflags");
    SpawnActions::check(posix_spawnattr_setpgroup(attributes.get(), 0), "posix_spawnattr_setpgroup");
  }

  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, arguments[0], actions.get(), attributes.get(),
                                   arguments.data(), environment_pointers.data());
  write_end.reset();  // ours: the child has its own copies, and end of file needs them all closed
  if (spawned != 0) {
    throw SpawnError(fmt::format("cannot run '{}': {}", argv[0], std::strerror(spawned)), spawned);
  }

  ChildProcessResult result;
  result.timeout = options.silence_timeout ? options.silence_timeout : options.timeout;
  const std::optional<Clock::time_point> deadline =
      options.timeout ? std::optional(Clock::now() + *options.timeout) : std::nullopt;
  Clock::time_point last_output = Clock::now();
  for (;;) {
    std::optional<std::chrono::milliseconds> left;
    bool silence_decides = false;
    if (deadline) left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
    if (options.silence_timeout) {
      const auto quiet_left =
          std::chrono::ceil<std::chrono::milliseconds>(last_output + *options.silence_timeout - Clock::now());
      if (!left || quiet_left < *left) {
        left = quiet_left;
        silence_decides = true;
      }
    }
    if (left && left->count() <= 0) {
      result.timed_out = true;
      result.silent = silence_decides;
      if (!silence_decides) result.timeout = options.timeout;
      break;
    }
    if (!wait_readable(read_end.get(), left)) continue;  // the loop notices the deadline
    if (!read_some(read_end.get(), result.output)) break;
    last_output = Clock::now();
  }
  if (result.timed_out) {
    kill(-pid, SIGKILL);
    // What the group wrote before dying is still in the pipe; a straggler that left the group and
    // kept the pipe open is not waited for.
    while (wait_readable(read_end.get(), std::chrono::milliseconds(200)) &&
           read_some(read_end.get(), result.output)) {
    }
  }
  read_end.reset();

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace tiletune
