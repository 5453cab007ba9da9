#include "tuner/search/configuration_space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tests/support/source_tree.h"
#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

using testing_support::kTemplates;

// The configurations at some positions, as text, to compare with what the test expects.
std::vector<std::string> configs_at(const std::vector<Configuration>& space,
                                    const std::vector<std::size_t>& positions) {
  std::vector<std::string> texts;
  for (const std::size_t position : positions) texts.push_back(space.at(position).to_string());
  return texts;
}

class ConfigurationSpaceOfTiled : public ::testing::Test {
 protected:
  // TILE 8 16 32, PAD 0 1, SWIZZLE 0 1, never PAD and SWIZZLE together: 9 configurations.
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  const ConfigurationSpace space{tmpl, configs};
};

TEST_F(ConfigurationSpaceOfTiled, PointsAreValueIndicesInDeclaredOrder) {
  ASSERT_EQ(space.size(), 9u);
  EXPECT_EQ(space.parameter_count(), 3u);
  EXPECT_EQ(space.value_count(0), 3u);
  EXPECT_EQ(configs[4].to_string(), "TILE=16,PAD=0,SWIZZLE=1");
  EXPECT_THAT(space.point(4), ElementsAre(1, 0, 1));
  EXPECT_EQ(space.find({1, 0, 1}), 4u);
  EXPECT_EQ(space.find({1, 1, 1}), std::nullopt) << "PAD and SWIZZLE together are not in the space";
  EXPECT_EQ(space.find({3, 0, 0}), std::nullopt) << "past the last TILE";
}

TEST_F(ConfigurationSpaceOfTiled, NeighboursDifferInOneParameterAndSkipInvalidOnes) {
  EXPECT_THAT(configs_at(configs, space.neighbours(3)),  // TILE=16,PAD=0,SWIZZLE=0
              ElementsAre("TILE=8,PAD=0,SWIZZLE=0", "TILE=32,PAD=0,SWIZZLE=0",
                          "TILE=16,PAD=1,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=1"));
  EXPECT_THAT(configs_at(configs, space.neighbours(5)),  // TILE=16,PAD=1,SWIZZLE=0
              ElementsAre("TILE=8,PAD=1,SWIZZLE=0", "TILE=32,PAD=1,SWIZZLE=0",
                          "TILE=16,PAD=0,SWIZZLE=0"))
      << "SWIZZLE=1 would make an invalid pair with PAD=1";
}

TEST_F(ConfigurationSpaceOfTiled, PairMovesChangeTwoParametersByOneValueEach) {
  EXPECT_THAT(configs_at(configs, space.pair_moves(3)),  // TILE=16,PAD=0,SWIZZLE=0
              ElementsAre("TILE=8,PAD=1,SWIZZLE=0", "TILE=8,PAD=0,SWIZZLE=1", "TILE=32,PAD=1,SWIZZLE=0",
                          "TILE=32,PAD=0,SWIZZLE=1"))
      << "PAD and SWIZZLE together would make an invalid pair";
  EXPECT_THAT(configs_at(configs, space.pair_moves(0)),  // TILE=8,PAD=0,SWIZZLE=0
              ElementsAre("TILE=16,PAD=1,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=1"));
}

TEST(ConfigurationSpace, PairMovesCrossTheTrapOfWarpTiled) {
  // From BM=64,BN=128 to BM=128,BN=64 with 8 x 8 thread tiles: 64x64 has too few threads.
  const KernelTemplate tmpl = load_template(kTemplates / "warp_tiled.cu");
  const GemmShape shape{1000, 1000, 1000};
  const std::vector<Configuration> configs = enumerate_configurations(tmpl, &shape);
  const ConfigurationSpace space(tmpl, configs);
  const std::string rest = ",BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1,STREAM_K=0";
  const auto position = [&](const std::string& text) {
    for (std::size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].to_string() == text) return i;
    }
    throw std::out_of_range(text);
  };
  const std::size_t wide = position("BM=64,BN=128" + rest);
  EXPECT_THAT(configs_at(configs, space.neighbours(wide)), Not(Contains("BM=128,BN=64" + rest)));
  EXPECT_THAT(configs_at(configs, space.pair_moves(wide)), Contains("BM=128,BN=64" + rest));
}

TEST_F(ConfigurationSpaceOfTiled, DistanceCountsValueSteps) {
  EXPECT_EQ(ConfigurationSpace::distance({0, 0, 0}, {0, 0, 0}), 0u);
  EXPECT_EQ(ConfigurationSpace::distance({0, 1, 0}, {2, 0, 0}), 3u);
}

TEST_F(ConfigurationSpaceOfTiled, NearestRepairsAnInvalidPointToEveryClosestConfiguration) {
  EXPECT_THAT(configs_at(configs, space.nearest({1, 1, 1})),
              ElementsAre("TILE=16,PAD=0,SWIZZLE=1", "TILE=16,PAD=1,SWIZZLE=0"));
  EXPECT_THAT(space.nearest({1, 0, 1}), ElementsAre(4)) << "a valid point is its own nearest";
  EXPECT_THAT(configs_at(configs, space.nearest({1, 0, 1}, [](std::size_t i) { return i != 4; })),
              ElementsAre("TILE=8,PAD=0,SWIZZLE=1", "TILE=16,PAD=0,SWIZZLE=0",
                          "TILE=32,PAD=0,SWIZZLE=1"));
  EXPECT_THAT(space.nearest({0, 0, 0}, [](std::size_t) { return false; }), IsEmpty());
}

TEST_F(ConfigurationSpaceOfTiled, FarthestIsAsFarAsCanBeFromEveryChosenConfiguration) {
  const auto any = [](std::size_t) { return true; };
  // From TILE=8,PAD=0,SWIZZLE=0 the farthest are 3 steps away: TILE=32 with PAD or SWIZZLE.
  EXPECT_THAT(configs_at(configs, space.farthest({0}, any)),
              ElementsAre("TILE=32,PAD=0,SWIZZLE=1", "TILE=32,PAD=1,SWIZZLE=0"));
  // Away from TILE=32,PAD=0,SWIZZLE=1 as well: those with PAD and TILE > 8, 2 steps from both.
  EXPECT_THAT(configs_at(configs, space.farthest({0, 7}, any)),
              ElementsAre("TILE=16,PAD=1,SWIZZLE=0", "TILE=32,PAD=1,SWIZZLE=0"));
  EXPECT_THAT(configs_at(configs, space.farthest({0}, [](std::size_t i) { return i < 7; })),
              ElementsAre("TILE=16,PAD=0,SWIZZLE=1", "TILE=16,PAD=1,SWIZZLE=0",
                          "TILE=32,PAD=0,SWIZZLE=0"))
      << "without TILE=32 and PAD or SWIZZLE, the farthest allowed are 2 steps away";
}

TEST(ConfigurationSpace, NeighboursPreferAdjacentValues) {
  // naive: BLOCK_X 8..128, BLOCK_Y 1..32, 64 <= X * Y <= 1024.
  const KernelTemplate tmpl = load_template(kTemplates / "naive.cu");
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  const ConfigurationSpace space(tmpl, configs);
  ASSERT_EQ(configs.front().to_string(), "BLOCK_X=8,BLOCK_Y=8");
  EXPECT_THAT(configs_at(configs, space.neighbours(0)),
              ElementsAre("BLOCK_X=16,BLOCK_Y=8", "BLOCK_X=8,BLOCK_Y=16", "BLOCK_X=32,BLOCK_Y=8",
                          "BLOCK_X=8,BLOCK_Y=32", "BLOCK_X=64,BLOCK_Y=8", "BLOCK_X=128,BLOCK_Y=8"));
}

TEST(ConfigurationSpace, ConfigurationOfAnotherTemplateIsRejected) {
  const KernelTemplate tiled = load_template(kTemplates / "tiled.cu");
  const KernelTemplate naive = load_template(kTemplates / "naive.cu");
  EXPECT_THROW(ConfigurationSpace(tiled, enumerate_configurations(naive)), std::invalid_argument);
  Configuration odd = enumerate_configurations(tiled).front();
  odd.values[0].second = 24;  // not a candidate TILE
  EXPECT_THROW(ConfigurationSpace(tiled, {odd}), std::invalid_argument);
}

}  // namespace
}  // namespace tiletune
