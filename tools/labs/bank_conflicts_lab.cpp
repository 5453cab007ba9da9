#include "tools/labs/bank_conflicts_lab.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tools/labs/lab_error.h"
#include "tools/labs/lab_sources.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/profiling/counter_metrics.h"
#include "tuner/profiling/nsight_compute.h"

namespace tiletune::labs {

const std::vector<SharedAccessVariant> kSharedAccessVariants = {
    {"stride1", "bank_stride1", "tile[row][col] in [32][32]"},
    {"stride32", "bank_stride32", "tile[col][row] in [32][32]"},
    {"padded", "bank_padded", "tile[col][row] in [32][33]"},
    {"swizzled", "bank_swizzled", "tile[col][row ^ col] in [32][32]"},
};

namespace {

// The launch every measurement makes (bank_conflicts.cu): 1024 blocks of 256 threads, 64 rounds
// of 4 stores and 4 loads per thread: about half a millisecond at stride 32 on an H100.
constexpr unsigned kBlocks = 1024;
constexpr unsigned kThreads = 256;
constexpr int kRepeats = 64;

// The counters the lab reads (tuner/profiling/counter_metrics.h).
const std::vector<std::string> kSharedAccessCounters = {
    "shared_ld_wavefronts", "shared_st_wavefronts", "shared_ld_ideal_wavefronts",
    "shared_st_ideal_wavefronts", "shared_ld_excessive_wavefronts", "shared_st_excessive_wavefronts",
    "shared_ld_bank_conflicts", "shared_st_bank_conflicts"};

const SharedAccessVariant& variant_named(const std::string& name) {
  for (const SharedAccessVariant& v : kSharedAccessVariants) {
    if (name == v.name) return v;
  }
  throw LabArgumentError(
      fmt::format("no bank-conflicts kernel '{}' (stride1, stride32, padded, swizzled)", name));
}

// The lab's module loaded in the current context.
class LabModule {
 public:
  explicit LabModule(const std::string& arch) {
    const CompiledKernelImage image =
        compile_cuda_source(std::string(bank_conflicts_source()), "bank_conflicts.cu", {}, arch,
                            "bank_stride1", "the bank-conflict lab's kernels");
    check_cuda(cuda_driver().cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData");
  }
  ~LabModule() { cuda_driver().cuModuleUnload(module_); }
  LabModule(const LabModule&) = delete;
  LabModule& operator=(const LabModule&) = delete;

  CUfunction function(const char* entry) const {
    CUfunction f = nullptr;
    check_cuda(cuda_driver().cuModuleGetFunction(&f, module_, entry), entry);
    return f;
  }

 private:
  CUmodule module_ = nullptr;
};

void launch(CUfunction f, CUdeviceptr out, CUstream stream) {
  int repeats = kRepeats;
  void* args[] = {&repeats, &out};
  check_cuda(
      cuda_driver().cuLaunchKernel(f, kBlocks, 1, 1, kThreads, 1, 1, 0, stream, args, nullptr),
      "cuLaunchKernel");
}

// What thread t of any block sums (bank_conflicts.cu): the same for every layout.
std::vector<float> expected_sums() {
  std::vector<float> per_thread(kThreads);
  for (unsigned t = 0; t < kThreads; ++t) {
    const int lane = int(t % 32), reader = int((t / 32 + 1) % 8);
    double sum = 0;
    for (int r = 0; r < kRepeats; ++r) {
      for (int i = 0; i < 4; ++i) sum += (i * 8 + reader) * 32 + lane + r;
    }
    per_thread[t] = float(sum);
  }
  return per_thread;
}

std::optional<std::string> wrong_sum(const std::vector<float>& out) {
  const std::vector<float> expected = expected_sums();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] != expected[i % kThreads]) {
      return fmt::format("thread {} of block {} summed {} instead of {}", i % kThreads,
                         i / kThreads, out[i], expected[i % kThreads]);
    }
  }
  return std::nullopt;
}

std::optional<double> value_of(const std::map<std::string, double>& counters, const char* name) {
  const auto value = counters.find(name);
  return value == counters.end() ? std::nullopt : std::optional<double>(value->second);
}

// Both counters' sum; none unless both were read.
std::optional<double> sum_of(const std::map<std::string, double>& counters, const char* a,
                             const char* b) {
  const auto x = value_of(counters, a), y = value_of(counters, b);
  return x && y ? std::optional<double>(*x + *y) : std::nullopt;
}

const SharedAccessMeasurement* row_named(const std::vector<SharedAccessMeasurement>& rows,
                                         const std::string& name) {
  for (const SharedAccessMeasurement& row : rows) {
    if (row.variant == name) return &row;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> shared_access_metrics() {
  std::vector<CounterMetric> counters;
  for (const std::string& name : kSharedAccessCounters) counters.push_back(*find_counter_metric(name));
  return ncu_metrics_of(counters);
}

void take_shared_access_counters(const std::map<std::string, double>& ncu_values,
                                 SharedAccessMeasurement& row) {
  const std::map<std::string, double> counters = counter_values(ncu_values);
  // The lab's kernels load and store: their loads' and stores' counts together.
  row.requests = sum_of(counters, "shared_ld_ideal_wavefronts", "shared_st_ideal_wavefronts");
  row.wavefronts = sum_of(counters, "shared_ld_wavefronts", "shared_st_wavefronts");
  row.excessive = sum_of(counters, "shared_ld_excessive_wavefronts", "shared_st_excessive_wavefronts");
  const auto ld = value_of(counters, "shared_ld_bank_conflicts");
  const auto st = value_of(counters, "shared_st_bank_conflicts");
  row.hardware_conflicts = ld && st ? std::optional<double>(*ld + *st) : std::nullopt;
}

std::vector<Claim> bank_conflict_claims(const std::vector<SharedAccessMeasurement>& rows,
                                        const std::string& why_no_counters) {
  std::vector<Claim> claims;
  // Why a counter of `row` is missing: the lab's reason, else the counter ncu did not give.
  auto missing = [&](const SharedAccessMeasurement* row, const char* counter) {
    if (!why_no_counters.empty()) return why_no_counters;
    if (row == nullptr) return std::string("the kernel was not run");
    return fmt::format("ncu gave no {} for {}", counter, row->variant);
  };
  for (const char* name : {"stride1", "padded", "swizzled"}) {
    const std::string statement = fmt::format("{}: no excessive shared wavefronts", name);
    const SharedAccessMeasurement* row = row_named(rows, name);
    if (row == nullptr || !row->excessive) {
      claims.push_back(not_measured(statement, missing(row, "excessive wavefronts")));
    } else {
      claims.push_back(judged(statement, *row->excessive == 0,
                              fmt::format("{:.0f} excessive wavefronts", *row->excessive)));
    }
  }
  {
    const std::string statement = "stride32: 32-way, 31 excessive wavefronts per request";
    const SharedAccessMeasurement* row = row_named(rows, "stride32");
    if (row == nullptr || !row->excessive || !row->requests || *row->requests <= 0) {
      claims.push_back(not_measured(
          statement,
          missing(row, row && row->excessive ? "ideal wavefronts" : "excessive wavefronts")));
    } else {
      // The degree of conflict is a whole number: 31 per request means 32-way, 30 would be 31-way.
      const double per_request = *row->excessive / *row->requests;
      claims.push_back(judged(statement, std::lround(per_request) == 31,
                              fmt::format("{:.0f} excessive / {:.0f} requests = {:.2f}",
                                          *row->excessive, *row->requests, per_request)));
    }
  }
  {
    const std::string statement = "stride32: slower than stride1, padded and swizzled";
    const SharedAccessMeasurement* slow = row_named(rows, "stride32");
    std::string measured;
    bool holds = slow != nullptr;
    for (const char* name : {"stride1", "padded", "swizzled"}) {
      const SharedAccessMeasurement* fast = row_named(rows, name);
      if (slow == nullptr || fast == nullptr) {
        holds = false;
        break;
      }
      // Slower beyond the noise: even stride 32's fastest run loses to the other's median.
      holds = holds && slow->timing.min_ms > fast->timing.median_ms;
      measured += fmt::format("{}{} x{:.2f}", measured.empty() ? "" : ", ", name,
                              slow->timing.median_ms / fast->timing.median_ms);
    }
    if (slow == nullptr) {
      claims.push_back(not_measured(statement, "stride32 was not run"));
    } else {
      claims.push_back(judged(statement, holds, "median time over " + measured));
    }
  }
  return claims;
}

BankConflictLab run_bank_conflict_lab(const GpuDevice& device, const CounterReader& counters) {
  BankConflictLab lab;
  lab.gpu = device.properties().name;
  const LabModule module(device.properties().arch());
  DeviceBuffer out(std::size_t(kBlocks) * kThreads * sizeof(float));
  std::vector<float> host(std::size_t(kBlocks) * kThreads);
  TimingSettings settings;
  settings.min_runs = 20;
  for (const SharedAccessVariant& variant : kSharedAccessVariants) {
    const CUfunction f = module.function(variant.entry);
    check_cuda(cuda_driver().cuMemsetD32(out.get(), 0, host.size()), "cuMemsetD32");
    launch(f, out.get(), nullptr);
    check_cuda(cuda_driver().cuCtxSynchronize(), variant.entry);
    out.download_into(host);
    if (auto wrong = wrong_sum(host)) {
      throw std::runtime_error(
          fmt::format("the bank-conflicts lab's {} kernel is wrong: {}", variant.name, *wrong));
    }
    SharedAccessMeasurement row;
    row.variant = variant.name;
    row.timing = time_launches([&](CUstream s) { launch(f, out.get(), s); }, nullptr, settings);
    lab.rows.push_back(row);
  }
  for (SharedAccessMeasurement& row : lab.rows) {
    if (!lab.why_no_counters.empty()) break;
    try {
      const std::string entry = variant_named(row.variant).entry;
      take_shared_access_counters(
          counters({"bank-conflicts", row.variant}, entry, shared_access_metrics()), row);
    } catch (const ProfilerUnavailable& e) {
      lab.why_no_counters = e.what();
    }
  }
  lab.claims = bank_conflict_claims(lab.rows, lab.why_no_counters);
  return lab;
}

std::string format_bank_conflict_lab(const BankConflictLab& lab) {
  std::string text = fmt::format(
      "bank conflicts on {}: {} blocks x {} threads, {} rounds of 4 shared stores and 4 loads per "
      "thread\n",
      lab.gpu, kBlocks, kThreads, kRepeats);
  text +=
      fmt::format("{:<9} {:<33} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12}\n", "variant", "layout",
                  "median us", "min us", "requests", "wavefronts", "excessive", "hw conflicts");
  for (const SharedAccessMeasurement& row : lab.rows) {
    text += fmt::format("{:<9} {:<33} {:>10.1f} {:>10.1f} {:>12} {:>12} {:>12} {:>12}\n",
                        row.variant, variant_named(row.variant).layout, row.timing.median_ms * 1e3,
                        row.timing.min_ms * 1e3, counter_cell(row.requests), counter_cell(row.wavefronts),
                        counter_cell(row.excessive), counter_cell(row.hardware_conflicts));
  }
  if (!lab.why_no_counters.empty()) text += "counters not measured: " + lab.why_no_counters + "\n";
  text +=
      "(hw conflicts: the hardware counter, reported as read; it is not zero on conflict-free "
      "code)\n\n";
  return text + format_claims_table(lab.claims);
}

nlohmann::json bank_conflict_lab_json(const BankConflictLab& lab) {
  auto optional = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json rows = nlohmann::json::array();
  for (const SharedAccessMeasurement& row : lab.rows) {
    rows.push_back({{"variant", row.variant},
                    {"layout", variant_named(row.variant).layout},
                    {"median_ms", row.timing.median_ms},
                    {"min_ms", row.timing.min_ms},
                    {"runs", row.timing.runs},
                    {"shared_requests", optional(row.requests)},
                    {"shared_wavefronts", optional(row.wavefronts)},
                    {"excessive_wavefronts", optional(row.excessive)},
                    {"hardware_bank_conflicts", optional(row.hardware_conflicts)}});
  }
  nlohmann::json json = {{"lab", "bank-conflicts"},
                         {"gpu", lab.gpu},
                         {"rows", rows},
                         {"claims", claims_json(lab.claims)}};
  if (!lab.why_no_counters.empty()) json["counters_not_measured"] = lab.why_no_counters;
  return json;
}

void launch_bank_conflict_kernel(const std::string& variant) {
  const SharedAccessVariant& v = variant_named(variant);
  const GpuDevice device;
  const LabModule module(device.properties().arch());
  DeviceBuffer out(std::size_t(kBlocks) * kThreads * sizeof(float));
  launch(module.function(v.entry), out.get(), nullptr);
  check_cuda(cuda_driver().cuCtxSynchronize(), v.entry);
}

}  // namespace tiletune::labs
