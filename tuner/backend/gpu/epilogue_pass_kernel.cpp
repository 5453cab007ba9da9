#include "tuner/backend/gpu/epilogue_pass_kernel.h"

#include <algorithm>
#include <cstdint>

#include "tuner/backend/backend_errors.h"
#include "tuner/backend/entry_contract.h"

namespace tiletune {

const char* const kEpiloguePassSource = R"(#include <tiletune/gemm_contract.h>
// Thread x of block (bx, by, bz) computes column 256 bx + x of rows by, by + gridDim.y, ... of
// entries bz, bz + gridDim.z, ...: C = tt_epilogue(S, C) with alpha 1. S may be C (beta 0).
extern "C" __global__ void __launch_bounds__(256)
    tiletune_epilogue_pass(const float* s, float* c, long long rows, long long columns,
                           long long s_ld, long long s_stride, long long ldc, long long c_stride,
                           long long entries, const tt_gemm_args args) {
  const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= columns) return;
  for (long long entry = blockIdx.z; entry < entries; entry += gridDim.z) {
    for (long long row = blockIdx.y; row < rows; row += gridDim.y) {
      float* const to = c + entry * c_stride + row * ldc + col;
      *to = tt_epilogue(s[entry * s_stride + row * s_ld + col], to, (int)col, args);
    }
  }
}
)";

namespace {

constexpr unsigned kPassThreads = 256;
constexpr std::int64_t kPassMostBlocks = 65535;  // along grid y and z

}  // namespace

void EpiloguePassKernel::run(const EpiloguePass& pass, const GemmProblem& problem, CUdeviceptr s,
                             CUdeviceptr c, CUdeviceptr bias, CUstream stream) {
  CUfunction function = kernel_.function();
  if (function == nullptr) {
    throw LaunchError("the pass that applies beta and the epilogue after a kernel that adds into C "
                      "cannot be had: " + kernel_.why_not());
  }
  const GemmProblem& written = pass.kernel_problem;
  long long rows = problem.shape.m, columns = problem.shape.n, s_ld = written.ldc,
            s_stride = written.stride_c, ldc = problem.ldc, c_stride = problem.stride_c,
            entries = problem.batch;
  ContractArgs args = contract_args(problem, reinterpret_cast<const float*>(bias), 1);
  args.alpha = 1;  // the kernel has scaled
  void* arguments[] = {&s, &c, &rows, &columns, &s_ld, &s_stride, &ldc, &c_stride, &entries, &args};
  const auto blocks_x = std::uint32_t((columns + kPassThreads - 1) / kPassThreads);
  const auto blocks_y = std::uint32_t(std::min<std::int64_t>(rows, kPassMostBlocks));
  const auto blocks_z = std::uint32_t(std::min<std::int64_t>(entries, kPassMostBlocks));
  check_cuda(cuda_driver().cuLaunchKernel(function, blocks_x, blocks_y, blocks_z, kPassThreads, 1, 1, 0, stream,
                                          arguments, nullptr),
             "cuLaunchKernel(epilogue pass)");
}

}  // namespace tiletune
