// One property case: a problem (shape and strides), how its inputs are drawn, and the seeds that
// make it replayable.
#pragma once

#include <cstdint>
#include <string>

#include "tuner/gemm_shape.h"

namespace tiletune {

enum class InputKind {
  small_integers,  // integers in [-8, 8]: every sum is exact in FP32, so C is compared bit-exactly
  real,            // uniform in [-1, 1]: C is compared against an error bound per element
};
const char* to_string(InputKind kind);

struct GemmCase {
  GemmProblem problem;
  InputKind inputs = InputKind::small_integers;
  std::uint64_t data_seed = 0;      // the values of A and B
  std::uint64_t schedule_seed = 0;  // the CPU backend's thread order between barriers

  // The arguments of `tiletune fuzz` that replay exactly this case.
  std::string replay_arguments() const;
};

}  // namespace tiletune
