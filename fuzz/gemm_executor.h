// Where a configuration runs: on the GPU (JIT-compiled with NVRTC) or on the CPU (the same source
// compiled by the host compiler, each CUDA thread a fiber). The fuzzer's properties and oracles
// only see this interface.
#pragma once

#include <memory>
#include <string>

#include "fuzz/gemm_case.h"
#include "fuzz/gemm_operands.h"
#include "tuner/backend/backend_errors.h"  // LaunchError, RecoverableLaunchError, UnsupportedOnBackend
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
};

}  // namespace tiletune
