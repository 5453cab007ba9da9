#include "tuner/core/gemm_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>

namespace tiletune {
namespace {

// Kernels take their sizes and strides as int.
constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();

}  // namespace

double log_distance(const GemmShape& a, const GemmShape& b) {
  const double dm = std::log2(double(a.m) / double(b.m)), dn = std::log2(double(a.n) / double(b.n)),
               dk = std::log2(double(a.k) / double(b.k));
  return std::sqrt(dm * dm + dn * dn + dk * dk);
}

GemmShape GemmShape::parse(std::string_view text) {
  const auto fail = [text](std::string_view why) {
    throw ShapeError(
        fmt::format("invalid shape '{}': {} (expected MxNxK, e.g. 4096x4096x4096)", text, why));
  };
  if (std::count_if(text.begin(), text.end(), [](char c) { return c == 'x' || c == 'X'; }) != 2) {
    fail("it needs exactly three sizes");
  }

  std::array<std::int64_t, 3> sizes{};
  std::string_view rest = text;
  for (std::int64_t& size : sizes) {
    const std::size_t separator = std::min(rest.find_first_of("xX"), rest.size());
    const std::string_view part = rest.substr(0, separator);
    rest.remove_prefix(std::min(separator + 1, rest.size()));

    if (part.empty()) fail("sizes must be whole numbers >= 1");
    for (const char c : part) {
      if (c < '0' || c > '9') fail("sizes must be whole numbers >= 1");
      size = size * 10 + (c - '0');  // cannot overflow: size <= kMaxSize before each step
      if (size > kMaxSize) fail(fmt::format("sizes must be at most {}", kMaxSize));
    }
    if (size == 0) fail("sizes must be whole numbers >= 1");
  }
  return {sizes[0], sizes[1], sizes[2]};
}

std::string GemmShape::to_string() const { return fmt::format("{}x{}x{}", m, n, k); }

bool GemmProblem::valid() const {
  const auto within = [](std::int64_t value, std::int64_t low) {
    return value >= low && value <= kMaxSize;
  };
  return within(shape.m, 1) && within(shape.n, 1) && within(shape.k, 1) && within(lda, shape.k) &&
         within(ldb, shape.n) && within(ldc, shape.n);
}

std::string GemmProblem::to_string() const {
  return fmt::format("{} lda={} ldb={} ldc={}", shape.to_string(), lda, ldb, ldc);
}

}  // namespace tiletune
