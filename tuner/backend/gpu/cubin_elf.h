// What a cubin (an ELF file, as NVRTC writes it) says about its kernels: which entry points it
// defines, and the device-side layout of each one's parameters.
//
// Kernels are the function symbols marked STO_CUDA_ENTRY. A kernel's parameters are described in
// its section .nv.info.<name>: a list of records (format byte, attribute byte, then two bytes of
// padding, a 16-bit value, or a 16-bit size and that many bytes), of which each
// EIATTR_KPARAM_INFO gives one parameter's ordinal, offset and size. NVIDIA does not document the
// format; tests/tuner/backend/entry_contract_test.cpp checks this reading against NVRTC's output.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/backend/entry_contract.h"  // KernelParameter

namespace tiletune {

// Not a 64-bit little-endian ELF file, or one whose headers point outside it.
class CubinFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CubinElf {
 public:
  // Reads the section headers and the symbol table. Throws CubinFormatError. The bytes are
  // copied: the object does not refer to them afterwards.
  explicit CubinElf(const std::vector<char>& bytes);

  // The names of the kernels (__global__ functions) the cubin defines, in symbol-table order.
  const std::vector<std::string>& kernels() const { return kernels_; }
  bool defines_kernel(const std::string& name) const;

  // The kernel's parameters in declaration order, from .nv.info.<name>; none when the section is
  // missing or holds a record this reader cannot size or a parameter list with gaps.
  std::optional<std::vector<KernelParameter>> parameters(const std::string& kernel) const;

 private:
  struct Section {
    std::string name;
    std::size_t offset = 0, size = 0;
  };
  const Section* section(const std::string& name) const;

  std::vector<char> bytes_;
  std::vector<Section> sections_;
  std::vector<std::string> kernels_;
};

}  // namespace tiletune
