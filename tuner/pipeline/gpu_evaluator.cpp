#include "tuner/pipeline/gpu_evaluator.h"

#include <fmt/format.h>

#include "fuzz/gpu_executor.h"
#include "tuner/backend/entry_contract.h"

namespace tiletune {

GpuEvaluator::GpuEvaluator(const CompilerFactory& make_compiler, int ordinal)
    : device_(ordinal), compiled_(make_compiler(device_.properties().arch())) {}

ShapeVerifier& GpuEvaluator::verifier(const GemmShape& shape, std::uint64_t data_seed,
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

Timing GpuEvaluator::time(const GpuKernel& kernel, const LaunchGeometry& geometry,
                          const TimingSettings& timing) {
  ShapeVerifier& v = *verifier_;
  if (!flush_) flush_.emplace(std::size_t(device_.properties().l2_cache_bytes));
  return time_launches(
      [&](CUstream stream) { kernel.launch(geometry, v.a(), v.b(), v.c(), v.problem(), stream); },
      nullptr, timing, std::ref(*flush_));
}

EvaluationOutcome GpuEvaluator::evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                                         const StageCallback& stage, const CaseCallback& before_case) {
  EvaluationOutcome outcome;
  ResultRecord& result = outcome.result;
  result = result_keys(tmpl, request);
  const Configuration config = tmpl.parse_configuration(request.config);

  stage("load");
  const CompiledKernelImage* image = nullptr;
  try {
    image = &compiled_->get(tmpl, config);
  } catch (const CompileError& e) {
    result.status = ResultStatus::compile_error;
    result.detail = e.log();
    return outcome;
  }
  try {
    GpuExecutor executor(device_, tmpl, config, *image);
    const PtxasReport& resources = executor.resources();
    result.registers = resources.registers;
    result.static_shared_bytes = resources.static_shared_bytes;
    result.spill_bytes = resources.spill_bytes();
    const LaunchGeometry geometry = tmpl.launch_geometry(config, request.shape, device_.properties().sm_count);
    result.dynamic_shared_bytes = int(geometry.dynamic_shared_bytes);
    if (auto limit = exceeds_device_limits(geometry, resources, device_.properties())) {
      result.status = ResultStatus::device_limit;
      result.detail = *limit;
      return outcome;
    }

    if (request.fuzz) {
      stage("fuzz");
      if (!passes_fuzz_stage(executor, tmpl, config, request, before_case, fuzz_references_,
                             result)) {
        context_lost_ = executor.context_lost();
        return outcome;
      }
    }
    outcome.fuzz_passed = true;
    if (!request.measure) return outcome;

    const GemmProblem packed = GemmProblem::packed(request.shape);  // as the verifier lays it out
    if (const Expression* unmet = tmpl.violated_requirement(config, &packed)) {
      result.status = ResultStatus::launch_error;  // the search space leaves such shapes out
      result.detail = fmt::format("the full shape {} does not meet requirement '{}'",
                                  packed.to_string(), unmet->text());
      return outcome;
    }
    ShapeVerifier& full = verifier(request.shape, request.data_seed, stage);
    stage("verify");
    if (auto wrong = full.verify(executor.kernel(), geometry, tmpl.precision)) {
      result.status = ResultStatus::wrong_result;
      result.detail = *wrong;
      return outcome;
    }
    stage("time");
    const Timing timing = time(executor.kernel(), geometry, request.timing);
    set_timing(result, timing, request.shape);
  } catch (const EntryContractError& e) {  // found when the entry is loaded
    result.status = ResultStatus::compile_error;
    result.detail = e.log();
  } catch (const CudaError& e) {
    result.status = ResultStatus::launch_error;
    result.detail = e.what();
    context_lost_ = context_lost_ || e.context_is_lost();
  } catch (const TemplateError& e) {  // the geometry at the full shape fails: a grid of zero blocks
    result.status = ResultStatus::launch_error;
    result.detail = std::string("cannot run the full shape: ") + e.what();
  }
  return outcome;
}

std::vector<Timing> GpuEvaluator::remeasure(const std::vector<const KernelTemplate*>& templates,
                                            const RemeasureRequest& request) {
  std::vector<std::unique_ptr<GpuKernel>> kernels;
  std::vector<LaunchGeometry> geometries;
  for (const RemeasuredConfig& each : request.configs) {
    const KernelTemplate& tmpl = *templates.at(each.tmpl);
    const Configuration config = tmpl.parse_configuration(each.config);
    kernels.push_back(std::make_unique<GpuKernel>(compiled_->get(tmpl, config), tmpl.entry,
                                                    tmpl.tensor_maps.size()));
    geometries.push_back(tmpl.launch_geometry(config, request.shape, device_.properties().sm_count));
  }
  verifier(request.shape, request.data_seed, [](const std::string&) {});
  try {
    return time_in_rounds(kernels.size(), request.rounds, [&](std::size_t i) {
      return time(*kernels[i], geometries[i], request.timing);
    });
  } catch (const CudaError& e) {
    context_lost_ = e.context_is_lost();
    throw;
  }
}

}  // namespace tiletune
