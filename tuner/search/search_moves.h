// Picks shared by the guided strategies: where to look while nothing is known yet, and where to
// go instead when the configuration they want is invalid or was proposed before. Each pick is an
// unproposed configuration, ties drawn at random; the history must not be exhausted.
#pragma once

#include <cstddef>
#include <vector>

#include "tuner/search/configuration_space.h"
#include "tuner/search/search_history.h"
#include "tuner/search/search_random.h"

namespace tiletune {

// Fills `batch` up to max_count for a search that knows nothing yet: first the starting points
// not proposed yet (a warm start), in their order, then configurations spread out from them and
// from each other. Marks each one proposed.
void add_first_batch(const ConfigurationSpace& space, SearchHistory& history,
                     const std::vector<std::size_t>& starting_points, std::size_t max_count,
                     SearchRandom& random, std::vector<std::size_t>& batch);

// The configuration nearest to `point` (which need not be valid): `point` itself when it is a
// valid configuration not proposed yet.
std::size_t pick_nearest_unproposed(const ConfigurationSpace& space, const SearchHistory& history,
                                    const ValueIndices& point, SearchRandom& random);

}  // namespace tiletune
