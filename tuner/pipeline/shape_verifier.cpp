#include "tuner/pipeline/shape_verifier.h"

#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/error_bound.h"
#include "tuner/pipeline/full_shape_inputs.h"

namespace tiletune {
namespace {

// The reference beside the fast code it checks: one thread per element, FP64 accumulation.
constexpr const char* kReferenceSource = R"(
extern "C" __global__ void reference_gemm(const float* A, const float* B, double* reference,
                                          double* magnitude, int M, int N, int K, int lda,
                                          int ldb) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  double sum = 0.0, sum_of_magnitudes = 0.0;
  for (int k = 0; k < K; ++k) {
    const double product = (double)A[(size_t)row * lda + k] * (double)B[(size_t)k * ldb + col];
    sum += product;
    sum_of_magnitudes += fabs(product);
  }
  reference[(size_t)row * N + col] = sum;
  magnitude[(size_t)row * N + col] = sum_of_magnitudes;
}

// verdict[0]: how many elements are wrong; verdict[1]: the smallest wrong index (row * N + col).
// An element is wrong past relative_bound * sum_k |a_ik||b_kj| (tuner/core/error_bound.h).
extern "C" __global__ void compare_gemm(const float* C, int ldc, const double* reference,
                                        const double* magnitude, double relative_bound, int M,
                                        int N, unsigned long long* verdict) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  const size_t index = (size_t)row * N + col;
  const double got = C[(size_t)row * ldc + col];
  if (!(fabs(got - reference[index]) <= relative_bound * magnitude[index])) {  // NaN fails too
    atomicAdd(&verdict[0], 1ull);
    atomicMin(&verdict[1], (unsigned long long)index);
  }
}
)";

constexpr std::uint32_t kPoisonBits = 0x7fc0dead;

// The reference and compare kernels for `arch`, compiled once per process: a worker verifies
// shape after shape, and NVRTC takes a fifth of a second each time.
const CompiledKernelImage& reference_image(const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::string, CompiledKernelImage> images;
  std::lock_guard lock(mutex);
  auto found = images.find(arch);
  if (found == images.end()) {
    found = images.emplace(arch, compile_cuda_source(kReferenceSource, "tiletune_reference.cu", {},
                                                     arch, "reference_gemm", "the GPU reference"))
                .first;
  }
  return found->second;
}

std::array<std::uint32_t, 3> grid_over(const GemmShape& s) {
  return {std::uint32_t((s.n + 15) / 16), std::uint32_t((s.m + 15) / 16), 1};
}

}  // namespace

ShapeVerifier::ShapeVerifier(const GpuDevice& device, const GemmProblem& problem,
                             std::uint64_t seed)
    : problem_(problem) {
  const CudaDriver& cu = cuda_driver();
  const GemmShape& s = problem.shape;
  a_ = DeviceBuffer::from(
      full_shape_matrix(FullShapeMatrix::a, seed, std::size_t(s.m) * problem.lda));
  b_ = DeviceBuffer::from(
      full_shape_matrix(FullShapeMatrix::b, seed, std::size_t(s.k) * problem.ldb));
  c_ = DeviceBuffer(std::size_t(s.m) * problem.ldc * sizeof(float));
  reference_ = DeviceBuffer(std::size_t(s.m) * s.n * sizeof(double));
  magnitude_ = DeviceBuffer(std::size_t(s.m) * s.n * sizeof(double));
  verdict_ = DeviceBuffer(2 * sizeof(unsigned long long));

  const CompiledKernelImage& image = reference_image(device.properties().arch());
  check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData(reference)");
  CUfunction reference = nullptr;
  check_cuda(cu.cuModuleGetFunction(&reference, module_, "reference_gemm"), "reference_gemm");
  check_cuda(cu.cuModuleGetFunction(&compare_, module_, "compare_gemm"), "compare_gemm");

  CUdeviceptr a = a_.get(), b = b_.get(), ref = reference_.get(), magnitude = magnitude_.get();
  int m = int(s.m), n = int(s.n), k = int(s.k), lda = int(problem.lda), ldb = int(problem.ldb);
  void* arguments[] = {&a, &b, &ref, &magnitude, &m, &n, &k, &lda, &ldb};
  const auto grid = grid_over(s);
  check_cuda(cu.cuLaunchKernel(reference, grid[0], grid[1], 1, 16, 16, 1, 0, nullptr, arguments,
                               nullptr),
             "cuLaunchKernel(reference_gemm)");
  check_cuda(cu.cuCtxSynchronize(), "reference_gemm");
}

ShapeVerifier::~ShapeVerifier() {
  if (module_ != nullptr) cuda_driver().cuModuleUnload(module_);
}

std::optional<std::string> ShapeVerifier::verify(const GpuKernel& kernel,
                                                 const LaunchGeometry& geometry,
                                                 Precision precision) {
  return verify(
      [&](CUstream stream) {
        kernel.launch(geometry, a_.get(), b_.get(), c_.get(), problem_, stream);
      },
      precision);
}

ResultError ShapeVerifier::error(const std::function<void(CUstream)>& launch) {
  const CudaDriver& cu = cuda_driver();
  const GemmShape& s = problem_.shape;
  check_cuda(cu.cuMemsetD32(c_.get(), kPoisonBits, c_.bytes() / sizeof(float)), "poison C");
  launch(nullptr);
  check_cuda(cu.cuCtxSynchronize(), "kernel execution");
  std::vector<float> c(std::size_t(s.m) * problem_.ldc);
  c_.download_into(c);
  if (host_reference_.empty()) {
    host_reference_.resize(std::size_t(s.m) * s.n);
    host_magnitude_.resize(host_reference_.size());
    reference_.download_into(host_reference_);
    magnitude_.download_into(host_magnitude_);
  }
  return result_error(c.data(), problem_.ldc, host_reference_.data(), host_magnitude_.data(), s.m,
                      s.n);
}

std::optional<std::string> ShapeVerifier::verify(const std::function<void(CUstream)>& launch,
                                                 Precision precision) {
  const CudaDriver& cu = cuda_driver();
  const GemmShape& s = problem_.shape;
  check_cuda(cu.cuMemsetD32(c_.get(), kPoisonBits, c_.bytes() / sizeof(float)), "poison C");
  const unsigned long long initial[2] = {0, std::numeric_limits<unsigned long long>::max()};
  verdict_.upload(initial, sizeof initial);

  launch(nullptr);
  check_cuda(cu.cuCtxSynchronize(), "kernel execution");

  CUdeviceptr c = c_.get(), ref = reference_.get(), magnitude = magnitude_.get();
  CUdeviceptr verdict = verdict_.get();
  int m = int(s.m), n = int(s.n), ldc = int(problem_.ldc);
  double relative_bound = relative_error_bound(precision, s.k);
  void* arguments[] = {&c, &ldc, &ref, &magnitude, &relative_bound, &m, &n, &verdict};
  const auto grid = grid_over(s);
  check_cuda(cu.cuLaunchKernel(compare_, grid[0], grid[1], 1, 16, 16, 1, 0, nullptr, arguments,
                               nullptr),
             "cuLaunchKernel(compare_gemm)");
  unsigned long long result[2] = {0, 0};
  verdict_.download(result, sizeof result);
  if (result[0] == 0) return std::nullopt;

  const std::int64_t row = std::int64_t(result[1] / s.n), col = std::int64_t(result[1] % s.n);
  float got = 0;
  c_.download(&got, sizeof got, (std::size_t(row) * problem_.ldc + col) * sizeof(float));
  double expected = 0;
  reference_.download(&expected, sizeof expected, std::size_t(result[1]) * sizeof(double));
  return fmt::format("at the full shape {}: {} elements wrong, the first C[{}][{}] = {} (expected {})",
                     s.to_string(), result[0], row, col, got, expected);
}

}  // namespace tiletune
