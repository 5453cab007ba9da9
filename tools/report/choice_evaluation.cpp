#include "tools/report/choice_evaluation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/selection.h"

namespace tiletune::report {
namespace {

using runtime::RecordedChoice;
using runtime::RecordSet;

// A GPU's records of a template: shape -> configuration -> its time there.
using TimesByShape = std::map<GemmShape, std::map<std::string, double>>;

// What the library would run for the request from the held-out records, scored by the times
// recorded at the hidden shape.
HeldOutPick pick(const RecordSet& held_out, runtime::PerformanceModels& models,
                 const runtime::SelectionRequest& request, const std::map<std::string, double>& times,
                 double best_ms) {
  HeldOutPick result;
  try {
    result.config = runtime::select_configuration(held_out, request, &models).config;
  } catch (const runtime::NoSelection&) {
    return result;
  }
  const auto time = times.find(result.config);
  if (time != times.end()) result.ratio = time->second / best_ms;
  return result;
}

RatioSummary summarize(const std::vector<HeldOutShape>& shapes, HeldOutPick HeldOutShape::*way) {
  RatioSummary summary;
  double log_sum = 0;
  for (const HeldOutShape& s : shapes) {
    const std::optional<double>& ratio = (s.*way).ratio;
    if (!ratio) {
      ++summary.unmeasured;
      continue;
    }
    ++summary.measured;
    log_sum += std::log(*ratio);
    if (*ratio > summary.worst) summary.worst = *ratio, summary.worst_shape = s.shape;
  }
  if (summary.measured > 0) summary.geometric_mean = std::exp(log_sum / summary.measured);
  return summary;
}

}  // namespace

std::string ratio_text(const HeldOutPick& pick) {
  if (pick.ratio) return fmt::format("{:.3f}", *pick.ratio);
  return pick.config.empty() ? "none" : "unmeasured";
}

std::string mean_text(const RatioSummary& summary) {
  return summary.measured == 0 ? "-" : fmt::format("{:.3f}", summary.geometric_mean);
}

std::string worst_text(const RatioSummary& summary) {
  if (summary.measured == 0) return "-";
  return fmt::format("{:.3f} at {}", summary.worst, summary.worst_shape.to_string());
}

std::vector<TemplateChoices> evaluate_choices(const RecordSet& records) {
  // GPUs by name, as the rest of the report and a request's gpu_name know them.
  std::map<std::pair<std::string, std::size_t>, TimesByShape> recorded;
  for (const RecordedChoice& c : records.choices) {
    std::map<std::string, double>& times = recorded[{records.gpus[c.gpu].name, c.templ}][c.shape];
    const auto [it, inserted] = times.try_emplace(c.config, c.median_ms);
    if (!inserted) it->second = std::min(it->second, c.median_ms);
  }

  std::vector<TemplateChoices> evaluated;
  RecordSet held_out = records;  // its choices replaced per hidden shape; the rest as recorded
  for (const auto& [key, by_shape] : recorded) {
    const auto& [gpu_name, templ] = key;
    if (by_shape.size() < std::size_t(kMinChoiceShapes)) continue;
    TemplateChoices choices{gpu_name, records.templates[templ].name, {}, {}, {}};
    for (const auto& [shape, times] : by_shape) {
      held_out.choices.clear();
      for (const RecordedChoice& c : records.choices) {
        if (c.templ != templ || c.shape != shape || records.gpus[c.gpu].name != gpu_name) {
          held_out.choices.push_back(c);
        }
      }
      // Models fitted to these records only: a cache over all of them would know the hidden shape.
      runtime::PerformanceModels models(held_out);
      HeldOutShape scored{shape, {}, 0, {}, {}};
      for (const auto& [config, ms] : times) {
        if (scored.best_config.empty() || ms < scored.best_ms) scored.best_config = config, scored.best_ms = ms;
      }
      runtime::SelectionRequest request;
      request.template_name = choices.template_name;
      request.problem = GemmProblem::packed(shape);
      request.gpu_name = gpu_name;
      request.lowest_precision = Precision::tf32;  // every template is scored, whatever it declares
      request.predict = true;
      scored.model = pick(held_out, models, request, times, scored.best_ms);
      request.predict = false;
      scored.nearest = pick(held_out, models, request, times, scored.best_ms);
      choices.shapes.push_back(std::move(scored));
    }
    choices.model = summarize(choices.shapes, &HeldOutShape::model);
    choices.nearest = summarize(choices.shapes, &HeldOutShape::nearest);
    evaluated.push_back(std::move(choices));
  }
  return evaluated;
}

}  // namespace tiletune::report
