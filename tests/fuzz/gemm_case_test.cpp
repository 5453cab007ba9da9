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
  for (auto [text, why] : {std::pair{"8x6x4 lda=3", "lda=3 is not in [4, 2147483647] (K, A as stored)"},
                           {"8x6x4 ldb=5", "ldb=5 is not in [6, 2147483647] (N, B as stored)"},
                           {"8x6x4 ldc=5", "ldc=5 is not in [6, 2147483647] (N)"},
                           {"8x6x4 lda=-4", "lda=-4 is not in [4"},
                           // Transposed, A is stored K x M: lda >= M.
                           {"8x6x4 lda=4 op=tn", "lda=4 is not in [8, 2147483647] (M, A transposed)"},
                           {"8x6x4 lda=4 ldc=6 batch=2 stride_a=0 stride_b=0 stride_c=40",
                            "stride_c=40 is below the 48 elements one C spans"}}) {
    const std::string message = parse_error(text);
    EXPECT_THAT(message, HasSubstr(why)) << text;
    EXPECT_THAT(message, HasSubstr(text)) << "the message quotes the case";
  }
}

TEST(GemmCase, TheBlasContractRoundTripsThroughItsText) {
  GemmCase c;
  c.problem = GemmProblem{{8, 6, 4}, 9, 7, 6};
  c.problem.op_a = Op::t;
  c.problem.alpha = -0.125f;
  c.problem.beta = 1.5f;
  c.problem.batch = 3;
  c.problem.stride_a = 0;
  c.problem.stride_b = 56;
  c.problem.stride_c = 60;
  c.problem.epilogue = Epilogue::bias_gelu;
  const std::string text = c.to_string();
  EXPECT_EQ(text, "8x6x4 lda=9 ldb=7 ldc=6 op=tn alpha=-0.125 beta=1.5 batch=3 stride_a=0 "
                  "stride_b=56 stride_c=60 epilogue=bias_gelu inputs=small_integers data=0 schedule=0");
  EXPECT_EQ(GemmCase::parse(text).problem, c.problem);
  EXPECT_THAT(parse_error("8x6x4 op=tx"), HasSubstr("'op=tx'"));
  EXPECT_THAT(parse_error("8x6x4 epilogue=swish"), HasSubstr("'epilogue=swish'"));
}

TEST(GemmCase, TrailingGarbageOrSignInANumberIsRejected) {
  EXPECT_THAT(parse_error("8x6x4 lda=12abc"), HasSubstr("'lda=12abc'"));
  EXPECT_THAT(parse_error("8x6x4 data=-1"), HasSubstr("'data=-1'"));
}

}  // namespace
}  // namespace tiletune
