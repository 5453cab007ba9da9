#include "tools/labs/tiling_lab.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "tools/labs/lab_error.h"
#include "tools/labs/lab_sources.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/kernel_template.h"
#include "tuner/profiling/counter_metrics.h"
#include "tuner/profiling/nsight_compute.h"

namespace tiletune::labs {

const std::vector<TilingKernel> kTilingKernels = {
    {"naive16", "naive 16x16", false, 16},
    {"tiled16", "tiled TILE=16", true, 16},
    {"naive32", "naive 32x32", false, 32},
    {"tiled32", "tiled TILE=32", true, 32},
};
const std::vector<int> kTilingSizes = {256, 512, 1024};

namespace {

// The counters the lab reads (tuner/profiling/counter_metrics.h).
const std::vector<std::string> kTilingCounters = {"global_ld_requests", "global_ld_sectors",
                                            "dram_read_bytes", "dram_write_bytes"};

// Within this share of TILE the requests ratio counts as "TILE times fewer": the kernels' loads
// are whole warps, so only the edges of the loops (none at these sizes) could move it.
constexpr double kRequestsTolerance = 0.10;

const TilingKernel& kernel_named(const std::string& name) {
  for (const TilingKernel& k : kTilingKernels) {
    if (name == k.name) return k;
  }
  throw LabArgumentError(
      fmt::format("no tiling kernel '{}' (naive16, tiled16, naive32, tiled32)", name));
}

int size_named(const std::string& text) {
  for (const int size : kTilingSizes) {
    if (text == std::to_string(size)) return size;
  }
  throw LabArgumentError(fmt::format("no tiling size '{}' (256, 512, 1024)", text));
}

// One of the shipped templates, at the lab's configuration, loaded on the device.
struct LabGemm {
  KernelTemplate tmpl;
  Configuration config;
  std::unique_ptr<GpuKernel> kernel;

  LabGemm(const TilingKernel& k, const std::string& arch) {
    tmpl = k.tiled ? parse_template(std::string(tiled_template_source()), "kernels_src/tiled.cu")
                   : parse_template(std::string(naive_template_source()), "kernels_src/naive.cu");
    config =
        tmpl.parse_configuration(k.tiled ? fmt::format("TILE={},PAD=0,SWIZZLE=0", k.tile)
                                         : fmt::format("BLOCK_X={},BLOCK_Y={}", k.tile, k.tile));
    kernel = std::make_unique<GpuKernel>(compile_configuration(tmpl, config, arch), tmpl.entry,
                                             entry_form(tmpl));
  }

  void launch(int n, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream) const {
    const GemmProblem problem = GemmProblem::packed({n, n, n});
    kernel->launch(tmpl.launch_geometry(config, problem.shape), a, b, c, problem, stream);
  }
};

std::vector<float> random_matrix(int n, std::mt19937_64& random) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(std::size_t(n) * n);
  for (float& v : values) {
    do {
      v = uniform(random);
    } while (v == 0.0f);  // never zeros: a skipped product must show
  }
  return values;
}

const TilingMeasurement* row_of(const std::vector<TilingMeasurement>& rows,
                                const std::string& kernel, int size) {
  for (const TilingMeasurement& row : rows) {
    if (row.kernel == kernel && row.size == size) return &row;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> tiling_metrics() {
  std::vector<CounterMetric> counters;
  for (const std::string& name : kTilingCounters) counters.push_back(*find_counter_metric(name));
  return ncu_metrics_of(counters);
}

void take_tiling_counters(const std::map<std::string, double>& ncu_values, TilingMeasurement& row) {
  const std::map<std::string, double> counters = counter_values(ncu_values);
  if (auto r = counters.find("global_ld_requests"); r != counters.end()) {
    row.load_requests = r->second;
  }
  if (auto s = counters.find("global_ld_sectors"); s != counters.end()) {
    row.load_sectors = s->second;
  }
  const auto read = counters.find("dram_read_bytes"), write = counters.find("dram_write_bytes");
  if (read != counters.end() && write != counters.end()) {
    row.dram_bytes = read->second + write->second;
  }
}

std::vector<Claim> tiling_claims(const std::vector<TilingMeasurement>& rows,
                                 const std::string& why_no_counters) {
  std::vector<Claim> claims;
  for (const int size : kTilingSizes) {
    for (const int tile : {16, 32}) {
      const TilingMeasurement* naive = row_of(rows, fmt::format("naive{}", tile), size);
      const TilingMeasurement* tiled = row_of(rows, fmt::format("tiled{}", tile), size);
      if (naive == nullptr || tiled == nullptr) continue;
      const std::string prefix = fmt::format("{}^3 TILE={}: naive/tiled", size, tile);
      // Why the counter is missing: the lab's reason, else the counter ncu did not give.
      auto why = [&](const char* counter) {
        return why_no_counters.empty() ? fmt::format("ncu gave no {}", counter) : why_no_counters;
      };
      auto ratio = [&](std::optional<double> of_naive, std::optional<double> of_tiled) {
        return of_naive && of_tiled && *of_tiled > 0 ? std::optional<double>(*of_naive / *of_tiled)
                                                     : std::nullopt;
      };
      const std::string requests =
          fmt::format("{} global load requests near {} (within 10%)", prefix, tile);
      if (auto r = ratio(naive->load_requests, tiled->load_requests)) {
        claims.push_back(judged(requests, std::abs(*r / tile - 1) <= kRequestsTolerance,
                                fmt::format("{:.2f} ({:.0f} / {:.0f})", *r, *naive->load_requests,
                                            *tiled->load_requests)));
      } else {
        claims.push_back(not_measured(requests, why("global load requests")));
      }
      const std::string sectors = prefix + " global load sectors";
      if (auto r = ratio(naive->load_sectors, tiled->load_sectors)) {
        claims.push_back(
            reported(sectors, fmt::format("{:.2f} ({:.0f} / {:.0f})", *r, *naive->load_sectors,
                                          *tiled->load_sectors)));
      } else {
        claims.push_back(not_measured(sectors, why("global load sectors")));
      }
      const std::string dram = prefix + " DRAM bytes";
      if (auto r = ratio(naive->dram_bytes, tiled->dram_bytes)) {
        claims.push_back(reported(dram, fmt::format("{:.2f} ({:.0f} / {:.0f})", *r,
                                                    *naive->dram_bytes, *tiled->dram_bytes)));
      } else {
        claims.push_back(not_measured(dram, why("DRAM bytes")));
      }
    }
  }
  return claims;
}

ReferenceProduct cpu_reference_product(const std::vector<float>& a, const std::vector<float>& b,
                                       int n) {
  ReferenceProduct ref;
  ref.value.assign(std::size_t(n) * n, 0.0);
  ref.bound.assign(std::size_t(n) * n, 0.0);
  // i-k-j order: the inner loop walks rows of B and C, so the reference runs at cache speed.
  for (int i = 0; i < n; ++i) {
    double* value = &ref.value[std::size_t(i) * n];
    double* bound = &ref.bound[std::size_t(i) * n];
    for (int k = 0; k < n; ++k) {
      const double aik = a[std::size_t(i) * n + k];
      const float* bk = &b[std::size_t(k) * n];
      for (int j = 0; j < n; ++j) {
        value[j] += aik * bk[j];
        bound[j] += std::abs(aik * bk[j]);
      }
    }
  }
  // gamma_n = n u / (1 - n u), u = 2^-24: the classical bound of a length-n dot product in FP32.
  const double nu = double(n) * std::ldexp(1.0, -24);
  for (double& b : ref.bound) b *= nu / (1 - nu);
  return ref;
}

std::optional<std::string> compare_with_reference(const std::vector<float>& c,
                                                  const ReferenceProduct& ref, int n) {
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!(std::abs(double(c[i]) - ref.value[i]) <= ref.bound[i])) {
      return fmt::format("C[{}][{}] = {} where the reference is {} (bound {:.3g})", i / n, i % n,
                         c[i], ref.value[i], ref.bound[i]);
    }
  }
  return std::nullopt;
}

TilingLab run_tiling_lab(const GpuDevice& device, const CounterReader& counters) {
  TilingLab lab;
  lab.gpu = device.properties().name;
  std::vector<std::unique_ptr<LabGemm>> gemms;
  for (const TilingKernel& k : kTilingKernels)
    gemms.push_back(std::make_unique<LabGemm>(k, device.properties().arch()));
  const L2Flush flush(device.properties().l2_cache_bytes);
  std::mt19937_64 random(15);
  for (const int n : kTilingSizes) {
    const std::vector<float> a = random_matrix(n, random), b = random_matrix(n, random);
    const auto start = std::chrono::steady_clock::now();
    const ReferenceProduct ref = cpu_reference_product(a, b, n);
    lab.cpu_ms.emplace_back(
        n, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
               .count());
    const DeviceBuffer da = DeviceBuffer::from(a), db = DeviceBuffer::from(b);
    DeviceBuffer dc(a.size() * sizeof(float));
    std::vector<float> c(a.size());
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      const LabGemm& gemm = *gemms[i];
      // Verification before speed: a NaN-poisoned C, one launch, every element within its bound.
      check_cuda(cuda_driver().cuMemsetD32(dc.get(), 0x7fc00000u, c.size()), "cuMemsetD32");
      gemm.launch(n, da.get(), db.get(), dc.get(), nullptr);
      check_cuda(cuda_driver().cuCtxSynchronize(), kTilingKernels[i].name);
      dc.download_into(c);
      if (auto wrong = compare_with_reference(c, ref, n)) {
        throw std::runtime_error(fmt::format("the tiling lab's {} is wrong at {}^3: {}",
                                             kTilingKernels[i].label, n, *wrong));
      }
      TilingMeasurement row;
      row.kernel = kTilingKernels[i].name;
      row.size = n;
      row.timing =
          time_launches([&](CUstream s) { gemm.launch(n, da.get(), db.get(), dc.get(), s); },
                        nullptr, TimingSettings{}, [&](CUstream s) { flush(s); });
      lab.rows.push_back(row);
    }
  }
  for (TilingMeasurement& row : lab.rows) {
    if (!lab.why_no_counters.empty()) break;
    try {
      const std::string entry = kernel_named(row.kernel).tiled ? "tiled_gemm" : "naive_gemm";
      take_tiling_counters(
          counters({"tiling", row.kernel, std::to_string(row.size)}, entry, tiling_metrics()), row);
    } catch (const ProfilerUnavailable& e) {
      lab.why_no_counters = e.what();
    }
  }
  lab.claims = tiling_claims(lab.rows, lab.why_no_counters);
  return lab;
}

std::string format_tiling_lab(const TilingLab& lab) {
  std::string text = fmt::format(
      "tiling on {}: square SGEMM, inputs in [-1, 1], every result checked against the CPU "
      "reference before timing\n",
      lab.gpu);
  text += fmt::format("{:>5} {:<16} {:>11} {:>9} {:>8} {:>8} {:>12} {:>12} {:>12}\n", "size",
                      "kernel", "median us", "GFLOP/s", "x naive", "x CPU", "ld requests",
                      "ld sectors", "DRAM bytes");
  for (const auto& [n, cpu_ms] : lab.cpu_ms) {
    const double flops = 2.0 * n * double(n) * n;
    text += fmt::format("{:>5} {:<16} {:>11.1f} {:>9.1f}\n", n, "CPU reference", cpu_ms * 1e3,
                        flops / (cpu_ms * 1e-3) / 1e9);
    for (const TilingMeasurement& row : lab.rows) {
      if (row.size != n) continue;
      const TilingKernel& k = kernel_named(row.kernel);
      const TilingMeasurement* naive = row_of(lab.rows, fmt::format("naive{}", k.tile), n);
      text += fmt::format(
          "{:>5} {:<16} {:>11.1f} {:>9.1f} {:>8.2f} {:>8.1f} {:>12} {:>12} {:>12}\n", n, k.label,
          row.timing.median_ms * 1e3, flops / (row.timing.median_ms * 1e-3) / 1e9,
          naive ? naive->timing.median_ms / row.timing.median_ms : 0.0,
          cpu_ms / row.timing.median_ms, counter_cell(row.load_requests), counter_cell(row.load_sectors),
          counter_cell(row.dram_bytes));
    }
  }
  if (!lab.why_no_counters.empty()) text += "counters not measured: " + lab.why_no_counters + "\n";
  text +=
      "(x naive: the naive kernel of the same block side over this one; CPU reference: double with "
      "its error bound, one core)\n\n";
  return text + format_claims_table(lab.claims);
}

nlohmann::json tiling_lab_json(const TilingLab& lab) {
  auto optional = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json cpu = nlohmann::json::array();
  for (const auto& [n, ms] : lab.cpu_ms) cpu.push_back({{"size", n}, {"median_ms", ms}});
  nlohmann::json rows = nlohmann::json::array();
  for (const TilingMeasurement& row : lab.rows) {
    rows.push_back({{"kernel", row.kernel},
                    {"label", kernel_named(row.kernel).label},
                    {"size", row.size},
                    {"median_ms", row.timing.median_ms},
                    {"min_ms", row.timing.min_ms},
                    {"runs", row.timing.runs},
                    {"global_load_requests", optional(row.load_requests)},
                    {"global_load_sectors", optional(row.load_sectors)},
                    {"dram_bytes", optional(row.dram_bytes)}});
  }
  nlohmann::json json = {{"lab", "tiling"},
                         {"gpu", lab.gpu},
                         {"cpu_reference", cpu},
                         {"rows", rows},
                         {"claims", claims_json(lab.claims)}};
  if (!lab.why_no_counters.empty()) json["counters_not_measured"] = lab.why_no_counters;
  return json;
}

void launch_tiling_kernel(const std::string& kernel, const std::string& size) {
  const TilingKernel& k = kernel_named(kernel);
  const int n = size_named(size);
  const GpuDevice device;
  const LabGemm gemm(k, device.properties().arch());
  std::mt19937_64 random(15);
  const DeviceBuffer a = DeviceBuffer::from(random_matrix(n, random));
  const DeviceBuffer b = DeviceBuffer::from(random_matrix(n, random));
  DeviceBuffer c(std::size_t(n) * n * sizeof(float));
  gemm.launch(n, a.get(), b.get(), c.get(), nullptr);
  check_cuda(cuda_driver().cuCtxSynchronize(), k.name);
}

}  // namespace tiletune::labs
