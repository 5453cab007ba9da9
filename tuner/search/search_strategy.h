// How the tuner walks a template's search space: a strategy proposes which configurations to
// evaluate next and learns from each outcome (ask and tell). The tuner asks for a batch, compiles
// it in parallel, evaluates its configurations one by one on the GPU, tells every outcome, and
// asks again until the strategy has nothing left or the budget (search_budget.h) is spent.
//
//   exhaustive  every configuration, in the space's order
//   random      every configuration, in a seeded random order
//   annealing   simulated annealing over neighbouring configurations and pair moves (two
//               parameters at once), restarting once converged (simulated_annealing.cpp)
//   genetic     a genetic algorithm over the parameters' value indices, each generation with
//               pair moves of the fastest configuration (genetic_search.cpp)
//   bayes       Bayesian optimisation: a Gaussian-process model of the times picks, by expected
//               improvement, among the moves around the fastest few (bayesian_optimization.cpp)
//
// A strategy is deterministic: the same seed and the same outcomes give the same proposals, so a
// resumed tune that tells the recorded outcomes again walks the same path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/core/kernel_template.h"

namespace tiletune {

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string_view name() const = 0;

  // Up to max_count (>= 1) indices into the space, none of them proposed before: a strategy never
  // proposes an index twice. Empty only when every configuration of the space has been proposed.
  // The caller observes every proposed index before calling propose again.
  virtual std::vector<std::size_t> propose(std::size_t max_count) = 0;

  // The outcome of a proposed index: its median time in ms (lower is better), or nullopt when the
  // configuration failed (compile error, wrong result, crash, pruned...). An index observed
  // without having been proposed counts as proposed from then on.
  virtual void observe(std::size_t index, std::optional<double> time_ms) = 0;
};

// name: "exhaustive", "random", "annealing", "genetic" or "bayes" (search_strategy_names()); space: the
// template's valid configurations (enumerate_configurations), indices of which are proposed.
// starting_points: indices a guided strategy puts first in its first batch, before spreading the
// rest of it over the space (a warm start, warm_start.h); exhaustive and random ignore them.
// Throws std::invalid_argument for another name: "unknown search strategy 'x' (choose exhaustive,
// random, annealing, genetic, bayes)", for a configuration that is not the template's, and for a
// starting point outside the space.
std::unique_ptr<SearchStrategy> make_search_strategy(std::string_view name,
                                                     const KernelTemplate& tmpl,
                                                     const std::vector<Configuration>& space,
                                                     std::uint64_t seed,
                                                     const std::vector<std::size_t>& starting_points = {});

const std::vector<std::string>& search_strategy_names();

// Whether the strategy learns from outcomes (annealing, genetic, bayes): it proposes a batch at a time
// and takes a warm start; exhaustive and random fix their order up front.
bool is_guided_strategy(std::string_view name);

}  // namespace tiletune
