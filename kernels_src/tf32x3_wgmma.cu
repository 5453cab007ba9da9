// tf32x3_wgmma: SGEMM with FP32-class accuracy on Hopper's wgmma: tf32x3_mma.cu's 3xTF32 split on
// tf32_wgmma.cu's kernel. Each input x is split in two TF32 numbers, big = tf32(x) and small =
// tf32(x - big), and a b is taken as small_a big_b + big_a small_b + big_a big_b, three wgmma per
// k8 slice, the small terms first (precision tf32x3; tf32x3_mma.cu says why the dropped
// small_a small_b does not matter).
//
// The tiles, their layout in shared memory, the copies and the epilogue are tf32_wgmma_tiles.h's
// (shared with tf32_wgmma.cu, and explained there): C^T = B^T A^T, A's tile the shared operand in
// wgmma's 128-byte swizzle, B^T's fragments the register operand. The thread that copied a chunk
// of A splits it once it has landed: the big parts in place, the small ones into a second tile
// of the stage (small_tile_a, the same layout); B^T's fragments are split as they are loaded.
//
// Accumulation. The tensor core rounds each wgmma's sums toward zero: 12 wgmma a step into the
// running accumulators would truncate the whole running sum 12 times a step, always toward zero
// (tf32x3_mma.cu measured that bias at several times FP32's error). So each step's products go
// into a fresh sum (its truncations relative to one step's products), which an FP32 add, rounded
// to nearest, moves into the accumulators once the step's wgmma are done: BM / 2 FADD per 12
// wgmma, the accuracy of an FFMA chain of K / 32 steps.
//
// Pipeline. As tf32_wgmma's (copies STAGES - 2 steps ahead, one commit group per step, one
// barrier per step), except that a step's wgmma are all waited for at its end, to add its sum:
// the copies of step + STAGES - 2 are issued after its first half, step + 1 landed and split
// after its second, while the wgmma run.
//
// The BLAS contract (<tiletune/gemm_contract.h>): op_b, alpha, beta, batches and the epilogue are
// compiled in (`specializes`), one build per combination; the plain build, which defines none of
// their macros, has the main loop and store it had before the contract. op_b = t (B stored N x K,
// a linear layer's weights) makes B^T K-major: its tile takes A's swizzled layout and its
// fragments are loaded from that (tf32_wgmma_tiles.h), the rest of the step as the plain build's.
// alpha, beta (C read only where beta != 0), the bias and ReLU or GELU are applied once per
// element as the tile is stored (store_built); a batch's entry is blockIdx.z's. op_a = t is not
// served: A's tile is wgmma's shared operand, which TF32 wgmma reads only K-major.
//
// tiletune: name tf32x3_wgmma
// tiletune: entry tf32x3_wgmma_gemm
// tiletune: precision tf32x3
// tiletune: arch sm_90a
// C rows per block (wgmma's N), and warpgroups (64 columns of C each) per block.
// tiletune: param BM 64 128
// tiletune: param WARPGROUPS 1 2
// tiletune: param STAGES 3 4
// tiletune: require BM == 64 || WARPGROUPS == 2
// At most 227 KiB of shared memory (a block's most on Hopper): A's two tiles and B's a stage.
// tiletune: require STAGES * (2 * BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024 <= 227 * 1024
// tiletune: tune_if BM <= 2 * max(M, 32) && 64 * WARPGROUPS <= 2 * max(N, 32)
// tiletune: block 128 * WARPGROUPS
// tiletune: grid ceil_div(N, 64 * WARPGROUPS), ceil_div(M, BM)
// tiletune: shared STAGES * (2 * BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024
// tiletune: supports op_b alpha beta batch epilogue
// tiletune: specializes op_b alpha beta batch epilogue

#include <tiletune/async_copy.h>
#include <tiletune/gemm_contract.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kWarpgroups = TT_WARPGROUPS, kStages = TT_STAGES;
constexpr int kBN = 64 * kWarpgroups;
constexpr int kThreads = 128 * kWarpgroups, kCopyThreads = kThreads;
constexpr bool kUnrollMaskedCopies = true;
static_assert(kStages >= 3, "copies run STAGES - 2 steps ahead of the step whose wgmma run");
// op_b = t: B stored N x K, its tile K-major; a lane's two columns of C are then 8 apart.
constexpr bool kTransposedB = TT_OP_B;
constexpr int kColumnStep = kTransposedB ? 8 : 1;
// What a build stores: alpha, beta, the bias or the activation (else acc as it is).
constexpr bool kBuiltEpilogue = TT_ALPHA || TT_BETA || TT_EPILOGUE != TT_EPILOGUE_NONE;

#include "tf32_wgmma_tiles.h"

// The main loop's state, fixed for the block.
template <bool Vectors>
struct MainLoop {
  StageCopies<Vectors, kTransposedB> copies;
  int n_pair, t;

  // The step's tile of A's small parts: kStages of them after B's tiles.
  __device__ __forceinline__ float* small_tile_a(int step) const {
    return copies.shared + kStages * (kTileA + kTileB) + step % kStages * kTileA;
  }

  // Waits for this thread's copies of `step` (all but the newest `pending` groups), splits its A
  // elements and fences them for wgmma; a barrier later makes everyone's visible.
  template <int Pending>
  __device__ __forceinline__ void land(int step) const {
    tt_cp_async_wait<Pending>();
    if (step < copies.steps) copies.split_own_copies(step, small_tile_a(step));
    tt_fence_proxy_async();
  }

  // One step: its four k8 slices as two wgmma groups of two, three wgmma a slice into `sum`; the
  // copies of step + STAGES - 2 between the halves, step + 1 landed after them; then the sum,
  // once done, added to the accumulators.
  __device__ __forceinline__ void step(int step, float (&acc)[kBM / 2]) const {
    // Everyone's copies of the step are split and fenced; everyone's wgmma of step - 1 are done:
    // step - 1's stage (and so step - 2's) takes new copies.
    __syncthreads();
    const float* const as = stage_tile_a(copies.shared, step);
    const float* const as_small = small_tile_a(step);
    const float* const bs = stage_tile_b(copies.shared, step);
    float sum[kBM / 2];
#pragma unroll
    for (int i = 0; i < kBM / 2; ++i) sum[i] = 0.0f;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float big[2][4], small[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float fragment[4];
        if (kTransposedB) {
          load_k_major_fragment_unrounded(bs, 2 * half + i, n_pair, t, fragment);
        } else {
          load_fragment_unrounded(bs, 2 * half + i, n_pair, t, fragment);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) tf32_split(fragment[r], big[i][r], small[i][r]);
      }
      tt_wgmma_fence();
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int slice = 8 * (2 * half + i);
        tt_wgmma_tf32<kBM>(sum, small[i], tt_wgmma_descriptor(as + slice));
        tt_wgmma_tf32<kBM>(sum, big[i], tt_wgmma_descriptor(as_small + slice));
        tt_wgmma_tf32<kBM>(sum, big[i], tt_wgmma_descriptor(as + slice));
      }
      tt_wgmma_commit();
      if (half == 0) {
        if (step + kStages - 2 < copies.steps) copies.copy(step + kStages - 2);
        tt_cp_async_commit();
      }
    }
    // Of the copies issued, up to step + STAGES - 2, step + 1's have landed: all but STAGES - 3.
    land<kStages - 3>(step + 1);
    tt_wgmma_wait<0>(sum);
#pragma unroll
    for (int i = 0; i < kBM / 2; ++i) acc[i] += sum[i];  // rounded to nearest
  }
};

// The store of every build: the plain one's (store_tile), else store_built's.
struct BuiltStore {
  const tt_gemm_args& args;
  __device__ __forceinline__ void operator()(const BlockOperands& op, float* __restrict__ C, int ldc,
                                             const float (&acc)[kBM / 2], int first, int t) const {
    if (kTransposedB || kBuiltEpilogue) {
      store_built<kColumnStep>(op, C, ldc, acc, first, t, args);
    } else {
      store_tile(op, C, ldc, acc, first, t);
    }
  }
};

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32x3_wgmma_gemm(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc,
                      const __grid_constant__ tt_gemm_args args) {
  extern __shared__ float4 shared_bytes[];
  if (TT_BATCH) {  // the grid's z is the batch: this block's entry
    A = tt_batch_a(A, args);
    B = tt_batch_b(B, args);
    C = tt_batch_c(C, args);
  }
  every_thread_gemm<MainLoop>(A, B, C, M, N, K, lda, ldb, ldc, shared_bytes, BuiltStore{args});
}
