// The contract every template's entry point keeps (README, "Writing a template"):
//
//   extern "C" __global__ void NAME(const float* A, const float* B, float* C,
//                                   int M, int N, int K, int lda, int ldb, int ldc)
//
// followed by one `const __grid_constant__ tt_tensor_map` for each tensor map the template
// declares (`// tiletune: tensor_map`, <tiletune/tensor_map.h>), in declaration order.
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
#include <optional>
#include <string>
#include <vector>

#include "tuner/backend/backend_errors.h"

namespace tiletune {

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
// "(const float* A, ..., int ldc)", with ", const __grid_constant__ tt_tensor_map map0" and so on.
std::string contract_parameters(std::size_t tensor_maps);

// Why an entry with these parameters breaks the contract of a template with `tensor_maps` tensor
// maps, in one line ("entry tiled_gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); the contract is
// 9: (const float* A, ...)"), or nothing.
std::optional<std::string> parameter_layout_mismatch(const std::string& entry,
                                                     const std::vector<KernelParameter>& layout,
                                                     std::size_t tensor_maps = 0);

// Why the entry is not among the kernels the code defines, in one line: a kernel whose mangled
// name is the entry's (declared without extern "C") is named, otherwise the kernels there are.
std::string missing_entry_line(const std::string& entry, const std::vector<std::string>& kernels);

// Why an entry of this C++ type (as the host compiler prints it) breaks the contract, or nothing
// when `is_contract`.
std::optional<std::string> entry_type_mismatch(const std::string& entry, bool is_contract,
                                               const std::string& type,
                                               std::size_t tensor_maps = 0);

}  // namespace tiletune
