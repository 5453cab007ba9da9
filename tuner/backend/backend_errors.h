// What a backend reports when a configuration cannot be built or run. Both backends throw these,
// and the fuzzer, the tuner and the runtime library tell them apart by type alone.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace tiletune {

// The source did not compile for this configuration: the compiler's log (NVRTC's, or the host
// compiler's on the CPU backend) says why.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string log)
      : std::runtime_error(message), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

// The kernel could not run (launch failure, illegal address, trap, timeout). Unlike a wrong
// result, this is a finding of its own kind.
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A finding about one case that leaves the backend usable (a sanitizer's report): the case fails
// and shrinks like a wrong result, and later cases still run.
class RecoverableLaunchError : public LaunchError {
 public:
  using LaunchError::LaunchError;
};

// The template uses something this backend cannot run: "not supported on the CPU backend: <what>".
class UnsupportedOnBackend : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tiletune
