// tf32_wgmma_specialized: tf32_wgmma.cu's SGEMM in TF32 on Hopper's wgmma, with its warps given
// one job each. In tf32_wgmma every warp copies, rounds, waits at the block's barrier and issues
// wgmma, and at 8 warps per SM that chain is longer than the tensor time of a step
// (kernels_src/PERFORMANCE.md). Here a producer warpgroup issues the copies, rounds A's tile and
// hands each stage over; two consumer warpgroups only load B^T's fragments and issue wgmma. The
// 4-byte copies that odd leading dimensions need cost the producer alone. Measured on an H100, it
// is not faster than tf32_wgmma yet: the producers are the limit (PERFORMANCE.md says where).
//
// The tiles, their layout in shared memory, the copies, the rounding of A and the epilogue are
// tf32_wgmma_tiles.h's (shared with the other wgmma templates, and explained there):
// C^T = B^T A^T, A's tile the shared operand in wgmma's 128-byte swizzle, B^T's fragments the
// register operand.
//
// Hand-over. Two named barriers per stage (<tiletune/named_barrier.h>), all the block's threads
// counted: FULL, at which the producers arrive once the stage's copies have landed and its A is
// rounded and fenced, and the consumers wait; EMPTY, at which the consumers arrive once their wgmma
// reading the stage are done, and the producers wait before they copy into it again. The producers
// keep LAG steps of copies in flight behind the one they hand over: more time for the copies to
// land, fewer stages ready for the consumers (LAG = STAGES - 2 leaves none: the consumers free a
// stage one step late, once the wgmma of the next are issued, and one more would deadlock). They
// wait at EMPTY only for a stage used before, and the consumers arrive there only for a stage that
// will be used again, so that no barrier is left counting at the end.
//
// Registers. The launch gives each thread 65536 / threads (168 at 384 threads, 128 at 512); the
// producers give some back and the consumers take them (setmaxnreg), and ptxas allocates each
// role's code within its share. Without it ptxas serializes the consumers' wgmma (each waits for
// the one before: too few registers to keep the accumulators of two in flight).
//
// tiletune: name tf32_wgmma_specialized
// tiletune: entry tf32_wgmma_specialized_gemm
// tiletune: precision tf32
// tiletune: arch sm_90a
// C rows per block (wgmma's N); its 128 columns are the two consumers' 64 each.
// tiletune: param BM 128 256
// tiletune: param STAGES 3 4 5 6
// Steps of copies in flight behind the one handed over, and producer warpgroups.
// tiletune: param LAG 1 2
// tiletune: param PRODUCERS 1 2
// tiletune: require LAG <= STAGES - 2
// Two producers leave a consumer too few registers for BM 256's 128 accumulators. Of the rest, the
// configurations within 5% of the best at 4096^3 and 4095x4097x4093 on an H100 (PERFORMANCE.md):
// one producer lags behind two consumers of BM 128, and BM 256 is best with 4 stages, LAG 1.
// tiletune: require BM == 128 || PRODUCERS == 1
// tiletune: require BM == 256 ? STAGES == 4 && LAG == 1 : PRODUCERS == 2 && STAGES >= 4
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM * 128 + 32 * 136 * 4) + 1024 <= 227 * 1024
// tiletune: tune_if BM <= 2 * max(M, 32)
// tiletune: block 128 * (PRODUCERS + 2)
// tiletune: grid ceil_div(N, 128), ceil_div(M, BM)
// tiletune: shared STAGES * (BM * 128 + 32 * 136 * 4) + 1024

#include <tiletune/async_copy.h>
#include <tiletune/named_barrier.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kStages = TT_STAGES, kLag = TT_LAG, kProducers = TT_PRODUCERS;
constexpr int kBN = 128;  // two consumer warpgroups of 64 columns
constexpr int kCopyThreads = 128 * kProducers, kThreads = kCopyThreads + 256;
constexpr bool kUnrollMaskedCopies = false;  // 56 registers a producer thread
static_assert(kStages >= 3 && 2 * kStages <= 15, "two named barriers a stage, numbers 1 to 15");
static_assert(kLag >= 1 && kLag <= kStages - 2, "see Hand-over");
constexpr int kProducerRegisters = 56, kConsumerRegisters = kProducers == 1 ? 224 : 200;
static_assert(kCopyThreads * kProducerRegisters + 256 * kConsumerRegisters <= 65536,
              "the register file");

#include "tf32_wgmma_tiles.h"

__device__ __forceinline__ unsigned int full_barrier(int step) { return 1 + step % kStages; }
__device__ __forceinline__ unsigned int empty_barrier(int step) {
  return 1 + kStages + step % kStages;
}

// A producer thread (of kCopyThreads): copies step after step, and hands each over LAG steps later.
template <bool Vectors>
__device__ __forceinline__ void produce(const BlockOperands& op, float* shared, int tid) {
  const StageCopies<Vectors> copies(op, shared, tid);
  for (int step = 0; step < copies.steps + kLag; ++step) {
    if (step < copies.steps) {
      // The consumers are done with the step this stage held before.
      if (step >= kStages) tt_bar_sync(empty_barrier(step), kThreads);
      copies.copy(step);
    }
    tt_cp_async_commit();  // empty past the end: the wait below always counts kLag groups
    const int landed = step - kLag;
    if (landed >= 0) {
      tt_cp_async_wait<kLag>();
      copies.round_own_copies(landed);
      tt_fence_proxy_async();
      tt_bar_arrive(full_barrier(landed), kThreads);
    }
  }
}

// A consumer warpgroup: 64 columns of C (wg 0 or 1), all BM rows.
__device__ __forceinline__ void consume(const BlockOperands& op, float* __restrict__ C, int ldc,
                                        float* shared, int wg, int thread_in_wg) {
  const int steps = ceil_div(op.K, kBK);
  const int n_pair = fragment_columns(wg, thread_in_wg), t = thread_in_wg % 4;
  float acc[kBM / 2];
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) acc[i] = 0.0f;

  for (int step = 0; step < steps; ++step) {
    tt_bar_sync(full_barrier(step), kThreads);
    const float* const as = stage_tile_a(shared, step);
    const float* const bs = stage_tile_b(shared, step);
    // Two wgmma groups of two k8 slices, each waited for (but the newest) before the next is
    // issued, so that a slice's register operands are rewritten only once its wgmma is done.
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      issue_half_step(acc, as, bs, half, n_pair, t);
      tt_wgmma_wait<1>(acc);
      // Step - 1's wgmma are all done: its stage goes back to the producer, if it copies again.
      if (half == 0 && step >= 1 && step - 1 + kStages < steps) {
        tt_bar_arrive(empty_barrier(step - 1), kThreads);
      }
    }
  }
  tt_wgmma_wait<0>(acc);
  store_tile(op, C, ldc, acc, n_pair, t);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    tf32_wgmma_specialized_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                int ldc) {
  extern __shared__ float4 shared_bytes[];
  float* const shared = tt_shared_align_1024(shared_bytes);
  const BlockOperands op = block_operands(A, B, M, N, K, lda, ldb);
  const int wg = threadIdx.x / 128;
  if (wg < kProducers) {
    tt_setmaxnreg_dec<kProducerRegisters>();
    if (vector_copies(A, B, lda, ldb)) {
      produce<true>(op, shared, threadIdx.x);
    } else {
      produce<false>(op, shared, threadIdx.x);
    }
  } else {
    tt_setmaxnreg_inc<kConsumerRegisters>();
    consume(op, C, ldc, shared, wg - kProducers, threadIdx.x % 128);
  }
}
