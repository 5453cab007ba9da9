// The full shape on the GPU: its inputs and reference computed on the device once per shape and
// data seed, the configuration's result compared there, and its timing with the L2 cache flushed
// before every run.
#pragma once

#include <memory>
#include <optional>

#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/pipeline/full_shape_check.h"
#include "tuner/pipeline/shape_verifier.h"

namespace tiletune {

class GpuFullShapeCheck : public FullShapeCheck {
 public:
  // `device` outlives the check.
  explicit GpuFullShapeCheck(const GpuDevice& device) : device_(device) {}

  std::optional<FullShapeFailure> check(GemmExecutor& executor, const KernelTemplate& tmpl,
                                        const Configuration& config, const GemmProblem& problem,
                                        std::uint64_t data_seed, const StageCallback& stage) override;
  Timing time(GemmExecutor& executor, const KernelTemplate& tmpl, const Configuration& config,
              const GemmProblem& problem, std::uint64_t data_seed, const TimingSettings& settings) override;

 private:
  // The full-shape inputs and reference for the shape and data seed, built on change.
  ShapeVerifier& verifier(const GemmProblem& problem, std::uint64_t data_seed, const StageCallback& stage);

  const GpuDevice& device_;
  std::unique_ptr<ShapeVerifier> verifier_;
  GemmProblem verifier_problem_;
  std::uint64_t verifier_seed_ = 0;
  std::optional<L2Flush> flush_;  // made by the first timing: a fuzz worker never times
};

}  // namespace tiletune
