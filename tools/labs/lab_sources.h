// The CUDA sources the labs compile, built into the binary (tools/labs/CMakeLists.txt) so that an
// installed tiletune runs the labs from any folder, without its source tree.
#pragma once

#include <string_view>

namespace tiletune::labs {

std::string_view bank_conflicts_source();  // tools/labs/bank_conflicts.cu
std::string_view naive_template_source();  // kernels_src/naive.cu
std::string_view tiled_template_source();  // kernels_src/tiled.cu

}  // namespace tiletune::labs
