// library_bench's numbers: the three measurements, their tables for people and their JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/core/gemm_shape.h"

namespace tiletune {

// Host time per call once warm, enqueue only: the library's run against the same cubin launched
// with the driver API.
struct OverheadResult {
  GemmShape shape;
  std::string config;
  int batches = 0, calls_per_batch = 0;
  double direct_us = 0, library_us = 0;  // medians over the batches, per call
  double difference_us() const { return library_us - direct_us; }
};

// From nothing to a finished first run (open, gemm, run, synchronise), in milliseconds.
struct FirstCallResult {
  double cold_ms = 0;                // an empty cubin cache: NVRTC compiles
  double warm_disk_ms = 0;           // a new Library on the cache the cold one filled
  std::optional<double> bundle_ms;   // a Library on the bundle (its cubin), when one was given
  double second_call_ms = 0;         // run and synchronise again in the same Library
};

// One shape of the suite: the library, the direct launch of bench's configuration, and cuBLAS,
// each verified at the full shape and then timed (median ms) in the same run.
struct SuiteRow {
  GemmShape shape;
  std::string plan_config;   // what the library chose
  bool plan_exact = false;   // recorded at this shape on this GPU
  std::string bench_config;  // what `tiletune bench` times (the database's best)
  double library_ms = 0, direct_ms = 0, cublas_ms = 0;
  // ours/cuBLAS as bench prints it: our TFLOP/s over cuBLAS's (above 1: faster than cuBLAS).
  double library_ratio() const { return cublas_ms / library_ms; }
  double direct_ratio() const { return cublas_ms / direct_ms; }
};

struct LibraryBenchReport {
  std::string gpu;
  std::string db, kernel, bundle;
  std::optional<OverheadResult> overhead;
  std::optional<FirstCallResult> first_call;
  std::vector<SuiteRow> suite;
  std::vector<GemmShape> unrecorded;  // suite shapes without a record: not measured

  // Geometric means of the suite's ratios (nothing for an empty suite).
  std::optional<double> library_geomean() const;
  std::optional<double> direct_geomean() const;
};

// The target of the issue: the library costs under 2 us a call more than a direct launch.
inline constexpr double kOverheadTargetUs = 2.0;

// The median of the samples (the mean of the middle two for an even count); samples not empty.
double median(std::vector<double> samples);

// The tables printed, each a title line and aligned columns; summary_table comes last.
std::string overhead_table(const OverheadResult& result);
std::string first_call_table(const FirstCallResult& result);
std::string suite_table(const LibraryBenchReport& report);
std::string summary_table(const LibraryBenchReport& report);

// Every number of the report; absent parts are null.
nlohmann::json report_json(const LibraryBenchReport& report);

}  // namespace tiletune
