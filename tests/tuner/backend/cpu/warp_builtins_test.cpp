// The warp-level built-ins on the CPU backend: shuffles of every kind with widths and masks,
// votes, __syncwarp, __activemask, against references written from the CUDA programming guide's
// wording; divergence and exited lanes reported with the lanes named; warp collectives mixed with
// __syncthreads under varied schedules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/gemm_executor.h"
#include "tests/tuner/backend/cpu/cpu_probe.h"
#include "tuner/backend/cpu/block_scheduler.h"

namespace tiletune {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_support::bits;
using testing_support::CpuProbe;
using testing_support::kProbeBodyLine;

// The lane a shuffle reads, per the programming guide: within segments of `width` lanes, __shfl
// reads the segment's lane src % width; __shfl_up lane - delta, keeping its own value where that
// leaves the segment; __shfl_down lane + delta, the same; __shfl_xor lane ^ mask, keeping its own
// value where that lies in a later segment.
int shfl_source(int lane, int src, int width) { return lane / width * width + src % width; }
int shfl_up_source(int lane, int delta, int width) {
  return lane % width >= delta ? lane - delta : lane;
}
int shfl_down_source(int lane, int delta, int width) {
  return lane % width + delta < width ? lane + delta : lane;
}
int shfl_xor_source(int lane, int mask, int width) {
  return (lane ^ mask) < lane / width * width + width ? lane ^ mask : lane;
}

std::vector<float> thread_values(int threads) {
  std::vector<float> values(threads);
  for (int t = 0; t < threads; ++t) values[t] = 1.5f * t + 100.0f;
  return values;
}

TEST(WarpBuiltins, ShufflesOfEveryKindAndWidth) {
  const CpuProbe probe("shuffles", R"(
  const float x = A[t];
  const int W[4] = {32, 16, 8, 2};
  for (int w = 0; w < 4; ++w) {
    float* out = C + (w * 64 + t) * 4;
    out[0] = __shfl_sync(0xffffffffu, x, lane * 7 + 3, W[w]);
    out[1] = __shfl_up_sync(0xffffffffu, x, 3, W[w]);
    out[2] = __shfl_down_sync(0xffffffffu, x, 5, W[w]);
    out[3] = __shfl_xor_sync(0xffffffffu, x, 9, W[w]);
  }
)");
  const std::vector<float> in = thread_values(64);
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const std::vector<float> out = probe.run({64, 1, 1}, in, 4 * 64 * 4, seed);
    const int widths[4] = {32, 16, 8, 2};
    for (int w = 0; w < 4; ++w) {
      for (int t = 0; t < 64; ++t) {
        const int lane = t % 32, warp = t / 32 * 32, width = widths[w];
        const float* got = &out[(w * 64 + t) * 4];
        EXPECT_EQ(got[0], in[warp + shfl_source(lane, (lane * 7 + 3) & 31, width)])
            << "__shfl_sync width " << width << " thread " << t;
        EXPECT_EQ(got[1], in[warp + shfl_up_source(lane, 3, width)])
            << "__shfl_up_sync width " << width << " thread " << t;
        EXPECT_EQ(got[2], in[warp + shfl_down_source(lane, 5, width)])
            << "__shfl_down_sync width " << width << " thread " << t;
        EXPECT_EQ(got[3], in[warp + shfl_xor_source(lane, 9, width)])
            << "__shfl_xor_sync width " << width << " thread " << t;
      }
    }
  }
}

TEST(WarpBuiltins, ShufflesMoveEveryTypeWhole) {
  const CpuProbe probe("shuffle_types", R"(
  const unsigned long long big = (1ull << 40) | (unsigned long long)t;
  const unsigned long long got = __shfl_xor_sync(0xffffffffu, big, 1);
  C[t * 4 + 0] = (float)(got >> 40);
  C[t * 4 + 1] = (float)(got & 0xffu);
  C[t * 4 + 2] = (float)(__shfl_down_sync(0xffffffffu, A[t] + 0.25, 1) - 0.25);
  C[t * 4 + 3] = (float)__shfl_sync(0xffffffffu, -t, 0);
)");
  const std::vector<float> in = thread_values(32);
  const std::vector<float> out = probe.run({32, 1, 1}, in, 32 * 4);
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(out[t * 4 + 0], 1.0f) << t;
    EXPECT_EQ(out[t * 4 + 1], float(t ^ 1)) << t;
    EXPECT_EQ(out[t * 4 + 2], in[t < 31 ? t + 1 : t]) << t;
    EXPECT_EQ(out[t * 4 + 3], 0.0f) << t;
  }
}

TEST(WarpBuiltins, HalvesOfAWarpShuffleApartWithTheirOwnMasks) {
  // Lanes 0-15 and 16-31 at different calls, each naming only its own half: no divergence. A
  // source lane outside the mask gives 0xff bytes.
  const CpuProbe probe("half_masks", R"(
  float v;
  if (lane < 16) {
    v = __shfl_xor_sync(0x0000ffffu, A[t], 1);
  } else {
    v = __shfl_down_sync(0xffff0000u, A[t], 2);
  }
  C[t] = v;
  if (lane < 16) C[32 + t] = __shfl_sync(0x0000ffffu, A[t], lane + 16);
)");
  const std::vector<float> in = thread_values(32);
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const std::vector<float> out = probe.run({32, 1, 1}, in, 64, seed);
    for (int t = 0; t < 16; ++t) EXPECT_EQ(out[t], in[t ^ 1]) << t;
    for (int t = 16; t < 32; ++t) EXPECT_EQ(out[t], in[t + 2 < 32 ? t + 2 : t]) << t;
    for (int t = 0; t < 16; ++t) EXPECT_EQ(bits(out[32 + t]), 0xffffffffu) << t;
  }
}

TEST(WarpBuiltins, AWarpThatTheBlockHasInPartLeavesTheMissingLanesOut) {
  // 48 threads: the second warp has lanes 0-15; a full mask names lanes it does not have.
  const CpuProbe probe("partial_warp", R"(
  C[t] = __shfl_xor_sync(0xffffffffu, A[t], 3);
  C[48 + t] = (float)__popc(__ballot_sync(0xffffffffu, 1));
)");
  const std::vector<float> in = thread_values(48);
  const std::vector<float> out = probe.run({48, 1, 1}, in, 96);
  for (int t = 0; t < 48; ++t) {
    EXPECT_EQ(out[t], in[t ^ 3]) << t;
    EXPECT_EQ(out[48 + t], t < 32 ? 32.0f : 16.0f) << t;
  }
}

TEST(WarpBuiltins, Votes) {
  const CpuProbe probe("votes", R"(
  const int p = (t % 3 == 0) || t == 40;
  unsigned* out = reinterpret_cast<unsigned*>(C) + t * 6;
  out[0] = __ballot_sync(0xffffffffu, p);
  out[1] = __any_sync(0xffffffffu, p);
  out[2] = __all_sync(0xffffffffu, p);
  out[3] = __all_sync(0xffffffffu, t < 1000);
  out[4] = __any_sync(0xffffffffu, t == 1000);
  out[5] = lane < 8 ? __ballot_sync(0x000000ffu, lane % 2) : 7u;
)");
  const std::vector<float> out = probe.run({64, 1, 1}, {}, 64 * 6);
  for (int t = 0; t < 64; ++t) {
    const int warp = t / 32;
    std::uint32_t ballot = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const int u = warp * 32 + lane;
      if (u % 3 == 0 || u == 40) ballot |= 1u << lane;
    }
    const std::uint32_t* got = reinterpret_cast<const std::uint32_t*>(out.data()) + t * 6;
    EXPECT_EQ(got[0], ballot) << t;
    EXPECT_EQ(got[1], 1u) << t;
    EXPECT_EQ(got[2], 0u) << t;
    EXPECT_EQ(got[3], 1u) << t;
    EXPECT_EQ(got[4], 0u) << t;
    EXPECT_EQ(got[5], t % 32 < 8 ? 0xaau : 7u) << t;
  }
}

// Each lane writes its slot of shared memory and reads its neighbour's.
const char* kNeighbourBody = R"(
  __shared__ float slots[32];
  slots[lane] = A[t];
  SYNC;
  C[t] = slots[(lane + 1) % 32];
)";

std::string with_sync(const std::string& sync) {
  std::string body = kNeighbourBody;
  body.replace(body.find("SYNC"), 4, sync);
  return body;
}

TEST(WarpBuiltins, SyncwarpOrdersSharedMemoryWithinAWarp) {
  const CpuProbe synced("syncwarp", with_sync("__syncwarp()"));
  const CpuProbe unsynced("no_syncwarp", with_sync("(void)0"));
  const std::vector<float> in = thread_values(32);
  int unsynced_wrong = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const std::vector<float> out = synced.run({32, 1, 1}, in, 32, seed);
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], in[(t + 1) % 32]) << "seed " << seed;
    const std::vector<float> raced = unsynced.run({32, 1, 1}, in, 32, seed);
    for (int t = 0; t < 32; ++t) unsynced_wrong += raced[t] != in[(t + 1) % 32];
  }
  EXPECT_GT(unsynced_wrong, 0) << "without __syncwarp a lane must read a slot not yet written";
}

TEST(WarpBuiltins, ActivemaskIsTheLanesAtTheSameCall) {
  const CpuProbe probe("activemask", R"(
  unsigned* out = reinterpret_cast<unsigned*>(C);
  out[t] = __activemask();
  if (lane % 2 == 0) {
    out[48 + t] = __activemask();
  } else {
    out[48 + t] = __activemask();
  }
)");
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    const std::vector<float> out = probe.run({48, 1, 1}, {}, 96, seed);
    const std::uint32_t* got = reinterpret_cast<const std::uint32_t*>(out.data());
    for (int t = 0; t < 48; ++t) {
      const std::uint32_t warp = t < 32 ? 0xffffffffu : 0x0000ffffu;
      EXPECT_EQ(got[t], warp) << t;
      EXPECT_EQ(got[48 + t], warp & (t % 2 == 0 ? 0x55555555u : 0xaaaaaaaau)) << t;
    }
  }
}

TEST(WarpBuiltins, WarpReductionsBetweenBarriersAreRightForEverySeed) {
  // A block sum: each warp reduces with shuffles, warp 0 adds the warps' sums from shared memory.
  const CpuProbe probe("block_sum", R"(
  __shared__ float warp_sums[8];
  float v = A[t];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sums[t / 32] = v;
  __syncthreads();
  if (t < 32) {
    float w = lane < 8 ? warp_sums[lane] : 0.0f;
    for (int offset = 4; offset > 0; offset /= 2) w += __shfl_xor_sync(0xffffffffu, w, offset);
    if (lane == 0) C[0] = w;
  }
)");
  std::vector<float> in(256);
  float sum = 0;
  for (int t = 0; t < 256; ++t) sum += in[t] = float(t % 17 - 8);
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    EXPECT_EQ(probe.run({32, 8, 1}, in, 1, seed)[0], sum) << "seed " << seed;
  }
}

// The LaunchError a probe's run throws, or "" when it throws none.
std::string launch_error(const CpuProbe& probe, std::uint32_t threads, std::uint64_t seed = 0) {
  try {
    probe.run({threads, 1, 1}, std::vector<float>(threads, 1.0f), threads, seed);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

TEST(WarpBuiltins, LanesAtDifferentShufflesAreDivergence) {
  const CpuProbe probe("divergent_shuffles", R"(
  float v = A[t];
  if (lane < 16) {
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  } else {
    v = __shfl_xor_sync(0xffffffffu, v, 2);
  }
  C[t] = v;
)");
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const std::string error = launch_error(probe, 64, seed);
    const std::string first = std::to_string(kProbeBodyLine + 3);
    const std::string second = std::to_string(kProbeBodyLine + 5);
    EXPECT_THAT(error, AllOf(HasSubstr("warp divergence in block (0, 0, 0), warp "),
                             HasSubstr("lanes 0-15"), HasSubstr("lanes 16-31"),
                             HasSubstr("__shfl_xor_sync of line " + first),
                             HasSubstr("__shfl_xor_sync of line " + second)))
        << "seed " << seed;
  }
}

TEST(WarpBuiltins, LanesAtABarrierAndAShuffleAreDivergence) {
  const CpuProbe probe("shuffle_and_barrier", R"(
  if (lane < 8) {
    __syncthreads();
  } else {
    __syncwarp();
  }
)");
  EXPECT_THAT(launch_error(probe, 32),
              AllOf(HasSubstr("warp divergence in block (0, 0, 0), warp 0: lanes 8-31 wait at the "
                              "__syncwarp of line " +
                              std::to_string(kProbeBodyLine + 4) + " (mask 0xffffffff)"),
                    HasSubstr("lanes 0-7 at the __syncthreads() of line " +
                              std::to_string(kProbeBodyLine + 2))));
}

TEST(WarpBuiltins, ALaneThatExitedBeforeACollectiveNamingItIsAnError) {
  const CpuProbe probe("exited_lane", R"(
  if (lane == 5) return;
  C[t] = __shfl_xor_sync(0xffffffffu, A[t], 1);
)");
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    EXPECT_THAT(launch_error(probe, 32, seed), AllOf(HasSubstr("lane 5"), HasSubstr("exited")))
        << "seed " << seed;
  }
}

TEST(WarpBuiltins, AMaskThatLeavesOutTheCallerIsAnError) {
  const CpuProbe probe("foreign_mask", R"(
  __syncwarp(1u << ((lane + 1) % 32));
)");
  EXPECT_THAT(launch_error(probe, 32),
              AllOf(HasSubstr("__syncwarp of line " + std::to_string(kProbeBodyLine + 1)),
                    HasSubstr("leaves out the calling lane")));
}

TEST(WarpBuiltins, AShuffleWidthThatIsNoPowerOfTwoIsAnError) {
  const CpuProbe probe("bad_width", R"(
  C[t] = __shfl_sync(0xffffffffu, A[t], 0, 12);
)");
  EXPECT_THAT(launch_error(probe, 32), HasSubstr("not a power of 2"));
}

// How far the other warp got, read with no barrier (a race on purpose): warp by warp, the warp
// that runs first finishes its 8 rounds of __syncwarp before the other starts, so it sees 0 and
// the other sees 8; otherwise the warps keep within a collective of each other.
TEST(WarpBuiltins, AWarpMayRunAWholePhaseAheadOfAnother) {
  const CpuProbe probe("warp_progress", R"(
  __shared__ int progress[2];
  const int warp = t / 32;
  if (t % 32 == 0) progress[warp] = 0;
  __syncthreads();
  for (int round = 1; round <= 8; ++round) {
    __syncwarp();
    if (t % 32 == 0) progress[warp] = round;
  }
  C[t] = progress[1 - warp];
)");
  std::uint64_t apart = 0, together = 0;
  while (!runs_warp_by_warp(apart, 0)) ++apart;
  while (runs_warp_by_warp(together, 0)) ++together;
  const std::vector<float> a = probe.run({64, 1, 1}, {}, 64, apart);
  EXPECT_EQ(std::min(a[0], a[32]), 0.0f) << "seed " << apart;
  EXPECT_EQ(std::max(a[0], a[32]), 8.0f) << "seed " << apart;
  const std::vector<float> b = probe.run({64, 1, 1}, {}, 64, together);
  EXPECT_GE(std::min(b[0], b[32]), 7.0f) << "seed " << together;
}

// Fiber resumes of one launch of 64 blocks of 256 threads doing 64 rounds of `step`: the
// scheduler's cost, which neither the machine nor its load changes (a time would).
std::uint64_t resumes_per_launch(const CpuProbe& probe) {
  const std::uint64_t before = fiber_resume_count();
  probe.run({256, 1, 1}, std::vector<float>(256 * 64, 1.0f), 256 * 64, 0, 0, 64);
  return fiber_resume_count() - before;
}

// A shuffle suspends each lane at most once, as a barrier suspends each thread once: a collective
// that resumed its lanes at every arrival (up to 32 times the barrier's cost) would make
// warp-level templates too slow to fuzz in CI.
TEST(WarpBuiltins, AShuffleCostsWhatABarrierCosts) {
  const std::string rounds = R"(
  float v = A[blockIdx.x * 256 + t];
  for (int round = 0; round < 64; ++round) {
    STEP;
  }
  C[blockIdx.x * 256 + t] = v;
)";
  std::string with_barriers = rounds, with_shuffles = rounds;
  with_barriers.replace(with_barriers.find("STEP"), 4, "v += 1.0f; __syncthreads()");
  with_shuffles.replace(with_shuffles.find("STEP"), 4, "v += __shfl_xor_sync(~0u, v, 1)");
  const std::uint64_t barriers = resumes_per_launch(CpuProbe("barrier_rounds", with_barriers));
  const std::uint64_t shuffles = resumes_per_launch(CpuProbe("shuffle_rounds", with_shuffles));
  std::printf("64 blocks x 256 threads x 64 rounds: %llu fiber resumes with __syncthreads, %llu "
              "with __shfl_xor_sync\n",
              static_cast<unsigned long long>(barriers), static_cast<unsigned long long>(shuffles));
  // A barrier: each thread once to start and once per round. A shuffle: each lane once to start,
  // and per round the 31 lanes that wait for the last one of their warp.
  EXPECT_EQ(barriers, 64u * 256u * (1 + 64));
  EXPECT_EQ(shuffles, 64u * 8u * (32 + 64 * 31));
}

}  // namespace
}  // namespace tiletune
