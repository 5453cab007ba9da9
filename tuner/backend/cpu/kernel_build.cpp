#include "tuner/backend/cpu/kernel_build.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/backend/backend_errors.h"
#include "tuner/backend/cpu/host_compiler.h"
#include "tuner/backend/cpu/source_scan.h"
#include "tuner/system/cache_limit.h"
#include "tuner/system/private_files.h"

namespace tiletune {
namespace fs = std::filesystem;

namespace {

// A file in the cache folder under a name no other process or thread uses, created exclusively
// (tuner/system/private_files.h), removed unless published.
class TemporaryFile {
 public:
  explicit TemporaryFile(const fs::path& final_path) {
    const TemporaryBeside created = create_temporary_beside(final_path);
    close(created.fd);
    path_ = created.path;
  }
  ~TemporaryFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const fs::path& path() const { return path_; }

  void write(std::string_view content) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(content.data(), std::streamsize(content.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + path_.string());
  }
  std::string read() const {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Renames it into place: another process building the same key at the same time sees either
  // no file or a whole one.
  void publish(const fs::path& final_path) const { fs::rename(path_, final_path); }

 private:
  fs::path path_;
};

// Storage for the `extern __shared__` arrays, appended after the kernel's source, each in its
// namespace. Each also gets an empty thread_local init function (the Itanium ABI's _ZTH and the
// array's mangled name): where the declaration sits in a function template, GCC calls that
// function without checking that it exists, and an array that needs no initialization has none, so
// the call would jump to address 0. (An array in an unnamed namespace has internal linkage and
// no such call.)
std::string dynamic_shared_definitions(const std::vector<DynamicSharedArray>& arrays) {
  std::string text = "#line 1 \"<tiletune: dynamic shared memory>\"\n";
  int function = 0;
  for (const DynamicSharedArray& array : arrays) {
    std::string opening, closing, mangled;
    bool external = true;
    for (const std::string& space : array.scope) {
      opening += fmt::format("namespace {} {{ ", space);
      closing += "} ";
      mangled += fmt::format("{}{}", space.size(), space);
      external = external && !space.empty();
    }
    const std::string name = fmt::format("{}{}", array.name.size(), array.name);
    mangled = array.scope.empty() ? name : "N" + mangled + name + "E";
    text += fmt::format("{}alignas(16) thread_local {} {}[{} / sizeof({})]; {}\n", opening,
                        array.type, array.name, kCpuDynamicSharedCapacity, array.type, closing);
    if (external) {
      text += fmt::format(
          "extern \"C\" void tt_cpu_tls_init_{0}() __asm__(\"_ZTH{1}\");\n"
          "extern \"C\" void tt_cpu_tls_init_{0}() {{}}\n",
          function++, mangled);
    }
  }
  return text;
}

// The cap of each CPU cache folder this process writes (tuner/system/cache_limit.h).
CacheCap& cache_cap(const fs::path& cache) {
  static std::mutex mutex;
  static std::map<fs::path, std::unique_ptr<CacheCap>> caps;
  const std::lock_guard lock(mutex);
  auto& cap = caps[cache];
  if (!cap) cap = std::make_unique<CacheCap>(cache, &cpu_cache_entry, cache_cap_or_default(), &cpu_cache_file);
  return *cap;
}

// A built object ends with this line: its size and hash without the line, so that a truncated or
// changed object is found before it is loaded (the dynamic loader ignores bytes after the ELF
// image's segments).
constexpr std::string_view kObjectTrailerTag = "\ntiletune-cpu-object ";
constexpr std::size_t kObjectTrailerSize = kObjectTrailerTag.size() + 20 + 1 + 16 + 1;

std::string object_trailer(std::string_view object) {
  return fmt::format("{}{:020} {}\n", kObjectTrailerTag, object.size(), fnv1a_hex(object));
}

// The cache folder to build in: `wanted`, created if missing and claimed as a cache, when this
// process can write it;
// else (one warning line per folder) a private folder of this process's, removed at its exit, so
// that an unwritable cache slows a run down but never fails it. A cache never fails its user.
fs::path writable_cache(const fs::path& wanted) {
  static std::mutex mutex;
  static std::map<fs::path, fs::path> chosen;
  static std::unique_ptr<PrivateDirectory> fallback;
  const std::lock_guard lock(mutex);
  if (const auto known = chosen.find(wanted); known != chosen.end()) return known->second;
  std::string why;
  try {
    fs::create_directories(wanted);
    if (::access(wanted.c_str(), W_OK | X_OK) == 0) {
      claim_cache_folder(wanted, &cpu_cache_file);  // once per folder, not per build
      return chosen[wanted] = wanted;
    }
    why = std::strerror(errno);
  } catch (const fs::filesystem_error& e) {
    why = e.code().message();
  }
  if (!fallback) fallback = std::make_unique<PrivateDirectory>(fs::temp_directory_path(), "tiletune-cpu-");
  fmt::print(stderr, "tiletune: warning: the CPU kernel cache {} cannot be written ({}); building "
             "kernels in {} for this run instead\n", wanted.string(), why, fallback->path().string());
  return chosen[wanted] = fallback->path();
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += word + '\n';
  return text;
}

// Flags that make the emulated arithmetic faster and leave its results as they were: where the
// CPU has fused multiply-add, fmaf is one instruction instead of a call into libm (a fifth of a
// warp_tiled case's time went to that call), and no a * b + c is fused that the source did not
// fuse. A host without FMA builds without it, under another key.
std::vector<std::string> arithmetic_flags() {
  std::vector<std::string> flags = {"-ffp-contract=off"};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("fma")) flags.push_back("-mfma");
#endif
  return flags;
}

// Writes `text` to `path` unless it is there: whole or not at all, whoever writes it at the same time.
void write_once(const fs::path& path, std::string_view text) {
  if (fs::exists(path)) return;
  TemporaryFile file(path);
  file.write(text);
  file.publish(path);
}

// GCC's precompiled cuda_on_cpu.h for one set of flags, or nothing where the compiler is not GCC
// or cannot build it (then the text is included, as it always is for Clang). Parsing the header
// was a quarter of a kernel's compile; it is now done once per cache folder and flag set. The
// precompiled header sits beside a copy of the header of its own
// (cuda_on_cpu-<text hash>.gcc-<flags hash>.h), so that Clang, which reads any .gch beside a
// header it includes in its own format, never meets one.
std::optional<fs::path> precompiled_header(const HostCompiler& compiler, const fs::path& cache,
                                           std::string_view header, const std::vector<std::string>& flags) {
  if (!compiler.is_gcc()) return std::nullopt;
  const fs::path path = cache / fmt::format("cuda_on_cpu-{}.gcc-{}.h", fnv1a_hex(header),
                                            fnv1a_hex(compiler.identity() + '\0' + joined(flags)));
  fs::path precompiled = path;
  precompiled += ".gch";
  write_once(path, header);
  if (fs::exists(precompiled)) {
    touch_entry(precompiled);  // used now: the last to be evicted
    return path;
  }
  const TemporaryFile file(precompiled);
  std::vector<std::string> arguments = flags;
  arguments.insert(arguments.end(), {"-x", "c++-header", "-o", file.path().string(), path.string()});
  if (compiler.run(arguments).exit_code != 0) return std::nullopt;  // the kernel's compile will say why
  file.publish(precompiled);
  std::error_code error;
  const std::uintmax_t bytes = fs::file_size(precompiled, error);
  cache_cap(cache).wrote(precompiled, error ? 0 : bytes);
  return path;
}

}  // namespace

std::string kernel_source_origin(const KernelTemplate& tmpl) {
  const std::string path = tmpl.path.string();
  const bool plain = !path.empty() && path.find_first_of("\"\\\n") == std::string::npos;
  return plain ? path : tmpl.name + ".cu";
}

bool cpu_cache_entry(const fs::path& file) {
  const std::string name = file.filename().string();
  return file.extension() == ".so" || (name.starts_with("cuda_on_cpu-") && file.extension() == ".gch");
}

bool cpu_cache_file(const fs::path& file) {
  const std::string name = file.filename().string();
  return cpu_cache_entry(file) || (name.starts_with("cuda_on_cpu-") && file.extension() == ".h");
}

bool cpu_cache_object_intact(const fs::path& object) {
  // A precompiled header is checked by GCC itself, and a compile that fails with one is tried
  // again without it (build_kernel_object).
  if (object.extension() == ".gch") return true;
  std::ifstream in(object, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad() || bytes.size() < kObjectTrailerSize) return false;
  const std::string_view image = std::string_view(bytes).substr(0, bytes.size() - kObjectTrailerSize);
  return std::string_view(bytes).substr(image.size()) == object_trailer(image);
}

fs::path default_cpu_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && fs::path(xdg).is_absolute()) return fs::path(xdg) / "tiletune" / "cpu";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return fs::path(home) / ".cache" / "tiletune" / "cpu";
  // No home: a folder of this user's own in /tmp, never one another user could have made first.
  return own_directory(fs::temp_directory_path() / fmt::format("tiletune-cpu-{}", ::geteuid()));
}

KernelObject build_kernel_object(const KernelTemplate& tmpl, const Configuration& config,
                                 const CpuBackendOptions& options) {
  const HostCompiler compiler(options.compiler);
  const fs::path cache = writable_cache(options.cache_dir.empty() ? default_cpu_cache_dir() : options.cache_dir);

  const std::string_view header = cuda_on_cpu_header_text();
  const fs::path header_path = cache / fmt::format("cuda_on_cpu-{}.h", fnv1a_hex(header));
  write_once(header_path, header);

  // -fno-strict-aliasing: CUDA code reinterprets float arrays as float4 and the like. -O1, the
  // level AddressSanitizer's authors advise for a sanitized build: a kernel is built for a few
  // dozen cases, and -O1 builds a tensor-core configuration in 55% of -O2's time for cases about
  // 15% slower (warp_tiled: the same total at 100 cases), so a fuzz run is shorter at either.
  std::vector<std::string> flags = {"-std=c++17", "-O1", "-fPIC",
                                    "-fno-strict-aliasing", "-Wno-unknown-pragmas"};
  for (std::string& flag : arithmetic_flags()) flags.push_back(std::move(flag));
  if (options.sanitize) {
    // -g1: line tables, so that the reports name the template's file and line (inlined frames
    // too), and no more: -g's descriptions of every variable doubled a tensor-core build's time.
    // Recovering: a report is a finding of one case (sanitizer_runtime.h), not the end of tiletune.
    flags.insert(flags.end(),
                 {"-fsanitize=address,undefined", "-fsanitize-recover=address,undefined",
                  "-fno-omit-frame-pointer", "-g1"});
#if defined(__x86_64__)
    // Thread-local variables (the running CUDA thread, the __shared__ arrays) through TLS
    // descriptors: the default model calls __tls_get_addr on each access, which AddressSanitizer
    // intercepts, and that took four fifths of a sanitized tiled case's time. (AArch64 uses
    // descriptors anyway; Clang before 19 does not know the flag.)
    if (compiler.is_gcc()) flags.push_back("-mtls-dialect=gnu2");
#endif
  }
  const std::vector<std::string> header_flags = flags;  // what a precompiled header must match
  flags.push_back("-shared");
  for (std::string& definition : tmpl.macro_definitions(config)) flags.push_back(definition);

  // The line directive makes the compiler's messages name the template, at its own line numbers.
  // After the source, the macro that makes the object report its entry's type (cuda_on_cpu.h).
  const std::string origin = kernel_source_origin(tmpl);
  std::string unit = fmt::format("#line 1 \"{}\"\n{}\n#line 1 \"{}\"\nTT_CPU_ENTRY_CONTRACT({})\n",
                                 origin, tmpl.source, kEntryTypeOrigin, tmpl.entry);

  // The dynamic shared memory definitions follow from the unit, given the form (capacity
  // included) tiletune writes them in: examples of it, at namespace scope and in one, go into the key.
  const std::string key =
      fnv1a_hex(compiler.identity() + '\0' + joined(flags) + '\0' + std::string(header) + '\0' +
                unit + '\0' +
                dynamic_shared_definitions({{"float", "example", {}}, {"float", "example", {"n"}}}));
  const fs::path object_path = cache / fmt::format("{}-{}.so", tmpl.name, key);
  if (fs::exists(object_path)) {
    if (cpu_cache_object_intact(object_path)) {
      touch_entry(object_path);  // used now: the last to be evicted
      return {object_path, true};
    }
    std::error_code ignored;
    fs::remove(object_path, ignored);  // damaged (truncated, changed): built again
  }

  // The compiler on the unit, with the emulation header (or its precompiled form) included first.
  const auto run_on_unit = [&](const fs::path& included_header, std::vector<std::string> arguments) {
    std::vector<std::string> command = flags;
    command.insert(command.end(), {"-x", "c++", "-include", included_header.string()});
    command.insert(command.end(), arguments.begin(), arguments.end());
    return compiler.run(command);
  };
  const std::string what = fmt::format("{} ({})", tmpl.name, config.to_string());
  const TemporaryFile source_file(cache / fmt::format("{}-{}.cpp", tmpl.name, key));
  source_file.write(unit);

  const TemporaryFile preprocessed(cache / fmt::format("{}-{}.ii", tmpl.name, key));
  const HostCompiler::Result expanded =
      run_on_unit(header_path, {"-E", "-o", preprocessed.path().string(), source_file.path().string()});
  if (expanded.exit_code != 0) {
    if (auto missing = unsupported_in_compiler_log(expanded.output)) {
      throw UnsupportedOnBackend("not supported on the CPU backend: " + *missing);
    }
    throw CompileError(what + " does not compile for the CPU backend", expanded.output);
  }
  const KernelSourceScan scan = scan_preprocessed_kernel(preprocessed.read(), origin);
  if (scan.unsupported) {
    throw UnsupportedOnBackend("not supported on the CPU backend: " + *scan.unsupported);
  }
  if (!scan.dynamic_shared.empty()) {
    unit += dynamic_shared_definitions(scan.dynamic_shared);
    source_file.write(unit);
  }

  const TemporaryFile object(object_path);
  const auto compile_with = [&](const fs::path& included_header) {
    return run_on_unit(included_header, {"-o", object.path().string(), source_file.path().string()});
  };
  const std::optional<fs::path> precompiled = precompiled_header(compiler, cache, header, header_flags);
  HostCompiler::Result compiled = compile_with(precompiled.value_or(header_path));
  if (compiled.exit_code != 0 && precompiled &&
      (compiled.output.find("PCH") != std::string::npos || compiled.output.find(".gch") != std::string::npos)) {
    // A damaged precompiled header (GCC ignores one that merely does not match): removed, and the
    // kernel compiled from the header's text.
    std::error_code ignored;
    fs::remove(fs::path(*precompiled) += ".gch", ignored);
    compiled = compile_with(header_path);
  }
  if (compiled.exit_code != 0) {
    throw CompileError(what + " does not compile for the CPU backend", compiled.output);
  }
  {
    const std::string image = object.read();
    std::ofstream out(object.path(), std::ios::binary | std::ios::app);
    out << object_trailer(image);
    if (!out.flush()) throw std::runtime_error("cannot write " + object.path().string());
  }
  object.publish(object_path);
  std::error_code error;
  const std::uintmax_t bytes = fs::file_size(object_path, error);
  cache_cap(cache).wrote(object_path, error ? 0 : bytes);
  return {object_path, false};
}

}  // namespace tiletune
