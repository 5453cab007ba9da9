#include "fuzz/gpu_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "fuzz/perturbed_launch.h"
#include "tuner/backend/gpu/device_buffer.h"

namespace tiletune {

namespace {

// Copies `host` into `buffer`, which grows when the case needs more. A buffer kept across cases
// saves an allocation and a free per operand and case: those are driver calls that wait for every
// other process's on the host (CUDA contexts being created, say), where a copy does not.
template <typename T>
void upload_kept(DeviceBuffer& buffer, const std::vector<T>& host) {
  const std::size_t bytes = host.size() * sizeof(T);
  if (const std::size_t kept = buffer.bytes(); kept < bytes) {
    buffer = DeviceBuffer();  // freed before the larger one is allocated
    buffer = DeviceBuffer(std::max(bytes, 2 * kept));
  }
  buffer.upload(host.data(), bytes);
}

}  // namespace

GpuExecutor::GpuExecutor(const GpuDevice& device, const KernelTemplate& tmpl,
                         const Configuration& config, const CompiledKernelImage& image,
                         std::chrono::milliseconds kernel_timeout)
    : device_(device), template_(tmpl), config_(config), kernel_(image, tmpl.entry, entry_form(tmpl)),
      report_(kernel_.resource_usage(image.report)), kernel_timeout_(kernel_timeout) {
  if (kernel_timeout_.count() > 0) {
    check_cuda(cuda_driver().cuEventCreate(&done_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
}

std::optional<std::string> GpuExecutor::exceeds_device_limits(const LaunchGeometry& geometry) const {
  return tiletune::exceeds_device_limits(geometry, report_, device_.properties());
}

GpuExecutor::~GpuExecutor() {
  if (done_ != nullptr) cuda_driver().cuEventDestroy(done_);
}

void GpuExecutor::wait_for_kernel(const GemmCase& gemm_case) {
  const CudaDriver& cu = cuda_driver();
  if (done_ != nullptr) {
    check_cuda(cu.cuEventRecord(done_, nullptr), "cuEventRecord");
    const auto deadline = std::chrono::steady_clock::now() + kernel_timeout_;
    // Done or failed: the synchronisation below reports a failure.
    while (cu.cuEventQuery(done_) == CUDA_ERROR_NOT_READY) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "%s\n",
                     fmt::format("tiletune: {} [{}]: the kernel did not finish within {:g} s at {} "
                                 "(a hang: a barrier or an mbarrier phase that never completes?); "
                                 "the fuzz ends here, as a hung kernel cannot be stopped within "
                                 "the process",
                                 template_.name, config_.to_string(),
                                 kernel_timeout_.count() / 1000.0, gemm_case.problem.to_string())
                         .c_str());
        std::fflush(nullptr);
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  check_cuda(cu.cuCtxSynchronize(), "kernel execution");
}

std::string GpuExecutor::backend_name() const { return "gpu " + device_.properties().name; }

void GpuExecutor::perturb(const CompiledKernelImage* skewed) {
  perturbed_ = true;
  if (skewed != nullptr) {
    skewed_kernel_ =
        std::make_unique<GpuKernel>(*skewed, template_.entry, entry_form(template_));
    skewed_report_ = skewed_kernel_->resource_usage(skewed->report);
  }
}

bool GpuExecutor::runs_perturbed(const GemmCase& gemm_case) const {
  return perturbed_ && is_perturbed(gemm_case);
}

int GpuExecutor::sm_count_for(const GemmCase& gemm_case) const {
  const int sm_count = device_.properties().sm_count;
  return runs_perturbed(gemm_case) ? std::min(sm_count, drawn_sm_count(gemm_case.schedule_seed))
                                   : sm_count;
}

std::string GpuExecutor::case_note(const GemmCase& gemm_case) const {
  if (!runs_perturbed(gemm_case)) return {};
  return fmt::format("perturbed: {}SM_COUNT {}",
                     skewed_kernel_ ? "the skewed build (warps sleep after __syncthreads), " : "",
                     sm_count_for(gemm_case));
}

void GpuExecutor::run(const GemmCase& gemm_case, GemmOperands& operands) {
  if (context_lost_) throw LaunchError("the CUDA context was lost by an earlier launch");
  template_.check_requirements(config_, gemm_case.problem);
  const bool skewed = runs_perturbed(gemm_case) && skewed_kernel_;
  const GpuKernel& kernel = skewed ? *skewed_kernel_ : kernel_;
  const LaunchGeometry geometry =
      template_.launch_geometry(config_, gemm_case.problem.shape, sm_count_for(gemm_case));
  if (auto limit = tiletune::exceeds_device_limits(geometry, skewed ? skewed_report_ : report_,
                                                   device_.properties())) {
    throw LaunchError("cannot launch on this device: " + *limit);
  }
  try {
    upload_kept(a_, operands.a.storage);
    upload_kept(b_, operands.b.storage);
    upload_kept(c_, operands.c.storage);
    const bool has_bias = !operands.bias.storage.empty();
    if (has_bias) upload_kept(bias_, operands.bias.storage);
    const auto origin = [](const GuardedMatrix& m) { return m.guard * sizeof(float); };
    kernel.launch(geometry, a_.get() + origin(operands.a), b_.get() + origin(operands.b),
                  c_.get() + origin(operands.c), gemm_case.problem, nullptr,
                  has_bias ? bias_.get() + origin(operands.bias) : 0);
    wait_for_kernel(gemm_case);
    // Only the case's bytes come back: what lies past them in a kept buffer is not the case's.
    a_.download_into(operands.a.storage);
    b_.download_into(operands.b.storage);
    c_.download_into(operands.c.storage);
    if (has_bias) bias_.download_into(operands.bias.storage);
  } catch (const CudaError& e) {
    context_lost_ = e.context_is_lost();
    throw LaunchError(e.what());
  }
}

}  // namespace tiletune
