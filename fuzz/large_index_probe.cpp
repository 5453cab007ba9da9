#include "fuzz/large_index_probe.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "fuzz/case_generator.h"
#include "fuzz/poison.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {
namespace {

// Row 2 of a matrix with this leading dimension starts at element 2^31 + 2.
constexpr std::int64_t kWideLd = (std::int64_t(1) << 30) + 1;
// Guards of the probe buffers: a wrapped offset lands far away anyway; these catch near misses.
constexpr std::size_t kProbeGuard = 1 << 16;

// Counts the elements outside a matrix's logical region (guards and padding) that are no longer
// poison. verdict[0]: how many; verdict[1]: the smallest such index.
constexpr const char* kCheckSource = R"(
extern "C" __global__ void outside_changed(const unsigned* buffer, unsigned long long total,
                                           unsigned long long guard, unsigned long long rows,
                                           unsigned long long cols, unsigned long long ld,
                                           unsigned poison, unsigned long long* verdict) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    bool inside = false;
    if (i >= guard) {
      const unsigned long long offset = i - guard;
      inside = offset / ld < rows && offset % ld < cols;
    }
    if (!inside && buffer[i] != poison) {
      atomicAdd(&verdict[0], 1ull);
      atomicMin(&verdict[1], i);
    }
  }
}
)";

// One matrix of a probe on the device: [guard | (rows - 1) * ld + cols | guard], all poison.
struct ProbeMatrix {
  const char* name;
  std::int64_t rows, cols, ld;
  DeviceBuffer buffer;

  ProbeMatrix(const char* name, std::int64_t rows, std::int64_t cols, std::int64_t ld)
      : name(name), rows(rows), cols(cols), ld(ld), buffer(elements() * sizeof(float)) {
    check_cuda(cuda_driver().cuMemsetD32(buffer.get(), kPoisonBits, elements()), "poison");
  }
  std::size_t elements() const { return 2 * kProbeGuard + std::size_t((rows - 1) * ld + cols); }
  std::size_t offset_of(std::int64_t r, std::int64_t c) const {
    return (kProbeGuard + std::size_t(r * ld + c)) * sizeof(float);
  }
  CUdeviceptr origin() const { return buffer.get() + kProbeGuard * sizeof(float); }

  void upload_rows(const std::vector<float>& packed) {
    for (std::int64_t r = 0; r < rows; ++r) {
      buffer.upload(packed.data() + r * cols, std::size_t(cols) * sizeof(float), offset_of(r, 0));
    }
  }
  std::vector<float> download_rows() const {
    std::vector<float> packed(std::size_t(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      buffer.download(packed.data() + r * cols, std::size_t(cols) * sizeof(float), offset_of(r, 0));
    }
    return packed;
  }
  // Where a raw index of the buffer lies, for the message.
  std::string place(std::size_t index) const {
    if (index < kProbeGuard) return fmt::format("the guard before {}", name);
    const std::size_t offset = index - kProbeGuard;
    const std::int64_t row = std::int64_t(offset) / ld, col = std::int64_t(offset) % ld;
    if (row >= rows || (row == rows - 1 && col >= cols)) return fmt::format("the guard after {}", name);
    return fmt::format("{}'s padding at row {} column {}", name, row, col);
  }
};

std::vector<float> small_integers(std::size_t count, std::mt19937_64& random) {
  std::uniform_int_distribution<int> value(-8, 8);
  std::vector<float> values(count);
  for (float& v : values) v = float(value(random));
  return values;
}

}  // namespace

LargeIndexProbe::LargeIndexProbe(const GpuDevice& device) : sm_count_(device.properties().sm_count) {
  const CompiledKernelImage image =
      compile_cuda_source(kCheckSource, "tiletune_large_index_probe.cu", {},
                          device.properties().arch(), "outside_changed", "the large-index check");
  const CudaDriver& cu = cuda_driver();
  check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData(probe)");
  check_cuda(cu.cuModuleGetFunction(&outside_changed_, module_, "outside_changed"),
             "outside_changed");
}

LargeIndexProbe::~LargeIndexProbe() {
  if (module_ != nullptr) cuda_driver().cuModuleUnload(module_);
}

std::vector<GemmProblem> LargeIndexProbe::problems() {
  const GemmShape shape{3, 5, 3};
  return {{shape, kWideLd, 5, 5}, {shape, 3, kWideLd, 5}, {shape, 3, 5, kWideLd}};
}

std::size_t LargeIndexProbe::bytes_needed() {
  std::size_t most = 0;
  for (const GemmProblem& p : problems()) {
    const GemmShape& s = p.shape;
    const std::size_t elements = 6 * kProbeGuard + std::size_t((s.m - 1) * p.lda + s.k) +
                                 std::size_t((s.k - 1) * p.ldb + s.n) +
                                 std::size_t((s.m - 1) * p.ldc + s.n);
    most = std::max(most, elements * sizeof(float));
  }
  return most;
}

std::optional<std::string> LargeIndexProbe::unavailable() const {
  std::size_t free = 0, total = 0;
  check_cuda(cuda_driver().cuMemGetInfo(&free, &total), "cuMemGetInfo");
  const std::size_t margin = std::size_t(256) << 20;
  if (free >= bytes_needed() + margin) return std::nullopt;
  return fmt::format("the large-index probe needs {:.1f} GiB of device memory, {:.1f} GiB are free",
                     double(bytes_needed() + margin) / double(1ull << 30),
                     double(free) / double(1ull << 30));
}

std::optional<LargeIndexFinding> LargeIndexProbe::check(const GpuKernel& kernel,
                                                        const KernelTemplate& tmpl,
                                                        const Configuration& config,
                                                        std::vector<std::string>* skipped) const {
  const CaseRequirements requirements(tmpl, config);
  for (GemmProblem problem : problems()) {
    // A kernel may require aligned leading dimensions (a tensor map's rows, float4 loads): the
    // problem is moved to meet them, as the fuzzer moves its cases, while its wide leading
    // dimension stays past 2^30; where that fails the problem is not the kernel's case.
    if (tmpl.violated_requirement(config, &problem) != nullptr) {
      GemmProblem moved = problem;
      if (requirements.repair(moved) && std::max({moved.lda, moved.ldb, moved.ldc}) >= kWideLd - 1) {
        problem = moved;
      }
    }
    if (const Expression* unmet = tmpl.violated_requirement(config, &problem)) {
      if (skipped != nullptr) {
        skipped->push_back(fmt::format("{} does not meet requirement '{}'", problem.to_string(),
                                       unmet->text()));
      }
      continue;
    }
    if (auto finding = check(kernel, tmpl, config, problem)) return finding;
  }
  return std::nullopt;
}

std::optional<LargeIndexFinding> LargeIndexProbe::check(const GpuKernel& kernel,
                                                        const KernelTemplate& tmpl,
                                                        const Configuration& config,
                                                        const GemmProblem& problem) const {
  tmpl.check_requirements(config, problem);
  const CudaDriver& cu = cuda_driver();
  const GemmShape& s = problem.shape;
  const LaunchGeometry geometry = tmpl.launch_geometry(config, problem.shape, sm_count_);
  const auto finding = [&](std::string what, bool lost = false) {
    return LargeIndexFinding{problem, std::move(what), lost};
  };
  // Failing to set up is the environment's fault and throws; what the kernel does is a finding.
  ProbeMatrix a("A", s.m, s.k, problem.lda), b("B", s.k, s.n, problem.ldb),
      c("C", s.m, s.n, problem.ldc);
  std::mt19937_64 random(std::uint64_t(problem.lda ^ (problem.ldb << 1) ^ (problem.ldc << 2)));
  const std::vector<float> a_values = small_integers(std::size_t(s.m * s.k), random);
  const std::vector<float> b_values = small_integers(std::size_t(s.k * s.n), random);
  a.upload_rows(a_values);
  b.upload_rows(b_values);
  try {
    kernel.launch(geometry, a.origin(), b.origin(), c.origin(), problem);
    check_cuda(cu.cuCtxSynchronize(), "kernel execution");

    // Nothing outside any region changed, and A and B are as uploaded.
    DeviceBuffer verdict(2 * sizeof(unsigned long long));
    for (const ProbeMatrix* m : {&a, &b, &c}) {
      const unsigned long long initial[2] = {0, std::numeric_limits<unsigned long long>::max()};
      verdict.upload(initial, sizeof initial);
      CUdeviceptr buffer = m->buffer.get(), result = verdict.get();
      unsigned long long total = m->elements(), guard = kProbeGuard, rows = m->rows,
                         cols = m->cols, ld = m->ld;
      unsigned poison = kPoisonBits;
      void* arguments[] = {&buffer, &total, &guard, &rows, &cols, &ld, &poison, &result};
      check_cuda(cu.cuLaunchKernel(outside_changed_, 1024, 1, 1, 256, 1, 1, 0, nullptr, arguments,
                                   nullptr),
                 "cuLaunchKernel(outside_changed)");
      unsigned long long changed[2] = {0, 0};
      verdict.download(changed, sizeof changed);
      if (changed[0] > 0) {
        return finding(fmt::format("{} elements outside {}'s region changed, the first in {}",
                                   changed[0], m->name, m->place(std::size_t(changed[1]))));
      }
    }
    if (a.download_rows() != a_values) return finding("A was changed");
    if (b.download_rows() != b_values) return finding("B was changed");

    // Small integers: every sum is exact, so C is compared bit-exactly.
    const std::vector<float> got = c.download_rows();
    for (std::int64_t i = 0; i < s.m; ++i) {
      for (std::int64_t j = 0; j < s.n; ++j) {
        float expected = 0;
        for (std::int64_t k = 0; k < s.k; ++k) expected += a_values[i * s.k + k] * b_values[k * s.n + j];
        if (std::bit_cast<std::uint32_t>(got[i * s.n + j]) != std::bit_cast<std::uint32_t>(expected)) {
          return finding(fmt::format("C[{}][{}] = {}, expected {}", i, j, got[i * s.n + j], expected));
        }
      }
    }
  } catch (const CudaError& e) {
    return finding(std::string("launch failed: ") + e.what(), e.context_is_lost());
  }
  return std::nullopt;
}

}  // namespace tiletune
