// The launcher's operand copies into rows TMA can read (operand_staging.h), on the GPU.
//
// The driver's 2D copy moves rows whose pitch is not a multiple of 16 bytes slowly: on an H200,
// tf32_wgmma_tma took 33.1 us at 257x4099x513 (both operands copied) against 17.2 us at
// 257x4100x516 (neither). A kernel of ours copies them at the memory's speed instead: each thread
// one 16-byte word of a destination row, read as four floats from wherever the row starts. NVRTC
// compiles it once per process and architecture; where it cannot (a machine with the driver and
// no toolkit, serving from a bundle's cubins) the driver's copy does the work, as correctly.
#pragma once

#include <cstddef>

#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/own_kernel.h"
#include "tuner/backend/operand_staging.h"

namespace tiletune {

// The copy kernel's CUDA source (entry tiletune_copy_rows), for tests that compile it.
extern const char* const kRowCopySource;

// Copies in one CUDA context: the kernel's module is loaded into the context current at the first
// copy and used on every later one, so one RowCopier belongs to one context (GpuKernel's).
class RowCopier {
 public:
  // Enqueues the copy of `copy.rows` rows from `from` (copy.from_ld floats apart) to `to`
  // (copy.to_ld apart, 16-byte aligned) on `stream`; the floats of a destination row past its width
  // are zeros from the kernel and left as they were by the driver's copy (nothing reads them).
  // `max_pitch` is the driver's largest 2D pitch. Throws CudaError when a launch is refused.
  void copy(const OperandCopy& copy, CUdeviceptr from, CUdeviceptr to, std::size_t max_pitch,
            CUstream stream);

  // Whether the kernel copies (false: the driver's copy), once a copy has decided it.
  bool uses_kernel() { return kernel_.function() != nullptr; }

 private:
  OwnKernel kernel_{kRowCopySource, "tiletune_copy_rows.cu", "tiletune_copy_rows", "the operand copy kernel"};
};

}  // namespace tiletune
