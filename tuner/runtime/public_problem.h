// The public Problem (tiletune.h) as the internal GemmProblem, field for field: what the library's
// Gemm and Blas both plan and run.
#pragma once

#include <tiletune/tiletune.h>

#include "tuner/core/gemm_shape.h"

namespace tiletune::runtime {

inline GemmProblem to_gemm_problem(const Problem& p) {
  GemmProblem problem{{p.M, p.N, p.K}, p.lda, p.ldb, p.ldc};
  problem.op_a = p.op_a;
  problem.op_b = p.op_b;
  problem.alpha = p.alpha;
  problem.beta = p.beta;
  problem.batch = p.batch;
  problem.stride_a = p.stride_a;
  problem.stride_b = p.stride_b;
  problem.stride_c = p.stride_c;
  problem.epilogue = p.epilogue;
  return problem;
}

}  // namespace tiletune::runtime
