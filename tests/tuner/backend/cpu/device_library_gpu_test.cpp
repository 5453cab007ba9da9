// The CPU backend's emulation against the GPU: the same probe kernels, compiled by NVRTC and run on
// the GPU, and built by the host compiler and run on fibers. tt_tf32_round bit for bit over
// millions of floats (ties and specials among them); tt_mma_m16n8k8_tf32 bit for bit on small
// integers, also given with bits below TF32's precision (the tensor core must ignore them), and on
// random floats within an error bound, the largest difference printed; tt_ldmatrix_x4, shuffles
// and votes bit for bit; an asynchronous-copy pipeline; tt_wgmma_tf32 (Hopper only) bit for bit on
// small integers, with and without bits below TF32's precision, and within the bound on random
// floats. Skipped ("no GPU: <reason>") without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tests/support/gpu_test.h"
#include "tests/tuner/backend/cpu/cpu_probe.h"
#include "tests/tuner/backend/cpu/wgmma_probe.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {
namespace {

using testing_support::bits;
using testing_support::CpuProbe;
using testing_support::kUnwrittenBits;
using testing_support::probe_geometry;

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

class DeviceLibraryGpu : public testing_support::GpuTest {
 protected:
  // Runs the probe's template on the GPU, as CpuProbe::run does on the CPU.
  std::vector<float> run_on_gpu(const CpuProbe& probe, std::array<std::uint32_t, 3> threads,
                                const std::vector<float>& in, std::size_t outputs, int m = 0,
                                std::uint32_t blocks = 1) {
    const KernelTemplate& tmpl = probe.kernel_template();
    const GpuKernel kernel(
        compile_configuration(tmpl, tmpl.parse_configuration("P=0"), device_->properties().arch()),
        tmpl.entry, entry_form(tmpl));
    const DeviceBuffer a = DeviceBuffer::from(in.empty() ? std::vector<float>{0.0f} : in);
    std::vector<float> out(outputs, from_bits(kUnwrittenBits));
    const DeviceBuffer c = DeviceBuffer::from(out);
    kernel.launch(probe_geometry(threads, blocks), a.get(), a.get(), c.get(),
                  GemmProblem{{m, 1, 1}, 1, 1, 1});
    check_cuda(cuda_driver().cuCtxSynchronize(), "probe kernel");
    c.download_into(out);
    return out;
  }
};

const std::string kTensorCore = "#include <tiletune/tensor_core.h>";

TEST_F(DeviceLibraryGpu, Tf32RoundIsTheHardwaresBitForBit) {
  const CpuProbe probe("gpu_tf32_round", R"(
  for (int i = blockIdx.x * 256 + t; i < M; i += gridDim.x * 256) C[i] = tt_tf32_round(A[i]);
)",
                       kTensorCore);
  std::vector<float> in;
  for (const std::uint32_t special :
       {0x00000000u, 0x80000000u, 0x00000001u, 0x00000fffu, 0x00001000u, 0x00001001u, 0x007fffffu,
        0x00800000u, 0x3f801000u, 0x3f803000u, 0x7f7fefffu, 0x7f7ff000u, 0x7f7fffffu, 0x7f800000u,
        0xff800000u, 0x7f800001u, 0x7f801000u, 0x7fc00000u, 0x7fc00001u, 0x7fffffffu, 0xffffffffu,
        0xff801fffu}) {
    in.push_back(from_bits(special));
  }
  std::mt19937 random(2024);
  for (int i = 0; i < 1 << 20; ++i) {
    const std::uint32_t x = random();
    for (const std::uint32_t low : {x & 0x1fffu, 0x1000u, 0x0fffu, 0x1001u}) {
      in.push_back(from_bits((x & ~0x1fffu) | low));  // random, a tie, either side of it
    }
  }
  for (std::uint32_t x = 0; x < 0xffffffffu - (1u << 14); x += (1u << 14) + 1) {
    in.push_back(from_bits(x));  // a sweep of every exponent and sign
  }
  const int n = int(in.size());
  const std::vector<float> gpu = run_on_gpu(probe, {256, 1, 1}, in, in.size(), n, 1024);
  const std::vector<float> cpu = probe.run({256, 1, 1}, in, in.size(), 0, n, 1024);
  int differences = 0;
  for (int i = 0; i < n; ++i) {
    if (bits(gpu[i]) != bits(cpu[i]) && differences++ < 10) {
      ADD_FAILURE() << std::hex << "tt_tf32_round(0x" << bits(in[i]) << "): GPU 0x" << bits(gpu[i])
                    << ", CPU 0x" << bits(cpu[i]);
    }
  }
  std::printf("tt_tf32_round: %d inputs, %d differences\n", n, differences);
  EXPECT_EQ(differences, 0);
}

// Every block one tile: A (16x8), B (8x8, row-major) and C (16x8) from 320 inputs of its own,
// loaded by the fragment layouts; D stored by the accumulator layout. The tile's inputs pass
// through tt_tf32_round first when ROUND is 1.
std::string mma_body(bool round) {
  return std::string("  const bool round = ") + (round ? "true" : "false") + R"(;
  const float* in = A + blockIdx.x * 320;
  float* out = C + blockIdx.x * 128;
  const int g = lane >> 2, q = lane & 3;
  float a[4] = {in[g * 8 + q], in[(g + 8) * 8 + q], in[g * 8 + q + 4], in[(g + 8) * 8 + q + 4]};
  float b[2] = {in[128 + q * 8 + g], in[128 + (q + 4) * 8 + g]};
  const float c[4] = {in[192 + g * 8 + 2 * q], in[192 + g * 8 + 2 * q + 1],
                      in[192 + (g + 8) * 8 + 2 * q], in[192 + (g + 8) * 8 + 2 * q + 1]};
  if (round) {
    for (int i = 0; i < 4; ++i) a[i] = tt_tf32_round(a[i]);
    for (int i = 0; i < 2; ++i) b[i] = tt_tf32_round(b[i]);
  }
  float d[4];
  tt_mma_m16n8k8_tf32(d, a, b, c);
  out[g * 8 + 2 * q] = d[0];
  out[g * 8 + 2 * q + 1] = d[1];
  out[(g + 8) * 8 + 2 * q] = d[2];
  out[(g + 8) * 8 + 2 * q + 1] = d[3];
)";
}

constexpr int kTiles = 2048;

// The largest difference of two floats in units in the last place of the larger.
double ulps(float x, float y) {
  if (x == y) return 0;
  const float larger = std::max(std::fabs(x), std::fabs(y));
  return std::fabs(double(x) - double(y)) / std::ldexp(1.0, std::ilogb(larger) - 23);
}

TEST_F(DeviceLibraryGpu, MmaOnSmallIntegersIsTheHardwaresBitForBit) {
  const CpuProbe probe("gpu_mma_integers", mma_body(false), kTensorCore);
  std::mt19937 random(11);
  std::uniform_int_distribution<int> value(-8, 8);
  std::uniform_int_distribution<std::uint32_t> below_tf32(0, 0x1fff);
  std::vector<float> exact(kTiles * 320), noisy(kTiles * 320);
  for (std::size_t i = 0; i < exact.size(); ++i) {
    exact[i] = float(value(random));
    // A and B elements with bits below TF32's precision: the tensor core reads the integer.
    const bool multiplicand = i % 320 < 192;
    noisy[i] = multiplicand && exact[i] != 0
                   ? from_bits(bits(exact[i]) | below_tf32(random))
                   : exact[i];
  }
  for (const auto* in : {&exact, &noisy}) {
    const std::vector<float> gpu = run_on_gpu(probe, {32, 1, 1}, *in, kTiles * 128, 0, kTiles);
    const std::vector<float> cpu = probe.run({32, 1, 1}, *in, kTiles * 128, 0, 0, kTiles);
    int differences = 0;
    for (int i = 0; i < kTiles * 128; ++i) {
      if (bits(gpu[i]) != bits(cpu[i]) && differences++ < 10) {
        ADD_FAILURE() << (in == &exact ? "integers" : "integers with bits below TF32")
                      << ": tile " << i / 128 << " D[" << i % 128 / 8 << "][" << i % 8
                      << "]: GPU " << gpu[i] << ", CPU " << cpu[i];
      }
    }
    EXPECT_EQ(differences, 0);
  }
}

TEST_F(DeviceLibraryGpu, MmaOnRandomFloatsStaysWithinTheBound) {
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> in(kTiles * 320);
  for (float& x : in) x = normal(random) * std::ldexp(1.0f, int(random() % 9) - 4);
  for (const bool round : {true, false}) {
    const CpuProbe probe(round ? "gpu_mma_rounded" : "gpu_mma_truncated", mma_body(round),
                         kTensorCore);
    const std::vector<float> gpu = run_on_gpu(probe, {32, 1, 1}, in, kTiles * 128, 0, kTiles);
    const std::vector<float> cpu = probe.run({32, 1, 1}, in, kTiles * 128, 0, 0, kTiles);
    double largest_ulps = 0;
    int equal = 0;
    for (int i = 0; i < kTiles * 128; ++i) {
      // |c| + the sum of |a b| over the row and column, in the TF32 values the tensor core reads:
      // each of the 9 terms is truncated by less than 2^-23 of the largest when aligned, and the
      // sum by less than 2^-23 of itself, in either model of the hardware, so two of them differ
      // by less than 2^-19 of it.
      const float* tile = &in[i / 128 * 320];
      const int r = i % 128 / 8, col = i % 8;
      double magnitude = std::fabs(tile[192 + r * 8 + col]);
      for (int k = 0; k < 8; ++k) {
        magnitude += std::fabs(double(tile[r * 8 + k]) * tile[128 + k * 8 + col]);
      }
      EXPECT_LE(std::fabs(double(gpu[i]) - cpu[i]), std::ldexp(magnitude, -19))
          << "tile " << i / 128 << " D[" << r << "][" << col << "]: GPU " << gpu[i] << ", CPU "
          << cpu[i];
      equal += bits(gpu[i]) == bits(cpu[i]);
      largest_ulps = std::max(largest_ulps, ulps(gpu[i], cpu[i]));
    }
    std::printf("tt_mma_m16n8k8_tf32 on random floats (%s): %d of %d bit for bit, the largest "
                "difference %.0f ulps\n",
                round ? "rounded with tt_tf32_round" : "as they are", equal, kTiles * 128,
                largest_ulps);
  }
}

TEST_F(DeviceLibraryGpu, ShufflesAndVotesAreTheHardwaresBitForBit) {
  const CpuProbe probe("gpu_shuffles", R"(
  const float x = A[t];
  const int W[4] = {32, 16, 8, 2};
  float* out = C + t * 20;
  for (int w = 0; w < 4; ++w) {
    out[4 * w + 0] = __shfl_sync(0xffffffffu, x, lane * 7 + 3, W[w]);
    out[4 * w + 1] = __shfl_up_sync(0xffffffffu, x, 3, W[w]);
    out[4 * w + 2] = __shfl_down_sync(0xffffffffu, x, 5, W[w]);
    out[4 * w + 3] = __shfl_xor_sync(0xffffffffu, x, 9, W[w]);
  }
  unsigned* votes = reinterpret_cast<unsigned*>(out + 16);
  votes[0] = __ballot_sync(0xffffffffu, t % 3 == 0);
  votes[1] = __any_sync(0xffffffffu, t == 40);
  votes[2] = __all_sync(0xffffffffu, t % 2);
  votes[3] = __activemask();
)");
  std::vector<float> in(64);
  for (int t = 0; t < 64; ++t) in[t] = 0.5f * t - 7.0f;
  const std::vector<float> gpu = run_on_gpu(probe, {64, 1, 1}, in, 64 * 20);
  const std::vector<float> cpu = probe.run({64, 1, 1}, in, 64 * 20);
  for (int i = 0; i < 64 * 20; ++i) {
    EXPECT_EQ(bits(gpu[i]), bits(cpu[i])) << "thread " << i / 20 << " output " << i % 20;
  }
}

TEST_F(DeviceLibraryGpu, LdmatrixIsTheHardwaresBitForBit) {
  const CpuProbe probe("gpu_ldmatrix", R"(
  __shared__ __align__(16) float tile[16 * 16];
  for (int i = lane; i < 16 * 16; i += 32) tile[i] = A[i];
  __syncwarp();
  const int r = 8 * (lane / 8 % 2) + lane % 8, group = lane / 16;
  float a[4];
  tt_ldmatrix_x4(a, tile + r * 16 + 4 * (group ^ (r % 4)));
  for (int i = 0; i < 4; ++i) C[4 * lane + i] = a[i];
)",
                       kTensorCore);
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i) in[i] = from_bits(0x3f800000u + 977u * std::uint32_t(i));
  const std::vector<float> gpu = run_on_gpu(probe, {32, 1, 1}, in, 128);
  const std::vector<float> cpu = probe.run({32, 1, 1}, in, 128);
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(bits(gpu[i]), bits(cpu[i])) << "lane " << i / 4 << " a[" << i % 4 << "]";
  }
}

TEST_F(DeviceLibraryGpu, AsyncCopyPipelineGivesTheSameResult) {
  const CpuProbe probe("gpu_async_copies", R"(
  __shared__ __align__(16) float stages[2][256];
  float sum = 0.0f;
  tt_cp_async_16(stages[0] + 4 * t, A + 4 * t, 16);
  tt_cp_async_commit();
  for (int s = 0; s < 8; ++s) {
    if (s + 1 < 8) {
      tt_cp_async_16(stages[(s + 1) % 2] + 4 * t, A + 256 * (s + 1) + 4 * t, (t % 5) * 4 % 20);
    }
    tt_cp_async_commit();
    tt_cp_async_wait<1>();
    __syncthreads();
    sum += stages[s % 2][(4 * t + 7) % 256];
    __syncthreads();
  }
  C[t] = sum;
)",
                       "#include <tiletune/async_copy.h>");
  std::vector<float> in(8 * 256);
  for (int i = 0; i < 8 * 256; ++i) in[i] = float(i % 97);
  const std::vector<float> gpu = run_on_gpu(probe, {64, 1, 1}, in, 64);
  const std::vector<float> cpu = probe.run({64, 1, 1}, in, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(bits(gpu[t]), bits(cpu[t])) << t;
}

TEST_F(DeviceLibraryGpu, WgmmaIsTheHardwaresOnIntegersAndWithinTheBoundOnFloats) {
  using namespace testing_support;
  if (device_->properties().cc_major != 9 || device_->properties().cc_minor != 0) {
    GTEST_SKIP() << "wgmma needs compute capability 9.0 (sm_90a); this GPU is "
                 << device_->properties().arch();
  }
  const CpuProbe register_form("gpu_wgmma", wgmma_probe_body(), kWgmmaIncludes);
  const CpuProbe shared_form("gpu_wgmma_shared_form", wgmma_shared_form_probe_body(),
                             kWgmmaIncludes);
  constexpr int kBlocks = 256;
  std::mt19937 random(17);
  std::uniform_int_distribution<int> value(-8, 8);
  std::uniform_int_distribution<std::uint32_t> below_tf32(0, 0x1fff);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> exact(kBlocks * kWgmmaInputs), noisy(exact.size()), floats(exact.size());
  for (std::size_t i = 0; i < exact.size(); ++i) {
    exact[i] = float(value(random));
    // R and S with bits below TF32's precision: the tensor core reads the integer.
    const bool multiplicand = i % kWgmmaInputs < 4096;
    noisy[i] = multiplicand && exact[i] != 0 ? from_bits(bits(exact[i]) | below_tf32(random))
                                             : exact[i];
    floats[i] = normal(random) * std::ldexp(1.0f, int(random() % 9) - 4);
  }
  // Each input set through both forms (A from fragments, A from shared memory).
  for (int run = 0; run < 6; ++run) {
    const std::vector<float>* const in = std::array{&exact, &noisy, &floats}[run / 2];
    const CpuProbe* const probe = run % 2 == 0 ? &register_form : &shared_form;
    const std::string what =
        std::string(in == &exact   ? "integers"
                    : in == &noisy ? "integers with bits below TF32"
                                   : "random floats") +
        (probe == &shared_form ? " (shared form)" : "");
    const std::size_t outputs = std::size_t(kBlocks) * kWgmmaOutputs;
    const std::vector<float> gpu = run_on_gpu(*probe, {128, 1, 1}, *in, outputs, 0, kBlocks);
    const std::vector<float> cpu = probe->run({128, 1, 1}, *in, outputs, 0, 0, kBlocks);
    int differences = 0;
    double largest_ulps = 0;
    for (std::size_t i = 0; i < outputs; ++i) {
      if (in != &floats) {
        if (bits(gpu[i]) != bits(cpu[i]) && differences++ < 10) {
          ADD_FAILURE() << what << ": block " << i / kWgmmaOutputs << " D[" << i % 4096 / 64
                        << "][" << i % 64 << "]: GPU " << gpu[i] << ", CPU " << cpu[i];
        }
        continue;
      }
      // As for mma: each k8 step's 9 terms truncated by less than 2^-23 of the largest, its sum
      // by less than 2^-23 of itself; over the 4 steps, within 2^-19 of |c| + sum |r s|.
      const float* block = &(*in)[i / kWgmmaOutputs * kWgmmaInputs];
      const int r = int(i % 4096 / 64), n = int(i % 64);
      double magnitude = std::fabs(block[4096 + r * 64 + n]);
      for (int k = 0; k < 32; ++k) {
        magnitude += std::fabs(double(block[r * 32 + k]) * block[2048 + n * 32 + k]);
      }
      EXPECT_LE(std::fabs(double(gpu[i]) - cpu[i]), std::ldexp(magnitude, -19))
          << what << ": block " << i / kWgmmaOutputs << " D[" << r << "][" << n << "]";
      differences += bits(gpu[i]) != bits(cpu[i]);
      largest_ulps = std::max(largest_ulps, ulps(gpu[i], cpu[i]));
    }
    std::printf("tt_wgmma_tf32 on %s: %zu outputs, %d not bit for bit, the largest difference "
                "%.0f ulps\n",
                what.c_str(), outputs, differences, largest_ulps);
    if (in != &floats) {
      EXPECT_EQ(differences, 0);
    }
  }
}

}  // namespace
}  // namespace tiletune
