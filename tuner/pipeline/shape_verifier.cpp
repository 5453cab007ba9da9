#include "tuner/pipeline/shape_verifier.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/error_bound.h"
#include "tuner/pipeline/full_shape_inputs.h"

namespace tiletune {
namespace {

// The reference beside the fast code it checks: one thread per element of every entry of the
// batch (grid z strides over the entries), FP64 accumulation over op(A) and op(B) read through the
// stored layouts' strides.
constexpr const char* kReferenceSource = R"(
extern "C" __global__ void reference_gemm(const float* A, const float* B, double* reference,
                                          double* magnitude, int M, int N, int K, int lda,
                                          int ldb, int transposed_a, int transposed_b,
                                          long long stride_a, long long stride_b,
                                          long long batch) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  // op(A)[row][k] = A[row * a_row + k * a_k], op(B)[k][col] = B[k * b_k + col * b_col].
  const size_t a_row = transposed_a ? 1 : (size_t)lda, a_k = transposed_a ? (size_t)lda : 1;
  const size_t b_k = transposed_b ? 1 : (size_t)ldb, b_col = transposed_b ? (size_t)ldb : 1;
  for (long long entry = blockIdx.z; entry < batch; entry += gridDim.z) {
    const float* a = A + entry * stride_a + (size_t)row * a_row;
    const float* b = B + entry * stride_b + (size_t)col * b_col;
    double sum = 0.0, sum_of_magnitudes = 0.0;
    for (int k = 0; k < K; ++k) {
      const double product = (double)a[(size_t)k * a_k] * (double)b[(size_t)k * b_k];
      sum += product;
      sum_of_magnitudes += fabs(product);
    }
    const size_t index = ((size_t)entry * M + row) * N + col;
    reference[index] = sum;
    magnitude[index] = sum_of_magnitudes;
  }
}

// verdict[0]: how many elements are wrong; verdict[1]: the smallest wrong index ((entry * M + row)
// * N + col); verdict[2], verdict[3]: the largest |c - ref| / sum_k |a_ik||b_kj| and |c - ref|, as
// the bits of non-negative doubles, which order as the values do (atomicMax). An element is wrong
// past relative_bound * sum_k |a_ik||b_kj| (tuner/core/error_bound.h), plus where the epilogue
// adds a bias the roundings of that addition, and GELU's slope and float evaluation (activation:
// 0 none, 1 ReLU, 2 GELU; the fuzz oracle's allowance, fuzz/gemm_oracle.cpp).
extern "C" __global__ void compare_gemm(const float* C, int ldc, long long stride_c,
                                        const double* reference, const double* magnitude,
                                        const float* bias, int activation, double relative_bound,
                                        int M, int N, long long batch,
                                        unsigned long long* verdict) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const bool inside = row < M && col < N;  // no early return: the warp reduces the errors below
  const double u = 5.9604644775390625e-08;  // 2^-24
  const double infinity = __longlong_as_double(0x7ff0000000000000ll);
  unsigned long long max_relative = 0, max_absolute = 0;
  for (long long entry = blockIdx.z; inside && entry < batch; entry += gridDim.z) {
    const size_t index = ((size_t)entry * M + row) * N + col;
    const double sum = reference[index], b = bias ? (double)bias[col] : 0.0;
    double expected = sum + b;
    double bound = relative_bound * magnitude[index] + (bias ? 3 * u * (fabs(sum) + fabs(b)) : 0.0);
    if (activation == 1) expected = expected > 0 ? expected : 0.0;
    if (activation == 2) {
      const double x = expected;
      expected = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      bound = 1.2 * bound + 8 * u * (fabs(x) + fabs(expected));
    }
    const double got = C[entry * stride_c + (size_t)row * ldc + col];
    double absolute = fabs(got - expected);
    if (!(absolute <= 1.7976931348623157e308)) absolute = infinity;  // NaN and Inf
    const double relative = absolute == 0 ? 0.0
                            : magnitude[index] > 0 ? absolute / magnitude[index] : infinity;
    const unsigned long long relative_bits = __double_as_longlong(relative);
    const unsigned long long absolute_bits = __double_as_longlong(absolute);
    if (relative_bits > max_relative) max_relative = relative_bits;
    if (absolute_bits > max_absolute) max_absolute = absolute_bits;
    if (!(absolute <= bound)) {
      atomicAdd(&verdict[0], 1ull);
      atomicMin(&verdict[1], (unsigned long long)index);
    }
  }
  // One atomic per warp, not per element: millions on one address would serialise.
  for (int offset = 16; offset > 0; offset /= 2) {
    const unsigned long long r = __shfl_xor_sync(0xffffffffu, max_relative, offset);
    const unsigned long long a = __shfl_xor_sync(0xffffffffu, max_absolute, offset);
    if (r > max_relative) max_relative = r;
    if (a > max_absolute) max_absolute = a;
  }
  if ((threadIdx.y * blockDim.x + threadIdx.x) % 32 == 0) {
    atomicMax(&verdict[2], max_relative);
    atomicMax(&verdict[3], max_absolute);
  }
}
)";

constexpr std::uint32_t kPoisonBits = 0x7fc0dead;

// 16 x 16 blocks over one entry's C, and over the entries in z up to gridDim.z's limit (the
// kernels stride over the rest).
std::array<std::uint32_t, 3> grid_over(const GemmProblem& p) {
  return {std::uint32_t((p.shape.n + 15) / 16), std::uint32_t((p.shape.m + 15) / 16),
          std::uint32_t(std::min<std::int64_t>(p.batch, 65535))};
}

}  // namespace

ShapeVerifier::ShapeVerifier(const GpuDevice& device, const GemmProblem& problem,
                             std::uint64_t seed)
    : problem_(problem) {
  if (std::string why = problem.invalid_reason(); !why.empty()) {
    throw std::invalid_argument("the full-shape check's problem: " + why);
  }
  if (problem.alpha != 1 || problem.beta != 0) {
    throw std::invalid_argument(fmt::format("the full-shape check judges alpha 1 and beta 0 only, "
                                            "not alpha={} beta={}", problem.alpha, problem.beta));
  }
  const CudaDriver& cu = cuda_driver();
  const GemmShape& s = problem.shape;
  a_ = DeviceBuffer::from(
      full_shape_matrix(FullShapeMatrix::a, seed, std::size_t(problem.a_elements())));
  b_ = DeviceBuffer::from(
      full_shape_matrix(FullShapeMatrix::b, seed, std::size_t(problem.b_elements())));
  c_ = DeviceBuffer(std::size_t(problem.c_elements()) * sizeof(float));
  if (adds_bias(problem.epilogue)) {
    bias_ = DeviceBuffer::from(full_shape_matrix(FullShapeMatrix::bias, seed, std::size_t(s.n)));
  }
  const std::size_t elements = std::size_t(problem.batch * s.m * s.n);
  reference_ = DeviceBuffer(elements * sizeof(double));
  magnitude_ = DeviceBuffer(elements * sizeof(double));
  verdict_ = DeviceBuffer(4 * sizeof(unsigned long long));

  const CompiledKernelImage& image =
      compile_cuda_source_once(kReferenceSource, "tiletune_reference.cu", device.properties().arch(),
                               "reference_gemm", "the GPU reference");
  check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData(reference)");
  CUfunction reference = nullptr;
  check_cuda(cu.cuModuleGetFunction(&reference, module_, "reference_gemm"), "reference_gemm");
  check_cuda(cu.cuModuleGetFunction(&compare_, module_, "compare_gemm"), "compare_gemm");

  CUdeviceptr a = a_.get(), b = b_.get(), ref = reference_.get(), magnitude = magnitude_.get();
  int m = int(s.m), n = int(s.n), k = int(s.k), lda = int(problem.lda), ldb = int(problem.ldb);
  int transposed_a = problem.op_a == Op::t, transposed_b = problem.op_b == Op::t;
  long long stride_a = problem.stride_a, stride_b = problem.stride_b, batch = problem.batch;
  void* arguments[] = {&a,   &b,   &ref, &magnitude,    &m,           &n,        &k,
                       &lda, &ldb, &transposed_a, &transposed_b, &stride_a, &stride_b, &batch};
  const auto grid = grid_over(problem);
  check_cuda(cu.cuLaunchKernel(reference, grid[0], grid[1], grid[2], 16, 16, 1, 0, nullptr,
                               arguments, nullptr),
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
        kernel.launch(geometry, a_.get(), b_.get(), c_.get(), problem_, stream, bias_.get());
      },
      precision);
}

ShapeVerifier::Verdict ShapeVerifier::compare(const std::function<void(CUstream)>& launch,
                                              double relative_bound) {
  const CudaDriver& cu = cuda_driver();
  check_cuda(cu.cuMemsetD32(c_.get(), kPoisonBits, c_.bytes() / sizeof(float)), "poison C");
  const unsigned long long initial[4] = {0, std::numeric_limits<unsigned long long>::max(), 0, 0};
  verdict_.upload(initial, sizeof initial);

  launch(nullptr);
  check_cuda(cu.cuCtxSynchronize(), "kernel execution");

  CUdeviceptr c = c_.get(), ref = reference_.get(), magnitude = magnitude_.get();
  CUdeviceptr bias = bias_.get(), verdict = verdict_.get();
  int ldc = int(problem_.ldc), m = int(problem_.shape.m), n = int(problem_.shape.n);
  int activation = int(problem_.epilogue) >> 1;  // Epilogue's order: none, bias, relu, bias_relu, gelu, ...
  long long stride_c = problem_.stride_c, batch = problem_.batch;
  void* arguments[] = {&c,          &ldc,           &stride_c, &ref, &magnitude, &bias,
                       &activation, &relative_bound, &m,       &n,   &batch,     &verdict};
  const auto grid = grid_over(problem_);
  check_cuda(cu.cuLaunchKernel(compare_, grid[0], grid[1], grid[2], 16, 16, 1, 0, nullptr,
                               arguments, nullptr),
             "cuLaunchKernel(compare_gemm)");
  unsigned long long result[4] = {0, 0, 0, 0};
  verdict_.download(result, sizeof result);
  return Verdict{result[0], result[1],
                 ResultError{std::bit_cast<double>(result[2]), std::bit_cast<double>(result[3])}};
}

ResultError ShapeVerifier::error(const std::function<void(CUstream)>& launch) {
  return compare(launch, 0).error;
}

std::optional<std::string> ShapeVerifier::verify(const std::function<void(CUstream)>& launch,
                                                 Precision precision) {
  const GemmShape& s = problem_.shape;
  const Verdict verdict = compare(launch, relative_error_bound(precision, s.k));
  if (verdict.wrong == 0) return std::nullopt;

  const std::int64_t entry = std::int64_t(verdict.first_wrong / std::uint64_t(s.m * s.n));
  const std::int64_t row = std::int64_t(verdict.first_wrong / s.n % s.m);
  const std::int64_t col = std::int64_t(verdict.first_wrong % s.n);
  float got = 0;
  c_.download(&got, sizeof got,
              std::size_t(entry * problem_.stride_c + row * problem_.ldc + col) * sizeof(float));
  double expected = 0;
  reference_.download(&expected, sizeof expected, std::size_t(verdict.first_wrong) * sizeof(double));
  if (adds_bias(problem_.epilogue)) {
    float bias = 0;
    bias_.download(&bias, sizeof bias, std::size_t(col) * sizeof(float));
    expected += bias;
  }
  expected = activate(problem_.epilogue, expected);
  return fmt::format("at the full shape {}: {} elements wrong, the first C[{}][{}]{} = {} (expected {})",
                     s.to_string(), verdict.wrong, row, col,
                     problem_.batch > 1 ? fmt::format(" of batch entry {}", entry) : "", got,
                     expected);
}

}  // namespace tiletune
