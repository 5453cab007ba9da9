// The fuzzer on the GPU: every shipped configuration passes, and mutants of tiled with the bugs
// such kernels really have are caught with a counterexample. Skipped ("no GPU: <reason>") where
// GpuDevice cannot open a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "fuzz/gpu_executor.h"
#include "fuzz/mutant_suite.h"
#include "fuzz/perturbed_launch.h"
#include "fuzz/property_runner.h"
#include "tests/support/gpu_test.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/entry_contract.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing_support::kTemplates;

// One GpuDevice for the whole process (ctest runs each test in a process of its own).
class GpuFuzz : public testing_support::GpuTest {
 protected:
  std::string arch() const { return device_->properties().arch(); }

  // As `tiletune fuzz` runs it: the cases with odd schedule seeds perturbed (perturbed_launch.h),
  // and with `crowded` its crowded cases too.
  FuzzReport fuzz(const KernelTemplate& tmpl, const Configuration& config, int cases,
                  std::uint64_t seed = 1, bool crowded = false) {
    const CompiledKernelImage image = compile_configuration(tmpl, config, arch());
    GpuExecutor executor(*device_, tmpl, config, image);
    std::optional<CompiledKernelImage> skewed;
    if (const std::optional<KernelTemplate> build = skewed_build(tmpl)) {
      skewed = compile_configuration(*build, config, arch());
    }
    executor.perturb(skewed ? &*skewed : nullptr);
    FuzzSettings settings;
    settings.cases = cases;
    settings.seed = seed;
    settings.limits.crowded_cases = crowded;
    const FuzzReport report =
        fuzz_configuration(executor, config, Precision::fp32, settings,
                           CaseRequirements(tmpl, config));
    EXPECT_FALSE(executor.context_lost()) << tmpl.name << " [" << config.to_string() << "]";
    return report;
  }

};

// tiled.cu with `from` replaced by `to` (the `occurrence`-th one, counting from 1).
KernelTemplate tiled_mutant(const std::string& from, const std::string& to, int occurrence = 1) {
  const KernelTemplate original = load_template(kTemplates / "tiled.cu");
  std::string source = original.source;
  std::size_t at = std::string::npos;
  for (int i = 0; i < occurrence; ++i) {
    at = source.find(from, at == std::string::npos ? 0 : at + from.size());
    if (at == std::string::npos) {
      ADD_FAILURE() << "tiled.cu no longer has " << occurrence << " x '" << from << "'";
      return original;
    }
  }
  source.replace(at, from.size(), to);
  return parse_template(source, "tiled_mutant.cu");
}

void expect_replays(GemmExecutor& executor, const FuzzReport& report) {
  ASSERT_TRUE(report.counterexample.has_value());
  const FuzzReport replay = run_single_case(executor, *report.counterexample, Precision::fp32);
  EXPECT_NE(replay.verdict, FuzzVerdict::passed) << "the counterexample "
                                                 << report.counterexample->to_string()
                                                 << " passes when replayed";
}

TEST_F(GpuFuzz, EveryShippedConfigurationPasses) {
  for (const char* file : {"naive.cu", "tiled.cu"}) {
    const KernelTemplate tmpl = load_template(kTemplates / file);
    for (const Configuration& config : enumerate_configurations(tmpl)) {
      const FuzzReport report = fuzz(tmpl, config, 30);
      EXPECT_EQ(report.verdict, FuzzVerdict::passed)
          << tmpl.name << " [" << config.to_string() << "]: " << report.finding << "\n  case: "
          << (report.counterexample ? report.counterexample->to_string() : "-");
      EXPECT_EQ(report.cases_passed, 30) << tmpl.name << " [" << config.to_string() << "]";
    }
  }
}

TEST_F(GpuFuzz, BackendNameIsTheGpu) {
  const KernelTemplate tmpl = load_template(kTemplates / "naive.cu");
  const Configuration config = enumerate_configurations(tmpl).front();
  const CompiledKernelImage image = compile_configuration(tmpl, config, arch());
  GpuExecutor executor(*device_, tmpl, config, image);
  EXPECT_EQ(executor.backend_name(), "gpu " + device_->properties().name);
}

// Compiled without compile_configuration's check of the cubin, so that what refuses the entry is
// the layout the driver reports (cuFuncGetParamInfo, CUDA 12.4 and later) when it is loaded.
TEST_F(GpuFuzz, AnEntryTakingOtherParametersIsRefusedBeforeAnyCase) {
  if (cuda_driver().cuFuncGetParamInfo == nullptr) {
    GTEST_SKIP() << "the driver is older than CUDA 12.4: it cannot report a parameter layout";
  }
  const KernelTemplate tmpl = parse_template(R"(// tiletune: entry swapped_gemm
// tiletune: param BLOCK 16
// tiletune: block BLOCK, BLOCK
// tiletune: grid ceil_div(N, BLOCK), ceil_div(M, BLOCK)
extern "C" __global__ void swapped_gemm(int M, int N, int K, const float* A, const float* B, float* C) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float sum = 0;
  for (int i = 0; i < K; ++i) sum += A[row * K + i] * B[i * N + col];
  C[row * N + col] = sum;
}
)", "swapped.cu");
  const Configuration config = tmpl.parse_configuration("BLOCK=16");
  const CompiledKernelImage image = compile_cuda_source(
      tmpl.source, "swapped.cu", tmpl.macro_definitions(config), arch(), tmpl.entry, "swapped");
  try {
    GpuExecutor executor(*device_, tmpl, config, image);
    ADD_FAILURE() << "an entry taking (int M, int N, int K, const float* A, ...) was loaded";
  } catch (const EntryContractError& e) {
    EXPECT_EQ(e.log(), "entry swapped_gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); the "
                       "contract is 9: (const float* A, const float* B, float* C, int M, int N, "
                       "int K, int lda, int ldb, int ldc)");
  }
}

TEST_F(GpuFuzz, MutantLoadingAUnmaskedAlongKIsCaughtAtOneElement) {
  // Without `a_col < K` the last K tile reads past the end of A's rows: into the poisoned padding
  // or guard, and NaN * 0 from the masked B tile puts NaN into C.
  const KernelTemplate mutant = tiled_mutant("(row < M && a_col < K)", "(row < M)");
  for (const char* config_text : {"TILE=8,PAD=0,SWIZZLE=0", "TILE=16,PAD=1,SWIZZLE=0",
                                  "TILE=32,PAD=0,SWIZZLE=1"}) {
    SCOPED_TRACE(config_text);
    const Configuration config = mutant.parse_configuration(config_text);
    const CompiledKernelImage image = compile_configuration(mutant, config, arch());
    GpuExecutor executor(*device_, mutant, config, image);
    FuzzSettings settings;
    settings.cases = 30;
    const FuzzReport report = fuzz_configuration(executor, config, Precision::fp32, settings);
    ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
    ASSERT_TRUE(report.counterexample.has_value());
    const GemmShape& s = report.counterexample->problem.shape;
    EXPECT_EQ(s.m, 1) << report.counterexample->to_string();
    EXPECT_EQ(s.n, 1) << report.counterexample->to_string();
    EXPECT_NE(s.k % config.at("TILE"), 0) << "only a partial K tile reads past the row";
    EXPECT_THAT(report.finding, StartsWith("NaN in C at C[0][0]"));
    expect_replays(executor, report);
    EXPECT_FALSE(executor.context_lost());
  }
}

TEST_F(GpuFuzz, MutantWithoutTheSecondBarrierIsCaught) {
  // Without the barrier after the multiply, a fast warp loads the next K tile over the one slower
  // warps still read. A race, and one that small cases rarely show on a large GPU: the generated
  // shapes (at most 4 whole tiles + a remainder a side) give each SM one block at most, and warps
  // of a lone block stay nearly in step. So the random cases run first, and where none of them
  // fails, one large case replayed with run_single_case (many blocks per SM) must.
  const KernelTemplate mutant = tiled_mutant("__syncthreads();", "", 2);
  ASSERT_EQ(mutant.source.find("__syncthreads();"), mutant.source.rfind("__syncthreads();"))
      << "exactly one barrier is left";
  const GemmCase large = GemmCase::parse("512x512x512 inputs=small_integers data=1");
  for (const char* config_text : {"TILE=8,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=0",
                                  "TILE=32,PAD=1,SWIZZLE=0"}) {
    SCOPED_TRACE(config_text);
    const Configuration config = mutant.parse_configuration(config_text);
    const CompiledKernelImage image = compile_configuration(mutant, config, arch());
    GpuExecutor executor(*device_, mutant, config, image);
    FuzzSettings settings;
    settings.cases = 100;
    FuzzReport report = fuzz_configuration(executor, config, Precision::fp32, settings);
    const bool random_cases_caught_it = report.verdict != FuzzVerdict::passed;
    if (!random_cases_caught_it) report = run_single_case(executor, large, Precision::fp32);
    std::cout << "[ race     ] " << config_text << ": "
              << (random_cases_caught_it ? "caught by the random cases" : "caught only by 512x512x512")
              << ": " << report.finding << "\n";
    ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
    ASSERT_TRUE(report.counterexample.has_value());
    EXPECT_GT(report.counterexample->problem.shape.k, config.at("TILE"))
        << "a race between K tiles needs two of them: " << report.counterexample->to_string();
    EXPECT_THAT(report.finding, StartsWith("wrong element at C["));
    EXPECT_FALSE(executor.context_lost());
  }
}

// The same race with the cases perturbed as `tiletune fuzz` runs them: half of them sleep some
// warps after every barrier, and the random cases alone catch it.
TEST_F(GpuFuzz, PerturbedCasesCatchTheMissingSecondBarrier) {
  const KernelTemplate mutant = tiled_mutant("__syncthreads();", "", 2);
  for (const char* config_text : {"TILE=8,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=0",
                                  "TILE=32,PAD=1,SWIZZLE=0"}) {
    SCOPED_TRACE(config_text);
    const FuzzReport report = fuzz(mutant, mutant.parse_configuration(config_text), 40);
    ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
    std::cout << "[ race     ] " << config_text << ": " << report.finding << "\n";
    EXPECT_THAT(report.finding, StartsWith("wrong element at C["));
  }
}

// warp_tiled's barrier races (fuzz/mutants/warp_tiled.json), which the GPU's own timing hides
// from unperturbed cases: a step's copies issued before the barrier that says the stage is free,
// and a stream-K part's stages restarted without one. 100 cases, crowded ones among them, as
// `tiletune mutants` runs them.
TEST_F(GpuFuzz, PerturbedCasesCatchWarpTiledsBarrierRaces) {
  const MutantSuite suite =
      load_mutant_suite(std::filesystem::path(TILETUNE_SOURCE_DIR) / "fuzz/mutants/warp_tiled.json");
  const struct {
    const char* mutant;
    const char* config;
  } races[] = {
      {"copy_before_step_barrier",
       "BM=32,BN=128,BK=16,TM=4,TN=8,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0"},
      {"copy_before_step_barrier",
       "BM=64,BN=128,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1,STREAM_K=0"},
      {"stream_k_stages_restart",
       "BM=128,BN=128,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1,STREAM_K=2"},
  };
  for (const auto& race : races) {
    SCOPED_TRACE(std::string(race.mutant) + " [" + race.config + "]");
    const KernelTemplate mutant = suite.apply(suite.find(race.mutant));
    const FuzzReport report =
        fuzz(mutant, mutant.parse_configuration(race.config), 100, /*seed=*/1, /*crowded=*/true);
    ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
    std::cout << "[ race     ] " << race.mutant << " [" << race.config << "]: " << report.finding
              << "\n";
  }
}

TEST_F(GpuFuzz, MutantIgnoringLdcIsCaught) {
  const KernelTemplate mutant = tiled_mutant("tt_batch_c(C, args) + (size_t)row * ldc + col",
                                              "tt_batch_c(C, args) + (size_t)row * N + col");
  const Configuration config = mutant.parse_configuration("TILE=16,PAD=0,SWIZZLE=0");
  const FuzzReport report = fuzz(mutant, config, 30);
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result);
  ASSERT_TRUE(report.counterexample.has_value());
  const GemmProblem& p = report.counterexample->problem;
  EXPECT_GT(p.ldc, p.shape.n) << report.counterexample->to_string();
  EXPECT_GE(p.shape.m, 2) << report.counterexample->to_string();
}

}  // namespace
}  // namespace tiletune
