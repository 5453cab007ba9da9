// AddressSanitizer and UndefinedBehaviorSanitizer around the CPU backend's sanitized kernels
// (CpuBackendOptions::sanitize). The kernel objects are instrumented, tiletune is not, and the
// sanitizers' runtime must be in the process from its start. This file
//
// - gets it there: ensure_sanitizer_runtime() re-executes tiletune with the host compiler's
//   libasan preloaded;
// - sets the runtime's options from inside the executable (__asan_default_options and
//   __ubsan_default_options, defined in sanitizer_runtime.cpp and exported): a report is printed
//   and the kernel goes on instead of the process ending;
// - catches the reports made while a launch runs (SanitizerReportCapture), each condensed into
//   one line naming the template's file and line, which CpuExecutor throws as a SanitizerFinding;
// - poisons the guard bands and padding around the operands for the length of a launch
//   (PoisonedGuards): they lie inside the allocation, where ASan would not look otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/backend/backend_errors.h"

namespace tiletune {

// Whether AddressSanitizer's runtime is loaded into this process.
bool sanitizer_runtime_loaded();

// The runtime cannot be had: the host compiler has none, or preloading it did not work.
class SanitizerRuntimeUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Makes sure AddressSanitizer's runtime is loaded, before the process starts any thread. When it
// is not, re-executes the process (/proc/self/exe, /proc/self/cmdline, the same environment) with
// the runtime that `compiler` (a HostCompiler command; empty: $TILETUNE_CXX, else c++) links
// kernels against preloaded, `<compiler> -print-file-name=libasan.so`, and
// TILETUNE_SANITIZER_REEXEC set against loops: it then returns only in the new process. Once the
// runtime is loaded it is taken out of LD_PRELOAD again, so that the host compiler, a child
// process, does not start under it (it would run several times slower). Throws
// SanitizerRuntimeUnavailable.
void ensure_sanitizer_runtime(const std::string& compiler);

// How many reports the sanitizers have made in this process, captured or not. The block
// scheduler stops a launch at the first one: the others would mostly repeat it, at length.
std::uint64_t sanitizer_report_count();

// One sanitizer report, condensed.
struct SanitizerReport {
  std::string tool;         // "AddressSanitizer", "UndefinedBehaviorSanitizer"
  std::string kind;         // "heap-buffer-overflow", "use-after-poison", "signed-integer-overflow"
  std::string access;       // "READ of size 4" (ASan's memory errors)
  std::string function;     // "tiled_gemm", when the report names it
  std::string location;     // "tiled.cu:45": the template's file and line where the report has it
  std::string cuda_thread;  // "block (0, 0, 0), thread (5, 3, 0)": the fiber that ran into it
  std::string text;         // the report as the runtime wrote it, when it hands it over (ASan)
  std::vector<std::uintptr_t> stack;  // the addresses of its first stack's frames (ASan)

  // "AddressSanitizer: use-after-poison READ of size 4 in tiled_gemm at tiled.cu:45, in block
  // (0, 0, 0), thread (5, 3, 0)"
  std::string one_line() const;
};

// Reads ASan's report text (as __asan_set_error_report_callback hands it over) or a report's
// summary line ("SUMMARY: UndefinedBehaviorSanitizer: signed-integer-overflow f.cu:12:7 in ").
// Among the frames, the first in a file named `source_file` (the template's file name) is the
// one reported, so that a report from inside an inlined CUDA built-in names the template's line.
SanitizerReport parse_asan_report(std::string_view text, std::string_view source_file);
SanitizerReport parse_sanitizer_summary(std::string_view summary, std::string_view source_file);

// ASan's symbolizer learns the loaded objects at its first report and names none loaded later
// (it leaves "(object+0x1a2b)"). Where a report is not placed in the template's file yet, places
// it from the first frame of its stack inside `object` (the loaded kernel, as dlopen named it),
// symbolized with addr2line; without addr2line the function is the nearest exported symbol.
void place_in_object(std::vector<SanitizerReport>& reports, const std::string& object,
                     std::string_view source_file);

// A sanitizer reported during a launch. The process is intact and the backend goes on: the
// property runner fails the case like any other launch error.
class SanitizerFinding : public RecoverableLaunchError {
 public:
  // The message is the first report's one line, with a count of the others.
  explicit SanitizerFinding(std::vector<SanitizerReport> reports);
  const std::vector<SanitizerReport>& reports() const { return reports_; }

 private:
  std::vector<SanitizerReport> reports_;
};

// Collects the reports the runtime makes in this process while it lives, on any thread; the
// runtime still prints them to stderr. One capture at a time: a second one waits. Reports made
// while none is open (loading a kernel, say) are printed and not collected.
class SanitizerReportCapture {
 public:
  explicit SanitizerReportCapture(std::string source_file);
  ~SanitizerReportCapture();
  SanitizerReportCapture(const SanitizerReportCapture&) = delete;
  SanitizerReportCapture& operator=(const SanitizerReportCapture&) = delete;

  std::vector<SanitizerReport> take();  // those so far, in the order they were made

 private:
  std::unique_lock<std::mutex> turn_;
};

// Marks, with ASan's manual poisoning, the guard bands and the padding between each row's width
// and its leading dimension as unaddressable while it lives, so that an instrumented kernel that
// touches them is reported even though the bytes are inside the matrix's allocation. Unpoisons
// the whole storage again on destruction: the oracle reads the guards afterwards.
//
// ASan tracks memory in 8-byte granules whose first k bytes may be addressable and the rest not,
// never the other way round. A 4-byte padding element in the first half of a granule whose
// second half is the next row's first element cannot be poisoned, so a read of it goes unreported
// by ASan; the NaN the padding holds still shows in the result, and the oracle catches writes.
// Does nothing without the runtime.
class PoisonedGuards {
 public:
  // A matrix inside its allocation: the whole storage (guard bands included), and where its
  // rows x cols elements, `ld` apart, begin.
  struct Region {
    const float* storage = nullptr;
    std::size_t storage_floats = 0;
    const float* data = nullptr;
    std::int64_t rows = 0, cols = 0, ld = 0;
  };

  explicit PoisonedGuards(std::initializer_list<Region> matrices);
  ~PoisonedGuards();
  PoisonedGuards(const PoisonedGuards&) = delete;
  PoisonedGuards& operator=(const PoisonedGuards&) = delete;

 private:
  std::vector<std::pair<const void*, std::size_t>> storage_;
};

}  // namespace tiletune
