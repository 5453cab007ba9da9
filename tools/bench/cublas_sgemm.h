// cuBLAS as the yardstick of `tiletune bench`, opened at run time: cuBLAS is a benchmark reference
// only, never a dependency of the tuner. The yardstick matches the precision benched: TF32
// templates are timed against cuBLAS in TF32 (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32), FP32
// and 3xTF32 ones against plain SGEMM (cuBLAS has no 3xTF32 of its own: FP32 is what 3xTF32 stands
// in for).
#pragma once

#include <stdexcept>

#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/precision.h"

namespace tiletune {

// "cuBLAS SGEMM" or "cuBLAS TF32": the yardstick of a precision, as bench and report name it.
inline const char* cublas_yardstick(Precision precision) {
  return precision == Precision::tf32 ? "cuBLAS TF32" : "cuBLAS SGEMM";
}

class CublasSgemm {
 public:
  // Loads libcublas and creates a handle on the current context, computing as
  // cublas_yardstick(precision) says. Throws std::runtime_error.
  explicit CublasSgemm(Precision precision = Precision::fp32);
  ~CublasSgemm();
  CublasSgemm(const CublasSgemm&) = delete;
  CublasSgemm& operator=(const CublasSgemm&) = delete;

  // Row-major C = alpha op(A) op(B) + beta C, a strided batch where the problem has one,
  // enqueued on `stream`: FP32 math (no TF32), or TF32 for Precision::tf32. cuBLAS applies no
  // epilogue: std::invalid_argument for a problem with one.
  void run(const GemmProblem& problem, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
           CUstream stream) const;

  struct Library;  // the entry points, resolved once

 private:
  const Library* library_;
  void* handle_ = nullptr;
  bool tf32_ = false;
};

}  // namespace tiletune
