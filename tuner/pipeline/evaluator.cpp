#include "tuner/pipeline/evaluator.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "fuzz/announcing_executor.h"
#include "fuzz/make_executor.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/kernel_timer.h"

namespace tiletune {
namespace {

// A fuzz report's finding with its minimal case and how to replay it, for a result's detail.
std::string fuzz_detail(const FuzzReport& report) {
  std::string detail = report.finding;
  if (report.counterexample) {
    detail += fmt::format("\nminimal case: {}\nreplay: --case '{}'",
                          report.counterexample->problem.to_string(),
                          report.counterexample->to_string());
  }
  return detail;
}

// Median of the round medians, the extremes of all rounds, all runs: how re-measured rounds of
// one configuration combine.
Timing combine_rounds(const std::vector<Timing>& rounds) {
  Timing combined;
  if (rounds.empty()) return combined;
  std::vector<double> medians;
  combined.min_ms = rounds.front().min_ms;
  combined.max_ms = rounds.front().max_ms;
  for (const Timing& round : rounds) {
    medians.push_back(round.median_ms);
    combined.min_ms = std::min(combined.min_ms, round.min_ms);
    combined.max_ms = std::max(combined.max_ms, round.max_ms);
    combined.runs += round.runs;
  }
  combined.median_ms = summarize_runs(std::move(medians)).median_ms;
  return combined;
}

// A re-measurement of `count` configurations together: `rounds` rounds, each timing every
// configuration once in turn (`time_one(i)`), so that a drift of the clocks touches all alike;
// one combined timing per configuration, in order.
std::vector<Timing> time_in_rounds(std::size_t count, int rounds,
                                   const std::function<Timing(std::size_t)>& time_one) {
  std::vector<std::vector<Timing>> per_config(count);
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < count; ++i) per_config[i].push_back(time_one(i));
  }
  std::vector<Timing> timings;
  for (const std::vector<Timing>& each : per_config) timings.push_back(combine_rounds(each));
  return timings;
}

// The fuzz stage: the configuration fuzzed through `executor` on awkward shapes as the request
// asks, each case announced to `before_case`. True when it passed every case asked for; otherwise
// the result's status and detail say why (fewer cases than asked is never a pass:
// fuzz_configuration settles the same).
bool passes_fuzz_stage(GemmExecutor& executor, const KernelTemplate& tmpl,
                       const Configuration& config, const EvaluationRequest& request,
                       const Evaluator::CaseCallback& before_case, ReferenceCache& references,
                       ResultRecord& result) {
  AnnouncingExecutor announced(executor, before_case);
  // The executor runs the build of the request's transposes and batch: every case has them where
  // the template compiles them in.
  const Specialization build = tmpl.specialization(request.problem());
  const FuzzReport fuzz = fuzz_configuration(announced, config, tmpl.precision,
                                             request.fuzz_settings,
                                             CaseRequirements(tmpl, config, build), &references);
  if (fuzz.verdict == FuzzVerdict::passed && fuzz.cases_passed >= request.fuzz_settings.cases) {
    return true;
  }
  result.status = failed_check_status(fuzz.verdict);
  result.detail = fuzz_detail(fuzz);
  return false;
}

}  // namespace

ResultStatus failed_check_status(FuzzVerdict verdict) {
  return verdict == FuzzVerdict::wrong_result ? ResultStatus::wrong_result
                                              : ResultStatus::launch_error;
}

ResultRecord result_keys(const KernelTemplate& tmpl, const EvaluationRequest& request) {
  ResultRecord result;
  result.template_name = tmpl.name;
  result.template_hash = tmpl.source_hash;
  result.config = request.config;
  result.shape = request.shape;
  result.op = request.op;
  result.batch = request.batch;
  return result;
}

void set_timing(ResultRecord& result, const Timing& timing, const GemmShape& shape) {
  result.median_ms = timing.median_ms;
  result.min_ms = timing.min_ms;
  result.max_ms = timing.max_ms;
  result.runs = timing.runs;
  result.tflops = shape.tflops(timing.median_ms) * double(result.batch);
}

Evaluator::Evaluator(std::unique_ptr<Backend> backend, std::unique_ptr<FullShapeCheck> full_shape)
    : backend_(std::move(backend)), full_shape_(std::move(full_shape)) {}

EvaluationOutcome Evaluator::evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                                      const StageCallback& stage, const CaseCallback& before_case) {
  EvaluationOutcome outcome;
  ResultRecord& result = outcome.result;
  result = result_keys(tmpl, request);
  const Configuration config = tmpl.parse_configuration(request.config);
  std::unique_ptr<GemmExecutor> executor;
  try {
    const GemmProblem full = request.problem();
    if (auto unserved = tmpl.unsupported(full, config)) throw TemplateError(*unserved);
    const Configuration build = tmpl.build_configuration(config, full);
    stage(backend_->load_stage());
    executor = make_executor(*backend_, tmpl, build);
    run_stages(*executor, tmpl, config, build, request, stage, before_case, outcome);
  } catch (const CompileError& e) {  // EntryContractError too, found when the entry is loaded
    result.status = ResultStatus::compile_error;
    result.detail = e.log();
  } catch (const UnsupportedOnBackend& e) {
    // What this backend cannot run, as a device lacking a feature: the configuration's outcome,
    // not the end of the tune.
    result.status = ResultStatus::device_limit;
    result.detail = e.what();
  } catch (const LaunchError& e) {
    result.status = ResultStatus::launch_error;
    result.detail = e.what();
  } catch (const CudaError& e) {
    result.status = ResultStatus::launch_error;
    result.detail = e.what();
    context_lost_ = context_lost_ || e.context_is_lost();
  } catch (const std::bad_alloc&) {
    result.status = ResultStatus::device_limit;
    result.detail = fmt::format("the shape {} does not fit in host memory", request.shape.to_string());
  } catch (const TemplateError& e) {
    // The geometry at the full shape fails (a grid of zero blocks), or the shape does not meet a
    // requirement (the search space leaves those out).
    result.status = ResultStatus::launch_error;
    result.detail = std::string("cannot run the full shape: ") + e.what();
  }
  context_lost_ = context_lost_ || (executor && executor->context_lost());
  return outcome;
}

void Evaluator::run_stages(GemmExecutor& executor, const KernelTemplate& tmpl,
                           const Configuration& config, const Configuration& build,
                           const EvaluationRequest& request,
                           const StageCallback& stage, const CaseCallback& before_case,
                           EvaluationOutcome& outcome) {
  ResultRecord& result = outcome.result;
  const PtxasReport resources = executor.resources();
  result.registers = resources.registers;
  result.static_shared_bytes = resources.static_shared_bytes;
  result.spill_bytes = resources.spill_bytes();
  const LaunchGeometry geometry = tmpl.launch_geometry(build, request.shape, device().sm_count);
  result.dynamic_shared_bytes = int(geometry.dynamic_shared_bytes);
  if (auto limit = executor.exceeds_device_limits(geometry)) {
    result.status = ResultStatus::device_limit;
    result.detail = *limit;
    return;
  }

  if (request.fuzz) {
    stage("fuzz");
    if (!passes_fuzz_stage(executor, tmpl, config, request, before_case, fuzz_references_, result)) {
      return;
    }
  }
  outcome.fuzz_passed = true;
  if (!request.measure) return;

  const GemmProblem full = request.problem();
  if (auto failure = full_shape_->check(executor, tmpl, build, full, request.data_seed, stage)) {
    result.status = failure->status;
    result.detail = failure->detail;
    return;
  }
  stage("time");
  const Timing timing = full_shape_->time(executor, tmpl, build, full, request.data_seed, request.timing);
  set_timing(result, timing, request.shape);
}

std::vector<Timing> Evaluator::remeasure(const std::vector<const KernelTemplate*>& templates,
                                         const RemeasureRequest& request) {
  const GemmProblem full = request.problem();
  std::vector<std::unique_ptr<GemmExecutor>> executors;
  std::vector<Configuration> builds;
  for (const RemeasuredConfig& each : request.configs) {
    const KernelTemplate& tmpl = *templates.at(each.tmpl);
    builds.push_back(tmpl.build_configuration(tmpl.parse_configuration(each.config), full));
    executors.push_back(make_executor(*backend_, tmpl, builds.back()));
  }
  try {
    return time_in_rounds(executors.size(), request.rounds, [&](std::size_t i) {
      return full_shape_->time(*executors[i], *templates.at(request.configs[i].tmpl), builds[i],
                               full, request.data_seed, request.timing);
    });
  } catch (const CudaError& e) {
    context_lost_ = e.context_is_lost();
    throw;
  }
}

}  // namespace tiletune
