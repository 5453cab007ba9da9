#include "tuner/profiling/nsight_compute.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "tuner/child_process.h"
#include "tuner/gpu_device.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

// Whether a name is a metric's ("dram__bytes_read.sum"): the raw page's other columns ("ID",
// "Kernel Name", "Block Size", ... whichever a version of ncu prints) describe the launch.
bool metric_name(const std::string& name) {
  return name.find("__") != std::string::npos &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.") == std::string::npos;
}

// The last line of ncu's output that names an error, else its last non-empty line.
std::string error_line(const std::string& output) {
  std::istringstream lines(output);
  std::string line, last_error, last;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    last = line;
    if (line.find("ERROR") != std::string::npos) last_error = line;
  }
  std::string chosen = last_error.empty() ? last : last_error;
  if (chosen.rfind("==ERROR== ", 0) == 0) chosen.erase(0, 10);
  return chosen.empty() ? "no output" : chosen;
}

// ncu's output when it ran: throws ProfilerUnavailable for missing permission or its failure.
std::string checked_output(const fs::path& ncu, const ChildProcessResult& result,
                           const std::string& doing) {
  if (result.output.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    throw ProfilerUnavailable(
        ncu.string() + ": no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): "
        "run as root, or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0");
  }
  if (result.exit_code != 0) {
    throw ProfilerUnavailable(ncu.string() + " " + doing + " failed (" + result.describe_exit() +
                              "): " + error_line(result.output));
  }
  return result.output;
}

ChildProcessResult run_ncu(const fs::path& ncu, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), ncu.string());
  try {
    return run_child_process(arguments);
  } catch (const SpawnError& error) {
    throw ProfilerUnavailable(ncu.string() + ": cannot be run: " + error.what());
  }
}

bool executable_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// Splits one CSV line: fields quoted with '"' (a doubled quote inside is one quote) or bare.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else {
      field += c;
    }
  }
  if (quoted) throw ProfilerUnavailable("ncu's CSV: an unclosed quote in: " + line);
  fields.push_back(std::move(field));
  return fields;
}

// "1,234,567" or "66.53" or "1.5e+06"; none for "n/a", empty fields and text. The raw page also
// holds attributes that are words (device__attribute_confidential_computing_mode is "No-CC" on
// an H100): they are no counters, and a metric asked for that comes back as a word is reported
// missing by the caller, like one ncu did not give.
std::optional<double> csv_number(std::string text) {
  std::erase(text, ',');
  if (text.empty() || text == "n/a" || text == "N/A") return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

// The metric name of a base name as --query-metrics lists it: the part before any rollup
// (".sum", ".avg.pct_of_peak_sustained_elapsed").
std::string base_metric(const std::string& metric) { return metric.substr(0, metric.find('.')); }

// launch__ metrics are what ncu reads of the launch itself (registers, block size), which
// --query-metrics, a list of the GPU's counters, may leave out: every ncu knows them.
bool launch_attribute(const std::string& metric) { return metric.rfind("launch__", 0) == 0; }

}  // namespace

NsightCompute NsightCompute::find() {
  std::vector<std::string> looked;
  if (const char* named = std::getenv("TILETUNE_NCU"); named && *named) {
    if (executable_file(named)) return NsightCompute(named);
    throw ProfilerUnavailable(std::string("Nsight Compute (ncu) not found: $TILETUNE_NCU is ") +
                              named + ", which is not an executable file");
  }
  if (const char* path = std::getenv("PATH"); path && *path) {
    std::istringstream folders(path);
    for (std::string folder; std::getline(folders, folder, ':');) {
      if (folder.empty()) continue;
      const fs::path candidate = fs::path(folder) / "ncu";
      if (executable_file(candidate)) return NsightCompute(candidate);
    }
    looked.push_back("$PATH");
  }
  if (const char* cuda = std::getenv("CUDA_HOME"); cuda && *cuda) {
    const fs::path candidate = fs::path(cuda) / "bin" / "ncu";
    if (executable_file(candidate)) return NsightCompute(candidate);
    looked.push_back(candidate.string());
  }
  const fs::path fallback = "/usr/local/cuda/bin/ncu";
  if (executable_file(fallback)) return NsightCompute(fallback);
  looked.push_back(fallback.string());
  std::string places;
  for (const std::string& place : looked) places += (places.empty() ? "" : ", ") + place;
  throw ProfilerUnavailable("Nsight Compute (ncu) not found (looked in $TILETUNE_NCU, " + places +
                            "): install it with the CUDA toolkit or set $TILETUNE_NCU");
}

NsightCompute::NsightCompute(std::filesystem::path executable) : executable_(std::move(executable)) {}

std::string NsightCompute::version() const {
  // "NVIDIA (R) Nsight Compute Command Line Profiler\n...\nVersion 2025.3.1.0 (build ...)"
  const std::string output = checked_output(executable_, run_ncu(executable_, {"--version"}),
                                            "--version");
  const std::size_t at = output.find("Version ");
  if (at == std::string::npos) {
    throw ProfilerUnavailable(executable_.string() + " --version: no version in: " +
                              error_line(output));
  }
  std::string version;
  for (std::size_t i = at + 8; i < output.size() && (std::isdigit(output[i]) || output[i] == '.'); ++i) {
    version += output[i];
  }
  // "2025.3.1.0": the first three parts, as NVIDIA names the releases.
  std::size_t dots = 0;
  for (std::size_t i = 0; i < version.size(); ++i) {
    if (version[i] == '.' && ++dots == 3) {
      version.resize(i);
      break;
    }
  }
  if (version.empty()) {
    throw ProfilerUnavailable(executable_.string() + " --version: no version in: " + error_line(output));
  }
  return version;
}

const std::set<std::string>& NsightCompute::available_metrics(int device) const {
  if (const auto known = metrics_by_device_.find(device); known != metrics_by_device_.end()) {
    return known->second;
  }
  const std::string output = checked_output(
      executable_,
      run_ncu(executable_, {"--query-metrics", "--devices", std::to_string(device)}),
      "--query-metrics");
  // One metric a line, its name first ("dram__bytes_read   # of bytes read from DRAM"), under a
  // header; the names are lower case with a "__" between unit and counter.
  std::set<std::string> metrics;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (metric_name(name)) metrics.insert(base_metric(name));
  }
  if (metrics.empty()) {
    throw ProfilerUnavailable(executable_.string() + " --query-metrics listed no metric: " +
                              error_line(output));
  }
  return metrics_by_device_.emplace(device, std::move(metrics)).first->second;
}

std::vector<ProfiledLaunch> NsightCompute::profile(const std::vector<std::string>& command,
                                                   const std::vector<std::string>& metrics,
                                                   const std::string& kernel_regex,
                                                   std::vector<std::string>* missing) const {
  const std::set<std::string>& known = available_metrics(GpuDevice::default_ordinal());
  std::string asked;
  for (const std::string& metric : metrics) {
    if (known.contains(base_metric(metric)) || launch_attribute(metric)) {
      asked += (asked.empty() ? "" : ",") + metric;
    } else if (missing) {
      missing->push_back(metric);
    }
  }
  if (asked.empty()) {
    throw ProfilerUnavailable(executable_.string() + ": this GPU's ncu knows none of the metrics asked");
  }
  std::vector<std::string> arguments = {
      "--csv", "--page", "raw", "--print-units", "base",
      // The host measures with the clocks as they are (ANCHORS.md); ncu would lock them to base.
      "--clock-control", "none",
      // Every replay pass starts from flushed caches, so that DRAM bytes do not depend on the
      // pass order (ncu's default, said here on purpose).
      "--cache-control", "all", "--replay-mode", "kernel",
      "--metrics", asked, "-k", "regex:" + kernel_regex};
  arguments.insert(arguments.end(), command.begin(), command.end());
  const std::string output =
      checked_output(executable_, run_ncu(executable_, arguments), "profiling");
  return parse_ncu_raw_csv(output);
}

std::vector<ProfiledLaunch> parse_ncu_raw_csv(const std::string& csv) {
  std::istringstream lines(csv);
  std::vector<std::string> header;
  std::vector<ProfiledLaunch> launches;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // ncu's own lines (==PROF==, ==WARNING==) and the program's output are not CSV rows.
    if (line.empty() || line.front() != '"') continue;
    std::vector<std::string> fields = csv_fields(line);
    if (header.empty()) {
      if (fields.front() == "ID") header = std::move(fields);
      continue;
    }
    if (fields.size() != header.size()) {
      throw ProfilerUnavailable("ncu's CSV: a row of " + std::to_string(fields.size()) +
                                " fields under a header of " + std::to_string(header.size()));
    }
    if (fields.front().empty()) continue;  // the units row
    ProfiledLaunch launch;
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == "Kernel Name") {
        launch.kernel = fields[i];
      } else if (metric_name(header[i])) {
        if (auto value = csv_number(fields[i])) launch.metrics[header[i]] = *value;
      }
    }
    launches.push_back(std::move(launch));
  }
  if (header.empty()) {
    throw ProfilerUnavailable("ncu's output has no CSV table (no kernel matched, or ncu printed: " +
                              error_line(csv) + ")");
  }
  return launches;
}

}  // namespace tiletune
