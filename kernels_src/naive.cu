// naive: one thread per element of C, straight from global memory, no shared memory.
//
// The baseline every other template is measured against. Thread (x, y) of the grid computes
// C[y][x] as a dot product of row y of A and column x of B; the only tunable choice is the block
// shape, which decides how well the loads of B coalesce and how many blocks fit on an SM. It serves
// the whole BLAS contract, its transposes a runtime choice: the reference every variant of the
// others is checked against on the GPU.
//
// tiletune: name naive
// tiletune: entry naive_gemm
// tiletune: param BLOCK_X 8 16 32 64 128
// tiletune: param BLOCK_Y 1 2 4 8 16 32
// tiletune: require BLOCK_X * BLOCK_Y >= 64 && BLOCK_X * BLOCK_Y <= 1024
// tiletune: block BLOCK_X, BLOCK_Y
// tiletune: grid ceil_div(N, BLOCK_X), ceil_div(M, BLOCK_Y)
// tiletune: supports op_a op_b alpha_beta batch epilogue

#include <tiletune/gemm_contract.h>

extern "C" __global__ void naive_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                      int ldc, const tt_gemm_args args) {
  const int col = blockIdx.x * TT_BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * TT_BLOCK_Y + threadIdx.y;
  if (row >= M || col >= N) return;

  const float* a = tt_batch_a(A, args);
  const float* b = tt_batch_b(B, args);
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += tt_op_a(a, lda, row, k, args) * tt_op_b(b, ldb, k, col, args);
  }
  float* c = tt_batch_c(C, args) + (size_t)row * ldc + col;
  *c = tt_epilogue(acc, c, col, args);
}
