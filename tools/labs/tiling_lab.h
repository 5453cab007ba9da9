// tiletune lab tiling: naive against shared-memory tiled matmul, the tutorials' first lesson,
// measured on this GPU.
//
// The shipped templates (kernels_src/naive.cu at 16x16 and 32x32 threads, kernels_src/tiled.cu
// at TILE 16 and 32, no padding or swizzle) multiply square matrices of a few sizes. Each result
// is checked against a double-precision CPU reference before anything is timed; then each kernel
// is timed (median of CUDA-event runs, L2 flushed before each) beside the CPU reference's time
// and, where Nsight Compute can read counters, counted: global load requests and sectors, DRAM
// bytes. The claim: naive makes TILE times the global load requests of tiled (within 10%).
// Sectors and DRAM bytes are reported as measured (L2 absorbs much of the reuse tiling buys).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/labs/lab_claims.h"
#include "tools/labs/lab_counters.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/kernel_timer.h"

namespace tiletune::labs {

struct TilingKernel {
  const char* name;   // "tiled16": what `tiletune lab-kernel tiling` takes
  const char* label;  // "tiled TILE=16"
  bool tiled;
  int tile;  // TILE, or the naive block's side
};
extern const std::vector<TilingKernel> kTilingKernels;  // naive16, tiled16, naive32, tiled32
extern const std::vector<int> kTilingSizes;             // 256, 512, 1024

struct TilingMeasurement {
  std::string kernel;  // a TilingKernel's name
  int size = 0;        // M = N = K
  Timing timing;
  std::optional<double> load_requests, load_sectors, dram_bytes;
};

struct TilingLab {
  std::string gpu;
  std::vector<std::pair<int, double>> cpu_ms;  // size, the CPU reference's time
  std::vector<TilingMeasurement> rows;
  std::string why_no_counters;
  std::vector<Claim> claims;
};

// The ncu metrics the lab asks for (tuner/profiling/counter_metrics.h), and the counters of a
// measurement filled from ncu's values (one that is missing stays empty).
std::vector<std::string> tiling_metrics();
void take_tiling_counters(const std::map<std::string, double>& ncu_values, TilingMeasurement& row);

// Per size and TILE: the requests claim (naive / tiled within 10% of TILE), then sectors and DRAM
// bytes reported. Missing counters make the claim not measured with `why_no_counters` (or the
// missing counter) as the reason.
std::vector<Claim> tiling_claims(const std::vector<TilingMeasurement>& rows,
                                 const std::string& why_no_counters);

// Runs the lab on the device: verifies every kernel at every size against the CPU reference
// (throws std::runtime_error naming the first wrong one; nothing is timed then), times, counts.
TilingLab run_tiling_lab(const GpuDevice& device, const CounterReader& counters);

std::string format_tiling_lab(const TilingLab& lab);
nlohmann::json tiling_lab_json(const TilingLab& lab);

// `tiletune lab-kernel tiling KERNEL SIZE`: one launch on the GPU, for ncu to count. Throws
// LabArgumentError for an unknown kernel or size before opening the GPU.
void launch_tiling_kernel(const std::string& kernel, const std::string& size);

// C = A B for n x n row-major matrices in double, with each element's error bound for an FP32
// result summed in any order (gamma_n sum |a||b|). Exposed for its test.
struct ReferenceProduct {
  std::vector<double> value, bound;
};
ReferenceProduct cpu_reference_product(const std::vector<float>& a, const std::vector<float>& b,
                                       int n);

// The first element of `c` outside its bound, in words, or nothing.
std::optional<std::string> compare_with_reference(const std::vector<float>& c,
                                                  const ReferenceProduct& ref, int n);

}  // namespace tiletune::labs
