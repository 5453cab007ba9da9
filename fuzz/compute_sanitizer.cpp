#include "fuzz/compute_sanitizer.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "tuner/system/child_process.h"

namespace tiletune {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

bool contains_nocase(std::string_view text, std::string_view part) {
  for (std::size_t at = 0; at + part.size() <= text.size(); ++at) {
    if (starts_with_nocase(text.substr(at), part)) return true;
  }
  return false;
}

std::string plural(std::int64_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// "30,335" -> 30335 (compute-sanitizer groups digits in some numbers).
std::int64_t parse_count(const std::string& digits) {
  std::string plain;
  for (char c : digits) {
    if (c != ',') plain += c;
  }
  return plain.empty() ? 0 : std::stoll(plain);
}

bool executable_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && access(path.c_str(), X_OK) == 0;
}

std::vector<std::filesystem::path> path_folders(const std::string& path_variable) {
  std::vector<std::filesystem::path> folders;
  std::size_t begin = 0;
  while (begin <= path_variable.size()) {
    const std::size_t end = std::min(path_variable.find(':', begin), path_variable.size());
    // An empty entry would mean the current folder: not a place to pick up a tool from.
    if (end > begin) folders.emplace_back(path_variable.substr(begin, end - begin));
    begin = end + 1;
  }
  return folders;
}

// ---- Reading the output -------------------------------------------------------------------------

// How one of compute-sanitizer's unindented lines is taken.
enum class LineKind { banner, summary, report, notice, hazard_limit, failure };

struct Classified {
  LineKind kind = LineKind::report;
  bool warning = false;  // for reports: racecheck's warning or info severity
};

// Racecheck prefixes its reports with a severity ("Error:", "Warning:", older "WARN:", "INFO:").
std::optional<std::pair<std::string_view, std::string_view>> split_severity(std::string_view text) {
  for (std::string_view word : {"ERROR", "WARNING", "WARN", "INFO"}) {
    if (!starts_with_nocase(text, word)) continue;
    std::string_view rest = trim(text.substr(word.size()));
    if (rest.empty() || rest.front() != ':') continue;
    return std::pair(text.substr(0, word.size()), trim(rest.substr(1)));
  }
  return std::nullopt;
}

Classified classify(std::string_view text) {
  if (text == "COMPUTE-SANITIZER" || text == "CUDA-MEMCHECK" ||
      starts_with_nocase(text, "This tool is deprecated") ||
      starts_with_nocase(text, "Please use the compute-sanitizer")) {
    return {LineKind::banner};
  }
  static const std::regex summary(R"(^[A-Z][A-Z ]* SUMMARY:)");
  if (std::regex_search(text.begin(), text.end(), summary)) return {LineKind::summary};
  if (contains_nocase(text, "Maximum number of hazards")) return {LineKind::hazard_limit};
  static const std::regex race(R"(Race reported|Potential \S+ hazard)", std::regex::icase);
  if (const auto severity = split_severity(text)) {
    const bool warning = !starts_with_nocase(severity->first, "ERROR");
    if (std::regex_search(severity->second.begin(), severity->second.end(), race)) {
      return {LineKind::report, warning};
    }
    // "Error: Target application terminated before first instrumented API call", "Error: No
    // attachable process found", "Error: process didn't terminate successfully", ...
    return {warning ? LineKind::notice : LineKind::failure};
  }
  if (starts_with_nocase(text, "Internal Sanitizer Error") || contains_nocase(text, "not supported")) {
    return {LineKind::failure};
  }
  // Follow-ups of a failure or of the child's exit code, which is judged on its own.
  if (starts_with_nocase(text, "Target application returned an error") ||
      starts_with_nocase(text, "Tracking kernels launched by child processes")) {
    return {LineKind::notice};
  }
  // Everything else is a report: the known ones ("Invalid __global__ read", "Uninitialized
  // __global__ memory read", "Barrier error detected", "Program hit ... on CUDA API call", hardware
  // exceptions, ...) and any new kind, which must not pass for clean.
  return {LineKind::report};
}

// Whether an indented line of a report starts its backtrace, which the condensed text leaves out.
bool starts_backtrace(std::string_view text) {
  return starts_with_nocase(text, "Saved host backtrace") ||
         starts_with_nocase(text, "Host Frame") || starts_with_nocase(text, "Device Frame");
}

constexpr std::size_t kMaxReportText = 600;

void append_condensed(std::string& report, std::string_view text) {
  if (report.size() >= kMaxReportText) return;
  if (!report.empty()) report += ' ';
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !report.empty() && report.back() != ' ') report += ' ';
    space = false;
    report += c;
  }
  if (report.size() > kMaxReportText) report = report.substr(0, kMaxReportText - 3) + "...";
}

// What tiletune's exit code means, for a failure message.
std::string describe_child_exit(int exit_code) {
  ChildProcessResult as_child;
  as_child.exit_code = exit_code;
  std::string text = as_child.describe_exit();
  if (exit_code == 2) text += " (bad input)";
  if (exit_code == 3) text += " (no GPU, driver or NVRTC)";
  return text;
}

// Where compute-sanitizer's "=========" starts in a line (it may follow a partial line of the
// child's), or npos. The run of '=' must be followed by a space or the end of the line, so that
// the child's own "[==========]" is not taken for it.
std::size_t sanitizer_prefix(std::string_view line) {
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = line.find("========", from);
    if (at == std::string_view::npos) return at;
    std::size_t end = at;
    while (end < line.size() && line[end] == '=') ++end;
    if (end == line.size() || line[end] == ' ') return at;
    from = end;
  }
}

class OutputReader {
 public:
  OutputReader(SanitizerResult& result, const SanitizerOptions& options)
      : result_(result), options_(options) {}

  void line(std::string_view raw) {
    const std::size_t prefix = sanitizer_prefix(raw);
    const std::size_t marker = raw.find(kSanitizerConfigMarker);
    if (marker != std::string_view::npos && (prefix == std::string_view::npos || prefix > marker)) {
      start_configuration(trim(raw.substr(marker + kSanitizerConfigMarker.size())));
      return;
    }
    // Anything else without the prefix is the child's own output (its progress, its verdicts);
    // it may even land in the middle of a report, which it does not end.
    if (prefix == std::string_view::npos) return;
    std::string_view body = raw.substr(prefix);
    while (!body.empty() && body.front() == '=') body.remove_prefix(1);
    std::size_t indent = 0;
    while (indent < body.size() && body[indent] == ' ') ++indent;
    const std::string_view text = trim(body);
    if (text.empty()) {  // "=========" alone separates reports
      report_open_ = false;
      return;
    }
    // Report details are indented by five or more; top-level lines by one (two in a few).
    if (indent >= 3) {
      if (report_open_ && capturing_ && !in_backtrace_) {
        if (starts_backtrace(text)) {
          in_backtrace_ = true;
        } else {
          append_condensed(current().first_report, text);
        }
      }
      return;
    }
    report_open_ = false;
    const Classified kind = classify(text);
    switch (kind.kind) {
      case LineKind::banner:
        break;
      case LineKind::summary:
        summary(std::string(text));
        break;
      case LineKind::notice:
        result_.notices.emplace_back(text);
        break;
      case LineKind::hazard_limit:
        // Racecheck stops tracking hazards here: from this configuration on it may miss some.
        result_.notices.emplace_back(text);
        mark_incomplete_from(current_.value_or(0));
        break;
      case LineKind::failure:
        failures_.emplace_back(text);
        break;
      case LineKind::report:
        report(text, kind.warning);
        break;
    }
  }

  void finish(int exit_code) {
    const int printed = result_.reports();
    // The print limit cut reports off: the configuration holding the last printed one and every
    // later one may have more than were shown.
    const bool all_counted = result_.summary_count && *result_.summary_count <= printed;
    const bool limit_reached =
        result_.unprinted > 0 ||
        (options_.print_limit > 0 && printed >= options_.print_limit && !all_counted);
    if (limit_reached) mark_incomplete_from(last_report_section_.value_or(0));
    if (incomplete_from_) {
      for (std::size_t i = *incomplete_from_; i < result_.configurations.size(); ++i) {
        result_.configurations[i].incomplete = true;
      }
    }
    if (result_.summary_count) {
      result_.unattributed = std::max<std::int64_t>(0, *result_.summary_count - printed - result_.unprinted);
    }
    result_.failure = failure(exit_code, printed);
  }

 private:
  static SanitizerFindings named(std::string_view configuration) {
    SanitizerFindings findings;
    findings.configuration = configuration;
    return findings;
  }

  SanitizerFindings& current() { return result_.configurations[*current_]; }

  std::size_t section_index() {
    if (!current_) {
      // Reports before any marker get a configuration of their own, listed first.
      result_.configurations.insert(result_.configurations.begin(),
                                    named(kBeforeFirstConfiguration));
      current_ = 0;
      before_first_ = true;
    }
    return *current_;
  }

  void start_configuration(std::string_view name) {
    report_open_ = false;
    ++markers_;
    for (std::size_t i = 0; i < result_.configurations.size(); ++i) {
      const bool before = before_first_ && i == 0;
      if (!before && result_.configurations[i].configuration == name) {
        current_ = i;  // printed again: its reports join the earlier ones
        return;
      }
    }
    result_.configurations.push_back(named(name));
    current_ = result_.configurations.size() - 1;
  }

  void report(std::string_view text, bool warning) {
    const std::size_t index = section_index();
    SanitizerFindings& findings = result_.configurations[index];
    capturing_ = findings.reports() == 0;
    (warning ? findings.warnings : findings.errors) += 1;
    if (capturing_) append_condensed(findings.first_report, text);
    report_open_ = true;
    in_backtrace_ = false;
    last_report_section_ = index;
  }

  void summary(const std::string& text) {
    result_.summary_lines.push_back(text);
    static const std::regex errors(R"(^ERROR SUMMARY:\s*([\d,]+) errors?\s*$)");
    static const std::regex unprinted(R"(^ERROR SUMMARY:\s*([\d,]+) errors? (were|was) not printed)");
    static const std::regex hazards(R"(^RACECHECK SUMMARY:\s*([\d,]+) hazards? displayed)");
    std::smatch match;
    if (std::regex_search(text, match, errors) || std::regex_search(text, match, hazards)) {
      result_.summary_count = parse_count(match[1]);
      summary_seen_ = true;
    } else if (std::regex_search(text, match, unprinted)) {
      result_.unprinted = parse_count(match[1]);
    }
  }

  void mark_incomplete_from(std::size_t index) {
    incomplete_from_ = std::min(incomplete_from_.value_or(index), index);
  }

  std::optional<std::string> failure(int exit_code, int printed) const {
    if (!failures_.empty()) {
      std::string text = "compute-sanitizer: " + failures_.front();
      if (failures_.size() > 1) text += fmt::format(" (and {} more)", failures_.size() - 1);
      return text;
    }
    if (exit_code > 128) {
      return fmt::format("compute-sanitizer or the replaying tiletune was {}", describe_child_exit(exit_code));
    }
    if (!summary_seen_) {
      return fmt::format("compute-sanitizer printed no summary ({}): it did not finish its run",
                         describe_child_exit(exit_code));
    }
    const auto& accepted = options_.accepted_child_exit_codes;
    if (exit_code != 0 && exit_code != kSanitizerErrorExitCode &&
        std::find(accepted.begin(), accepted.end(), exit_code) == accepted.end()) {
      return fmt::format("the replaying tiletune failed: {}", describe_child_exit(exit_code));
    }
    if (markers_ == 0) {
      return fmt::format("the replaying tiletune printed no '{}' line: nothing was checked",
                         trim(kSanitizerConfigMarker));
    }
    if (exit_code == kSanitizerErrorExitCode && printed == 0 && result_.unprinted == 0 &&
        result_.summary_count.value_or(0) == 0) {
      return fmt::format("compute-sanitizer exited with {} (errors found) but reported none",
                         kSanitizerErrorExitCode);
    }
    return std::nullopt;
  }

  SanitizerResult& result_;
  const SanitizerOptions& options_;
  std::optional<std::size_t> current_;
  bool before_first_ = false;
  bool report_open_ = false;
  bool capturing_ = false;     // the open report is its configuration's first
  bool in_backtrace_ = false;  // the open report's lines are backtrace now
  int markers_ = 0;
  bool summary_seen_ = false;
  std::optional<std::size_t> last_report_section_;
  std::optional<std::size_t> incomplete_from_;
  std::vector<std::string> failures_;
};

}  // namespace

std::string_view to_string(SanitizerTool tool) {
  switch (tool) {
    case SanitizerTool::memcheck: return "memcheck";
    case SanitizerTool::racecheck: return "racecheck";
    case SanitizerTool::initcheck: return "initcheck";
    case SanitizerTool::synccheck: return "synccheck";
  }
  return "memcheck";
}

std::optional<SanitizerTool> parse_sanitizer_tool(std::string_view name) {
  for (SanitizerTool tool : kSanitizerTools) {
    if (to_string(tool) == name) return tool;
  }
  return std::nullopt;
}

std::string sanitizer_config_marker(std::string_view configuration) {
  return std::string(kSanitizerConfigMarker) + std::string(configuration);
}

SanitizerSearch SanitizerSearch::from_environment() {
  SanitizerSearch search;
  if (const char* value = std::getenv("TILETUNE_COMPUTE_SANITIZER")) search.override_path = value;
  if (const char* value = std::getenv("PATH")) search.path_variable = value;
  if (const char* value = std::getenv("CUDA_HOME"); value != nullptr && *value != '\0') {
    search.toolkit_folders.emplace_back(value);
  }
  search.toolkit_folders.emplace_back("/usr/local/cuda");
  return search;
}

std::filesystem::path find_compute_sanitizer(const SanitizerSearch& search) {
  const std::string name = "compute-sanitizer";
  if (!search.override_path.empty()) {
    // Set, it is what the user wants: no quiet fallback to another copy.
    const std::filesystem::path given = search.override_path;
    if (given.has_parent_path()) {
      if (executable_file(given)) return given;
    } else {
      for (const auto& folder : path_folders(search.path_variable)) {
        if (executable_file(folder / given)) return folder / given;
      }
    }
    throw SanitizerNotFound(fmt::format(
        "$TILETUNE_COMPUTE_SANITIZER is '{}', which is not an executable file{}",
        search.override_path, given.has_parent_path() ? "" : " in any folder of PATH"));
  }
  std::vector<std::string> looked;
  for (const auto& folder : path_folders(search.path_variable)) {
    if (executable_file(folder / name)) return folder / name;
  }
  looked.push_back(search.path_variable.empty() ? "PATH (unset)"
                                                : fmt::format("each folder of PATH ({})", search.path_variable));
  for (const auto& toolkit : search.toolkit_folders) {
    for (const auto& candidate : {toolkit / "bin" / name, toolkit / name / name}) {
      if (executable_file(candidate)) return candidate;
      looked.push_back(candidate.string());
    }
  }
  std::string places;
  for (const auto& place : looked) places += (places.empty() ? "" : ", ") + place;
  throw SanitizerNotFound(fmt::format(
      "compute-sanitizer not found; looked in {} (it comes with the CUDA toolkit; set "
      "TILETUNE_COMPUTE_SANITIZER to its path, or CUDA_HOME to the toolkit)",
      places));
}

std::filesystem::path find_compute_sanitizer() {
  return find_compute_sanitizer(SanitizerSearch::from_environment());
}

std::vector<std::string> sanitizer_flags(SanitizerTool tool, const SanitizerOptions& options) {
  // Each of ours is a name and its value.
  std::vector<std::pair<std::string, std::string>> ours = {
      {"--tool", std::string(to_string(tool))},
      // Bounds the log; the summary still counts everything.
      {"--print-limit", std::to_string(options.print_limit)},
      // Tells "reports were printed" apart from tiletune's own exit codes.
      {"--error-exitcode", std::to_string(kSanitizerErrorExitCode)},
      // The child's exit code is judged here: a wrong result (exit 1) is not a sanitizer error.
      {"--check-exit-code", "no"},
      // A child that never reached CUDA checked nothing: that must fail, not pass.
      {"--require-cuda-init", "yes"},
      // Host frames are tiletune's own launch path and an NVRTC kernel has no line information:
      // the first lines of a report say all there is, and the log stays small.
      {"--show-backtrace", "no"},
  };
  switch (tool) {
    case SanitizerTool::memcheck:
      // By default a memory access error destroys the CUDA context and every later configuration
      // in the same child would fail to launch: end only the faulty kernel.
      ours.emplace_back("--destroy-on-device-error", "kernel");
      // Guard bytes after every allocation, so an overrun past tiletune's own guard band does not
      // land unseen in the next buffer.
      ours.emplace_back("--padding", "512");
      break;
    case SanitizerTool::racecheck:
      ours.emplace_back("--racecheck-report", options.racecheck_report);
      break;
    case SanitizerTool::initcheck:
      // Copies back from device memory the kernel should have written count too.
      ours.emplace_back("--check-api-memory-access", "yes");
      break;
    case SanitizerTool::synccheck:
      // A barrier error also destroys the context by default.
      ours.emplace_back("--destroy-on-device-error", "kernel");
      break;
  }
  const auto given_extra = [&](const std::string& name) {
    return std::any_of(options.extra_flags.begin(), options.extra_flags.end(),
                       [&](const std::string& flag) {
                         return flag == name || flag.rfind(name + "=", 0) == 0;
                       });
  };
  std::vector<std::string> flags;
  for (auto& [name, value] : ours) {
    if (name != "--tool" && given_extra(name)) continue;
    flags.push_back(name);
    flags.push_back(value);
  }
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

std::string SanitizerFindings::to_string() const {
  if (clean()) return configuration + ": clean";
  std::string text = configuration + ": " + plural(errors, "error");
  if (warnings > 0) text += ", " + plural(warnings, "warning");
  if (incomplete) text += " (or more: the sanitizer stopped printing)";
  if (!first_report.empty()) text += "; first: " + first_report;
  return text;
}

int SanitizerResult::reports() const {
  int total = 0;
  for (const SanitizerFindings& findings : configurations) total += findings.reports();
  return total;
}

bool SanitizerResult::clean() const {
  return !failure && reports() == 0 && unprinted == 0 && unattributed == 0 &&
         std::none_of(configurations.begin(), configurations.end(),
                      [](const SanitizerFindings& findings) { return findings.incomplete; });
}

const SanitizerFindings* SanitizerResult::find(std::string_view configuration) const {
  for (const SanitizerFindings& findings : configurations) {
    if (findings.configuration == configuration) return &findings;
  }
  return nullptr;
}

SanitizerResult parse_sanitizer_output(SanitizerTool tool, std::string output, int exit_code,
                                       const SanitizerOptions& options) {
  SanitizerResult result;
  result.tool = tool;
  result.exit_code = exit_code;
  result.log = std::move(output);
  OutputReader reader(result, options);
  const std::string_view log = result.log;
  std::size_t begin = 0;
  while (begin < log.size()) {
    // A carriage return ends a line too: a terminal-style progress line must not hide a report.
    std::size_t end = log.find_first_of("\r\n", begin);
    if (end == std::string_view::npos) end = log.size();
    reader.line(log.substr(begin, end - begin));
    begin = end + 1;
  }
  reader.finish(exit_code);
  return result;
}

SanitizerResult run_compute_sanitizer(const std::filesystem::path& sanitizer, SanitizerTool tool,
                                      const std::vector<std::string>& child_command,
                                      const SanitizerOptions& options) {
  if (child_command.empty()) throw std::invalid_argument("no command for compute-sanitizer to run");
  std::vector<std::string> command = {sanitizer.string()};
  const std::vector<std::string> flags = sanitizer_flags(tool, options);
  command.insert(command.end(), flags.begin(), flags.end());
  command.insert(command.end(), child_command.begin(), child_command.end());

  ChildProcessOptions child_options;
  child_options.environment = options.environment;
  if (options.timeout) child_options.timeout = *options.timeout;
  ChildProcessResult ran = run_child_process(command, child_options);

  SanitizerResult result = parse_sanitizer_output(tool, std::move(ran.output), ran.exit_code, options);
  result.command = std::move(command);
  result.timed_out = ran.timed_out;
  if (ran.timed_out) result.failure = "compute-sanitizer was " + ran.describe_exit();
  return result;
}

}  // namespace tiletune
