#include "tuner/backend/entry_contract.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tiletune {

const char* const kEntryContractParameters =
    "(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, int ldc)";

const std::vector<KernelParameter>& contract_parameter_layout() {
  static const std::vector<KernelParameter> layout = {{0, 8},  {8, 8},  {16, 8},
                                                      {24, 4}, {28, 4}, {32, 4},
                                                      {36, 4}, {40, 4}, {44, 4}};
  return layout;
}

EntryForm entry_form(const KernelTemplate& tmpl) {
  return {tmpl.supports.any(), tmpl.tensor_map_parameters()};
}

std::int64_t batch_entries_per_launch(std::uint32_t grid_z) {
  constexpr std::int64_t kMaxGridZ = 65535;
  return std::max<std::int64_t>(1, kMaxGridZ / std::max<std::uint32_t>(grid_z, 1));
}

ContractArgs contract_args(const GemmProblem& problem, const float* bias, std::int64_t batch) {
  return {problem.alpha,
          problem.beta,
          bias,
          problem.stride_a,
          problem.stride_b,
          problem.stride_c,
          std::int32_t(batch),
          problem.op_a == Op::t ? 1 : 0,
          problem.op_b == Op::t ? 1 : 0,
          std::int32_t(problem.epilogue)};
}

namespace {

std::size_t parameter_count(EntryForm form) {
  return contract_parameter_layout().size() + (form.contract_args ? 1 : 0) + form.tensor_maps;
}

// Whether extra parameter i (after the nine) is the tt_gemm_args: it follows the tensor maps.
bool is_args(EntryForm form, std::size_t i) {
  return form.contract_args && i == form.tensor_maps;
}

// The size of extra parameter i.
std::size_t extra_size(EntryForm form, std::size_t i) {
  return is_args(form, i) ? kContractArgsBytes : 128;
}

// Whether the layout is the contract's followed by the form's extras: tensor maps of 128 bytes
// each, in order, then a tt_gemm_args (8-byte aligned; right after the ints, offset 48, where there
// is no map). The maps' offsets are the compiler's: it aligns a tt_tensor_map to 64 bytes of the
// parameter bank, whose base is no multiple of 64 (sm_90 puts the first at 48).
bool is_contract_layout(const std::vector<KernelParameter>& layout, EntryForm form) {
  const std::vector<KernelParameter>& contract = contract_parameter_layout();
  if (layout.size() != parameter_count(form)) return false;
  if (!std::equal(contract.begin(), contract.end(), layout.begin())) return false;
  std::size_t end = contract.back().offset + contract.back().size;
  for (std::size_t i = contract.size(); i < layout.size(); ++i) {
    const std::size_t extra = i - contract.size();
    const bool args = is_args(form, extra);
    if (layout[i].size != extra_size(form, extra) || layout[i].offset < end ||
        layout[i].offset % (args ? 8 : 16) != 0) {
      return false;
    }
    end = layout[i].offset + layout[i].size;
  }
  return true;
}

}  // namespace

std::string contract_parameters(EntryForm form) {
  std::string text = kEntryContractParameters;
  if (!form.contract_args && form.tensor_maps == 0) return text;
  text.pop_back();
  for (std::size_t i = 0; i < form.tensor_maps; ++i) {
    text += fmt::format(", const __grid_constant__ tt_tensor_map map{}", i);
  }
  if (form.contract_args) text += ", const tt_gemm_args args";
  return text + ")";
}

std::optional<std::string> parameter_layout_mismatch(const std::string& entry,
                                                     const std::vector<KernelParameter>& layout,
                                                     EntryForm form) {
  if (is_contract_layout(layout, form)) return std::nullopt;
  const std::vector<KernelParameter>& contract = contract_parameter_layout();
  const std::size_t contract_size = parameter_count(form);
  std::vector<std::size_t> sizes, offsets;
  for (const KernelParameter& p : layout) {
    sizes.push_back(p.size);
    offsets.push_back(p.offset);
  }
  std::string takes;
  if (layout.empty()) {
    takes = "takes no parameters";
  } else {
    takes = fmt::format("takes {} parameter{} ({} bytes", layout.size(),
                        layout.size() == 1 ? "" : "s", fmt::join(sizes, ", "));
    // Same sizes in other places: only an alignment the contract does not have (__align__).
    bool same_sizes = layout.size() == contract_size;
    for (std::size_t i = 0; same_sizes && i < layout.size(); ++i) {
      same_sizes = layout[i].size ==
                   (i < contract.size() ? contract[i].size : extra_size(form, i - contract.size()));
    }
    if (same_sizes) takes += fmt::format(" at offsets {}", fmt::join(offsets, ", "));
    takes += ")";
  }
  return fmt::format("entry {} {}; the contract is {}: {}", entry, takes, contract_size,
                     contract_parameters(form));
}

std::string missing_entry_line(const std::string& entry, const std::vector<std::string>& kernels) {
  // The Itanium C++ ABI's name of a function `entry` at namespace scope: _Z<length><entry><types>.
  const std::string mangled_prefix = fmt::format("_Z{}{}", entry.size(), entry);
  for (const std::string& kernel : kernels) {
    if (kernel.starts_with(mangled_prefix)) {
      return fmt::format("entry {} is not in the compiled code: it is compiled as {}, a C++ name; "
                         "declare it extern \"C\"",
                         entry, kernel);
    }
  }
  if (kernels.empty()) {
    return fmt::format("entry {} is not in the compiled code, which has no __global__ function",
                       entry);
  }
  return fmt::format("entry {} is not in the compiled code, whose __global__ functions are {}",
                     entry, fmt::join(kernels, ", "));
}

std::optional<std::string> entry_type_mismatch(const std::string& entry, bool is_contract,
                                               const std::string& type, EntryForm form) {
  if (is_contract) return std::nullopt;
  return fmt::format("entry {} is {}; the contract is void{}", entry, type,
                     contract_parameters(form));
}

}  // namespace tiletune
