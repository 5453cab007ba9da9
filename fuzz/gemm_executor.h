// Where a configuration runs: on the GPU (JIT-compiled with NVRTC) or on the CPU (the same source
// compiled by the host compiler, each CUDA thread a fiber). The fuzzer's properties and oracles
// only see this interface.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fuzz/gemm_case.h"
#include "fuzz/gemm_operands.h"
#include "tuner/backend/backend_errors.h"  // LaunchError, RecoverableLaunchError, UnsupportedOnBackend
#include "tuner/backend/gpu/nvrtc_compiler.h"  // PtxasReport
#include "tuner/core/kernel_template.h"

namespace tiletune {

class GemmExecutor {
 public:
  virtual ~GemmExecutor() = default;

  // Launches the configuration once for the case's problem: reads operands.a and operands.b and
  // writes operands.c (guards and padding included, as the kernel left them). Throws LaunchError.
  virtual void run(const GemmCase& gemm_case, GemmOperands& operands) = 0;

  // "gpu NVIDIA H200" or "cpu (4 workers)": for reports.
  virtual std::string backend_name() const = 0;

  // How the case ran, where the backend varies it beyond its seeds' plain meaning ("perturbed:
  // ..."), for a finding's report; empty where there is nothing to add.
  virtual std::string case_note(const GemmCase&) const { return {}; }

  // What the compiler reports of the kernel's resources (registers, static shared memory,
  // spills); all zero on the CPU, which has no register file to run out of.
  virtual PtxasReport resources() const { return {}; }

  // Why `geometry` cannot launch on the device (threads, shared memory, registers as ptxas
  // counted them), or nothing when it can. The CPU backend says so when it launches instead
  // (UnsupportedOnBackend).
  virtual std::optional<std::string> exceeds_device_limits(const LaunchGeometry&) const {
    return std::nullopt;
  }

  // True once a launch has broken the process for good (a lost CUDA context): nothing more can
  // run in it.
  virtual bool context_lost() const { return false; }
};

}  // namespace tiletune
