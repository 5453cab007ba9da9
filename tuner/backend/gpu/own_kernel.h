// A kernel of tiletune's own that launches use (the operand copy, the pass over C): NVRTC compiles
// it once per process and architecture, and it is loaded into the CUDA context current at its first
// use, so one OwnKernel belongs to one context (GpuKernel's).
#pragma once

#include <mutex>
#include <string>

#include "tuner/backend/gpu/cuda_driver.h"

namespace tiletune {

class OwnKernel {
 public:
  // `source` may include the device library (<tiletune/NAME.h>); `what` names the kernel in errors.
  OwnKernel(const char* source, std::string file_name, std::string entry, std::string what);
  ~OwnKernel();
  OwnKernel(const OwnKernel&) = delete;
  OwnKernel& operator=(const OwnKernel&) = delete;

  // The loaded entry, or nullptr where it cannot be had (no NVRTC here, none for this GPU):
  // why_not() then says why. Loads on the first call. Thread-safe.
  CUfunction function();
  const std::string& why_not() const { return why_not_; }

 private:
  void load();

  const char* source_;
  std::string file_name_, entry_, what_;
  std::once_flag loaded_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  std::string why_not_;
};

}  // namespace tiletune
