// What a strategy knows of the space so far: which configurations it has proposed and the outcome
// of those observed. Shared by the strategies, which keep their own plans on top of it.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "tuner/search/search_random.h"

namespace tiletune {

class SearchHistory {
 public:
  explicit SearchHistory(std::size_t space_size);

  std::size_t space_size() const { return proposed_.size(); }
  bool proposed(std::size_t index) const { return proposed_[index]; }
  std::size_t proposed_count() const { return space_size() - unproposed_.size(); }
  bool exhausted() const { return unproposed_.empty(); }

  // Marks an index as proposed (again is a no-op); throws std::out_of_range past the space.
  void mark_proposed(std::size_t index);
  // Records an outcome, marking the index proposed; a later outcome replaces an earlier one.
  void record(std::size_t index, std::optional<double> time_ms);

  // The observed time, nullopt when the configuration failed or was not observed yet.
  std::optional<double> time(std::size_t index) const { return times_[index]; }
  // The time as a cost to minimise: failures and unobserved configurations cost +infinity.
  double cost(std::size_t index) const;
  // The fastest configuration observed; nullopt while none succeeded.
  std::optional<std::size_t> best() const { return best_; }

  // A uniformly drawn index not proposed yet; the history must not be exhausted.
  std::size_t random_unproposed(SearchRandom& random) const;

 private:
  std::vector<bool> proposed_;
  std::vector<std::optional<double>> times_;
  std::optional<std::size_t> best_;
  // The indices not proposed yet, and where each sits in that list, for O(1) draws and removals.
  std::vector<std::size_t> unproposed_;
  std::vector<std::size_t> slot_;
};

}  // namespace tiletune
