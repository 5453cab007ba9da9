// Probe kernels: a few statements run by every thread of one block, reading their inputs from A
// and writing their results to C (the entry contract's pointers), so that a test can see what a
// built-in gives each thread. In the body, `t` is the linear thread index and `lane` its lane.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/core/kernel_template.h"

namespace tiletune::testing_support {

// The template around `body`; `includes` goes before the entry (e.g. "#include
// <tiletune/tensor_core.h>"). The body's first line is line kProbeBodyLine of the template.
inline KernelTemplate probe_template(const std::string& name, const std::string& body,
                                     const std::string& includes = "") {
  return parse_template("// tiletune: entry probe\n"
                        "// tiletune: param P 0\n"
                        "// tiletune: block 32\n"
                        "// tiletune: grid 1\n" +
                            includes +
                            "\n"
                            "extern \"C\" __global__ void probe(const float* A, const float* B, "
                            "float* C, int M, int N,\n"
                            "    int K, int lda, int ldb, int ldc) {\n"
                            "  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y "
                            "* threadIdx.z);\n"
                            "  const int lane = t % 32;\n"
                            "  (void)B; (void)N; (void)K; (void)lda; (void)ldb; (void)ldc;\n" +
                            body + "\n}\n",
                        name + ".cu");
}

inline constexpr int kProbeBodyLine = 11;

// The launch of one probe: `blocks` blocks (x) of `threads` threads, M passed as `m`.
inline LaunchGeometry probe_geometry(std::array<std::uint32_t, 3> threads,
                                     std::uint32_t blocks = 1) {
  LaunchGeometry geometry;
  geometry.grid = {blocks, 1, 1};
  geometry.block = threads;
  return geometry;
}

}  // namespace tiletune::testing_support
