// fault_zoo: a template whose variants fail in every way a tuner must survive, beside good ones.
//
//   FAULT 0  correct: the tiled SGEMM (tiled.cu without its bank-conflict options)
//   FAULT 1  writes far outside C: an illegal address on the GPU (which poisons the CUDA context
//            for good), a segmentation fault on the CPU backend
//   FAULT 2  never returns: spins on a flag nobody sets, until the tuner's watchdog ends it
//   FAULT 3  does not compile
//   FAULT 4  asks for more dynamic shared memory than any GPU has (256 KiB per block)
//
// A tune of this template must record each fault with its own status and still time every
// FAULT 0 variant: the faulty ones are interleaved with the good (TILE varies slowest).
//
// tiletune: name fault_zoo
// tiletune: entry fault_zoo_gemm
// tiletune: param TILE 8 16
// tiletune: param FAULT 0 1 2 3 4
// tiletune: block TILE, TILE
// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
// tiletune: shared FAULT == 4 ? 262144 : 0

extern "C" __global__ void __launch_bounds__(TT_TILE * TT_TILE)
    fault_zoo_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K, int lda, int ldb, int ldc) {
  __shared__ float As[TT_TILE][TT_TILE];
  __shared__ float Bs[TT_TILE][TT_TILE];

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TT_TILE + ty;
  const int col = blockIdx.x * TT_TILE + tx;

#if TT_FAULT == 2
  // A flag in shared memory that nobody sets: volatile, so every iteration really reads it (a
  // local flag would be proven constant and the loop removed).
  __shared__ volatile int released;
  released = 0;
  __syncthreads();
  while (!released) {
  }
#endif
#if TT_FAULT == 3
  this variant does not compile;
#endif

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TT_TILE) {
    const int a_col = k0 + tx;
    const int b_row = k0 + ty;
    As[ty][tx] = (row < M && a_col < K) ? A[(size_t)row * lda + a_col] : 0.0f;
    Bs[ty][tx] = (b_row < K && col < N) ? B[(size_t)b_row * ldb + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TT_TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }

  if (row < M && col < N) {
#if TT_FAULT == 1
    C[(size_t)row * ldc + col + ((size_t)1 << 40)] = acc;  // a terabyte past the matrix
#else
    C[(size_t)row * ldc + col] = acc;
#endif
  }
}
