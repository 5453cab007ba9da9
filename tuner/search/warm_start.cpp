#include "tuner/search/warm_start.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace tiletune {

std::vector<GemmShape> nearest_shapes(const GemmShape& shape, std::vector<GemmShape> recorded,
                                      std::size_t count) {
  std::erase(recorded, shape);
  std::sort(recorded.begin(), recorded.end(), [&](const GemmShape& a, const GemmShape& b) {
    return std::pair(log_distance(a, shape), a) < std::pair(log_distance(b, shape), b);
  });
  recorded.erase(std::unique(recorded.begin(), recorded.end()), recorded.end());
  if (recorded.size() > count) recorded.resize(count);
  return recorded;
}

std::vector<std::size_t> warm_start_points(const std::vector<Configuration>& space,
                                           const std::vector<RecordedRanking>& rankings,
                                           std::size_t per_shape) {
  std::map<std::string, std::size_t> positions;
  for (std::size_t index = 0; index < space.size(); ++index) positions.emplace(space[index].to_string(), index);
  std::vector<std::size_t> points;
  std::set<std::size_t> taken;
  for (const RecordedRanking& ranking : rankings) {
    std::size_t from_this_shape = 0;
    for (const std::string& config : ranking.fastest) {
      if (from_this_shape == per_shape) break;
      const auto found = positions.find(config);
      if (found == positions.end()) continue;  // not valid at the shape being tuned
      ++from_this_shape;
      if (taken.insert(found->second).second) points.push_back(found->second);
    }
  }
  return points;
}

}  // namespace tiletune
