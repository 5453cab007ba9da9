#include "tuner/pipeline/recorded_warm_start.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/search/warm_start.h"

namespace tiletune {

std::string describe(const WarmStart& start) {
  if (start.points.empty()) return "none";
  std::vector<std::string> shapes;
  for (const GemmShape& shape : start.shapes) shapes.push_back(shape.to_string());
  return fmt::format("{} configuration{} from {}", start.points.size(), start.points.size() == 1 ? "" : "s",
                     fmt::join(shapes, ", "));
}

WarmStart recorded_warm_start(const ResultStore& store, const std::string& gpu_name,
                              const std::string& template_name, const GemmShape& shape,
                              const std::vector<Configuration>& space) {
  std::vector<RecordedRanking> rankings;
  for (const GemmShape& nearby : nearest_shapes(shape, store.shapes_with_results(gpu_name, template_name))) {
    RecordedRanking& ranking = rankings.emplace_back(RecordedRanking{nearby, {}});
    for (const ResultRecord& result : store.ranking(gpu_name, nearby, template_name)) {
      ranking.fastest.push_back(result.config);
    }
  }
  WarmStart start;
  start.points = warm_start_points(space, rankings);
  if (!start.points.empty()) {
    for (const RecordedRanking& ranking : rankings) start.shapes.push_back(ranking.shape);
  }
  return start;
}

}  // namespace tiletune
