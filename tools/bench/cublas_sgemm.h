// cuBLAS SGEMM as the yardstick of `tiletune bench`, opened at run time: cuBLAS is a benchmark
// reference only, never a dependency of the tuner.
#pragma once

#include <stdexcept>

#include "tuner/cuda_driver.h"
#include "tuner/gemm_shape.h"

namespace tiletune {

class CublasSgemm {
 public:
  // Loads libcublas and creates a handle on the current context. Throws std::runtime_error.
  CublasSgemm();
  ~CublasSgemm();
  CublasSgemm(const CublasSgemm&) = delete;
  CublasSgemm& operator=(const CublasSgemm&) = delete;

  // Row-major C = A * B with default FP32 math (no TF32), enqueued on `stream`.
  void run(const GemmProblem& problem, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
           CUstream stream) const;

  struct Library;  // the entry points, resolved once

 private:
  const Library* library_;
  void* handle_ = nullptr;
};

}  // namespace tiletune
