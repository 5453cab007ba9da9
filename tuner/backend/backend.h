// Where configurations run: a GPU (each configuration compiled by NVRTC and loaded by the driver,
// gpu/gpu_backend.h) or the CPU (the same source built by the host compiler, each CUDA thread a
// fiber, cpu/cpu_backend.h). The tuner's evaluator and the fuzzer open one by name
// (tuner/pipeline/backend_factory.h) and run a configuration on it through an executor made for
// it (fuzz/make_executor.h); nothing above this interface asks which backend it has but those two
// factories.
#pragma once

#include <string>
#include <vector>

#include "tuner/backend/device_properties.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

class Backend {
 public:
  enum class Kind { gpu, cpu };

  virtual ~Backend() = default;

  virtual Kind kind() const = 0;

  // The device's identity and limits, as configurations are pruned against and recorded under
  // ("CPU backend" on the CPU, so that its times are never taken for a GPU's).
  virtual const DeviceProperties& device() const = 0;

  // Where configurations run, for a reader: "NVIDIA H200", "the CPU".
  virtual std::string where() const = 0;

  // What readying one configuration is called in progress lines: "load" (a compiled cubin) on
  // the GPU, "build" (the host compiler) on the CPU.
  virtual std::string load_stage() const = 0;

  // Readies the configurations ahead where that pays: on the GPU, NVRTC compiles them in
  // parallel; the CPU builds each when its executor is made. Returns the seconds it took.
  // Throws only for the environment (NVRTC missing): a configuration that does not compile is
  // reported when its executor is made.
  virtual double prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) = 0;
};

// "gpu" or "cpu".
const char* backend_kind_name(Backend::Kind kind);

// The backend named "gpu" or "cpu"; throws std::invalid_argument naming the choices otherwise.
Backend::Kind parse_backend_kind(const std::string& name);

}  // namespace tiletune
