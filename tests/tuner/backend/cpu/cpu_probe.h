// A probe kernel (probe_kernel.h) built and run by the CPU backend.
#pragma once

#include <bit>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tests/tuner/backend/cpu/probe_kernel.h"
#include "tuner/backend/cpu/cpu_kernel.h"

namespace tiletune::testing_support {

// What C holds where a probe wrote nothing: a NaN no built-in gives.
inline constexpr std::uint32_t kUnwrittenBits = 0x7fc0beef;

class CpuProbe {
 public:
  CpuProbe(const std::string& name, const std::string& body, const std::string& includes = "")
      : template_(probe_template(name, body, includes)),
        kernel_(template_, template_.parse_configuration("P=0"), options()) {}

  // Runs the probe on `in` (A) with M = m; returns C's first `outputs` floats.
  std::vector<float> run(std::array<std::uint32_t, 3> threads, const std::vector<float>& in,
                         std::size_t outputs, std::uint64_t seed = 0, int m = 0,
                         std::uint32_t blocks = 1) const {
    std::vector<float> out(outputs, std::bit_cast<float>(kUnwrittenBits));
    const float unused = 0.0f;
    kernel_.launch(probe_geometry(threads, blocks), in.empty() ? &unused : in.data(), &unused,
                   out.data(), m, 1, 1, 1, 1, 1, seed);
    return out;
  }

  const KernelTemplate& kernel_template() const { return template_; }

 private:
  static CpuBackendOptions options() {
    CpuBackendOptions options;
    options.cache_dir = std::filesystem::path(TILETUNE_BINARY_DIR) / "cpu-backend-test-cache";
    options.workers = 2;
    return options;
  }

  KernelTemplate template_;
  CpuKernel kernel_;
};

inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

}  // namespace tiletune::testing_support
