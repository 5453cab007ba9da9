// The GPU fuzz's perturbed launches (fuzz/perturbed_launch.h) without a GPU: which cases run
// perturbed, what the skewed build changes in a template and what it keeps, and that NVRTC compiles
// it for the shipped templates (skipped without NVRTC). That its sleeps let a misplaced barrier
// show is the GPU's to test (gpu_fuzz_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "fuzz/perturbed_launch.h"
#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing_support::kTemplates;

TEST(PerturbedLaunch, OddScheduleSeedsRunPerturbed) {
  GemmCase gemm_case;
  int perturbed = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    gemm_case.schedule_seed = seed;
    EXPECT_EQ(is_perturbed(gemm_case), seed % 2 == 1) << seed;
    perturbed += is_perturbed(gemm_case);
  }
  EXPECT_EQ(perturbed, 50);
}

TEST(PerturbedLaunch, TheDrawnMultiprocessorCountIsOneToFourAndFollowsTheSeed) {
  std::set<int> counts;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const int count = drawn_sm_count(seed);
    EXPECT_EQ(count, drawn_sm_count(seed)) << "seed " << seed;
    counts.insert(count);
  }
  EXPECT_EQ(counts, (std::set<int>{1, 2, 3, 4}));
}

TEST(PerturbedLaunch, ATemplateWithoutBarriersHasNoSkewedBuild) {
  EXPECT_FALSE(skewed_build(load_template(kTemplates / "naive.cu")).has_value());
}

TEST(PerturbedLaunch, TheSkewedBuildIsTheTemplateAfterAPreludeThatWrapsTheBarrier) {
  const KernelTemplate tiled = load_template(kTemplates / "tiled.cu");
  const std::optional<KernelTemplate> skewed = skewed_build(tiled);
  ASSERT_TRUE(skewed.has_value());
  // The template's own text, unchanged, after the prelude's last line, which restores its lines.
  EXPECT_THAT(skewed->source, EndsWith("\n#line 1\n" + tiled.source));
  const std::string prelude = skewed->source.substr(0, skewed->source.size() - tiled.source.size());
  EXPECT_THAT(prelude, HasSubstr("#define __syncthreads() tt_fuzz_skewed_syncthreads()"));
  EXPECT_THAT(prelude, HasSubstr("__nanosleep("));
  EXPECT_THAT(prelude, StartsWith("// tiletune fuzz: the skewed build"));
  // A version of its own for every cache, and otherwise the same template.
  EXPECT_NE(skewed->source_hash, tiled.source_hash);
  EXPECT_EQ(skewed->source_hash, fnv1a_hex(skewed->source));
  EXPECT_EQ(skewed->name, tiled.name);
  EXPECT_EQ(skewed->entry, tiled.entry);
  EXPECT_EQ(enumerate_configurations(*skewed), enumerate_configurations(tiled));
}

// Every shipped template that has barriers, one configuration each: the prelude compiles with
// the template's own code (tiletune's device library included), and ptxas reports the entry.
TEST(PerturbedLaunch, TheShippedTemplatesSkewedBuildsCompileWithNvrtc) {
  SKIP_WITHOUT_NVRTC();
  int built = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kTemplates)) {
    if (entry.path().extension() != ".cu") continue;
    const KernelTemplate tmpl = load_template(entry.path());
    const std::optional<KernelTemplate> skewed = skewed_build(tmpl);
    if (!skewed) continue;
    const std::vector<Configuration> space = enumerate_configurations(tmpl);
    ASSERT_FALSE(space.empty()) << tmpl.name;
    const std::string arch = tmpl.compile_arch("sm_90").empty() ? "sm_80" : "sm_90";
    try {
      const CompiledKernelImage image = compile_configuration(*skewed, space.front(), arch);
      EXPECT_FALSE(image.cubin.empty()) << tmpl.name;
      EXPECT_GT(image.report.registers, 0) << tmpl.name << "\n" << image.log;
      ++built;
    } catch (const CompileError& e) {
      ADD_FAILURE() << tmpl.name << ": " << e.what() << "\n" << e.log();
    }
  }
  EXPECT_GE(built, 8);  // of the 11 shipped templates, naive has no barrier
}

}  // namespace
}  // namespace tiletune
