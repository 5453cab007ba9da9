// gemm_client: an application calling the GEMMs tiletune tuned for it, checked against its own
// reference. It knows tiletune only through the installed package (<tiletune/tiletune.h>).
//
//   gemm_client PATH [--cpu] [--gpu-name NAME] [--kernel NAME] [--shape MxNxK ...]
//
// PATH: a tiletune database or an exported bundle; `embedded` for the bundle compiled in (built
// with -DGEMM_CLIENT_BUNDLE_SOURCE=tiletune_bundle.cpp, from `tiletune export --format cpp`). --cpu: the same tuned kernels on tiletune's CPU
// backend, on host memory, as an application's CI runs them without a GPU. Exit 0: every problem
// passed; 1: a wrong result or an error; 2: bad arguments.
#include <tiletune/tiletune.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef GEMM_CLIENT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef GEMM_CLIENT_EMBEDDED_BUNDLE
const tiletune::EmbeddedBundle& tiletune_bundle();  // defined by the exported tiletune_bundle.cpp
#endif

namespace {

// Row-major operands with leading dimensions; C's padding starts as NaN and must stay so.
struct Operands {
  std::vector<float> A, B, C;
  explicit Operands(const tiletune::Problem& p, unsigned seed)
      : A(p.M * p.lda), B(p.K * p.ldb), C(p.M * p.ldc, std::numeric_limits<float>::quiet_NaN()) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (float& a : A) a = value(random);
    for (float& b : B) b = value(random);
  }
};

#ifdef GEMM_CLIENT_WITH_CUDA
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

struct DeviceBuffer {  // device memory for `count` floats, freed with the buffer
  float* data = nullptr;
  explicit DeviceBuffer(std::size_t count) {
    check(cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(float)), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data); }
};

void copy(float* to, const float* from, std::size_t count, cudaMemcpyKind kind) {
  check(cudaMemcpy(to, from, count * sizeof(float), kind), "cudaMemcpy");
}
#endif

void run(const tiletune::Gemm& gemm, const tiletune::Problem& p, Operands& x, bool on_cpu) {
  if (on_cpu) return gemm.run(p, x.A.data(), x.B.data(), x.C.data());  // host pointers
#ifdef GEMM_CLIENT_WITH_CUDA
  DeviceBuffer A(x.A.size()), B(x.B.size()), C(x.C.size());
  copy(A.data, x.A.data(), x.A.size(), cudaMemcpyHostToDevice);
  copy(B.data, x.B.data(), x.B.size(), cudaMemcpyHostToDevice);
  copy(C.data, x.C.data(), x.C.size(), cudaMemcpyHostToDevice);  // the NaN padding
  gemm.run(p, A.data, B.data, C.data, /*stream=*/nullptr);
  check(cudaDeviceSynchronize(), "the GEMM");  // errors inside the kernel surface here
  copy(x.C.data(), C.data, x.C.size(), cudaMemcpyDeviceToHost);
#else
  throw std::runtime_error("built without the CUDA runtime: only --cpu runs");
#endif
}

// Compares every element of C with a double-precision triple loop. A float sum of K products, in
// any order and with or without FMA, is within K * 2^-24 * sum_k |a||b| of the exact sum (each of
// its K roundings errs by at most 2^-24 of a partial sum, and no partial sum exceeds sum_k |a||b|);
// 2^-22 leaves a factor 4 of room (split K, the double reference's own rounding). A missing,
// doubled or misplaced term is an error of about |a||b|, far beyond it for most terms. The tiny
// absolute term keeps an all-zero sum from needing exact zero. Padding must still be NaN.
bool matches_reference(const tiletune::Problem& p, const Operands& x) {
  long wrong = 0;
  for (std::int64_t i = 0; i < p.M; ++i) {
    for (std::int64_t j = 0; j < p.ldc; ++j) {
      double reference = std::numeric_limits<double>::quiet_NaN(), magnitude = 0;
      if (j < p.N) {  // else padding
        reference = 0;
        for (std::int64_t k = 0; k < p.K; ++k) {
          const double product = double(x.A[i * p.lda + k]) * double(x.B[k * p.ldb + j]);
          reference += product;
          magnitude += std::fabs(product);
        }
      }
      const double c = x.C[i * p.ldc + j];
      const double bound = p.K * std::ldexp(magnitude, -22) + std::numeric_limits<float>::min();
      const bool right = j < p.N ? std::fabs(c - reference) <= bound : std::isnan(c);  // NaN fails
      if (!right && wrong++ == 0) {
        std::printf("  first wrong: C[%lld][%lld] = %.9g, expected %.9g%s\n", (long long)i,
                    (long long)j, c, reference, j < p.N ? "" : " (padding, never written)");
      }
    }
  }
  if (wrong > 0) std::printf("  %ld elements wrong\n", wrong);
  return wrong == 0;
}

tiletune::Problem parse_shape(const std::string& text) {
  long long m = 0, n = 0, k = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &rest) != 3) {
    throw std::invalid_argument("--shape " + text + ": expected MxNxK");
  }
  return tiletune::Problem::packed(m, n, k);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, kernel = "warp_tiled";
  tiletune::Options options;
  std::vector<tiletune::Problem> problems;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const bool has_value = i + 1 < argc;
      if (arg == "--cpu") options.backend = tiletune::Backend::cpu;
      else if (arg == "--gpu-name" && has_value) options.gpu_name = argv[++i];
      else if (arg == "--kernel" && has_value) kernel = argv[++i];
      else if (arg == "--shape" && has_value) problems.push_back(parse_shape(argv[++i]));
      else if (path.empty() && arg[0] != '-') path = arg;
      else throw std::invalid_argument("unexpected argument " + arg);
    }
    if (path.empty()) throw std::invalid_argument("no database or bundle given");
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "gemm_client: %s\nusage: gemm_client PATH [--cpu] [--gpu-name NAME] "
                 "[--kernel NAME] [--shape MxNxK ...]\n", error.what());
    return 2;
  }
  if (problems.empty()) {  // sizes that are multiples of no tile, and one strided view
    problems = {tiletune::Problem::packed(257, 383, 129), tiletune::Problem::packed(1, 517, 3),
                tiletune::Problem::packed(100, 33, 1001),
                tiletune::Problem{191, 250, 77, /*lda=*/80, /*ldb=*/255, /*ldc=*/261}};
  }

  try {
    const bool on_cpu = options.backend == tiletune::Backend::cpu;
#ifdef GEMM_CLIENT_EMBEDDED_BUNDLE
    const tiletune::Library library = path == "embedded"
                                          ? tiletune::Library::open(tiletune_bundle(), options)
                                          : tiletune::Library::open(path, options);
#else
    const tiletune::Library library = tiletune::Library::open(path, options);
#endif
    const tiletune::Gemm gemm = library.gemm(kernel);
    std::printf("tiletune %s, %s, %s on the %s\n", tiletune::version(), library.source().c_str(),
                kernel.c_str(), on_cpu ? "CPU backend" : "GPU");
    int failed = 0;
    for (std::size_t n = 0; n < problems.size(); ++n) {
      const tiletune::Problem& problem = problems[n];
      const tiletune::Plan plan = gemm.plan(problem);
      std::printf("\n%s\n%s\n", problem.to_string().c_str(), plan.to_string().c_str());
      Operands operands(problem, /*seed=*/unsigned(n + 1));
      run(gemm, problem, operands, on_cpu);
      const bool pass = matches_reference(problem, operands);
      std::printf("%s %s\n", pass ? "PASS" : "FAIL", problem.to_string().c_str());
      failed += pass ? 0 : 1;
    }
    std::printf("\n%d of %zu problems passed\n", int(problems.size()) - failed, problems.size());
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& error) {  // tiletune::Error: one line naming the cause
    std::fprintf(stderr, "gemm_client: %s\n", error.what());
    return 1;
  }
}
