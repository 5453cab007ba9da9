// Evaluations on the GPU, in the worker process: the configuration's cubin (from the tuner's
// compile cache), its fuzz on awkward shapes, its check at the full shape against the GPU
// reference, and its timing with the L2 cache flushed before every run.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "fuzz/reference_cache.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/pipeline/compiled_kernels.h"
#include "tuner/pipeline/evaluator.h"
#include "tuner/pipeline/kernel_timer.h"
#include "tuner/pipeline/shape_verifier.h"

namespace tiletune {

class GpuEvaluator : public Evaluator {
 public:
  // Compiles for the device's arch: the tuner has compiled every configuration into the disk
  // cache already, so this only loads.
  using CompilerFactory = std::function<std::unique_ptr<CompiledKernels>(const std::string& arch)>;

  // Opens device `ordinal` (GpuUnavailable without it).
  explicit GpuEvaluator(const CompilerFactory& make_compiler, int ordinal = GpuDevice::default_ordinal());

  const DeviceProperties& device() const override { return device_.properties(); }
  EvaluationOutcome evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                             const StageCallback& stage, const CaseCallback& before_case) override;
  std::vector<Timing> remeasure(const std::vector<const KernelTemplate*>& templates,
                                const RemeasureRequest& request) override;
  bool usable() const override { return !context_lost_; }

 private:
  // The full-shape inputs and reference for the request's shape and data seed, built on change.
  ShapeVerifier& verifier(const GemmShape& shape, std::uint64_t data_seed, const StageCallback& stage);
  // Runs a timing, noting whether a failure lost the context.
  Timing time(const GpuKernel& kernel, const LaunchGeometry& geometry, const TimingSettings& timing);

  GpuDevice device_;
  std::unique_ptr<CompiledKernels> compiled_;
  std::optional<L2Flush> flush_;  // made by the first timing: a fuzz worker never times
  std::unique_ptr<ShapeVerifier> verifier_;
  GemmShape verifier_shape_;
  std::uint64_t verifier_seed_ = 0;
  bool context_lost_ = false;
  ReferenceCache fuzz_references_;  // of the last configurations' fuzz cases
};

}  // namespace tiletune
