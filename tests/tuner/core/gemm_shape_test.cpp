#include "tuner/core/gemm_shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tiletune {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string shape_error(std::string_view text) {
  try {
    GemmShape::parse(text);
  } catch (const ShapeError& error) {
    return error.what();
  }
  ADD_FAILURE() << "'" << text << "' parsed";
  return {};
}

TEST(GemmShape, Parses) {
  EXPECT_EQ(GemmShape::parse("4096x4096x4096"), (GemmShape{4096, 4096, 4096}));
  EXPECT_EQ(GemmShape::parse("1X2x3"), (GemmShape{1, 2, 3}));
  EXPECT_EQ(GemmShape::parse("2147483647x1x2147483647"), (GemmShape{2147483647, 1, 2147483647}));
}

TEST(GemmShape, RejectsZeroWithTheDocumentedMessage) {
  EXPECT_EQ(shape_error("4096x0x5"),
            "invalid shape '4096x0x5': sizes must be whole numbers >= 1 (expected MxNxK, e.g. "
            "4096x4096x4096)");
}

TEST(GemmShape, RejectsMalformedSizes) {
  for (const char* text : {"x1x1", "1xx1", "1x1x", "-1x2x3", "+1x2x3", "1x2xa", "1.5x2x3", "1x2x3 ",
                           " 1x2x3", "1x2x3k", "0x0x0", "1x2x0"}) {
    EXPECT_THAT(shape_error(text), AllOf(HasSubstr(std::string("'") + text + "'"),
                                         HasSubstr("sizes must be whole numbers >= 1")))
        << text;
  }
}

TEST(GemmShape, RejectsWrongCountOfParts) {
  for (const char* text : {"", "4096", "4096x4096", "1x2x3x4", "1x2x3x"}) {
    EXPECT_THAT(shape_error(text), AllOf(HasSubstr(std::string("'") + text + "'"),
                                         HasSubstr("three sizes"), HasSubstr("MxNxK")))
        << text;
  }
}

TEST(GemmShape, RejectsSizesAbove32Bits) {
  EXPECT_THAT(shape_error("2147483648x1x1"), HasSubstr("at most 2147483647"));
  EXPECT_THAT(shape_error("1x1x99999999999999999999999999"), HasSubstr("at most 2147483647"));
}

TEST(GemmShape, ToStringAndFlops) {
  const GemmShape shape{4095, 4097, 4093};
  EXPECT_EQ(shape.to_string(), "4095x4097x4093");
  EXPECT_EQ(GemmShape::parse(shape.to_string()), shape);
  EXPECT_DOUBLE_EQ(GemmShape({2, 3, 4}).flops(), 48.0);
  EXPECT_LT((GemmShape{1, 9, 9}), (GemmShape{2, 1, 1}));
}

TEST(GemmShape, PackedProblemIsValid) {
  const GemmProblem problem = GemmProblem::packed({5, 7, 3});
  EXPECT_EQ(problem.lda, 3);
  EXPECT_EQ(problem.ldb, 7);
  EXPECT_EQ(problem.ldc, 7);
  EXPECT_TRUE(problem.valid());
  EXPECT_EQ(problem.to_string(), "5x7x3 lda=3 ldb=7 ldc=7");
}

TEST(GemmShape, ProblemValidity) {
  const GemmShape shape{5, 7, 3};
  EXPECT_TRUE((GemmProblem{shape, 4, 9, 8}.valid()));   // padded strides
  EXPECT_FALSE((GemmProblem{shape, 2, 7, 7}.valid()));  // lda < K
  EXPECT_FALSE((GemmProblem{shape, 3, 6, 7}.valid()));  // ldb < N
  EXPECT_FALSE((GemmProblem{shape, 3, 7, 6}.valid()));  // ldc < N
  EXPECT_FALSE((GemmProblem{{0, 7, 3}, 3, 7, 7}.valid()));
  EXPECT_FALSE((GemmProblem{{5, 7, -3}, 3, 7, 7}.valid()));
  EXPECT_FALSE((GemmProblem{{2147483648, 1, 1}, 1, 1, 1}.valid()));
  EXPECT_FALSE((GemmProblem{shape, 2147483648, 7, 7}.valid()));
  EXPECT_TRUE((GemmProblem{{1, 2147483647, 1}, 1, 2147483647, 2147483647}.valid()));
}

}  // namespace
}  // namespace tiletune
