// The arithmetic a kernel template declares (`// tiletune: precision fp32 | tf32 | tf32x3`): what
// its inputs are rounded to before they are multiplied. It decides the oracle's error bound, and
// it is part of the key a caller selects by: a caller never gets a lower precision than it asked
// for.
#pragma once

#include <optional>
#include <string_view>

#include "tuner/runtime/include/tiletune/precision.h"  // the enum, which the public API shares

namespace tiletune {

const char* to_string(Precision precision);  // "fp32", "tf32", "tf32x3"
std::optional<Precision> parse_precision(std::string_view text);
inline constexpr const char* kPrecisionNames = "fp32, tf32, tf32x3";

// Whether `precision` is at least as accurate as `lowest`, in the order fp32 > tf32x3 > tf32:
// what a caller who accepts down to `lowest` may be given.
bool at_least_as_accurate(Precision precision, Precision lowest);

}  // namespace tiletune
