#include "fuzz/cpu_backend/host_compiler.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace tiletune {

HostCompiler::HostCompiler(const std::string& command) {
  std::string text = command;
  if (text.empty()) {
    const char* from_environment = std::getenv("TILETUNE_CXX");
    text = from_environment != nullptr && *from_environment != '\0' ? from_environment : "c++";
  }
  std::istringstream words(text);
  for (std::string word; words >> word;) argv_.push_back(word);
  if (argv_.empty()) throw std::runtime_error("the host compiler command is blank");
}

std::string HostCompiler::command() const {
  std::string text;
  for (const std::string& word : argv_) text += (text.empty() ? "" : " ") + word;
  return text;
}

HostCompiler::Result HostCompiler::run(const std::vector<std::string>& arguments) const {
  std::vector<std::string> all = argv_;
  all.insert(all.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : all) argv.push_back(word.data());
  argv.push_back(nullptr);

  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_ends[1]);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_ends[1]);
  if (spawned != 0) {
    close(pipe_ends[0]);
    throw std::runtime_error("cannot run the host compiler '" + command() +
                             "': " + std::strerror(spawned));
  }

  Result result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(pipe_ends[0], buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, std::size_t(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_ends[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

const std::string& HostCompiler::identity() const {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::string> known;
  std::lock_guard lock(mutex);
  auto found = known.find(argv_);
  if (found == known.end()) {
    Result version = run({"--version"});
    if (version.exit_code != 0) {
      throw std::runtime_error("the host compiler '" + command() + "' failed on --version:\n" +
                               version.output);
    }
    found = known.emplace(argv_, std::move(version.output)).first;
  }
  return found->second;
}

}  // namespace tiletune
