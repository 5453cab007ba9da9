#include "fuzz/gemm_operands.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "fuzz/poison.h"

namespace tiletune {

std::size_t guard_elements(std::int64_t ld) {
  return std::max(kMinGuardElements, std::size_t(kMaxTileReach * (ld + 1)));
}

GuardedMatrix::GuardedMatrix(std::int64_t rows, std::int64_t cols, std::int64_t ld)
    : rows(rows), cols(cols), ld(ld), entry_rows(rows), guard(guard_elements(ld)),
      storage(2 * guard + std::size_t(rows) * std::size_t(ld), poison_value()) {}

GuardedMatrix::GuardedMatrix(std::int64_t entries, std::int64_t entry_rows,
                             std::int64_t entry_stride_rows, std::int64_t cols, std::int64_t ld)
    : GuardedMatrix(entry_stride_rows == 0 ? entry_rows
                                           : (entries - 1) * entry_stride_rows + entry_rows,
                    cols, ld) {
  this->entry_rows = entry_rows;
  this->entry_stride_rows = entries > 1 ? entry_stride_rows : 0;
}

namespace {

// A batch's matrices of `rows` x `cols`, `stride` elements apart: the stride must be whole rows.
GuardedMatrix batched(const GemmProblem& p, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                      std::int64_t stride, const char* name) {
  if (p.batch > 1 && stride % ld != 0) {
    throw std::invalid_argument(fmt::format("{}'s batch stride {} is not whole rows of {}", name,
                                            stride, ld));
  }
  return GuardedMatrix(p.batch, rows, p.batch > 1 ? stride / ld : 0, cols, ld);
}

}  // namespace

GemmOperands make_operands(const GemmCase& gemm_case) {
  const GemmProblem& p = gemm_case.problem;
  GemmOperands operands{batched(p, p.a_rows(), p.a_columns(), p.lda, p.stride_a, "A"),
                        batched(p, p.b_rows(), p.b_columns(), p.ldb, p.stride_b, "B"),
                        batched(p, p.shape.m, p.shape.n, p.ldc, p.stride_c, "C"),
                        adds_bias(p.epilogue) ? GuardedMatrix(1, p.shape.n, p.shape.n)
                                              : GuardedMatrix()};

  std::mt19937_64 random(gemm_case.data_seed);
  std::uniform_int_distribution<int> small_integer(-8, 8);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::bernoulli_distribution nonzero(1.0 / std::sqrt(double(std::max<std::int64_t>(p.shape.k, 1))));
  auto draw = [&]() -> float {
    switch (gemm_case.inputs) {
      case InputKind::small_integers: return float(small_integer(random));
      case InputKind::real: return real(random);
      case InputKind::sparse_real: return nonzero(random) ? real(random) : 0.0f;
    }
    return 0.0f;
  };
  const auto fill = [&](GuardedMatrix& matrix) {
    for (std::int64_t r = 0; r < matrix.rows; ++r) {
      if (!matrix.in_entry(r)) continue;
      for (std::int64_t c = 0; c < matrix.cols; ++c) matrix.at(r, c) = draw();
    }
  };
  fill(operands.a);
  fill(operands.b);
  // Drawn after A and B, so that a plain case's operands are what they always were.
  if (p.beta != 0) fill(operands.c);
  fill(operands.bias);
  return operands;
}

}  // namespace tiletune
