// The launcher's pass over C, for configurations that may add into it.
//
// A split-K or stream-K kernel adds partial products into a C the launcher clears first
// (zero_output): it cannot read C for beta, nor apply an activation, which is not linear, to its
// share of a sum. Such a configuration (KernelTemplate::may_add_into_c) serves beta and the
// epilogues in two steps all the same: its kernel, built without them (KernelTemplate::kernel_build)
// and given beta 0 and no epilogue, computes alpha * op(A) * op(B) into C where beta is 0, else
// into scratch rows of the launcher's; then a pass writes C = act(S + beta * C + bias) from what
// the kernel wrote (S): the contract's epilogue with alpha 1. It costs a read and a write of C (two
// reads where beta is not 0): little at the thin shapes split-K wins at, where the other
// configurations take up to several times as long.
//
// Backend-neutral: the GPU launcher's pass is a kernel of its own (gpu/epilogue_pass_kernel.h),
// the CPU backend's apply_epilogue_pass.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tuner/core/gemm_shape.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

struct EpiloguePass {
  bool runs = false;  // the problem asks for beta or an epilogue, and the kernel may add into C
  // Where beta != 0: the kernel writes into scratch of `scratch_floats`, each entry of the batch M
  // rows of N floats after the one before; else into C itself.
  std::size_t scratch_floats = 0;
  // What the kernel is launched for: the problem with beta 0 and no epilogue, and into the
  // scratch its ldc and stride_c. Where the pass does not run, the problem itself.
  GemmProblem kernel_problem;
};

// The pass a launch of `geometry` for the problem needs.
EpiloguePass plan_epilogue_pass(const LaunchGeometry& geometry, const GemmProblem& problem);

// The pass on the host: C = act(S + beta * C + bias) over each entry of the problem's batch (C as
// the problem lays it out, S as pass.kernel_problem does; `s` may be `c` where beta is 0).
void apply_epilogue_pass(const EpiloguePass& pass, const GemmProblem& problem, const float* s, float* c,
                         const float* bias);

}  // namespace tiletune
