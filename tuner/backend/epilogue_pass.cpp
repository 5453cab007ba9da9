#include "tuner/backend/epilogue_pass.h"

#include <cmath>

namespace tiletune {

EpiloguePass plan_epilogue_pass(const LaunchGeometry& geometry, const GemmProblem& problem) {
  EpiloguePass pass;
  pass.kernel_problem = problem;
  if (!geometry.epilogue_pass || (problem.beta == 0 && problem.epilogue == Epilogue::none)) return pass;
  pass.runs = true;
  GemmProblem& kernel = pass.kernel_problem;
  kernel.beta = 0;
  kernel.epilogue = Epilogue::none;
  if (problem.beta != 0) {
    kernel.ldc = problem.shape.n;
    kernel.stride_c = problem.batch > 1 ? problem.shape.m * problem.shape.n : 0;
    pass.scratch_floats = std::size_t(problem.batch * problem.shape.m * problem.shape.n);
  }
  return pass;
}

namespace {

// <tiletune/gemm_contract.h>'s tt_gelu, in the same operations: x / (1 + 2^(-2y log2 e)).
float gelu(float x) {
  const float t = x * (-2.302208198144325f + -0.10294324f * x * x);
  return x / (1.0f + std::exp2(t));
}

}  // namespace

void apply_epilogue_pass(const EpiloguePass& pass, const GemmProblem& problem, const float* s, float* c,
                         const float* bias) {
  const GemmProblem& written = pass.kernel_problem;
  const int activation = int(problem.epilogue) >> 1;  // TT_EPILOGUE_*: bit 0 the bias
  const bool with_bias = adds_bias(problem.epilogue);
  for (std::int64_t entry = 0; entry < problem.batch; ++entry) {
    for (std::int64_t row = 0; row < problem.shape.m; ++row) {
      const float* const from = s + entry * written.stride_c + row * written.ldc;
      float* const to = c + entry * problem.stride_c + row * problem.ldc;
      for (std::int64_t col = 0; col < problem.shape.n; ++col) {
        float v = from[col];
        if (problem.beta != 0) v += problem.beta * to[col];
        if (with_bias) v += bias[col];
        if (activation == 1) v = v > 0.0f ? v : 0.0f;
        if (activation == 2) v = gelu(v);
        to[col] = v;
      }
    }
  }
}

}  // namespace tiletune
