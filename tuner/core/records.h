// What a tune records of one evaluation: the GPU it ran on, the template version, and the result
// with its status. The pipeline, the runtime library and the database (db/result_store.h) all
// speak in these; only the database knows how they are stored.
#pragma once

#include <cstdint>
#include <string>

#include "tuner/core/gemm_shape.h"
#include "tuner/core/precision.h"

namespace tiletune {

struct GpuRecord {
  std::string name;  // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;
  std::uint64_t memory_bytes = 0;
  int driver_version = 0;  // as cuDriverGetVersion reports it, e.g. 13000
  std::string nvrtc_version;  // "13.0"
  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

struct TemplateRecord {
  std::string name;
  std::string source_hash;
  std::string path;    // where it was read from, for the user's information
  std::string source;  // kept so that a recorded winner can be rebuilt without the file
  Precision precision = Precision::fp32;  // its declaration (a file older than version 6: fp32)
};

// Stored by name (to_string); db/schema.sql's CHECK lists the same names.
enum class ResultStatus {
  ok,
  compile_error,
  wrong_result,   // detail: the minimal counterexample
  launch_error,   // detail: the CUDA error
  device_limit,   // skipped: block size, shared memory or registers beyond the device
  timeout,        // the watchdog ended the evaluation: the kernel hung
  crashed,        // the evaluation's worker process died; detail: how (signal, exit status)
  pruned,         // skipped after compiling: ptxas's report rules it out (spills, no occupancy)
};
const char* to_string(ResultStatus status);  // "ok", "compile_error", ...
ResultStatus parse_result_status(const std::string& text);  // throws std::invalid_argument

struct ResultRecord {
  // Keys.
  std::string template_name;
  std::string template_hash;
  std::string config;  // Configuration::to_string()
  GemmShape shape;
  Transposes op;  // the transposes it ran with (packed operands); "nn" is C = A * B
  std::int64_t batch = 1;  // the strided batch it ran over (entries packed), 1: one product
  // Outcome.
  ResultStatus status = ResultStatus::ok;
  std::string detail;  // NVRTC log, counterexample, CUDA error or the limit that was hit
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
  double tflops = 0;
  int registers = 0;
  int static_shared_bytes = 0;
  int dynamic_shared_bytes = 0;
  int spill_bytes = 0;  // spill stores + spill loads from the ptxas report
  std::string recorded_at;  // filled by the store, UTC "YYYY-MM-DD HH:MM:SS"

  TunedFor tuned_for() const { return {op, batch}; }
};

}  // namespace tiletune
