// What the wgmma templates (tf32_wgmma.cu, tf32_wgmma_specialized.cu, tf32_wgmma_rounded_loads.cu,
// tf32_wgmma_transposed_b.cu, tf32x3_wgmma.cu) share: the block's tiles in shared memory, the
// copies that fill them, the rounding (or 3xTF32 split) of A's tile, B^T's fragments, split K, the
// epilogue (with the BLAS contract's, store_built), and the block of a kernel whose every thread
// copies and multiplies (every_thread_gemm). The including template defines kBM (C rows per block:
// wgmma's N), kBN (C columns per block: 64 per consumer warpgroup), kStages, kCopyThreads (the
// threads that copy: the whole block, or producer warpgroups), kUnrollMaskedCopies (copy_a_masked,
// copy_b_masked) and includes <tiletune/async_copy.h> and <tiletune/warpgroup_mma.h> first.
//
// Roles. TF32 wgmma reads only K-major operands from shared memory: the register operand (64 x 8)
// may come from anywhere, the shared one must have each of its N columns' 8 k contiguous. A is
// K-major (a row of A is contiguous in k), B is not (a row of B is contiguous in n). So the kernels
// compute C^T = B^T A^T: wgmma's M is our N (a warpgroup's 64 columns of C), its N is our M (BM
// rows of C), its register operand is B^T (each lane loads its fragment from B's tile and rounds
// it to TF32), its shared operand is A's tile as global memory has it.
//
// Shared memory. A's tile is BM rows of BK = 32 floats (128 bytes), the 16-byte chunk c of row m
// at chunk c ^ (m % 8): wgmma's 128-byte swizzle, so that its reads of 8 rows hit 8 different
// chunks of the banks; the tiles start 1024-byte aligned, as the swizzle is on address bits. B's
// tile keeps global memory's orientation, rows of BN + 8 floats. A lane's fragment rows g and
// g + 8 (wgmma's M) are taken as B's adjacent columns 2g and 2g + 1, so that a fragment is two
// 8-byte loads (rows t and t + 4, t = lane % 4); a half-warp's load reads 4 rows at 4 pairs of
// columns, which the 8-float pad puts 8 banks apart: no conflict.
//
// Copies. cp.async, 16-byte copies where lda, ldb and the pointers allow, else four 4-byte ones per
// 4-float chunk; zero-filled past M, N and K; unmasked where the step lies wholly inside A and B.
// wgmma truncates its inputs to TF32 and its shared operand cannot be rounded on its way, so the
// thread that copied a chunk of A rounds it in place once it has landed (round_own_copies), then
// fences it for wgmma's proxy (tt_fence_proxy_async) before a barrier makes it everyone's.
//
// B stored N x K (op_b = t; StageCopies<Vectors, true>, tf32x3_wgmma): B^T is then K-major, as A
// is, and its tile takes A's layout (BN rows of 32 floats, 128-byte swizzle: offset_a) in the
// place of B's plain tile, which is larger. A lane's fragment rows g and g + 8 are then the
// tile's rows 16w + g and 16w + g + 8 (k_major_fragment_columns), 4-byte loads that the swizzle
// puts in 8 different chunks for the 8 rows a load reads: no conflict. Its two columns of C are 8
// apart, so its stores are of one float (store_built<8>).
#pragma once

#include <tiletune/gemm_contract.h>  // store_built

constexpr int kBK = 32;
constexpr int kRowB = kBN + 8;  // floats of a row of B's tile
constexpr int kTileA = kBM * kBK, kTileB = kBK * kRowB;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Where element (m, k) of A's tile lies: wgmma's 128-byte swizzle.
__device__ __forceinline__ int offset_a(int m, int k) {
  return m * kBK + 4 * ((k / 4) ^ (m % 8)) + k % 4;
}

// x as two TF32 numbers, big = tf32(x) and small = tf32(x - big) (x - big is exact in FP32): the
// 3xTF32 split (tf32x3_wgmma.cu).
__device__ __forceinline__ void tf32_split(float x, float& big, float& small) {
  big = tt_tf32_round(x);
  small = tt_tf32_round(x - big);
}

// The block's view of the operands: rows m0.. of A and C, columns n0.. of B and C.
struct BlockOperands {
  const float* A;
  const float* B;
  int M, N, K, lda, ldb, m0, n0;
};

// This block's: BM rows of C from blockIdx.y, BN columns from blockIdx.x.
__device__ __forceinline__ BlockOperands block_operands(const float* A, const float* B, int M,
                                                        int N, int K, int lda, int ldb) {
  return {A, B, M, N, K, lda, ldb, (int)blockIdx.y * kBM, (int)blockIdx.x * kBN};
}

// Split K over gridDim.z = Slices (a template's SPLIT_K): the block's slice of K, op's A and B
// moved to its first k and K cut to its length (a multiple of BK but the last); false where the
// slice is empty. Each slice adds its product into C (store_tile<true>), which the launcher clears
// first (`zero_output`).
template <int Slices>
__device__ __forceinline__ bool k_slice(BlockOperands& op) {
  if (Slices == 1) return true;
  const int per_slice = ceil_div(op.K, Slices * kBK) * kBK;
  const int k_begin = (int)blockIdx.z * per_slice;
  if (k_begin >= op.K) return false;
  op.A += k_begin;
  op.B += (size_t)k_begin * op.ldb;
  op.K = min(op.K - k_begin, per_slice);
  return true;
}

// The stage of a step in shared memory (1024-byte aligned): kStages tiles of A, then kStages of B,
// each a multiple of 1024 bytes.
__device__ __forceinline__ float* stage_tile_a(float* shared, int step) {
  return shared + step % kStages * kTileA;
}
__device__ __forceinline__ float* stage_tile_b(float* shared, int step) {
  return shared + kStages * kTileA + step % kStages * kTileB;
}

// A copying thread's share of a step's copies, fixed for the kernel: 4-float chunks (a row's k4
// of A, n4 of B), consecutive threads on consecutive chunks of a row. A chunk is one 16-byte copy
// where lda, ldb and the pointers allow (Vectors), else four 4-byte copies; either way the thread
// that copied a chunk of A rounds it as one 16-byte word.
struct CopyShare {
  static constexpr int kPassesA = kTileA / 4 / kCopyThreads;
  static constexpr int kPassesB = kBK * kBN / 4 / kCopyThreads;
  static_assert(kTileA % (4 * kCopyThreads) == 0 && (kBK * kBN) % (4 * kCopyThreads) == 0,
                "the tiles split evenly among the copying threads");
  // Element (m, k) of A's tile that starts this thread's chunk of pass p; and (k, n) of B's.
  __device__ __forceinline__ static void a_chunk(int tid, int p, int& m, int& k) {
    const int e = (tid + p * kCopyThreads) * 4;
    m = e / kBK;
    k = e % kBK;
  }
  __device__ __forceinline__ static void b_chunk(int tid, int p, int& k, int& n) {
    const int e = (tid + p * kCopyThreads) * 4;
    k = e / kBN;
    n = e % kBN;
  }
  // Element (n, k) of a K-major B^T's tile (op_b = t) that starts the chunk: a row's k4, as A's.
  __device__ __forceinline__ static void bt_chunk(int tid, int p, int& n, int& k) {
    const int e = (tid + p * kCopyThreads) * 4;
    n = e / kBK;
    k = e % kBK;
  }
};

// Copies a chunk of which `floats` (0 to 4) exist, zero-filling the rest.
template <bool Vectors, bool Full>
__device__ __forceinline__ void copy_chunk(float* dst, const float* src, int floats) {
  if (Vectors) {
    tt_cp_async_16(dst, src, Full ? 16 : 4 * floats);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool exists = Full || i < floats;
      tt_cp_async_4(dst + i, exists ? src + i : src, exists ? 4 : 0);
    }
  }
}

// Where the chunk of A's tile at (m, k) of the step whose first k is k0 starts in A (`src`), and
// how many of its 4 floats exist: none past M, fewer past K (`src` is then A itself, never read).
__device__ __forceinline__ int masked_chunk_of_a(const BlockOperands& op, int m, int k, int k0,
                                                 const float*& src) {
  const int row = op.m0 + m, col = k0 + k;
  const int floats = row < op.M ? max(0, min(4, op.K - col)) : 0;
  src = floats > 0 ? op.A + (size_t)row * op.lda + col : op.A;
  return floats;
}

// The same for the chunk of B's tile at (k, n): none past K, fewer past N.
__device__ __forceinline__ int masked_chunk_of_b(const BlockOperands& op, int k, int n, int k0,
                                                 const float*& src) {
  const int row = k0 + k, col = op.n0 + n;
  const int floats = row < op.K ? max(0, min(4, op.N - col)) : 0;
  src = floats > 0 ? op.B + (size_t)row * op.ldb + col : op.B;
  return floats;
}

// The same for the chunk of a K-major B^T's tile (B stored N x K) at (n, k): none past N, fewer
// past K.
__device__ __forceinline__ int masked_chunk_of_bt(const BlockOperands& op, int n, int k, int k0,
                                                  const float*& src) {
  const int row = op.n0 + n, col = k0 + k;
  const int floats = row < op.N ? max(0, min(4, op.K - col)) : 0;
  src = floats > 0 ? op.B + (size_t)row * op.ldb + col : op.B;
  return floats;
}

// A chunk into registers: one 16-byte load (Vectors: the address allows it) or four 4-byte ones;
// and a masked chunk, of which `floats` (0 to 4) exist, zero past them.
template <bool Vectors>
__device__ __forceinline__ float4 load_chunk(const float* src) {
  return Vectors ? *reinterpret_cast<const float4*>(src)
                 : make_float4(src[0], src[1], src[2], src[3]);
}
__device__ __forceinline__ float4 load_masked_chunk(const float* src, int floats) {
  return make_float4(floats > 0 ? src[0] : 0.0f, floats > 1 ? src[1] : 0.0f,
                     floats > 2 ? src[2] : 0.0f, floats > 3 ? src[3] : 0.0f);
}

// Issues this thread's copies of A's tile of the step whose first k is k0 into one stage, masked:
// zero-filled past M and K (blocks on C's edge, the last step of K). Unrolled
// (kUnrollMaskedCopies), the compiler hoists every pass's row offsets and masks out of the main
// loop into registers: faster where registers are to spare (tf32_wgmma: 9% at 4095x4097x4093),
// spilled where they are not (a producer warpgroup of 56).
template <bool Vectors>
__device__ __forceinline__ void copy_a_masked(const BlockOperands& op, float* as, int k0, int tid) {
#pragma unroll(kUnrollMaskedCopies ? CopyShare::kPassesA : 1)
  for (int p = 0; p < CopyShare::kPassesA; ++p) {
    int m, k;
    CopyShare::a_chunk(tid, p, m, k);
    const float* src;
    const int floats = masked_chunk_of_a(op, m, k, k0, src);
    copy_chunk<Vectors, false>(as + offset_a(m, k), src, floats);
  }
}

// The same for B's tile: zero-filled past K and N; TransposedB, a K-major B^T's tile (B stored
// N x K), zero-filled past N and K.
template <bool Vectors, bool TransposedB = false>
__device__ __forceinline__ void copy_b_masked(const BlockOperands& op, float* bs, int k0, int tid) {
#pragma unroll(kUnrollMaskedCopies ? CopyShare::kPassesB : 1)
  for (int p = 0; p < CopyShare::kPassesB; ++p) {
    const float* src;
    if constexpr (TransposedB) {
      int n, k;
      CopyShare::bt_chunk(tid, p, n, k);
      const int floats = masked_chunk_of_bt(op, n, k, k0, src);
      copy_chunk<Vectors, false>(bs + offset_a(n, k), src, floats);
    } else {
      int k, n;
      CopyShare::b_chunk(tid, p, k, n);
      const int floats = masked_chunk_of_b(op, k, n, k0, src);
      copy_chunk<Vectors, false>(bs + k * kRowB + n, src, floats);
    }
  }
}

// The same for a step whose tiles lie wholly inside A and B: no masks, and the sources walk from
// pointers set once, so that a step costs little more than its copy instructions. TransposedB: B
// is stored N x K (op_b = t), its tile K-major.
template <bool Vectors, bool TransposedB = false>
struct FullCopies {
  const float* a;  // this thread's first A element of step 0 (pass 0), and B's
  const float* b;
  size_t a_pass, b_pass, b_step;  // elements from one pass to the next; B's from a step to the next

  __device__ __forceinline__ FullCopies(const BlockOperands& op, int tid) {
    int m, k, n;
    CopyShare::a_chunk(tid, 0, m, k);
    a = op.A + (size_t)(op.m0 + m) * op.lda + k;
    a_pass = (size_t)(kCopyThreads * 4 / kBK) * op.lda;
    if constexpr (TransposedB) {  // a row of B's is a column of C: its chunks run along k
      CopyShare::bt_chunk(tid, 0, n, k);
      b = op.B + (size_t)(op.n0 + n) * op.ldb + k;
      b_pass = (size_t)(kCopyThreads * 4 / kBK) * op.ldb;
      b_step = kBK;
    } else {
      CopyShare::b_chunk(tid, 0, k, n);
      b = op.B + (size_t)k * op.ldb + op.n0 + n;
      b_pass = (size_t)(kCopyThreads * 4 / kBN) * op.ldb;
      b_step = (size_t)kBK * op.ldb;
    }
  }

  __device__ __forceinline__ void copy_a(float* as, int step, int tid) const {
    const float* src = a + (size_t)step * kBK;
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesA; ++p, src += a_pass) {
      int m, k;
      CopyShare::a_chunk(tid, p, m, k);
      copy_chunk<Vectors, true>(as + offset_a(m, k), src, 4);
    }
  }

  __device__ __forceinline__ void copy_b(float* bs, int step, int tid) const {
    const float* src = b + step * b_step;
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesB; ++p, src += b_pass) {
      if constexpr (TransposedB) {
        int n, k;
        CopyShare::bt_chunk(tid, p, n, k);
        copy_chunk<Vectors, true>(bs + offset_a(n, k), src, 4);
      } else {
        int k, n;
        CopyShare::b_chunk(tid, p, k, n);
        copy_chunk<Vectors, true>(bs + k * kRowB + n, src, 4);
      }
    }
  }
};

// A copying thread's copies of every step into the stages: the unmasked ones where the block is
// inside C and the step inside K, else the masked ones. TransposedB: B is stored N x K (op_b = t).
template <bool Vectors, bool TransposedB = false>
struct StageCopies {
  static constexpr bool kTransposedB = TransposedB;
  BlockOperands op;
  FullCopies<Vectors, TransposedB> full;
  bool interior;  // the block is inside C: only the last step of K takes masked copies
  float* shared;  // the stages (stage_tile_a, stage_tile_b)
  int steps, tid;

  __device__ __forceinline__ StageCopies(const BlockOperands& op_, float* shared_, int tid_)
      : op(op_), full(op_, tid_), interior(op_.m0 + kBM <= op_.M && op_.n0 + kBN <= op_.N),
        shared(shared_), steps(ceil_div(op_.K, kBK)), tid(tid_) {}

  // Whether the step's tiles lie wholly inside A and B.
  __device__ __forceinline__ bool inside(int step) const {
    return interior && (step + 1) * kBK <= op.K;
  }

  // Both tiles of the step, under one branch. (Spelled out rather than inside(step): the other
  // spelling changes what ptxas makes of tf32_wgmma, tf32_wgmma_specialized and tf32x3_wgmma.)
  __device__ __forceinline__ void copy(int step) const {
    float* const as = stage_tile_a(shared, step);
    float* const bs = stage_tile_b(shared, step);
    if (interior && (step + 1) * kBK <= op.K) {
      full.copy_a(as, step, tid);
      full.copy_b(bs, step, tid);
    } else {
      copy_a_masked<Vectors>(op, as, step * kBK, tid);
      copy_b_masked<Vectors, TransposedB>(op, bs, step * kBK, tid);
    }
  }
  // B's tile only (tf32_wgmma_rounded_loads brings A's through registers).
  __device__ __forceinline__ void copy_b(int step) const {
    float* const bs = stage_tile_b(shared, step);
    if (inside(step)) {
      full.copy_b(bs, step, tid);
    } else {
      copy_b_masked<Vectors, TransposedB>(op, bs, step * kBK, tid);
    }
  }

  // Issues the copies of the first STAGES - 2 steps, one commit group each (empty past the end, so
  // that the waits always count the same number of groups).
  __device__ __forceinline__ void start() const {
#pragma unroll
    for (int s = 0; s < kStages - 2; ++s) {
      if (s < steps) copy(s);
      tt_cp_async_commit();
    }
  }

  // Calls chunk(offset) for each 4-float chunk of A this thread copied: its offset in a tile.
  template <class Chunk>
  __device__ __forceinline__ void each_own_chunk_of_a(Chunk chunk) const {
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesA; ++p) {
      int m, k;
      CopyShare::a_chunk(tid, p, m, k);
      chunk(offset_a(m, k));
    }
  }

  // Rounds to TF32, in place, the chunks of A this thread copied into the step's stage (landed:
  // waited for).
  __device__ __forceinline__ void round_own_copies(int step) const {
    float* const as = stage_tile_a(shared, step);
    each_own_chunk_of_a([&](int offset) {
      float4* const x = reinterpret_cast<float4*>(as + offset);
      const float4 v = *x;
      *x = make_float4(tt_tf32_round(v.x), tt_tf32_round(v.y), tt_tf32_round(v.z),
                       tt_tf32_round(v.w));
    });
  }

  // Splits the chunks of A this thread copied into the step's stage (landed: waited for): the big
  // parts in place, the small ones at the same offset of `small_tile` (a tile like A's).
  __device__ __forceinline__ void split_own_copies(int step, float* small_tile) const {
    float* const as = stage_tile_a(shared, step);
    each_own_chunk_of_a([&](int offset) {
      const float4 v = *reinterpret_cast<const float4*>(as + offset);
      float4 big, small;
      tf32_split(v.x, big.x, small.x);
      tf32_split(v.y, big.y, small.y);
      tf32_split(v.z, big.z, small.z);
      tf32_split(v.w, big.w, small.w);
      *reinterpret_cast<float4*>(as + offset) = big;
      *reinterpret_cast<float4*>(small_tile + offset) = small;
    });
  }
};

// A thread's chunks of A's tile for one step, in registers between their load and their store
// (tf32_wgmma_rounded_loads, tf32_wgmma_transposed_b: A rounded on its way into shared memory).
template <bool Vectors>
struct LoadedA {
  float4 chunk[CopyShare::kPassesA];

  // Loads the step's chunks: zero past M and K; 16-byte loads where the step lies wholly inside
  // A and lda and the pointer allow them (Vectors), else one float at a time.
  __device__ __forceinline__ void load(const StageCopies<Vectors>& copies, int step) {
    if (copies.inside(step)) {
      const float* src = copies.full.a + (size_t)step * kBK;
#pragma unroll
      for (int p = 0; p < CopyShare::kPassesA; ++p, src += copies.full.a_pass) {
        chunk[p] = load_chunk<Vectors>(src);
      }
      return;
    }
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesA; ++p) {
      int m, k;
      CopyShare::a_chunk(copies.tid, p, m, k);
      const float* src;
      const int floats = masked_chunk_of_a(copies.op, m, k, step * kBK, src);
      chunk[p] = load_masked_chunk(src, floats);
    }
  }

  // Rounds the chunks to TF32 and stores them into the step's stage.
  __device__ __forceinline__ void store_rounded(const StageCopies<Vectors>& copies,
                                                int step) const {
    float* const as = stage_tile_a(copies.shared, step);
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesA; ++p) {
      int m, k;
      CopyShare::a_chunk(copies.tid, p, m, k);
      const float4 v = chunk[p];
      *reinterpret_cast<float4*>(as + offset_a(m, k)) =
          make_float4(tt_tf32_round(v.x), tt_tf32_round(v.y), tt_tf32_round(v.z),
                      tt_tf32_round(v.w));
    }
  }
};

// The columns of C (of B's tile) of a consumer thread's fragment rows g and g + 8, `wg` its
// warpgroup among the consumers: wgmma's M is ours to map to C's columns, and this order gives
// each lane two adjacent ones.
__device__ __forceinline__ int fragment_columns(int wg, int thread_in_wg) {
  return 64 * wg + 16 * (thread_in_wg / 32) + 2 * (thread_in_wg % 32 / 4);
}

// The same where B^T's tile is K-major (B stored N x K): the lane's rows g and g + 8 of warp w are
// the tile's rows 16w + g and 16w + g + 8, columns of C 8 apart.
__device__ __forceinline__ int k_major_fragment_columns(int wg, int thread_in_wg) {
  return 64 * wg + 16 * (thread_in_wg / 32) + thread_in_wg % 32 / 4;
}

// B^T's fragment of k8 slice s of a stage, as stored: the lane's rows g and g + 8 are B's columns
// n_pair and n_pair + 1 (one 8-byte load per k), k = 8s + t and 8s + t + 4.
__device__ __forceinline__ void load_fragment_unrounded(const float* bs, int s, int n_pair, int t,
                                                        float (&fragment)[4]) {
  const float* const row = bs + (8 * s + t) * kRowB + n_pair;
  const float2 k_t = *reinterpret_cast<const float2*>(row);
  const float2 k_t4 = *reinterpret_cast<const float2*>(row + 4 * kRowB);
  fragment[0] = k_t.x;
  fragment[1] = k_t.y;
  fragment[2] = k_t4.x;
  fragment[3] = k_t4.y;
}

// The same from a K-major B^T's tile (op_b = t): the lane's rows `row` and row + 8 (its columns of
// C, k_major_fragment_columns), k = 8s + t and 8s + t + 4.
__device__ __forceinline__ void load_k_major_fragment_unrounded(const float* bts, int s, int row,
                                                                int t, float (&fragment)[4]) {
  fragment[0] = bts[offset_a(row, 8 * s + t)];
  fragment[1] = bts[offset_a(row + 8, 8 * s + t)];
  fragment[2] = bts[offset_a(row, 8 * s + t + 4)];
  fragment[3] = bts[offset_a(row + 8, 8 * s + t + 4)];
}

// The same, rounded to TF32.
__device__ __forceinline__ void load_fragment(const float* bs, int s, int n_pair, int t,
                                              float (&fragment)[4]) {
  load_fragment_unrounded(bs, s, n_pair, t, fragment);
#pragma unroll
  for (int r = 0; r < 4; ++r) fragment[r] = tt_tf32_round(fragment[r]);
}

// Issues half of a step, k8 slices 2 half and 2 half + 1, as one wgmma group (committed): B^T's
// fragments loaded and rounded (unless B's tile holds TF32 already: Round false), then one wgmma a
// slice.
template <bool Round = true>
__device__ __forceinline__ void issue_half_step(float (&acc)[kBM / 2], const float* as,
                                                const float* bs, int half, int n_pair, int t) {
  float fragments[2][4];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if (Round) {
      load_fragment(bs, 2 * half + i, n_pair, t, fragments[i]);
    } else {
      load_fragment_unrounded(bs, 2 * half + i, n_pair, t, fragments[i]);
    }
  }
  tt_wgmma_fence();
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    tt_wgmma_tf32<kBM>(acc, fragments[i], tt_wgmma_descriptor(as + 8 * (2 * half + i)));
  }
  tt_wgmma_commit();
}

// Whether the launch takes 16-byte copies: lda, ldb and the pointers allow them. One main loop for
// 16-byte copies, one for 4-byte copies, chosen once for the launch.
__device__ __forceinline__ bool vector_copies(const float* A, const float* B, int lda, int ldb) {
  return lda % 4 == 0 && ldb % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0 &&
         reinterpret_cast<size_t>(B) % 16 == 0;
}

// Epilogue: acc[4j + i] is C's element (m0 + 8j + 2t + i % 2, n0 + n_pair + i / 2). Add: the
// block's sums are added into C (split K: k_slice), one atomicAdd an element.
template <bool Add = false>
__device__ __forceinline__ void store_tile(const BlockOperands& op, float* __restrict__ C, int ldc,
                                           const float (&acc)[kBM / 2], int n_pair, int t) {
  const int rows = op.M - op.m0, cols = op.N - op.n0;
#pragma unroll
  for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = 8 * j + 2 * t + i % 2, n = n_pair + i / 2;
      if (m < rows && n < cols) {
        float* const c = C + (size_t)(op.m0 + m) * ldc + op.n0 + n;
        if (Add) {
          atomicAdd(c, acc[4 * j + i]);
        } else {
          *c = acc[4 * j + i];
        }
      }
    }
  }
}

// The same, a lane's two adjacent columns stored as one 8-byte word where ldc and C allow it and
// both columns exist (a warp's stores then fill every 32-byte sector they touch, where one float at
// a time fills half of each), else store_tile. tf32_wgmma_rounded_loads: 1-5% at 2048^3 to 8192^3.
// (The other templates keep store_tile: their measured machine code.)
__device__ __forceinline__ void store_tile_pairs(const BlockOperands& op, float* __restrict__ C,
                                                 int ldc, const float (&acc)[kBM / 2], int n_pair,
                                                 int t) {
  const int rows = op.M - op.m0, cols = op.N - op.n0;
  if (!(ldc % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0 && n_pair + 1 < cols)) {
    store_tile(op, C, ldc, acc, n_pair, t);
    return;
  }
  float* const corner = C + (size_t)(op.m0 + 2 * t) * ldc + op.n0 + n_pair;
#pragma unroll
  for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (8 * j + 2 * t + r < rows) {
        *reinterpret_cast<float2*>(corner + (size_t)(8 * j + r) * ldc) =
            make_float2(acc[4 * j + r], acc[4 * j + r + 2]);
      }
    }
  }
}

// The store of a build with an epilogue (alpha, beta, a bias, an activation) or a K-major B (op_b =
// t): acc[4j + 2c + r] is the element of row 8j + 2t + r and column first + c ColumnStep (1:
// fragment_columns' adjacent pair, 8: k_major_fragment_columns'). A lane's two columns as one
// 8-byte word where they are adjacent, ldc and C allow and both exist, as store_tile_pairs, else
// one float at a time; each element act(alpha * acc + beta * C + bias)
// (tt_built_epilogue_with_bias: C read only where beta != 0), each column's bias read once.
template <int ColumnStep>
__device__ __forceinline__ void store_built(const BlockOperands& op, float* __restrict__ C, int ldc,
                                            const float (&acc)[kBM / 2], int first, int t,
                                            const tt_gemm_args& args) {
  const int rows = op.M - op.m0, cols = op.N - op.n0, second = first + ColumnStep;
  const bool pairs = ColumnStep == 1 && ldc % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0 &&
                     second < cols;
  // (Columns past N are computed from nothing and never stored: the bias has N floats.)
  const float bias0 = first < cols ? tt_built_bias(op.n0 + first, args) : 0.0f;
  const float bias1 = second < cols ? tt_built_bias(op.n0 + second, args) : 0.0f;
  float* const corner = C + (size_t)(op.m0 + 2 * t) * ldc + op.n0 + first;
#pragma unroll
  for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (8 * j + 2 * t + r >= rows) continue;
      float* const c = corner + (size_t)(8 * j + r) * ldc;
      // C's two elements read (beta only) and the epilogue applied once, whichever store follows:
      // an epilogue in both branches was twice the code (GELU's: past the instruction cache).
      float2 c0 = make_float2(0.0f, 0.0f);
      if (TT_BETA) {
        if (pairs) {
          c0 = *reinterpret_cast<const float2*>(c);
        } else {
          if (first < cols) c0.x = c[0];
          if (second < cols) c0.y = c[ColumnStep];
        }
      }
      const float e0 = tt_built_epilogue_with_bias(acc[4 * j + r], &c0.x, bias0, args);
      const float e1 = tt_built_epilogue_with_bias(acc[4 * j + r + 2], &c0.y, bias1, args);
      if (pairs) {
        *reinterpret_cast<float2*>(c) = make_float2(e0, e1);
      } else {
        if (first < cols) c[0] = e0;
        if (second < cols) c[ColumnStep] = e1;
      }
    }
  }
}

// The block of a kernel whose every thread copies and multiplies (tf32_wgmma, tf32x3_wgmma), on its
// main loop: Loop<Vectors> holds `copies` (StageCopies), the lane's n_pair and t, and provides
// land<Pending>(step) (wait for a step's copies, prepare A, fence) and step(step, acc). The
// product goes to store(op, C, ldc, acc, n_pair, t); n_pair is the lane's first column
// (k_major_fragment_columns where B's tile is K-major, else fragment_columns).
template <template <bool> class Loop, bool Vectors, class Store>
__device__ __forceinline__ void every_thread_gemm(const BlockOperands& op, float* __restrict__ C,
                                                  int ldc, float* shared, const Store& store) {
  using Copies = decltype(Loop<Vectors>::copies);
  const int tid = threadIdx.x;
  const Loop<Vectors> loop = {Copies(op, shared, tid),
                              Copies::kTransposedB ? k_major_fragment_columns(tid / 128, tid % 128)
                                                   : fragment_columns(tid / 128, tid % 128),
                              tid % 4};
  float acc[kBM / 2];
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) acc[i] = 0.0f;

  // Prologue: the first STAGES - 2 steps in flight, step 0 landed.
  loop.copies.start();
  loop.template land<kStages - 3>(0);
  for (int step = 0; step < loop.copies.steps; ++step) loop.step(step, acc);
  tt_wgmma_wait<0>(acc);  // the last step's wgmma, where it left them in flight
  store(op, C, ldc, acc, loop.n_pair, loop.t);
}

// Such a kernel's body: its block's operands, and the main loop of the launch's copy width. By
// default C = A B stored as it is (store_tile).
struct PlainStore {
  __device__ __forceinline__ void operator()(const BlockOperands& op, float* __restrict__ C, int ldc,
                                             const float (&acc)[kBM / 2], int n_pair, int t) const {
    store_tile(op, C, ldc, acc, n_pair, t);
  }
};

template <template <bool> class Loop, class Store = PlainStore>
__device__ __forceinline__ void every_thread_gemm(const float* A, const float* B, float* C, int M,
                                                  int N, int K, int lda, int ldb, int ldc,
                                                  float4* shared_bytes, const Store& store = {}) {
  float* const shared = tt_shared_align_1024(shared_bytes);
  const BlockOperands op = block_operands(A, B, M, N, K, lda, ldb);
  if (vector_copies(A, B, lda, ldb)) {
    every_thread_gemm<Loop, true>(op, C, ldc, shared, store);
  } else {
    every_thread_gemm<Loop, false>(op, C, ldc, shared, store);
  }
}
