// The elementwise bias and activation an application runs after cuBLAS when it has no fused
// epilogue: `tiletune bench`'s "cuBLAS + kernel" yardstick times cuBLAS's product and this kernel
// together. It applies the templates' own float epilogue (tt_epilogue, <tiletune/gemm_contract.h>)
// to C in place, one thread per element of every entry of the batch.
#pragma once

#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/core/gemm_shape.h"

namespace tiletune {

class EpilogueKernel {
 public:
  // Compiles the kernel with NVRTC for the device and loads it. Throws CompileError, NvrtcError,
  // CudaError.
  explicit EpilogueKernel(const GpuDevice& device);
  ~EpilogueKernel();
  EpilogueKernel(const EpilogueKernel&) = delete;
  EpilogueKernel& operator=(const EpilogueKernel&) = delete;

  // C = act(C + bias) over the problem's M x N elements of every entry (alpha 1, beta 0: C holds
  // the product), enqueued on `stream`. Throws CudaError when the launch is rejected.
  void run(const GemmProblem& problem, CUdeviceptr c, CUdeviceptr bias, CUstream stream) const;

 private:
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

}  // namespace tiletune
