// The host C++ compiler, run as a child process.
#pragma once

#include <string>
#include <vector>

namespace tiletune {

class HostCompiler {
 public:
  // `command` may hold a launcher in front of the compiler ("ccache g++"); empty means
  // $TILETUNE_CXX, else "c++".
  explicit HostCompiler(const std::string& command);

  struct Result {
    int exit_code = 0;   // 128 + the signal when killed by one
    std::string output;  // stdout and stderr together
  };
  // Runs the compiler with these arguments. Throws std::runtime_error when it cannot be started.
  Result run(const std::vector<std::string>& arguments) const;

  // The compiler's --version text, asked once per process: part of every cache key, so that an
  // upgraded compiler builds anew.
  const std::string& identity() const;
  // Whether it is GCC (by its --version text): GCC's precompiled headers and flags are used then.
  bool is_gcc() const;

  std::string command() const;  // for messages

 private:
  std::vector<std::string> argv_;
};

}  // namespace tiletune
