// The strategies behind make_search_strategy, each defined in its own file. Internal to
// tuner/search: the tuner and the tests reach them by name through search_strategy.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tuner/search/configuration_space.h"
#include "tuner/search/search_strategy.h"

namespace tiletune {

std::unique_ptr<SearchStrategy> make_exhaustive_search(std::size_t space_size);
std::unique_ptr<SearchStrategy> make_random_search(std::size_t space_size, std::uint64_t seed);
std::unique_ptr<SearchStrategy> make_simulated_annealing(ConfigurationSpace space, std::uint64_t seed,
                                                         std::vector<std::size_t> starting_points);
std::unique_ptr<SearchStrategy> make_genetic_search(ConfigurationSpace space, std::uint64_t seed,
                                                    std::vector<std::size_t> starting_points);
std::unique_ptr<SearchStrategy> make_bayesian_optimization(ConfigurationSpace space, std::uint64_t seed,
                                                           std::vector<std::size_t> starting_points);

// Throws std::invalid_argument when propose is asked for nothing.
void require_batch_size(std::size_t max_count);

}  // namespace tiletune
