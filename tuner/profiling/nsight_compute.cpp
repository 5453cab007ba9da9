#include "tuner/profiling/nsight_compute.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/profiling/counter_metrics.h"
#include "tuner/system/child_process.h"
#include "tuner/system/private_files.h"

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
  bool source_counters = false;
  for (const std::string& metric : metrics) {
    if (is_source_counter(metric)) {
      source_counters = true;
    } else if (known.contains(base_metric(metric)) || launch_attribute(metric)) {
      asked += (asked.empty() ? "" : ",") + metric;
    } else if (missing) {
      missing->push_back(metric);
    }
  }
  if (asked.empty() && !source_counters) {
    throw ProfilerUnavailable(executable_.string() + ": this GPU's ncu knows none of the metrics asked");
  }
  std::vector<std::string> arguments = {
      // The host measures with the clocks as they are (ANCHORS.md); ncu would lock them to base.
      "--clock-control", "none",
      // Every replay pass starts from flushed caches, so that DRAM bytes do not depend on the
      // pass order (ncu's default, said here on purpose).
      "--cache-control", "all", "--replay-mode", "kernel", "-k", "regex:" + kernel_regex};
  if (!asked.empty()) arguments.insert(arguments.end(), {"--metrics", asked});
  if (!source_counters) {
    arguments.insert(arguments.end(), {"--csv", "--page", "raw", "--print-units", "base"});
    arguments.insert(arguments.end(), command.begin(), command.end());
    return parse_ncu_raw_csv(checked_output(executable_, run_ncu(executable_, arguments), "profiling"));
  }

  const PrivateDirectory folder(fs::temp_directory_path(), "tiletune-ncu-");
  const fs::path report = folder.path() / "profile.ncu-rep";
  arguments.insert(arguments.end(), {"--section", "SourceCounters", "--export", report.string(), "--force-overwrite"});
  arguments.insert(arguments.end(), command.begin(), command.end());
  checked_output(executable_, run_ncu(executable_, arguments), "profiling");
  std::vector<ProfiledLaunch> launches = parse_ncu_raw_csv(checked_output(
      executable_,
      run_ncu(executable_, {"--import", report.string(), "--csv", "--page", "raw", "--print-units", "base"}),
      "reading its report's raw page"));
  const std::vector<std::map<std::string, double>> sums = parse_ncu_source_csv(checked_output(
      executable_,
      run_ncu(executable_, {"--import", report.string(), "--csv", "--page", "source", "--print-source", "sass"}),
      "reading its report's source page"));
  if (sums.size() != launches.size()) {
    throw ProfilerUnavailable("ncu's report has " + std::to_string(launches.size()) +
                              " launches on its raw page but " + std::to_string(sums.size()) +
                              " on its source page");
  }
  for (std::size_t i = 0; i < launches.size(); ++i) launches[i].metrics.insert(sums[i].begin(), sums[i].end());
  return launches;
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

namespace {

// The kind of shared-memory access of a SASS line ("@!P0 LDS.128 R4, [R2]"): "shared_ld",
// "shared_st", "shared_copy", or empty for the others.
std::string shared_access_kind(const std::string& sass) {
  std::istringstream words(sass);
  std::string opcode;
  words >> opcode;
  if (!opcode.empty() && opcode.front() == '@') words >> opcode;  // a predicate goes first
  opcode = opcode.substr(0, opcode.find('.'));
  if (opcode == "LDS" || opcode == "LDSM" || opcode == "LD") return "shared_ld";
  if (opcode == "STS" || opcode == "STSM" || opcode == "ST") return "shared_st";
  if (opcode == "LDGSTS") return "shared_copy";
  return {};
}

}  // namespace

std::vector<std::map<std::string, double>> parse_ncu_source_csv(const std::string& csv) {
  std::istringstream lines(csv);
  std::vector<std::map<std::string, double>> kernels;
  std::vector<std::string> header;
  std::size_t source = 0, wavefronts = 0, ideal = 0, excessive = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() != '"') continue;
    std::vector<std::string> fields = csv_fields(line);
    if (fields.front() == "Kernel Name") {  // a new kernel's table follows
      std::map<std::string, double> sums;
      for (const char* kind : {"shared_ld", "shared_st", "shared_copy"}) {
        for (const char* what : {"_wavefronts", "_ideal_wavefronts", "_excessive_wavefronts"}) {
          sums[kSourceCounterPrefix + std::string(kind) + what] = 0;
        }
      }
      kernels.push_back(std::move(sums));
      header.clear();
      continue;
    }
    if (kernels.empty()) continue;
    if (header.empty()) {
      if (fields.front() != "Address") continue;
      header = std::move(fields);
      auto column = [&](const char* name) {
        const auto it = std::find(header.begin(), header.end(), name);
        if (it == header.end()) {
          throw ProfilerUnavailable(std::string("ncu's source page has no column '") + name +
                                    "' (was the SourceCounters section collected?)");
        }
        return std::size_t(it - header.begin());
      };
      source = column("Source");
      wavefronts = column("L1 Wavefronts Shared");
      ideal = column("L1 Wavefronts Shared Ideal");
      excessive = column("L1 Wavefronts Shared Excessive");
      continue;
    }
    if (fields.size() != header.size()) {
      throw ProfilerUnavailable("ncu's source page: a row of " + std::to_string(fields.size()) +
                                " fields under a header of " + std::to_string(header.size()));
    }
    const std::string kind = shared_access_kind(fields[source]);
    if (kind.empty()) continue;
    std::map<std::string, double>& sums = kernels.back();
    sums[kSourceCounterPrefix + kind + "_wavefronts"] += csv_number(fields[wavefronts]).value_or(0);
    sums[kSourceCounterPrefix + kind + "_ideal_wavefronts"] += csv_number(fields[ideal]).value_or(0);
    sums[kSourceCounterPrefix + kind + "_excessive_wavefronts"] += csv_number(fields[excessive]).value_or(0);
  }
  if (kernels.empty()) {
    throw ProfilerUnavailable("ncu's source page has no kernel (ncu printed: " + error_line(csv) + ")");
  }
  return kernels;
}

}  // namespace tiletune
