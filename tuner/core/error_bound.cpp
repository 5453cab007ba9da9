#include "tuner/core/error_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tiletune {
namespace {

// Notation: S = sum_k |a_k| |b_k| (one element's row of A and column of B), u = 2^-24 the FP32
// unit roundoff, t = 2^-11 the TF32 unit roundoff (11 significant bits, rounded to nearest),
// gamma_n(v) = n v / (1 - n v).
//
// fp32. Each product and sum (or each FFMA) rounds to nearest; in any order and grouping, a
// product passes through at most K roundings: |c - ref| <= gamma_K(u) S, the classical dot
// product bound (the reference BLAS test's).
//
// tf32. The inputs are rounded to TF32 first (cvt.rna): a' = a (1 + e), b' = b (1 + f), |e|, |f|
// <= t. A product of two TF32 values has at most 22 significant bits, exact in FP32 and on the
// tensor core, and |a'b' - ab| <= (2t + t^2) |a||b|. Summing the exact products costs at most K
// accumulation steps per product. A step is an FFMA or an MMA's fused sum of a block of products
// into its accumulator, and the tensor core aligns and normalises that sum by truncation (Fasi,
// Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", 2021), so a step is
// allowed one FP32 ulp, 2u, of the magnitudes it adds rather than half of one:
// |fl(sum a'b') - sum a'b'| <= gamma_K(2u) sum |a'||b'| <= gamma_K(2u) (1 + t)^2 S. In all:
//     (2t + t^2 + gamma_K(2u) (1 + t)^2) S.
// The bound assumes rounded inputs, as the tensor core does not round: fed an unrounded FP32
// value it uses its TF32 part only (truncation, relative error up to 2t). A template that skips
// the rounding computes a different arithmetic, and at small K the oracle catches it.
//
// tf32x3. Each input is split into a_hi = tf32(a), r = a - a_hi (exact in FP32, |r| <= t|a|)
// and a_lo = tf32(r), which leaves e_a = r - a_lo, |e_a| <= t|r| <= t^2 |a|, and
// |a_lo| <= (1 + t)|r| <= t (1 + t)|a|; the same for b. So a = a_hi + a_lo + e_a, and the three
// products kept, a_hi b_hi + a_hi b_lo + a_lo b_hi (each exact in FP32), differ from ab by
//     a_lo b_lo + e_a b + e_b (a_hi + a_lo),   a_hi + a_lo = a - e_a,
// at most (t^2 (1 + t)^2 + t^2 + t^2 (1 + t^2)) |a||b| = t^2 (3 + 2t + 2t^2) |a||b|: about
// 1.5 * 2^-21 per product. Accumulating the 3K kept products, in one accumulator or apart, costs
// each of them at most 3K steps of 2u, on at most sum (|a_hi| + |a_lo|)(|b_hi| + |b_lo|)
// <= (1 + t)^4 S. In all:
//     (t^2 (3 + 2t + 2t^2) + gamma_3K(2u) (1 + t)^4) S.
// Inputs are taken as normal numbers: subnormal inputs would add an absolute error the bound
// does not count, and the oracle's inputs (uniform in [-1, 1]) stay far above them.
constexpr double kU = 0x1p-24;
constexpr double kT = 0x1p-11;

double gamma(double n, double unit) {
  const double nu = n * unit;
  return nu < 1 ? nu / (1.0 - nu) : HUGE_VAL;  // past n v = 1 the bound says nothing
}

}  // namespace

double relative_error_bound(Precision precision, std::int64_t k) {
  const double kd = double(k);
  switch (precision) {
    case Precision::fp32:
      return gamma(kd, kU);
    case Precision::tf32:
      return 2 * kT + kT * kT + gamma(kd, 2 * kU) * (1 + kT) * (1 + kT);
    case Precision::tf32x3:
      return kT * kT * (3 + 2 * kT + 2 * kT * kT) + gamma(3 * kd, 2 * kU) * std::pow(1 + kT, 4);
  }
  throw std::invalid_argument("invalid Precision " + std::to_string(static_cast<int>(precision)));
}

double unit_roundoff(Precision precision) {
  switch (precision) {
    case Precision::fp32: return kU;
    case Precision::tf32: return kT;
    case Precision::tf32x3: return kT * kT;
  }
  throw std::invalid_argument("invalid Precision " + std::to_string(static_cast<int>(precision)));
}

ResultError result_error(const float* c, std::int64_t ldc, const double* reference,
                         const double* magnitude, std::int64_t m, std::int64_t n) {
  ResultError error;
  for (std::int64_t row = 0; row < m; ++row) {
    for (std::int64_t col = 0; col < n; ++col) {
      const std::size_t index = std::size_t(row * n + col);
      const double got = c[row * ldc + col];
      double absolute = std::fabs(got - reference[index]);
      if (!std::isfinite(absolute)) absolute = HUGE_VAL;  // NaN too
      const double relative = absolute == 0 ? 0.0
                              : magnitude[index] > 0 ? absolute / magnitude[index]
                                                     : HUGE_VAL;
      error.max_absolute = std::max(error.max_absolute, absolute);
      error.max_relative = std::max(error.max_relative, relative);
    }
  }
  return error;
}

float round_to_tf32(float value) {
  if (!std::isfinite(value)) return value;
  // Adding half of TF32's last place to the magnitude bits, then clearing what TF32 drops, rounds
  // to nearest with ties away from zero; a carry moves into the exponent as it should.
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  bits = (bits + 0x1000u) & ~0x1fffu;
  return std::bit_cast<float>(bits);
}

}  // namespace tiletune
