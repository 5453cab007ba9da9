#include "tuner/search/search_moves.h"

namespace tiletune {
namespace {

// A configuration as far as can be from all of `chosen` (any when it is empty), so that a first
// batch covers the space instead of clustering by chance.
std::size_t pick_spread_out(const ConfigurationSpace& space, const SearchHistory& history,
                            const std::vector<std::size_t>& chosen, SearchRandom& random) {
  if (chosen.empty()) return history.random_unproposed(random);
  const std::vector<std::size_t> farthest =
      space.farthest(chosen, [&](std::size_t index) { return !history.proposed(index); });
  return farthest[random.below(farthest.size())];
}

}  // namespace

void add_first_batch(const ConfigurationSpace& space, SearchHistory& history,
                     const std::vector<std::size_t>& starting_points, std::size_t max_count,
                     SearchRandom& random, std::vector<std::size_t>& batch) {
  for (const std::size_t index : starting_points) {
    if (batch.size() >= max_count) return;
    if (history.proposed(index)) continue;
    history.mark_proposed(index);
    batch.push_back(index);
  }
  while (batch.size() < max_count && !history.exhausted()) {
    const std::size_t index = pick_spread_out(space, history, batch, random);
    history.mark_proposed(index);
    batch.push_back(index);
  }
}

std::size_t pick_nearest_unproposed(const ConfigurationSpace& space, const SearchHistory& history,
                                    const ValueIndices& point, SearchRandom& random) {
  const std::vector<std::size_t> nearest =
      space.nearest(point, [&](std::size_t index) { return !history.proposed(index); });
  return nearest[random.below(nearest.size())];
}

}  // namespace tiletune
