#include "tuner/search/search_budget.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {
namespace {

std::invalid_argument budget_error(std::string_view text, std::string_view why) {
  return std::invalid_argument(fmt::format("budget '{}': {}", text, why));
}

// The whole of `digits` as a number: a count, or for a share a decimal like 2.5.
std::optional<double> parse_number(std::string_view digits, bool decimal) {
  if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits.front()))) return std::nullopt;
  double value = 0;
  if (decimal) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value,
                                              std::chars_format::fixed);
    if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return value;
  }
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  // No space comes near 2^40; the bound keeps the count exact as a double.
  if (error != std::errc() || end != digits.data() + digits.size() || count > (std::uint64_t(1) << 40)) {
    return std::nullopt;
  }
  return double(count);
}

}  // namespace

SearchBudget SearchBudget::parse(std::string_view text) {
  const std::string_view expected =
      "expected N evaluations, N% of the space, or a time like 90s, 5m, 1h";
  Kind kind = Kind::evaluations;
  double seconds_per_unit = 1;
  const char suffix = text.empty() ? '\0' : text.back();
  if (suffix == '%') {
    kind = Kind::percent_of_space;
  } else if (suffix == 's' || suffix == 'm' || suffix == 'h') {
    kind = Kind::seconds;
    seconds_per_unit = suffix == 'h' ? 3600 : suffix == 'm' ? 60 : 1;
  }
  std::string_view digits = text;
  if (kind != Kind::evaluations) digits.remove_suffix(1);
  const std::optional<double> number = parse_number(digits, kind == Kind::percent_of_space);
  if (!number) throw budget_error(text, expected);
  if (*number <= 0) throw budget_error(text, "a budget must be more than nothing");
  if (kind == Kind::percent_of_space && *number > 100) {
    throw budget_error(text, "a share of the space is at most 100%");
  }
  return SearchBudget(kind, *number * seconds_per_unit);
}

std::optional<std::size_t> SearchBudget::evaluation_limit(std::size_t space_size) const {
  switch (kind_) {
    case Kind::evaluations: return std::size_t(amount_);
    case Kind::percent_of_space: {
      // The allowance keeps 1.1% of 3000 at 33, which the product gives as 33.00000000000001.
      const double share = std::ceil(double(space_size) * amount_ / 100 - 1e-9);
      return std::max<std::size_t>(1, std::size_t(share));
    }
    case Kind::seconds: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::chrono::seconds> SearchBudget::time_limit() const {
  if (kind_ != Kind::seconds) return std::nullopt;
  return std::chrono::seconds(std::int64_t(amount_));
}

std::string SearchBudget::to_string() const {
  switch (kind_) {
    case Kind::evaluations: return fmt::format("{}", std::uint64_t(amount_));
    case Kind::percent_of_space: return fmt::format("{}%", amount_);
    case Kind::seconds: return fmt::format("{}s", std::uint64_t(amount_));
  }
  return {};
}

}  // namespace tiletune
