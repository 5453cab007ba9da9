#include "tuner/search/search_moves.h"

namespace tiletune {

std::size_t pick_spread_out(const ConfigurationSpace& space, const SearchHistory& history,
                            const std::vector<std::size_t>& chosen, SearchRandom& random) {
  if (chosen.empty()) return history.random_unproposed(random);
  const std::vector<std::size_t> farthest =
      space.farthest(chosen, [&](std::size_t index) { return !history.proposed(index); });
  return farthest[random.below(farthest.size())];
}

std::size_t pick_nearest_unproposed(const ConfigurationSpace& space, const SearchHistory& history,
                                    const ValueIndices& point, SearchRandom& random) {
  const std::vector<std::size_t> nearest =
      space.nearest(point, [&](std::size_t index) { return !history.proposed(index); });
  return nearest[random.below(nearest.size())];
}

}  // namespace tiletune
