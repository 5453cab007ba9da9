// tf32_wgmma_tma: the SGEMM in TF32 on Hopper's wgmma with its tiles brought by the tensor memory
// accelerator (TMA), which also rounds them to TF32 on the way: one thread copies, two consumer
// warpgroups multiply. The other wgmma templates copy with cp.async or through registers and then
// round A's tile in shared memory, a pass that costs a third of the time at 4096^3 on an H100
// (kernels_src/PERFORMANCE.md): a TMA copy through a map of element type TF32 rounds each float to
// nearest (ties to even) as it lands, so neither A's tile nor B^T's fragments need rounding here.
// Zeros outside A and B come from the copies too (a box past M, N or K reads 0), so no copy is
// masked. TMA needs lda and ldb multiples of 4 floats: at other leading dimensions the launcher
// first copies the operand into rows that are (copy_unaligned in the tensor_map declarations; the
// copy is part of every timed launch), where cuBLAS and the register-path templates read in place.
//
// The tiles and their layout in shared memory, B^T's fragments and the epilogue are
// tf32_wgmma_tiles.h's (shared with the other wgmma templates, and explained there): C^T = B^T A^T,
// A's tile the shared operand in wgmma's 128-byte swizzle (the map's swizzle128 writes exactly
// that layout), B's tile rows of BN + 8 floats (the map's box is 8 columns wider than the block:
// the padding that keeps the fragment loads free of bank conflicts; the extra columns are read
// and never used).
//
// Hand-over, two mbarriers a stage (<tiletune/tensor_map.h>): FULL, which the producer arms with
// the stage's bytes (arrive.expect_tx) before it issues the stage's two copies, and the consumers
// wait on; EMPTY, at which every consumer thread arrives once its wgmma reading the stage are done,
// and which the producer waits on before it copies into the stage again. Step s uses stage
// s % STAGES in its phase s / STAGES: the consumers wait for FULL's phase of parity
// (s / STAGES) % 2, the producer for EMPTY's phase of the step before (s / STAGES - 1) % 2.
//
// tiletune: name tf32_wgmma_tma
// tiletune: entry tf32_wgmma_tma_gemm
// tiletune: precision tf32
// tiletune: arch sm_90a
// C rows per block (wgmma's N); its 128 columns are the two consumers' 64 each.
// tiletune: param BM 128 256
// tiletune: param STAGES 3 4 5 6
// Blocks take their tiles in groups of GROUP rows of tiles, down each column of the group before the
// next (1: row by row, the grid's own order): a wave of resident blocks then shares fewer panels of
// B, which matters once the operands outgrow the L2 (8192^3).
// tiletune: param GROUP 1 4 8 16
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM * 128 + 32 * 136 * 4) + 1024 <= 227 * 1024
// tiletune: tune_if BM <= 2 * max(M, 32)
// tiletune: tune_if GROUP == 1 || GROUP < ceil_div(M, BM)
// tiletune: tensor_map A tf32 swizzle128 copy_unaligned 32, BM
// tiletune: tensor_map B tf32 dense copy_unaligned 136, 32
// tiletune: block 384
// tiletune: grid ceil_div(N, 128), ceil_div(M, BM)
// tiletune: shared STAGES * (BM * 128 + 32 * 136 * 4) + 1024

#include <tiletune/async_copy.h>  // tf32_wgmma_tiles.h's copy helpers, unused here
#include <tiletune/tensor_map.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kStages = TT_STAGES, kGroup = TT_GROUP;
constexpr int kBN = 128;  // two consumer warpgroups of 64 columns
// tf32_wgmma_tiles.h's copy helpers are not used here (TMA copies); its tiles want these.
constexpr int kCopyThreads = 128;
constexpr bool kUnrollMaskedCopies = false;
constexpr int kThreads = 384;
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
static_assert(128 * kProducerRegisters + 256 * kConsumerRegisters <= 65536, "the register file");

#include "tf32_wgmma_tiles.h"

constexpr unsigned int kStageBytes = (kTileA + kTileB) * sizeof(float);

struct StageBarriers {
  unsigned long long full[kStages];
  unsigned long long empty[kStages];
};

// The block's tile of C in the grouped order: block id b (row-major over the grid) is in group
// b / (GROUP * tiles across); within its group, tiles go down a column of the group's rows (fewer
// in the last group) before the next column.
__device__ __forceinline__ BlockOperands grouped_block_operands(const float* A, const float* B,
                                                                int M, int N, int K, int lda,
                                                                int ldb) {
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  const int id = blockIdx.y * tiles_n + blockIdx.x;
  const int first_row = id / (kGroup * tiles_n) * kGroup;
  const int rows = min(tiles_m - first_row, kGroup), in_group = id % (kGroup * tiles_n);
  return {A, B, M, N, K, lda, ldb, (first_row + in_group % rows) * kBM, in_group / rows * kBN};
}

// The producer (one thread): arms and copies each step's stage once the consumers are done with
// the step it held before.
__device__ __forceinline__ void produce(const BlockOperands& op, float* shared, StageBarriers& bars,
                                        const tt_tensor_map* map_a, const tt_tensor_map* map_b) {
  const int steps = ceil_div(op.K, kBK);
  for (int step = 0; step < steps; ++step) {
    const int stage = step % kStages;
    if (step >= kStages) tt_mbarrier_wait(&bars.empty[stage], (step / kStages - 1) & 1);
    tt_mbarrier_arrive_expect_tx(&bars.full[stage], kStageBytes);
    tt_tensor_copy_2d(stage_tile_a(shared, step), map_a, step * kBK, op.m0, &bars.full[stage]);
    tt_tensor_copy_2d(stage_tile_b(shared, step), map_b, op.n0, step * kBK, &bars.full[stage]);
  }
}

// A consumer warpgroup: 64 columns of C (wg 0 or 1), all BM rows.
__device__ __forceinline__ void consume(const BlockOperands& op, float* __restrict__ C, int ldc,
                                        float* shared, StageBarriers& bars, int wg,
                                        int thread_in_wg) {
  const int steps = ceil_div(op.K, kBK);
  const int n_pair = fragment_columns(wg, thread_in_wg), t = thread_in_wg % 4;
  float acc[kBM / 2];
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) acc[i] = 0.0f;

  for (int step = 0; step < steps; ++step) {
    tt_mbarrier_wait(&bars.full[step % kStages], (step / kStages) & 1);
    const float* const as = stage_tile_a(shared, step);
    const float* const bs = stage_tile_b(shared, step);
    // Two wgmma groups of two k8 slices, each waited for (but the newest) before the next is
    // issued, so that a slice's register operands are rewritten only once its wgmma is done.
    issue_half_step<false>(acc, as, bs, 0, n_pair, t);
    tt_wgmma_wait<1>(acc);
    // Step - 1's wgmma are all done: its stage goes back to the producer.
    if (step >= 1) tt_mbarrier_arrive(&bars.empty[(step - 1) % kStages]);
    issue_half_step<false>(acc, as, bs, 1, n_pair, t);
    tt_wgmma_wait<1>(acc);
  }
  tt_wgmma_wait<0>(acc);
  store_tile_pairs(op, C, ldc, acc, n_pair, t);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    tf32_wgmma_tma_gemm(const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc,
                        const __grid_constant__ tt_tensor_map map_a,
                        const __grid_constant__ tt_tensor_map map_b) {
  extern __shared__ float4 shared_bytes[];
  __shared__ __align__(8) StageBarriers bars;
  float* const shared = tt_shared_align_1024(shared_bytes);
  const BlockOperands op = grouped_block_operands(A, B, M, N, K, lda, ldb);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tt_mbarrier_init(&bars.full[s], 1);
      tt_mbarrier_init(&bars.empty[s], 256);
    }
    tt_mbarrier_init_fence();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    tt_setmaxnreg_dec<kProducerRegisters>();
    if (threadIdx.x == 0) produce(op, shared, bars, &map_a, &map_b);
  } else {
    tt_setmaxnreg_inc<kConsumerRegisters>();
    consume(op, C, ldc, shared, bars, wg - 1, threadIdx.x % 128);
  }
}
