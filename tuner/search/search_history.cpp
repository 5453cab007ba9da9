#include "tuner/search/search_history.h"

#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tiletune {

SearchHistory::SearchHistory(std::size_t space_size)
    : proposed_(space_size, false), times_(space_size), unproposed_(space_size), slot_(space_size) {
  std::iota(unproposed_.begin(), unproposed_.end(), 0);
  std::iota(slot_.begin(), slot_.end(), 0);
}

void SearchHistory::mark_proposed(std::size_t index) {
  if (index >= space_size()) {
    throw std::out_of_range("configuration index " + std::to_string(index) + " is outside a space of " +
                            std::to_string(space_size()));
  }
  if (proposed_[index]) return;
  proposed_[index] = true;
  const std::size_t last = unproposed_.back();
  unproposed_[slot_[index]] = last;
  slot_[last] = slot_[index];
  unproposed_.pop_back();
}

void SearchHistory::record(std::size_t index, std::optional<double> time_ms) {
  mark_proposed(index);
  times_[index] = time_ms;
  if (best_ == index) {  // the best was observed again: it may no longer be the best
    best_.reset();
    for (std::size_t i = 0; i < space_size(); ++i) {
      if (times_[i] && (!best_ || *times_[i] < *times_[*best_])) best_ = i;
    }
  } else if (time_ms && (!best_ || *time_ms < cost(*best_))) {
    best_ = index;
  }
}

double SearchHistory::cost(std::size_t index) const {
  return times_[index] ? *times_[index] : std::numeric_limits<double>::infinity();
}

std::size_t SearchHistory::random_unproposed(SearchRandom& random) const {
  return unproposed_[random.below(unproposed_.size())];
}

}  // namespace tiletune
