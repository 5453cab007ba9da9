#include "tools/report/report_data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>

#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::report {
namespace {

// "A=1,B=2" -> {{"A","1"},{"B","2"}}.
std::vector<std::pair<std::string, std::string>> parameters_of(const std::string& config) {
  std::vector<std::pair<std::string, std::string>> parameters;
  std::size_t start = 0;
  while (start < config.size()) {
    std::size_t end = config.find(',', start);
    if (end == std::string::npos) end = config.size();
    const std::string item = config.substr(start, end - start);
    const std::size_t equals = item.find('=');
    if (equals != std::string::npos) parameters.emplace_back(item.substr(0, equals), item.substr(equals + 1));
    start = end + 1;
  }
  return parameters;
}

std::optional<double> number_of(const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Numbers in numeric order before any text, text in text order.
bool value_less(const std::string& a, const std::string& b) {
  const std::optional<double> x = number_of(a), y = number_of(b);
  if (x && y) return *x < *y || (*x == *y && a < b);
  if (x || y) return x.has_value();
  return a < b;
}

auto counter_key(const CounterRecord& c) {
  return std::tie(c.gpu_name, c.template_name, c.shape, c.config, c.template_hash, c.recorded_at);
}

}  // namespace

std::optional<double> dram_bytes(const CounterRecord& counters) {
  const auto value = [&](const char* name) -> std::optional<double> {
    const auto it = counters.values.find(name);
    return it == counters.values.end() ? std::nullopt : std::optional(it->second);
  };
  const std::optional<double> read = value("dram_read_bytes"), write = value("dram_write_bytes");
  if (read && write) return *read + *write;
  return std::nullopt;
}

std::optional<double> datasheet_bandwidth_gb_s(const std::string& gpu_name) {
  // Most specific names first: "H100 PCIe" before "H100". GH200's memory varies by model.
  static const std::vector<std::pair<std::string, double>> kBandwidths = {
      {"GH200", 0},           {"H200", 4800},          {"H100 PCIe", 2000}, {"H100 NVL", 3900},
      {"H100", 3350},         {"A100-SXM4-80GB", 2039}, {"A100 80GB PCIe", 1935},
      {"A100", 1555},         {"L40S", 864},           {"RTX 4090", 1008},  {"V100", 900},
      {"Tesla T4", 320},
  };
  for (const auto& [name, gb_s] : kBandwidths) {
    if (gpu_name.find(name) != std::string::npos) {
      return gb_s > 0 ? std::optional(gb_s) : std::nullopt;
    }
  }
  return std::nullopt;
}

double compulsory_bytes(const GemmShape& shape) {
  const double m = double(shape.m), n = double(shape.n), k = double(shape.k);
  return 4.0 * (m * k + k * n + m * n);
}

ReportData build_report(const std::vector<CurrentResult>& results, std::vector<BenchRecord> bench,
                        std::vector<CounterRecord> counters, const std::vector<TraceRecord>& traces) {
  ReportData report;
  std::sort(counters.begin(), counters.end(),
            [](const CounterRecord& a, const CounterRecord& b) { return counter_key(a) < counter_key(b); });
  report.counters = std::move(counters);

  // Winners: the fastest per GPU name, shape and precision (equal times by template name, then
  // configuration): a TF32 result is no FP32 winner.
  std::map<std::tuple<std::string, GemmShape, Precision>, const CurrentResult*> fastest;
  std::map<std::string, GpuRecord> gpus;
  for (const CurrentResult& row : results) {
    gpus.emplace(row.gpu.name, row.gpu);
    const CurrentResult*& best = fastest[{row.gpu.name, row.result.shape, row.precision}];
    if (!best || std::tie(row.result.median_ms, row.result.template_name, row.result.config) <
                     std::tie(best->result.median_ms, best->result.template_name, best->result.config)) {
      best = &row;
    }
  }
  for (const auto& [key, row] : fastest) {
    Winner winner{row->gpu, row->result, row->fuzz_cases, row->precision};
    winner.bytes = compulsory_bytes(row->result.shape);
    // The latest counters of exactly this configuration (counters are sorted, recorded_at last).
    for (const CounterRecord& c : report.counters) {
      if (c.gpu_name == row->gpu.name && c.template_name == row->result.template_name &&
          c.template_hash == row->result.template_hash && c.config == row->result.config &&
          c.shape == row->result.shape) {
        if (std::optional<double> bytes = dram_bytes(c)) {
          winner.bytes = *bytes;
          winner.bytes_measured = true;
        }
      }
    }
    report.winners.push_back(std::move(winner));
  }

  // Bench: the latest row per GPU, shape and precision (each against its own yardstick).
  std::map<std::tuple<std::string, GemmShape, Precision>, BenchRecord> latest_bench;
  for (BenchRecord& row : bench) {
    if (!gpus.contains(row.gpu_name)) gpus[row.gpu_name].name = row.gpu_name;
    auto [it, inserted] = latest_bench.try_emplace({row.gpu_name, row.shape, row.precision}, row);
    if (!inserted && std::tie(row.recorded_at, row.template_name, row.config) >
                         std::tie(it->second.recorded_at, it->second.template_name, it->second.config)) {
      it->second = row;
    }
  }
  for (auto& [key, row] : latest_bench) report.bench.push_back(std::move(row));

  for (const auto& [name, gpu] : gpus) {
    report.gpu_names.push_back(name);
    GpuRoofs roofs;
    roofs.gpu = gpu;
    DeviceProperties properties;
    properties.sm_count = gpu.sm_count;
    properties.clock_khz = gpu.clock_khz;
    roofs.fp32_peak_tflops = properties.fp32_peak_tflops();
    roofs.bandwidth_gb_s = datasheet_bandwidth_gb_s(name);
    roofs.bandwidth_source = roofs.bandwidth_gb_s
                                 ? "DRAM bandwidth from the data sheet of its name (tools/report/report_data.cpp)"
                                 : "no DRAM bandwidth known for this GPU name: no memory roof";
    report.roofs.push_back(std::move(roofs));
  }

  // Sensitivity, keyed so that iteration is sorted.
  std::map<std::tuple<std::string, std::string, GemmShape>, std::map<std::string, std::map<std::string, double>>> best_by_value;
  for (const CurrentResult& row : results) {
    const ResultRecord& r = row.result;
    auto& parameters = best_by_value[{row.gpu.name, r.template_name, r.shape}];
    for (const auto& [name, value] : parameters_of(r.config)) {
      auto [it, inserted] = parameters[name].try_emplace(value, r.median_ms);
      if (!inserted) it->second = std::min(it->second, r.median_ms);
    }
  }

  // Convergence: the traces come ordered by GPU, template, shape, run and step.
  for (const TraceRecord& step : traces) {
    if (report.convergences.empty() || report.convergences.back().gpu_name != step.gpu_name ||
        report.convergences.back().template_hash != step.template_hash ||
        report.convergences.back().template_name != step.template_name ||
        report.convergences.back().shape != step.shape) {
      report.convergences.push_back({step.gpu_name, step.template_name, step.template_hash, step.shape, {}});
    }
    std::vector<ConvergenceLine>& lines = report.convergences.back().lines;
    if (lines.empty() || lines.back().run_id != step.run_id) lines.push_back({step.strategy, step.run_id, {}});
    std::vector<double>& best = lines.back().best_so_far_ms;
    const double previous = best.empty() ? std::nan("") : best.back();
    const bool ok = step.status == ResultStatus::ok;
    best.push_back(ok && !(step.median_ms >= previous) ? step.median_ms : previous);
  }
  for (Convergence& c : report.convergences) {
    std::stable_sort(c.lines.begin(), c.lines.end(), [](const ConvergenceLine& a, const ConvergenceLine& b) {
      return std::tie(a.strategy, a.run_id) < std::tie(b.strategy, b.run_id);
    });
  }
  for (const auto& [key, parameters] : best_by_value) {
    Sensitivity sensitivity{std::get<0>(key), std::get<1>(key), std::get<2>(key), {}};
    for (const auto& [name, by_value] : parameters) {
      auto& values = sensitivity.best_ms_by_value[name];
      values.assign(by_value.begin(), by_value.end());
      std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return value_less(a.first, b.first); });
    }
    report.sensitivities.push_back(std::move(sensitivity));
  }
  return report;
}

ReportData read_report(const std::filesystem::path& database) {
  ReportData report;
  {
    const ResultStore store(database, ResultStore::Access::read_only);
    report = build_report(store.current_results(), store.bench_results(), store.counters(), store.search_traces());
  }
  report.choices = evaluate_choices(runtime::load_database_records(database));
  return report;
}

}  // namespace tiletune::report
