#include "tuner/core/configurations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "tests/support/source_tree.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing_support::kTemplates;

KernelTemplate with_declarations(const std::string& declarations) {
  return parse_template(
      "// tiletune: entry k\n// tiletune: block 1\n// tiletune: grid 1\n" + declarations,
      "space.cu");
}

std::vector<std::string> strings(const std::vector<Configuration>& configurations) {
  std::vector<std::string> result;
  for (const Configuration& config : configurations) result.push_back(config.to_string());
  return result;
}

TEST(SearchSpace, TiledHasNineConfigurations) {
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  const std::vector<Configuration> configurations = enumerate_configurations(tmpl);
  // 3 tiles x 4 (PAD, SWIZZLE) pairs, less the 3 with both set.
  EXPECT_THAT(
      strings(configurations),
      ElementsAre("TILE=8,PAD=0,SWIZZLE=0", "TILE=8,PAD=0,SWIZZLE=1", "TILE=8,PAD=1,SWIZZLE=0",
                  "TILE=16,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=1", "TILE=16,PAD=1,SWIZZLE=0",
                  "TILE=32,PAD=0,SWIZZLE=0", "TILE=32,PAD=0,SWIZZLE=1", "TILE=32,PAD=1,SWIZZLE=0"));
}

TEST(SearchSpace, SampleIsSeededOrderedAndBounded) {
  const KernelTemplate tmpl = load_template(kTemplates / "naive.cu");
  const std::vector<Configuration> all = enumerate_configurations(tmpl);
  const std::vector<Configuration> sample = sample_configurations(all, 5, 42);
  ASSERT_EQ(sample.size(), 5u);
  EXPECT_EQ(strings(sample_configurations(all, 5, 42)), strings(sample)) << "same seed, same sample";
  EXPECT_NE(strings(sample_configurations(all, 5, 43)), strings(sample));
  std::size_t position = 0;  // a subsequence of the space, in its order
  for (const Configuration& picked : sample) {
    while (position < all.size() && !(all[position] == picked)) ++position;
    ASSERT_LT(position++, all.size()) << picked.to_string() << " is out of order or not in the space";
  }
  EXPECT_EQ(strings(sample_configurations(all, all.size() + 3, 1)), strings(all));
}

// Every value of every parameter that a valid configuration takes, as (name, value) pairs.
std::set<std::pair<std::string, std::int64_t>> values_taken(const std::vector<Configuration>& configs) {
  std::set<std::pair<std::string, std::int64_t>> taken;
  for (const Configuration& config : configs) taken.insert(config.values.begin(), config.values.end());
  return taken;
}

TEST(SearchSpace, ACoveringSampleTakesEveryValueOfEveryShippedTemplate) {
  for (const auto& file : std::filesystem::directory_iterator(kTemplates)) {
    if (file.path().extension() != ".cu") continue;
    const KernelTemplate tmpl = load_template(file.path());
    SCOPED_TRACE(tmpl.name);
    const std::vector<Configuration> all = enumerate_configurations(tmpl);
    const std::vector<Configuration> sample = covering_sample(tmpl, 7);
    EXPECT_EQ(values_taken(sample), values_taken(all));
    std::map<std::string, std::size_t> taken_per_parameter;
    for (const auto& [name, value] : values_taken(all)) ++taken_per_parameter[name];
    std::size_t most_values = 0;
    for (const auto& [name, count] : taken_per_parameter) most_values = std::max(most_values, count);
    // Greedy: each pick adds a value; at most every value once, at least the widest parameter's.
    EXPECT_GE(sample.size(), most_values);
    EXPECT_LE(sample.size(), values_taken(all).size());
    std::size_t position = 0;  // a subsequence of the space, in its order
    for (const Configuration& picked : sample) {
      while (position < all.size() && !(all[position] == picked)) ++position;
      ASSERT_LT(position++, all.size()) << picked.to_string() << " is out of order or not in the space";
    }
    EXPECT_EQ(strings(covering_sample(tmpl, 7)), strings(sample)) << "same seed, same sample";
  }
  // Different seeds cover warp_tiled with different configurations.
  const KernelTemplate warp_tiled = load_template(kTemplates / "warp_tiled.cu");
  EXPECT_NE(strings(covering_sample(warp_tiled, 1)), strings(covering_sample(warp_tiled, 2)));
}

// Every combination of `strength` parameters' values that some configuration takes.
std::set<std::vector<std::pair<std::string, std::int64_t>>> combinations_taken(
    const std::vector<Configuration>& configs, std::size_t strength) {
  std::set<std::vector<std::pair<std::string, std::int64_t>>> taken;
  for (const Configuration& config : configs) {
    const std::size_t n = config.values.size();
    for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
      if (std::size_t(__builtin_popcount(mask)) != strength) continue;
      std::vector<std::pair<std::string, std::int64_t>> combination;
      for (std::size_t i = 0; i < n; ++i) {
        if (mask & (1u << i)) combination.push_back(config.values[i]);
      }
      taken.insert(combination);
    }
  }
  return taken;
}

TEST(SearchSpace, ACoveringSampleOfStrengthTTakesEveryCombinationOfTValues) {
  const KernelTemplate tmpl = load_template(kTemplates / "warp_tiled.cu");
  const std::vector<Configuration> all = enumerate_configurations(tmpl);
  std::size_t previous = 0;
  for (int strength : {2, 3}) {
    SCOPED_TRACE(strength);
    const std::vector<Configuration> sample = covering_sample(tmpl, 11, strength);
    EXPECT_EQ(combinations_taken(sample, strength), combinations_taken(all, strength));
    EXPECT_EQ(combinations_taken(sample, 1), combinations_taken(all, 1)) << "so every value";
    EXPECT_GT(sample.size(), previous) << "a stronger sample is larger";
    EXPECT_LT(sample.size(), all.size() / 2) << "and still a sample";
    EXPECT_EQ(strings(covering_sample(tmpl, 11, strength)), strings(sample)) << "same seed, same sample";
    std::printf("warp_tiled's covering sample of strength %d: %zu of %zu configurations\n", strength,
                sample.size(), all.size());
    previous = sample.size();
  }
  // More parameters than there are: every configuration that differs in any one is taken.
  const KernelTemplate tiled = load_template(kTemplates / "tiled.cu");
  EXPECT_EQ(strings(covering_sample(tiled, 3, 5)), strings(enumerate_configurations(tiled)));
  EXPECT_THROW(covering_sample(tiled, 3, 0), std::invalid_argument);
}

TEST(SearchSpace, NaiveCountMatchesItsDeclarations) {
  // BLOCK_X * BLOCK_Y in [64, 1024]: X=8 takes Y in {8,16,32} (3), X=16 {4..32} (4),
  // X=32 {2..32} (5), X=64 {1..16} (5), X=128 {1..8} (4): 21 of the 30 pairs.
  const KernelTemplate tmpl = load_template(kTemplates / "naive.cu");
  const std::vector<Configuration> configurations = enumerate_configurations(tmpl);
  EXPECT_EQ(configurations.size(), 21u);
  EXPECT_EQ(configurations.front().to_string(), "BLOCK_X=8,BLOCK_Y=8");
  EXPECT_EQ(configurations.back().to_string(), "BLOCK_X=128,BLOCK_Y=8");
  for (const Configuration& config : configurations) {
    const std::int64_t threads = config.at("BLOCK_X") * config.at("BLOCK_Y");
    EXPECT_GE(threads, 64) << config.to_string();
    EXPECT_LE(threads, 1024) << config.to_string();
  }
}

TEST(SearchSpace, FirstParameterVariesSlowestInDeclaredOrder) {
  const KernelTemplate tmpl =
      with_declarations("// tiletune: param B 2 1\n// tiletune: param A 5 3 4\n");
  EXPECT_THAT(strings(enumerate_configurations(tmpl)),
              ElementsAre("B=2,A=5", "B=2,A=3", "B=2,A=4", "B=1,A=5", "B=1,A=3", "B=1,A=4"));
}

TEST(SearchSpace, ShapeRequirementsAreSkippedWithoutAShapeAndAppliedWithOne) {
  const KernelTemplate tmpl = with_declarations(
      "// tiletune: param T 8 16 32\n// tiletune: require M % T == 0 && K >= T\n"
      "// tiletune: require T != 8\n");
  EXPECT_THAT(strings(enumerate_configurations(tmpl)), ElementsAre("T=16", "T=32"));
  const GemmShape shape{48, 1, 64};
  EXPECT_THAT(strings(enumerate_configurations(tmpl, &shape)), ElementsAre("T=16"));
  const GemmShape too_small{48, 1, 8};
  EXPECT_TRUE(enumerate_configurations(tmpl, &too_small).empty());
}

TEST(SearchSpace, LeadingDimensionRequirementsApplyToThePackedProblemOfTheShape) {
  const KernelTemplate tmpl = with_declarations(
      "// tiletune: param T 4 8\n// tiletune: require lda % T == 0 && ldc % 4 == 0\n");
  EXPECT_THAT(strings(enumerate_configurations(tmpl)), ElementsAre("T=4", "T=8"));
  const GemmShape k20{8, 12, 20};  // lda = 20, ldc = 12
  EXPECT_THAT(strings(enumerate_configurations(tmpl, &k20)), ElementsAre("T=4"));
  const GemmShape n10{8, 10, 16};  // ldc = 10
  EXPECT_TRUE(enumerate_configurations(tmpl, &n10).empty());
}

TEST(SearchSpace, TuningLimitsLeaveConfigurationsOutOfAShapesSearchOnly) {
  const KernelTemplate tmpl = with_declarations(
      "// tiletune: param T 4 8 16\n// tiletune: tune_if T < 2 * max(M, 4)\n");
  EXPECT_THAT(strings(enumerate_configurations(tmpl)), ElementsAre("T=4", "T=8", "T=16"));
  const GemmShape m5{5, 64, 64}, m100{100, 64, 64};
  EXPECT_THAT(strings(enumerate_configurations(tmpl, &m5)), ElementsAre("T=4", "T=8"));
  EXPECT_THAT(strings(enumerate_configurations(tmpl, &m100)), ElementsAre("T=4", "T=8", "T=16"));
}

// A tune of transposes searches only the configurations with a build that serves them: here the
// transposed A's build needs more shared memory than T=16 has.
TEST(SearchSpace, ATuneOfTransposesSearchesTheConfigurationsWithItsBuild) {
  const KernelTemplate tmpl = with_declarations(
      "// tiletune: param T 4 8 16\n// tiletune: supports op_a\n// tiletune: specializes op_a\n"
      "// tiletune: require T * (1 + OP_A) <= 16\n");
  const GemmShape shape{64, 64, 64};
  EXPECT_THAT(strings(enumerate_configurations(tmpl, &shape)), ElementsAre("T=4", "T=8", "T=16"));
  EXPECT_THAT(strings(enumerate_configurations(tmpl, &shape, Transposes{Op::t, Op::n})),
              ElementsAre("T=4", "T=8"));
}

TEST(SearchSpace, RequirementThatFailsToEvaluateIsAnErrorNamingIt) {
  // T=2 divides by zero: the template's bug, said as such rather than taken as "does not hold".
  const KernelTemplate tmpl =
      with_declarations("// tiletune: param T 2 3 7\n// tiletune: require 12 % (T - 2) == 0\n");
  try {
    enumerate_configurations(tmpl);
    ADD_FAILURE() << "a requirement dividing by zero was taken as not holding";
  } catch (const TemplateError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[T=2]: requirement '12 % (T - 2) == 0' cannot be evaluated"));
  }
  // Where it can be evaluated everywhere, T=7 leaves a remainder: only T=3 remains.
  const KernelTemplate sound =
      with_declarations("// tiletune: param T 3 7\n// tiletune: require 12 % (T - 2) == 0\n");
  EXPECT_THAT(strings(enumerate_configurations(sound)), ElementsAre("T=3"));
}

TEST(SearchSpace, NoParametersGiveOneEmptyConfiguration) {
  EXPECT_THAT(enumerate_configurations(with_declarations("")), ElementsAre(Configuration{}));
  EXPECT_TRUE(enumerate_configurations(with_declarations("// tiletune: require 0\n")).empty());
}

TEST(SearchSpace, EmptyCandidateListGivesNothing) {
  KernelTemplate tmpl = with_declarations("");
  tmpl.parameters.push_back({"T", {}});
  EXPECT_TRUE(enumerate_configurations(tmpl).empty());
}

// `count` parameters P0, P1, ... of the values 0 to 9 each: a grid of 10^count configurations.
std::string ten_values_each(int count) {
  std::string declarations;
  for (int p = 0; p < count; ++p) declarations += "// tiletune: param P" + std::to_string(p) + " 0 1 2 3 4 5 6 7 8 9\n";
  return declarations;
}

TEST(SearchSpace, GridSizeIsTheProductOfTheValueCountsAndNeverOverflows) {
  EXPECT_EQ(grid_size(load_template(kTemplates / "tiled.cu")), 12u);
  EXPECT_EQ(grid_size(with_declarations(ten_values_each(12))), 1'000'000'000'000u);
  EXPECT_EQ(grid_size(with_declarations(ten_values_each(19))), 10'000'000'000'000'000'000u);
  EXPECT_EQ(grid_size(with_declarations(ten_values_each(20))), std::nullopt) << "10^20 > 2^64";
}

// 12 parameters of 10 values: 10^12 configurations would take terabytes; they are refused before
// any is listed, with the size and the limit.
TEST(SearchSpace, EnumeratingASpaceAboveTheLimitIsRefusedNamingItsSizeAndTheLimit) {
  const KernelTemplate big = with_declarations(ten_values_each(12));
  try {
    enumerate_configurations(big);
    ADD_FAILURE() << "enumerated 10^12 configurations";
  } catch (const SpaceTooLarge& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("space: space has 1000000000000 configurations before requirements"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("more than the 1000000 tiletune enumerates"));
  }
  EXPECT_THROW(check_enumerable(big), SpaceTooLarge);
  EXPECT_THROW(check_enumerable(with_declarations(ten_values_each(20))), SpaceTooLarge);
  EXPECT_NO_THROW(check_enumerable(with_declarations(ten_values_each(6))));  // 10^6: the limit itself
  EXPECT_THROW(check_enumerable(with_declarations(ten_values_each(6) + "// tiletune: param Q 1 2\n")),
               SpaceTooLarge);
}

TEST(SearchSpace, SamplingASpaceTooLargeToListDrawsValidConfigurations) {
  const KernelTemplate big =
      with_declarations(ten_values_each(12) + "// tiletune: require P0 + P1 < 6 && P11 % 2 == 0\n");
  const std::vector<Configuration> sample = sample_configurations(big, 20, 7);
  ASSERT_EQ(sample.size(), 20u);
  for (std::size_t i = 0; i < sample.size(); ++i) {
    EXPECT_TRUE(big.satisfies_requirements(sample[i])) << sample[i].to_string();
    if (i > 0) {
      EXPECT_LT(sample[i - 1].values, sample[i].values) << "distinct, in the space's order";
    }
  }
  EXPECT_EQ(strings(sample_configurations(big, 20, 7)), strings(sample)) << "same seed, same sample";
  EXPECT_NE(strings(sample_configurations(big, 20, 8)), strings(sample));
  const auto keep = [](const Configuration& config) { return config.at("P5") == 3; };
  for (const Configuration& config : sample_configurations(big, 5, 7, keep)) EXPECT_EQ(config.at("P5"), 3);
}

TEST(SearchSpace, SamplingASpaceThatCanBeListedDrawsTheSameSampleAsBefore) {
  const KernelTemplate tiled = load_template(kTemplates / "tiled.cu");
  EXPECT_EQ(strings(sample_configurations(tiled, 5, 42)),
            strings(sample_configurations(enumerate_configurations(tiled), 5, 42)));
  const auto keep = [](const Configuration& config) { return config.at("TILE") != 8; };
  std::vector<Configuration> kept = enumerate_configurations(tiled);
  std::erase_if(kept, [&](const Configuration& config) { return !keep(config); });
  EXPECT_EQ(strings(sample_configurations(tiled, 3, 42, keep)), strings(sample_configurations(kept, 3, 42)));
}

TEST(SearchSpace, ASampleOfALargeSpaceWhoseRequirementsRejectNearlyAllIsOneError) {
  std::string require = "// tiletune: require 1";
  for (int p = 0; p < 12; ++p) require += " && P" + std::to_string(p) + " == 0";
  const KernelTemplate big = with_declarations(ten_values_each(12) + require + "\n");
  try {
    sample_configurations(big, 3, 1);
    ADD_FAILURE() << "a sample of a space with one valid configuration in 10^12";
  } catch (const SpaceTooLarge& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("found only 0 valid ones, fewer than the 3 asked for"));
  }
  EXPECT_THROW(sample_configurations(with_declarations(ten_values_each(12)), 2'000'000, 1), SpaceTooLarge);
}

}  // namespace
}  // namespace tiletune
