#include "tuner/search/search_replay.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/search/search_strategy.h"

namespace tiletune {

ReplayOutcome replay_search(std::string_view strategy, const KernelTemplate& tmpl,
                            const std::vector<Configuration>& space,
                            const std::vector<std::optional<double>>& times_ms, std::uint64_t seed,
                            std::size_t evaluation_budget, std::size_t batch_size,
                            const std::vector<std::size_t>& starting_points) {
  if (times_ms.size() != space.size()) {
    throw std::invalid_argument(fmt::format("replay: {} times for a space of {} configurations",
                                            times_ms.size(), space.size()));
  }
  if (batch_size == 0) throw std::invalid_argument("replay: the batch size must be at least 1");

  const std::unique_ptr<SearchStrategy> search = make_search_strategy(strategy, tmpl, space, seed, starting_points);
  ReplayOutcome outcome;
  while (outcome.evaluations < evaluation_budget) {
    const std::vector<std::size_t> batch =
        search->propose(std::min(batch_size, evaluation_budget - outcome.evaluations));
    if (batch.empty()) break;
    for (const std::size_t index : batch) {
      const std::optional<double>& time = times_ms.at(index);
      search->observe(index, time);
      ++outcome.evaluations;
      if (time && (!outcome.best_time_ms || *time < *outcome.best_time_ms)) {
        outcome.best_time_ms = time;
        outcome.best_index = index;
      }
    }
  }
  return outcome;
}

}  // namespace tiletune
