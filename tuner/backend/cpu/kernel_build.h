// Builds one configuration of a kernel template into a shared object with the host compiler, or
// finds it already built in the cache folder.
//
// The key of a build is a hash of everything that decides the object: the compiler's identity
// (its --version), the flags and macro definitions, the text of cuda_on_cpu.h and the source, so a
// second fuzz run, or a second executor for the same configuration, does not compile again.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// Each `extern __shared__` array gets this many bytes: the most dynamic shared memory a block may
// have on an H100 or H200, so the CPU backend runs whatever the GPU can.
inline constexpr std::size_t kCpuDynamicSharedCapacity = 227 * 1024;

// The file name the compiler's messages give the line appended after the kernel's source, which
// makes the object report its entry's type (cuda_on_cpu.h, TT_CPU_ENTRY_CONTRACT).
inline constexpr std::string_view kEntryTypeOrigin = "<tiletune: the entry's type>";

struct KernelObject {
  std::filesystem::path path;  // the shared object, in the cache folder
  bool from_cache = false;     // found there rather than compiled now
};

// The file name the compiler's messages and the debug information give the template's lines
// (a #line directive): its path, else its name with ".cu".
std::string kernel_source_origin(const KernelTemplate& tmpl);

// $XDG_CACHE_HOME/tiletune/cpu, else ~/.cache/tiletune/cpu, else (no home) $TMPDIR's
// tiletune-cpu-UID, which must be this user's own (own_directory).
std::filesystem::path default_cpu_cache_dir();

// Whether a file of the cache folder is a built kernel: what its size cap (tuner/system/cache_limit.h)
// counts and evicts, least recently used first (a hit marks an object used). The shared header
// beside them is tiny and is never evicted, so that no build loses it midway.
bool cpu_cache_entry(const std::filesystem::path& file);
// Whether a file is one the CPU cache writes: an entry or the shared header.
bool cpu_cache_file(const std::filesystem::path& file);
// Whether a built object is whole: its last line gives the size and hash of the rest. A damaged
// one is built again, and `cache --prune` removes it.
bool cpu_cache_object_intact(const std::filesystem::path& object);

// The text of cuda_on_cpu.h, embedded in the binary at build time.
std::string_view cuda_on_cpu_header_text();

// Throws UnsupportedOnBackend when the source uses what the CPU cannot emulate, CompileError
// (tuner/backend/gpu/nvrtc_compiler.h) with the compiler's log when it does not compile, and
// std::runtime_error when the compiler cannot be run or the cache folder cannot be written.
KernelObject build_kernel_object(const KernelTemplate& tmpl, const Configuration& config,
                                 const CpuBackendOptions& options);

}  // namespace tiletune
