#include "fuzz/perturbed_launch.h"

namespace tiletune {

namespace {

// Before the template's own text; `#line 1` keeps its line numbers in NVRTC's messages. GPU code
// only: the CPU backend never compiles the skewed build. __nanosleep needs sm_70.
constexpr const char* kSkewPrelude = R"(// tiletune fuzz: the skewed build (fuzz/perturbed_launch.h)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
__device__ __forceinline__ void tt_fuzz_skew_warp() {
  const unsigned int warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32;
  unsigned int h = blockIdx.x * 0x9E3779B1u ^ blockIdx.y * 0x85EBCA77u ^ blockIdx.z * 0xC2B2AE3Du ^
                   (gridDim.x + 7 * gridDim.y + 13 * gridDim.z) * 0x165667B1u ^ warp * 0x27D4EB2Fu;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  if (h & 1) __nanosleep(2000 + (h >> 8) % 6000);
}
__device__ __forceinline__ void tt_fuzz_skewed_syncthreads() {
  __syncthreads();
  tt_fuzz_skew_warp();
}
#define __syncthreads() tt_fuzz_skewed_syncthreads()
#endif
#line 1
)";

}  // namespace

bool is_perturbed(const GemmCase& gemm_case) { return gemm_case.schedule_seed % 2 == 1; }

std::optional<KernelTemplate> skewed_build(const KernelTemplate& tmpl) {
  if (tmpl.source.find("__syncthreads") == std::string::npos) return std::nullopt;
  KernelTemplate skewed = tmpl;
  skewed.source = kSkewPrelude + tmpl.source;
  skewed.source_hash = fnv1a_hex(skewed.source);
  return skewed;
}

}  // namespace tiletune
