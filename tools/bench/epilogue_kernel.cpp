#include "tools/bench/epilogue_kernel.h"

#include <algorithm>
#include <cstdint>

#include "tuner/backend/entry_contract.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/device_library.h"

namespace tiletune {
namespace {

constexpr const char* kEpilogueSource = R"(
#include <tiletune/gemm_contract.h>

extern "C" __global__ void apply_epilogue(float* C, int M, int N, int ldc, const tt_gemm_args args) {
  const long long per_entry = (long long)M * N, total = per_entry * args.batch;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long entry = i / per_entry, rest = i % per_entry;
    const int row = (int)(rest / N), col = (int)(rest % N);
    float* c = C + entry * args.stride_c + (size_t)row * ldc + col;
    *c = tt_epilogue(*c, c, col, args);
  }
}
)";

constexpr unsigned kThreads = 256;

}  // namespace

EpilogueKernel::EpilogueKernel(const GpuDevice& device) {
  const CudaDriver& cu = cuda_driver();
  const CompiledKernelImage image =
      compile_cuda_source(inline_device_library(kEpilogueSource), "tiletune_epilogue.cu", {},
                          device.properties().arch(), "apply_epilogue", "bench's epilogue kernel");
  check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData(epilogue)");
  check_cuda(cu.cuModuleGetFunction(&function_, module_, "apply_epilogue"), "apply_epilogue");
}

EpilogueKernel::~EpilogueKernel() {
  if (module_ != nullptr) cuda_driver().cuModuleUnload(module_);
}

void EpilogueKernel::run(const GemmProblem& problem, CUdeviceptr c, CUdeviceptr bias,
                         CUstream stream) const {
  ContractArgs args = contract_args(problem, reinterpret_cast<const float*>(bias), problem.batch);
  int m = int(problem.shape.m), n = int(problem.shape.n), ldc = int(problem.ldc);
  void* arguments[] = {&c, &m, &n, &ldc, &args};
  // Enough blocks to fill any GPU several times over; the threads stride over the rest.
  const std::int64_t elements = problem.batch * problem.shape.m * problem.shape.n;
  const auto blocks = unsigned(std::clamp<std::int64_t>((elements + kThreads - 1) / kThreads, 1, 65536));
  check_cuda(cuda_driver().cuLaunchKernel(function_, blocks, 1, 1, kThreads, 1, 1, 0, stream,
                                          arguments, nullptr),
             "cuLaunchKernel(apply_epilogue)");
}

}  // namespace tiletune
