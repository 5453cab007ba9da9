// How much of a space a search may spend, as given to `tune --budget`: a number of evaluations
// ("200"), a share of the space ("10%"), or wall time ("90s", "5m", "1h").
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tiletune {

class SearchBudget {
 public:
  // Throws std::invalid_argument with one line naming the text, e.g. "budget '12x': expected N
  // evaluations, N% of the space, or a time like 90s, 5m, 1h". Zero budgets and shares above
  // 100% are refused too.
  static SearchBudget parse(std::string_view text);

  // The evaluations allowed in a space of space_size configurations: a share is rounded up and is
  // at least 1. Nullopt for a time budget.
  std::optional<std::size_t> evaluation_limit(std::size_t space_size) const;
  // Nullopt unless this is a time budget.
  std::optional<std::chrono::seconds> time_limit() const;

  std::string to_string() const;  // "200", "10%", "90s" (times in seconds)

 private:
  enum class Kind { evaluations, percent_of_space, seconds };
  SearchBudget(Kind kind, double amount) : kind_(kind), amount_(amount) {}

  Kind kind_;
  double amount_;  // evaluations, percent, or seconds
};

}  // namespace tiletune
