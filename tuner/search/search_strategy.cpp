#include "tuner/search/search_strategy.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/search/search_strategies.h"

namespace tiletune {

const std::vector<std::string>& search_strategy_names() {
  static const std::vector<std::string> names{"exhaustive", "random", "annealing", "genetic", "bayes"};
  return names;
}

bool is_guided_strategy(std::string_view name) { return name == "annealing" || name == "genetic" || name == "bayes"; }

std::unique_ptr<SearchStrategy> make_search_strategy(std::string_view name,
                                                     const KernelTemplate& tmpl,
                                                     const std::vector<Configuration>& space,
                                                     std::uint64_t seed,
                                                     const std::vector<std::size_t>& starting_points) {
  for (const std::size_t index : starting_points) {
    if (index >= space.size()) {
      throw std::invalid_argument(fmt::format("starting point {} is outside a space of {} configurations",
                                              index, space.size()));
    }
  }
  if (name == "exhaustive") return make_exhaustive_search(space.size());
  if (name == "random") return make_random_search(space.size(), seed);
  if (name == "annealing") return make_simulated_annealing(ConfigurationSpace(tmpl, space), seed, starting_points);
  if (name == "genetic") return make_genetic_search(ConfigurationSpace(tmpl, space), seed, starting_points);
  if (name == "bayes") return make_bayesian_optimization(ConfigurationSpace(tmpl, space), seed, starting_points);
  throw std::invalid_argument(fmt::format("unknown search strategy '{}' (choose {})", name,
                                          fmt::join(search_strategy_names(), ", ")));
}

void require_batch_size(std::size_t max_count) {
  if (max_count == 0) throw std::invalid_argument("a search strategy was asked to propose nothing");
}

}  // namespace tiletune
