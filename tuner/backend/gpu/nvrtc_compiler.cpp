#include "tuner/backend/gpu/nvrtc_compiler.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "tuner/backend/entry_contract.h"
#include "tuner/backend/gpu/cubin_elf.h"

namespace tiletune {
namespace {

struct NvrtcLibrary {
#define TILETUNE_NVRTC_FUNCTIONS(X)                                                     \
  X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) \
  X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcDestroyProgram)     \
  X(nvrtcGetErrorString)
#define TILETUNE_DECLARE_POINTER(fn) decltype(&::fn) fn = nullptr;
  TILETUNE_NVRTC_FUNCTIONS(TILETUNE_DECLARE_POINTER)
#undef TILETUNE_DECLARE_POINTER
};

NvrtcLibrary load_nvrtc() {
  void* library = nullptr;
  std::string reasons;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* why = dlerror();
    reasons += fmt::format("\n  {}: {}", name, why ? why : "not found");
  }
  if (library == nullptr) {
    throw NvrtcError("cannot load NVRTC (install the CUDA toolkit or add its lib64 folder to "
                     "LD_LIBRARY_PATH):" + reasons);
  }
  NvrtcLibrary nvrtc;
#define TILETUNE_RESOLVE(fn)                                                          \
  nvrtc.fn = reinterpret_cast<decltype(nvrtc.fn)>(dlsym(library, #fn));               \
  if (nvrtc.fn == nullptr) throw NvrtcError("the NVRTC library found lacks " #fn);
  TILETUNE_NVRTC_FUNCTIONS(TILETUNE_RESOLVE)
#undef TILETUNE_RESOLVE
  return nvrtc;
}

const NvrtcLibrary& nvrtc() {
  static std::once_flag once;
  static NvrtcLibrary library;
  static std::string failure;
  std::call_once(once, [] {
    try {
      library = load_nvrtc();
    } catch (const NvrtcError& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw NvrtcError(failure);
  return library;
}

void check_nvrtc(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS) {
    throw NvrtcError(fmt::format("{}: {}", what, nvrtc().nvrtcGetErrorString(result)));
  }
}

// Owns an nvrtcProgram.
class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    check_nvrtc(nvrtc().nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr,
                                           nullptr),
                "nvrtcCreateProgram");
  }
  ~Program() { nvrtc().nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcProgram get() const { return program_; }

  std::string log() const {
    std::size_t size = 0;
    check_nvrtc(nvrtc().nvrtcGetProgramLogSize(program_, &size), "nvrtcGetProgramLogSize");
    std::string text(size, '\0');
    check_nvrtc(nvrtc().nvrtcGetProgramLog(program_, text.data()), "nvrtcGetProgramLog");
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    return text;
  }

 private:
  nvrtcProgram program_ = nullptr;
};

int to_int(const std::string& digits) { return std::stoi(digits); }

}  // namespace

PtxasReport parse_ptxas_report(const std::string& log, const std::string& entry) {
  static const std::regex entry_line(R"(Compiling entry function '([^']+)')");
  static const std::regex frame_line(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_line(R"(Used (\d+) registers)");
  static const std::regex smem_field(R"((\d+) bytes smem)");

  PtxasReport report;
  bool in_entry = false;
  std::istringstream lines(log);
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, entry_line)) {
      in_entry = match[1] == entry;
      continue;
    }
    if (!in_entry) continue;
    if (std::regex_search(line, match, frame_line)) {
      report.stack_frame_bytes = to_int(match[1]);
      report.spill_store_bytes = to_int(match[2]);
      report.spill_load_bytes = to_int(match[3]);
    } else if (std::regex_search(line, match, used_line)) {
      report.registers = to_int(match[1]);
      if (std::regex_search(line, match, smem_field)) report.static_shared_bytes = to_int(match[1]);
    }
  }
  return report;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtc().nvrtcVersion(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

namespace {

// Compiles with exactly `options` (the callers build them with nvrtc_options).
CompiledKernelImage compile_with_options(const std::string& source, const std::string& file_name,
                                         const std::vector<std::string>& options,
                                         const std::string& arch, const std::string& entry,
                                         const std::string& what) {
  Program program(source, file_name);
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());

  const nvrtcResult result = nvrtc().nvrtcCompileProgram(
      program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  CompiledKernelImage image;
  image.arch = arch;
  image.log = program.log();
  if (result == NVRTC_ERROR_COMPILATION) {
    throw CompileError(fmt::format("{} does not compile for {}", what, arch), image.log);
  }
  if (result != NVRTC_SUCCESS) {
    throw NvrtcError(fmt::format("nvrtcCompileProgram ({}, {}): {}\n{}", what, arch,
                                 nvrtc().nvrtcGetErrorString(result), image.log));
  }

  std::size_t size = 0;
  check_nvrtc(nvrtc().nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
  image.cubin.resize(size);
  check_nvrtc(nvrtc().nvrtcGetCUBIN(program.get(), image.cubin.data()), "nvrtcGetCUBIN");
  image.report = parse_ptxas_report(image.log, entry);
  return image;
}

}  // namespace

std::vector<std::string> nvrtc_options(const std::string& arch,
                                       const std::vector<std::string>& extra_options) {
  // NVRTC's own cache (12.9+) is off: a compile it serves skips ptxas, so its log has no report
  // of registers and spills, and tiletune's cubin cache (which every worker reads) keeps only
  // compiles that have one.
  std::vector<std::string> options = {"-arch=" + arch, "--std=c++17", "-lineinfo",
                                      "--ptxas-options=-v", "--no-cache"};
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

std::vector<std::string> nvrtc_options(const KernelTemplate& tmpl, const Configuration& config,
                                       const std::string& arch) {
  const std::string target = tmpl.compile_arch(arch);
  return nvrtc_options(target.empty() ? arch : target, tmpl.macro_definitions(config));
}

std::string nvrtc_file_name(const KernelTemplate& tmpl) {
  return tmpl.path.empty() ? tmpl.name + ".cu" : tmpl.path.filename().string();
}

CompiledKernelImage compile_cuda_source(const std::string& source, const std::string& file_name,
                                        const std::vector<std::string>& extra_options,
                                        const std::string& arch, const std::string& entry,
                                        const std::string& what) {
  return compile_with_options(source, file_name, nvrtc_options(arch, extra_options), arch, entry,
                              what);
}

const CompiledKernelImage& compile_cuda_source_once(const std::string& source,
                                                    const std::string& file_name,
                                                    const std::string& arch,
                                                    const std::string& entry,
                                                    const std::string& what) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, CompiledKernelImage> images;
  std::lock_guard lock(mutex);
  auto found = images.find({file_name, arch});
  if (found == images.end()) {
    found = images.emplace(std::pair(file_name, arch),
                           compile_cuda_source(source, file_name, {}, arch, entry, what))
                .first;
  }
  return found->second;
}

CompiledKernelImage compile_configuration(const KernelTemplate& tmpl, const Configuration& config,
                                          const std::string& arch) {
  const std::string what = fmt::format("{} [{}]", tmpl.name, config.to_string());
  const std::string target = tmpl.compile_arch(arch);
  if (target.empty()) {
    throw CompileError(fmt::format("{} uses instructions of {} only; this GPU is {}", what,
                                   tmpl.feature_arch, arch),
                       "");
  }
  CompiledKernelImage image = compile_with_options(
      tmpl.source, nvrtc_file_name(tmpl), nvrtc_options(tmpl, config, arch), target, tmpl.entry,
      what);
  image.arch = arch;  // the GPU's own target (sm_90 for an sm_90a compile): loaders go by that
  check_compiled_entry(image, tmpl.entry, what, entry_form(tmpl));
  return image;
}

void check_compiled_entry(const CompiledKernelImage& image, const std::string& entry,
                          const std::string& what, EntryForm form) {
  std::optional<CubinElf> cubin;
  try {
    cubin.emplace(image.cubin);
  } catch (const CubinFormatError&) {
    return;  // not the ELF this reader knows: the GPU checks the entry when it loads the cubin
  }
  if (!cubin->defines_kernel(entry)) {
    throw EntryContractError(what, missing_entry_line(entry, cubin->kernels()));
  }
  if (const auto layout = cubin->parameters(entry)) {
    if (auto mismatch = parameter_layout_mismatch(entry, *layout, form)) {
      throw EntryContractError(what, *mismatch);
    }
  }
}

}  // namespace tiletune
