// The wgmma probe: every block one warpgroup (128 threads) multiplying a 64 x 32 register operand
// R by the 64 x 32 shared operand S (D = R S^T + C, four k8 slices of tt_wgmma_tf32<64>), from
// 8192 inputs of its own: R row-major, then S row-major (stored in the 128-byte swizzled layout
// the descriptor names), then C (64 x 64); D stored by the accumulator layout to 4096 outputs.
// WAIT and BEFORE_WAIT are replaced by a test's variant.
#pragma once

#include <string>
#include <vector>

namespace tiletune::testing_support {

inline constexpr int kWgmmaInputs = 8192, kWgmmaOutputs = 4096;
inline const std::string kWgmmaIncludes =
    "// tiletune: arch sm_90a\n#include <tiletune/warpgroup_mma.h>";

inline std::string wgmma_probe_body(const std::string& wait = "tt_wgmma_wait<0>(d);",
                                    const std::string& before_wait = "") {
  std::string body = R"(
  __shared__ __align__(1024) float tile[64 * 32];
  const float* in = A + blockIdx.x * 8192;
  float* out = C + blockIdx.x * 4096;
  for (int i = t; i < 64 * 32; i += 128) {
    const int n = i / 32, k = i % 32;
    tile[n * 32 + 4 * ((k / 4) ^ (n % 8)) + k % 4] = in[2048 + i];
  }
  tt_fence_proxy_async();
  __syncthreads();
  const int g = lane / 4, q = lane % 4, r = 16 * (t / 32) + g;
  float d[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) d[i] = in[4096 + (r + 8 * (i % 4 / 2)) * 64 + 8 * (i / 4) + 2 * q + i % 2];
  float a[4][4];
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    a[s][0] = in[r * 32 + 8 * s + q];
    a[s][1] = in[(r + 8) * 32 + 8 * s + q];
    a[s][2] = in[r * 32 + 8 * s + q + 4];
    a[s][3] = in[(r + 8) * 32 + 8 * s + q + 4];
  }
  tt_wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s) tt_wgmma_tf32<64>(d, a[s], tt_wgmma_descriptor(tile + 8 * s));
  tt_wgmma_commit();
  BEFORE_WAIT
  WAIT
#pragma unroll
  for (int i = 0; i < 32; ++i) out[(r + 8 * (i % 4 / 2)) * 64 + 8 * (i / 4) + 2 * q + i % 2] = d[i];
)";
  body.replace(body.find("BEFORE_WAIT"), 11, before_wait);
  body.replace(body.find("WAIT"), 4, wait);
  return body;
}

// The same product by wgmma's shared form (tt_wgmma_tf32_shared): R stored into a second tile,
// swizzled as S is, and named by descriptor instead of held in fragments.
inline std::string wgmma_shared_form_probe_body() {
  std::string body = wgmma_probe_body();
  const std::size_t fragments = body.find("  float a[4][4];");
  const std::size_t issue = body.find("  tt_wgmma_fence();");
  body.replace(fragments, issue - fragments, R"(  __shared__ __align__(1024) float rows[64 * 32];
  for (int i = t; i < 64 * 32; i += 128) {
    const int m = i / 32, k = i % 32;
    rows[m * 32 + 4 * ((k / 4) ^ (m % 8)) + k % 4] = in[i];
  }
  tt_fence_proxy_async();
  __syncthreads();
)");
  const std::string registers = "tt_wgmma_tf32<64>(d, a[s], tt_wgmma_descriptor(tile + 8 * s));";
  body.replace(body.find(registers), registers.size(),
               "tt_wgmma_tf32_shared<64>(d, tt_wgmma_descriptor(rows + 8 * s), "
               "tt_wgmma_descriptor(tile + 8 * s));");
  return body;
}

// D = R S^T + C of one block's inputs, in double (exact where every product and sum is an integer
// below 2^24).
inline std::vector<double> wgmma_reference(const float* in) {
  std::vector<double> d(kWgmmaOutputs);
  for (int r = 0; r < 64; ++r) {
    for (int n = 0; n < 64; ++n) {
      double sum = in[4096 + r * 64 + n];
      for (int k = 0; k < 32; ++k) sum += double(in[r * 32 + k]) * in[2048 + n * 32 + k];
      d[r * 64 + n] = sum;
    }
  }
  return d;
}

}  // namespace tiletune::testing_support
