// Nsight Compute's command line (ncu), run on a program to read hardware counters of its kernels:
// what `tiletune profile` stores per configuration and the labs (`tiletune lab ...`) check their
// claims with.
//
// Facts the design respects (ncu 2025.3.1 on an H200): one metric the GPU does not know aborts the
// whole run, so metrics are checked against `ncu --query-metrics` first and the unknown ones are
// reported, not asked; CSV values carry thousands separators ("1,234,567"); counters need the
// profiling permission (ERR_NVGPUCTRPERM), which is one clear line, not a parse error.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tiletune {

// No ncu, no permission to read counters, or ncu failed: the reason in one line.
class ProfilerUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One profiled launch: the kernel's name and each metric's value (units as ncu's raw page gives them).
struct ProfiledLaunch {
  std::string kernel;
  std::map<std::string, double> metrics;
};

class NsightCompute {
 public:
  // $TILETUNE_NCU, else `ncu` on $PATH, else $CUDA_HOME/bin/ncu, else /usr/local/cuda/bin/ncu.
  // Throws ProfilerUnavailable naming every place looked at.
  static NsightCompute find();
  explicit NsightCompute(std::filesystem::path executable);

  const std::filesystem::path& executable() const { return executable_; }
  std::string version() const;  // "2025.3.1"

  // The metric names this GPU (device ordinal) knows, from --query-metrics (cached).
  const std::set<std::string>& available_metrics(int device = 0) const;

  // Runs `command` under ncu with the metrics that are available (the others are left out and
  // named in `missing`), on the launches of kernels whose name matches `kernel_regex`, and returns
  // one ProfiledLaunch per launch, in order. Per-instruction sums among the metrics
  // ("source_counters:...", counter_metrics.h) add the Source Counters section to the run, which
  // is then exported to a private file and read back twice: its raw page and its SASS source page.
  // Throws ProfilerUnavailable for missing permission (one line), ncu's failure (its last error
  // line) or a CSV it cannot read.
  std::vector<ProfiledLaunch> profile(const std::vector<std::string>& command,
                                      const std::vector<std::string>& metrics,
                                      const std::string& kernel_regex,
                                      std::vector<std::string>* missing = nullptr) const;

 private:
  std::filesystem::path executable_;
  mutable std::map<int, std::set<std::string>> metrics_by_device_;
};

// Parses ncu's `--csv --page raw` output (thousands separators, units row, quoted fields): one
// ProfiledLaunch per data row. Throws ProfilerUnavailable naming what it could not read.
std::vector<ProfiledLaunch> parse_ncu_raw_csv(const std::string& csv);

// Parses ncu's `--csv --page source --print-source sass` output: per profiled kernel (each table
// begins with a "Kernel Name" line), the shared-memory wavefronts, ideal and excessive wavefronts
// summed over its instructions by kind (shared_ld: LDS, LDSM, LD; shared_st: STS, STSM, ST;
// shared_copy: LDGSTS), keyed "source_counters:shared_ld_wavefronts" and so on. Throws
// ProfilerUnavailable naming what it could not read.
std::vector<std::map<std::string, double>> parse_ncu_source_csv(const std::string& csv);

}  // namespace tiletune
