// tf32x3_mma: SGEMM on the tensor cores with FP32-class accuracy: the 3xTF32 split.
//
// One TF32 product (tf32_mma.cu) loses FP32's low 13 mantissa bits of each input. Here each input
// x is split in two TF32 numbers, big = tf32(x) and small = tf32(x - big) (x - big is exact in
// FP32, and small keeps the next 11 bits), and a b is taken as
//     small_a big_b + big_a small_b + big_a big_b
// on the tensor cores, three mma per tile, the small terms first so that they are not lost
// against the big one. The dropped small_a small_b is below 2^-22 of |a b|, so the result is
// judged with the 3xTF32 bound (precision tf32x3), close to FP32's: three times the mma of
// tf32_mma for FP32-class accuracy, which still beats FFMA where the tensor cores do more than
// three times FFMA's work (CUTLASS's 3xTF32 GEMMs are the same idea).
//
// Accumulation. The tensor core rounds each mma's sum toward zero, so three mma a k8 slice into
// the running accumulators would truncate the whole running sum three times a slice, always
// toward zero: over K = 4096 that bias is several times FP32's error. Instead each slice's three
// products go into a fresh 4-register sum (its truncations are relative to one slice's 24
// products, not to the whole sum), which an FP32 add, rounded to nearest, moves into the running
// accumulators: 4 FADD per 3 mma, the accuracy of an FFMA chain of K / 8 steps.
//
// The tiling, the swizzled shared-memory layout, the cp.async pipeline and the epilogue are
// tf32_mma_pipeline.h's (shared with tf32_mma.cu, and explained there). This file supplies the
// product of one k8 slice: split the fragments, three mma per tile.
//
// It serves the whole BLAS contract as tf32_mma.cu does (the pipeline's): each configuration
// compiled per combination of transposes, alpha, beta, batch and epilogue a problem asks for, the
// plain build the code without any of it.
//
// tiletune: name tf32x3_mma
// tiletune: entry tf32x3_mma_gemm
// tiletune: precision tf32x3
// tiletune: param BM 64 128
// tiletune: param BN 64 128 256
// tiletune: param BK 16 32
// tiletune: param WM 32 64
// tiletune: param WN 32 64
// tiletune: param STAGES 3 4
// tiletune: param SPLIT_K 1 4 16
// The space is kept small because CI fuzzes every configuration on the CPU, where each mma is
// emulated lane by lane (a 128 x 128 configuration takes seconds per 40 cases); widen it here
// for a GPU-only search. Warps 2 down and 2 or 4 across, warp tiles BM / 2 x min(BN / 2, 64):
// 64 x 64 blocks of four 32 x 32 warp tiles, up to 128 x 128; but 128 x 128 with eight 64 x 32
// warp tiles, as a 64 x 64 warp tile's 128 accumulators, its slice sums and its split fragments
// do not fit 255 registers.
// tiletune: require BM / WM == 2 && WN == (BM * BN == 128 * 128 ? 32 : min(BN / 2, 64)) && BN <= 2 * BM
// At most 160 KiB of shared memory.
// tiletune: require STAGES * BK * (BM + BN) * 4 <= 160 * 1024
// Three times the mma of tf32_mma, hence a smaller space still: no 128 x 256 tile, BK 32 and 3
// steps in flight, split K into 16 slices only with the 64 x 64 tile. BK 16 with 4 stages only
// for the 128 x 64 tiles: on an H200 it took a transformer MLP's up projection (8192x3072x768,
// op_b t, bias_relu) from 816-818 to 786 us; at K 3072 and 4096 BK 32 stayed fastest
// (kernels_src/PERFORMANCE.md).
// tiletune: require (BK == 32 && STAGES == 3 || BK == 16 && STAGES == 4 && BM * BN == 128 * 64) && BM * BN <= 128 * 128
// tiletune: require SPLIT_K == 1 || (SPLIT_K == 16 && BM * BN == 64 * 64)
// Tuning limits, not preconditions (every configuration is correct at every shape, and is fuzzed
// so): no tile more than twice the matrix it covers, and split K only where C's tiles are too few
// to fill the GPU, with at least 4 steps per slice.
// tiletune: tune_if BM <= 2 * max(M, 32) && BN <= 2 * max(N, 32)
// tiletune: tune_if SPLIT_K == 1 || (ceil_div(M, BM) * ceil_div(N, BN) < 128 && K >= 4 * BK * SPLIT_K)
// tiletune: block 32 * (BM / WM) * (BN / WN)
// tiletune: grid ceil_div(N, BN), ceil_div(M, BM), SPLIT_K
// tiletune: shared STAGES * BK * (BM + BN) * 4
// tiletune: zero_output SPLIT_K > 1
// tiletune: supports op_a op_b alpha beta batch epilogue
// tiletune: specializes op_a op_b alpha beta batch epilogue

#include "tf32_mma_pipeline.h"

// Three mma per tile on inputs split in big and small TF32 parts.
struct SplitProduct {
  static constexpr bool kRoundsStages = false;  // the fragments are split as loaded
  // The split fragments take the registers that loading the next slice ahead would.
  static constexpr bool kPrefetchesFragments = false;

  __device__ __forceinline__ static void split(float x, float& big, float& small) {
    big = tt_tf32_round(x);
    small = tt_tf32_round(x - big);
  }

  // B's fragments are split once for the slice, A's a row of tiles at a time, so that only one
  // row's split A fragment is live beside the accumulators.
  __device__ __forceinline__ static void multiply(WarpAccumulators& acc, const WarpFragments& f) {
    float b_big[kMmaN][2], b_small[kMmaN][2];
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) {
#pragma unroll
      for (int r = 0; r < 2; ++r) split(f.b[j][r], b_big[j][r], b_small[j][r]);
    }
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
      float a_big[4], a_small[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) split(f.a[i][r], a_big[r], a_small[r]);
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        float slice[4];  // this k8 slice's product, truncated relative to itself alone
        tt_mma_m16n8k8_tf32(slice, a_small, b_big[j], zero);
        tt_mma_m16n8k8_tf32(slice, a_big, b_small[j], slice);
        tt_mma_m16n8k8_tf32(slice, a_big, b_big[j], slice);
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[i][j][r] += slice[r];  // rounded to nearest
      }
    }
  }
};

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32x3_mma_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K, int lda, int ldb, int ldc,
                    const __grid_constant__ tt_gemm_args args) {
  extern __shared__ float4 shared_tiles[];
  mma_gemm<SplitProduct>(A, B, C, M, N, K, lda, ldb, ldc, args,
                         reinterpret_cast<float*>(shared_tiles));
}
