#include "tuner/backend/gpu/row_copy.h"

#include <algorithm>
#include <cstdint>


namespace tiletune {

const char* const kRowCopySource = R"(
// Rows of `width` floats, `from_ld` apart, into rows `to_ld` apart (a multiple of 4 floats from a
// 16-byte aligned start): thread x of block (bx, by) writes the 16-byte word at column
// 4 (256 bx + x) of rows by, by + gridDim.y, ..., read as four floats (zeros past the width).
extern "C" __global__ void __launch_bounds__(256)
    tiletune_copy_rows(const float* __restrict__ from, float* __restrict__ to, long long rows,
                       long long width, long long from_ld, long long to_ld) {
  const long long col = 4 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
  if (col >= to_ld) return;
  for (long long row = blockIdx.y; row < rows; row += gridDim.y) {
    const float* const in = from + row * from_ld + col;
    float4 word;
    word.x = col < width ? in[0] : 0.0f;
    word.y = col + 1 < width ? in[1] : 0.0f;
    word.z = col + 2 < width ? in[2] : 0.0f;
    word.w = col + 3 < width ? in[3] : 0.0f;
    *reinterpret_cast<float4*>(to + row * to_ld + col) = word;
  }
}
)";

namespace {

constexpr unsigned kThreads = 256;

// The driver's copy: one 2D copy, or row by row where the pitch exceeds the driver's most
// (2 GiB on current GPUs: so few rows fit in memory that one copy each costs nothing).
void driver_copy(const OperandCopy& copy, CUdeviceptr from, CUdeviceptr to, std::size_t max_pitch,
                 CUstream stream) {
  const CudaDriver& cu = cuda_driver();
  const std::size_t from_pitch = std::size_t(copy.from_ld) * sizeof(float);
  const std::size_t to_pitch = std::size_t(copy.to_ld) * sizeof(float);
  const std::size_t row_bytes = std::size_t(copy.width) * sizeof(float);
  if (from_pitch > max_pitch) {
    for (std::int64_t row = 0; row < copy.rows; ++row) {
      check_cuda(cu.cuMemcpyDtoDAsync(to + row * to_pitch, from + row * from_pitch, row_bytes, stream),
                 "cuMemcpyDtoDAsync(a row into aligned rows)");
    }
    return;
  }
  CUDA_MEMCPY2D rows{};
  rows.srcMemoryType = rows.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  rows.srcDevice = from;
  rows.srcPitch = from_pitch;
  rows.dstDevice = to;
  rows.dstPitch = to_pitch;
  rows.WidthInBytes = row_bytes;
  rows.Height = std::size_t(copy.rows);
  check_cuda(cu.cuMemcpy2DAsync(&rows, stream), copy.operand == 'A'
                                                    ? "cuMemcpy2DAsync(A, aligned rows)"
                                                    : "cuMemcpy2DAsync(B, aligned rows)");
}

}  // namespace

void RowCopier::copy(const OperandCopy& copy, CUdeviceptr from, CUdeviceptr to,
                     std::size_t max_pitch, CUstream stream) {
  CUfunction function = kernel_.function();
  if (function == nullptr) {
    driver_copy(copy, from, to, max_pitch, stream);
    return;
  }
  long long rows = copy.rows, width = copy.width, from_ld = copy.from_ld, to_ld = copy.to_ld;
  void* arguments[] = {&from, &to, &rows, &width, &from_ld, &to_ld};
  const auto words = std::uint64_t(copy.to_ld) / 4;
  const auto blocks_x = std::uint32_t((words + kThreads - 1) / kThreads);
  const auto blocks_y = std::uint32_t(std::min<std::int64_t>(copy.rows, 65535));
  check_cuda(cuda_driver().cuLaunchKernel(function, blocks_x, blocks_y, 1, kThreads, 1, 1, 0, stream,
                                          arguments, nullptr),
             copy.operand == 'A' ? "cuLaunchKernel(copy of A into aligned rows)"
                                 : "cuLaunchKernel(copy of B into aligned rows)");
}

}  // namespace tiletune
