// CompiledKernels: a tuning run's configurations compiled once, in parallel; and the fast template,
// a sample of whose configurations that takes every pair of parameter values must compile for
// Hopper. NVRTC only, no GPU.
#include "tuner/backend/gpu/compiled_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/source_tree.h"
#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;

using testing_support::kTemplates;

// T = 4 compiles; T = 8 names something that does not exist.
KernelTemplate half_broken_template() {
  return parse_template(
      "// tiletune: name half\n// tiletune: entry half_gemm\n// tiletune: param T 4 8\n"
      "// tiletune: block T\n// tiletune: grid 1\n"
      "extern \"C\" __global__ void half_gemm(const float* A, const float* B, float* C, int M, int N,"
      " int K, int lda, int ldb, int ldc) {\n"
      "#if TT_T == 8\n  C[threadIdx.x] = undeclared_thing;\n#else\n  C[threadIdx.x] = TT_T;\n#endif\n"
      "}\n",
      "half.cu");
}

TEST(CompiledKernels, CompilesEachConfigurationOnceAndKeepsFailures) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = half_broken_template();
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  CompiledKernels compiled("sm_90", 2);
  compiled.prepare(tmpl, configs);
  const CompiledKernelImage& first = compiled.get(tmpl, configs[0]);
  EXPECT_EQ(first.arch, "sm_90");
  EXPECT_EQ(&compiled.get(tmpl, configs[0]), &first) << "the same image, not a new compile";
  for (int attempt = 0; attempt < 2; ++attempt) {  // the failure is remembered, log and all
    try {
      compiled.get(tmpl, configs[1]);
      ADD_FAILURE() << "T=8 compiled";
    } catch (const CompileError& e) {
      EXPECT_EQ(std::string(e.what()), "half [T=8] does not compile for sm_90");
      EXPECT_THAT(e.log(), HasSubstr("undeclared_thing"));
    }
  }
}

TEST(CompiledKernels, GetCompilesWhatWasNotPrepared) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = half_broken_template();
  CompiledKernels compiled("sm_80");
  EXPECT_EQ(compiled.get(tmpl, tmpl.parse_configuration("T=4")).arch, "sm_80");
}

// The tuner streams a batch: every configuration's outcome is told once, with its position, as
// soon as it is known, the remembered ones too; a stop leaves the rest uncompiled.
TEST(CompiledKernels, PrepareTellsEachOutcomeWithItsPositionAndStops) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = half_broken_template();
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  ASSERT_EQ(configs.size(), 2u);
  CompiledKernels compiled("sm_90", 2);

  std::stop_source stopped;
  stopped.request_stop();
  int told = 0;
  compiled.prepare(tmpl, configs, [&](std::size_t, const CompileOutcome&) { ++told; }, stopped.get_token());
  EXPECT_EQ(told, 0);
  EXPECT_EQ(compiled.statistics().compiled, 0) << "stopped before anything started";

  std::mutex mutex;
  std::map<std::size_t, bool> compiles;  // position: whether it compiled
  const auto tell = [&](std::size_t i, const CompileOutcome& outcome) {
    std::lock_guard lock(mutex);
    EXPECT_TRUE(compiles.emplace(i, outcome.image.has_value()).second) << "told twice: " << i;
  };
  compiled.prepare(tmpl, configs, tell);
  EXPECT_THAT(compiles, ::testing::ElementsAre(std::pair(0u, true), std::pair(1u, false)));
  EXPECT_EQ(compiled.statistics().compiled, 2);

  compiles.clear();
  const std::vector<Configuration> again{configs[1], configs[0], configs[1]};
  compiled.prepare(tmpl, again, tell);
  EXPECT_THAT(compiles, ::testing::ElementsAre(std::pair(0u, false), std::pair(1u, true), std::pair(2u, false)))
      << "remembered outcomes, a repeated configuration too";
  EXPECT_EQ(compiled.statistics().compiled, 2) << "nothing compiled again";
}

// A search and the compile ahead of the next templates prepare into one CompiledKernels at once:
// what one of them is compiling the other waits for, so each configuration is compiled once and
// both are told every outcome.
TEST(CompiledKernels, PreparesAtOnceCompileEachConfigurationOnce) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = parse_template(
      "// tiletune: name eight\n// tiletune: entry eight_gemm\n// tiletune: param T 1 2 3 4 5 6 7 8\n"
      "// tiletune: block 32\n// tiletune: grid 1\n"
      "extern \"C\" __global__ void eight_gemm(const float* A, const float* B, float* C, int M, int N,"
      " int K, int lda, int ldb, int ldc) {\n  C[threadIdx.x] = TT_T * A[threadIdx.x];\n}\n",
      "eight.cu");
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  ASSERT_EQ(configs.size(), 8u);
  CompiledKernels compiled("sm_90", 2);
  std::mutex mutex;
  std::map<std::size_t, int> told[2];  // per prepare: position -> times told
  std::latch start(2);
  {
    std::vector<std::jthread> preparers;
    for (int p = 0; p < 2; ++p) {
      preparers.emplace_back([&, p] {
        start.arrive_and_wait();
        compiled.prepare(tmpl, configs, [&](std::size_t i, const CompileOutcome& outcome) {
          std::lock_guard lock(mutex);
          EXPECT_TRUE(outcome.image.has_value()) << outcome.log;
          ++told[p][i];
        }, {}, p == 0 ? 3 : 1);
      });
    }
  }
  EXPECT_EQ(compiled.statistics().compiled, 8) << "a configuration compiled by both";
  for (const auto& one : told) {
    EXPECT_EQ(one.size(), 8u);
    for (const auto& [i, times] : one) EXPECT_EQ(times, 1) << "position " << i;
  }
}

// warp_tiled's configurations for NVRTC: every pair of values of two parameters that some valid
// configuration takes, its launch bounds counted as two more parameters (the block size, and the
// blocks per SM it asks for: warp_tiled.cu's kMinBlocksPerSM, from TM * TN, SWIZZLE and the block
// size), so that every launch bound the space has is compiled; then the configurations with the
// most and the fewest threads, accumulators per thread, k in flight, FFMAs per step and dynamic
// shared memory. Greedy: each next configuration adds the most of what is not yet taken, the
// first in the space's order on ties, so the sample is the same every run.
std::vector<Configuration> warp_tiled_nvrtc_sample(const KernelTemplate& tmpl,
                                                   const std::vector<Configuration>& configs) {
  using Value = std::pair<std::string, std::int64_t>;
  const GemmShape shape{4096, 4096, 4096};
  const auto values_of = [&](const Configuration& config) {
    std::vector<Value> values = config.values;
    const auto threads = std::int64_t(tmpl.launch_geometry(config, shape, 132).threads_per_block());
    values.emplace_back("threads", threads);
    const bool small_tile = config.at("TM") * config.at("TN") <= 64 && config.at("SWIZZLE") == 0;
    values.emplace_back("min_blocks_per_sm", small_tile ? 512 / threads : 1);
    return values;
  };
  std::vector<std::set<std::pair<Value, Value>>> pairs_of;
  std::set<std::pair<Value, Value>> untaken;
  for (const Configuration& config : configs) {
    const std::vector<Value> values = values_of(config);
    std::set<std::pair<Value, Value>> pairs;
    for (std::size_t i = 0; i < values.size(); ++i) {
      for (std::size_t j = i + 1; j < values.size(); ++j) pairs.emplace(values[i], values[j]);
    }
    untaken.insert(pairs.begin(), pairs.end());
    pairs_of.push_back(std::move(pairs));
  }
  std::set<std::size_t> picked;
  while (!untaken.empty()) {
    std::size_t best = 0, best_new = 0;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      std::size_t fresh = 0;
      for (const auto& pair : pairs_of[i]) fresh += untaken.count(pair);
      if (fresh > best_new) best = i, best_new = fresh;
    }
    for (const auto& pair : pairs_of[best]) untaken.erase(pair);
    picked.insert(best);
  }
  // The extremes: where ptxas has the most (or least) to fit into registers and shared memory.
  const std::vector<std::function<std::int64_t(const Configuration&)>> measures = {
      [&](const Configuration& c) { return std::int64_t(tmpl.launch_geometry(c, shape, 132).threads_per_block()); },
      [](const Configuration& c) { return c.at("TM") * c.at("TN"); },
      [](const Configuration& c) { return c.at("BK") * c.at("STAGES"); },
      [](const Configuration& c) { return c.at("TM") * c.at("TN") * c.at("BK"); },
      [&](const Configuration& c) { return std::int64_t(tmpl.launch_geometry(c, shape, 132).dynamic_shared_bytes); }};
  for (const auto& measure : measures) {
    std::size_t most = 0, fewest = 0;
    for (std::size_t i = 1; i < configs.size(); ++i) {
      if (measure(configs[i]) > measure(configs[most])) most = i;
      if (measure(configs[i]) < measure(configs[fewest])) fewest = i;
    }
    picked.insert(most);
    picked.insert(fewest);
  }
  std::vector<Configuration> sample;
  for (std::size_t i : picked) sample.push_back(configs[i]);
  return sample;
}

// warp_tiled's space is large (601 configurations, about 1.6 CPU-s of NVRTC each: compiling them
// all was CI's longest test, 637 s). CI's CPU fuzz builds the 111 that take every combination of
// three parameters' values with the host compiler, so an error in the template's own code fails
// there; what only NVRTC
// and ptxas see is the device side of <tiletune/async_copy.h> (the same two copy widths in every
// configuration), the launch bounds, and register and shared-memory allocation, which follow from
// the parameters' values and the launch bounds: a sample that takes every pair of those and the
// extremes (warp_tiled_nvrtc_sample) is compiled here, in parallel, as a tune does. In CI the main
// job compiles a new covering sample each run besides, and the GPU checks (tools/scripts/
// gpu_fuzz_check.sh, gpu_scale.sh) compile every configuration. A few of the largest thread tiles
// spill a little (ptxas's choice; they run correctly and are timed like the rest): the count is
// printed, not failed.
TEST(CompiledKernels, WarpTiledPairwiseSampleCompilesForHopper) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = load_template(kTemplates / "warp_tiled.cu");
  const std::vector<Configuration> space = enumerate_configurations(tmpl);
  ASSERT_GT(space.size(), 100u);
  const std::vector<Configuration> configs = warp_tiled_nvrtc_sample(tmpl, space);
  // Every value of every parameter is in it (and so every pair, by construction).
  for (const Parameter& parameter : tmpl.parameters) {
    for (std::int64_t value : parameter.values) {
      EXPECT_TRUE(std::any_of(configs.begin(), configs.end(), [&](const Configuration& c) {
        return c.at(parameter.name) == value;
      })) << parameter.name << "=" << value << " is not compiled";
    }
  }
  // Through the user's cubin cache, as `tiletune compile` stores there: in CI what the main job's
  // covering sample compiled is not compiled again (a cached outcome is the compile's own).
  CompiledKernels compiled("sm_90", 0, default_cubin_cache());
  compiled.prepare(tmpl, configs);
  int spilling = 0;
  for (const Configuration& config : configs) {
    SCOPED_TRACE(config.to_string());
    try {
      const CompiledKernelImage& image = compiled.get(tmpl, config);
      EXPECT_GT(image.report.registers, 0);
      EXPECT_LE(image.report.registers, 255);
      EXPECT_EQ(image.report.static_shared_bytes, 0) << "its tiles are dynamic shared memory";
      spilling += image.report.spill_bytes() > 0;
    } catch (const CompileError& e) {
      ADD_FAILURE() << e.what() << "\n" << e.log();
    }
  }
  std::printf("%zu of warp_tiled's %zu configurations compiled for sm_90 (%d now, %d from the cache), "
              "%d of them with spills\n", configs.size(), space.size(), compiled.statistics().compiled,
              compiled.statistics().from_cache, spilling);
}

}  // namespace
}  // namespace tiletune
