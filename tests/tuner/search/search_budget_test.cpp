#include "tuner/search/search_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tiletune {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string budget_error(const std::string& text) {
  try {
    SearchBudget::parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SearchBudget, EvaluationsAreACount) {
  const SearchBudget budget = SearchBudget::parse("200");
  EXPECT_EQ(budget.evaluation_limit(1000), 200u);
  EXPECT_EQ(budget.evaluation_limit(50), 200u) << "the space running out ends the search first";
  EXPECT_EQ(budget.time_limit(), std::nullopt);
  EXPECT_EQ(budget.to_string(), "200");
}

TEST(SearchBudget, ShareOfTheSpaceRoundsUpToAtLeastOne) {
  EXPECT_EQ(SearchBudget::parse("10%").evaluation_limit(256), 26u);
  EXPECT_EQ(SearchBudget::parse("10%").evaluation_limit(240), 24u) << "exact shares stay exact";
  EXPECT_EQ(SearchBudget::parse("20%").evaluation_limit(35), 7u);
  EXPECT_EQ(SearchBudget::parse("10%").evaluation_limit(5), 1u);
  EXPECT_EQ(SearchBudget::parse("2.5%").evaluation_limit(400), 10u);
  EXPECT_EQ(SearchBudget::parse("1.1%").evaluation_limit(3000), 33u) << "not 34 by rounding error";
  EXPECT_EQ(SearchBudget::parse("100%").evaluation_limit(7), 7u);
  EXPECT_EQ(SearchBudget::parse("10%").time_limit(), std::nullopt);
  EXPECT_EQ(SearchBudget::parse("10%").to_string(), "10%");
  EXPECT_EQ(SearchBudget::parse("2.5%").to_string(), "2.5%");
}

TEST(SearchBudget, TimesAreSecondsMinutesOrHours) {
  EXPECT_EQ(SearchBudget::parse("90s").time_limit(), 90s);
  EXPECT_EQ(SearchBudget::parse("5m").time_limit(), 300s);
  EXPECT_EQ(SearchBudget::parse("1h").time_limit(), 3600s);
  EXPECT_EQ(SearchBudget::parse("90s").evaluation_limit(100), std::nullopt);
  EXPECT_EQ(SearchBudget::parse("5m").to_string(), "300s");
}

TEST(SearchBudget, BadTextIsOneLineNamingIt) {
  EXPECT_EQ(budget_error("12x"),
            "budget '12x': expected N evaluations, N% of the space, or a time like 90s, 5m, 1h");
  for (const char* bad : {"", "%", "s", "x10", "-5", "+5", "1.5", "1.5s", " 10", "10 ", "10 %", "1e3",
                          "5ms", "0x10", ".5%", "nan%", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    const std::string error = budget_error(bad);
    EXPECT_THAT(error, StartsWith(std::string("budget '") + bad + "': expected N evaluations"));
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(SearchBudget, NothingAndMoreThanTheWholeSpaceAreRefused) {
  for (const char* nothing : {"0", "0%", "0s", "0h", "0.0%"}) {
    SCOPED_TRACE(nothing);
    EXPECT_THAT(budget_error(nothing), HasSubstr("more than nothing"));
  }
  EXPECT_EQ(budget_error("150%"), "budget '150%': a share of the space is at most 100%");
}

}  // namespace
}  // namespace tiletune
