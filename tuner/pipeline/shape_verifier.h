// Checks a configuration at the full tuning shape, on the GPU, before it is timed.
//
// The fuzzer's properties run on small awkward shapes against a CPU reference; a bug that only
// shows at scale (32-bit index overflow, a grid dimension limit) needs the real shape, where a CPU
// reference would take minutes. So the reference lives on the GPU: a plain double-precision
// kernel, computed once per shape together with each element's sum_k |a_ik||b_kj|, then compared
// with every configuration's output within the bound of the precision its template declares
// (tuner/core/error_bound.h).
//
// The problem may carry the BLAS contract with alpha 1 and beta 0 (bench's): transposes, a strided
// batch (every entry referenced) and an epilogue, whose bias and activation the comparison applies
// in double, allowing the bias's addition and GELU's float evaluation the fuzz oracle's few
// roundings (fuzz/gemm_oracle.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/core/error_bound.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/precision.h"

namespace tiletune {

class ShapeVerifier {
 public:
  // The seed's inputs for the problem (full_shape_inputs.h: the same in every lane; a bias where
  // the epilogue adds one), uploaded, and the reference computed. Throws std::invalid_argument
  // for an invalid problem or one with alpha other than 1 or beta other than 0.
  ShapeVerifier(const GpuDevice& device, const GemmProblem& problem, std::uint64_t seed);
  ~ShapeVerifier();

  CUdeviceptr a() const { return a_.get(); }
  CUdeviceptr b() const { return b_.get(); }
  CUdeviceptr c() const { return c_.get(); }
  CUdeviceptr bias() const { return bias_.get(); }  // 0 where the epilogue adds none
  const GemmProblem& problem() const { return problem_; }

  // Poisons C, launches once, and compares within the bound of `precision`. Returns what is
  // wrong, or nothing when C is right. Throws CudaError when the launch fails.
  std::optional<std::string> verify(const GpuKernel& kernel, const LaunchGeometry& geometry,
                                    Precision precision);
  // The same for any launch of the problem on a(), b() and bias() into c(), enqueued by `launch`
  // on the stream it is given (the runtime library's run, cuBLAS). Throws CudaError when it fails.
  std::optional<std::string> verify(const std::function<void(CUstream)>& launch,
                                    Precision precision);
  // Poisons C, runs the launch once and measures its output against the reference, judging
  // nothing (bench's error column, for cuBLAS too). Throws CudaError when the launch fails.
  ResultError error(const std::function<void(CUstream)>& launch);

 private:
  struct Verdict {
    unsigned long long wrong = 0, first_wrong = 0;
    ResultError error;
  };
  // Poisons C, runs the launch once and compares C with the reference on the GPU.
  Verdict compare(const std::function<void(CUstream)>& launch, double relative_bound);

  GemmProblem problem_;
  DeviceBuffer a_, b_, c_, bias_;
  DeviceBuffer reference_, magnitude_, verdict_;  // reference: before the bias and activation
  CUmodule module_ = nullptr;
  CUfunction compare_ = nullptr;
};

}  // namespace tiletune
