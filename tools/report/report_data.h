// What `tiletune report` shows, read from the database and put in order: the same model feeds the
// HTML and the Markdown writers, and every list is sorted so that one database gives one report.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "tools/report/choice_evaluation.h"

namespace tiletune::report {

// The fastest ok result of a current template version for a GPU (by name), shape and precision,
// with the fuzz cases its configuration passed there.
struct Winner {
  GpuRecord gpu;
  ResultRecord result;
  int fuzz_cases = 0;
  Precision precision = Precision::fp32;  // its template's: winners of each precision are apart
  // Bytes placed on the roofline: the measured DRAM bytes of the winner's counters where recorded,
  // else the compulsory traffic 4(MK+KN+MN).
  double bytes = 0;
  bool bytes_measured = false;
};

// A GPU's roofs: the FP32 peak from its SMs and clock (tuner/backend/gpu/gpu_device.h's formula; 0 where the
// row has no SMs or clock, as the CPU backend's), and the DRAM bandwidth where known.
struct GpuRoofs {
  GpuRecord gpu;
  double fp32_peak_tflops = 0;
  std::optional<double> bandwidth_gb_s;
  std::string bandwidth_source;  // where the bandwidth comes from, or why there is none
};

// The latest bench row of a GPU, shape and precision (tiletune bench), our kernel against cuBLAS
// in that precision's yardstick (cublas_yardstick, tools/bench/cublas_sgemm.h).
using BenchRow = BenchRecord;

// For one GPU, template and shape: the best time among ok results at each value of a parameter.
struct Sensitivity {
  std::string gpu_name, template_name;
  GemmShape shape;
  // parameter -> (value, best median ms), values in numeric order where they are numbers.
  std::map<std::string, std::vector<std::pair<std::string, double>>> best_ms_by_value;
};

// One search as its strategy made it: the steps one tune process (run) settled for a template
// version on a GPU and shape, in the strategy's order (the database's search_trace), whether
// measured then or taken from an earlier record. best_so_far_ms[i]: the fastest ok time among the
// first i+1 steps, NaN before the first ok one.
struct ConvergenceLine {
  std::string strategy, run_id;
  std::vector<double> best_so_far_ms;
};

// The searches of one template version on one GPU and shape: a line per run, by strategy and run.
struct Convergence {
  std::string gpu_name, template_name, template_hash;
  GemmShape shape;
  std::vector<ConvergenceLine> lines;
};

struct ReportData {
  std::vector<std::string> gpu_names;  // sorted
  std::vector<Winner> winners;          // by GPU name, then shape, then precision
  std::vector<GpuRoofs> roofs;          // by GPU name
  std::vector<BenchRow> bench;          // by GPU name, then shape, then precision
  std::vector<Sensitivity> sensitivities;  // by GPU, template, shape
  std::vector<Convergence> convergences;   // by GPU, template, shape (search traces)
  std::vector<CounterRecord> counters;     // by GPU, template, shape, configuration
  std::vector<TemplateChoices> choices;    // by GPU, template (leave one shape out)
};

// What places a winner on the roofline: its DRAM bytes from the counters (tiletune profile's short
// names, tuner/profiling/counter_metrics.h), read plus written; nullopt where either is missing.
inline constexpr const char* kDramBytesText = "dram_read_bytes + dram_write_bytes";
std::optional<double> dram_bytes(const CounterRecord& counters);

// DRAM bandwidth in GB/s of GPUs by name (their data sheets), for the roofline.
std::optional<double> datasheet_bandwidth_gb_s(const std::string& gpu_name);

// The compulsory traffic of an SGEMM: A, B and C once each, 4 bytes an element.
double compulsory_bytes(const GemmShape& shape);

// Builds the model from what the store holds (ok results of current template versions, bench rows,
// counters, search traces in the store's order); the choices are evaluate_choices' apart.
ReportData build_report(const std::vector<CurrentResult>& results, std::vector<BenchRecord> bench,
                        std::vector<CounterRecord> counters, const std::vector<TraceRecord>& traces = {});
// Everything, the choices included, from the database at the path (opened read only).
ReportData read_report(const std::filesystem::path& database);

}  // namespace tiletune::report
