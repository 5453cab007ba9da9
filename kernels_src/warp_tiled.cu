// warp_tiled: a register-blocked, warp-tiled, pipelined SGEMM in exact FP32 (FFMA only).
//
// A block computes a BM x BN tile of C, walking its share of K in steps of BK. Each step's tiles of
// A and B are copied to shared memory STAGES - 1 steps ahead of their use (cp.async through
// <tiletune/async_copy.h>: on the CPU backend a copy lands only when a wait retires it, so a
// missing or short wait fails the fuzz there too), so loads overlap the arithmetic and one barrier
// per step suffices. The block's warps split its tile into warp tiles of (4 TM) x (8 TN): lanes
// form a 4 x 8 grid and each thread keeps a TM x TN tile of C in registers, built of 4 x 4 pieces
// whose rows sit 16 apart and whose columns sit 32 apart, so that every shared-memory read is a
// conflict-free 16-byte vector.
//
// A's tile is stored transposed (As[k][m]) so a thread reads four rows of one k at once. The
// copies into it are 4 bytes wide (one element changes place); against the bank conflicts of
// those writes it is padded by four floats per row or, with SWIZZLE, its 4-float groups are
// XOR-swizzled by k. B's tile keeps its layout and is copied 16 bytes at a time when ldb and the
// pointer allow, else 4 (or the launcher copies B into aligned rows first, copy_unaligned below): the
// kernel picks one of two instances of its main loop, so the loop holds only the copies it issues. Only blocks on the edge of C, and the last step of K, take the masked
// copies; full tiles take the unmasked ones.
//
// The BLAS contract (<tiletune/gemm_contract.h>) is compiled in, one build per combination a
// problem asks for, so that the plain build, the one tuned, is the code above alone. Both tiles
// are held k-major whatever the operands' layout, so a transpose only changes the copies: a
// transposed A is stored k-major already and is copied like B (16 bytes where lda allows); a
// transposed B is copied like A, 4 bytes an element, into a tile padded like A's by four floats
// a row (the build's larger shared memory: `shared` reads OP_B). alpha, beta, the bias and the activation are applied as C is stored; a batch offsets
// the pointers by its entry (grid z: SPLIT_K slices for each entry).
//
// C is written with scalar stores. Vector stores would pin each row of four accumulators to an
// aligned register quad, the same register bank as the B fragment each of them meets in its FFMA:
// ptxas then allocates most FFMAs two reads from one bank (77% of them at 8x8, against 18% with
// scalar stores, in the H100's SASS) and the loop loses 2-4% (PERFORMANCE.md, v5).
//
// SPLIT_K > 1 splits K over gridDim.z: each slice adds its partial product into C atomically, and
// the launcher clears C first (the zero_output declaration). It pays where M x N gives too few
// blocks to fill the GPU and K is long.
//
// STREAM_K > 0 schedules the tiles in waves of STREAM_K x SM_COUNT blocks (the GPU's
// multiprocessor count, from the launcher; STREAM_K stands for the blocks an SM holds). When the
// tiles do not fill a whole number of waves, the last whole wave's tiles and the partial wave's
// are spread evenly over one wave by their k-steps (stream-K, Osama et al., PPoPP 2023); the waves
// before compute whole tiles, and fewer tiles than a wave are all spread. A part of a share that
// covers only some of a tile's K adds it into C atomically (C cleared first), so that no SM idles
// while a partial wave finishes: at 4096^3 with 128 x 128 tiles, 1024 tiles are 3.9 waves of 264.
//
// tiletune: name warp_tiled
// tiletune: entry warp_tiled_gemm
// tiletune: supports op_a op_b alpha beta batch epilogue
// tiletune: specializes op_a op_b alpha beta batch epilogue
// tiletune: param BM 32 64 128 256
// tiletune: param BN 32 64 128 256
// tiletune: param BK 8 16 32
// tiletune: param TM 4 8 16
// tiletune: param TN 4 8 16
// tiletune: param STAGES 2 3 4
// tiletune: param SWIZZLE 0 1
// tiletune: param SPLIT_K 1 4 16 64
// tiletune: param STREAM_K 0 1 2 4
// A warp tile is (4 TM) x (8 TN), and a block holds one or more of them in 128 or 256 threads.
// Thread tiles of 16 to 128 elements, neither side more than twice the other; 4 x 4 (two shared
// loads per 16 FFMA) only in small block tiles.
// tiletune: require BM % (4 * TM) == 0 && BN % (8 * TN) == 0
// tiletune: require (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// tiletune: require TM * TN <= 128 && TM <= 2 * TN && TN <= 2 * TM
// tiletune: require TM * TN >= 32 || BM * BN <= 64 * 64
// 24 to 48 k in flight, 64 with thread tiles of 64 accumulators or more (where BK 32 pays: the
// step's fixed cost over twice the FFMAs); at most half an SM's shared memory, so that two blocks fit.
// tiletune: require BK * STAGES >= 24 && BK * STAGES <= 64
// tiletune: require BK * STAGES <= 48 || (TM * TN >= 64 && SPLIT_K == 1)
// tiletune: require STAGES * BK * (BM + BN + 4) * 4 <= 113 * 1024
// Split K only with small block tiles; stream-K with large ones (from 64 x 128: at 1023x1025x1021
// its 144 tiles are 1.1 waves of 132 SMs), two stages of 16 k (where it measured faster: its
// shares' pipelines restart more often) and no swizzle, and not both.
// tiletune: require SPLIT_K == 1 || BM * BN <= 64 * 64
// tiletune: require STREAM_K == 0 || (SPLIT_K == 1 && BM * BN >= 64 * 128 && TM * TN >= 64)
// tiletune: require STREAM_K == 0 || (STAGES == 2 && BK == 16 && !SWIZZLE)
// Tuning limits, not preconditions (every configuration is correct at every shape, and is fuzzed
// so): no tile more than twice the matrix it covers, and split K only where C's tiles are too few
// to fill the GPU, with at least 4 steps per slice.
// tiletune: tune_if BM < 2 * max(M, 32) && BN < 2 * max(N, 32)
// tiletune: tune_if SPLIT_K == 1 || (ceil_div(M, BM) * ceil_div(N, BN) < 128 && K >= 4 * BK * SPLIT_K)
// B's rows (a transposed A's) are copied 16 bytes at a time only where they start 16-byte
// aligned, else 4 bytes at a time. Where 16 rows of blocks or more each read all of B, the
// launcher's one copy of it into aligned rows costs less than the narrow copies (operand_staging.h:
// 2-4% at 3001x2999x1537, 4095x4097x4093 and 8191^3 on an H200; at 4 rows of blocks, 1023x1025x1021
// and 257x4099x513, the copy cost more than it saved).
// tiletune: copy_unaligned B !OP_B && ceil_div(M, BM) >= 16
// tiletune: copy_unaligned A OP_A && ceil_div(N, BN) >= 16
// tiletune: block (BM / TM) * (BN / TN)
// tiletune: tile BM, BN, BK
// Stream-K: the wave across, the waves down (the whole-tile waves, then the shared one).
// tiletune: grid STREAM_K ? STREAM_K * SM_COUNT : ceil_div(N, BN), STREAM_K ? max(ceil_div(M, BM) * ceil_div(N, BN) / (STREAM_K * SM_COUNT), 1) : ceil_div(M, BM), SPLIT_K
// tiletune: shared STAGES * BK * (BM + BN + (SWIZZLE ? 0 : 4) + (OP_B ? 4 : 0)) * 4
// tiletune: zero_output SPLIT_K > 1 || (STREAM_K > 0 && (ceil_div(M, BM) * ceil_div(N, BN)) % (STREAM_K * SM_COUNT) != 0)

#include <tiletune/async_copy.h>
#include <tiletune/gemm_contract.h>

constexpr int kBM = TT_BM, kBN = TT_BN, kBK = TT_BK, kTM = TT_TM, kTN = TT_TN;
constexpr int kStages = TT_STAGES;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
constexpr int kWarpM = 4 * kTM;  // lanes 4 down x 8 across
constexpr int kWarpN = 8 * kTN;
constexpr int kWarpsN = kBN / kWarpN;
constexpr int kStrideA = kBM + (TT_SWIZZLE ? 0 : 4);  // floats per k-row of the transposed A tile
constexpr int kTileA = kBK * kStrideA;
// B's tile is padded by four floats per row where B is transposed: its copies are then 4 bytes
// wide, k apart, and would otherwise all land in one bank (BN is a multiple of 32 floats). Padded
// rather than swizzled: the fragments' reads keep immediate offsets.
constexpr int kTileB = kBK * (kBN + (TT_OP_B ? 4 : 0));
constexpr int kStrideB = kTileB / kBK;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Where element (k, m) of A's tile lives in its k-row: swizzling moves whole 4-float groups, so
// a 16-byte read of four consecutive m stays one aligned vector.
__device__ __forceinline__ int slot_a(int k, int m) {
#if TT_SWIZZLE
  return m ^ ((k & 7) << 2);
#else
  return m;
#endif
}

#if !TT_OP_A && !TT_OP_B
// The plain build keeps the copy plan it was tuned with. OperandCopy below does the same copies,
// but ptxas schedules it otherwise in some configurations (2101 of 3144 instructions differ at
// 64 x 64 with split-K), and the plain build is meant to be the shipped code, instruction for
// instruction.
//
// Which elements of each step's tiles this thread copies, fixed for the whole kernel. Thread t
// copies column t % BK of A's tile in rows t / BK + R i (R = threads / BK), and the 4-float group
// t % (BN / 4) of B's tile in rows t / (BN / 4) + S j (S = threads / (BN / 4)).
struct CopyPlan {
  static constexpr int kRowsA = kThreads / kBK;         // R
  static constexpr int kPassesA = kBM / kRowsA;
  static constexpr int kGroupsB = kBN / 4;
  static constexpr int kRowsB = kThreads / kGroupsB;    // S
  static constexpr int kPassesB = ceil_div(kBK, kRowsB);

  const float* a;  // this thread's first A element of the next step
  const float* b;  // and of B
  size_t a_pass, b_pass, b_step;  // pointer steps between passes, and B's between steps
  int a_row, a_col, b_row, b_col;  // within the tiles
  int rows_left, cols_left;       // of C from the block's corner (masks at the edge)

  __device__ __forceinline__ CopyPlan(const float* A, const float* B, int M, int N, int lda,
                                      int ldb, int m0, int n0, int k0, int tid) {
    a_row = tid / kBK, a_col = tid % kBK;
    b_row = tid / kGroupsB, b_col = 4 * (tid % kGroupsB);
    a = A + (size_t)(m0 + a_row) * lda + k0 + a_col;
    b = B + (size_t)(k0 + b_row) * ldb + n0 + b_col;
    a_pass = (size_t)kRowsA * lda;
    b_pass = (size_t)kRowsB * ldb;
    b_step = (size_t)kBK * ldb;
    rows_left = M - m0, cols_left = N - n0;
  }

  // Copies one step's tiles into a stage; `k_left` is how much of the slice's K remains from this
  // step's first k (>= kBK: no mask in K), `full` says the block is inside C as well.
  template <bool Full, bool AVectors, bool BVectors>
  __device__ __forceinline__ void copy_step(float* As, float* Bs, int k_left, const float* A,
                                            const float* B) {
#pragma unroll
    for (int pass = 0; pass < kPassesA; ++pass) {
      const int m = a_row + pass * kRowsA;
      float* dst = As + a_col * kStrideA + slot_a(a_col, m);
      const float* src = a + pass * a_pass;
      if (Full) {
        tt_cp_async_4(dst, src, 4);
      } else {
        const bool inside = m < rows_left && a_col < k_left;
        tt_cp_async_4(dst, inside ? src : A, inside ? 4 : 0);
      }
    }
#pragma unroll
    for (int pass = 0; pass < kPassesB; ++pass) {
      const int k = b_row + pass * kRowsB;
      if (kBK % kRowsB != 0 && k >= kBK) break;
      float* dst = Bs + k * kBN + b_col;
      const float* src = b + pass * b_pass;
      const int valid = Full ? 4 : (k < k_left ? min(max(cols_left - b_col, 0), 4) : 0);
      if (BVectors) {
        tt_cp_async_16(dst, valid > 0 ? src : B, 4 * valid);
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          tt_cp_async_4(dst + c, c < valid ? src + c : B, c < valid ? 4 : 0);
        }
      }
    }
    a += kBK;
    b += b_step;
  }
};
#else
// A build with a transposed operand: each operand copied as its layout asks (OperandCopy).
// One operand's share of each step's copies, fixed for the whole kernel. Its tile is held k-major,
// tile[k][x] with x along M (A) or N (B), kX wide and kStride floats a row.
//  - an operand stored x-major (A as stored, B transposed: K contiguous): thread t copies k
//    = t % BK of the x-rows t / BK + R i (R = threads / BK), an element each, which changes place;
//  - one stored k-major (B as stored, A transposed): the 4-float group t % (kX / 4) of the k-rows
//    t / (kX / 4) + S j (S = threads / (kX / 4)), 16 bytes at once where `Vectors` allows.
template <int kX, int kStride, bool Swizzled, bool KMajor>
struct OperandCopy {
  static constexpr int kRows = KMajor ? kThreads / (kX / 4) : kThreads / kBK;
  static constexpr int kPasses = KMajor ? ceil_div(kBK, kRows) : kX / kRows;

  const float* p;                 // this thread's first element of the next step
  size_t pass_step, k_step;       // pointer steps between passes, and between steps
  int row, col;                   // of the stored operand, within the step's tile
  int x_left;                     // of op's rows (A) or columns (B) from the block's corner

  __device__ __forceinline__ OperandCopy(const float* base, int ld, int x0, int k0, int x_size,
                                         int tid) {
    if (KMajor) {
      row = tid / (kX / 4), col = 4 * (tid % (kX / 4));  // row: k, col: x
      p = base + (size_t)(k0 + row) * ld + x0 + col;
      k_step = (size_t)kBK * ld;
    } else {
      row = tid / kBK, col = tid % kBK;  // row: x, col: k
      p = base + (size_t)(x0 + row) * ld + k0 + col;
      k_step = kBK;
    }
    pass_step = (size_t)kRows * ld;
    x_left = x_size - x0;
  }

  // Copies one step's tile into a stage; `k_left` is how much of the slice's K remains from this
  // step's first k (>= kBK: no mask in K), `Full` says the block is inside C as well. `any` is a
  // valid address for the copies that bring nothing.
  template <bool Full, bool Vectors>
  __device__ __forceinline__ void copy_step(float* tile, int k_left, const float* any) {
    if (!KMajor) {
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass) {
        const int x = row + pass * kRows;
        float* dst = tile + col * kStride + (Swizzled ? slot_a(col, x) : x);
        const float* src = p + pass * pass_step;
        if (Full) {
          tt_cp_async_4(dst, src, 4);
        } else {
          const bool inside = x < x_left && col < k_left;
          tt_cp_async_4(dst, inside ? src : any, inside ? 4 : 0);
        }
      }
    } else {
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass) {
        const int k = row + pass * kRows;
        if (kBK % kRows != 0 && k >= kBK) break;
        float* dst = tile + k * kStride + (Swizzled ? slot_a(k, col) : col);
        const float* src = p + pass * pass_step;
        const int valid = Full ? 4 : (k < k_left ? min(max(x_left - col, 0), 4) : 0);
        if (Vectors) {
          tt_cp_async_16(dst, valid > 0 ? src : any, 4 * valid);
        } else {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            tt_cp_async_4(dst + c, c < valid ? src + c : any, c < valid ? 4 : 0);
          }
        }
      }
    }
    p += k_step;
  }
};

using CopyA = OperandCopy<kBM, kStrideA, TT_SWIZZLE != 0, TT_OP_A != 0>;
using CopyB = OperandCopy<kBN, kStrideB, false, TT_OP_B == 0>;

struct CopyPlan {
  CopyA a_copy;
  CopyB b_copy;

  __device__ __forceinline__ CopyPlan(const float* A, const float* B, int M, int N, int lda,
                                      int ldb, int m0, int n0, int k0, int tid)
      : a_copy(A, lda, m0, k0, M, tid), b_copy(B, ldb, n0, k0, N, tid) {}

  template <bool Full, bool AVectors, bool BVectors>
  __device__ __forceinline__ void copy_step(float* As, float* Bs, int k_left, const float* A,
                                            const float* B) {
    a_copy.template copy_step<Full, AVectors>(As, k_left, A);
    b_copy.template copy_step<Full, BVectors>(Bs, k_left, B);
  }
};
#endif

// One k of this thread's rows of A and columns of B: TM / 4 and TN / 4 16-byte reads.
struct Fragments {
  float a[kTM], b[kTN];

  __device__ __forceinline__ void load(const float* As, const float* Bs, int k, int a_col,
                                       int b_col) {
#pragma unroll
    for (int i = 0; i < kTM / 4; ++i) {
      const float4 v =
          *reinterpret_cast<const float4*>(As + k * kStrideA + slot_a(k, a_col + 16 * i));
      a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < kTN / 4; ++j) {
      const float4 v =
          *reinterpret_cast<const float4*>(Bs + k * kStrideB + b_col + 32 * j);
      b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
    }
  }
};

// acc += the product of one stage's tiles, for this thread's rows and columns. The fragments of
// k + 1 are read before the FFMAs of k, so that shared-memory latency hides behind arithmetic.
__device__ __forceinline__ void multiply_tiles(const float* As, const float* Bs, int a_col,
                                               int b_col, float (&acc)[kTM][kTN]) {
  Fragments fragments[2];
  fragments[0].load(As, Bs, 0, a_col, b_col);
#pragma unroll
  for (int k = 0; k < kBK; ++k) {
    if (k + 1 < kBK) fragments[(k + 1) % 2].load(As, Bs, k + 1, a_col, b_col);
    const Fragments& f = fragments[k % 2];
    // Serpentine order: odd rows walk the columns backwards, so that consecutive FFMAs share an
    // operand (the register reuse cache) at the turns as well; it measured faster (notes file).
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
#pragma unroll
      for (int jj = 0; jj < kTN; ++jj) {
        const int j = i % 2 ? kTN - 1 - jj : jj;
        acc[i][j] = fmaf(f.a[i], f.b[j], acc[i][j]);
      }
    }
  }
}

__device__ __forceinline__ int next_stage(int stage) {
  return stage == kStages - 1 ? 0 : stage + 1;
}

// The product of op(A)'s rows from m0 and op(B)'s columns from n0 over k_begin to k_end, a tile
// of C, with A's and B's k-major copies 16 bytes wide (AVectors, BVectors) or 4; stored through
// the build's epilogue, or added into C (`accumulate`). `stage` is where the first step lands,
// and on return the stage after the last step's: a block that computes several (stream-K) keeps
// the stages turning, so that the next one's first copies go to every stage but the one the last
// step read, which every thread was done with when it passed that step's barrier. No barrier is
// needed between them.
template <bool AVectors, bool BVectors>
__device__ __forceinline__ void gemm_tile(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K, int lda,
                                          int ldb, int ldc, const tt_gemm_args& args,
                                          float* const As, int m0, int n0, int k_begin, int k_end,
                                          bool accumulate, int& stage) {
  float* const Bs = As + kStages * kTileA;  // kStages tiles of A, then of B

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int a_col = (warp / kWarpsN) * kWarpM + (lane / 8) * 4;  // first of the thread's rows
  const int b_col = (warp % kWarpsN) * kWarpN + (lane % 8) * 4;  // first of its columns

  const int steps = ceil_div(max(k_end - k_begin, 0), kBK);
  const bool interior = m0 + kBM <= M && n0 + kBN <= N;
  CopyPlan plan(A, B, M, N, lda, ldb, m0, n0, k_begin, tid);
  int k_left = k_end - k_begin;  // of the slice, from the first k of the next step to copy
  // Copies the next step in order into stage `into`: unmasked unless it is at an edge.
  const auto copy_step = [&](int into) {
    if (interior && k_left >= kBK) {
      plan.copy_step<true, AVectors, BVectors>(As + into * kTileA, Bs + into * kTileB, k_left, A, B);
    } else {
      plan.copy_step<false, AVectors, BVectors>(As + into * kTileA, Bs + into * kTileB, k_left, A, B);
    }
    k_left -= kBK;
  };

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  }

  // Prologue: the first kStages - 1 steps in flight, one commit group each (empty past the end,
  // so that the wait below always counts the same number of groups).
  int write_stage = stage;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) copy_step(write_stage);
    tt_cp_async_commit();
    write_stage = next_stage(write_stage);
  }
  // The stages turn without a division: step reads read_stage, step + kStages - 1 lands in
  // write_stage, the stage step - 1 read.
  int read_stage = stage;
  for (int step = 0; step < steps; ++step) {
    tt_cp_async_wait<kStages - 2>();  // this thread's copies of `step` have landed
    __syncthreads();             // everyone's have, and everyone is done with step - 1's stage
    if (step + kStages - 1 < steps) copy_step(write_stage);  // into step - 1's stage
    tt_cp_async_commit();
    multiply_tiles(As + read_stage * kTileA, Bs + read_stage * kTileB, a_col, b_col, acc);
    read_stage = next_stage(read_stage);
    write_stage = next_stage(write_stage);
  }
  stage = read_stage;

  // Epilogue: this thread's rows a_col + 16 (i / 4) + i % 4 and columns b_col + 32 (j / 4) + j % 4,
  // one scalar store each (see the top of the file for why not vectors). The plain build stores
  // acc; the others what the problem asks (tt_built_epilogue).
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = m0 + a_col + 16 * (i / 4) + i % 4;
    if (!interior && row >= M) continue;
    float* const c_row = C + (size_t)row * ldc;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int col = n0 + b_col + 32 * (j / 4) + j % 4;
      if (!interior && col >= N) continue;
      if (accumulate) {
        atomicAdd(c_row + col, TT_ALPHA ? args.alpha * acc[i][j] : acc[i][j]);
      } else {
        c_row[col] = tt_built_epilogue(acc[i][j], c_row + col, col, args);
      }
    }
  }
}

// Thread tiles of up to 64 accumulators fit in 128 registers: asking for four blocks of 128 threads
// an SM (or two of 256) keeps ptxas there, where it would otherwise take a few more and lose a block.
// Not with SWIZZLE, whose addresses need more and would spill.
constexpr int kMinBlocksPerSM = kTM * kTN <= 64 && !TT_SWIZZLE ? 512 / kThreads : 1;

// What this block computes: its slice of K of its tile, or under stream-K its tile or its share.
template <bool AVectors, bool BVectors>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K, int lda,
                                           int ldb, int ldc, const tt_gemm_args& args,
                                           float* const As) {
#if TT_STREAM_K
  const int tiles_n = ceil_div(N, kBN), tiles = ceil_div(M, kBM) * tiles_n;
  const int wave = gridDim.x;
  const int whole_waves = tiles / wave;
  const int whole_tiles = tiles % wave == 0 ? tiles : max(whole_waves - 1, 0) * wave;
  const int block = blockIdx.y * wave + blockIdx.x;
  // The k-steps of every tile in a row (tile-major) this block computes: a whole tile, or in the
  // last wave an even share of the rest's steps.
  const int steps = ceil_div(K, kBK);
  long long begin, end;
  if (block < whole_tiles) {
    begin = (long long)block * steps, end = begin + steps;
  } else {
    const long long shared_steps = (long long)(tiles - whole_tiles) * steps;
    const long long first = (long long)whole_tiles * steps;
    const int share = block - whole_tiles;
    begin = first + shared_steps * share / wave;
    end = first + shared_steps * (share + 1) / wave;
  }
  for (int stage = 0; begin < end;) {
    const int tile = int(begin / steps), k0 = int(begin % steps);
    const int k1 = int(min((long long)steps, k0 + (end - begin)));
    gemm_tile<AVectors, BVectors>(A, B, C, M, N, K, lda, ldb, ldc, args, As,
                                  (tile / tiles_n) * kBM, (tile % tiles_n) * kBN, k0 * kBK,
                                  min(K, k1 * kBK), k0 > 0 || k1 < steps, stage);
    begin += k1 - k0;
  }
#else
  // This block's slice of K: whole steps, so that only the slice's last step is partial.
  const int k_per_slice = ceil_div(K, TT_SPLIT_K * kBK) * kBK;
  // (z is the slice alone where there is no batch: written so, the plain build is the code tuned)
  const int k_begin = (TT_BATCH ? blockIdx.z % TT_SPLIT_K : blockIdx.z) * k_per_slice;
  const int k_end = min(K, k_begin + k_per_slice);
  if (TT_SPLIT_K > 1 && k_begin >= k_end) return;  // an empty slice adds nothing
  int stage = 0;
  gemm_tile<AVectors, BVectors>(A, B, C, M, N, K, lda, ldb, ldc, args, As, blockIdx.y * kBM,
                                blockIdx.x * kBN, k_begin, k_end, TT_SPLIT_K > 1, stage);
#endif
}

extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocksPerSM)
    warp_tiled_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K, int lda, int ldb, int ldc, const tt_gemm_args args) {
  extern __shared__ float4 shared_tiles[];
  float* const tiles = reinterpret_cast<float*>(shared_tiles);
  // The batch's entries follow the template's grid in z (SPLIT_K slices each).
  if (TT_BATCH) {
    const long long entry = blockIdx.z / TT_SPLIT_K;
    A += entry * args.stride_a;
    B += entry * args.stride_b;
    C += entry * args.stride_c;
  }
  // 16-byte copies of an operand held k-major (B as stored, A transposed) where its rows and the
  // entry's pointer allow: one instance of the main loop for each choice the build has.
  const bool a_vectors = TT_OP_A && lda % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool b_vectors = !TT_OP_B && ldb % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  if (a_vectors) {
    if (b_vectors) {
      gemm_block<true, true>(A, B, C, M, N, K, lda, ldb, ldc, args, tiles);
    } else {
      gemm_block<true, false>(A, B, C, M, N, K, lda, ldb, ldc, args, tiles);
    }
  } else if (b_vectors) {
    gemm_block<false, true>(A, B, C, M, N, K, lda, ldb, ldc, args, tiles);
  } else {
    gemm_block<false, false>(A, B, C, M, N, K, lda, ldb, ldc, args, tiles);
  }
}
