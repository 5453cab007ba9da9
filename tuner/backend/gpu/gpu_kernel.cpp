#include "tuner/backend/gpu/gpu_kernel.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/backend/entry_contract.h"
#include "tuner/backend/epilogue_pass.h"
#include "tuner/backend/gpu/cubin_elf.h"
#include "tuner/backend/operand_staging.h"

namespace tiletune {

std::optional<std::string> exceeds_device_limits(const LaunchGeometry& geometry,
                                                 const PtxasReport& report,
                                                 const DeviceProperties& device) {
  const std::uint64_t threads = geometry.threads_per_block();
  if (threads > std::uint64_t(device.max_threads_per_block)) {
    return fmt::format("{} threads per block exceed the device's {}", threads,
                       device.max_threads_per_block);
  }
  static const char axes[] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; ++i) {
    if (geometry.block[i] > std::uint32_t(device.max_block_dim[i])) {
      return fmt::format("block {} = {} exceeds the device's {}", axes[i], geometry.block[i],
                         device.max_block_dim[i]);
    }
    if (geometry.grid[i] > std::uint32_t(device.max_grid_dim[i])) {
      return fmt::format("grid {} = {} exceeds the device's {}", axes[i], geometry.grid[i],
                         device.max_grid_dim[i]);
    }
  }
  const std::uint64_t shared = std::uint64_t(report.static_shared_bytes) + geometry.dynamic_shared_bytes;
  if (shared > std::uint64_t(device.max_shared_bytes_per_block_optin)) {
    return fmt::format("{} bytes of shared memory per block exceed the device's {}", shared,
                       device.max_shared_bytes_per_block_optin);
  }
  if (std::uint64_t(report.registers) * threads > std::uint64_t(device.max_registers_per_block)) {
    return fmt::format("{} registers x {} threads exceed the device's {} registers per block",
                       report.registers, threads, device.max_registers_per_block);
  }
  return std::nullopt;
}

namespace {

// How many parameters to ask the driver about: as many as the cubin records for the entry, else
// as many as the contract has. Never more: a question past the last parameter is an API error
// (CUDA_ERROR_INVALID_VALUE), which compute-sanitizer's memcheck reports against every
// configuration. An entry that takes more than the contract's and whose cubin cannot be read
// passes this check; the one after NVRTC (check_compiled_entry) reads that cubin too.
std::size_t parameters_to_ask(const CompiledKernelImage& image, const std::string& entry,
                              EntryForm form) {
  try {
    if (auto parameters = CubinElf(image.cubin).parameters(entry)) return parameters->size();
  } catch (const CubinFormatError&) {
  }
  return contract_parameter_layout().size() + (form.contract_args ? 1 : 0) + form.tensor_maps;
}

// The loaded entry's parameters as the driver lays them out; none where the driver cannot tell
// (one older than CUDA 12.4 lacks cuFuncGetParamInfo). Stops at the first index the driver
// refuses: the entry takes fewer.
std::optional<std::vector<KernelParameter>> driver_parameter_layout(CUfunction function,
                                                                    std::size_t count) {
  const auto get_parameter = cuda_driver().cuFuncGetParamInfo;
  if (get_parameter == nullptr) return std::nullopt;
  std::vector<KernelParameter> layout;
  for (std::size_t index = 0; index < count; ++index) {
    std::size_t offset = 0, size = 0;
    const CUresult result = get_parameter(function, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (result != CUDA_SUCCESS) return std::nullopt;
    layout.push_back({offset, size});
  }
  // No parameter at all is also how a driver that cannot read the layout would answer; an entry
  // that truly takes none was refused after NVRTC, from the cubin (check_compiled_entry).
  if (layout.empty()) return std::nullopt;
  return layout;
}

// The kernels the cubin defines; none when it cannot be read.
std::optional<std::vector<std::string>> kernels_in(const CompiledKernelImage& image) {
  try {
    return CubinElf(image.cubin).kernels();
  } catch (const CubinFormatError&) {
    return std::nullopt;
  }
}

}  // namespace

CUtensorMap encode_tensor_map(const TensorMapBox& box, CUdeviceptr a, CUdeviceptr b,
                              const GemmProblem& problem) {
  const auto encode = cuda_driver().cuTensorMapEncodeTiled;
  if (encode == nullptr) {
    throw GpuUnavailable("the CUDA driver cannot encode tensor maps (cuTensorMapEncodeTiled, CUDA 12.0)");
  }
  const bool is_a = box.operand == 'A';
  if (box.transposed != ((is_a ? problem.op_a : problem.op_b) == Op::t)) {
    throw std::logic_error("encode_tensor_map: a map of " + std::string(1, box.operand) +
                           " as another build stores it, for " + problem.to_string());
  }
  // The matrix as stored: B N x K where the build transposes it (op_b=t), else K x N; A alike.
  const cuuint64_t dims[2] = {cuuint64_t(box.width(problem.shape)),
                              cuuint64_t(box.rows(problem.shape))};
  const cuuint64_t row_bytes[1] = {cuuint64_t(is_a ? problem.lda : problem.ldb) * sizeof(float)};
  const cuuint32_t extents[2] = {box.inner, box.outer}, element_strides[2] = {1, 1};
  CUtensorMap map;
  check_cuda(encode(&map, box.tf32 ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                    2, reinterpret_cast<void*>(is_a ? a : b), dims, row_bytes, extents,
                    element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    box.swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             is_a ? "cuTensorMapEncodeTiled(A)" : "cuTensorMapEncodeTiled(B)");
  return map;
}

GpuKernel::GpuKernel(const CompiledKernelImage& image, const std::string& entry, EntryForm form)
    : form_(form) {
  const CudaDriver& cu = cuda_driver();
  check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData");
  const auto unload = [&] {
    cu.cuModuleUnload(module_);
    module_ = nullptr;
  };
  const CUresult found = cu.cuModuleGetFunction(&function_, module_, entry.c_str());
  if (found != CUDA_SUCCESS) {
    unload();
    if (found == CUDA_ERROR_NOT_FOUND) {
      if (auto kernels = kernels_in(image)) throw EntryContractError(missing_entry_line(entry, *kernels));
    }
    check_cuda(found, fmt::format("cuModuleGetFunction('{}')", entry).c_str());
  }
  if (const auto layout =
          driver_parameter_layout(function_, parameters_to_ask(image, entry, form))) {
    if (auto mismatch = parameter_layout_mismatch(entry, *layout, form)) {
      unload();
      throw EntryContractError(*mismatch);
    }
  }
}

GpuKernel::~GpuKernel() {
  if (module_ != nullptr) cuda_driver().cuModuleUnload(module_);
}

PtxasReport GpuKernel::resource_usage(const PtxasReport& from_log) const {
  PtxasReport report = from_log;
  check_cuda(cuda_driver().cuFuncGetAttribute(&report.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function_),
             "cuFuncGetAttribute(NUM_REGS)");
  check_cuda(cuda_driver().cuFuncGetAttribute(&report.static_shared_bytes,
                                              CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function_),
             "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  return report;
}

void GpuKernel::reserve_dynamic_shared(std::uint32_t bytes) const {
  if (int(bytes) <= dynamic_shared_limit_.load(std::memory_order_acquire)) return;
  const std::lock_guard lock(limit_mutex_);
  if (int(bytes) <= dynamic_shared_limit_.load(std::memory_order_relaxed)) return;
  check_cuda(cuda_driver().cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              int(bytes)),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  dynamic_shared_limit_.store(int(bytes), std::memory_order_release);
}

StagingBuffers::Staging StagingBuffers::reserve(CUstream stream, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  if (max_pitch_ == 0) {
    CUdevice device = 0;
    int max_pitch = 0;
    check_cuda(cuda_driver().cuCtxGetDevice(&device), "cuCtxGetDevice");
    check_cuda(cuda_driver().cuDeviceGetAttribute(&max_pitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH, device),
               "cuDeviceGetAttribute(MAX_PITCH)");
    max_pitch_ = std::size_t(max_pitch);
  }
  auto found = std::find_if(buffers_.begin(), buffers_.end(),
                            [&](const auto& entry) { return entry.first == stream; });
  if (found == buffers_.end()) {
    buffers_.emplace_back(stream, DeviceBuffer(bytes));
    return {buffers_.back().second.get(), max_pitch_};
  }
  if (found->second.bytes() < bytes) {
    // The stream's queued launches may still read the smaller buffer.
    check_cuda(cuda_driver().cuStreamSynchronize(stream), "cuStreamSynchronize(staging)");
    found->second = DeviceBuffer(bytes);
  }
  return {found->second.get(), max_pitch_};
}

void enqueue_gemm_launch(CUfunction function, const LaunchGeometry& geometry, CUdeviceptr a,
                         CUdeviceptr b, CUdeviceptr c, const GemmProblem& problem, CUstream stream,
                         StagingBuffers& staging, EntryForm form, CUdeviceptr bias) {
  const CudaDriver& cu = cuda_driver();
  if (!form.contract_args && !problem.plain()) {
    throw std::logic_error("enqueue_gemm_launch: " + problem.to_string() +
                           " for an entry of plain problems only");
  }
  if (problem.batch > 1 && !geometry.tensor_maps.empty()) {
    throw std::logic_error("enqueue_gemm_launch: a batch through tensor maps");
  }
  // A kernel that may add into C computes alpha * op(A) * op(B) alone: into scratch where beta is
  // not 0, and the pass after it applies beta and the epilogue (epilogue_pass.h).
  const EpiloguePass pass = plan_epilogue_pass(geometry, problem);
  const GemmProblem& computed = pass.kernel_problem;
  GemmProblem read = computed;  // the operands as the kernel reads them: copies where staged
  const OperandStaging plan = plan_operand_staging(geometry, a, b, problem);
  const std::size_t scratch_offset = (plan.floats + 63) / 64 * 64;  // 256-byte aligned
  StagingBuffers::Staging reserved{};
  if (!plan.copies.empty() || pass.scratch_floats > 0) {
    reserved = staging.reserve(stream, (scratch_offset + pass.scratch_floats) * sizeof(float));
  }
  const CUdeviceptr result = c;  // the caller's C
  if (pass.scratch_floats > 0) c = reserved.buffer + scratch_offset * sizeof(float);
  if (geometry.zero_output) {
    for (std::int64_t entry = 0; entry < computed.batch; ++entry) {
      check_cuda(cu.cuMemsetD2D32Async(c + entry * computed.stride_c * sizeof(float),
                                       computed.ldc * sizeof(float), 0, computed.shape.n,
                                       computed.shape.m, stream),
                 "cuMemsetD2D32Async(C)");
    }
  }
  for (const OperandCopy& copy : plan.copies) {
    const bool is_a = copy.operand == 'A';
    const CUdeviceptr from = is_a ? a : b, to = reserved.buffer + copy.offset * sizeof(float);
    staging.copier().copy(copy, from, to, reserved.max_pitch, stream);
    (is_a ? a : b) = to;
    (is_a ? read.lda : read.ldb) = copy.to_ld;
  }
  int m = int(read.shape.m), n = int(read.shape.n), k = int(read.shape.k);
  int lda = int(read.lda), ldb = int(read.ldb), ldc = int(read.ldc);
  std::array<CUtensorMap, 2> maps;
  ContractArgs args;
  std::array<void*, 12> arguments = {&a, &b, &c, &m, &n, &k, &lda, &ldb, &ldc};
  std::size_t extra = 9;
  if (geometry.tensor_maps.size() > maps.size()) {
    throw std::logic_error("enqueue_gemm_launch: more tensor maps than operands");
  }
  for (std::size_t i = 0; i < geometry.tensor_maps.size(); ++i) {
    maps[i] = encode_tensor_map(geometry.tensor_maps[i], a, b, read);
    arguments[extra++] = &maps[i];
  }
  if (form.contract_args) arguments[extra++] = &args;  // after the maps (entry_contract.h)
  // The batch runs in z, the template's grid z times over; as many entries a launch as z allows.
  const std::int64_t per_launch = batch_entries_per_launch(geometry.grid[2]);
  const CUdeviceptr a0 = a, b0 = b, c0 = c;
  for (std::int64_t first = 0; first < computed.batch; first += per_launch) {
    const std::int64_t entries = std::min(per_launch, computed.batch - first);
    args = contract_args(computed, pass.runs ? nullptr : reinterpret_cast<const float*>(bias), entries);
    a = a0 + first * computed.stride_a * sizeof(float);
    b = b0 + first * computed.stride_b * sizeof(float);
    c = c0 + first * computed.stride_c * sizeof(float);
    check_cuda(cu.cuLaunchKernel(function, geometry.grid[0], geometry.grid[1],
                                 std::uint32_t(geometry.grid[2] * entries), geometry.block[0],
                                 geometry.block[1], geometry.block[2],
                                 geometry.dynamic_shared_bytes, stream, arguments.data(), nullptr),
               "cuLaunchKernel");
  }
  if (pass.runs) staging.epilogue_pass().run(pass, problem, c0, result, bias, stream);
}

void GpuKernel::launch(const LaunchGeometry& geometry, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                       const GemmProblem& problem, CUstream stream, CUdeviceptr bias) const {
  if (geometry.tensor_maps.size() != form_.tensor_maps) {
    throw std::logic_error("GpuKernel::launch: a geometry of another template");
  }
  reserve_dynamic_shared(geometry.dynamic_shared_bytes);
  enqueue_gemm_launch(function_, geometry, a, b, c, problem, stream, staging_, form_, bias);
}

}  // namespace tiletune
