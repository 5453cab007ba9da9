#include "tuner/backend/cpu/sanitizer_runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "tuner/backend/cpu/block_scheduler.h"
#include "tuner/backend/cpu/host_compiler.h"

extern char** environ;

// The sanitizers' runtime looks these up by name when it starts and when it reports; the
// executable defines them and exports them (tuner/backend/cpu/CMakeLists.txt), which puts them in
// front of the runtime's own weak definitions.
//
// ASan: a report does not end the process (the kernels are built with -fsanitize-recover), the
// same instruction is reported again on every launch (suppress_equal_pcs=0: shrinking and replays
// run the same code), tiletune's own allocations at exit are nobody's finding (detect_leaks=0), and
// the configurations of one template, loaded side by side, define the same globals by design
// (detect_odr_violation=0). UBSan: go on too, and name the kind of undefined behaviour in the
// summary line, which is how its reports reach tiletune.
extern "C" {
__attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0:detect_odr_violation=0";
}
__attribute__((visibility("default"), used)) const char* __ubsan_default_options() {
  return "halt_on_error=0:print_summary=1:report_error_type=1:print_stacktrace=1";
}
__attribute__((visibility("default"), used)) void __sanitizer_report_error_summary(
    const char* summary);
}

namespace tiletune {
namespace fs = std::filesystem;

namespace {

constexpr const char* kReexecMarker = "TILETUNE_SANITIZER_REEXEC";

// ---- reports ----------------------------------------------------------------------------------

struct CaptureState {
  std::mutex turn;   // one capture at a time
  std::mutex mutex;  // guards what follows; reports come from the worker threads
  bool open = false;
  std::string source_file;
  std::vector<SanitizerReport> reports;
};

// Never destroyed: a report may come while the process exits.
CaptureState& capture_state() {
  static CaptureState& state = *new CaptureState;
  return state;
}

std::atomic<std::uint64_t> reports_made{0};

void record(SanitizerReport report) {
  report.cuda_thread = running_cuda_thread();  // the hooks run on the thread that ran into it
  CaptureState& state = capture_state();
  std::lock_guard lock(state.mutex);
  if (state.open) state.reports.push_back(std::move(report));
}

std::string source_file_of_capture() {
  CaptureState& state = capture_state();
  std::lock_guard lock(state.mutex);
  return state.source_file;
}

// ASan hands every report over whole: access, frames, allocation, shadow bytes.
void on_asan_report(const char* text) {
  reports_made.fetch_add(1);
  record(parse_asan_report(text, source_file_of_capture()));
}

std::string_view trimmed(std::string_view s) {
  constexpr std::string_view blanks = " \t\r\n";
  while (!s.empty() && blanks.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && blanks.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

struct SourcePlace {
  std::string file;  // as the debug information names it
  std::string line;
};

// "path/tiled.cu:45" or "path/tiled.cu:45:12"; not "(module.so+0x1234)".
std::optional<SourcePlace> source_place(std::string_view text) {
  if (text.empty() || text.front() == '(') return std::nullopt;
  std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || !all_digits(text.substr(colon + 1))) return std::nullopt;
  std::string_view line = text.substr(colon + 1);
  std::string_view file = text.substr(0, colon);
  const std::size_t before = file.rfind(':');
  if (before != std::string_view::npos && all_digits(file.substr(before + 1))) {
    line = file.substr(before + 1);  // what came last was the column
    file = file.substr(0, before);
  }
  if (file.empty()) return std::nullopt;
  return SourcePlace{std::string(file), std::string(line)};
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

struct Frame {
  std::string function;
  std::optional<SourcePlace> place;
  std::uintptr_t address = 0;
};

// "#3 0x7f31390e8260 in tiled_gemm /path/tiled.cu:45" (the function may hold spaces: a C++
// signature), or "#3 0x7f31390e8260 (/path/object.so+0x1260)" without symbols.
std::optional<Frame> parse_frame(std::string_view line) {
  line = trimmed(line);
  if (line.size() < 2 || line.front() != '#') return std::nullopt;
  std::size_t space = line.find(' ');
  if (space == std::string_view::npos || !all_digits(line.substr(1, space - 1))) {
    return std::nullopt;
  }
  line = trimmed(line.substr(space));
  Frame frame;
  space = line.find(' ');
  const std::string address(line.substr(0, space));
  if (address.rfind("0x", 0) == 0) {
    frame.address = std::uintptr_t(std::strtoull(address.c_str(), nullptr, 16));
  }
  if (space == std::string_view::npos) return frame;
  line = trimmed(line.substr(space));
  if (line.substr(0, 3) != "in ") return frame;
  line = line.substr(3);
  const std::size_t last = line.rfind(' ');
  if (last == std::string_view::npos) {
    frame.function = std::string(line);
  } else {
    frame.function = std::string(trimmed(line.substr(0, last)));
    frame.place = source_place(line.substr(last + 1));
  }
  return frame;
}

// The frame to report: the first in the template's file, else the first, where the sanitizer
// caught it (an interceptor such as memcpy, a CUDA built-in of cuda_on_cpu.h, or an object its
// symbolizer does not know: place_in_object() may do better).
void place_report(SanitizerReport& report, const std::vector<Frame>& frames,
                  std::string_view source_file) {
  const Frame* chosen = frames.empty() ? nullptr : &frames.front();
  for (const Frame& frame : frames) {
    if (frame.place && file_name(frame.place->file) == source_file) {
      chosen = &frame;
      break;
    }
  }
  if (chosen == nullptr) return;
  report.function = chosen->function;
  report.location =
      chosen->place ? file_name(chosen->place->file) + ":" + chosen->place->line : std::string();
}

bool placed_in(const SanitizerReport& report, std::string_view source_file) {
  const std::size_t colon = report.location.rfind(':');
  return colon != std::string::npos &&
         std::string_view(report.location).substr(0, colon) == source_file;
}

// addr2line's answer for one address, innermost inlined frame first: function and file:line
// pairs, "??" where it does not know.
std::vector<Frame> addr2line_frames(const std::string& object, std::uintptr_t offset) {
  const HostCompiler addr2line("addr2line");
  const HostCompiler::Result result =
      addr2line.run({"-e", object, "-f", "-i", "-C", fmt::format("{:#x}", offset)});
  std::vector<Frame> frames;
  if (result.exit_code != 0) return frames;
  std::vector<std::string_view> lines;
  std::string_view text = result.output;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(trimmed(text.substr(0, end)));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  for (std::size_t i = 0; i + 1 < lines.size(); i += 2) {
    Frame frame;
    if (lines[i] != "??") frame.function = std::string(lines[i]);
    std::string_view place = lines[i + 1];
    place = place.substr(0, place.find(" (discriminator"));
    frame.place = source_place(place);
    if (frame.place && frame.place->file.rfind("??", 0) == 0) frame.place.reset();
    frames.push_back(std::move(frame));
  }
  return frames;
}

// ---- the runtime ------------------------------------------------------------------------------

using RegionFunction = void (*)(const volatile void*, std::size_t);

struct PoisonFunctions {
  RegionFunction poison = nullptr, unpoison = nullptr;
};

const PoisonFunctions& poison_functions() {
  static const PoisonFunctions functions{
      reinterpret_cast<RegionFunction>(dlsym(RTLD_DEFAULT, "__asan_poison_memory_region")),
      reinterpret_cast<RegionFunction>(dlsym(RTLD_DEFAULT, "__asan_unpoison_memory_region"))};
  return functions;
}

void install_asan_report_callback() {
  static const bool installed = [] {
    using SetCallback = void (*)(void (*)(const char*));
    const auto set =
        reinterpret_cast<SetCallback>(dlsym(RTLD_DEFAULT, "__asan_set_error_report_callback"));
    if (set != nullptr) set(&on_asan_report);
    return set != nullptr;
  }();
  (void)installed;
}

bool is_asan_runtime(const std::string& entry) {
  const std::string name = file_name(entry);
  return name.rfind("libasan", 0) == 0 || name.rfind("libclang_rt.asan", 0) == 0;
}

// LD_PRELOAD's entries, separated by colons or blanks as ld.so reads them.
std::vector<std::string> preload_entries() {
  std::vector<std::string> entries;
  const char* value = std::getenv("LD_PRELOAD");
  std::string entry;
  for (const char* c = value != nullptr ? value : "";; ++c) {
    if (*c == '\0' || *c == ':' || *c == ' ' || *c == '\t') {
      if (!entry.empty()) entries.push_back(entry);
      entry.clear();
      if (*c == '\0') break;
    } else {
      entry += *c;
    }
  }
  return entries;
}

// The runtime stays loaded; child processes start without it.
void keep_runtime_from_children() {
  std::string rest;
  for (const std::string& entry : preload_entries()) {
    if (!is_asan_runtime(entry)) rest += (rest.empty() ? "" : ":") + entry;
  }
  if (rest.empty()) {
    unsetenv("LD_PRELOAD");
  } else {
    setenv("LD_PRELOAD", rest.c_str(), 1);
  }
  unsetenv(kReexecMarker);
}

std::string runtime_of_compiler(const std::string& compiler_command) {
  const char* ask = "-print-file-name=libasan.so";
  try {
    const HostCompiler compiler(compiler_command);
    const HostCompiler::Result result = compiler.run({ask});
    const std::string answer(trimmed(result.output));
    if (result.exit_code != 0) {
      throw SanitizerRuntimeUnavailable(fmt::format(
          "--sanitize: the host compiler '{}' failed on {}: {}", compiler.command(), ask, answer));
    }
    // GCC answers with the bare name when it has no such file.
    if (!fs::path(answer).is_absolute() || !fs::exists(answer)) {
      throw SanitizerRuntimeUnavailable(fmt::format(
          "--sanitize: the host compiler '{}' has no AddressSanitizer runtime ({} answers '{}'); "
          "install it (Debian: libasan8) or name a compiler that has one in TILETUNE_CXX",
          compiler.command(), ask, answer));
    }
    return answer;
  } catch (const SanitizerRuntimeUnavailable&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw SanitizerRuntimeUnavailable(std::string("--sanitize: ") + e.what());
  }
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\0') {
      words.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (words.empty()) {
    throw SanitizerRuntimeUnavailable("--sanitize: cannot read /proc/self/cmdline to re-execute");
  }
  return words;
}

}  // namespace

// ---- reports ------------------------------------------------------------------------------------

std::string SanitizerReport::one_line() const {
  std::string line = tool + ": " + (kind.empty() ? "error" : kind);
  if (!access.empty()) line += " " + access;
  if (!function.empty()) line += " in " + function;
  if (!location.empty()) line += " at " + location;
  if (!cuda_thread.empty()) line += ", " + cuda_thread;
  return line;
}

SanitizerReport parse_asan_report(std::string_view text, std::string_view source_file) {
  SanitizerReport report;
  report.tool = "AddressSanitizer";
  report.text = std::string(text);
  std::vector<Frame> frames;
  bool first_stack_over = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = trimmed(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);

    const std::size_t error = line.find("ERROR: AddressSanitizer: ");
    if (error != std::string_view::npos && report.kind.empty()) {
      std::string_view rest = line.substr(error + std::strlen("ERROR: AddressSanitizer: "));
      report.kind = std::string(rest.substr(0, rest.find(' ')));
      continue;
    }
    if (report.access.empty() &&
        (line.rfind("READ of size ", 0) == 0 || line.rfind("WRITE of size ", 0) == 0)) {
      report.access = std::string(line.substr(0, line.find(" at ")));
      continue;
    }
    // Only the first stack: where it happened, not where the memory was allocated.
    if (first_stack_over) continue;
    if (auto frame = parse_frame(line)) {
      if (frame->address != 0) report.stack.push_back(frame->address);
      frames.push_back(std::move(*frame));
    } else if (!frames.empty()) {
      first_stack_over = true;
    }
  }
  place_report(report, frames, source_file);
  return report;
}

SanitizerReport parse_sanitizer_summary(std::string_view summary, std::string_view source_file) {
  SanitizerReport report;
  summary = trimmed(summary);
  if (summary.rfind("SUMMARY: ", 0) == 0) summary.remove_prefix(std::strlen("SUMMARY: "));
  const std::size_t colon = summary.find(": ");
  if (colon == std::string_view::npos) {
    report.tool = std::string(summary);
    return report;
  }
  report.tool = std::string(summary.substr(0, colon));
  std::string_view rest = trimmed(summary.substr(colon + 2));
  report.kind = std::string(rest.substr(0, rest.find(' ')));
  rest = rest.find(' ') == std::string_view::npos ? std::string_view()
                                                  : trimmed(rest.substr(rest.find(' ')));
  // What follows is "<where> in <function>", either part possibly empty.
  std::string_view where = rest.substr(0, rest.find(' '));
  if (where == "in") where = {};
  const std::size_t in = rest.find(" in ");
  Frame frame;
  frame.place = source_place(where);
  if (in != std::string_view::npos) {
    frame.function = std::string(trimmed(rest.substr(in + 4)));
  } else if (rest.rfind("in ", 0) == 0) {
    frame.function = std::string(trimmed(rest.substr(3)));
  }
  place_report(report, {frame}, source_file);
  return report;
}

void place_in_object(std::vector<SanitizerReport>& reports, const std::string& object,
                     std::string_view source_file) {
  for (SanitizerReport& report : reports) {
    if (placed_in(report, source_file)) continue;
    for (const std::uintptr_t address : report.stack) {
      Dl_info info{};
      if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr ||
          object != info.dli_fname) {
        continue;
      }
      std::vector<Frame> frames;
      try {
        frames =
            addr2line_frames(object, address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
      } catch (const std::runtime_error&) {
        // No addr2line: the exported symbol nearest below, the entry point most likely.
      }
      if (frames.empty() && info.dli_sname != nullptr) {
        report.function = info.dli_sname;
        report.location.clear();
      }
      if (!frames.empty()) place_report(report, frames, source_file);
      break;
    }
  }
}

SanitizerFinding::SanitizerFinding(std::vector<SanitizerReport> reports)
    : RecoverableLaunchError(reports.empty() ? std::string("a sanitizer report")
                  : reports.size() == 1
                      ? reports.front().one_line()
                      : fmt::format("{} ({} more reports in this launch)",
                                    reports.front().one_line(), reports.size() - 1)),
      reports_(std::move(reports)) {}

SanitizerReportCapture::SanitizerReportCapture(std::string source_file)
    : turn_(capture_state().turn) {
  install_asan_report_callback();
  CaptureState& state = capture_state();
  std::lock_guard lock(state.mutex);
  state.open = true;
  state.source_file = std::move(source_file);
  state.reports.clear();
}

SanitizerReportCapture::~SanitizerReportCapture() {
  CaptureState& state = capture_state();
  std::lock_guard lock(state.mutex);
  state.open = false;
  state.reports.clear();
}

std::vector<SanitizerReport> SanitizerReportCapture::take() {
  CaptureState& state = capture_state();
  std::lock_guard lock(state.mutex);
  return std::exchange(state.reports, {});
}

// ---- guards -------------------------------------------------------------------------------------

PoisonedGuards::PoisonedGuards(std::initializer_list<Region> matrices) {
  const PoisonFunctions& asan = poison_functions();
  if (asan.poison == nullptr || asan.unpoison == nullptr) return;
  for (const Region& region : matrices) {
    const Region* m = &region;
    const char* begin = reinterpret_cast<const char*>(m->storage);
    const char* end = begin + m->storage_floats * sizeof(float);
    const char* data = reinterpret_cast<const char*>(m->data);
    storage_.emplace_back(begin, std::size_t(end - begin));

    // Adjacent regions are poisoned as one (the last row's padding and the trailing guard): a
    // region that starts inside a granule leaves that granule's first bytes addressable.
    std::vector<std::pair<const char*, const char*>> regions;
    const auto add = [&regions](const char* from, const char* to) {
      if (from >= to) return;
      if (!regions.empty() && regions.back().second == from) {
        regions.back().second = to;
      } else {
        regions.emplace_back(from, to);
      }
    };
    const std::int64_t row_bytes = m->ld * std::int64_t(sizeof(float));
    add(begin, data);
    for (std::int64_t r = 0; r < m->rows; ++r) {
      add(data + r * row_bytes + m->cols * std::int64_t(sizeof(float)), data + (r + 1) * row_bytes);
    }
    add(data + m->rows * row_bytes, end);
    for (const auto& [from, to] : regions) asan.poison(from, std::size_t(to - from));
  }
}

PoisonedGuards::~PoisonedGuards() {
  for (const auto& [begin, bytes] : storage_) poison_functions().unpoison(begin, bytes);
}

// ---- the runtime --------------------------------------------------------------------------------

std::uint64_t sanitizer_report_count() { return reports_made.load(std::memory_order_relaxed); }

bool sanitizer_runtime_loaded() { return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr; }

void ensure_sanitizer_runtime(const std::string& compiler) {
  if (sanitizer_runtime_loaded()) {
    keep_runtime_from_children();
    return;
  }
  const char* marker = std::getenv(kReexecMarker);
  if (marker != nullptr) {
    throw SanitizerRuntimeUnavailable(fmt::format(
        "--sanitize: re-executed with LD_PRELOAD={} but AddressSanitizer's runtime is still not "
        "loaded (a set-user-ID binary, or a loader that ignores LD_PRELOAD?)",
        marker));
  }
  const std::string runtime = runtime_of_compiler(compiler);
  const std::vector<std::string> arguments = own_command_line();

  // The runtime must come first among the libraries: ASan refuses to start otherwise.
  std::string preload = runtime;
  for (const std::string& entry : preload_entries()) preload += ":" + entry;
  std::vector<std::string> environment;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view text(*variable);
    if (text.rfind("LD_PRELOAD=", 0) == 0 || text.rfind(std::string(kReexecMarker) + "=", 0) == 0) {
      continue;
    }
    environment.emplace_back(text);
  }
  environment.push_back("LD_PRELOAD=" + preload);
  environment.push_back(std::string(kReexecMarker) + "=" + runtime);

  std::vector<char*> argv, envp;
  for (const std::string& word : arguments) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  for (const std::string& variable : environment) {
    envp.push_back(const_cast<char*>(variable.c_str()));
  }
  envp.push_back(nullptr);
  std::fflush(nullptr);
  execve("/proc/self/exe", argv.data(), envp.data());
  throw SanitizerRuntimeUnavailable(
      fmt::format("--sanitize: cannot re-execute tiletune with LD_PRELOAD={}: {}", runtime,
                  std::strerror(errno)));
}

}  // namespace tiletune

// UBSan's reports reach tiletune only as this summary line; ASan's come whole through the
// callback (on_asan_report), so their summaries are only printed, as the runtime would.
extern "C" void __sanitizer_report_error_summary(const char* summary) {
  std::fprintf(stderr, "%s\n", summary);
  const std::string_view text(summary);
  if (text.find("AddressSanitizer") != std::string_view::npos) return;
  tiletune::reports_made.fetch_add(1);
  tiletune::record(tiletune::parse_sanitizer_summary(text, tiletune::source_file_of_capture()));
}
