// One compiled configuration loaded on the GPU, launched as the SGEMM entry signature
// (A, B, C, M, N, K, lda, ldb, ldc), followed by the tensor maps its template declares.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/backend/entry_contract.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/epilogue_pass_kernel.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/backend/gpu/row_copy.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// Why a launch of this geometry cannot run on the device (threads, block or grid dimensions,
// shared memory, registers), or nothing when it can.
std::optional<std::string> exceeds_device_limits(const LaunchGeometry& geometry,
                                                 const PtxasReport& report,
                                                 const DeviceProperties& device);

// The tensor map of one operand of a launch as the driver encodes it: A is K wide, M tall, lda
// apart; B is N wide, K tall, ldb apart; outside the operand a copy reads zeros. Throws CudaError
// when the driver refuses it (an operand not 16-byte aligned), GpuUnavailable when the driver
// cannot encode tensor maps (older than CUDA 12.0).
CUtensorMap encode_tensor_map(const TensorMapBox& box, CUdeviceptr a, CUdeviceptr b,
                              const GemmProblem& problem);

// Device memory for the operand copies of launches (operand_staging.h): one buffer per stream,
// which the stream's launches share (the stream orders them), grown when a larger problem comes.
class StagingBuffers {
 public:
  struct Staging {
    CUdeviceptr buffer;     // at least the bytes asked for
    std::size_t max_pitch;  // the device's largest pitch of a 2D copy, asked once
  };
  // At least `bytes` of staging for launches on `stream`. Thread-safe.
  Staging reserve(CUstream stream, std::size_t bytes);
  // What copies the operands into the staging (in this kernel's context). Thread-safe.
  RowCopier& copier() { return copier_; }
  // What applies beta and the epilogue after a kernel that adds into C (epilogue_pass.h).
  EpiloguePassKernel& epilogue_pass() { return epilogue_pass_; }

 private:
  std::mutex mutex_;
  RowCopier copier_;
  EpiloguePassKernel epilogue_pass_;
  std::vector<std::pair<CUstream, DeviceBuffer>> buffers_;
  std::size_t max_pitch_ = 0;  // 0 until the first reserve
};

// Enqueues the launch of a contract entry of this form on `stream` (0: the default stream): clears
// C's M x N elements (of every entry of a batch) when the geometry asks for it, copies the operands
// its tensor maps cannot read in place (operand_staging.h) into `staging`, encodes the maps for
// the operands the kernel then reads, and launches with the nine contract arguments, the problem's
// tt_gemm_args (with `bias`) where the form takes one, and the maps. A batch runs in grid z, the
// geometry's z times the entries, in as many launches as gridDim.z's limit needs. Throws CudaError
// when a copy, an encoding or the launch is rejected, GpuUnavailable when the driver cannot encode
// tensor maps; errors inside the kernel surface at the next synchronisation.
void enqueue_gemm_launch(CUfunction function, const LaunchGeometry& geometry, CUdeviceptr a,
                         CUdeviceptr b, CUdeviceptr c, const GemmProblem& problem, CUstream stream,
                         StagingBuffers& staging, EntryForm form, CUdeviceptr bias = 0);

class GpuKernel {
 public:
  // Loads the cubin and finds the entry point, whose parameters must be the contract's of this form
  // (entry_contract.h: entry_form(tmpl)) as far as the driver reports them (CUDA 12.4 and later).
  // Throws EntryContractError (a CompileError) for an entry that is missing or breaks the
  // contract, CudaError for the rest.
  GpuKernel(const CompiledKernelImage& image, const std::string& entry, EntryForm form);
  ~GpuKernel();
  GpuKernel(const GpuKernel&) = delete;
  GpuKernel& operator=(const GpuKernel&) = delete;

  // Enqueues one launch on `stream` as enqueue_gemm_launch does, its operand copies staged in
  // this kernel's buffers, after raising the entry's shared memory limit where it needs more.
  void launch(const LaunchGeometry& geometry, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
              const GemmProblem& problem, CUstream stream = nullptr, CUdeviceptr bias = 0) const;

  // Raises the entry's dynamic shared memory limit to `bytes` when it is lower (above 48 KiB a
  // kernel must opt in). Thread-safe; launch calls it, the runtime library ahead of its launches.
  void reserve_dynamic_shared(std::uint32_t bytes) const;

  // The loaded entry point.
  CUfunction function() const { return function_; }

  // Registers and static shared memory as the loaded function reports them, spills from the
  // compile log where ptxas printed one (a cached NVRTC compile may print none).
  PtxasReport resource_usage(const PtxasReport& from_log) const;

 private:
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  EntryForm form_;
  // Only ever raised, under limit_mutex_; read by launches on any thread (the runtime library).
  mutable std::atomic<int> dynamic_shared_limit_ = 48 * 1024;
  mutable std::mutex limit_mutex_;
  mutable StagingBuffers staging_;
};

}  // namespace tiletune
