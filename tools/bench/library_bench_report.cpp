#include "tools/bench/library_bench_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tiletune {
namespace {

template <class Ratio>
std::optional<double> geomean(const std::vector<SuiteRow>& rows, Ratio ratio) {
  if (rows.empty()) return std::nullopt;
  double log_sum = 0;
  for (const SuiteRow& row : rows) log_sum += std::log(ratio(row));
  return std::exp(log_sum / double(rows.size()));
}

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::optional<double> LibraryBenchReport::library_geomean() const {
  return geomean(suite, [](const SuiteRow& row) { return row.library_ratio(); });
}

std::optional<double> LibraryBenchReport::direct_geomean() const {
  return geomean(suite, [](const SuiteRow& row) { return row.direct_ratio(); });
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t middle = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[middle] : (samples[middle - 1] + samples[middle]) / 2;
}

std::string overhead_table(const OverheadResult& r) {
  std::string text = fmt::format(
      "per-call overhead once warm at {} [{}]: host time to enqueue, median of {} batches of {} "
      "calls\n",
      r.shape.to_string(), r.config, r.batches, r.calls_per_batch);
  text += fmt::format("  {:<34} {:>10}\n", "launch", "us/call");
  text += fmt::format("  {:<34} {:>10.3f}\n", "direct (driver API, same cubin)", r.direct_us);
  text += fmt::format("  {:<34} {:>10.3f}\n", "library (gemm.run)", r.library_us);
  text += fmt::format("  {:<34} {:>10.3f}\n", "difference", r.difference_us());
  return text;
}

std::string first_call_table(const FirstCallResult& r) {
  std::string text = "first-call cost: open, gemm, run and synchronise (the CUDA context exists)\n";
  text += fmt::format("  {:<44} {:>10}\n", "case", "ms");
  text += fmt::format("  {:<44} {:>10.2f}\n", "cold (empty cubin cache: NVRTC)", r.cold_ms);
  text += fmt::format("  {:<44} {:>10.2f}\n", "warm (a new Library on the filled cache)", r.warm_disk_ms);
  if (r.bundle_ms) {
    text += fmt::format("  {:<44} {:>10.2f}\n", "bundle (its cubin, an empty cache)", *r.bundle_ms);
  }
  text += fmt::format("  {:<44} {:>10.3f}\n", "second call in the same Library", r.second_call_ms);
  return text;
}

std::string suite_table(const LibraryBenchReport& report) {
  std::string text = fmt::format(
      "{} {} through the library, verified at each full shape, against cuBLAS SGEMM in the same "
      "run\n",
      report.gpu, report.kernel);
  text += fmt::format("  {:<16} {:<58} {:>5} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "shape",
                      "plan config", "exact", "library us", "direct us", "cuBLAS us", "library",
                      "direct");
  for (const SuiteRow& row : report.suite) {
    text += fmt::format("  {:<16} {:<58} {:>5} {:>10.1f} {:>10.1f} {:>10.1f} {:>8.3f} {:>8.3f}\n",
                        row.shape.to_string(), row.plan_config, row.plan_exact ? "yes" : "no",
                        row.library_ms * 1e3, row.direct_ms * 1e3, row.cublas_ms * 1e3,
                        row.library_ratio(), row.direct_ratio());
    if (row.plan_config != row.bench_config) {
      text += fmt::format("  {:<16} bench times another configuration: {}\n", "", row.bench_config);
    }
  }
  for (const GemmShape& shape : report.unrecorded) {
    text += fmt::format("  {:<16} no correct configuration recorded: not measured\n", shape.to_string());
  }
  if (auto library = report.library_geomean()) {
    text += fmt::format("  geometric mean of ours/cuBLAS over {} shapes: library {:.3f}, direct {:.3f}\n",
                        report.suite.size(), *library, *report.direct_geomean());
  }
  return text;
}

std::string summary_table(const LibraryBenchReport& report) {
  std::string text = "summary\n";
  const auto line = [&](const std::string& what, const std::string& value, const std::string& note) {
    text += fmt::format("  {:<40} {:>12}  {}\n", what, value, note);
  };
  if (const auto& o = report.overhead) {
    line("run overhead over a direct launch", fmt::format("{:.3f} us", o->difference_us()),
         o->difference_us() < kOverheadTargetUs ? "(target < 2 us: met)" : "(target < 2 us: MISSED)");
  }
  if (const auto& f = report.first_call) {
    line("first call, cold cubin cache", fmt::format("{:.2f} ms", f->cold_ms), "");
    line("first call, warm cubin cache", fmt::format("{:.2f} ms", f->warm_disk_ms), "");
    if (f->bundle_ms) line("first call, from the bundle", fmt::format("{:.2f} ms", *f->bundle_ms), "");
    line("second call", fmt::format("{:.3f} ms", f->second_call_ms), "");
  }
  if (auto library = report.library_geomean()) {
    line("ours/cuBLAS geomean, library", fmt::format("{:.3f}", *library),
         fmt::format("({} shapes)", report.suite.size()));
    line("ours/cuBLAS geomean, direct (as bench)", fmt::format("{:.3f}", *report.direct_geomean()), "");
  }
  if (!report.unrecorded.empty()) {
    line("shapes without a record", std::to_string(report.unrecorded.size()), "(not measured)");
  }
  return text;
}

nlohmann::json report_json(const LibraryBenchReport& report) {
  nlohmann::json json;
  json["gpu"] = report.gpu;
  json["db"] = report.db;
  json["kernel"] = report.kernel;
  json["bundle"] = report.bundle.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.bundle);
  if (const auto& o = report.overhead) {
    json["overhead"] = {{"shape", o->shape.to_string()},     {"config", o->config},
                        {"batches", o->batches},             {"calls_per_batch", o->calls_per_batch},
                        {"direct_us_per_call", o->direct_us}, {"library_us_per_call", o->library_us},
                        {"difference_us", o->difference_us()}, {"target_us", kOverheadTargetUs}};
  } else {
    json["overhead"] = nullptr;
  }
  if (const auto& f = report.first_call) {
    json["first_call"] = {{"cold_ms", f->cold_ms},
                          {"warm_disk_ms", f->warm_disk_ms},
                          {"bundle_ms", optional_number(f->bundle_ms)},
                          {"second_call_ms", f->second_call_ms}};
  } else {
    json["first_call"] = nullptr;
  }
  json["suite"] = nlohmann::json::array();
  for (const SuiteRow& row : report.suite) {
    json["suite"].push_back({{"shape", row.shape.to_string()},
                             {"plan_config", row.plan_config},
                             {"plan_exact", row.plan_exact},
                             {"bench_config", row.bench_config},
                             {"library_ms", row.library_ms},
                             {"direct_ms", row.direct_ms},
                             {"cublas_ms", row.cublas_ms},
                             {"library_ratio", row.library_ratio()},
                             {"direct_ratio", row.direct_ratio()}});
  }
  json["unrecorded"] = nlohmann::json::array();
  for (const GemmShape& shape : report.unrecorded) json["unrecorded"].push_back(shape.to_string());
  json["library_geomean_ratio"] = optional_number(report.library_geomean());
  json["direct_geomean_ratio"] = optional_number(report.direct_geomean());
  return json;
}

}  // namespace tiletune
