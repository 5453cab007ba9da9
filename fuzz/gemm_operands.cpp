#include "fuzz/gemm_operands.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "fuzz/poison.h"

namespace tiletune {

std::size_t guard_elements(std::int64_t ld) {
  return std::max(kMinGuardElements, std::size_t(kMaxTileReach * (ld + 1)));
}

GuardedMatrix::GuardedMatrix(std::int64_t rows, std::int64_t cols, std::int64_t ld)
    : rows(rows), cols(cols), ld(ld), guard(guard_elements(ld)),
      storage(2 * guard + std::size_t(rows) * std::size_t(ld), poison_value()) {}

GemmOperands make_operands(const GemmCase& gemm_case) {
  const GemmProblem& p = gemm_case.problem;
  GemmOperands operands{GuardedMatrix(p.shape.m, p.shape.k, p.lda),
                        GuardedMatrix(p.shape.k, p.shape.n, p.ldb),
                        GuardedMatrix(p.shape.m, p.shape.n, p.ldc)};

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
  for (GuardedMatrix* matrix : {&operands.a, &operands.b}) {
    for (std::int64_t r = 0; r < matrix->rows; ++r) {
      for (std::int64_t c = 0; c < matrix->cols; ++c) matrix->at(r, c) = draw();
    }
  }
  return operands;
}

}  // namespace tiletune
