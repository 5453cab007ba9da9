// NVIDIA compute-sanitizer over tiletune's own replay of property cases.
//
// `tiletune fuzz --sanitize` runs, per template and per tool, one child process
//   compute-sanitizer --tool TOOL [flags] tiletune fuzz KERNEL.cu --backend gpu --sanitizer-child
//                     --case C1 --case C2 ... [--config X]
// in which tiletune replays the cases on every configuration and prints (flushed)
//   tiletune-sanitize-config: <configuration>
// before each configuration's launches. compute-sanitizer prints its reports on the same stdout,
// so a report belongs to the configuration whose marker precedes it. This file finds the
// executable, chooses the flags per tool, runs it, and reads its output into findings per
// configuration. A run that proves nothing (the sanitizer could not start, the device is not
// supported, the child crashed, no summary was printed) is a failure, never "clean".
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/system/child_process.h"  // SpawnError

namespace tiletune {

enum class SanitizerTool { memcheck, racecheck, initcheck, synccheck };
inline constexpr std::array<SanitizerTool, 4> kSanitizerTools = {
    SanitizerTool::memcheck, SanitizerTool::racecheck, SanitizerTool::initcheck,
    SanitizerTool::synccheck};

std::string_view to_string(SanitizerTool tool);  // "memcheck", as --tool takes it
std::optional<SanitizerTool> parse_sanitizer_tool(std::string_view name);

// The line the child prints before a configuration's launches, and the name of the findings
// printed before any such line.
inline constexpr std::string_view kSanitizerConfigMarker = "tiletune-sanitize-config: ";
inline constexpr std::string_view kBeforeFirstConfiguration = "(before the first configuration)";
std::string sanitizer_config_marker(std::string_view configuration);  // without the newline

// compute-sanitizer's exit code when the child succeeded but reports were printed; chosen apart
// from tiletune's own codes (0-3) and from deaths by signal (128 + n).
inline constexpr int kSanitizerErrorExitCode = 86;

// ---- Locating the executable ------------------------------------------------------------------

class SanitizerNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where to look, in this order: `override_path` (from $TILETUNE_COMPUTE_SANITIZER: when set it
// must be right, nothing else is tried), each folder of `path_variable` ($PATH), then each of
// `toolkit_folders` ($CUDA_HOME, /usr/local/cuda) as FOLDER/bin/compute-sanitizer and
// FOLDER/compute-sanitizer/compute-sanitizer (where the toolkit keeps the real one).
struct SanitizerSearch {
  std::string override_path;
  std::string path_variable;
  std::vector<std::filesystem::path> toolkit_folders;

  static SanitizerSearch from_environment();
};

// The executable, or SanitizerNotFound naming every place looked at.
std::filesystem::path find_compute_sanitizer(const SanitizerSearch& search);
std::filesystem::path find_compute_sanitizer();  // SanitizerSearch::from_environment()

// ---- Flags --------------------------------------------------------------------------------------

struct SanitizerOptions {
  // Reports printed at most (compute-sanitizer's --print-limit; 0: no limit). The summary still
  // counts every error; configurations after the cut are marked incomplete.
  int print_limit = 10000;
  // compute-sanitizer's own --racecheck-report: "analysis" prints one record per racing pair of
  // instructions (with its hazard count), "hazard" one per byte, "all" both.
  std::string racecheck_report = "analysis";
  // Appended after tiletune's flags, before the child's command. One that names a flag of ours
  // ("--print-limit 0", "--show-backtrace=yes") replaces ours: compute-sanitizer may refuse an
  // option given twice.
  std::vector<std::string> extra_flags;
  // Exit codes of the replaying tiletune that still make a valid run: 0, and 1 (tiletune's
  // "findings": a kernel that breaks memory also computes wrong results).
  std::vector<int> accepted_child_exit_codes = {0, 1};
  std::vector<std::pair<std::string, std::string>> environment;  // added to the child's
  std::optional<std::chrono::seconds> timeout = std::chrono::hours(1);
};

// Every flag for one tool, starting with --tool: what run_compute_sanitizer passes before the
// child's command (exposed so that the caller can print the command it ran).
std::vector<std::string> sanitizer_flags(SanitizerTool tool, const SanitizerOptions& options = {});

// ---- Results ------------------------------------------------------------------------------------

// One configuration's share of one tool's reports.
struct SanitizerFindings {
  std::string configuration;  // the marker's text, or kBeforeFirstConfiguration
  int errors = 0;             // reports at error severity (every report of memcheck, initcheck,
                              // synccheck; racecheck's "Error:" ones)
  int warnings = 0;           // racecheck reports at warning or info severity
  std::string first_report;   // the first report condensed to one line (backtraces left out)
  // The print limit (or racecheck's hazard limit) cut reports off in or before this configuration:
  // its counts are lower bounds, and no report does not mean clean.
  bool incomplete = false;

  int reports() const { return errors + warnings; }
  bool clean() const { return reports() == 0 && !incomplete; }
  std::string to_string() const;  // "TILE=16: 3 errors, 1 warning; first: Invalid __global__ ..."
};

struct SanitizerResult {
  SanitizerTool tool = SanitizerTool::memcheck;
  std::vector<std::string> command;  // what was run (empty when only a log was parsed)
  int exit_code = 0;                 // compute-sanitizer's; 128 + the signal when killed by one
  bool timed_out = false;
  std::string log;                   // everything printed, sanitizer and child together

  // In the order the markers came; kBeforeFirstConfiguration first when it has reports.
  std::vector<SanitizerFindings> configurations;
  std::vector<std::string> summary_lines;  // "ERROR SUMMARY: 3 errors", "RACECHECK SUMMARY: ..."
  // From the summary: errors (memcheck, initcheck, synccheck) or hazards displayed (racecheck).
  std::optional<std::int64_t> summary_count;
  std::int64_t unprinted = 0;     // "ERROR SUMMARY: N errors were not printed"
  std::int64_t unattributed = 0;  // counted by the summary but not found as reports in the log
  std::vector<std::string> notices;  // the sanitizer's warnings that are not findings
  // Why this run proves nothing; set, the findings above are whatever was printed before.
  std::optional<std::string> failure;

  int reports() const;  // over all configurations
  // Nothing wrong seen and the run is trustworthy.
  bool clean() const;
  const SanitizerFindings* find(std::string_view configuration) const;
};

// Reads compute-sanitizer's whole output (the child's lines mixed in) into findings per
// configuration. `exit_code` is compute-sanitizer's. Pure: no files, no processes.
SanitizerResult parse_sanitizer_output(SanitizerTool tool, std::string output, int exit_code,
                                       const SanitizerOptions& options = {});

// Runs `sanitizer` with sanitizer_flags(tool, options) over `child_command` (the replaying
// tiletune and its arguments) and parses what it printed. Throws SpawnError when compute-sanitizer
// cannot be started; everything after that is reported through SanitizerResult::failure.
SanitizerResult run_compute_sanitizer(const std::filesystem::path& sanitizer, SanitizerTool tool,
                                      const std::vector<std::string>& child_command,
                                      const SanitizerOptions& options = {});

}  // namespace tiletune
