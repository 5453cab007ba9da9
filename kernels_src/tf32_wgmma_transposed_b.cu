// tf32_wgmma_transposed_b: both of wgmma's operands from shared memory, so that no thread loads or
// rounds a fragment on its way to the tensor cores. tf32_wgmma_rounded_loads takes B^T (wgmma's A)
// from registers, each lane loading and rounding its fragment right before each wgmma: Nsight
// Compute has that chain as its first stall (kernels_src/PERFORMANCE.md). TF32 wgmma reads shared
// memory only K-major, and B is not (a row of B runs along n); so here B's tile goes through
// registers as A's does, rounded, and is stored transposed: rows of n, each its 32 k contiguous,
// in the 128-byte swizzle, a tile like A's. A warpgroup's wgmma then names both tiles by descriptor.
//
// C^T = B^T A^T as in tf32_wgmma_tiles.h: wgmma's M is a warpgroup's 64 columns of C, its N the
// block's BM rows. Row r of B^T's tile holds the column of C that the accumulators' row r belongs to
// in tiles.h's epilogue (fragment_columns: rows g and g + 8 of a warp's 16 are columns 2g and
// 2g + 1), so store_tile_pairs stores them unchanged.
//
// Pipeline. Each thread loads its chunks of A and B for step + 2 into registers during step, and
// rounds and stores them into step + 1's stage while step's wgmma run. A step: the barrier
// (everyone's tiles of the step stored and fenced; everyone's wgmma of step + 1 - STAGES retired,
// so that stage takes new data), its four wgmma as one group, the tiles of step + 1 stored, those of
// step + 2 loaded, the fence that hands the stores to wgmma's proxy, and a wait that leaves
// STAGES - 2 groups in flight.
//
// tiletune: name tf32_wgmma_transposed_b
// tiletune: entry tf32_wgmma_transposed_b_gemm
// tiletune: precision tf32
// tiletune: arch sm_90a
// C rows per block (wgmma's N), and warpgroups (64 columns of C each) per block.
// tiletune: param BM 64 128 256
// tiletune: param WARPGROUPS 1 2
// tiletune: param STAGES 3 4
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM + 64 * WARPGROUPS) * 128 + 1024 <= 227 * 1024
// tiletune: require BM == 64 || WARPGROUPS == 2
// tiletune: tune_if BM <= 2 * max(M, 32) && 64 * WARPGROUPS <= 2 * max(N, 32)
// tiletune: block 128 * WARPGROUPS
// tiletune: grid ceil_div(N, 64 * WARPGROUPS), ceil_div(M, BM)
// tiletune: shared STAGES * (BM + 64 * WARPGROUPS) * 128 + 1024

#include <tiletune/async_copy.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kWarpgroups = TT_WARPGROUPS, kStages = TT_STAGES;
constexpr int kBN = 64 * kWarpgroups;
constexpr int kThreads = 128 * kWarpgroups, kCopyThreads = kThreads;
constexpr bool kUnrollMaskedCopies = true;
static_assert(kStages >= 3, "a step's stores go into a stage that no wgmma in flight reads");

#include "tf32_wgmma_tiles.h"

constexpr int kTileBT = kBN * kBK;  // B^T's tile: BN rows of 32 floats

// B^T's tile of a step's stage, after the stages of A (stage_tile_a).
__device__ __forceinline__ float* stage_tile_bt(float* shared, int step) {
  return shared + kStages * kTileA + step % kStages * kTileBT;
}

// The row of B^T's tile that holds column n of the block's C: the accumulators' row of that
// column (fragment_columns' order: within 16 columns, 2g + h is row g + 8h).
__device__ __forceinline__ int row_of_column(int n) {
  return (n & ~15) | ((n & 15) >> 1) | ((n & 1) << 3);
}

// A thread's chunks of B's tile for one step (four adjacent n at one k each), in registers between
// their load and their transposed store. A warp's load reads 8 chunks (128 contiguous bytes) of 4
// rows of B; a chunk's 4-byte stores then put its 32 lanes in 16 different banks of the swizzled
// tile (rows n and n + 16 share theirs): two wavefronts each. Passes step k by 8.
template <bool Vectors>
struct LoadedBT {
  static constexpr int kPasses = kBK * kBN / 4 / kThreads;  // 4
  float4 chunk[kPasses];
  int k, n;  // the thread's chunk of pass 0: its k in the step, its first column in the block

  __device__ __forceinline__ explicit LoadedBT(int tid) {
    const int lane = tid % 32, warp = tid / 32;
    n = 4 * (8 * (warp % (kBN / 32)) + lane % 8);
    k = 4 * (warp / (kBN / 32)) + lane / 8;
  }

  // Loads the step's chunks: zero past K and N; 16-byte loads where the step lies wholly inside
  // B and ldb and the pointer allow them (Vectors), else one float at a time.
  __device__ __forceinline__ void load(const StageCopies<Vectors>& copies, int step) {
    const BlockOperands& op = copies.op;
    const int row = step * kBK + k;
    if (copies.inside(step)) {
      const float* src = op.B + (size_t)row * op.ldb + op.n0 + n;
      const size_t pass = (size_t)8 * op.ldb;
#pragma unroll
      for (int p = 0; p < kPasses; ++p, src += pass) chunk[p] = load_chunk<Vectors>(src);
      return;
    }
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const float* src;
      const int floats = masked_chunk_of_b(op, k + 8 * p, n, step * kBK, src);
      chunk[p] = load_masked_chunk(src, floats);
    }
  }

  // Rounds the chunks to TF32 and stores them, transposed, into the step's stage.
  __device__ __forceinline__ void store_rounded(float* shared, int step) const {
    float* const bt = stage_tile_bt(shared, step);
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const float4 v = chunk[p];
      bt[offset_a(row_of_column(n), k + 8 * p)] = tt_tf32_round(v.x);
      bt[offset_a(row_of_column(n + 1), k + 8 * p)] = tt_tf32_round(v.y);
      bt[offset_a(row_of_column(n + 2), k + 8 * p)] = tt_tf32_round(v.z);
      bt[offset_a(row_of_column(n + 3), k + 8 * p)] = tt_tf32_round(v.w);
    }
  }
};

// Issues a step: its four k8 slices, each one wgmma with both operands by descriptor, one group.
__device__ __forceinline__ void issue_step(float (&acc)[kBM / 2], const float* as,
                                           const float* bt) {
  tt_wgmma_fence();
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s) {
    tt_wgmma_tf32_shared<kBM>(acc, tt_wgmma_descriptor(bt + 8 * s),
                              tt_wgmma_descriptor(as + 8 * s));
  }
  tt_wgmma_commit();
}

template <bool Vectors>
__device__ __forceinline__ void gemm(const BlockOperands& op, float* __restrict__ C, int ldc,
                                     float* shared) {
  const int tid = threadIdx.x, warpgroup = tid / 128;
  const StageCopies<Vectors> copies(op, shared, tid);
  const int n_pair = fragment_columns(warpgroup, tid % 128), t = tid % 4;
  float acc[kBM / 2];
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) acc[i] = 0.0f;

  // Prologue: step 0 stored, step 1 loaded.
  LoadedA<Vectors> a;
  LoadedBT<Vectors> b(tid);
  a.load(copies, 0);
  b.load(copies, 0);
  a.store_rounded(copies, 0);
  b.store_rounded(shared, 0);
  if (1 < copies.steps) {
    a.load(copies, 1);
    b.load(copies, 1);
  }
  tt_fence_proxy_async();

  for (int step = 0; step < copies.steps; ++step) {
    // Everyone's tiles of the step are stored and fenced; everyone's wgmma up to
    // step + 1 - STAGES have retired: step + 1's stage takes new data.
    __syncthreads();
    issue_step(acc, stage_tile_a(shared, step),
               stage_tile_bt(shared, step) + 64 * warpgroup * kBK);
    if (step + 1 < copies.steps) {
      a.store_rounded(copies, step + 1);
      b.store_rounded(shared, step + 1);
      if (step + 2 < copies.steps) {
        a.load(copies, step + 2);
        b.load(copies, step + 2);
      }
    }
    tt_fence_proxy_async();
    tt_wgmma_wait<kStages - 2>(acc);
  }
  tt_wgmma_wait<0>(acc);
  store_tile_pairs(op, C, ldc, acc, n_pair, t);
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32_wgmma_transposed_b_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                 float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                 int ldc) {
  extern __shared__ float4 shared_bytes[];
  float* const shared = tt_shared_align_1024(shared_bytes);
  const BlockOperands op = block_operands(A, B, M, N, K, lda, ldb);
  if (vector_copies(A, B, lda, ldb)) {
    gemm<true>(op, C, ldc, shared);
  } else {
    gemm<false>(op, C, ldc, shared);
  }
}
