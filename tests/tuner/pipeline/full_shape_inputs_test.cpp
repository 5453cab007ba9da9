// The full shape's inputs are a function of the seed, the matrix and the index alone: every lane
// of a tune verifies and times on the same A and B, however many threads draw them.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tuner/pipeline/full_shape_inputs.h"

namespace tiletune {
namespace {

TEST(FullShapeInputs, TheSameElementsOnAnyNumberOfThreads) {
  const std::size_t elements = (std::size_t(1) << 21) + 12345;  // several threads' worth, uneven
  const std::vector<float> one = full_shape_matrix(FullShapeMatrix::a, 7, elements, 1);
  ASSERT_EQ(one.size(), elements);
  for (const unsigned threads : {2u, 3u, 16u}) {
    EXPECT_EQ(full_shape_matrix(FullShapeMatrix::a, 7, elements, threads), one) << threads;
  }
  EXPECT_EQ(full_shape_matrix(FullShapeMatrix::a, 7, elements), one) << "on the cores";
  for (const std::size_t i : {std::size_t(0), std::size_t(1) << 20, elements - 1}) {
    EXPECT_EQ(full_shape_value(FullShapeMatrix::a, 7, i), one[i]) << i;
  }
  // A prefix is the smaller matrix: a padded A (lda > K) draws its elements by index too.
  const std::vector<float> prefix = full_shape_matrix(FullShapeMatrix::a, 7, 1000);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), one.begin()));
}

TEST(FullShapeInputs, ValuesAreNonZeroWithinOneAndSpreadOut) {
  const std::vector<float> values = full_shape_matrix(FullShapeMatrix::b, 1, 100000);
  double sum = 0;
  std::set<float> distinct;
  for (const float v : values) {
    ASSERT_GT(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_NE(v, 0.0f);
    sum += v;
    distinct.insert(v);
  }
  EXPECT_LT(std::fabs(sum / double(values.size())), 0.01) << "centred on zero";
  EXPECT_GT(distinct.size(), values.size() * 99 / 100) << "hardly any repeats";
  std::size_t negative = 0;
  for (const float v : values) negative += v < 0;
  EXPECT_NEAR(double(negative) / double(values.size()), 0.5, 0.01);
}

TEST(FullShapeInputs, TheMatricesAndTheSeedsDrawDifferentValues) {
  const std::vector<float> a = full_shape_matrix(FullShapeMatrix::a, 1, 64);
  EXPECT_NE(full_shape_matrix(FullShapeMatrix::b, 1, 64), a);
  EXPECT_NE(full_shape_matrix(FullShapeMatrix::a, 2, 64), a);
  EXPECT_EQ(full_shape_matrix(FullShapeMatrix::a, 1, 64), a);
}

}  // namespace
}  // namespace tiletune
