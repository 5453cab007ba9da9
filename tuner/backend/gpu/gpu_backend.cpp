#include "tuner/backend/gpu/gpu_backend.h"

#include <chrono>

namespace tiletune {

GpuBackend::GpuBackend(int ordinal, unsigned compile_threads, std::optional<CubinCache> cache)
    : device_(ordinal), compiled_(device_.properties().arch(), compile_threads, std::move(cache)) {}

double GpuBackend::prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) {
  const auto start = std::chrono::steady_clock::now();
  compiled_.prepare(tmpl, configs);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tiletune
