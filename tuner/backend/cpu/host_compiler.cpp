#include "tuner/backend/cpu/host_compiler.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "tuner/system/child_process.h"

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
  ChildProcessResult child;
  try {
    child = run_child_process(all);
  } catch (const SpawnError& e) {
    throw std::runtime_error("cannot run the host compiler '" + command() +
                             "': " + std::strerror(e.error_number()));
  }
  return Result{child.exit_code, std::move(child.output)};
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

bool HostCompiler::is_gcc() const {
  return identity().find("Free Software Foundation") != std::string::npos;
}

}  // namespace tiletune
