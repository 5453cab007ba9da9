// The contract every template's entry point keeps (README, "Writing a template"):
//
//   extern "C" __global__ void NAME(const float* A, const float* B, float* C,
//                                   int M, int N, int K, int lda, int ldb, int ldc)
//
// followed by one `const __grid_constant__ tt_tensor_map` for each operand it declares a tensor
// map of (`// tiletune: tensor_map`, <tiletune/tensor_map.h>), in declaration order, then `const
// tt_gemm_args args` where the template declares a part of the BLAS contract (`// tiletune:
// supports`, <tiletune/gemm_contract.h>). The args come last so that the maps keep their offsets in
// the parameter space, and a template its plain build's instructions, when it comes to serve the
// contract.
//
// tiletune launches the entry with exactly those arguments, so an entry that takes others
// would read garbage and be reported as wrong results. It is refused before any case instead, in
// one line naming the entry's parameters and the contract's:
// - after NVRTC: the entry must be a kernel of the cubin, and where the cubin's parameter
//   records can be read, their layout must be the contract's (check_compiled_entry);
// - on the GPU, after loading: the layout the driver reports (gpu_kernel.cpp);
// - on the CPU backend: the entry's C++ type, as the host compiler sees it (cpu_kernel.cpp).
// A layout tells sizes and offsets only: (float* C, const float* A, ...) or unsigned sizes pass
// it; the CPU backend's check of the type catches those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/backend/backend_errors.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// What follows the nine parameters every entry takes.
struct EntryForm {
  bool contract_args = false;   // a tt_gemm_args (56 bytes), after the maps
  std::size_t tensor_maps = 0;  // this many tensor maps (128 bytes each)
  friend bool operator==(const EntryForm&, const EntryForm&) = default;
};
// The form of a template's entry, from its declarations.
EntryForm entry_form(const KernelTemplate& tmpl);

// sizeof(tt_gemm_args) and its alignment in the parameter space.
inline constexpr std::size_t kContractArgsBytes = 56;

// tt_gemm_args (<tiletune/gemm_contract.h>) as the launchers fill it in: the same layout.
struct ContractArgs {
  float alpha = 1, beta = 0;
  const float* bias = nullptr;  // a device address on the GPU
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  std::int32_t batch = 1, op_a = 0, op_b = 0, epilogue = 0;
};
static_assert(sizeof(ContractArgs) == kContractArgsBytes && alignof(ContractArgs) == 8);

// How many entries of a batch one launch covers: the template's grid z times the entries must stay
// within gridDim.z's limit (65535), so a long batch takes several launches, on the GPU and, alike,
// on the CPU backend.
std::int64_t batch_entries_per_launch(std::uint32_t grid_z);

// The arguments of one launch of the problem over `batch` of its entries (a launch covers at most
// 65535 / grid z of them), with the bias the epilogue reads.
ContractArgs contract_args(const GemmProblem& problem, const float* bias, std::int64_t batch);

// One parameter as the kernel receives it: its offset in the parameter space and its size.
struct KernelParameter {
  std::size_t offset = 0;
  std::size_t size = 0;
  bool operator==(const KernelParameter&) const = default;
};

// "(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, int ldc)"
extern const char* const kEntryContractParameters;

// An entry that breaks the contract: a compile error of its configuration, whose log is the one
// line that says how.
class EntryContractError : public CompileError {
 public:
  explicit EntryContractError(const std::string& line) : CompileError(line, line) {}
  // what: "tiled [TILE=16]"; line: what is wrong with its entry.
  EntryContractError(const std::string& what, const std::string& line)
      : CompileError(what + ": " + line, line) {}
};

// Three 8-byte pointers at offsets 0, 8, 16, then six 4-byte ints at 24 to 44.
const std::vector<KernelParameter>& contract_parameter_layout();
// "(const float* A, ..., int ldc)", with ", const tt_gemm_args args" and
// ", const __grid_constant__ tt_tensor_map map0" and so on as the form has them.
std::string contract_parameters(EntryForm form);

// Why an entry with these parameters breaks the contract of a template whose entry has this form,
// in one line ("entry tiled_gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); the contract is
// 9: (const float* A, ...)"), or nothing.
std::optional<std::string> parameter_layout_mismatch(const std::string& entry,
                                                     const std::vector<KernelParameter>& layout,
                                                     EntryForm form = {});

// Why the entry is not among the kernels the code defines, in one line: a kernel whose mangled
// name is the entry's (declared without extern "C") is named, otherwise the kernels there are.
std::string missing_entry_line(const std::string& entry, const std::vector<std::string>& kernels);

// Why an entry of this C++ type (as the host compiler prints it) breaks the contract, or nothing
// when `is_contract`.
std::optional<std::string> entry_type_mismatch(const std::string& entry, bool is_contract,
                                               const std::string& type, EntryForm form = {});

}  // namespace tiletune
