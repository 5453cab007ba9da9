// What the CPU backend must know about a kernel's source before compiling it: whether it uses
// anything the CPU cannot emulate, and which arrays it declares as dynamic shared memory.
//
// The scan reads the preprocessor's output, not the raw file: comments are gone, only the
// branches of #if that this configuration compiles are left, and macros are expanded, so a PTX
// instruction hidden in a macro is found and one in a disabled #if branch is not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tiletune {

// `extern __shared__ T name[];`: tiletune defines the storage after the kernel's source, in the
// namespace the declaration's entity belongs to (the innermost one around it).
struct DynamicSharedArray {
  std::string type;  // "float", "unsigned char"
  std::string name;
  std::vector<std::string> scope;  // enclosing namespaces, outermost first; "" for an unnamed one
};

struct KernelSourceScan {
  std::optional<std::string> unsupported;          // "warp shuffle (__shfl_down_sync)"
  std::vector<DynamicSharedArray> dynamic_shared;  // each name once in its namespace
};

// Scans the lines of a preprocessed translation unit that came from the file named `origin` in
// its line markers (# 12 "origin"), which leaves out the force-included header and system headers.
KernelSourceScan scan_preprocessed_kernel(std::string_view preprocessed, std::string_view origin);

// The unsupported feature a failed compilation points at (a CUDA header the host compiler does
// not have), or nothing when the log shows an ordinary compile error.
std::optional<std::string> unsupported_in_compiler_log(std::string_view log);

}  // namespace tiletune
