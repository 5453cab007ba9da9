// The tuning pipeline's GPU stages: the full-shape verifier, the event timer and a whole small
// tune into a fresh database. Skipped ("no GPU: <reason>") where GpuDevice cannot open a GPU; the
// device-limit checks at the end need no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "tests/support/gpu_test.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/backend/gpu/kernel_timer.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/configurations.h"
#include "tuner/core/error_bound.h"
#include "tuner/pipeline/shape_verifier.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

using testing_support::kTemplates;

class GpuPipeline : public testing_support::GpuTest {
 protected:
  std::string arch() const { return device_->properties().arch(); }

};

KernelTemplate tiled() { return load_template(kTemplates / "tiled.cu"); }

KernelTemplate tiled_mutant(const std::string& from, const std::string& to) {
  KernelTemplate original = tiled();
  std::string source = original.source;
  const std::size_t at = source.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "tiled.cu no longer has '" << from << "'";
    return original;
  }
  source.replace(at, from.size(), to);
  return parse_template(source, "tiled_mutant.cu");
}

// --- ShapeVerifier --------------------------------------------------------------------------

TEST_F(GpuPipeline, ShapeVerifierAcceptsTiledAtAnAwkwardShape) {
  const GemmShape shape{257, 263, 129};  // a partial tile along every dimension
  ShapeVerifier verifier(*device_, GemmProblem::packed(shape), 1);
  const KernelTemplate tmpl = tiled();
  for (const char* text : {"TILE=16,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=1", "TILE=32,PAD=1,SWIZZLE=0"}) {
    const Configuration config = tmpl.parse_configuration(text);
    const GpuKernel kernel(compile_configuration(tmpl, config, arch()), tmpl.entry,
                         entry_form(tmpl));
    const auto wrong = verifier.verify(kernel, tmpl.launch_geometry(config, shape),
                                       Precision::fp32);
    EXPECT_FALSE(wrong.has_value()) << text << ": " << *wrong;
  }
}

TEST_F(GpuPipeline, ShapeVerifierAcceptsNaiveWithWideLeadingDimensions) {
  const GemmProblem problem{{100, 70, 300}, 333, 75, 80};
  ShapeVerifier verifier(*device_, problem, 5);
  const KernelTemplate tmpl = load_template(kTemplates / "naive.cu");
  const Configuration config = tmpl.parse_configuration("BLOCK_X=32,BLOCK_Y=4");
  const GpuKernel kernel(compile_configuration(tmpl, config, arch()), tmpl.entry,
                         entry_form(tmpl));
  const auto wrong = verifier.verify(kernel, tmpl.launch_geometry(config, problem.shape),
                                     Precision::fp32);
  EXPECT_FALSE(wrong.has_value()) << *wrong;
}

TEST_F(GpuPipeline, ShapeVerifierRejectsAMutantWithoutTheStoreMask) {
  // Threads past column N store their (zero) sums over the first elements of the next row.
  const KernelTemplate mutant = tiled_mutant("if (row < M && col < N) {", "{");
  const GemmShape shape{257, 263, 129};
  const Configuration config = mutant.parse_configuration("TILE=16,PAD=0,SWIZZLE=0");
  const GpuKernel kernel(compile_configuration(mutant, config, arch()), mutant.entry,
                         entry_form(mutant));
  ShapeVerifier verifier(*device_, GemmProblem::packed(shape), 1);
  try {
    const auto wrong = verifier.verify(kernel, mutant.launch_geometry(config, shape),
                                       Precision::fp32);
    ASSERT_TRUE(wrong.has_value()) << "the mutant passed";
    EXPECT_THAT(*wrong, StartsWith("at the full shape 257x263x129: "));
    EXPECT_THAT(*wrong, HasSubstr("elements wrong, the first C["));
  } catch (const CudaError& e) {
    // Rows past M store beyond C's allocation: an illegal address is a rejection too.
    SUCCEED() << "rejected by the GPU: " << e.what();
  }
}

TEST_F(GpuPipeline, ShapeVerifierRejectsAKernelThatSkipsTheLastKTile) {
  // `k0 + TILE < K`: the last K tile (partial at K = 129) is never multiplied.
  const KernelTemplate mutant = tiled_mutant("k0 < K;", "k0 + TT_TILE < K;");
  const GemmShape shape{64, 64, 129};
  const Configuration config = mutant.parse_configuration("TILE=16,PAD=0,SWIZZLE=0");
  const GpuKernel kernel(compile_configuration(mutant, config, arch()), mutant.entry,
                         entry_form(mutant));
  ShapeVerifier verifier(*device_, GemmProblem::packed(shape), 3);
  const auto wrong = verifier.verify(kernel, mutant.launch_geometry(config, shape),
                                     Precision::fp32);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_THAT(*wrong, StartsWith("at the full shape 64x64x129: "));
  // Every element misses one product, a[i][128] b[128][j]: only those where it falls below the
  // bound pass (a few of 4096, depending on the inputs).
  int elements = 0;
  ASSERT_EQ(std::sscanf(wrong->c_str(), "at the full shape 64x64x129: %d elements wrong", &elements), 1)
      << *wrong;
  EXPECT_GE(elements, 4000) << *wrong;
  EXPECT_LE(elements, 4096) << *wrong;
}

TEST_F(GpuPipeline, ShapeVerifierChecksAnyLaunchOfItsProblem) {
  // The runtime library's run is checked through the launch overload: a right launch on the
  // verifier's own buffers passes, a launch that writes nothing leaves C poisoned and fails.
  const GemmShape shape{257, 263, 129};
  ShapeVerifier verifier(*device_, GemmProblem::packed(shape), 1);
  const KernelTemplate tmpl = tiled();
  const Configuration config = tmpl.parse_configuration("TILE=16,PAD=0,SWIZZLE=0");
  const GpuKernel kernel(compile_configuration(tmpl, config, arch()), tmpl.entry,
                         entry_form(tmpl));
  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape);
  int launches = 0;
  const auto right = verifier.verify([&](CUstream stream) {
    ++launches;
    kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), verifier.problem(), stream);
  }, Precision::fp32);
  EXPECT_FALSE(right.has_value()) << *right;
  EXPECT_EQ(launches, 1);
  const auto nothing = verifier.verify([](CUstream) {}, Precision::fp32);
  ASSERT_TRUE(nothing.has_value()) << "a launch that wrote nothing passed";
  EXPECT_THAT(*nothing, StartsWith("at the full shape 257x263x129: 67591 elements wrong"));
}

TEST_F(GpuPipeline, ShapeVerifierJudgesByTheDeclaredPrecision) {
  // C computed on the host from A and B rounded to TF32 (as a TF32 template does) and written in
  // by the launch: right for tf32 and wrong for fp32, whose bound is K * 2^-24.
  const GemmShape shape{96, 80, 64};
  ShapeVerifier verifier(*device_, GemmProblem::packed(shape), 3);
  std::vector<float> a(std::size_t(shape.m * shape.k)), b(std::size_t(shape.k * shape.n));
  const CudaDriver& cu = cuda_driver();
  ASSERT_EQ(cu.cuMemcpyDtoH(a.data(), verifier.a(), a.size() * sizeof(float)), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuMemcpyDtoH(b.data(), verifier.b(), b.size() * sizeof(float)), CUDA_SUCCESS);
  std::vector<float> c(std::size_t(shape.m * shape.n));
  for (std::int64_t i = 0; i < shape.m; ++i) {
    for (std::int64_t j = 0; j < shape.n; ++j) {
      float sum = 0;  // products of TF32 values are exact in FP32
      for (std::int64_t k = 0; k < shape.k; ++k) {
        sum += round_to_tf32(a[i * shape.k + k]) * round_to_tf32(b[k * shape.n + j]);
      }
      c[std::size_t(i * shape.n + j)] = sum;
    }
  }
  const auto write_c = [&](CUstream) {
    ASSERT_EQ(cu.cuMemcpyHtoD(verifier.c(), c.data(), c.size() * sizeof(float)), CUDA_SUCCESS);
  };
  const auto as_tf32 = verifier.verify(write_c, Precision::tf32);
  EXPECT_FALSE(as_tf32.has_value()) << *as_tf32;
  const auto as_fp32 = verifier.verify(write_c, Precision::fp32);
  ASSERT_TRUE(as_fp32.has_value()) << "TF32 inputs passed the fp32 bound";
  EXPECT_THAT(*as_fp32, StartsWith("at the full shape 96x80x64: "));
}

// --- timing ---------------------------------------------------------------------------------

TEST_F(GpuPipeline, TimeLaunchesRunsBetweenMinAndMaxRuns) {
  const GemmShape shape{256, 256, 256};
  ShapeVerifier verifier(*device_, GemmProblem::packed(shape), 1);
  const KernelTemplate tmpl = tiled();
  const Configuration config = tmpl.parse_configuration("TILE=16,PAD=1,SWIZZLE=0");
  const GpuKernel kernel(compile_configuration(tmpl, config, arch()), tmpl.entry,
                         entry_form(tmpl));
  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape);
  int launches = 0;
  TimingSettings settings;
  settings.warmup_runs = 2;
  settings.min_runs = 5;
  settings.max_runs = 12;
  settings.target_seconds = 10;  // never reached: max_runs ends it
  const Timing timing = time_launches(
      [&](CUstream stream) {
        ++launches;
        kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), verifier.problem(), stream);
      },
      nullptr, settings);
  EXPECT_EQ(timing.runs, 12);
  EXPECT_EQ(launches, 14);
  EXPECT_GT(timing.min_ms, 0.0);
  EXPECT_LE(timing.min_ms, timing.median_ms);
  EXPECT_LE(timing.median_ms, timing.max_ms);
  EXPECT_LT(timing.max_ms, 1000.0);

  settings.target_seconds = 0;  // reached at once: min_runs ends it
  EXPECT_EQ(time_launches([&](CUstream stream) {
              kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), verifier.problem(), stream);
            }, nullptr, settings).runs, 5);
}

// --- device limits (no GPU needed) ----------------------------------------------------------

DeviceProperties h100_like() {
  DeviceProperties d;
  d.name = "test GPU";
  d.max_threads_per_block = 1024;
  d.max_block_dim[0] = 1024;
  d.max_block_dim[1] = 1024;
  d.max_block_dim[2] = 64;
  d.max_grid_dim[0] = 2147483647;
  d.max_grid_dim[1] = 65535;
  d.max_grid_dim[2] = 65535;
  d.max_shared_bytes_per_block = 48 * 1024;
  d.max_shared_bytes_per_block_optin = 227 * 1024;
  d.max_registers_per_block = 65536;
  d.warp_size = 32;
  return d;
}

LaunchGeometry geometry(std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
                        std::uint32_t dynamic_shared = 0) {
  LaunchGeometry g;
  g.grid = grid;
  g.block = block;
  g.dynamic_shared_bytes = dynamic_shared;
  return g;
}

PtxasReport report(int registers, int static_shared = 0) {
  PtxasReport r;
  r.registers = registers;
  r.static_shared_bytes = static_shared;
  return r;
}

TEST(DeviceLimits, LaunchWithinEveryLimitFits) {
  EXPECT_EQ(exceeds_device_limits(geometry({2147483647, 65535, 1}, {32, 32, 1}, 100 * 1024),
                                  report(64, 127 * 1024), h100_like()),
            std::nullopt);
}

TEST(DeviceLimits, EachLimitIsNamed) {
  const DeviceProperties d = h100_like();
  EXPECT_THAT(exceeds_device_limits(geometry({1, 1, 1}, {64, 32, 1}), report(32), d).value_or(""),
              HasSubstr("2048 threads per block exceed the device's 1024"));
  EXPECT_THAT(exceeds_device_limits(geometry({1, 1, 1}, {1, 1, 128}), report(32), d).value_or(""),
              HasSubstr("block z = 128 exceeds the device's 64"));
  EXPECT_THAT(exceeds_device_limits(geometry({1, 65536, 1}, {16, 16, 1}), report(32), d).value_or(""),
              HasSubstr("grid y = 65536 exceeds the device's 65535"));
  EXPECT_THAT(exceeds_device_limits(geometry({1, 1, 1}, {256, 1, 1}, 200 * 1024), report(32, 32 * 1024), d)
                  .value_or(""),
              HasSubstr("bytes of shared memory per block exceed the device's 232448"));
  EXPECT_THAT(exceeds_device_limits(geometry({1, 1, 1}, {1024, 1, 1}), report(65), d).value_or(""),
              HasSubstr("65 registers x 1024 threads exceed the device's 65536 registers per block"));
}

}  // namespace
}  // namespace tiletune
