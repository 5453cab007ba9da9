// tf32_wgmma: SGEMM in TF32 on Hopper's warpgroup tensor-core instruction (wgmma.mma_async), FP32
// accumulation: the same arithmetic and error bound as tf32_mma.cu, on the instruction cuBLAS's
// fast TF32 kernels use. wgmma multiplies a 64 x N x 8 step per warpgroup (128 threads) and runs
// asynchronously, so the warps issue their next loads while the tensor cores work.
//
// Roles. TF32 wgmma reads only K-major operands from shared memory: the register operand (64 x 8)
// may come from anywhere, the shared one must have each of its N columns' 8 k contiguous. A is
// K-major (a row of A is contiguous in k), B is not (a row of B is contiguous in n). So the kernel
// computes C^T = B^T A^T: wgmma's M is our N (a warpgroup's 64 columns of C), its N is our M (BM
// rows of C), its register operand is B^T (each lane loads its fragment from B's tile and rounds
// it to TF32), its shared operand is A's tile as global memory has it.
//
// Shared memory. A's tile is BM rows of BK = 32 floats (128 bytes), the 16-byte chunk c of row m
// at chunk c ^ (m % 8): wgmma's 128-byte swizzle, so that its reads of 8 rows hit 8 different
// chunks of the banks; the tiles start 1024-byte aligned, as the swizzle is on address bits. B's
// tile keeps global memory's orientation, rows of 64 WARPGROUPS + 8 floats. A lane's fragment rows
// g and g + 8 (wgmma's M) are taken as B's adjacent columns 2g and 2g + 1, so that a fragment is
// two 8-byte loads (rows t and t + 4, t = lane % 4); a half-warp's load reads 4 rows at 4 pairs
// of columns, which the 8-float pad puts 8 banks apart: no conflict.
//
// Pipeline. Each step's tiles are copied STAGES - 2 steps ahead with cp.async (16-byte copies
// where lda, ldb and the pointers allow, else four 4-byte ones per 4-float chunk; zero-filled past
// M, N and K; unmasked where the step lies wholly inside A and B), one commit group per step.
// wgmma truncates its inputs to TF32, and the shared operand cannot be rounded on its way, so each
// thread rounds the A chunks it copied, in place, once its copies have landed, then fences them
// for wgmma's proxy (fence.proxy.async); the next step's barrier makes everyone's visible. A step
// issues its four k8 slices as two wgmma groups, each waited for (but the newest) before the next
// is issued, and between them the copies of step + STAGES - 2; then it lands and rounds step + 1
// while its second group runs. kernels_src/PERFORMANCE.md has the measurements behind each choice.
//
// tiletune: name tf32_wgmma
// tiletune: entry tf32_wgmma_gemm
// tiletune: precision tf32
// tiletune: arch sm_90a
// C rows per block (wgmma's N), and warpgroups (64 columns of C each) per block.
// tiletune: param BM 64 128 256
// tiletune: param WARPGROUPS 1 2
// tiletune: param STAGES 4 5 6
// At most 227 KiB of shared memory (a block's most on Hopper).
// tiletune: require STAGES * (BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024 <= 227 * 1024
// One warpgroup only with 64 rows: with 128 or 256 it lost to two at the 4 large shapes measured.
// tiletune: require BM == 64 || WARPGROUPS == 2
// tiletune: tune_if BM <= 2 * max(M, 32) && 64 * WARPGROUPS <= 2 * max(N, 32)
// tiletune: block 128 * WARPGROUPS
// tiletune: grid ceil_div(N, 64 * WARPGROUPS), ceil_div(M, BM)
// tiletune: shared STAGES * (BM * 128 + 32 * (64 * WARPGROUPS + 8) * 4) + 1024

#include <tiletune/async_copy.h>
#include <tiletune/warpgroup_mma.h>

constexpr int kBM = TT_BM, kWarpgroups = TT_WARPGROUPS, kStages = TT_STAGES;
constexpr int kBN = 64 * kWarpgroups, kBK = 32;
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kRowB = kBN + 8;  // floats of a row of B's tile
constexpr int kTileA = kBM * kBK, kTileB = kBK * kRowB;
static_assert(kStages >= 3, "copies run STAGES - 2 steps ahead of the step whose wgmma run");

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Where element (m, k) of A's tile lies: wgmma's 128-byte swizzle.
__device__ __forceinline__ int offset_a(int m, int k) {
  return m * kBK + 4 * ((k / 4) ^ (m % 8)) + k % 4;
}

// The block's view of the operands: rows m0.. of A and C, columns n0.. of B and C.
struct BlockOperands {
  const float* A;
  const float* B;
  int M, N, K, lda, ldb, m0, n0;
};

// This thread's share of a step's copies, fixed for the kernel: 4-float chunks (a row's k4 of A,
// n4 of B), consecutive threads on consecutive chunks of a row. A chunk is one 16-byte copy where
// lda, ldb and the pointers allow (Vectors), else four 4-byte copies; either way the thread that
// copied a chunk of A rounds it as one 16-byte word.
struct CopyShare {
  static constexpr int kPassesA = kTileA / 4 / kThreads;
  static constexpr int kPassesB = kBK * kBN / 4 / kThreads;
  static_assert(kTileA % (4 * kThreads) == 0 && (kBK * kBN) % (4 * kThreads) == 0,
                "the tiles split evenly among the threads");
  // Element (m, k) of A's tile that starts this thread's chunk of pass p; and (k, n) of B's.
  __device__ __forceinline__ static void a_chunk(int tid, int p, int& m, int& k) {
    const int e = (tid + p * kThreads) * 4;
    m = e / kBK;
    k = e % kBK;
  }
  __device__ __forceinline__ static void b_chunk(int tid, int p, int& k, int& n) {
    const int e = (tid + p * kThreads) * 4;
    k = e / kBN;
    n = e % kBN;
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

// Issues this thread's copies of the step whose first k is k0 into one stage, masked: zero-filled
// past M, N and K (blocks on C's edge, the last step of K).
template <bool Vectors>
__device__ __forceinline__ void copy_step_masked(const BlockOperands& op, float* as, float* bs,
                                                 int k0, int tid) {
#pragma unroll
  for (int p = 0; p < CopyShare::kPassesA; ++p) {
    int m, k;
    CopyShare::a_chunk(tid, p, m, k);
    const int row = op.m0 + m, col = k0 + k;
    const int floats = row < op.M ? max(0, min(4, op.K - col)) : 0;
    const float* src = floats > 0 ? op.A + (size_t)row * op.lda + col : op.A;
    copy_chunk<Vectors, false>(as + offset_a(m, k), src, floats);
  }
#pragma unroll
  for (int p = 0; p < CopyShare::kPassesB; ++p) {
    int k, n;
    CopyShare::b_chunk(tid, p, k, n);
    const int row = k0 + k, col = op.n0 + n;
    const int floats = row < op.K ? max(0, min(4, op.N - col)) : 0;
    const float* src = floats > 0 ? op.B + (size_t)row * op.ldb + col : op.B;
    copy_chunk<Vectors, false>(bs + k * kRowB + n, src, floats);
  }
}

// The same for a step whose tiles lie wholly inside A and B: no masks, and the sources walk from
// pointers set once, so that a step costs little more than its copy instructions.
template <bool Vectors>
struct FullCopies {
  const float* a;  // this thread's first A element of step 0 (pass 0), and B's
  const float* b;
  size_t a_pass, b_pass, b_step;  // elements from one pass to the next; B's from a step to the next

  __device__ __forceinline__ FullCopies(const BlockOperands& op, int tid) {
    int m, k, n;
    CopyShare::a_chunk(tid, 0, m, k);
    a = op.A + (size_t)(op.m0 + m) * op.lda + k;
    a_pass = (size_t)(kThreads * 4 / kBK) * op.lda;
    CopyShare::b_chunk(tid, 0, k, n);
    b = op.B + (size_t)k * op.ldb + op.n0 + n;
    b_pass = (size_t)(kThreads * 4 / kBN) * op.ldb;
    b_step = (size_t)kBK * op.ldb;
  }

  __device__ __forceinline__ void copy_step(float* as, float* bs, int step, int tid) const {
    const float* src = a + (size_t)step * kBK;
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesA; ++p, src += a_pass) {
      int m, k;
      CopyShare::a_chunk(tid, p, m, k);
      copy_chunk<Vectors, true>(as + offset_a(m, k), src, 4);
    }
    src = b + step * b_step;
#pragma unroll
    for (int p = 0; p < CopyShare::kPassesB; ++p, src += b_pass) {
      int k, n;
      CopyShare::b_chunk(tid, p, k, n);
      copy_chunk<Vectors, true>(bs + k * kRowB + n, src, 4);
    }
  }
};

// Rounds to TF32, in place, the chunks of A this thread copied into the stage (landed: waited for).
__device__ __forceinline__ void round_own_copies(float* as, int tid) {
#pragma unroll
  for (int p = 0; p < CopyShare::kPassesA; ++p) {
    int m, k;
    CopyShare::a_chunk(tid, p, m, k);
    float4* const x = reinterpret_cast<float4*>(as + offset_a(m, k));
    const float4 v = *x;
    *x = make_float4(tt_tf32_round(v.x), tt_tf32_round(v.y), tt_tf32_round(v.z),
                     tt_tf32_round(v.w));
  }
}

// The main loop's state, fixed for the block.
template <bool Vectors>
struct MainLoop {
  BlockOperands op;
  FullCopies<Vectors> full;
  bool interior;  // the block is inside C: only the last step of K takes masked copies
  float* As;      // kStages tiles, each a multiple of 1024 bytes
  float* Bs;
  int steps, tid, n_pair, t;

  __device__ __forceinline__ void copy(int step) const {
    float* const as = As + step % kStages * kTileA;
    float* const bs = Bs + step % kStages * kTileB;
    if (interior && (step + 1) * kBK <= op.K) {
      full.copy_step(as, bs, step, tid);
    } else {
      copy_step_masked<Vectors>(op, as, bs, step * kBK, tid);
    }
  }

  // Waits for this thread's copies of `step` (all but the newest `pending` groups), rounds its A
  // elements and fences them for wgmma; a barrier later makes everyone's visible.
  template <int Pending>
  __device__ __forceinline__ void land(int step) const {
    tt_cp_async_wait<Pending>();
    if (step < steps) round_own_copies(As + step % kStages * kTileA, tid);
    tt_fence_proxy_async();
  }

  // One step: its four k8 slices issued as two wgmma groups of two, each waited for (but the
  // newest) before the next is issued, so that a slice's register operands are rewritten only
  // once the wgmma that read them is done; between the halves, the copies of step + STAGES - 2
  // are issued, after them step + 1's landed.
  __device__ __forceinline__ void step(int step, float (&acc)[kBM / 2]) const {
    // Everyone's copies of the step are rounded and fenced; everyone's wgmma of step - 1's first
    // half, so of step - 2, are done: step - 2's stage takes new copies.
    __syncthreads();
    const float* const as = As + step % kStages * kTileA;
    const float* const bs = Bs + step % kStages * kTileB;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      // B^T's fragments of slices 2 half and 2 half + 1: the lane's rows g and g + 8 are B's
      // columns n_pair and n_pair + 1 (one 8-byte load per k), k = 8s + t and 8s + t + 4.
      float fragments[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float* const row = bs + (8 * (2 * half + i) + t) * kRowB + n_pair;
        const float2 k_t = *reinterpret_cast<const float2*>(row);
        const float2 k_t4 = *reinterpret_cast<const float2*>(row + 4 * kRowB);
        fragments[i][0] = tt_tf32_round(k_t.x);
        fragments[i][1] = tt_tf32_round(k_t.y);
        fragments[i][2] = tt_tf32_round(k_t4.x);
        fragments[i][3] = tt_tf32_round(k_t4.y);
      }
      tt_wgmma_fence();
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        tt_wgmma_tf32<kBM>(acc, fragments[i], tt_wgmma_descriptor(as + 8 * (2 * half + i)));
      }
      tt_wgmma_commit();
      if (half == 0) {
        if (step + kStages - 2 < steps) copy(step + kStages - 2);
        tt_cp_async_commit();
      }
      tt_wgmma_wait<1>(acc);
    }
    // Of the copies issued, up to step + STAGES - 2, step + 1's have landed: all but STAGES - 3.
    land<kStages - 3>(step + 1);
  }
};

template <bool Vectors>
__device__ __forceinline__ void wgmma_gemm(const BlockOperands& op, float* __restrict__ C, int ldc,
                                           float* shared) {
  const int tid = threadIdx.x, t = tid % 4;
  const MainLoop<Vectors> loop = {
      op, FullCopies<Vectors>(op, tid), op.m0 + kBM <= op.M && op.n0 + kBN <= op.N,
      shared, shared + kStages * kTileA, ceil_div(op.K, kBK), tid,
      // The columns of C (of B's tile) of this lane's fragment rows g and g + 8: wgmma's M is ours
      // to map to C's columns, and this order gives each lane two adjacent ones.
      64 * (tid / 128) + 16 * (tid % 128 / 32) + 2 * (tid % 32 / 4), t};

  float acc[kBM / 2];
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) acc[i] = 0.0f;

  // Prologue: the first STAGES - 2 steps in flight, one commit group each (empty past the end,
  // so that the waits always count the same number of groups); step 0 landed.
#pragma unroll
  for (int s = 0; s < kStages - 2; ++s) {
    if (s < loop.steps) loop.copy(s);
    tt_cp_async_commit();
  }
  loop.template land<kStages - 3>(0);
  for (int step = 0; step < loop.steps; ++step) loop.step(step, acc);
  tt_wgmma_wait<0>(acc);
  const int n_pair = loop.n_pair;

  // Epilogue: acc[4j + i] is C's element (m0 + 8j + 2t + i % 2, n0 + n_pair + i / 2).
  const int rows = op.M - op.m0, cols = op.N - op.n0;
#pragma unroll
  for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = 8 * j + 2 * t + i % 2, n = n_pair + i / 2;
      if (m < rows && n < cols) C[(size_t)(op.m0 + m) * ldc + op.n0 + n] = acc[4 * j + i];
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tf32_wgmma_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K, int lda, int ldb, int ldc) {
  extern __shared__ float4 shared_bytes[];
  float* const shared = tt_shared_align_1024(shared_bytes);
  const BlockOperands op = {A, B, M, N, K, lda, ldb, (int)blockIdx.y * kBM,
                            (int)blockIdx.x * kBN};
  // One main loop for 16-byte copies, one for 4-byte copies, chosen once for the launch.
  const bool vectors = lda % 4 == 0 && ldb % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0 &&
                       reinterpret_cast<size_t>(B) % 16 == 0;
  if (vectors) {
    wgmma_gemm<true>(op, C, ldc, shared);
  } else {
    wgmma_gemm<false>(op, C, ldc, shared);
  }
}
