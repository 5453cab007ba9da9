// The launcher's pass over C on the GPU (epilogue_pass.h): C = act(S + beta * C + bias), a kernel
// of ours that computes each element with the contract's own tt_epilogue (alpha 1), so that it
// applies beta, the bias and the activation as a template's build would. NVRTC compiles it once
// per process and architecture.
#pragma once

#include "tuner/backend/epilogue_pass.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/own_kernel.h"

namespace tiletune {

// The pass kernel's CUDA source (entry tiletune_epilogue_pass), for tests that compile it.
extern const char* const kEpiloguePassSource;

// Passes in one CUDA context (the kernel's module is loaded into the context current at the first
// pass, as OwnKernel's are): one EpiloguePassKernel belongs to one context (GpuKernel's).
class EpiloguePassKernel {
 public:
  // Enqueues the pass over every entry of the problem's C at `c` from what the kernel wrote at `s`
  // (laid out as pass.kernel_problem says; `s` is `c` where beta is 0) on `stream`. Throws
  // LaunchError where the kernel cannot be had (no NVRTC here), CudaError when the launch is refused.
  void run(const EpiloguePass& pass, const GemmProblem& problem, CUdeviceptr s, CUdeviceptr c,
           CUdeviceptr bias, CUstream stream);

 private:
  OwnKernel kernel_{kEpiloguePassSource, "tiletune_epilogue_pass.cu", "tiletune_epilogue_pass",
                    "the epilogue pass kernel"};
};

}  // namespace tiletune
