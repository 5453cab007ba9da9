// tf32_mma: SGEMM on the tensor cores in TF32 (mma.sync m16n8k8), FP32 accumulation.
//
// TF32 keeps FP32's exponent and 10 of its 23 mantissa bits: each input is rounded to it (cvt.rna,
// a relative error of at most 2^-11), the products are exact and summed in FP32. The result is
// that of an FP32 GEMM of slightly perturbed inputs, judged with the TF32 error bound (precision
// tf32), for several times the throughput of FFMA: what cuBLAS's TF32 math mode does. Where FP32
// accuracy is needed, tf32x3_mma.cu gets it back with three products per mma tile.
//
// The tiling, the swizzled shared-memory layout, the cp.async pipeline and the epilogue are
// tf32_mma_pipeline.h's (shared with tf32x3_mma.cu, and explained there): block tiles of BM x BN,
// warp tiles of WM x WN made of m16n8 mma tiles, STAGES - 1 steps of BK in flight, 16-byte
// copies where the leading dimensions allow, split-K over gridDim.z. This file supplies the product
// of one k8 slice: round the fragments (unless the pipeline rounded the stage), one mma per tile.
//
// It serves the whole BLAS contract (C = act(alpha op(A) op(B) + beta C + bias), strided batches),
// compiled in rather than chosen at run time: `specializes` builds each configuration once per
// combination of transposes, alpha, beta, batch and epilogue that a problem asks for (up to 192
// builds, 16 with split K, whose beta and epilogue the launcher's pass over C applies), so the tuned plain build is the
// code without any of it (the same registers as before the contract, checked with `tiletune
// compile`), and each build pays only for what it serves. A transposed operand
// keeps its stored layout in shared memory (a transposed B read by ldmatrix, a transposed A by
// scalar loads), alpha, beta, the bias and the activation are applied at the store
// (tf32_mma_pipeline.h).
//
// tiletune: name tf32_mma
// tiletune: entry tf32_mma_gemm
// tiletune: precision tf32
// tiletune: param BM 64 128
// tiletune: param BN 64 128 256
// tiletune: param BK 16 32
// tiletune: param WM 32 64
// tiletune: param WN 32 64
// tiletune: param STAGES 3 4
// tiletune: param SPLIT_K 1 4 16
// Where the inputs are rounded to TF32: as each warp loads its fragments (0), or once per block
// in shared memory (1; tf32_mma_pipeline.h). Fewer roundings against a longer path to the mma.
// tiletune: param ROUND_SHARED 0 1
// The space is kept small because CI fuzzes every configuration on the CPU, where each mma is
// emulated lane by lane (a 128 x 128 configuration takes seconds per 40 cases); widen it here
// for a GPU-only search. Warps 2 down and 2 or 4 across, warp tiles BM / 2 x min(BN / 2, 64):
// 64 x 64 blocks of four 32 x 32 warp tiles, up to 128 x 256 of eight 64 x 64.
// tiletune: require BM / WM == 2 && WN == min(BN / 2, 64) && BN <= 2 * BM
// At most 160 KiB of shared memory.
// tiletune: require STAGES * BK * (BM + BN) * 4 <= 160 * 1024
// BK 32, 3 steps in flight, and 4 for the 128 x 128 tile (the one for large squares); BK 16
// (half the shared memory per stage) is left out. Split K (4 or 16 slices) only with 64 x 64.
// tiletune: require BK == 32 && (STAGES == 3 || BM * BN == 128 * 128)
// tiletune: require SPLIT_K == 1 || (BM * BN == 64 * 64 && STAGES == 3)
// Rounding in shared memory only without split K (the small tiles of thin shapes round little).
// tiletune: require ROUND_SHARED == 0 || SPLIT_K == 1
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

// One mma per tile on inputs rounded to TF32: in shared memory by the pipeline (ROUND_SHARED),
// else here as the fragments come.
struct RoundedProduct {
  static constexpr bool kRoundsStages = TT_ROUND_SHARED != 0;
  static constexpr bool kPrefetchesFragments = true;

  __device__ __forceinline__ static void multiply(WarpAccumulators& acc, WarpFragments& f) {
    if (!kRoundsStages) {
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
        for (int r = 0; r < 4; ++r) f.a[i][r] = tt_tf32_round(f.a[i][r]);
      }
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
#pragma unroll
        for (int r = 0; r < 2; ++r) f.b[j][r] = tt_tf32_round(f.b[j][r]);
      }
    }
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) tt_mma_m16n8k8_tf32(acc[i][j], f.a[i], f.b[j], acc[i][j]);
    }
  }
};

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32_mma_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K, int lda, int ldb, int ldc,
                  const __grid_constant__ tt_gemm_args args) {
  extern __shared__ float4 shared_tiles[];
  mma_gemm<RoundedProduct>(A, B, C, M, N, K, lda, ldb, ldc, args,
                           reinterpret_cast<float*>(shared_tiles));
}
