#include "tuner/core/precision.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace tiletune {
namespace {

constexpr std::pair<Precision, const char*> kNames[] = {
    {Precision::fp32, "fp32"},
    {Precision::tf32, "tf32"},
    {Precision::tf32x3, "tf32x3"},
};

}  // namespace

const char* to_string(Precision precision) {
  for (const auto& [value, name] : kNames) {
    if (value == precision) return name;
  }
  throw std::invalid_argument("invalid Precision " + std::to_string(static_cast<int>(precision)));
}

bool at_least_as_accurate(Precision precision, Precision lowest) {
  const auto rank = [](Precision p) {
    switch (p) {
      case Precision::tf32: return 0;
      case Precision::tf32x3: return 1;
      case Precision::fp32: return 2;
    }
    throw std::invalid_argument("invalid Precision " + std::to_string(static_cast<int>(p)));
  };
  return rank(precision) >= rank(lowest);
}

std::optional<Precision> parse_precision(std::string_view text) {
  for (const auto& [value, name] : kNames) {
    if (text == name) return value;
  }
  return std::nullopt;
}

}  // namespace tiletune
