#include "tuner/pipeline/backend_factory.h"

#include <algorithm>

#include "tuner/backend/cpu/cpu_backend.h"
#include "tuner/backend/gpu/gpu_backend.h"
#include "tuner/pipeline/cpu_full_shape_check.h"
#include "tuner/pipeline/gpu_full_shape_check.h"

namespace tiletune {

std::unique_ptr<Backend> open_backend(BackendChoice choice) {
  if (choice.kind == Backend::Kind::cpu) {
    return std::make_unique<CpuBackend>(std::move(choice.cpu), std::max(choice.ordinal, 0));
  }
  return std::make_unique<GpuBackend>(choice.ordinal >= 0 ? choice.ordinal : GpuDevice::default_ordinal(),
                                      choice.compile_threads, std::move(choice.cubin_cache));
}

std::unique_ptr<Evaluator> open_evaluator(BackendChoice choice, SharedReferences references) {
  std::unique_ptr<Backend> backend = open_backend(std::move(choice));
  std::unique_ptr<FullShapeCheck> full_shape;
  if (backend->kind() == Backend::Kind::cpu) {
    full_shape = std::make_unique<CpuFullShapeCheck>(std::move(references));
  } else {
    full_shape = std::make_unique<GpuFullShapeCheck>(static_cast<GpuBackend&>(*backend).gpu());
  }
  return std::make_unique<Evaluator>(std::move(backend), std::move(full_shape));
}

}  // namespace tiletune
