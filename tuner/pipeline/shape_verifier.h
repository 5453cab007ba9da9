// Checks a configuration at the full tuning shape, on the GPU, before it is timed.
//
// The fuzzer's properties run on small awkward shapes against a CPU reference; a bug that only
// shows at scale (32-bit index overflow, a grid dimension limit) needs the real shape, where a CPU
// reference would take minutes. So the reference lives on the GPU: a plain double-precision
// kernel, computed once per shape together with each element's sum_k |a_ik||b_kj|, then compared
// with every configuration's output within the bound of the precision its template declares
// (tuner/core/error_bound.h).
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
  // The seed's inputs for the shape (full_shape_inputs.h: the same in every lane), uploaded, and
  // the reference computed.
  ShapeVerifier(const GpuDevice& device, const GemmProblem& problem, std::uint64_t seed);
  ~ShapeVerifier();

  CUdeviceptr a() const { return a_.get(); }
  CUdeviceptr b() const { return b_.get(); }
  CUdeviceptr c() const { return c_.get(); }
  const GemmProblem& problem() const { return problem_; }

  // Poisons C, launches once, and compares within the bound of `precision`. Returns what is
  // wrong, or nothing when C is right. Throws CudaError when the launch fails.
  std::optional<std::string> verify(const GpuKernel& kernel, const LaunchGeometry& geometry,
                                    Precision precision);
  // The same for any launch of the problem on a() and b() into c(), enqueued by `launch` on the
  // stream it is given (the runtime library's run, cuBLAS). Throws CudaError when it fails.
  std::optional<std::string> verify(const std::function<void(CUstream)>& launch,
                                    Precision precision);
  // Poisons C, runs the launch once and measures its output against the reference, judging
  // nothing (bench's error column, for cuBLAS too). Throws CudaError when the launch fails.
  ResultError error(const std::function<void(CUstream)>& launch);

 private:
  GemmProblem problem_;
  DeviceBuffer a_, b_, c_;
  DeviceBuffer reference_, magnitude_, verdict_;
  std::vector<double> host_reference_, host_magnitude_;  // downloaded on the first error()
  CUmodule module_ = nullptr;
  CUfunction compare_ = nullptr;
};

}  // namespace tiletune
