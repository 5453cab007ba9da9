// tiled: the shared-memory tiled SGEMM of the tutorials, made tunable.
//
// Each block computes a TILE x TILE tile of C, one element per thread. It walks K one tile at a
// time: every thread loads one element of A and one of B into shared memory (masked, so any
// M, N, K >= 1 and any leading dimension works), the block meets at a barrier, multiplies the two
// tiles, and meets again before the next load overwrites them.
//
// Bank conflicts are fought with either a padded row (PAD) or an XOR swizzle of the column index
// (SWIZZLE); combining both buys nothing, so the space leaves that pair out.
//
// It serves the whole BLAS contract: transposes are a runtime choice of the loads into shared
// memory (a transposed operand's loads do not coalesce), alpha, beta and the epilogue are applied
// once per element of C at the store.
//
// tiletune: name tiled
// tiletune: entry tiled_gemm
// tiletune: param TILE 8 16 32
// tiletune: param PAD 0 1
// tiletune: param SWIZZLE 0 1
// tiletune: require !(PAD && SWIZZLE)
// tiletune: block TILE, TILE
// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
// tiletune: supports op_a op_b alpha_beta batch epilogue

#include <tiletune/gemm_contract.h>

#if TT_SWIZZLE
// Column c of row r lives at c ^ r (mod TILE): a permutation of each row, its own inverse.
#define TT_SLOT(r, c) ((c) ^ ((r) & (TT_TILE - 1)))
#else
#define TT_SLOT(r, c) (c)
#endif

// The bound lets ptxas fit TILE = 32 (1024 threads) into the register file.
extern "C" __global__ void __launch_bounds__(TT_TILE * TT_TILE)
    tiled_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K, int lda, int ldb, int ldc, const tt_gemm_args args) {
  __shared__ float As[TT_TILE][TT_TILE + TT_PAD];
  __shared__ float Bs[TT_TILE][TT_TILE + TT_PAD];

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TT_TILE + ty;
  const int col = blockIdx.x * TT_TILE + tx;
  const float* a = tt_batch_a(A, args);
  const float* b = tt_batch_b(B, args);

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TT_TILE) {
    const int a_col = k0 + tx;
    const int b_row = k0 + ty;
    As[ty][TT_SLOT(ty, tx)] = (row < M && a_col < K) ? tt_op_a(a, lda, row, a_col, args) : 0.0f;
    Bs[ty][TT_SLOT(ty, tx)] = (b_row < K && col < N) ? tt_op_b(b, ldb, b_row, col, args) : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < TT_TILE; ++k) {
      acc += As[ty][TT_SLOT(ty, k)] * Bs[k][TT_SLOT(k, tx)];
    }
    __syncthreads();  // everyone is done reading before the next load overwrites them
  }

  if (row < M && col < N) {
    float* c = tt_batch_c(C, args) + (size_t)row * ldc + col;
    *c = tt_epilogue(acc, c, col, args);
  }
}
