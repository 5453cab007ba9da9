// The problem a kernel solves: row-major C[M x N] = A[M x K] * B[K x N] in FP32, each matrix a
// strided view (leading dimensions lda >= K, ldb >= N, ldc >= N).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tiletune {

class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;

  // "4096x4096x4096" (also "4096X4096X4096"); every size a whole number in [1, 2^31 - 1].
  // Throws ShapeError with the offending text otherwise.
  static GemmShape parse(std::string_view text);
  std::string to_string() const;  // "MxNxK"
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  // TFLOP/s of this multiplication done in `ms` milliseconds; 0 for no time.
  double tflops(double ms) const { return ms > 0 ? flops() / (ms * 1e-3) / 1e12 : 0; }

  friend bool operator==(const GemmShape&, const GemmShape&) = default;
  friend auto operator<=>(const GemmShape&, const GemmShape&) = default;
};

// How far apart two shapes are for a kernel's choices: the Euclidean distance of their
// (log2 M, log2 N, log2 K), so that 1000^3 is near 1024^3 and 64x4096x4096 far from 4096^3.
double log_distance(const GemmShape& a, const GemmShape& b);

// A shape with the strides of its three matrices: the unit the fuzzer generates and a kernel runs.
struct GemmProblem {
  GemmShape shape;
  std::int64_t lda = 0, ldb = 0, ldc = 0;

  static GemmProblem packed(GemmShape s) { return {s, s.k, s.n, s.n}; }
  bool valid() const;  // sizes >= 1, lda >= K, ldb >= N, ldc >= N, all within int range
  std::string to_string() const;  // "MxNxK lda=.. ldb=.. ldc=.."
  friend bool operator==(const GemmProblem&, const GemmProblem&) = default;
};

}  // namespace tiletune
