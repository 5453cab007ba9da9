// tiletune's device library (<tiletune/tensor_core.h>, <tiletune/async_copy.h>) on the CPU
// backend: tt_tf32_round against a reference written apart and known values, tt_mma_m16n8k8_tf32
// against a host computation of the tile with a distinct value in every element, tt_ldmatrix_x4
// giving each lane its A fragment from a swizzled tile, cp.async whose copies land only when a
// wait retires them, so that a kernel without its wait is wrong, and <tiletune/warpgroup_mma.h>:
// wgmma by the PTX layouts and the 128-byte swizzle, carried out only when a wait retires it; and
// <tiletune/named_barrier.h>: a producer and a consumer warp that skip a barrier are wrong, a
// barrier that never completes or is misused is an error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fuzz/gemm_executor.h"
#include "tests/tuner/backend/cpu/cpu_probe.h"
#include "tests/tuner/backend/cpu/wgmma_probe.h"
#include "tuner/backend/cpu/block_scheduler.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using testing_support::bits;
using testing_support::CpuProbe;

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// cvt.rna.tf32.f32 as the reference sees it: a finite value rounded to a multiple of 2^13 in its
// magnitude's bits, ties away from zero (a carry into the exponent is the next binade or
// infinity); infinity and NaN lose their low 13 bits.
std::uint32_t reference_tf32(std::uint32_t x) {
  const std::uint32_t sign = x & 0x80000000u, magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return x & 0xffffe000u;
  const std::uint32_t below = magnitude & 0x1fffu;
  const std::uint32_t rounded = magnitude - below + (below >= 0x1000u ? 0x2000u : 0u);
  return sign | rounded;
}

const std::string kTensorCore = "#include <tiletune/tensor_core.h>";

TEST(DeviceLibraryCpu, Tf32RoundMatchesTheReferenceAndKnownValues) {
  const CpuProbe probe("tf32_round", R"(
  for (int i = t; i < M; i += 256) C[i] = tt_tf32_round(A[i]);
)",
                       kTensorCore);
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> known = {
      {0x3f801000u, 0x3f802000u},  // 1 + 2^-11, a tie: away from zero
      {0xbf801000u, 0xbf802000u},  // its negative
      {0x3f800fffu, 0x3f800000u},  // just below the tie
      {0x3f803000u, 0x3f804000u},  // a tie above an odd TF32 value (no ties to even)
      {0x7f7fffffu, 0x7f800000u},  // the largest float: to infinity
      {0x7f7fefffu, 0x7f7fe000u},  // the largest TF32 value, from below the tie
      {0x7f800000u, 0x7f800000u},  // infinity
      {0xff800000u, 0xff800000u},
      {0x7fc00001u, 0x7fc00000u},  // a quiet NaN loses its low payload
      {0x7f800001u, 0x7f800000u},  // a NaN whose payload is all below: infinity, as ptxas has it
      {0xffffffffu, 0xffffe000u},
      {0x00000001u, 0x00000000u},  // the smallest subnormal
      {0x00001000u, 0x00002000u},  // a subnormal tie
      {0x807fffffu, 0x80800000u},  // the largest subnormal: to the smallest normal
      {0x80000000u, 0x80000000u},  // -0
  };
  std::vector<float> in;
  for (const auto& [x, expected] : known) in.push_back(from_bits(x));
  std::mt19937 random(7);
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t x = random();
    in.push_back(from_bits(x));
    in.push_back(from_bits((x & ~0x1fffu) | 0x1000u));  // a tie
    in.push_back(from_bits((x & ~0x1fffu) | 0x0fffu));
  }
  const std::vector<float> out = probe.run({256, 1, 1}, in, in.size(), 0, int(in.size()));
  for (std::size_t i = 0; i < known.size(); ++i) {
    EXPECT_EQ(bits(out[i]), known[i].second) << std::hex << "tt_tf32_round(0x" << known[i].first
                                             << ")";
  }
  int wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (bits(out[i]) != reference_tf32(bits(in[i])) && wrong++ < 5) {
      ADD_FAILURE() << std::hex << "tt_tf32_round(0x" << bits(in[i]) << ") = 0x" << bits(out[i])
                    << ", the reference 0x" << reference_tf32(bits(in[i]));
    }
  }
  EXPECT_EQ(wrong, 0);
}

// One warp loads A (16x8, row-major), B (8x8, row-major) and C (16x8) from the inputs by the
// fragment layouts of the PTX ISA, multiplies, and stores D (16x8) by the accumulator layout.
const char* kMmaBody = R"(
  const int g = lane >> 2, q = lane & 3;
  const float* Am = A;
  const float* Bm = A + 128;
  const float* Cm = A + 192;
  const float a[4] = {Am[g * 8 + q], Am[(g + 8) * 8 + q], Am[g * 8 + q + 4],
                      Am[(g + 8) * 8 + q + 4]};
  const float b[2] = {Bm[q * 8 + g], Bm[(q + 4) * 8 + g]};
  const float c[4] = {Cm[g * 8 + 2 * q], Cm[g * 8 + 2 * q + 1], Cm[(g + 8) * 8 + 2 * q],
                      Cm[(g + 8) * 8 + 2 * q + 1]};
  float d[4];
  tt_mma_m16n8k8_tf32(d, a, b, c);
  C[g * 8 + 2 * q] = d[0];
  C[g * 8 + 2 * q + 1] = d[1];
  C[(g + 8) * 8 + 2 * q] = d[2];
  C[(g + 8) * 8 + 2 * q + 1] = d[3];
)";

TEST(DeviceLibraryCpu, MmaComputesTheTileByThePtxLayouts) {
  const CpuProbe probe("mma", kMmaBody, kTensorCore);
  // A distinct value in every element of A and C, B small and uneven: any element taken from the
  // wrong place shows. Every product and sum is an integer below 2^24: exact.
  std::vector<float> in(320);
  for (int i = 0; i < 128; ++i) in[i] = float(i + 1);
  for (int i = 0; i < 64; ++i) in[128 + i] = float((i * 5) % 11 - 5);
  for (int i = 0; i < 128; ++i) in[192 + i] = float(1000 * (i + 1));
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const std::vector<float> out = probe.run({32, 1, 1}, in, 128, seed);
    for (int r = 0; r < 16; ++r) {
      for (int col = 0; col < 8; ++col) {
        double expected = in[192 + r * 8 + col];
        for (int k = 0; k < 8; ++k) expected += double(in[r * 8 + k]) * in[128 + k * 8 + col];
        EXPECT_EQ(out[r * 8 + col], float(expected)) << "D[" << r << "][" << col << "]";
      }
    }
  }
}

TEST(DeviceLibraryCpu, MmaReadsTheTopNineteenBitsOfAnOperandNotRounded) {
  // 1 + 2^-11 has its only fraction bit below TF32's 10: the tensor core reads 1, where rounding
  // would have given 1 + 2^-10.
  const CpuProbe probe("mma_truncates", kMmaBody, kTensorCore);
  std::vector<float> in(320, 0.0f);
  in[0] = from_bits(0x3f801000u);            // A[0][0]
  in[128] = 1.0f;                            // B[0][0]
  in[1] = from_bits(0x3f801fffu);            // A[0][1], every dropped bit set
  in[128 + 8] = 1.0f;                        // B[1][0]
  const std::vector<float> out = probe.run({32, 1, 1}, in, 128);
  EXPECT_EQ(out[0], 2.0f) << "D[0][0] = A[0][0] + A[0][1], each truncated to 1";
}

TEST(DeviceLibraryCpu, MmaTruncatesItsSumTowardZero) {
  // The model's rounding (device_library_gpu_tests holds it against the hardware): 1 + 3 * 2^-24
  // is 1.5 FP32 ulps above 1, which rounding to nearest would take to 2 ulps and truncation to 1.
  const CpuProbe probe("mma_toward_zero", kMmaBody, kTensorCore);
  std::vector<float> in(320, 0.0f);
  for (int k = 0; k < 3; ++k) {
    in[k] = std::ldexp(1.0f, -12);             // A[0][k]
    in[128 + k * 8] = std::ldexp(1.0f, -12);   // B[k][0]
    in[8 + k] = -std::ldexp(1.0f, -12);        // A[1][k]
  }
  in[192] = 1.0f;        // C[0][0]
  in[192 + 8] = -1.0f;   // C[1][0]
  const std::vector<float> out = probe.run({32, 1, 1}, in, 128);
  EXPECT_EQ(out[0], 1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(out[8], -1.0f - std::ldexp(1.0f, -23));
}

TEST(DeviceLibraryCpu, MmaNeedsTheWholeWarp) {
  const CpuProbe probe("mma_half_warp", kMmaBody, kTensorCore);
  try {
    probe.run({16, 1, 1}, std::vector<float>(320, 1.0f), 128);
    ADD_FAILURE() << "a 16-thread warp ran an mma";
  } catch (const LaunchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs all 32 lanes")) << e.what();
  }
}

// One warp stages a 16 x 8 tile of A in shared memory with a 16-float row pitch and an XOR
// swizzle of its 4-float groups, then loads it with tt_ldmatrix_x4, each lane naming the row of
// quadrant lane / 8 that the mma's A fragment asks for, and writes what it got in fragment order.
const char* kLdmatrixBody = R"(
  __shared__ __align__(16) float tile[16 * 16];
  for (int i = lane; i < 16 * 16; i += 32) tile[i] = -1.0f;
  __syncwarp();
  for (int i = lane; i < 128; i += 32) {
    const int r = i / 8, k = i % 8;
    tile[r * 16 + 4 * ((k / 4) ^ (r % 4)) + k % 4] = A[i];
  }
  __syncwarp();
  const int r = 8 * (lane / 8 % 2) + lane % 8, group = lane / 16;
  float a[4];
  tt_ldmatrix_x4(a, tile + r * 16 + 4 * (group ^ (r % 4)));
  for (int i = 0; i < 4; ++i) C[4 * lane + i] = a[i];
)";

TEST(DeviceLibraryCpu, LdmatrixGivesEachLaneItsMmaFragment) {
  const CpuProbe probe("ldmatrix", kLdmatrixBody, kTensorCore);
  std::vector<float> in(128);
  for (int i = 0; i < 128; ++i) in[i] = float(i + 1);
  const std::vector<float> out = probe.run({32, 1, 1}, in, 128);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {t, t, t + 4, t + 4};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(out[4 * lane + i], in[rows[i] * 8 + cols[i]]) << "lane " << lane << " a[" << i << "]";
    }
  }
}

TEST(DeviceLibraryCpu, LdmatrixNeedsTheWholeWarpAndAlignedRows) {
  const CpuProbe half("ldmatrix_half_warp", kLdmatrixBody, kTensorCore);
  try {
    half.run({16, 1, 1}, std::vector<float>(128, 1.0f), 128);
    ADD_FAILURE() << "a 16-thread warp ran an ldmatrix";
  } catch (const LaunchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs all 32 lanes")) << e.what();
  }
  std::string body = kLdmatrixBody;
  body.replace(body.find("tt_ldmatrix_x4(a, tile + "), 25, "tt_ldmatrix_x4(a, tile + 1 + ");
  const CpuProbe misaligned("ldmatrix_misaligned", body, kTensorCore);
  try {
    misaligned.run({32, 1, 1}, std::vector<float>(128, 1.0f), 128);
    ADD_FAILURE() << "ldmatrix read rows that are not 16-byte aligned";
  } catch (const LaunchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not 16-byte aligned")) << e.what();
  }
}

// 64 threads copy 16 bytes each from A into shared memory, then each sums its neighbour's four
// floats. WAIT is the wait before the barrier.
std::string copy_body(const std::string& wait) {
  std::string body = R"(
  __shared__ __align__(16) float stage[256];
  tt_cp_async_16(stage + 4 * t, A + 4 * t, 16);
  tt_cp_async_commit();
  WAIT;
  __syncthreads();
  const float* next = stage + 4 * ((t + 1) % 64);
  C[t] = next[0] + next[1] + next[2] + next[3];
)";
  body.replace(body.find("WAIT"), 4, wait);
  return body;
}

const std::string kAsyncCopy = "#include <tiletune/async_copy.h>";

std::vector<float> copy_inputs() {
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i) in[i] = float(i % 13);
  return in;
}

float neighbour_sum(const std::vector<float>& in, int t) {
  const int n = (t + 1) % 64;
  return in[4 * n] + in[4 * n + 1] + in[4 * n + 2] + in[4 * n + 3];
}

// The first schedule seed under which block 0's copies land that way.
std::uint64_t seed_landing(CopyLanding landing) {
  std::uint64_t seed = 0;
  while (copy_landing(seed, 0) != landing) ++seed;
  return seed;
}

TEST(DeviceLibraryCpu, AsyncCopiesLandBetweenTheCopyAndTheWaitThatRetiresThem) {
  const CpuProbe waited("copy_waited", copy_body("tt_cp_async_wait<0>()"), kAsyncCopy);
  const CpuProbe forgotten("copy_forgotten", copy_body("(void)0"), kAsyncCopy);
  const std::vector<float> in = copy_inputs();
  std::set<CopyLanding> seen;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    const CopyLanding landing = copy_landing(seed, 0);
    seen.insert(landing);
    const std::vector<float> right = waited.run({64, 1, 1}, in, 64, seed);
    const std::vector<float> unwaited = forgotten.run({64, 1, 1}, in, 64, seed);
    for (int t = 0; t < 64; ++t) {
      EXPECT_EQ(right[t], neighbour_sum(in, t)) << "seed " << seed << " thread " << t;
      // Without the wait: nothing has landed when copies land at their wait, everything when
      // they land at once, and each neighbour's four floats one way or the other when mixed.
      if (landing == CopyLanding::at_wait) {
        EXPECT_TRUE(std::isnan(unwaited[t])) << "seed " << seed << " thread " << t << " read "
                                             << unwaited[t] << ", not the poison";
      } else if (landing == CopyLanding::at_copy) {
        EXPECT_EQ(unwaited[t], neighbour_sum(in, t)) << "seed " << seed << " thread " << t;
      } else {
        EXPECT_TRUE(std::isnan(unwaited[t]) || unwaited[t] == neighbour_sum(in, t))
            << "seed " << seed << " thread " << t << " read " << unwaited[t];
      }
    }
  }
  EXPECT_EQ(seen.size(), 3u) << "16 seeds draw every landing";
}

// The bug a late landing hides: the next copy into a stage issued before the barrier after which
// every thread has read it, and waited for after that barrier (as a pipeline does a step later).
// Landing at its wait it comes too late to be seen; landing at once it overwrites what a thread
// later in the phase order still reads: around the cycle of neighbours some thread runs after its
// neighbour, whatever the order, so under every early-landing seed some thread reads new values.
TEST(DeviceLibraryCpu, ACopyIntoAStageOthersStillReadIsCaughtWhenCopiesLandAtOnce) {
  const CpuProbe overwriting("copy_over_unread_stage", R"(
  __shared__ __align__(16) float stage[256];
  tt_cp_async_16(stage + 4 * t, A + 4 * t, 16);
  tt_cp_async_commit();
  tt_cp_async_wait<0>();
  __syncthreads();
  tt_cp_async_16(stage + 4 * t, A + 256 + 4 * t, 16);  // before anyone says it has read the stage
  tt_cp_async_commit();
  const float* next = stage + 4 * ((t + 1) % 64);
  const float sum = next[0] + next[1] + next[2] + next[3];
  __syncthreads();
  tt_cp_async_wait<0>();
  C[t] = sum;
)", kAsyncCopy);
  std::vector<float> in(512);
  for (int i = 0; i < 512; ++i) in[i] = float(i % 256 % 13) + (i >= 256 ? 100.0f : 0.0f);
  for (const CopyLanding landing : {CopyLanding::at_wait, CopyLanding::at_copy}) {
    const std::uint64_t seed = seed_landing(landing);
    const std::vector<float> out = overwriting.run({64, 1, 1}, in, 64, seed);
    int overwritten = 0;
    for (int t = 0; t < 64; ++t) {
      const float old_sum = neighbour_sum(in, t);
      ASSERT_TRUE(out[t] == old_sum || out[t] == old_sum + 400.0f) << "thread " << t << ": " << out[t];
      overwritten += out[t] == old_sum ? 0 : 1;
    }
    if (landing == CopyLanding::at_wait) {
      EXPECT_EQ(overwritten, 0) << "landing at the wait, every thread reads the stage it waited for";
    } else {
      EXPECT_GT(overwritten, 0) << "landing at once, seed " << seed << ": the race went unseen";
    }
  }
}

TEST(DeviceLibraryCpu, WaitingForTooFewGroupsReadsTheStaleStage) {
  // Two stages in flight; the wait leaves the newest N pending: N = 1 leaves stage 1 unwritten
  // (for copies that land at their wait, the moment that shows it).
  const std::string body = R"(
  __shared__ __align__(16) float stages[2][256];
  for (int s = 0; s < 2; ++s) {
    tt_cp_async_16(stages[s] + 4 * t, A + 256 * s + 4 * t, 16);
    tt_cp_async_commit();
  }
  WAIT;
  __syncthreads();
  C[t] = stages[0][(4 * t + 4) % 256] + stages[1][(4 * t + 4) % 256];
)";
  std::string all = body, too_few = body;
  all.replace(all.find("WAIT"), 4, "tt_cp_async_wait<0>()");
  too_few.replace(too_few.find("WAIT"), 4, "tt_cp_async_wait<1>()");
  std::vector<float> in(512);
  for (int i = 0; i < 512; ++i) in[i] = float(i);
  const std::uint64_t seed = seed_landing(CopyLanding::at_wait);
  const std::vector<float> right =
      CpuProbe("two_stages", all, kAsyncCopy).run({64, 1, 1}, in, 64, seed);
  const std::vector<float> stale =
      CpuProbe("two_stages_early", too_few, kAsyncCopy).run({64, 1, 1}, in, 64, seed);
  for (int t = 0; t < 64; ++t) {
    const int i = (4 * t + 4) % 256;
    EXPECT_EQ(right[t], in[i] + in[256 + i]) << t;
    EXPECT_TRUE(std::isnan(stale[t])) << t << ": stage 1 was read before its wait";
  }
}

TEST(DeviceLibraryCpu, AsyncCopiesZeroFillWhatTheSourceDoesNotGive) {
  const CpuProbe probe("copy_zero_fill", R"(
  __shared__ __align__(16) float s[12];
  if (t == 0) {
    tt_cp_async_16(s, A, 8);
    tt_cp_async_16(s + 4, nullptr, 0);
    tt_cp_async_4(s + 8, A + 2, 4);
    tt_cp_async_4(s + 9, nullptr, 0);
    tt_cp_async_commit();
    tt_cp_async_wait<0>();
    for (int i = 0; i < 10; ++i) C[i] = s[i];
  }
)",
                       kAsyncCopy);
  const std::vector<float> out = probe.run({32, 1, 1}, {1, 2, 3, 4}, 10);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 0, 0, 0, 0, 0, 0, 3, 0}));
}

TEST(DeviceLibraryCpu, AMisalignedSixteenByteCopyIsAnError) {
  const CpuProbe probe("copy_misaligned", R"(
  __shared__ __align__(16) float s[8];
  tt_cp_async_16(s + 1, A, 16);
)",
                       kAsyncCopy);
  try {
    probe.run({1, 1, 1}, std::vector<float>(8, 1.0f), 1);
    ADD_FAILURE() << "a misaligned copy ran";
  } catch (const LaunchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tt_cp_async_16: an address is not 16-byte aligned"));
  }
}

// <tiletune/named_barrier.h>: warp 0 produces 8 rounds into two stages of shared memory, warp 1
// consumes them; FULL[s] (barriers 1, 2) says a stage is written, EMPTY[s] (3, 4) that it is read.
std::string pipeline_body(bool full, bool empty) {
  std::string body = R"(
  __shared__ float stage[2][32];
  float sum = 0.0f;
  for (int r = 0; r < 8; ++r) {
    const int s = r % 2;
    if (t < 32) {
      if (r >= 2) EMPTY_WAIT;
      stage[s][lane] = A[32 * r + lane];
      FULL_ARRIVE;
    } else {
      FULL_WAIT;
      sum += stage[s][(lane + 1) % 32];
      EMPTY_ARRIVE;
    }
  }
  if (t >= 32) C[lane] = sum;
)";
  const auto put = [&](const std::string& name, const std::string& text) {
    body.replace(body.find(name), name.size(), text);
  };
  put("FULL_ARRIVE", full ? "tt_bar_arrive(1 + s, 64)" : "(void)0");
  put("FULL_WAIT", full ? "tt_bar_sync(1 + s, 64)" : "(void)0");
  put("EMPTY_WAIT", empty ? "tt_bar_sync(3 + s, 64)" : "(void)0");
  put("EMPTY_ARRIVE", empty ? "tt_bar_arrive(3 + s, 64)" : "(void)0");
  return body;
}

const std::string kNamedBarrier = "#include <tiletune/named_barrier.h>";

TEST(DeviceLibraryCpu, NamedBarriersPassStagesFromAProducerWarpToAConsumerWarp) {
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i) in[i] = float(i % 29 + 1);
  std::vector<float> expected(32, 0.0f);
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 8; ++r) expected[lane] += in[32 * r + (lane + 1) % 32];
  }
  const CpuProbe right("pipeline", pipeline_body(true, true), kNamedBarrier);
  const CpuProbe no_full("pipeline_no_full", pipeline_body(false, true), kNamedBarrier);
  const CpuProbe no_empty("pipeline_no_empty", pipeline_body(true, false), kNamedBarrier);
  // A warp that runs ahead reads or overwrites a stage out of turn, or arrives at its other
  // barrier a second time before that completed: a wrong result or an error.
  const auto caught = [&](const CpuProbe& mutant, std::uint64_t seed) {
    try {
      return mutant.run({64, 1, 1}, in, 32, seed) != expected;
    } catch (const LaunchError& e) {
      return std::string(e.what()).find("before, and it has not completed since") != std::string::npos;
    }
  };
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    EXPECT_EQ(right.run({64, 1, 1}, in, 32, seed), expected) << "seed " << seed;
    EXPECT_TRUE(caught(no_full, seed)) << "seed " << seed << ": a consumer that does not wait";
    EXPECT_TRUE(caught(no_empty, seed)) << "seed " << seed << ": a producer that does not wait";
  }
}

// The LaunchError a probe's run ends with ("" when it ends without one).
std::string launch_error(const std::string& name, const std::string& body, std::uint32_t threads) {
  try {
    CpuProbe(name, body, kNamedBarrier).run({threads, 1, 1}, std::vector<float>(64, 1.0f), 1);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceLibraryCpu, ANamedBarrierThatNeverCompletesIsReported) {
  // Warp 2 exits at once, warp 0 after arriving: barrier 1 waits for 96 threads, 64 arrive.
  const std::string error = launch_error("bar_deadlock", R"(
  if (t >= 64) return;
  if (t < 32) tt_bar_arrive(1, 96); else tt_bar_sync(1, 96);
)",
                                         96);
  EXPECT_THAT(error, HasSubstr("named barrier 1 never completes in block (0, 0, 0)"));
  EXPECT_THAT(error, HasSubstr("for 96 threads, 64 arrived"));
  EXPECT_THAT(error, HasSubstr("32 wait at named barriers, 0 at a __syncthreads(), 64 exited"));
}

TEST(DeviceLibraryCpu, NamedBarriersRefuseWhatTheGpuDoesNotDefine) {
  EXPECT_THAT(launch_error("bar_zero", "tt_bar_sync(0, 32);", 32),
              HasSubstr("named barriers are 1 to 15 (0 is __syncthreads()'s)"));
  EXPECT_THAT(launch_error("bar_count", "tt_bar_sync(1, 48);", 64),
              HasSubstr("the thread count is not a positive multiple of 32"));
  EXPECT_THAT(launch_error("bar_too_many", "tt_bar_sync(1, 64);", 32), HasSubstr("the block has 32 threads"));
  EXPECT_THAT(launch_error("bar_counts_differ", "if (t < 32) tt_bar_sync(1, 64); else tt_bar_arrive(1, 96);", 96),
              HasSubstr("barrier 1 is counting to"));
  EXPECT_THAT(launch_error("bar_half_warps", "if ((t < 32) == (lane < 16)) tt_bar_sync(1, 32);\n  __syncthreads();", 64),
              HasSubstr("not the whole warp"));
  EXPECT_THAT(launch_error("bar_twice", "if (t < 32) { tt_bar_arrive(1, 64); tt_bar_arrive(1, 64); } else tt_bar_sync(1, 64);", 64),
              HasSubstr("arrived at barrier 1 before"));
}

// Distinct small integers: R and C distinct per element, S small and uneven, so that an element
// taken from the wrong place (a fragment, the swizzle, a k8 slice) shows; every sum is exact.
std::vector<float> wgmma_inputs() {
  std::vector<float> in(testing_support::kWgmmaInputs);
  for (int i = 0; i < 2048; ++i) in[i] = float(i % 61 - 30);
  for (int i = 0; i < 2048; ++i) in[2048 + i] = float((i * 7) % 13 - 6);
  for (int i = 0; i < 4096; ++i) in[4096 + i] = float(1000 * (i % 97));
  return in;
}

// A wgmma probe's D on wgmma_inputs() is the exact product, under three schedules.
void expect_exact_wgmma_product(const CpuProbe& probe) {
  using namespace testing_support;
  const std::vector<float> in = wgmma_inputs();
  const std::vector<double> expected = wgmma_reference(in.data());
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    const std::vector<float> out = probe.run({128, 1, 1}, in, kWgmmaOutputs, seed);
    for (int i = 0; i < kWgmmaOutputs; ++i) {
      ASSERT_EQ(out[i], float(expected[i])) << "seed " << seed << " D[" << i / 64 << "][" << i % 64 << "]";
    }
  }
}

TEST(DeviceLibraryCpu, WgmmaComputesByThePtxLayoutsAndTheSwizzle) {
  using namespace testing_support;
  expect_exact_wgmma_product(CpuProbe("wgmma", wgmma_probe_body(), kWgmmaIncludes));
}

TEST(DeviceLibraryCpu, WgmmaSharedFormReadsBothOperandsByTheirDescriptors) {
  using namespace testing_support;
  expect_exact_wgmma_product(
      CpuProbe("wgmma_shared_form", wgmma_shared_form_probe_body(), kWgmmaIncludes));
}

TEST(DeviceLibraryCpu, WgmmaIsCarriedOutWhenTheWaitRetiresIt) {
  using namespace testing_support;
  const std::vector<float> in = wgmma_inputs();
  // Without the wait the accumulators keep C; with shared memory cleared between the commit and
  // the wait, the wait multiplies zeros (the GPU may read either: the kernel must not write it).
  const CpuProbe unwaited("wgmma_unwaited", wgmma_probe_body("(void)0;"), kWgmmaIncludes);
  const CpuProbe overwritten(
      "wgmma_overwritten",
      wgmma_probe_body("tt_wgmma_wait<0>(d);",
                       "__syncthreads(); for (int i = t; i < 64 * 32; i += 128) tile[i] = 0.0f; "
                       "__syncthreads();"),
      kWgmmaIncludes);
  const std::vector<float> kept = unwaited.run({128, 1, 1}, in, kWgmmaOutputs);
  const std::vector<float> zeros = overwritten.run({128, 1, 1}, in, kWgmmaOutputs);
  for (int i = 0; i < kWgmmaOutputs; ++i) {
    ASSERT_EQ(kept[i], in[4096 + i]) << "unwaited D[" << i / 64 << "][" << i % 64 << "]";
    // Row r of D: R's row r times S's rows, now zero: C alone.
    ASSERT_EQ(zeros[i], in[4096 + i]) << "overwritten D[" << i / 64 << "][" << i % 64 << "]";
  }
}

TEST(DeviceLibraryCpu, WgmmaDescriptorOutsideTheSwizzledTileIsAnError) {
  using namespace testing_support;
  std::string body = wgmma_probe_body();
  body.replace(body.find("tile + 8 * s"), 12, "tile + 8 * s + 4");
  const CpuProbe probe("wgmma_misaligned", body, kWgmmaIncludes);
  try {
    probe.run({128, 1, 1}, wgmma_inputs(), kWgmmaOutputs);
    ADD_FAILURE() << "a descriptor between k8 slices ran";
  } catch (const LaunchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tt_wgmma_descriptor: the start is not a k8 slice"));
  }
}

TEST(DeviceLibraryCpu, SetmaxnregTakesOnlyCountsTheGpuAccepts) {
  // A count the GPU accepts: nothing to do on the CPU, the block runs as it would without it.
  const CpuProbe valid("setmaxnreg", "tt_setmaxnreg_dec<40>();\n  C[t] = A[t] + 1.0f;",
                       testing_support::kWgmmaIncludes);
  const std::vector<float> in(128, 2.0f);
  EXPECT_EQ(valid.run({128, 1, 1}, in, 128), std::vector<float>(128, 3.0f));
  // One it refuses (not a multiple of 8) stops the compile, on the CPU as on the GPU.
  try {
    const CpuProbe odd("setmaxnreg_odd", "tt_setmaxnreg_inc<100>();", testing_support::kWgmmaIncludes);
    ADD_FAILURE() << "setmaxnreg with 100 registers compiled";
  } catch (const CompileError& e) {
    EXPECT_THAT(std::string(e.what()) + e.log(), HasSubstr("setmaxnreg: a multiple of 8, 24 to 256"));
  }
}

}  // namespace
}  // namespace tiletune
