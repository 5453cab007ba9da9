// The arithmetic a kernel template declares (`// tiletune: precision fp32 | tf32 | tf32x3`): what
// its inputs are rounded to before they are multiplied. It decides the oracle's error bound, and
// it is part of the key a caller selects by: a caller never gets a lower precision than it asked
// for.
#pragma once

#include <optional>
#include <string_view>

namespace tiletune {

enum class Precision {
  fp32,    // FP32 products and sums (FFMA)
  tf32,    // inputs rounded to TF32 (10 mantissa bits) on the tensor cores, FP32 accumulation
  tf32x3,  // each input split into a TF32 high and low part, three of the four products kept
};

const char* to_string(Precision precision);  // "fp32", "tf32", "tf32x3"
std::optional<Precision> parse_precision(std::string_view text);
inline constexpr const char* kPrecisionNames = "fp32, tf32, tf32x3";

}  // namespace tiletune
