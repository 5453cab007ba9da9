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

ShapeVerifier& GpuFullShapeCheck::verifier(const GemmProblem& problem, std::uint64_t data_seed,
                                           const StageCallback& stage) {
  if (!verifier_ || verifier_problem_ != problem || verifier_seed_ != data_seed) {
    stage("reference");
    verifier_.reset();  // one problem's buffers at a time
    verifier_ = std::make_unique<ShapeVerifier>(device_, problem, data_seed);
    verifier_problem_ = problem;
    verifier_seed_ = data_seed;
  }
  return *verifier_;
}

std::optional<FullShapeFailure> GpuFullShapeCheck::check(GemmExecutor& executor,
                                                         const KernelTemplate& tmpl,
                                                         const Configuration& config,
                                                         const GemmProblem& problem,
                                                         std::uint64_t data_seed,
                                                         const StageCallback& stage) {
  if (const Expression* unmet = tmpl.violated_requirement(config, &problem)) {
    // The search space leaves such shapes out.
    return FullShapeFailure{ResultStatus::launch_error,
                            fmt::format("the full shape {} does not meet requirement '{}'",
                                        problem.to_string(), unmet->text())};
  }
  ShapeVerifier& full = verifier(problem, data_seed, stage);
  stage("verify");
  const LaunchGeometry geometry =
      tmpl.launch_geometry(config, problem.shape, device_.properties().sm_count);
  if (auto wrong = full.verify(kernel_of(executor), geometry, tmpl.precision)) {
    return FullShapeFailure{ResultStatus::wrong_result, *wrong};
  }
  return std::nullopt;
}

Timing GpuFullShapeCheck::time(GemmExecutor& executor, const KernelTemplate& tmpl,
                               const Configuration& config, const GemmProblem& problem,
                               std::uint64_t data_seed, const TimingSettings& settings) {
  ShapeVerifier& v = verifier(problem, data_seed, [](const std::string&) {});
  const GpuKernel& kernel = kernel_of(executor);
  const LaunchGeometry geometry =
      tmpl.launch_geometry(config, problem.shape, device_.properties().sm_count);
  if (!flush_) flush_.emplace(std::size_t(device_.properties().l2_cache_bytes));
  return time_launches(
      [&](CUstream stream) { kernel.launch(geometry, v.a(), v.b(), v.c(), v.problem(), stream); },
      nullptr, settings, std::ref(*flush_));
}

}  // namespace tiletune
