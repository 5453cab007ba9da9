// tiletune's device library: the headers a kernel template includes as <tiletune/NAME.h>
// (kernels_src/include/tiletune/: tensor cores, asynchronous copies), each with a GPU side (inline
// PTX) and a CPU-backend side (plain C++ over cuda_on_cpu.h).
//
// Their text is embedded in the binary, and put into a template's text wherever it includes one,
// when the template is parsed: like headers beside it (local_includes.h), a changed library header
// is then a new version of the template for every cache and the database, NVRTC and the host
// compiler need no include path, and a recorded template rebuilds as it was tuned.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

struct DeviceLibraryHeader {
  std::string_view name;  // as included: "tiletune/tensor_core.h"
  std::string_view text;
};

// Every header of the library, by name.
const std::vector<DeviceLibraryHeader>& device_library_headers();

// The text of the header included as <name>, if the library has it.
std::optional<std::string_view> device_library_header(std::string_view name);

// `source` with every `#include <tiletune/NAME.h>` line of a library header replaced by that
// header's text, recursively, each header once (its `#pragma once` left out), and a `#line`
// directive after it that keeps the source's own line numbers. Other includes are left alone; a
// source without library includes comes back unchanged, byte for byte. Throws std::runtime_error
// for an include of <tiletune/...> that the library does not have, naming the ones it has.
std::string inline_device_library(const std::string& source);

}  // namespace tiletune
