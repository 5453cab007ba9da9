#include "tuner/backend/gpu/cubin_elf.h"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace tiletune {
namespace {

// st_other of a kernel's symbol: set on every __global__ function, not on device functions.
constexpr unsigned char kCudaEntry = 0x10;

// .nv.info records: a format byte, an attribute byte, then the value.
constexpr unsigned char kFormatNone = 0x01;  // no value: two bytes of padding
constexpr unsigned char kFormatHalf = 0x03;  // a 16-bit value
constexpr unsigned char kFormatSized = 0x04;  // a 16-bit size, then that many bytes
constexpr unsigned char kKernelParameterInfo = 0x17;  // EIATTR_KPARAM_INFO
// Its value: u32 index, u16 ordinal, u16 offset, u32 whose bits 18 and up are the size.
constexpr std::size_t kKernelParameterInfoBytes = 12;

// A copy of the T at `offset`, which must lie inside `bytes`.
template <class T>
T read_at(const std::vector<char>& bytes, std::size_t offset, const char* what) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) {
    throw CubinFormatError(fmt::format("the cubin ends inside its {}", what));
  }
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The NUL-terminated string at `offset` of the string table [table, table + size).
std::string string_at(const std::vector<char>& bytes, std::size_t table, std::size_t size,
                      std::size_t offset) {
  if (offset >= size) throw CubinFormatError("a name points outside its string table");
  const char* begin = bytes.data() + table + offset;
  const char* end = static_cast<const char*>(std::memchr(begin, '\0', size - offset));
  if (end == nullptr) throw CubinFormatError("a name runs past its string table");
  return std::string(begin, end);
}

}  // namespace

CubinElf::CubinElf(const std::vector<char>& bytes) : bytes_(bytes) {
  const auto header = read_at<Elf64_Ehdr>(bytes_, 0, "ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB) {
    throw CubinFormatError("not a 64-bit little-endian ELF file");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    throw CubinFormatError(fmt::format("section headers of {} bytes", header.e_shentsize));
  }
  std::vector<Elf64_Shdr> headers;
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    headers.push_back(
        read_at<Elf64_Shdr>(bytes_, header.e_shoff + i * sizeof(Elf64_Shdr), "section headers"));
    const Elf64_Shdr& h = headers.back();
    if (h.sh_type != SHT_NOBITS && (h.sh_offset > bytes_.size() || bytes_.size() - h.sh_offset < h.sh_size)) {
      throw CubinFormatError(fmt::format("section {} lies outside the file", i));
    }
  }
  if (header.e_shstrndx >= headers.size()) throw CubinFormatError("no section name table");
  const Elf64_Shdr& names = headers[header.e_shstrndx];
  for (const Elf64_Shdr& h : headers) {
    Section s;
    s.name = string_at(bytes_, names.sh_offset, names.sh_size, h.sh_name);
    s.offset = h.sh_offset;
    s.size = h.sh_type == SHT_NOBITS ? 0 : h.sh_size;
    sections_.push_back(std::move(s));
  }

  bool has_symbols = false;
  for (const Elf64_Shdr& table : headers) {
    if (table.sh_type != SHT_SYMTAB) continue;
    has_symbols = true;
    if (table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= headers.size()) {
      throw CubinFormatError("a symbol table of an unknown shape");
    }
    const Elf64_Shdr& strings = headers[table.sh_link];
    for (std::size_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size; at += sizeof(Elf64_Sym)) {
      const auto symbol = read_at<Elf64_Sym>(bytes_, table.sh_offset + at, "symbol table");
      if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || (symbol.st_other & kCudaEntry) == 0 ||
          symbol.st_shndx == SHN_UNDEF) {
        continue;
      }
      kernels_.push_back(string_at(bytes_, strings.sh_offset, strings.sh_size, symbol.st_name));
    }
  }
  // Without one, which kernels there are is unknown, not none.
  if (!has_symbols) throw CubinFormatError("no symbol table");
}

bool CubinElf::defines_kernel(const std::string& name) const {
  return std::find(kernels_.begin(), kernels_.end(), name) != kernels_.end();
}

const CubinElf::Section* CubinElf::section(const std::string& name) const {
  for (const Section& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::optional<std::vector<KernelParameter>> CubinElf::parameters(const std::string& kernel) const {
  const Section* info = section(".nv.info." + kernel);
  if (info == nullptr) return std::nullopt;
  std::map<std::uint16_t, KernelParameter> by_ordinal;
  std::size_t at = info->offset;
  const std::size_t end = info->offset + info->size;
  while (at < end) {
    if (end - at < 4) return std::nullopt;
    const auto format = static_cast<unsigned char>(bytes_[at]);
    const auto attribute = static_cast<unsigned char>(bytes_[at + 1]);
    const auto value = read_at<std::uint16_t>(bytes_, at + 2, ".nv.info");
    if (format == kFormatNone || format == kFormatHalf) {
      at += 4;
      continue;
    }
    if (format != kFormatSized || end - at - 4 < value) return std::nullopt;
    if (attribute == kKernelParameterInfo) {
      if (value != kKernelParameterInfoBytes) return std::nullopt;
      const auto ordinal = read_at<std::uint16_t>(bytes_, at + 8, ".nv.info");
      const auto offset = read_at<std::uint16_t>(bytes_, at + 10, ".nv.info");
      const auto packed = read_at<std::uint32_t>(bytes_, at + 12, ".nv.info");
      if (!by_ordinal.emplace(ordinal, KernelParameter{offset, packed >> 18}).second) {
        return std::nullopt;  // a parameter described twice
      }
    }
    at += 4 + value;
  }
  std::vector<KernelParameter> parameters;
  for (const auto& [ordinal, parameter] : by_ordinal) {
    if (ordinal != parameters.size()) return std::nullopt;  // a gap in the ordinals
    parameters.push_back(parameter);
  }
  return parameters;
}

}  // namespace tiletune
