// naive: one thread per element of C, straight from global memory, no shared memory.
//
// The baseline every other template is measured against. Thread (x, y) of the grid computes
// C[y][x] as a dot product of row y of A and column x of B; the only tunable choice is the block
// shape, which decides how well the loads of B coalesce and how many blocks fit on an SM.
//
// tiletune: name naive
// tiletune: entry naive_gemm
// tiletune: param BLOCK_X 8 16 32 64 128
// tiletune: param BLOCK_Y 1 2 4 8 16 32
// tiletune: require BLOCK_X * BLOCK_Y >= 64 && BLOCK_X * BLOCK_Y <= 1024
// tiletune: block BLOCK_X, BLOCK_Y
// tiletune: grid ceil_div(N, BLOCK_X), ceil_div(M, BLOCK_Y)

extern "C" __global__ void naive_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                      int ldc) {
  const int col = blockIdx.x * TT_BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * TT_BLOCK_Y + threadIdx.y;
  if (row >= M || col >= N) return;

  const float* a = A + (size_t)row * lda;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += a[k] * B[(size_t)k * ldb + col];
  }
  C[(size_t)row * ldc + col] = acc;
}
