#include "tuner/pipeline/recorded_warm_start.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/search/warm_start.h"

namespace tiletune {

std::string describe(const WarmStart& start) {
  if (start.points.empty()) return "none";
  std::vector<std::string> sources;
  if (start.trial_candidates > 0) sources.push_back(fmt::format("the first-call trial at the shape ({})", start.trial_candidates));
  for (const GemmShape& shape : start.shapes) sources.push_back(shape.to_string());
  return fmt::format("{} configuration{} from {}", start.points.size(), start.points.size() == 1 ? "" : "s",
                     fmt::join(sources, ", "));
}

WarmStart recorded_warm_start(const ResultStore& store, const std::string& gpu_name,
                              const std::string& template_name, const GemmShape& shape,
                              const std::vector<Configuration>& space, TunedFor kind) {
  std::vector<RecordedRanking> rankings;
  std::vector<std::pair<double, std::string>> trial;  // (ms, configuration) timed at the shape
  for (const TraceRecord& step : store.search_traces()) {
    if (kind.plain() && step.strategy == kTrialStrategy && step.gpu_name == gpu_name &&
        step.template_name == template_name && step.shape == shape && step.status == ResultStatus::ok) {
      trial.emplace_back(step.median_ms, step.config);
    }
  }
  if (!trial.empty()) {
    std::sort(trial.begin(), trial.end());
    RecordedRanking& ranking = rankings.emplace_back(RecordedRanking{shape, {}});
    for (const auto& [ms, config] : trial) ranking.fastest.push_back(config);
  }
  const auto add_ranking = [&](const GemmShape& recorded, TunedFor recorded_kind) {
    RecordedRanking& ranking = rankings.emplace_back(RecordedRanking{recorded, {}});
    for (const ResultRecord& result : store.ranking(gpu_name, recorded, template_name, recorded_kind)) {
      ranking.fastest.push_back(result.config);
    }
  };
  for (const GemmShape& nearby : nearest_shapes(shape, store.shapes_with_results(gpu_name, template_name, kind))) {
    add_ranking(nearby, kind);
  }
  if (!kind.plain()) {
    const std::vector<GemmShape> plain = store.shapes_with_results(gpu_name, template_name);
    if (std::find(plain.begin(), plain.end(), shape) != plain.end()) add_ranking(shape, {});
    for (const GemmShape& nearby : nearest_shapes(shape, plain)) add_ranking(nearby, {});
  }
  WarmStart start;
  start.points = warm_start_points(space, rankings);
  if (!start.points.empty()) {
    for (std::size_t i = trial.empty() ? 0 : 1; i < rankings.size(); ++i) start.shapes.push_back(rankings[i].shape);
    start.trial_candidates = int(std::min(trial.size(), kWarmStartPerShape));
  }
  return start;
}

}  // namespace tiletune
