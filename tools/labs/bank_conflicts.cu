// The bank-conflict lab's kernels (tiletune lab bank-conflicts), compiled with NVRTC.
//
// Every kernel does the same work: each warp of a 256-thread block writes four rows of a 32 x 32
// tile of floats in shared memory, the block meets at a barrier, each warp reads the four rows
// another warp wrote, and the block meets again; `repeats` times. Lane l of a warp always handles
// column l of a logical row. The four kernels differ only in where logical element (row, col) is
// stored, which decides how the 32 lanes of one access fall onto the 32 banks:
//   stride1   tile[row][col]                 a row per access: 32 banks, no conflict
//   stride32  tile[col][row]                 a column per access: one bank, 32-way conflict
//   padded    tile[col][row] in [32][33]     the column shifted a bank per row: no conflict
//   swizzled  tile[col][row ^ col]           the column permuted by an XOR: no conflict
// Writes and reads follow the same layout, so every shared-memory request of a kernel has the
// same conflict degree. The rows of one warp are 8 apart (row = i * 8 + warp), so that no two of
// a thread's accesses are neighbours the compiler could merge into one vector access.
//
// Element (row, col) written in round r holds row * 32 + col + r, exact in a float; each thread
// writes the sum of what it read to out, which the lab checks against the host's sum: the same
// for every layout, so a layout that is not a permutation of the tile is caught before timing.

#define LAB_ROWS_PER_WARP 4
#define LAB_WARPS 8

template <int WIDTH, typename Slot>
__device__ void shared_round_trip(float (*tile)[WIDTH], Slot slot, int repeats, float* out) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int reader = (warp + 1) % LAB_WARPS;
  float sum = 0.0f;
  for (int r = 0; r < repeats; ++r) {
#pragma unroll
    for (int i = 0; i < LAB_ROWS_PER_WARP; ++i) {
      const int row = i * LAB_WARPS + warp;
      int s_row, s_col;
      slot(row, lane, s_row, s_col);
      tile[s_row][s_col] = float(row * 32 + lane + r);
    }
    __syncthreads();  // every row written before any warp reads another's
#pragma unroll
    for (int i = 0; i < LAB_ROWS_PER_WARP; ++i) {
      const int row = i * LAB_WARPS + reader;
      int s_row, s_col;
      slot(row, lane, s_row, s_col);
      sum += tile[s_row][s_col];
    }
    __syncthreads();  // every read done before the next round overwrites the tile
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

struct RowSlot {
  __device__ void operator()(int row, int col, int& s_row, int& s_col) const { s_row = row; s_col = col; }
};
struct ColumnSlot {
  __device__ void operator()(int row, int col, int& s_row, int& s_col) const { s_row = col; s_col = row; }
};
struct SwizzledColumnSlot {
  __device__ void operator()(int row, int col, int& s_row, int& s_col) const {
    s_row = col;
    s_col = row ^ col;
  }
};

extern "C" __global__ void __launch_bounds__(256) bank_stride1(int repeats, float* out) {
  __shared__ float tile[32][32];
  shared_round_trip<32>(tile, RowSlot{}, repeats, out);
}

extern "C" __global__ void __launch_bounds__(256) bank_stride32(int repeats, float* out) {
  __shared__ float tile[32][32];
  shared_round_trip<32>(tile, ColumnSlot{}, repeats, out);
}

extern "C" __global__ void __launch_bounds__(256) bank_padded(int repeats, float* out) {
  __shared__ float tile[32][33];
  shared_round_trip<33>(tile, ColumnSlot{}, repeats, out);
}

extern "C" __global__ void __launch_bounds__(256) bank_swizzled(int repeats, float* out) {
  __shared__ float tile[32][32];
  shared_round_trip<32>(tile, SwizzledColumnSlot{}, repeats, out);
}
