#include "tuner/entry_contract.h"

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

std::optional<std::string> parameter_layout_mismatch(const std::string& entry,
                                                     const std::vector<KernelParameter>& layout) {
  const std::vector<KernelParameter>& contract = contract_parameter_layout();
  if (layout == contract) return std::nullopt;
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
    bool same_sizes = layout.size() == contract.size();
    for (std::size_t i = 0; same_sizes && i < layout.size(); ++i) {
      same_sizes = layout[i].size == contract[i].size;
    }
    if (same_sizes) takes += fmt::format(" at offsets {}", fmt::join(offsets, ", "));
    takes += ")";
  }
  return fmt::format("entry {} {}; the contract is {}: {}", entry, takes, contract.size(),
                     kEntryContractParameters);
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
                                               const std::string& type) {
  if (is_contract) return std::nullopt;
  return fmt::format("entry {} is {}; the contract is void{}", entry, type,
                     kEntryContractParameters);
}

void check_compiled_entry(const CompiledKernelImage& image, const std::string& entry,
                          const std::string& what) {
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
    if (auto mismatch = parameter_layout_mismatch(entry, *layout)) {
      throw EntryContractError(what, *mismatch);
    }
  }
}

}  // namespace tiletune
