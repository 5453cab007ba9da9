#include "tuner/backend/cpu/cpu_kernel.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "tuner/backend/backend_errors.h"
#include "tuner/backend/cpu/kernel_build.h"
#include "tuner/backend/cpu/sanitizer_runtime.h"
#include "tuner/backend/cpu/worker_pool.h"
#include "tuner/backend/entry_contract.h"
#include "tuner/backend/epilogue_pass.h"
#include "tuner/backend/operand_staging.h"
#include "tuner/system/private_files.h"

namespace tiletune {
namespace fs = std::filesystem;
namespace {

// The size of the loaded object's thread-local block (its PT_TLS segment): the __shared__ arrays.
std::size_t thread_local_bytes(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0) return 0;
  struct Search {
    ElfW(Addr) base;
    std::size_t bytes = 0;
  } search{map->l_addr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_addr != s->base) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type == PT_TLS) s->bytes = info->dlpi_phdr[i].p_memsz;
        }
        return 1;
      },
      &search);
  return search.bytes;
}

template <class Function>
Function symbol(void* handle, const char* name) {
  return reinterpret_cast<Function>(dlsym(handle, name));
}

// The type T in the __PRETTY_FUNCTION__ of tt_cpu_type_text<T> (cuda_on_cpu.h): GCC writes
// "... [with T = void(int, int)]", Clang "... [T = void (int, int)]". The whole text otherwise.
std::string type_in_pretty_function(std::string_view text) {
  const std::size_t start = text.find("T = ");
  if (start == std::string_view::npos || !text.ends_with(']')) return std::string(text);
  return std::string(text.substr(start + 4, text.size() - 1 - (start + 4)));
}

// Why the entry is not in the code, when the build's first error is on the line that reports the
// entry's type (kernel_build.cpp): the source declares no function of that name, or several.
std::optional<std::string> missing_entry_in_build_log(const std::string& log,
                                                      const std::string& entry) {
  const std::size_t error = log.find(": error: ");
  if (error == std::string::npos) return std::nullopt;
  const std::size_t line_start = log.rfind('\n', error) + 1;  // npos + 1 is 0
  if (log.compare(line_start, kEntryTypeOrigin.size(), kEntryTypeOrigin) != 0) return std::nullopt;
  const std::size_t reason = error + std::string_view(": error: ").size();
  return fmt::format("entry {} is not in the compiled code: {}", entry,
                     log.substr(reason, log.find('\n', reason) - reason));
}

// What CUDA rejects at launch, so that the CPU backend rejects it too.
void check_geometry(const LaunchGeometry& g) {
  const auto& [bx, by, bz] = g.block;
  if (bx > 1024 || by > 1024 || bz > 64 || g.threads_per_block() > 1024) {
    throw LaunchError(
        fmt::format("a block of {}x{}x{} threads: CUDA allows at most 1024 threads "
                    "(1024 in x and y, 64 in z)",
                    bx, by, bz));
  }
  if (g.grid[0] > 0x7fffffffu || g.grid[1] > 65535 || g.grid[2] > 65535) {
    throw LaunchError(
        fmt::format("a grid of {}x{}x{} blocks: CUDA allows at most 2^31-1 in x and "
                    "65535 in y and z",
                    g.grid[0], g.grid[1], g.grid[2]));
  }
  if (g.dynamic_shared_bytes > kCpuDynamicSharedCapacity) {
    throw UnsupportedOnBackend(fmt::format(
        "not supported on the CPU backend: {} bytes of dynamic shared memory (at most {})",
        g.dynamic_shared_bytes, kCpuDynamicSharedCapacity));
  }
}

}  // namespace

CpuKernel::CpuKernel(const KernelTemplate& tmpl, const Configuration& config,
                     const CpuBackendOptions& options)
    : entry_(tmpl.entry), label_(fmt::format("{} ({})", tmpl.name, config.to_string())),
      form_(entry_form(tmpl)) {
  // An instrumented object loaded into a process without AddressSanitizer's runtime ends the
  // process, so it is refused beforehand.
  if (options.sanitize && dlsym(RTLD_DEFAULT, "__asan_init") == nullptr) {
    throw std::runtime_error(
        "sanitized CPU kernels need AddressSanitizer's runtime loaded at start-up: run with "
        "LD_PRELOAD=$(c++ -print-file-name=libasan.so) (tiletune fuzz --sanitize does that "
        "itself)");
  }
  const auto build = [&] {
    try {
      return build_kernel_object(tmpl, config, options);
    } catch (const CompileError& e) {
      if (auto missing = missing_entry_in_build_log(e.log(), entry_)) {
        throw EntryContractError(label_, *missing);
      }
      throw;
    }
  };
  const KernelObject object = build();
  object_path_ = object.path;
  from_cache_ = object.from_cache;
  sanitized_ = options.sanitize;
  try {
    load();
  } catch (const std::runtime_error&) {
    if (!from_cache_) throw;
    // A cached object that does not load was damaged on disk (truncated, overwritten): it is
    // removed and built again, never trusted for ever.
    std::error_code error;
    fs::remove(object_path_, error);
    object_path_ = build().path;
    from_cache_ = false;
    load();
  }
  pool_ = WorkerPool::shared(options.workers);
}

void CpuKernel::load() {
  module_ = KernelModule{};
  int flags = RTLD_NOW | RTLD_LOCAL;
  loaded_path_ = object_path_;
  if (sanitized_) {
    // A sanitized object is never unloaded, so no later one takes its addresses: ASan's
    // symbolizer learns the loaded objects once and would name the old one's source lines. And
    // each load is a private copy (the loader shares a file that is loaded already), whose UBSan
    // checks have reported nothing yet.
    // The copy goes into a private directory of its own: a predictable name in $TMPDIR would let
    // anyone plant a symlink there, through which the copy overwrites a file of the user's.
    loaded_path_ = make_private_directory(fs::temp_directory_path(), "tiletune-kernel-") /
                   object_path_.filename();
    try {
      copy_to_new_file(object_path_, loaded_path_);
    } catch (const std::system_error& e) {
      forget_copy();
      throw std::runtime_error(
          fmt::format("cannot copy {} to {}: {}", object_path_.string(), loaded_path_.string(), e.what()));
    }
    flags |= RTLD_NODELETE;
  }
  module_.handle = dlopen(loaded_path_.c_str(), flags);
  if (module_.handle == nullptr) {
    const std::string why = dlerror();
    forget_copy();
    throw std::runtime_error("cannot load " + object_path_.string() + ": " + why);
  }
  const auto abi_version = symbol<unsigned int (*)()>(module_.handle, "tt_cpu_abi_version");
  const auto bind = symbol<void (*)(const tt_cpu_host*)>(module_.handle, "tt_cpu_bind");
  const auto entry_tensor_maps = symbol<int (*)()>(module_.handle, "tt_cpu_entry_tensor_maps");
  const auto entry_contract_args = symbol<int (*)()>(module_.handle, "tt_cpu_entry_contract_args");
  const auto entry_type = symbol<const char* (*)()>(module_.handle, "tt_cpu_entry_type");
  module_.enter = symbol<void (*)(const tt_cpu_thread*)>(module_.handle, "tt_cpu_enter");
  module_.entry = symbol<GemmEntry>(module_.handle, entry_.c_str());
  if (abi_version == nullptr || bind == nullptr || module_.enter == nullptr ||
      entry_tensor_maps == nullptr || entry_contract_args == nullptr || entry_type == nullptr ||
      abi_version() != TT_CPU_ABI_VERSION) {
    dlclose(module_.handle);
    module_.handle = nullptr;
    forget_copy();
    throw std::runtime_error(object_path_.string() +
                             " was not built against this tiletune's "
                             "cuda_on_cpu.h");
  }
  if (module_.entry == nullptr) {
    dlclose(module_.handle);
    module_.handle = nullptr;
    forget_copy();
    // The source declares it (the line appended after it compiled), under a C++ name.
    throw EntryContractError(
        label_, fmt::format("entry {} is not in the compiled code under that name (a C++ name, "
                            "mangled); declare it extern \"C\"",
                            entry_));
  }
  const bool is_contract = entry_tensor_maps() == int(form_.tensor_maps) &&
                           (entry_contract_args() != 0) == form_.contract_args;
  if (auto mismatch = entry_type_mismatch(entry_, is_contract,
                                          type_in_pretty_function(entry_type()), form_)) {
    dlclose(module_.handle);
    module_.handle = nullptr;
    forget_copy();
    throw EntryContractError(label_, *mismatch);
  }
  bind(&cpu_host_functions());
  module_.thread_local_bytes = thread_local_bytes(module_.handle);
}

// The private copy of a sanitized object and its directory, once it will not run again. Its
// mapping stays.
void CpuKernel::forget_copy() {
  if (loaded_path_ == object_path_) return;
  std::error_code ignored;
  fs::remove_all(loaded_path_.parent_path(), ignored);
}

void CpuKernel::reload() {
  if (module_.handle != nullptr) dlclose(module_.handle);
  module_.handle = nullptr;
  forget_copy();
  load();
}

CpuKernel::~CpuKernel() {
  if (module_.handle != nullptr) dlclose(module_.handle);
  forget_copy();
}

unsigned CpuKernel::workers() const { return pool_->workers(); }

void CpuKernel::launch(const LaunchGeometry& geometry, const float* a, const float* b, float* c,
                       int m, int n, int k, int lda, int ldb, int ldc,
                       std::uint64_t schedule_seed) const {
  launch(geometry, a, b, c, GemmProblem{{m, n, k}, lda, ldb, ldc}, schedule_seed);
}

void CpuKernel::launch(const LaunchGeometry& geometry, const float* a, const float* b, float* c,
                       const GemmProblem& problem, std::uint64_t schedule_seed,
                       const float* bias) const {
  if (module_.handle == nullptr) throw LaunchError(object_path_.string() + " is not loaded");
  if (!form_.contract_args && !problem.plain()) {
    throw std::logic_error("CpuKernel::launch: " + problem.to_string() +
                           " for an entry of plain problems only");
  }
  if (problem.batch > 1 && !geometry.tensor_maps.empty()) {
    throw std::logic_error("CpuKernel::launch: a batch through tensor maps");
  }
  check_geometry(geometry);
  // A kernel that may add into C computes alpha * op(A) * op(B) alone: into scratch where beta is
  // not 0, and the pass after it applies beta and the epilogue (epilogue_pass.h).
  const EpiloguePass pass = plan_epilogue_pass(geometry, problem);
  const GemmProblem& computed = pass.kernel_problem;
  std::vector<float> scratch(pass.scratch_floats);
  float* const result = c;  // the caller's C
  if (!scratch.empty()) c = scratch.data();
  const int m = int(problem.shape.m), n = int(problem.shape.n), k = int(problem.shape.k);
  int lda = int(problem.lda), ldb = int(problem.ldb);
  const int ldc = int(computed.ldc);
  if (geometry.zero_output) {
    for (std::int64_t entry = 0; entry < computed.batch; ++entry) {
      float* const matrix = c + entry * computed.stride_c;
      for (int row = 0; row < m; ++row) std::fill_n(matrix + std::size_t(row) * ldc, n, 0.0f);
    }
  }
  if (geometry.tensor_maps.size() != form_.tensor_maps) {
    throw std::logic_error("CpuKernel::launch: a geometry of another template");
  }
  // Operands the tensor maps cannot read in place are copied first, as the GPU launcher does
  // (operand_staging.h); without copy_unaligned the driver would refuse such a map.
  const OperandStaging plan = plan_operand_staging(geometry, std::uintptr_t(a), std::uintptr_t(b), problem);
  struct alignas(16) Row16 { float floats[4]; };  // staged rows start 16-byte aligned, as TMA needs
  std::vector<Row16> staging((plan.floats + 3) / 4);
  float* const staged = staging.empty() ? nullptr : staging.front().floats;
  for (const OperandCopy& copy : plan.copies) {
    const bool is_a = copy.operand == 'A';
    const float* const from = is_a ? a : b;
    float* const to = staged + copy.offset;
    for (std::int64_t row = 0; row < copy.rows; ++row) {
      std::copy_n(from + row * copy.from_ld, copy.width, to + row * copy.to_ld);
    }
    (is_a ? a : b) = to;
    (is_a ? lda : ldb) = int(copy.to_ld);
  }
  GemmArguments arguments{a, b, c, m, n, k, lda, ldb, ldc};
  arguments.takes_contract_args = form_.contract_args;
  for (const TensorMapBox& box : geometry.tensor_maps) {
    const bool is_a = box.operand == 'A';
    if (box.transposed != ((is_a ? problem.op_a : problem.op_b) == Op::t)) {
      throw std::logic_error(fmt::format("CpuKernel::launch: a map of {} as another build stores it, "
                                         "for {}", box.operand, problem.to_string()));
    }
    if (!rows_start_aligned(std::uintptr_t(is_a ? a : b), is_a ? lda : ldb)) {
      throw LaunchError(fmt::format(
          "tensor map of {}: {} floats apart from address {}: TMA needs 16-byte aligned rows (the "
          "driver refuses it; `copy_unaligned` has the launcher copy such an operand)",
          box.operand, is_a ? lda : ldb, static_cast<const void*>(is_a ? a : b)));
    }
    const tt_cpu_tensor_map map{
        is_a ? static_cast<const void*>(a) : static_cast<const void*>(b),
        {std::uint64_t(box.width(problem.shape)), std::uint64_t(box.rows(problem.shape))},
        std::uint64_t(is_a ? lda : ldb) * sizeof(float),
        {box.inner, box.outer},
        box.tf32,
        box.swizzle128};
    static_assert(sizeof(map) <= sizeof(tt_tensor_map));
    std::memcpy(&arguments.tensor_maps[arguments.tensor_map_count++], &map, sizeof(map));
  }
  // The batch runs in z, the template's grid z times over, in as many launches as the GPU's limit
  // on gridDim.z makes (gpu_kernel.cpp), so that a kernel sees the same grids here.
  const std::int64_t per_launch = batch_entries_per_launch(geometry.grid[2]);
  for (std::int64_t first = 0; first < problem.batch; first += per_launch) {
    const std::int64_t entries = std::min(per_launch, problem.batch - first);
    GemmArguments part = arguments;
    part.a = a + first * problem.stride_a;
    part.b = b + first * problem.stride_b;
    part.c = c + first * computed.stride_c;
    part.contract_args = contract_args(computed, pass.runs ? nullptr : bias, entries);
    std::array<std::uint32_t, 3> grid = geometry.grid;
    grid[2] = std::uint32_t(grid[2] * entries);
    const BlockLaunch launch{&module_, part, grid, geometry.block, schedule_seed,
                             sanitizer_report_count()};
    const std::uint64_t blocks = std::uint64_t(grid[0]) * grid[1] * grid[2];
    const BlockOrder order = block_order(schedule_seed, blocks);
    pool_->run(blocks, [&launch, order](BlockRunner& runner, std::uint64_t position) {
      runner.run(launch, order(position));
    });
  }
  if (pass.runs) apply_epilogue_pass(pass, problem, c, result, bias);
}

}  // namespace tiletune
