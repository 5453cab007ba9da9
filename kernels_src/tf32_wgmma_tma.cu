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
// The BLAS contract (<tiletune/gemm_contract.h>): op_b, alpha, beta and the epilogue are compiled
// in (`specializes`), one build per combination; the plain build, which defines none of their
// macros, is the code before the contract, instruction for instruction (its cubins' text compared;
// the contract's tt_gemm_args comes after the tensor maps, so that their offsets do not move).
// - op_b = t (B stored N x K) is the layout TF32 wgmma wants: K-major. B's map is then over the
//   stored N x K matrix (`tensor_map B op_b=t`: K along its rows, a box of 32 k by 128 n, in the
//   128-byte swizzle, as A's), and wgmma reads both operands from shared memory: each consumer
//   warpgroup's 64 rows of that tile by a descriptor, as A's tile. No fragments are loaded, and a
//   step's four k8 slices are one group (on an H200, 8192x768x3072 nt took 110.9 us against 124.9
//   with B^T's fragments loaded into registers). A lane's two columns of C are then 8 apart, not
//   adjacent, so its stores are of one float (store_built). The stage's bytes shrink by B's
//   padding; the stages keep the plain build's places. Its blocks are persistent (kPersistent),
//   and with BM <= 128 its two consumer warpgroups take whole tiles in turn (kPingPong).
// - op_a = t with op_b = t (A stored K x M, B stored N x K) is the plain product of the swapped
//   operands, C^T = B A with B (N x K, K-major) as the
//   shared operand and A (K x M, M-major) as B^T's was: the block's BM rows are C's columns and its
//   128 columns C's rows (the grid swaps M and N), the maps are of the stored matrices with the
//   plain build's boxes (`tensor_map A op_a=t` is the plain B's, `B op_b=t` then A's, 32 x BM),
//   and store_swapped writes the tile transposed: a lane's two rows of the swapped tile are one
//   8-byte word of C's row.
// - op_a = t alone (A stored K x M, B as the plain build's): neither product has a K-major operand
//   for wgmma's shared one, so the producer warpgroup transposes A's tile. TMA brings it as it is
//   stored (`tensor_map A op_a=t`: a box of BM m by 32 k, rounded to TF32) into one of two raw
//   buffers after the stages; the 128 producer threads write it into the stage in A's swizzled
//   layout (transpose_raw_tile), fence their writes for wgmma's proxy and arrive at the stage's
//   FULL barrier (which counts them all; thread 0 also arms it for B's copy). A named barrier
//   among them hands the raw buffer back to thread 0, which brings the tile two steps on into it.
//   The raw buffers take 2 x 32 x BM floats more (`shared`, and `require` leaves the build out of
//   the configurations that do not fit).
// - alpha, beta (C read only where beta != 0), the bias (N floats, by column) and ReLU or GELU are
//   applied once per element of C as it is stored (tf32_wgmma_tiles.h's store_built, the plain
//   build's pair stores and masks); the main loop is the plain build's.
//
// Split K (SPLIT_WAVES > 0), for shapes whose tiles are too few to fill the GPU (decoding's few
// rows of C, a long K): the grid's z slices K's steps, as many slices as make SPLIT_WAVES waves of
// the tiles' blocks over the multiprocessors (one block each fits) and none shorter than 8 steps,
// so the split follows the shape and the GPU rather than being a fixed count. Every slice adds
// alpha times its partial product into C (add_partial_tile), which the launcher clears first
// (zero_output); the launcher applies beta and the epilogue in a pass after it. Where the tiles already fill
// the waves the grid has one slice and the block stores as the plain build does.
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
// C rows per block (wgmma's N); its 128 columns are the two consumers' 64 each. 64 is for C's of
// few rows (decoding), where a taller tile would multiply mostly rows past M.
// tiletune: param BM 64 128 256
// tiletune: param STAGES 3 4 5 6
// Blocks take their tiles in groups of GROUP rows of tiles, down each column of the group before the
// next (1: row by row, the grid's own order): a wave of resident blocks then shares fewer panels of
// B, which matters once the operands outgrow the L2 (8192^3).
// tiletune: param GROUP 1 4 8 16
// Waves of blocks K's slices make (0: K is not split; above).
// tiletune: param SPLIT_WAVES 0 1 2
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM * 128 + 32 * 136 * 4) + (OP_A && !OP_B) * 256 * BM + 1024 <= 227 * 1024
// The short tiles and the splits serve thin shapes: in their own tile order, at two stage counts.
// tiletune: require BM > 64 || (GROUP == 1 && STAGES % 2 == 0)
// tiletune: require SPLIT_WAVES == 0 || (GROUP == 1 && STAGES % 2 == 0)
// (The tuning limits are the plain build's: a swapped build's BM runs along N.)
// tiletune: tune_if BM <= 2 * max(M, 32)
// Over two rows of tiles or more, every GROUP from the rows of tiles up is one order, down each
// whole column, so that the blocks reading a panel of B run together and it comes from memory
// once: the first such GROUP is tuned, the larger ones not. On an H200 that order took
// 256x8192x4096 from 71.9-76.9 to 63.4-65.2 us, 384x16384x2048 from 121-123 to 105 and
// 1024x12288x4096 from 277 to 262 (kernels_src/PERFORMANCE.md).
// tiletune: tune_if GROUP == 1 || (GROUP == 4 && ceil_div(M, BM) > 1) || GROUP < 2 * ceil_div(M, BM)
// (A split where the tiles nearly fill the waves, or K is short, only adds the clearing of C.)
// tiletune: tune_if SPLIT_WAVES == 0 || (ceil_div(M, BM) * ceil_div(N, 128) <= 64 * SPLIT_WAVES && K >= 512)
// A split of 256-row tiles only at a long K: on an H200 it took 0.79x the time of every other
// configuration at 512x4096x11008, and lost by 1.09x to 1.97x at the 17 other shapes it was timed
// at, all of K 4608 or less; the performance model, which saw it at 4 suite shapes, chose it
// where it lost by up to 1.5x. Outside this limit it is neither tuned nor chosen.
// tiletune: tune_if SPLIT_WAVES == 0 || BM < 256 || K >= 8192
// tiletune: supports op_a op_b alpha beta epilogue
// tiletune: specializes op_a op_b alpha beta epilogue
// tiletune: tensor_map A tf32 swizzle128 copy_unaligned 32, BM
// tiletune: tensor_map A op_a=t tf32 dense copy_unaligned OP_B ? 136 : BM, 32
// tiletune: tensor_map B tf32 dense copy_unaligned 136, 32
// tiletune: tensor_map B op_b=t tf32 swizzle128 copy_unaligned 32, OP_A ? BM : 128
// tiletune: block 384
// (The op_b=t build's blocks are persistent where K is not split: SM_COUNT of them at most.)
// tiletune: grid OP_B && !OP_A && !SPLIT_WAVES ? min(ceil_div(N, 128) * ceil_div(M, BM), SM_COUNT) : ceil_div(OP_A && OP_B ? M : N, 128), OP_B && !OP_A && !SPLIT_WAVES ? 1 : ceil_div(OP_A && OP_B ? N : M, BM), SPLIT_WAVES ? max(min(SPLIT_WAVES * SM_COUNT / (ceil_div(M, BM) * ceil_div(N, 128)), ceil_div(K, 256)), 1) : 1
// tiletune: zero_output SPLIT_WAVES > 0 && min(SPLIT_WAVES * SM_COUNT / (ceil_div(M, BM) * ceil_div(N, 128)), ceil_div(K, 256)) > 1
// tiletune: shared STAGES * (BM * 128 + 32 * 136 * 4) + (OP_A && !OP_B) * 256 * BM + 1024

#include <tiletune/async_copy.h>  // tf32_wgmma_tiles.h's copy helpers, unused here
#include <tiletune/gemm_contract.h>
#include <tiletune/named_barrier.h>
#include <tiletune/tensor_map.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kStages = TT_STAGES, kGroup = TT_GROUP, kSplitWaves = TT_SPLIT_WAVES;
constexpr int kBN = 128;  // two consumer warpgroups of 64 columns
// tf32_wgmma_tiles.h's copy helpers are not used here (TMA copies); its tiles want these.
constexpr int kCopyThreads = 128;
constexpr bool kUnrollMaskedCopies = false;
constexpr int kThreads = 384;
// op_a = t with op_b = t: the swapped product; op_b = t alone: B's tile K-major; op_a = t alone:
// A's tile transposed by the producers (above).
constexpr bool kSwapped = TT_OP_A && TT_OP_B;
constexpr bool kTransposedB = TT_OP_B && !TT_OP_A;
constexpr bool kTransposedA = TT_OP_A && !TT_OP_B;
// The op_b = t build's blocks are persistent (unless K is split): SM_COUNT blocks at most, each
// taking every gridDim.x-th tile of the grouped order in turn, so that its producer copies the
// next tile's first steps while the consumers finish and store the tile before. On an H200 that
// took 8192x3072x768 nt from 122.7 to 118.5 us; the plain build, whose register operand's loads
// leave the producer less to hide, lost 1-2% at 4096^3 and 8192x3072x768 (kernels_src/PERFORMANCE.md).
constexpr bool kPersistent = kTransposedB && !kSplitWaves;
// Ping-pong, where a whole tile's accumulators fit one warpgroup (BM <= 128): each consumer
// warpgroup multiplies whole tiles (both 64-column halves of B's tile), the two take the block's
// tiles in turn, and one multiplies while the other stores, as cuBLAS's Hopper kernel does at
// 8192x3072x768 nt (Nsight Compute: 128 x 128 tiles, a warpgroup each). A warpgroup starts a
// tile's steps only once the other has waited for all of its tile's stages (named barriers 2 and
// 3): the tensor cores go to one at a time, and no warpgroup waits for a stage more than a phase
// ahead of the last one it saw complete. On an H200 this took 8192x3072x768 nt from 120.5 us
// (256-row tiles, both warpgroups on one) to 113.2. 256-row tiles keep the schedule of both
// warpgroups on one tile, and so does a launch whose blocks do not all have two tiles or whose
// tiles have more than 64 steps of K (`ping_pong` in the kernel).
constexpr bool kPingPong = kPersistent && kBM <= 128;
// A build whose producers transpose A's tile gives them registers for a 4 x 4 block and its
// addresses (at 40 they spilled), from the consumers.
constexpr int kProducerRegisters = kTransposedA ? 56 : 40;
constexpr int kConsumerRegisters = kTransposedA ? 224 : 232;
// setmaxnreg moves registers within the block's allocation, 168 a thread at 384 threads (65536 /
// 384, in multiples of 8): a consumer's increase past it waits forever.
static_assert(128 * kProducerRegisters + 256 * kConsumerRegisters <= kThreads * (65536 / kThreads / 8 * 8),
              "the block's registers");

#include "tf32_wgmma_tiles.h"

// A transposed B's tile (op_b = t: B stored N x K) is BN rows of BK floats in the 128-byte swizzle,
// A's layout (offset_a), 1024 floats fewer than the plain build's padded rows; it takes the plain
// build's place in the stage, so that the stages lie where they do there.
constexpr int kTileBytesB = (kTransposedB ? kBN * kBK : kTileB) * sizeof(float);
static_assert(kBN * kBK <= kTileB, "a transposed B's tile fits the plain one's place");
constexpr unsigned int kStageBytes = kTileA * sizeof(float) + kTileBytesB;
// A transposed A's tile as TMA brings it (op_a = t alone): BK rows of BM floats, in one of two raw
// buffers after the stages.
constexpr int kRawBuffers = 2, kRawTile = kBK * kBM;
// What a build stores: alpha, beta, the bias or the activation (else acc as it is).
constexpr bool kBuiltEpilogue = TT_ALPHA || TT_BETA || TT_EPILOGUE != TT_EPILOGUE_NONE;

struct StageBarriers {
  unsigned long long full[kStages];
  unsigned long long empty[kStages];
  unsigned long long raw_full[kRawBuffers];  // a raw buffer's copy landed (kTransposedA)
};

// The steps of K (kBK each) this block multiplies: all of them, or under a split (kSplitWaves)
// its slice, gridDim.z slices of whole steps (the last ones may be empty).
struct KSteps {
  int first, count;
};

__device__ __forceinline__ KSteps k_steps(int K) {
  const int steps = ceil_div(K, kBK);
  if (!kSplitWaves) return {0, steps};
  const int per_slice = ceil_div(steps, (int)gridDim.z);
  const int first = min(steps, (int)blockIdx.z * per_slice);
  return {first, min(steps - first, per_slice)};
}

// Tile `id` of C in the grouped order: tile id (row-major over the tiles) is in group
// id / (GROUP * tiles across); within its group, tiles go down a column of the group's rows (fewer
// in the last group) before the next column.
__device__ __forceinline__ BlockOperands grouped_block_operands(int id, const float* A,
                                                                const float* B, int M, int N,
                                                                int K, int lda, int ldb) {
  const int tiles_n = ceil_div(N, kBN), tiles_m = ceil_div(M, kBM);
  const int first_row = id / (kGroup * tiles_n) * kGroup;
  const int rows = min(tiles_m - first_row, kGroup), in_group = id % (kGroup * tiles_n);
  return {A, B, M, N, K, lda, ldb, (first_row + in_group % rows) * kBM, in_group / rows * kBN};
}

// The producer (one thread): arms and copies each step's stage once the consumers are done with
// the step it held before. `map_a` is of the shared operand (A's, or B's swapped) and `map_b` of
// the register one.
// `ks`: the block's steps of K; `done`: the steps of its tiles before this one (a persistent
// block's stages and their phases run on from tile to tile).
__device__ __forceinline__ void produce(const BlockOperands& op, float* shared, StageBarriers& bars,
                                        const tt_tensor_map* map_a, const tt_tensor_map* map_b,
                                        KSteps ks, int done) {
  for (int s = done; s < done + ks.count; ++s) {
    const int stage = s % kStages, k = (ks.first + s - done) * kBK;
    if (s >= kStages) tt_mbarrier_wait(&bars.empty[stage], (s / kStages - 1) & 1);
    tt_mbarrier_arrive_expect_tx(&bars.full[stage], kStageBytes);
    tt_tensor_copy_2d(stage_tile_a(shared, s), map_a, k, op.m0, &bars.full[stage]);
    if (kTransposedB) {  // B stored N x K: k along the map's rows, n across them
      tt_tensor_copy_2d(stage_tile_b(shared, s), map_b, k, op.n0, &bars.full[stage]);
    } else {
      tt_tensor_copy_2d(stage_tile_b(shared, s), map_b, op.n0, k, &bars.full[stage]);
    }
  }
}

// A's tile of a step from its raw copy (kTransposedA): the raw tile holds element (m, k) at
// k * BM + m, A's tile at offset_a(m, k). Producer `tid` (of 128), j = tid % 8 and g = tid / 8,
// takes in each pass the 4 x 4 block of k-chunk j and m-chunk (g + 16 pass + j) % (BM / 4): four
// 16-byte loads of its raw rows, four 16-byte stores into A's rows. The 8 threads of a 16-byte
// access's phase (one g) load 8 consecutive m-chunks and store chunks j ^ (m % 8) that differ
// (m % 8 alternates between two values 4 apart as j does): no bank conflict either way.
__device__ __forceinline__ void transpose_raw_tile(const float* raw, float* as, int tid) {
  const int j = tid % 8, g = tid / 8;
#pragma unroll 1  // a pass at a time: the producers' few registers hold one block
  for (int pass = 0; pass < kBM / 64; ++pass) {
    const int m = 4 * ((g + 16 * pass + j) % (kBM / 4)), k = 4 * j;
    float4 rows[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) rows[i] = *reinterpret_cast<const float4*>(raw + (k + i) * kBM + m);
    *reinterpret_cast<float4*>(as + offset_a(m, k)) = make_float4(rows[0].x, rows[1].x, rows[2].x, rows[3].x);
    *reinterpret_cast<float4*>(as + offset_a(m + 1, k)) = make_float4(rows[0].y, rows[1].y, rows[2].y, rows[3].y);
    *reinterpret_cast<float4*>(as + offset_a(m + 2, k)) = make_float4(rows[0].z, rows[1].z, rows[2].z, rows[3].z);
    *reinterpret_cast<float4*>(as + offset_a(m + 3, k)) = make_float4(rows[0].w, rows[1].w, rows[2].w, rows[3].w);
  }
}

// The producer warpgroup of a build that transposes A's tile (kTransposedA), every thread of it:
// each step, once the consumers are done with its stage, A's tile from the raw buffer into the
// stage, fenced for wgmma and arrived at FULL; thread 0 arms FULL for B's copy and issues it, and
// once every producer is done with the raw buffer, brings the tile kRawBuffers steps on into it.
__device__ __forceinline__ void produce_transposing(const BlockOperands& op, float* shared,
                                                    StageBarriers& bars, const tt_tensor_map* map_a,
                                                    const tt_tensor_map* map_b, KSteps ks, int tid) {
  const int steps = ks.count;
  float* const raw = shared + kStages * (kTileA + kTileB);
  const auto copy_raw = [&](int step) {
    const int r = step % kRawBuffers;
    tt_mbarrier_arrive_expect_tx(&bars.raw_full[r], kRawTile * sizeof(float));
    tt_tensor_copy_2d(raw + r * kRawTile, map_a, op.m0, (ks.first + step) * kBK, &bars.raw_full[r]);
  };
  if (tid == 0) {
    for (int step = 0; step < kRawBuffers && step < steps; ++step) copy_raw(step);
  }
  for (int step = 0; step < steps; ++step) {
    const int stage = step % kStages, r = step % kRawBuffers;
    if (step >= kStages) tt_mbarrier_wait(&bars.empty[stage], (step / kStages - 1) & 1);
    tt_mbarrier_wait(&bars.raw_full[r], (step / kRawBuffers) & 1);
    transpose_raw_tile(raw + r * kRawTile, stage_tile_a(shared, step), tid);
    tt_fence_proxy_async();  // the tile's stores, visible to the consumers' wgmma
    if (tid == 0) {
      tt_mbarrier_arrive_expect_tx(&bars.full[stage], kTileB * sizeof(float));
      tt_tensor_copy_2d(stage_tile_b(shared, step), map_b, op.n0, (ks.first + step) * kBK,
                        &bars.full[stage]);
    } else {
      tt_mbarrier_arrive(&bars.full[stage]);
    }
    tt_bar_sync(1, 128);  // every producer has read raw buffer r
    if (tid == 0 && step + kRawBuffers < steps) copy_raw(step + kRawBuffers);
  }
}

// The lane's two columns of the block's tile of C (`first` and first + kColumnStep) and its rows
// 8j + 2t + r: where B^T's fragments come from registers, adjacent columns (fragment_columns);
// where wgmma reads B's K-major tile (op_b = t), its row r is row r of the warpgroup's 64 of the
// tile, so the lane (g = lane / 4 of warp w) holds columns 16w + g and 16w + g + 8 of them.
// Either way, acc[4j + 2c + r] is the element of column first + c kColumnStep and row 8j + 2t + r.
constexpr int kColumnStep = kTransposedB ? 8 : 1;

__device__ __forceinline__ int first_column(int wg, int thread_in_wg) {
  return kTransposedB ? k_major_fragment_columns(wg, thread_in_wg)
                      : fragment_columns(wg, thread_in_wg);
}

// The store of a swapped build (op_a = t): `op` is the swapped product's, whose rows (m0 + 8j + 2t
// + r) are C's columns and whose columns (n0 + n_pair + c) C's rows, so acc[4j + 2c + r] is C's
// element (n0 + n_pair + c, m0 + 8j + 2t + r): a lane's r = 0, 1 are adjacent in C's row, one
// 8-byte word where ldc and C allow and both exist. Each element as store_built's, the bias by
// C's column.
__device__ __forceinline__ void store_swapped(const BlockOperands& op, float* __restrict__ C,
                                              int ldc, const float (&acc)[kBM / 2], int n_pair,
                                              int t, const tt_gemm_args& args) {
  const int cols = op.M - op.m0, rows = op.N - op.n0;  // C's, from the block's corner
  const bool aligned = ldc % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    if (n_pair + c >= rows) continue;
    float* const row = C + (size_t)(op.n0 + n_pair + c) * ldc + op.m0;
#pragma unroll
    for (int j = 0; j < kBM / 8; ++j) {
      const int col = 8 * j + 2 * t;
      if (col >= cols) continue;
      const bool both = col + 1 < cols, pair = aligned && both;
      float* const out = row + col;
      float2 c0 = make_float2(0.0f, 0.0f);
      if (TT_BETA) {
        if (pair) {
          c0 = *reinterpret_cast<const float2*>(out);
        } else {
          c0.x = out[0];
          if (both) c0.y = out[1];
        }
      }
      const float e0 = tt_built_epilogue(acc[4 * j + 2 * c], &c0.x, op.m0 + col, args);
      const float e1 = both ? tt_built_epilogue(acc[4 * j + 2 * c + 1], &c0.y, op.m0 + col + 1, args)
                            : 0.0f;
      if (pair) {
        *reinterpret_cast<float2*>(out) = make_float2(e0, e1);
      } else {
        out[0] = e0;
        if (both) out[1] = e1;
      }
    }
  }
}

// A slice of K's partial product added into C (a split: the launcher cleared C), alpha times it,
// one atomic add an element. The tile's element (row m0 + 8j + 2t + r, column n0 + first + c
// kColumnStep) is acc[4j + 2c + r] (first_column), at that place in C or, in a swapped build, at
// the transposed one (store_swapped's).
__device__ __forceinline__ void add_partial_tile(const BlockOperands& op, float* __restrict__ C,
                                                 int ldc, const float (&acc)[kBM / 2], int first,
                                                 int t, const tt_gemm_args& args) {
  const int rows = op.M - op.m0, cols = op.N - op.n0;
#pragma unroll
  for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = 8 * j + 2 * t + r;
      if (row >= rows) continue;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int col = first + c * kColumnStep;
        if (col >= cols) continue;
        const float v = acc[4 * j + 2 * c + r];
        const size_t at = kSwapped ? (size_t)(op.n0 + col) * ldc + op.m0 + row
                                   : (size_t)(op.m0 + row) * ldc + op.n0 + col;
        atomicAdd(C + at, TT_ALPHA ? args.alpha * v : v);
      }
    }
  }
}

// A consumer warpgroup's share of a tile: 64 columns of C (wg 0 or 1) and all BM rows or, in
// ping-pong, the whole tile (both halves of B's tile, acc[h] for half h), over the block's `steps`
// steps of K (`done`: those of its tiles before this one, as for produce). In ping-pong
// `wait_turn` and `pass_turn` order its steps after the other warpgroup's tile before it and
// before its tile after (kPingPong's named barriers).
template <bool PingPong, class WaitTurn, class PassTurn>
__device__ __forceinline__ void consume(const BlockOperands& op, float* __restrict__ C, int ldc,
                                        float* shared, StageBarriers& bars, int wg,
                                        int thread_in_wg, const tt_gemm_args& args, int steps,
                                        int done, const WaitTurn& wait_turn,
                                        const PassTurn& pass_turn) {
  constexpr int kHalves = PingPong ? 2 : 1;
  const int first = first_column(wg, thread_in_wg), t = thread_in_wg % 4;
  float acc[kHalves][kBM / 2];
#pragma unroll
  for (int h = 0; h < kHalves; ++h) {
#pragma unroll
    for (int i = 0; i < kBM / 2; ++i) acc[h][i] = 0.0f;
  }

  wait_turn();
  for (int step = 0, s = done; step < steps; ++step, ++s) {
    tt_mbarrier_wait(&bars.full[s % kStages], (s / kStages) & 1);
    const float* const as = stage_tile_a(shared, s);
    const float* const bs = stage_tile_b(shared, s);
    if (kTransposedB) {
      // Both operands in shared memory: the step's four k8 slices (of each half) one group, the
      // step before's waited for.
      tt_wgmma_fence();
#pragma unroll
      for (int slice = 0; slice < 4; ++slice) {
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
          const int half = PingPong ? h : wg;  // which 64 rows of B's tile (C's columns)
          tt_wgmma_tf32_shared<kBM>(acc[h], tt_wgmma_descriptor(bs + 64 * half * kBK + 8 * slice),
                                    tt_wgmma_descriptor(as + 8 * slice));
        }
      }
      tt_wgmma_commit();
#pragma unroll
      for (int h = 0; h < kHalves; ++h) tt_wgmma_wait<1>(acc[h]);
    } else {
      // Two wgmma groups of two k8 slices, each waited for (but the newest) before the next is
      // issued, so that a slice's register operands are rewritten only once its wgmma is done.
      issue_half_step<false>(acc[0], as, bs, 0, first, t);
      tt_wgmma_wait<1>(acc[0]);
    }
    // Step - 1's wgmma are all done: its stage goes back to the producer.
    if (step >= 1) tt_mbarrier_arrive(&bars.empty[(s - 1) % kStages]);
    if (!kTransposedB) {
      issue_half_step<false>(acc[0], as, bs, 1, first, t);
      tt_wgmma_wait<1>(acc[0]);
    }
  }
  pass_turn();
#pragma unroll
  for (int h = 0; h < kHalves; ++h) tt_wgmma_wait<0>(acc[h]);
  // The tile's last stage goes back too: a persistent block's next tile uses it.
  if (kPersistent && steps > 0) tt_mbarrier_arrive(&bars.empty[(done + steps - 1) % kStages]);
#pragma unroll
  for (int h = 0; h < kHalves; ++h) {
    const int columns = PingPong ? first_column(h, thread_in_wg) : first;
    if (kSplitWaves && gridDim.z > 1) {
      add_partial_tile(op, C, ldc, acc[h], columns, t, args);
    } else if (kSwapped) {
      store_swapped(op, C, ldc, acc[h], columns, t, args);
    } else if (kBuiltEpilogue || kTransposedB) {
      store_built<kColumnStep>(op, C, ldc, acc[h], columns, t, args);
    } else {
      store_tile_pairs(op, C, ldc, acc[h], columns, t);
    }
  }
}

// The block's first tile: its own, or (persistent) the first of every gridDim.x-th.
__device__ __forceinline__ int first_tile() {
  return kPersistent ? blockIdx.x : blockIdx.y * gridDim.x + blockIdx.x;
}

// work(operands(tile), done, j) for the block's j-th tiles, j = first, first + every, ... (one tile,
// j = 0, but where persistent), `done` the steps of the tiles before it.
template <class Operands, class Work>
__device__ __forceinline__ void for_each_tile(int tiles, int steps, const Operands& operands,
                                              const Work& work, int first = 0, int every = 1) {
  if (kPersistent) {
    for (int j = first; first_tile() + j * gridDim.x < tiles; j += every) {
      work(operands(first_tile() + j * gridDim.x), j * steps, j);
    }
  } else {
    work(operands(first_tile()), 0, 0);
  }
}

// A consumer warpgroup's tiles: each of the block's (both warpgroups on each) or, in ping-pong,
// tiles j = w, w + 2, ..., tile j's steps after tile j - 1's (barrier 2 + w, at which the other
// warpgroup arrives when it has a tile after).
template <bool PingPong, class Operands>
__device__ __forceinline__ void consume_tiles(int tiles, KSteps ks, const Operands& operands,
                                              float* __restrict__ C, int ldc, float* shared,
                                              StageBarriers& bars, int w, const tt_gemm_args& args) {
  for_each_tile(tiles, ks.count, operands, [&](const BlockOperands& op, int done, int j) {
    const bool next = first_tile() + (j + 1) * gridDim.x < tiles;
    consume<PingPong>(op, C, ldc, shared, bars, w, threadIdx.x % 128, args, ks.count, done,
                      [&] { if (PingPong && j > 0) tt_bar_sync(2 + w, 256); },
                      [&] { if (PingPong && next) tt_bar_arrive(3 - w, 256); });
  }, PingPong ? w : 0, PingPong ? 2 : 1);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    tf32_wgmma_tma_gemm(const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc,
                        const __grid_constant__ tt_tensor_map map_a,
                        const __grid_constant__ tt_tensor_map map_b, const tt_gemm_args args) {
  extern __shared__ float4 shared_bytes[];
  __shared__ __align__(8) StageBarriers bars;
  float* const shared = tt_shared_align_1024(shared_bytes);
  const KSteps ks = k_steps(K);
  if (kSplitWaves && gridDim.z > 1 && ks.count == 0) return;  // an empty slice adds nothing
  // The swapped build multiplies B (N x K) by A (K x M) into C^T (N x M).
  const int tiles = ceil_div(kSwapped ? M : N, kBN) * ceil_div(kSwapped ? N : M, kBM);
  // Ping-pong only where every block has two tiles or more: with one, a warpgroup would idle
  // (on an H200, 17x33x65 took 1.16x as long, 1024^3 with 128-row tiles 1.05x). And only where
  // a tile has at most 64 steps of K: the store it hides is then a larger share than what one
  // warpgroup's wgmma at a time costs (8192x768x3072 nt, 96 steps: 106.6-108.8 us without it,
  // 110.4-111.1 with; 8192x3072x1536, 48 steps: 211.9-213.8 with, 214.5-214.7 without).
  const bool ping_pong = kPingPong && tiles >= 2 * (int)gridDim.x && ks.count <= 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tt_mbarrier_init(&bars.full[s], kTransposedA ? 128 : 1);
      tt_mbarrier_init(&bars.empty[s], ping_pong ? 128 : 256);
    }
    for (int r = 0; r < kRawBuffers; ++r) tt_mbarrier_init(&bars.raw_full[r], 1);
    tt_mbarrier_init_fence();
  }
  __syncthreads();
  const auto operands = [&](int tile) {
    return kSwapped ? grouped_block_operands(tile, B, A, N, M, K, ldb, lda)
                    : grouped_block_operands(tile, A, B, M, N, K, lda, ldb);
  };
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    tt_setmaxnreg_dec<kProducerRegisters>();
    if (kTransposedA) {
      produce_transposing(operands(first_tile()), shared, bars, &map_a, &map_b, ks, threadIdx.x);
    } else if (threadIdx.x == 0) {
      for_each_tile(tiles, ks.count, operands, [&](const BlockOperands& op, int done, int) {
        produce(op, shared, bars, kSwapped ? &map_b : &map_a, kSwapped ? &map_a : &map_b, ks, done);
      });
    }
  } else {
    tt_setmaxnreg_inc<kConsumerRegisters>();
    if (ping_pong) {
      consume_tiles<kPingPong>(tiles, ks, operands, C, ldc, shared, bars, wg - 1, args);
    } else {
      consume_tiles<false>(tiles, ks, operands, C, ldc, shared, bars, wg - 1, args);
    }
  }
}
