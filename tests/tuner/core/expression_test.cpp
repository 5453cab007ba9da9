#include "tuner/core/expression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tiletune {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::int64_t eval(std::string_view text, const Bindings& bindings = {}) {
  return Expression::parse(text).evaluate(bindings);
}

std::string parse_error(std::string_view text) {
  try {
    Expression::parse(text);
  } catch (const ExpressionError& error) {
    return error.what();
  }
  ADD_FAILURE() << "'" << text << "' parsed";
  return {};
}

std::string eval_error(std::string_view text, const Bindings& bindings = {}) {
  const Expression expression = Expression::parse(text);  // must parse: the error comes later
  try {
    expression.evaluate(bindings);
  } catch (const ExpressionError& error) {
    return error.what();
  }
  ADD_FAILURE() << "'" << text << "' evaluated";
  return {};
}

TEST(Expression, Literals) {
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("  7  "), 7);
  EXPECT_EQ(eval("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(eval("0"), 0);
}

TEST(Expression, Precedence) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("2 + 10 % 4"), 4);
  EXPECT_EQ(eval("1 + 2 == 3"), 1);
  EXPECT_EQ(eval("1 < 2 + 0"), 1);
  EXPECT_EQ(eval("1 || 0 && 0"), 1);  // && binds tighter than ||
  EXPECT_EQ(eval("0 && 1 || 1"), 1);
  EXPECT_EQ(eval("2 == 2 && 3 != 4"), 1);
  EXPECT_EQ(eval("-2 * 3"), -6);
  EXPECT_EQ(eval("!0 + 1"), 2);         // unary binds tighter than +
  EXPECT_EQ(eval("1 + 1 ? 7 : 8"), 7);  // ?: is the loosest
}

TEST(Expression, LeftAssociativity) {
  EXPECT_EQ(eval("10 - 3 - 2"), 5);
  EXPECT_EQ(eval("100 / 10 / 5"), 2);
  EXPECT_EQ(eval("17 % 10 % 4"), 3);
  EXPECT_EQ(eval("3 > 2 > 1"), 0);  // (3 > 2) > 1 as in C
  EXPECT_EQ(eval("1 == 1 == 1"), 1);
}

TEST(Expression, Comparisons) {
  EXPECT_EQ(eval("3 < 4"), 1);
  EXPECT_EQ(eval("4 < 4"), 0);
  EXPECT_EQ(eval("4 <= 4"), 1);
  EXPECT_EQ(eval("5 > 4"), 1);
  EXPECT_EQ(eval("4 >= 5"), 0);
  EXPECT_EQ(eval("4 == 5"), 0);
  EXPECT_EQ(eval("4 != 5"), 1);
}

TEST(Expression, UnaryOperators) {
  EXPECT_EQ(eval("-5"), -5);
  EXPECT_EQ(eval("--5"), 5);
  EXPECT_EQ(eval("2 - -3"), 5);
  EXPECT_EQ(eval("+4"), 4);
  EXPECT_EQ(eval("!0"), 1);
  EXPECT_EQ(eval("!7"), 0);
  EXPECT_EQ(eval("!!7"), 1);
  EXPECT_EQ(eval("-(2 + 3)"), -5);
}

TEST(Expression, LogicalOperatorsYieldZeroOrOne) {
  EXPECT_EQ(eval("5 && 7"), 1);
  EXPECT_EQ(eval("0 || -3"), 1);
  EXPECT_EQ(eval("0 || 0"), 0);
}

TEST(Expression, TernaryIsRightAssociative) {
  EXPECT_EQ(eval("1 ? 2 : 3"), 2);
  EXPECT_EQ(eval("0 ? 2 : 3"), 3);
  EXPECT_EQ(eval("0 ? 1 : 0 ? 2 : 3"), 3);
  EXPECT_EQ(eval("1 ? 0 ? 4 : 5 : 6"), 5);
  EXPECT_EQ(eval("A > 8 ? A : 8", {{"A", 32}}), 32);
}

TEST(Expression, OnlyTheTakenBranchIsEvaluated) {
  EXPECT_EQ(eval("0 ? 1 / 0 : 5"), 5);
  EXPECT_EQ(eval("1 ? 5 : 1 / 0"), 5);
  EXPECT_EQ(eval("0 && 1 / 0"), 0);
  EXPECT_EQ(eval("1 || 1 / 0"), 1);
}

TEST(Expression, DivisionTruncatesTowardZero) {
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("-7 / 2"), -3);
  EXPECT_EQ(eval("7 / -2"), -3);
  EXPECT_EQ(eval("-7 % 2"), -1);
  EXPECT_EQ(eval("7 % -2"), 1);
  EXPECT_EQ(eval("(-9223372036854775807 - 1) % -1"), 0);
}

TEST(Expression, MinMax) {
  EXPECT_EQ(eval("min(3, -4)"), -4);
  EXPECT_EQ(eval("max(3, -4)"), 3);
  EXPECT_EQ(eval("max(min(1, 2), 3)"), 3);
  EXPECT_EQ(eval("min(2 * 5, 3 + 4)"), 7);
}

TEST(Expression, CeilDiv) {
  EXPECT_EQ(eval("ceil_div(7, 2)"), 4);
  EXPECT_EQ(eval("ceil_div(8, 2)"), 4);
  EXPECT_EQ(eval("ceil_div(0, 5)"), 0);
  EXPECT_EQ(eval("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(eval("ceil_div(7, -2)"), -3);
  EXPECT_EQ(eval("ceil_div(-7, -2)"), 4);
  EXPECT_EQ(eval("ceil_div(4097, 16)"), 257);
}

TEST(Expression, RoundUp) {
  EXPECT_EQ(eval("round_up(7, 4)"), 8);
  EXPECT_EQ(eval("round_up(8, 4)"), 8);
  EXPECT_EQ(eval("round_up(0, 4)"), 0);
  EXPECT_EQ(eval("round_up(1, 128)"), 128);
}

TEST(Expression, IsPow2) {
  EXPECT_EQ(eval("is_pow2(1)"), 1);
  EXPECT_EQ(eval("is_pow2(64)"), 1);
  EXPECT_EQ(eval("is_pow2(4611686018427387904)"), 1);
  EXPECT_EQ(eval("is_pow2(0)"), 0);
  EXPECT_EQ(eval("is_pow2(96)"), 0);
  EXPECT_EQ(eval("is_pow2(-8)"), 0);
}

TEST(Expression, VariablesAndNames) {
  const Expression expression = Expression::parse("ceil_div(N, TILE) * min(TILE, M) + TILE");
  EXPECT_THAT(expression.names(), ElementsAre("M", "N", "TILE"));  // functions are not names
  EXPECT_TRUE(expression.references("TILE"));
  EXPECT_FALSE(expression.references("min"));
  EXPECT_EQ(expression.evaluate({{"N", 100}, {"TILE", 16}, {"M", 8}}), 7 * 8 + 16);
  EXPECT_EQ(expression.text(), "ceil_div(N, TILE) * min(TILE, M) + TILE");
  EXPECT_THAT(Expression::parse("1 + 2").names(), IsEmpty());
}

TEST(Expression, NameThatMatchesAFunctionIsAVariableWithoutParentheses) {
  EXPECT_EQ(eval("min + 1", {{"min", 4}}), 5);
}

TEST(Expression, SyntaxErrorsQuoteTheTextAndColumn) {
  EXPECT_THAT(parse_error("1 +"),
              AllOf(HasSubstr("'1 +'"), HasSubstr("end of expression"), HasSubstr("column 4")));
  EXPECT_THAT(parse_error(""), HasSubstr("expected a number, a name or '('"));
  EXPECT_THAT(parse_error("(1 + 2"), AllOf(HasSubstr("expected ')'"), HasSubstr("column 7")));
  EXPECT_THAT(parse_error("1 2"),
              AllOf(HasSubstr("expected an operator"), HasSubstr("'2'"), HasSubstr("column 3")));
  EXPECT_THAT(parse_error("1 ? 2"), HasSubstr("expected ':'"));
  EXPECT_THAT(parse_error("* 3"), AllOf(HasSubstr("'*'"), HasSubstr("column 1")));
  EXPECT_THAT(parse_error("min(1, )"), HasSubstr("column 8"));
}

TEST(Expression, BadCharacters) {
  EXPECT_THAT(parse_error("A & B"),
              AllOf(HasSubstr("'&'"), HasSubstr("'&&'"), HasSubstr("column 3")));
  EXPECT_THAT(parse_error("A | B"), HasSubstr("'||'"));
  EXPECT_THAT(parse_error("A = B"), HasSubstr("'=='"));
  EXPECT_THAT(parse_error("1 $ 2"),
              AllOf(HasSubstr("unexpected character '$'"), HasSubstr("column 3")));
}

TEST(Expression, UnknownFunctionIsAParseError) {
  EXPECT_THAT(parse_error("floor(1)"), AllOf(HasSubstr("unknown function 'floor'"),
                                             HasSubstr("ceil_div"), HasSubstr("column 1")));
}

TEST(Expression, WrongArityIsAParseError) {
  EXPECT_THAT(parse_error("min(1)"), HasSubstr("min() takes 2 arguments, got 1"));
  EXPECT_THAT(parse_error("1 + max(1, 2, 3)"),
              AllOf(HasSubstr("max() takes 2 arguments, got 3"), HasSubstr("column 5")));
  EXPECT_THAT(parse_error("is_pow2(1, 2)"), HasSubstr("is_pow2() takes 1 argument, got 2"));
  EXPECT_THAT(parse_error("ceil_div()"), HasSubstr("ceil_div"));
}

TEST(Expression, LiteralTooLarge) {
  EXPECT_THAT(parse_error("9223372036854775808"), HasSubstr("does not fit in 64 bits"));
}

TEST(Expression, NestingIsBounded) {
  const std::string deep = std::string(1000, '(') + "1" + std::string(1000, ')');
  EXPECT_THAT(parse_error(deep), HasSubstr("nested too deeply"));
  EXPECT_THAT(parse_error(std::string(1000, '-') + "1"), HasSubstr("nested too deeply"));
  EXPECT_EQ(eval(std::string(50, '(') + "1" + std::string(50, ')')), 1);
}

TEST(Expression, UnboundNameIsAnEvaluationError) {
  EXPECT_NO_THROW(Expression::parse("A + X"));  // parsing needs no bindings
  EXPECT_THAT(eval_error("A + X", {{"A", 1}}),
              AllOf(HasSubstr("'A + X'"), HasSubstr("unknown name 'X'"), HasSubstr("column 5")));
}

TEST(Expression, DivisionByZero) {
  EXPECT_THAT(
      eval_error("10 / (A - A)", {{"A", 3}}),
      AllOf(HasSubstr("'10 / (A - A)'"), HasSubstr("division by zero"), HasSubstr("column 4")));
  EXPECT_THAT(eval_error("5 % 0"), HasSubstr("modulo by zero"));
  EXPECT_THAT(eval_error("ceil_div(1, 0)"), HasSubstr("division by zero"));
  EXPECT_THAT(eval_error("round_up(1, 0)"), HasSubstr("division by zero"));
}

TEST(Expression, Overflow) {
  EXPECT_THAT(eval_error("9223372036854775807 + 1"),
              AllOf(HasSubstr("overflow"), HasSubstr("column 21")));
  EXPECT_THAT(eval_error("-9223372036854775807 - 2"), HasSubstr("overflow"));
  EXPECT_THAT(eval_error("4611686018427387904 * 2"), HasSubstr("overflow"));
  EXPECT_THAT(eval_error("-(-9223372036854775807 - 1)"), HasSubstr("overflow"));
  EXPECT_THAT(eval_error("(-9223372036854775807 - 1) / -1"), HasSubstr("overflow"));
  EXPECT_THAT(eval_error("ceil_div(-9223372036854775807 - 1, -1)"), HasSubstr("overflow"));
  EXPECT_THAT(eval_error("round_up(9223372036854775807, 2)"), HasSubstr("overflow"));
  EXPECT_THAT(eval_error("A * A", {{"A", INT64_C(1) << 32}}), HasSubstr("overflow"));
  EXPECT_EQ(eval("-9223372036854775807 - 1"), INT64_MIN);
}

TEST(Expression, ConjunctsSplitTopLevelAndsOnly) {
  const Expression e = Expression::parse("M % 8 == 0 && (lda % 4 == 0 && T > 1) && (N == 1 || K == 2)");
  const std::vector<Expression> parts = e.conjuncts();
  ASSERT_EQ(parts.size(), 4u);
  const Bindings values{{"M", 16}, {"lda", 6}, {"T", 2}, {"N", 3}, {"K", 2}};
  EXPECT_EQ(parts[0].evaluate(values), 1);
  EXPECT_EQ(parts[1].evaluate(values), 0);  // lda % 4 == 0
  EXPECT_EQ(parts[2].evaluate(values), 1);
  EXPECT_EQ(parts[3].evaluate(values), 1);
  EXPECT_THAT(parts[1].names(), ElementsAre("lda"));
  EXPECT_THAT(parts[3].names(), ElementsAre("K", "N"));
  EXPECT_EQ(parts[1].text(), e.text()) << "each part keeps the whole requirement's text";
  EXPECT_EQ(Expression::parse("A || B && C").conjuncts().size(), 1u);
}

TEST(Expression, DefaultConstructedCannotBeEvaluated) {
  EXPECT_THROW(Expression{}.evaluate({}), ExpressionError);
}

}  // namespace
}  // namespace tiletune
