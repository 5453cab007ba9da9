#include "tuner/pipeline/evaluator.h"

#include <algorithm>

#include <fmt/format.h>

#include "fuzz/announcing_executor.h"
#include "fuzz/reference_cache.h"
#include "tuner/pipeline/kernel_timer.h"

namespace tiletune {

bool passes_fuzz_stage(GemmExecutor& executor, const KernelTemplate& tmpl,
                       const Configuration& config, const EvaluationRequest& request,
                       const Evaluator::CaseCallback& before_case, ReferenceCache& references,
                       ResultRecord& result) {
  AnnouncingExecutor announced(executor, before_case);
  const FuzzReport fuzz = fuzz_configuration(announced, config, tmpl.precision,
                                             request.fuzz_settings, CaseRequirements(tmpl, config),
                                             &references);
  if (fuzz.verdict == FuzzVerdict::passed && fuzz.cases_passed >= request.fuzz_settings.cases) {
    return true;
  }
  result.status = failed_check_status(fuzz.verdict);
  result.detail = fuzz_detail(fuzz);
  return false;
}

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
  return result;
}

void set_timing(ResultRecord& result, const Timing& timing, const GemmShape& shape) {
  result.median_ms = timing.median_ms;
  result.min_ms = timing.min_ms;
  result.max_ms = timing.max_ms;
  result.runs = timing.runs;
  result.tflops = shape.flops() / (timing.median_ms * 1e-3) / 1e12;
}

std::string fuzz_detail(const FuzzReport& report) {
  std::string detail = report.finding;
  if (report.counterexample) {
    detail += fmt::format("\nminimal case: {}\nreplay: --case '{}'",
                          report.counterexample->problem.to_string(),
                          report.counterexample->to_string());
  }
  return detail;
}

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

}  // namespace tiletune
