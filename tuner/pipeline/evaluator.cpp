#include "tuner/pipeline/evaluator.h"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/pipeline/kernel_timer.h"

namespace tiletune {

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

}  // namespace tiletune
