// cuBLASLt as `tiletune bench`'s yardstick of a GEMM with its epilogue fused: cublasLtMatmul with
// CUBLASLT_EPILOGUE_BIAS, RELU, RELU_BIAS, GELU or GELU_BIAS, what an application that fuses
// without tiletune calls. Opened at run time, like cuBLAS (cublas_sgemm.h): a yardstick only.
// Computes in FP32 (CUBLAS_COMPUTE_32F), or TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) for Precision::tf32,
// with the first algorithm of cuBLASLt's heuristic and a 32 MiB workspace.
#pragma once

#include <memory>
#include <stdexcept>

#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/precision.h"

namespace tiletune {

// cuBLASLt cannot serve: the library is missing or lacks an entry point, or it refuses the
// problem (no algorithm, a rejected descriptor). One line, its cause in it.
class CublasLtUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CublasLtMatmul {
 public:
  // Loads libcublasLt, describes the problem (row-major, as its column-major transpose) with
  // `bias` as the epilogue's bias where it adds one, and asks the heuristic for an algorithm.
  // Throws CublasLtUnavailable; CudaError for the workspace.
  CublasLtMatmul(const GemmProblem& problem, CUdeviceptr bias, Precision precision);
  ~CublasLtMatmul();
  CublasLtMatmul(const CublasLtMatmul&) = delete;
  CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;

  // C = act(alpha op(A) op(B) + beta C + bias) of the problem described, enqueued on `stream`.
  // Throws CublasLtUnavailable when cublasLtMatmul fails.
  void run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream) const;

  struct Library;  // the entry points, resolved once
  struct Plan;     // the handle, descriptors and algorithm (cuBLASLt's header stays in the .cpp)

 private:
  const Library* library_;
  GemmProblem problem_;
  DeviceBuffer workspace_;
  std::unique_ptr<Plan> plan_;
};

}  // namespace tiletune
