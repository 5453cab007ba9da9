// What tf32_mma.cu and tf32x3_mma.cu share: the block and warp tiling, the shared-memory layout,
// the cp.async pipeline and the epilogue of an SGEMM on the tensor cores' m16n8k8 TF32 mma. The
// including template declares the parameters (BM, BN, BK, WM, WN, STAGES, SPLIT_K) and supplies
// the product of one k-slice of fragments (`Product`): how the FP32 inputs become TF32 operands,
// either once per stage in shared memory (Product::kRoundsStages) or per fragment.
//
// Tiling. A block computes a BM x BN tile of C, walking its share of K in steps of BK. Its warps
// split that tile into warp tiles of WM x WN, each a grid of (WM / 16) x (WN / 8) m16n8 mma tiles
// whose FP32 accumulators stay in registers: per k8 slice a warp loads WM / 16 A fragments and
// WN / 8 B fragments from shared memory and issues (WM / 16) (WN / 8) mma, each fragment reused
// across a row or a column of mma tiles.
//
// Shared memory. Both tiles keep global memory's orientation, so that a 16-byte cp.async moves
// four consecutive floats of a row: A's tile is As[m][k] (BK floats a row), B's is Bs[k][n] (BN
// floats a row), each row made of 4-float groups whose place in the row is XOR-swizzled:
//  - A: group k / 4 of row m sits at (k / 4) ^ swizzle_a(m), swizzle_a(m) = (m / R) % (BK / 4),
//    R = 32 / BK the rows that share the 32 banks (1 for BK 32, 2 for BK 16). A's fragments are
//    loaded with ldmatrix (tt_ldmatrix_x4: four 8 x 4 matrices, a[0] to a[3] of the fragment, one
//    instruction instead of four loads): each matrix is 8 rows of one group, which the swizzle
//    puts on 8 distinct groups of 4 banks.
//  - B: group n / 4 of row k sits at (n / 4) ^ swizzle_b(k), swizzle_b(k) = 2 (k % 4). A fragment
//    load reads rows t (4) at columns g (8 consecutive, two groups): unswizzled the 4 rows hit the
//    same 8 banks (4-way conflict); swizzled, row t's two groups move by 2t groups within their
//    aligned 32 floats, so the 4 rows cover all 32 banks.
// The swizzle permutes groups within a row's aligned 32 floats, so a 128-byte phase of copies (8
// threads' 16 bytes, or 32 threads' 4) still writes 32 distinct banks.
// A transposed operand (op_a = t: A stored K x M; op_b = t: B stored N x K) keeps its stored
// orientation as well, so that its copies are the same 16-byte (or 4-byte), coalesced, conflict-
// free copies of rows: a transposed A is At[k][m] (BM floats a row) in B's layout and swizzle,
// read by scalar loads as B is; a transposed B is Bt[n][k] (BK floats a row) in A's, read by
// ldmatrix as A is (one instruction for two B fragments). Copying them element by element into
// the other orientation instead would have read global memory 4 bytes a lane and, into a k-major
// tile whose rows are a multiple of 32 floats, written all lanes of a phase into one bank.
//
// Copies. Each step's tiles are copied STAGES - 1 steps ahead of their use with cp.async, one
// commit group per step, so that one barrier per step suffices. 16-byte copies where the leading
// dimension is a multiple of 4 and the pointer 16-byte aligned (a run-time choice, uniform for the
// kernel: one main loop for each, so that neither pays for the other's addresses in registers; any
// lda, ldb works), else four 4-byte copies a group. Only blocks on C's edge and the slice's last
// step of K take the masked copies (zero-filled past M, N or K), full tiles the unmasked ones.
//
// Rounding. Where the product wants TF32-rounded inputs (tf32_mma), either each warp rounds the
// fragments it loads, or (Product::kRoundsStages) each element is rounded once per block in shared
// memory: step s + 1's tiles are rounded in place during step s, between the barrier that makes
// everyone's copies of s + 1 visible and the next, which makes the rounding visible before s + 1
// is multiplied. That takes one more step in flight (STAGES >= 3) and costs no barrier, but puts
// the rounding's dependent loads and stores between the barrier and the mma.
//
// SPLIT_K > 1 splits K over gridDim.z: each slice adds its partial product into C with atomicAdd,
// and the launcher clears C first (zero_output), for shapes whose M x N gives too few blocks.
//
// The BLAS contract (<tiletune/gemm_contract.h>): the including template declares
// `supports op_a op_b alpha beta batch epilogue` and `specializes` all of them, so that each
// configuration is compiled per combination a problem asks for (TT_OP_A, TT_OP_B, TT_ALPHA,
// TT_BETA, TT_BATCH, TT_EPILOGUE), every branch on them `if constexpr` or constant, and the plain
// build, which defines none of them, is the code without them: the same copies, loops and
// registers as before the contract. A transposed operand changes the tile's layout and the
// fragment loads (above); alpha, beta (C read only where beta != 0), the bias (N floats, by column)
// and the activation are applied once per element of C at the store (tt_built_epilogue), and a
// split-K slice adds alpha times its share, never more: the tool builds split-K without beta and
// the epilogue (KernelTemplate::kernel_build; a static_assert here), as an activation of each
// slice's share is not that of the sum, and the launcher's pass over C applies them after it. A batch build (TT_BATCH) runs the grid once per entry in
// z (blockIdx.z / SPLIT_K the entry, blockIdx.z % SPLIT_K the slice), and each block offsets A, B
// and C by its entry's 64-bit strides, A and B before their alignment is tested for 16-byte
// copies.
#pragma once

#include <tiletune/async_copy.h>
#include <tiletune/gemm_contract.h>
#include <tiletune/tensor_core.h>

constexpr int kBM = TT_BM, kBN = TT_BN, kBK = TT_BK, kWM = TT_WM, kWN = TT_WN;
constexpr int kStages = TT_STAGES, kSplitK = TT_SPLIT_K;
constexpr int kWarpsN = kBN / kWN;
constexpr int kThreads = 32 * (kBM / kWM) * kWarpsN;
constexpr int kMmaM = kWM / 16;  // m16n8 tiles of a warp tile, down
constexpr int kMmaN = kWN / 8;   // and across
constexpr int kTileA = kBM * kBK;  // floats of one stage's A tile
constexpr int kTileB = kBK * kBN;  // and B tile
static_assert(kBK % 16 == 0 && kBK <= 32, "BK is 16 or 32: a row of A's tile fits the 32 banks");
// The tool builds split-K (which adds into a cleared C) without beta and the epilogue
// (KernelTemplate::kernel_build): the launcher's pass over C after the kernel applies them.
static_assert(kSplitK == 1 || (!TT_BETA && TT_EPILOGUE == TT_EPILOGUE_NONE),
              "a split-K build serves alpha only");

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The accumulators of a warp tile: acc[i][j] is mma tile (i, j)'s C fragment.
typedef float WarpAccumulators[kMmaM][kMmaN][4];
// One k8 slice of a warp's operands as loaded: a[i] is the A fragment of mma row i, b[j] the B
// fragment of mma column j (PTX layouts, see tiletune/tensor_core.h).
struct WarpFragments {
  float a[kMmaM][4];
  float b[kMmaN][2];
};

// ---- the swizzled layout --------------------------------------------------------------------

// The XOR masks of a row's 4-float groups.
__device__ __forceinline__ int swizzle_a(int m) { return (m / (32 / kBK)) % (kBK / 4); }
__device__ __forceinline__ int swizzle_b(int k) { return 2 * (k % 4); }

// Where a fragment reads element (m, k) of A's tile and (k, n) of B's.
__device__ __forceinline__ int offset_a(int m, int k) {
  return m * kBK + 4 * ((k / 4) ^ swizzle_a(m)) + k % 4;
}
__device__ __forceinline__ int offset_b(int k, int n) {
  return k * kBN + 4 * ((n / 4) ^ swizzle_b(k)) + n % 4;
}
// A transposed operand keeps its stored orientation too: a transposed A (stored K x M) is At[k][m]
// (BM floats a row) in B's layout and swizzle, a transposed B (stored N x K) is Bt[n][k] (BK
// floats a row) in A's.
__device__ __forceinline__ int offset_at(int k, int m) {
  return k * kBM + 4 * ((m / 4) ^ swizzle_b(k)) + m % 4;
}
__device__ __forceinline__ int offset_bt(int n, int k) {
  return n * kBK + 4 * ((k / 4) ^ swizzle_a(n)) + k % 4;
}
// The four tile layouts, as copy_tile names them.
enum TileLayout { kLayoutA, kLayoutB, kLayoutAt, kLayoutBt };
template <int Layout>
__device__ __forceinline__ int tile_offset(int row, int col) {
  if constexpr (Layout == kLayoutA) return offset_a(row, col);
  else if constexpr (Layout == kLayoutB) return offset_b(row, col);
  else if constexpr (Layout == kLayoutAt) return offset_at(row, col);
  else return offset_bt(row, col);
}

// ---- copies of a step's tiles into shared memory ---------------------------------------------

// How a tile of Rows x Cols floats splits into 4-float groups among the block's threads, fixed
// for the whole kernel: a thread copies group tid % G of rows tid / G + (threads / G) pass, G the
// groups of a row. Consecutive threads copy consecutive groups of a row: a 128-byte phase of 8.
template <int Rows, int Cols>
struct TileSplit {
  static constexpr int kGroups = Cols / 4;  // G
  static constexpr int kRowsPerPass = kThreads / kGroups;
  static constexpr int kPasses = Rows / kRowsPerPass;
  static_assert(kThreads % kGroups == 0 && Rows % kRowsPerPass == 0,
                "the tile splits evenly among the threads");
  __device__ __forceinline__ static int row(int tid, int pass) {
    return tid / kGroups + pass * kRowsPerPass;
  }
  __device__ __forceinline__ static int col(int tid) { return 4 * (tid % kGroups); }
};

// Copies each step's tiles into shared memory.
struct TileCopier {
  // A's element (m0, k) and B's (k, n0) as stored, k the next step's first
  const float* a;
  const float* b;
  int lda, ldb;
  int rows_left, cols_left;  // of C from the block's corner (masks at the edge)
  int tid;

  __device__ __forceinline__ TileCopier(const float* A, const float* B, int M, int N, int lda,
                                        int ldb, int m0, int n0, int k0, int tid)
      : a(TT_OP_A ? A + (size_t)k0 * lda + m0 : A + (size_t)m0 * lda + k0),
        b(TT_OP_B ? B + (size_t)n0 * ldb + k0 : B + (size_t)k0 * ldb + n0), lda(lda), ldb(ldb),
        rows_left(M - m0), cols_left(N - n0), tid(tid) {}

  // Copies this thread's groups of one tile: `src` is the tile's first element in global memory,
  // rows_valid x cols_valid of it exist (the rest is zero-filled unless Full), Layout: where its
  // elements go in the stage (tile_offset). A group is one 16-byte copy (Vectors), else four 4-byte
  // ones from the same address, each masked by itself.
  template <class Split, int Layout, bool Full, bool Vectors>
  __device__ __forceinline__ void copy_tile(float* stage, const float* src, int ld, int rows_valid,
                                            int cols_valid) {
#pragma unroll
    for (int pass = 0; pass < Split::kPasses; ++pass) {
      const int row = Split::row(tid, pass), col = Split::col(tid);
      const int valid = Full ? 4 : (row < rows_valid ? min(max(cols_valid - col, 0), 4) : 0);
      const float* const from = valid > 0 ? src + (size_t)row * ld + col : src;
      float* const to = stage + tile_offset<Layout>(row, col);
      if (Vectors) {
        tt_cp_async_16(to, from, 4 * valid);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          tt_cp_async_4(to + e, e < valid ? from + e : src, e < valid ? 4 : 0);
        }
      }
    }
  }

  // Copies one step's tiles into a stage and moves on to the next step; `k_left` is how much of
  // the slice's K remains from this step's first k. Full: the block is inside C and k_left >= BK,
  // so nothing is masked. A copy that reads nothing names `a` or `b`, which is always valid
  // (the block's first element), and zero-fills its destination. A transposed operand's tile is
  // copied as stored (k rows of A's m, n rows of B's k), as coalesced and as wide as the other.
  template <bool Full, bool Vectors>
  __device__ __forceinline__ void copy_step(float* As, float* Bs, int k_left) {
    if constexpr (TT_OP_A) {
      copy_tile<TileSplit<kBK, kBM>, kLayoutAt, Full, Vectors>(As, a, lda, k_left, rows_left);
      a += (size_t)kBK * lda;
    } else {
      copy_tile<TileSplit<kBM, kBK>, kLayoutA, Full, Vectors>(As, a, lda, rows_left, k_left);
      a += kBK;
    }
    if constexpr (TT_OP_B) {
      copy_tile<TileSplit<kBN, kBK>, kLayoutBt, Full, Vectors>(Bs, b, ldb, cols_left, k_left);
      b += kBK;
    } else {
      copy_tile<TileSplit<kBK, kBN>, kLayoutB, Full, Vectors>(Bs, b, ldb, k_left, cols_left);
      b += (size_t)kBK * ldb;
    }
  }
};

// Rounds a stage's tiles to TF32 in place, 16 bytes a thread at a time, 32 consecutive words a
// warp (the layout does not matter: every element is rounded).
template <int Floats>
__device__ __forceinline__ void round_tile(float* tile, int tid) {
#pragma unroll
  for (int word = tid; word < Floats / 4; word += kThreads) {
    float4* const p = reinterpret_cast<float4*>(tile) + word;
    float4 v = *p;
    v.x = tt_tf32_round(v.x), v.y = tt_tf32_round(v.y);
    v.z = tt_tf32_round(v.z), v.w = tt_tf32_round(v.w);
    *p = v;
  }
}

// ---- the warp's product of one stage ---------------------------------------------------------

// Where this lane's fragments sit in a stage, computed once. A's come from ldmatrix: for the
// m16 rows at row0 and the k8 slice at k, lane L names row (L / 8 % 2) 8 + L % 8 of column group
// k / 4 + L / 16, so that matrices 0 to 3 are the fragment's a[0] to a[3]. The swizzles repeat
// every 8 rows of A (swizzle_a(m + 8) == swizzle_a(m)) and every 4 rows of B, and move groups
// only within 32 aligned floats of a row, so the lane's other A rows lie whole rows (16 i) away,
// and from element (t, col0 + 8 j + g) of B's tile the others of its B fragments lie whole rows
// and 32-float blocks away: one offset per k8 slice of A and per B fragment of a 32-column block,
// the rest immediates.
// The transposed tiles swap the two schemes: a transposed B (Bt[n][k], A's layout) comes by
// ldmatrix, two B fragments (columns 8 j and 8 j + 8) an instruction, lane L naming row
// col0 + 16 p + 8 (L / 16) + L % 8 of column group k / 4 + L / 8 % 2; a transposed A (At[k][m],
// B's layout) by scalar loads, a[0] and a[1] of mma row i at rows 16 i + g and 16 i + 8 + g of
// k + t, a[2] and a[3] four rows of k further, conflict-free as B's are: one offset per 8 rows
// of a 32-row block (slot s: rows 8 s + g), the others whole rows and 32-float blocks away.
struct FragmentOffsets {
  static constexpr int kBlocksB = kMmaN < 4 ? kMmaN : 4;  // B fragments per 32 columns
  static constexpr int kSlotsAt = 4;  // 8-row slots of a transposed A's 32-float block
  // As stored: of the row this lane names for A's k8 slice q; transposed: of At's element
  // (t, row0 + 8 s + g)
  int a[TT_OP_A ? kSlotsAt : kBK / 8];
  // As stored: of B's element (t, col0 + 8 j + g); transposed: of the row this lane names for
  // Bt's k8 slice q
  int b[TT_OP_B ? kBK / 8 : kBlocksB];

  __device__ __forceinline__ FragmentOffsets(int row0, int col0, int lane) {
    const int g = lane / 4, t = lane % 4;
    if constexpr (TT_OP_A) {
      static_assert(kWM % 32 == 0, "a transposed A's warp tile spans whole 32-row blocks");
#pragma unroll
      for (int s = 0; s < kSlotsAt; ++s) a[s] = offset_at(t, row0 + 8 * s + g);
    } else {
#pragma unroll
      for (int q = 0; q < kBK / 8; ++q) {
        a[q] = offset_a(row0 + 8 * (lane / 8 % 2) + lane % 8, 8 * q + 4 * (lane / 16));
      }
    }
    if constexpr (TT_OP_B) {
#pragma unroll
      for (int q = 0; q < kBK / 8; ++q) {
        b[q] = offset_bt(col0 + 8 * (lane / 16) + lane % 8, 8 * q + 4 * (lane / 8 % 2));
      }
    } else {
#pragma unroll
      for (int j = 0; j < kBlocksB; ++j) b[j] = offset_b(t, col0 + 8 * j + g);
    }
  }
};

// Loads the k8 slice at k of this lane's fragments: A rows row0 + 16 i + g (+ 8), columns k + t
// (+ 4), one ldmatrix per mma row; B rows k + t (+ 4), columns col0 + 8 j + g.
__device__ __forceinline__ void load_fragments(WarpFragments& f, const float* As, const float* Bs,
                                               int k, const FragmentOffsets& at) {
  if constexpr (TT_OP_A) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float* const a = As + at.a[2 * (i % 2) + h] + 32 * (i / 2);
        f.a[i][h] = a[k * kBM];
        f.a[i][h + 2] = a[(k + 4) * kBM];
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) tt_ldmatrix_x4(f.a[i], As + at.a[k / 8] + (16 * i) * kBK);
  }
  if constexpr (TT_OP_B) {
    static_assert(kMmaN % 2 == 0, "a transposed B's fragments come in pairs");
#pragma unroll
    for (int p = 0; p < kMmaN / 2; ++p) {
      float pair[4];  // b[2 p][0], b[2 p][1], b[2 p + 1][0], b[2 p + 1][1]
      tt_ldmatrix_x4(pair, Bs + at.b[k / 8] + (16 * p) * kBK);
      f.b[2 * p][0] = pair[0];
      f.b[2 * p][1] = pair[1];
      f.b[2 * p + 1][0] = pair[2];
      f.b[2 * p + 1][1] = pair[3];
    }
  } else {
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) {
      const float* const b = Bs + at.b[j % FragmentOffsets::kBlocksB] + 32 * (j / FragmentOffsets::kBlocksB);
      f.b[j][0] = b[k * kBN];
      f.b[j][1] = b[(k + 4) * kBN];
    }
  }
}

// acc += the product of one stage's tiles for this warp's tile. The fragments of the next k8
// slice are loaded before the mma of this one, so that shared-memory latency hides behind them,
// unless the product needs those registers itself (Product::kPrefetchesFragments false).
template <class Product>
__device__ __forceinline__ void multiply_stage(const float* As, const float* Bs,
                                               const FragmentOffsets& at, WarpAccumulators& acc) {
  if (Product::kPrefetchesFragments) {
    WarpFragments fragments[2];
    load_fragments(fragments[0], As, Bs, 0, at);
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s) {
      if (s + 1 < kBK / 8) load_fragments(fragments[(s + 1) % 2], As, Bs, 8 * (s + 1), at);
      Product::multiply(acc, fragments[s % 2]);
    }
  } else {
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s) {
      WarpFragments fragments;
      load_fragments(fragments, As, Bs, 8 * s, at);
      Product::multiply(acc, fragments);
    }
  }
}

// ---- the whole GEMM ---------------------------------------------------------------------------

// C = A B for the block (blockIdx.x, blockIdx.y) and K slice `slice` of its entry of the batch
// (A and B already that entry's, C's found at the store, which cost a batch build fewer
// registers); `shared` holds STAGES tiles of A, then STAGES of B. Vectors:
// 16-byte copies of both tiles, else 4-byte ones.
template <class Product, bool Vectors>
__device__ __forceinline__ void mma_gemm_copying(const float* __restrict__ A,
                                                 const float* __restrict__ B,
                                                 float* __restrict__ C, int M, int N, int K,
                                                 int lda, int ldb, int ldc,
                                                 const tt_gemm_args& args, int slice,
                                                 float* shared) {
  // Steps in flight beyond the one multiplied: one more where stages are rounded ahead.
  constexpr int kAhead = Product::kRoundsStages ? 1 : 0;
  static_assert(kStages >= 2 + kAhead, "STAGES: 2, or 3 where stages are rounded in place");
  float* const As = shared;
  float* const Bs = As + kStages * kTileA;

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int row0 = (warp / kWarpsN) * kWM;  // the warp tile's corner within the block tile
  const int col0 = (warp % kWarpsN) * kWN;

  // This block's slice of K: whole steps, so that only the slice's last step is partial.
  const int k_per_slice = ceil_div(K, kSplitK * kBK) * kBK;
  const int k_begin = slice * k_per_slice;
  const int k_end = min(K, k_begin + k_per_slice);
  if (kSplitK > 1 && k_begin >= k_end) return;  // an empty slice adds nothing
  const int steps = ceil_div(max(k_end - k_begin, 0), kBK);

  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const bool interior = m0 + kBM <= M && n0 + kBN <= N;
  TileCopier copier(A, B, M, N, lda, ldb, m0, n0, k_begin, tid);
  // Copies step `step` (the next one in order) into its stage: unmasked unless it is at an edge.
  const auto copy_step = [&](int step) {
    float* const as = As + (step % kStages) * kTileA;
    float* const bs = Bs + (step % kStages) * kTileB;
    const int k_left = k_end - (k_begin + step * kBK);
    if (interior && k_left >= kBK) {
      copier.copy_step<true, Vectors>(as, bs, k_left);
    } else {
      copier.copy_step<false, Vectors>(as, bs, k_left);
    }
  };
  const auto round_step = [&](int step) {
    round_tile<kTileA>(As + (step % kStages) * kTileA, tid);
    round_tile<kTileB>(Bs + (step % kStages) * kTileB, tid);
  };

  const FragmentOffsets offsets(row0, col0, lane);
  WarpAccumulators acc;
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) {
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
    }
  }

  // Prologue: the first STAGES - 1 steps in flight, one commit group each (empty past the end,
  // so that the wait below always counts the same number of groups); step 0 rounded.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) copy_step(s);
    tt_cp_async_commit();
  }
  if (Product::kRoundsStages) {
    tt_cp_async_wait<kStages - 2>();  // this thread's copies of step 0 have landed
    __syncthreads();                  // everyone's have
    round_step(0);
  }
  for (int step = 0; step < steps; ++step) {
    // This thread's copies of step + kAhead have landed: of the STAGES - 1 + step groups
    // committed, all but the newest STAGES - 2 - kAhead.
    tt_cp_async_wait<kStages - 2 - kAhead>();
    __syncthreads();  // everyone's have; everyone is done with step - 1's stage (and rounding)
    if (Product::kRoundsStages && step + 1 < steps) round_step(step + 1);
    if (step + kStages - 1 < steps) copy_step(step + kStages - 1);  // into step - 1's stage
    tt_cp_async_commit();
    const int stage = step % kStages;
    multiply_stage<Product>(As + stage * kTileA, Bs + stage * kTileB, offsets, acc);
  }

  // Epilogue: each lane holds rows g and g + 8 of each mma tile, columns 2t and 2t + 1, stored
  // as pairs (8 bytes) where ldc and C allow, through the build's epilogue (tt_built_epilogue:
  // alpha, beta, the bias and the activation as the build's macros ask; the plain build stores
  // the accumulators). C is read only by a beta build. A split-K slice adds alpha times its
  // share (alpha is linear; the tool gives split-K nothing else).
  const int g = lane / 4, t = lane % 4;
  if (TT_BATCH) C += (long long)(blockIdx.z / kSplitK) * args.stride_c;  // this block's entry's
  const bool c_pairs = ldc % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0;
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + row0 + 16 * i + 8 * h + g;
      if (!interior && row >= M) continue;
      float* const c_row = C + (size_t)row * ldc;
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        const int col = n0 + col0 + 8 * j + 2 * t;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if (kSplitK > 1) {
          if (interior || col < N) atomicAdd(c_row + col, TT_ALPHA ? args.alpha * v0 : v0);
          if (interior || col + 1 < N) atomicAdd(c_row + col + 1, TT_ALPHA ? args.alpha * v1 : v1);
        } else if (c_pairs && (interior || col + 1 < N)) {
          float2* const pair = reinterpret_cast<float2*>(c_row + col);
          const float2 c0 = TT_BETA ? *pair : make_float2(0.0f, 0.0f);  // C0, for beta
          *pair = make_float2(tt_built_epilogue(v0, &c0.x, col, args),
                              tt_built_epilogue(v1, &c0.y, col + 1, args));
        } else {
          if (interior || col < N) c_row[col] = tt_built_epilogue(v0, c_row + col, col, args);
          if (interior || col + 1 < N) {
            c_row[col + 1] = tt_built_epilogue(v1, c_row + col + 1, col + 1, args);
          }
        }
      }
    }
  }
}

// The kernel's body: one copy of the main loop for 16-byte copies (lda and ldb multiples of 4, A
// and B 16-byte aligned) and one for 4-byte copies, chosen once, so that neither pays for the
// other's addresses in registers. A batch build's launch runs the grid once per entry of the batch
// in z (gridDim.z = SPLIT_K * batch): the entry is blockIdx.z / SPLIT_K and the slice of K
// blockIdx.z % SPLIT_K, divisions by a constant; the entry's A and B are found (64-bit strides)
// before their alignment is tested, so each block picks its own copies. `args` is the entry's
// __grid_constant__ parameter: read where used, from the parameter bank (taken as a plain
// by-value parameter, its fields read after the main loop were held in registers through it,
// 3 to 6 more in the plain build).
template <class Product>
__device__ __forceinline__ void mma_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K, int lda,
                                         int ldb, int ldc, const tt_gemm_args& args,
                                         float* shared) {
  // A build without batches has gridDim.z = SPLIT_K: blockIdx.z is the slice, as before batches.
  const int slice = TT_BATCH ? blockIdx.z % kSplitK : blockIdx.z;
  if (TT_BATCH) {
    const long long entry = blockIdx.z / kSplitK;
    A += entry * args.stride_a;
    B += entry * args.stride_b;
  }
  const bool vectors = lda % 4 == 0 && ldb % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0 &&
                       reinterpret_cast<size_t>(B) % 16 == 0;
  if (vectors) {
    mma_gemm_copying<Product, true>(A, B, C, M, N, K, lda, ldb, ldc, args, slice, shared);
  } else {
    mma_gemm_copying<Product, false>(A, B, C, M, N, K, lda, ldb, ldc, args, slice, shared);
  }
}
