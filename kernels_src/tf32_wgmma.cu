// tf32_wgmma: SGEMM in TF32 on Hopper's warpgroup tensor-core instruction (wgmma.mma_async), FP32
// accumulation: the same arithmetic and error bound as tf32_mma.cu, on the instruction cuBLAS's
// fast TF32 kernels use. wgmma multiplies a 64 x N x 8 step per warpgroup (128 threads) and runs
// asynchronously, so the warps issue their next loads while the tensor cores work.
//
// The tiles, their layout in shared memory, the copies, the rounding of A and the epilogue are
// tf32_wgmma_tiles.h's (shared with the other wgmma templates, and explained there): C^T = B^T A^T,
// A's tile the shared operand in wgmma's 128-byte swizzle, B^T's fragments the register operand.
//
// Pipeline. Each step's tiles are copied STAGES - 2 steps ahead with cp.async (16-byte copies
// where lda, ldb and the pointers allow, else four 4-byte ones per 4-float chunk; zero-filled past
// M, N and K; unmasked where the step lies wholly inside A and B), one commit group per step.
// wgmma truncates its inputs to TF32, and the shared operand cannot be rounded on its way, so each
// thread rounds the A chunks it copied, in place, once its copies have landed, then fences them
// for wgmma's proxy (fence.proxy.async); the next step's barrier makes everyone's visible. A step
// issues its four k8 slices as two wgmma groups, each waited for (but the newest) before the next
// is issued, and between them the copies of step + STAGES - 2; then it lands and rounds step + 1
// while its second group runs. kernels_src/PERFORMANCE.md has the measurements behind each choice.
//
// tiletune: name tf32_wgmma
// tiletune: entry tf32_wgmma_gemm
// tiletune: precision tf32
// tiletune: arch sm_90a
// C rows per block (wgmma's N), and warpgroups (64 columns of C each) per block.
// tiletune: param BM 64 128 256
// tiletune: param WARPGROUPS 1 2
// tiletune: param STAGES 4 5 6
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024 <= 227 * 1024
// One warpgroup only with 64 rows: with 128 or 256 it lost to two at the 4 large shapes measured.
// tiletune: require BM == 64 || WARPGROUPS == 2
// tiletune: tune_if BM <= 2 * max(M, 32) && 64 * WARPGROUPS <= 2 * max(N, 32)
// tiletune: block 128 * WARPGROUPS
// tiletune: grid ceil_div(N, 64 * WARPGROUPS), ceil_div(M, BM)
// tiletune: shared STAGES * (BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024

#include <tiletune/async_copy.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kWarpgroups = TT_WARPGROUPS, kStages = TT_STAGES;
constexpr int kBN = 64 * kWarpgroups;
constexpr int kThreads = 128 * kWarpgroups, kCopyThreads = kThreads;
constexpr bool kUnrollMaskedCopies = true;
static_assert(kStages >= 3, "copies run STAGES - 2 steps ahead of the step whose wgmma run");

#include "tf32_wgmma_tiles.h"

// The main loop's state, fixed for the block.
template <bool Vectors>
struct MainLoop {
  StageCopies<Vectors> copies;
  int n_pair, t;

  // Waits for this thread's copies of `step` (all but the newest `pending` groups), rounds its A
  // elements and fences them for wgmma; a barrier later makes everyone's visible.
  template <int Pending>
  __device__ __forceinline__ void land(int step) const {
    tt_cp_async_wait<Pending>();
    if (step < copies.steps) copies.round_own_copies(step);
    tt_fence_proxy_async();
  }

  // One step: its four k8 slices issued as two wgmma groups of two, each waited for (but the
  // newest) before the next is issued, so that a slice's register operands are rewritten only
  // once the wgmma that read them is done; between the halves, the copies of step + STAGES - 2
  // are issued, after them step + 1's landed.
  __device__ __forceinline__ void step(int step, float (&acc)[kBM / 2]) const {
    // Everyone's copies of the step are rounded and fenced; everyone's wgmma of step - 1's first
    // half, so of step - 2, are done: step - 2's stage takes new copies.
    __syncthreads();
    const float* const as = stage_tile_a(copies.shared, step);
    const float* const bs = stage_tile_b(copies.shared, step);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      issue_half_step(acc, as, bs, half, n_pair, t);
      if (half == 0) {
        if (step + kStages - 2 < copies.steps) copies.copy(step + kStages - 2);
        tt_cp_async_commit();
      }
      tt_wgmma_wait<1>(acc);
    }
    // Of the copies issued, up to step + STAGES - 2, step + 1's have landed: all but STAGES - 3.
    land<kStages - 3>(step + 1);
  }
};

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32_wgmma_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K, int lda, int ldb, int ldc) {
  extern __shared__ float4 shared_bytes[];
  every_thread_gemm<MainLoop>(A, B, C, M, N, K, lda, ldb, ldc, shared_bytes);
}
