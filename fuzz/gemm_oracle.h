// Judges one launch: did the kernel compute C = A * B, and write nothing but C's region?
//
// The reference is computed in double. With small-integer inputs every partial sum is an integer
// below 2^24, exact in FP32 (and TF32 inputs) whatever the summation order, so C must match bit
// for bit. With real inputs each element must satisfy |c - ref| <= bound * sum_k |a_ik| |b_kj|,
// the bound of the template's declared precision (tuner/core/error_bound.h): for fp32 the classical
// bound for a dot product of length K in any order, gamma_K = K u / (1 - K u), u = 2^-24. NaN or
// Inf in C always fails, and so does any change to the guards, to the padding between N and ldc,
// or to A and B.
//
// A problem of the BLAS contract beyond C = A * B (transposes, alpha and beta, a batch, an
// epilogue) is judged element by element against act(alpha * op(A) op(B) + beta * C0 + bias) in
// double, every entry of the batch, the gaps between entries like the padding; its bound adds the
// roundings of alpha, beta, the bias and GELU, none where all of them are exact. A reference
// table is for plain problems only, and ignored for the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/gemm_case.h"
#include "fuzz/gemm_operands.h"
#include "tuner/core/precision.h"

namespace tiletune {

struct Finding {
  std::string what;  // "wrong element", "NaN in C", "write outside C", "input overwritten", ...
  std::int64_t row = -1, col = -1;  // first offending element of C, when there is one
  float got = 0;
  double expected = 0;
  double bound = 0;                 // allowed |got - expected|
  std::int64_t wrong_elements = 0;  // how many elements of C are wrong in all

  std::string to_string() const;  // one line
};

// The threads a large reference is spread over: the cores by default. A tune's workers share the
// cores, many of them judging at once: each is given its share, so that together they do not
// crowd the cores with many times more threads than there are. 0: the cores again.
void set_reference_threads(unsigned threads);

// The reference of every element of C for the inputs A and B, in double, row-major: its value
// and sum_k |a_ik| |b_kj|, from which each precision's bound follows. Computed on all cores.
struct ReferenceTable {
  std::int64_t rows = 0, cols = 0, depth = 0;  // M, N, K
  std::vector<double> value, magnitude;
};
ReferenceTable compute_reference(const GemmOperands& inputs);

// `before` holds the inputs as they were given to the kernel, `after` the three matrices as the
// kernel left them; `precision` is the template's declared arithmetic. `reference`, when given,
// is compute_reference(before) made earlier (one shape's, shared by many launches); otherwise the
// reference is computed here. Throws std::invalid_argument when its size is not C's.
std::optional<Finding> judge_launch(const GemmCase& gemm_case, Precision precision,
                                    const GemmOperands& before, const GemmOperands& after,
                                    const ReferenceTable* reference = nullptr);

// The double-precision reference value and the error bound of element (row, col).
struct ReferenceElement {
  double value = 0;
  double bound = 0;
};
ReferenceElement reference_element(const GemmOperands& inputs, InputKind kind, Precision precision,
                                   std::int64_t row, std::int64_t col);

}  // namespace tiletune
