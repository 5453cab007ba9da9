// The warm start's picks (tuner/search/warm_start.h): which recorded shapes are nearest, and which
// of their winners a search of another shape starts from.
#include "tuner/search/warm_start.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(NearestShapes, NearestFirstWithoutTheShapeItself) {
  const std::vector<GemmShape> recorded{
      {4096, 4096, 4096}, {1000, 1000, 1000}, {64, 4096, 4096}, {1024, 1024, 1024}, {2048, 2048, 2048}};
  EXPECT_THAT(nearest_shapes({1000, 1000, 1000}, recorded),
              ElementsAre(GemmShape{1024, 1024, 1024}, GemmShape{2048, 2048, 2048}, GemmShape{4096, 4096, 4096}));
  EXPECT_THAT(nearest_shapes({1000, 1000, 1000}, recorded, 1), ElementsAre(GemmShape{1024, 1024, 1024}));
  EXPECT_THAT(nearest_shapes({1000, 1000, 1000}, {{1000, 1000, 1000}}), IsEmpty());
}

TEST(NearestShapes, EquallyNearShapesComeInShapeOrderAndOnce) {
  // 2048x1024x1024 and 1024x2048x1024 are both one doubling away from 1024^3.
  EXPECT_THAT(nearest_shapes({1024, 1024, 1024}, {{1024, 2048, 1024}, {2048, 1024, 1024}, {1024, 2048, 1024}}),
              ElementsAre(GemmShape{1024, 2048, 1024}, GemmShape{2048, 1024, 1024}));
}

TEST(WarmStartPoints, TakesTheFirstValidConfigurationsOfEachRankingOnce) {
  const KernelTemplate tmpl = parse_template(
      "// tiletune: entry k\n// tiletune: param A 1 2 3 4\n// tiletune: require A != 3\n"
      "// tiletune: block 32\n// tiletune: grid 1\n", "test.cu");
  const std::vector<Configuration> space = enumerate_configurations(tmpl);  // A = 1, 2, 4
  ASSERT_EQ(space.size(), 3u);
  const std::vector<RecordedRanking> rankings{
      {{64, 64, 64}, {"A=3", "A=4", "A=2", "A=1"}},  // A=3 is not valid here: skipped, not counted
      {{32, 32, 32}, {"A=2", "A=1"}},                // A=2 was taken already: A=1 is next
  };
  EXPECT_THAT(warm_start_points(space, rankings, 2), ElementsAre(2, 1, 0));
  EXPECT_THAT(warm_start_points(space, rankings, 1), ElementsAre(2, 1));
  EXPECT_THAT(warm_start_points(space, {}), IsEmpty());
}

}  // namespace
}  // namespace tiletune
