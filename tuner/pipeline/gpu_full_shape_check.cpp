#include "tuner/pipeline/gpu_full_shape_check.h"

#include <fmt/format.h>

#include "fuzz/gpu_executor.h"

namespace tiletune {
namespace {

// The check runs the executor's loaded kernel on the device-resident full shape.
const GpuKernel& kernel_of(GemmExecutor& executor) {
  return dynamic_cast<GpuExecutor&>(executor).kernel();
}

}  // namespace

ShapeVerifier& GpuFullShapeCheck::verifier(const GemmShape& shape, std::uint64_t data_seed,
                                           const StageCallback& stage) {
  if (!verifier_ || verifier_shape_ != shape || verifier_seed_ != data_seed) {
    stage("reference");
    verifier_.reset();  // one shape's buffers at a time
    verifier_ = std::make_unique<ShapeVerifier>(device_, GemmProblem::packed(shape), data_seed);
    verifier_shape_ = shape;
    verifier_seed_ = data_seed;
  }
  return *verifier_;
}

std::optional<FullShapeFailure> GpuFullShapeCheck::check(GemmExecutor& executor,
                                                         const KernelTemplate& tmpl,
                                                         const Configuration& config,
                                                         const GemmShape& shape,
                                                         std::uint64_t data_seed,
                                                         const StageCallback& stage) {
  const GemmProblem packed = GemmProblem::packed(shape);  // as the verifier lays it out
  if (const Expression* unmet = tmpl.violated_requirement(config, &packed)) {
    // The search space leaves such shapes out.
    return FullShapeFailure{ResultStatus::launch_error,
                            fmt::format("the full shape {} does not meet requirement '{}'",
                                        packed.to_string(), unmet->text())};
  }
  ShapeVerifier& full = verifier(shape, data_seed, stage);
  stage("verify");
  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape, device_.properties().sm_count);
  if (auto wrong = full.verify(kernel_of(executor), geometry, tmpl.precision)) {
    return FullShapeFailure{ResultStatus::wrong_result, *wrong};
  }
  return std::nullopt;
}

Timing GpuFullShapeCheck::time(GemmExecutor& executor, const KernelTemplate& tmpl,
                               const Configuration& config, const GemmShape& shape,
                               std::uint64_t data_seed, const TimingSettings& settings) {
  ShapeVerifier& v = verifier(shape, data_seed, [](const std::string&) {});
  const GpuKernel& kernel = kernel_of(executor);
  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape, device_.properties().sm_count);
  if (!flush_) flush_.emplace(std::size_t(device_.properties().l2_cache_bytes));
  return time_launches(
      [&](CUstream stream) { kernel.launch(geometry, v.a(), v.b(), v.c(), v.problem(), stream); },
      nullptr, settings, std::ref(*flush_));
}

}  // namespace tiletune
