#include "fuzz/gemm_case.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tiletune {
namespace {

using ::testing::HasSubstr;

std::string parse_error(const std::string& text) {
  try {
    const GemmCase parsed = GemmCase::parse(text);
    ADD_FAILURE() << "parsed '" << text << "' as '" << parsed.to_string() << "'";
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "'" << text << "' threw something else than std::invalid_argument: "
                  << e.what();
  }
  return {};
}

void expect_same_case(const GemmCase& actual, const GemmCase& expected) {
  EXPECT_EQ(actual.problem, expected.problem);
  EXPECT_EQ(actual.inputs, expected.inputs);
  EXPECT_EQ(actual.data_seed, expected.data_seed);
  EXPECT_EQ(actual.schedule_seed, expected.schedule_seed);
}

TEST(GemmCase, ToStringHasTheDocumentedForm) {
  GemmCase c;
  c.problem = {{37, 29, 45}, 50, 31, 29};
  c.inputs = InputKind::small_integers;
  c.data_seed = 12;
  c.schedule_seed = 7;
  EXPECT_EQ(c.to_string(), "37x29x45 lda=50 ldb=31 ldc=29 inputs=small_integers data=12 schedule=7");
  c.inputs = InputKind::real;
  EXPECT_THAT(c.to_string(), HasSubstr(" inputs=real "));
  c.inputs = InputKind::sparse_real;
  EXPECT_THAT(c.to_string(), HasSubstr(" inputs=sparse_real "));
}

TEST(GemmCase, ToStringAndParseRoundTrip) {
  GemmCase c;
  for (const auto& [problem, kind, data, schedule] :
       {std::tuple{GemmProblem{{1, 1, 1}, 1, 1, 1}, InputKind::small_integers, 0ull, 0ull},
        std::tuple{GemmProblem{{37, 29, 45}, 50, 31, 29}, InputKind::real, 12ull, 7ull},
        std::tuple{GemmProblem{{5, 3, 400}, 401, 3, 3}, InputKind::sparse_real, 9ull, 2ull},
        std::tuple{GemmProblem{{2147483647, 3, 2}, 2147483647, 3, 2147483647},
                   InputKind::small_integers, 18446744073709551615ull, 1ull << 40}}) {
    c.problem = problem;
    c.inputs = kind;
    c.data_seed = data;
    c.schedule_seed = schedule;
    SCOPED_TRACE(c.to_string());
    expect_same_case(GemmCase::parse(c.to_string()), c);
    EXPECT_EQ(GemmCase::parse(c.to_string()).to_string(), c.to_string());
  }
}

TEST(GemmCase, ParseDefaultsToPackedSmallIntegersSeedZero) {
  const GemmCase c = GemmCase::parse("8x6x4");
  EXPECT_EQ(c.problem, GemmProblem::packed({8, 6, 4}));
  EXPECT_EQ(c.inputs, InputKind::small_integers);
  EXPECT_EQ(c.data_seed, 0u);
  EXPECT_EQ(c.schedule_seed, 0u);
}

TEST(GemmCase, ParseTakesKeysInAnyOrderAndExtraSpaces) {
  const GemmCase c = GemmCase::parse("  8x6x4   schedule=3 inputs=real  ldc=9 lda=4 data=5 ");
  EXPECT_EQ(c.problem, (GemmProblem{{8, 6, 4}, 4, 6, 9}));
  EXPECT_EQ(c.inputs, InputKind::real);
  EXPECT_EQ(c.data_seed, 5u);
  EXPECT_EQ(c.schedule_seed, 3u);
}

TEST(GemmCase, EmptyTextIsRejected) {
  EXPECT_THAT(parse_error(""), HasSubstr("empty case"));
  EXPECT_THAT(parse_error("   "), HasSubstr("empty case"));
}

TEST(GemmCase, BadShapeIsRejectedNamingIt) {
  EXPECT_THAT(parse_error("37x29 lda=29"), HasSubstr("'37x29'"));
  EXPECT_THAT(parse_error("0x1x1"), HasSubstr("'0x1x1'"));
}

TEST(GemmCase, UnknownKeyIsRejectedNamingTheItem) {
  const std::string message = parse_error("8x6x4 ldd=9");
  EXPECT_THAT(message, HasSubstr("'ldd=9'"));
  EXPECT_THAT(message, HasSubstr("not understood"));
  EXPECT_THAT(parse_error("8x6x4 inputs=floats"), HasSubstr("'inputs=floats'"));
}

TEST(GemmCase, ItemThatIsNotKeyValueIsRejectedNamingIt) {
  const std::string message = parse_error("8x6x4 lda=4 small_integers");
  EXPECT_THAT(message, HasSubstr("'small_integers'"));
  EXPECT_THAT(message, HasSubstr("not key=value"));
}

TEST(GemmCase, NonNumericValueIsRejectedNamingTheItem) {
  EXPECT_THAT(parse_error("8x6x4 lda=wide"), HasSubstr("'lda=wide'"));
  EXPECT_THAT(parse_error("8x6x4 data="), HasSubstr("'data='"));
  EXPECT_THAT(parse_error("8x6x4 ldc=99999999999999999999999"), HasSubstr("ldc="));
}

TEST(GemmCase, LeadingDimensionNarrowerThanTheMatrixIsRejected) {
  for (const char* text : {"8x6x4 lda=3", "8x6x4 ldb=5", "8x6x4 ldc=5", "8x6x4 lda=-4"}) {
    const std::string message = parse_error(text);
    EXPECT_THAT(message, HasSubstr("lda >= K, ldb >= N, ldc >= N")) << text;
    EXPECT_THAT(message, HasSubstr(text)) << "the message quotes the case";
  }
}

TEST(GemmCase, TrailingGarbageOrSignInANumberIsRejected) {
  EXPECT_THAT(parse_error("8x6x4 lda=12abc"), HasSubstr("'lda=12abc'"));
  EXPECT_THAT(parse_error("8x6x4 data=-1"), HasSubstr("'data=-1'"));
}

}  // namespace
}  // namespace tiletune
