// What tf32_mma.cu and tf32x3_mma.cu share: the block and warp tiling, the shared-memory layout,
// the cp.async pipeline and the epilogue of an SGEMM on the tensor cores' m16n8k8 TF32 mma. The
// including template declares the parameters (BM, BN, BK, WM, WN, STAGES, SPLIT_K) and supplies
// the product of one k-slice of fragments: how the FP32 inputs become TF32 operands (`Product`).
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
//    R = 32 / BK the rows that share the 32 banks (1 for BK 32, 2 for BK 16). A fragment load
//    reads rows g (8 of them, g = lane / 4) at column t (4 of them, t = lane % 4): unswizzled all 8
//    rows would hit the same 4 banks (8-way conflict); swizzled, rows g of one bank line take
//    distinct groups, so the 32 lanes read 32 distinct banks.
//  - B: group n / 4 of row k sits at (n / 4) ^ swizzle_b(k), swizzle_b(k) = 2 (k % 4). A fragment
//    load reads rows t (4) at columns g (8 consecutive, two groups): unswizzled the 4 rows hit the
//    same 8 banks (4-way conflict); swizzled, row t's two groups move by 2t groups within their
//    aligned 32 floats, so the 4 rows cover all 32 banks.
// The swizzle permutes groups within a row's aligned 32 floats, so a cp.async of 8 consecutive
// threads (one 128-byte phase) still writes 32 distinct banks.
//
// Copies. Each step's tiles are copied STAGES - 1 steps ahead of their use with cp.async, one
// commit group per step, so that one barrier per step suffices. 16-byte copies where the leading
// dimension is a multiple of 4 and the pointer 16-byte aligned (a run-time choice: any lda, ldb
// works), else four predicated 4-byte copies; only blocks on C's edge and the slice's last step of
// K take the masked copies (zero-filled past M, N or K), full tiles the unmasked ones.
//
// Inputs become TF32 with cvt.rna (round to nearest, ties away) as a fragment is loaded, not in
// shared memory, so the copies stay asynchronous; the accumulation is FP32 throughout.
//
// SPLIT_K > 1 splits K over gridDim.z: each slice adds its partial product into C with atomicAdd,
// and the launcher clears C first (zero_output), for shapes whose M x N gives too few blocks.
#pragma once

#include <tiletune/async_copy.h>
#include <tiletune/tensor_core.h>

constexpr int kBM = TT_BM, kBN = TT_BN, kBK = TT_BK, kWM = TT_WM, kWN = TT_WN;
constexpr int kStages = TT_STAGES, kSplitK = TT_SPLIT_K;
constexpr int kWarpsN = kBN / kWN;
constexpr int kThreads = 32 * (kBM / kWM) * kWarpsN;
constexpr int kMmaM = kWM / 16;  // m16n8 tiles of a warp tile, down
constexpr int kMmaN = kWN / 8;   // and across
constexpr int kTileA = kBM * kBK;  // floats of one stage's A tile
constexpr int kTileB = kBK * kBN;  // and B tile

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The accumulators of a warp tile: acc[i][j] is mma tile (i, j)'s C fragment.
typedef float WarpAccumulators[kMmaM][kMmaN][4];
// One k8 slice of a warp's operands as loaded, still FP32: a[i] is the A fragment of mma row i,
// b[j] the B fragment of mma column j (PTX layouts, see tiletune/tensor_core.h).
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

// ---- copies of a step's tiles into shared memory ---------------------------------------------

// Which 4-float groups of each step's tiles this thread copies, fixed for the whole kernel: group
// tid % (BK / 4) of A's rows tid / (BK / 4) + R i (R = threads / (BK / 4)), and group
// tid % (BN / 4) of B's rows tid / (BN / 4) + S j (S = threads / (BN / 4)).
struct TileCopier {
  static constexpr int kGroupsA = kBK / 4;
  static constexpr int kRowsA = kThreads / kGroupsA;  // R
  static constexpr int kPassesA = kBM / kRowsA;
  static constexpr int kGroupsB = kBN / 4;
  static constexpr int kRowsB = kThreads / kGroupsB;  // S
  static constexpr int kPassesB = kBK / kRowsB;
  static_assert(kThreads % kGroupsA == 0 && kBM % kRowsA == 0, "A's tile splits evenly");
  static_assert(kThreads % kGroupsB == 0 && kBK % kRowsB == 0, "B's tile splits evenly");

  const float* a;  // this thread's first A element of the next step
  const float* b;  // and of B
  size_t a_pass, b_pass, b_step;  // pointer steps between passes, and B's between steps
  int a_row, a_col, b_row, b_col;  // within the tiles (a_col, b_col: a group's first column)
  int rows_left, cols_left;       // of C from the block's corner (masks at the edge)
  bool a_vectors, b_vectors;      // 16-byte copies allowed

  __device__ __forceinline__ TileCopier(const float* A, const float* B, int M, int N, int lda,
                                        int ldb, int m0, int n0, int k0, int tid) {
    a_row = tid / kGroupsA, a_col = 4 * (tid % kGroupsA);
    b_row = tid / kGroupsB, b_col = 4 * (tid % kGroupsB);
    a = A + (size_t)(m0 + a_row) * lda + k0 + a_col;
    b = B + (size_t)(k0 + b_row) * ldb + n0 + b_col;
    a_pass = (size_t)kRowsA * lda;
    b_pass = (size_t)kRowsB * ldb;
    b_step = (size_t)kBK * ldb;
    rows_left = M - m0, cols_left = N - n0;
    a_vectors = lda % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
    b_vectors = ldb % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  }

  // Copies the first `valid` floats of a group (0 to 4) and zero-fills the rest; `base` is a
  // pointer that is always safe to name when nothing is read.
  __device__ __forceinline__ static void copy_group(float* dst, const float* src, int valid,
                                                    bool vectors, const float* base) {
    if (vectors) {
      tt_cp_async_16(dst, valid > 0 ? src : base, 4 * valid);
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) tt_cp_async_4(dst + c, c < valid ? src + c : base, c < valid ? 4 : 0);
    }
  }

  // Copies one step's tiles into a stage; `k_left` is how much of the slice's K remains from this
  // step's first k. Full: the block is inside C and k_left >= BK, so nothing is masked.
  template <bool Full>
  __device__ __forceinline__ void copy_step(float* As, float* Bs, int k_left, const float* A,
                                            const float* B) {
#pragma unroll
    for (int pass = 0; pass < kPassesA; ++pass) {
      const int m = a_row + pass * kRowsA;
      float* dst = As + m * kBK + 4 * ((a_col / 4) ^ swizzle_a(m));
      const int valid = Full ? 4 : (m < rows_left ? min(max(k_left - a_col, 0), 4) : 0);
      copy_group(dst, a + pass * a_pass, valid, a_vectors, A);
    }
#pragma unroll
    for (int pass = 0; pass < kPassesB; ++pass) {
      const int k = b_row + pass * kRowsB;
      float* dst = Bs + k * kBN + 4 * ((b_col / 4) ^ swizzle_b(k));
      const int valid = Full ? 4 : (k < k_left ? min(max(cols_left - b_col, 0), 4) : 0);
      copy_group(dst, b + pass * b_pass, valid, b_vectors, B);
    }
    a += kBK;
    b += b_step;
  }
};

// ---- the warp's product of one stage ---------------------------------------------------------

// Where this lane's fragment elements sit in a stage, computed once: the swizzle repeats every 8
// rows of A (swizzle_a(m + 8) == swizzle_a(m)) and every 4 rows of B, and moves groups only within
// 32 aligned floats of a row, so from the element (row0 + g, k + t) of A's tile the others of the
// lane's A fragments lie whole rows away (16 i + 8 h of them), and from element (t, col0 + 8 j + g)
// of B's tile the others of its B fragments lie whole rows and 32-float blocks away. That leaves
// one offset per 4 columns of A's k8 slices and one per B fragment of a 32-column block, and the
// rest constants that the loads take as immediates.
struct FragmentOffsets {
  static constexpr int kBlocksB = kMmaN < 4 ? kMmaN : 4;  // B fragments per 32 columns
  int a[kBK / 4];  // of A's element (row0 + g, 4 q + t)
  int b[kBlocksB];  // of B's element (t, col0 + 8 j + g)

  __device__ __forceinline__ FragmentOffsets(int row0, int col0, int lane) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int q = 0; q < kBK / 4; ++q) a[q] = offset_a(row0 + g, 4 * q + t);
#pragma unroll
    for (int j = 0; j < kBlocksB; ++j) b[j] = offset_b(t, col0 + 8 * j + g);
  }
};

// Loads the k8 slice at k of this lane's fragments: A rows row0 + 16 i + g (+ 8), columns k + t
// (+ 4); B rows k + t (+ 4), columns col0 + 8 j + g.
__device__ __forceinline__ void load_fragments(WarpFragments& f, const float* As, const float* Bs,
                                               int k, const FragmentOffsets& at) {
  const float* const a0 = As + at.a[k / 4];      // row0 + g, k + t
  const float* const a4 = As + at.a[k / 4 + 1];  // row0 + g, k + t + 4
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
    f.a[i][0] = a0[(16 * i) * kBK];
    f.a[i][1] = a0[(16 * i + 8) * kBK];
    f.a[i][2] = a4[(16 * i) * kBK];
    f.a[i][3] = a4[(16 * i + 8) * kBK];
  }
#pragma unroll
  for (int j = 0; j < kMmaN; ++j) {
    const float* const b = Bs + at.b[j % FragmentOffsets::kBlocksB] + 32 * (j / FragmentOffsets::kBlocksB);
    f.b[j][0] = b[k * kBN];
    f.b[j][1] = b[(k + 4) * kBN];
  }
}

// acc += the product of one stage's tiles for this warp's tile. The fragments of the next k8
// slice are loaded before the mma of this one, so that shared-memory latency hides behind them.
template <class Product>
__device__ __forceinline__ void multiply_stage(const float* As, const float* Bs,
                                               const FragmentOffsets& at, WarpAccumulators& acc) {
  WarpFragments fragments[2];
  load_fragments(fragments[0], As, Bs, 0, at);
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s) {
    if (s + 1 < kBK / 8) load_fragments(fragments[(s + 1) % 2], As, Bs, 8 * (s + 1), at);
    Product::multiply(acc, fragments[s % 2]);
  }
}

// ---- the whole GEMM ---------------------------------------------------------------------------

// C = A B for the block (blockIdx.x, blockIdx.y) and K slice blockIdx.z; `shared` holds STAGES
// tiles of A, then STAGES of B.
template <class Product>
__device__ __forceinline__ void mma_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K, int lda,
                                         int ldb, int ldc, float* shared) {
  float* const As = shared;
  float* const Bs = As + kStages * kTileA;

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int row0 = (warp / kWarpsN) * kWM;  // the warp tile's corner within the block tile
  const int col0 = (warp % kWarpsN) * kWN;

  // This block's slice of K: whole steps, so that only the slice's last step is partial.
  const int k_per_slice = ceil_div(K, kSplitK * kBK) * kBK;
  const int k_begin = blockIdx.z * k_per_slice;
  const int k_end = min(K, k_begin + k_per_slice);
  if (kSplitK > 1 && k_begin >= k_end) return;  // an empty slice adds nothing
  const int steps = ceil_div(max(k_end - k_begin, 0), kBK);

  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const bool interior = m0 + kBM <= M && n0 + kBN <= N;
  TileCopier copier(A, B, M, N, lda, ldb, m0, n0, k_begin, tid);
  // Copies step `step` (the next one in order) into its stage: unmasked unless it is at an edge.
  const auto copy_step = [&](int step) {
    const int stage = step % kStages;
    const int k_left = k_end - (k_begin + step * kBK);
    if (interior && k_left >= kBK) {
      copier.copy_step<true>(As + stage * kTileA, Bs + stage * kTileB, k_left, A, B);
    } else {
      copier.copy_step<false>(As + stage * kTileA, Bs + stage * kTileB, k_left, A, B);
    }
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
  // so that the wait below always counts the same number of groups).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) copy_step(s);
    tt_cp_async_commit();
  }
  for (int step = 0; step < steps; ++step) {
    tt_cp_async_wait<kStages - 2>();  // this thread's copies of `step` have landed
    __syncthreads();  // everyone's have, and everyone is done with step - 1's stage
    if (step + kStages - 1 < steps) copy_step(step + kStages - 1);  // into step - 1's stage
    tt_cp_async_commit();
    const int stage = step % kStages;
    multiply_stage<Product>(As + stage * kTileA, Bs + stage * kTileB, offsets, acc);
  }

  // Epilogue: each lane holds rows g and g + 8 of each mma tile, columns 2t and 2t + 1, stored
  // as pairs (8 bytes) where ldc and C allow.
  const int g = lane / 4, t = lane % 4;
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
          if (interior || col < N) atomicAdd(c_row + col, v0);
          if (interior || col + 1 < N) atomicAdd(c_row + col + 1, v1);
        } else if (c_pairs && (interior || col + 1 < N)) {
          *reinterpret_cast<float2*>(c_row + col) = make_float2(v0, v1);
        } else {
          if (interior || col < N) c_row[col] = v0;
          if (interior || col + 1 < N) c_row[col + 1] = v1;
        }
      }
    }
  }
}
