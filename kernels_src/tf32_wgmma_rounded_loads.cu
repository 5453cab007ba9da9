// tf32_wgmma_rounded_loads: tf32_wgmma with A's tile rounded on its way into shared memory instead
// of in place. tf32_wgmma copies A with cp.async and then reads, rounds and writes back every
// element of it (a third of its shared-memory traffic, and a chain of load, round, store, fence on
// each warp's path to the barrier); here each thread loads its chunks of A's tile for step + 1 into
// registers one step ahead, and while step's wgmma run it rounds them and stores them into their
// stage once. B's tile keeps tf32_wgmma's cp.async copies (its fragments are rounded as loaded).
//
// The tiles, their layout in shared memory, B's copies, the fragments and the epilogue are
// tf32_wgmma_tiles.h's: C^T = B^T A^T, A's tile the shared operand in wgmma's 128-byte swizzle,
// B^T's fragments the register operand.
//
// Pipeline. B's tiles are copied STAGES - 2 steps ahead (one commit group per step); A's chunks of
// step + 1 are in registers during step. A step: the barrier (everyone's A of the step stored and
// fenced, B landed; everyone's wgmma of step - 2 done, so its stage takes new data), the first
// half's wgmma, B's copies of step + STAGES - 2, A of step + 1 rounded and stored, A of step + 2
// loaded, the second half's wgmma, then the wait for B of step + 1 and the fence that hands A's
// stores to wgmma's proxy. kernels_src/PERFORMANCE.md has the measurements.
//
// tiletune: name tf32_wgmma_rounded_loads
// tiletune: entry tf32_wgmma_rounded_loads_gemm
// tiletune: precision tf32
// tiletune: arch sm_90a
// C rows per block (wgmma's N), and warpgroups (64 columns of C each) per block.
// tiletune: param BM 64 128 256
// tiletune: param WARPGROUPS 1 2
// tiletune: param STAGES 3 4 5
// Split K: slices of K over gridDim.z, each adding its product into C (thin shapes' few tiles).
// tiletune: param SPLIT_K 1 2 4 16
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024 <= 227 * 1024
// tiletune: require BM == 64 || WARPGROUPS == 2
// A's chunks in registers leave BM 256 no room for a fourth stage's addresses: ptxas spills.
// tiletune: require BM < 256 || STAGES == 3
// tiletune: require SPLIT_K == 1 || (BM <= 128 && STAGES == 4)
// tiletune: tune_if BM <= 2 * max(M, 32) && 64 * WARPGROUPS <= 2 * max(N, 32)
// Split K only where C's tiles are too few for the GPU and each slice keeps 4 steps or more.
// tiletune: tune_if SPLIT_K == 1 || (ceil_div(M, BM) * ceil_div(N, 64 * WARPGROUPS) < 128 && K >= 4 * 32 * SPLIT_K)
// tiletune: block 128 * WARPGROUPS
// tiletune: grid ceil_div(N, 64 * WARPGROUPS), ceil_div(M, BM), SPLIT_K
// tiletune: zero_output SPLIT_K > 1
// tiletune: shared STAGES * (BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024

#include <tiletune/async_copy.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kWarpgroups = TT_WARPGROUPS, kStages = TT_STAGES, kSplitK = TT_SPLIT_K;
constexpr int kBN = 64 * kWarpgroups;
constexpr int kThreads = 128 * kWarpgroups, kCopyThreads = kThreads;
constexpr bool kUnrollMaskedCopies = true;
static_assert(kStages >= 3, "B's copies run STAGES - 2 steps ahead of the step whose wgmma run");

#include "tf32_wgmma_tiles.h"

template <bool Vectors>
__device__ __forceinline__ void gemm(const BlockOperands& op, float* __restrict__ C, int ldc,
                                     float* shared) {
  const int tid = threadIdx.x;
  const StageCopies<Vectors> copies(op, shared, tid);
  const int n_pair = fragment_columns(tid / 128, tid % 128), t = tid % 4;
  float acc[kBM / 2];
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) acc[i] = 0.0f;

  // Prologue: B's first STAGES - 2 steps in flight, A of step 0 stored, of step 1 loaded, B of
  // step 0 landed.
#pragma unroll
  for (int s = 0; s < kStages - 2; ++s) {
    if (s < copies.steps) copies.copy_b(s);
    tt_cp_async_commit();
  }
  LoadedA<Vectors> a;
  a.load(copies, 0);
  a.store_rounded(copies, 0);
  if (1 < copies.steps) a.load(copies, 1);
  tt_cp_async_wait<kStages - 3>();
  tt_fence_proxy_async();

  for (int step = 0; step < copies.steps; ++step) {
    // Everyone's A of the step is stored and fenced, its B landed; everyone's wgmma of step - 1's
    // first half, so of step - 2, are done: step - 2's stage takes new data.
    __syncthreads();
    const float* const as = stage_tile_a(shared, step);
    const float* const bs = stage_tile_b(shared, step);
    issue_half_step(acc, as, bs, 0, n_pair, t);
    if (step + kStages - 2 < copies.steps) copies.copy_b(step + kStages - 2);
    tt_cp_async_commit();
    if (step + 1 < copies.steps) {
      a.store_rounded(copies, step + 1);
      if (step + 2 < copies.steps) a.load(copies, step + 2);
    }
    tt_wgmma_wait<1>(acc);
    issue_half_step(acc, as, bs, 1, n_pair, t);
    tt_wgmma_wait<1>(acc);
    // Of B's copies issued, up to step + STAGES - 2, step + 1's have landed: all but STAGES - 3.
    tt_cp_async_wait<kStages - 3>();
    tt_fence_proxy_async();
  }
  tt_wgmma_wait<0>(acc);  // the last step's second half
  if (kSplitK == 1) {
    store_tile_pairs(op, C, ldc, acc, n_pair, t);
  } else {
    store_tile<true>(op, C, ldc, acc, n_pair, t);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32_wgmma_rounded_loads_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                  int ldc) {
  extern __shared__ float4 shared_bytes[];
  float* const shared = tt_shared_align_1024(shared_bytes);
  BlockOperands op = block_operands(A, B, M, N, K, lda, ldb);
  if (!k_slice<kSplitK>(op)) return;
  if (vector_copies(A, B, lda, ldb)) {
    gemm<true>(op, C, ldc, shared);
  } else {
    gemm<false>(op, C, ldc, shared);
  }
}
