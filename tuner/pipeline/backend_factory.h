// Opening a backend by name: the one place the pipeline and the command line turn "gpu" or
// "cpu" into a Backend, and the evaluator of a worker process into that backend with its own
// full-shape check.
#pragma once

#include <memory>
#include <optional>

#include "tuner/backend/backend.h"
#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/pipeline/evaluator.h"
#include "tuner/pipeline/shared_references.h"

namespace tiletune {

struct BackendChoice {
  Backend::Kind kind = Backend::Kind::gpu;
  // The GPU's device ordinal (-1: $TILETUNE_DEVICE, else 0), or the CPU worker's number among a
  // tune's (-1: 0).
  int ordinal = -1;
  // On the GPU: NVRTC threads (0: one per core), and the cubin cache kept on disk (none: what is
  // compiled stays in memory).
  unsigned compile_threads = 0;
  std::optional<CubinCache> cubin_cache;
  // On the CPU: how kernels are built and run.
  CpuBackendOptions cpu;
};

// The backend chosen; on the GPU throws GpuUnavailable without a driver or device.
std::unique_ptr<Backend> open_backend(BackendChoice choice);

// An evaluator on the chosen backend; `references` is where a tune's CPU workers share the full
// shapes' references (the GPU computes its own on the device).
std::unique_ptr<Evaluator> open_evaluator(BackendChoice choice, SharedReferences references);

}  // namespace tiletune
