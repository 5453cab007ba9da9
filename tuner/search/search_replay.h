// A strategy run against known outcomes, without a GPU (Kernel Tuner's "simulation mode"): each
// proposed configuration's time is looked up instead of measured. For judging strategies on a
// space that was tuned exhaustively once (`tiletune strategies`) and for the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tuner/core/kernel_template.h"

namespace tiletune {

struct ReplayOutcome {
  std::optional<double> best_time_ms;     // nullopt when every evaluated configuration failed
  std::optional<std::size_t> best_index;  // into the space
  std::size_t evaluations = 0;            // at most the budget (less when the space ran out)
};

// Asks the strategy for batches of up to batch_size configurations (fewer for the last, so the
// budget is never exceeded), tells it each one's time from times_ms (nullopt: the configuration
// failed), until evaluation_budget configurations are evaluated or the space is exhausted.
// Throws std::invalid_argument when times_ms does not have one entry per configuration of the
// space, or when batch_size is 0.
ReplayOutcome replay_search(std::string_view strategy, const KernelTemplate& tmpl,
                            const std::vector<Configuration>& space,
                            const std::vector<std::optional<double>>& times_ms, std::uint64_t seed,
                            std::size_t evaluation_budget, std::size_t batch_size,
                            const std::vector<std::size_t>& starting_points = {});

}  // namespace tiletune
