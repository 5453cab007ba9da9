// One property case: a problem (shape and strides), how its inputs are drawn, and the seeds that
// make it replayable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tuner/core/gemm_shape.h"

namespace tiletune {

enum class InputKind {
  small_integers,  // integers in [-8, 8]: every sum is exact in FP32, so C is compared bit-exactly
  real,            // uniform in [-1, 1]: C is compared against an error bound per element
  sparse_real,     // the same, each element nonzero with probability 1 / sqrt(K), so that many
                   // elements of C are one or two products: an error in a single product (an
                   // input truncated where it should be rounded, a stale tile) stands out against
                   // the bound instead of averaging away over K terms
};
const char* to_string(InputKind kind);

struct GemmCase {
  GemmProblem problem;
  InputKind inputs = InputKind::small_integers;
  std::uint64_t data_seed = 0;      // the values of A and B
  std::uint64_t schedule_seed = 0;  // the CPU backend's thread order, and its SM_COUNT

  // "37x29x45 lda=50 ldb=31 ldc=29 inputs=small_integers data=12 schedule=7": what
  // `tiletune fuzz --case` takes to replay exactly this case.
  std::string to_string() const;
  // Throws std::invalid_argument naming the part it cannot read.
  static GemmCase parse(std::string_view text);
};

}  // namespace tiletune
