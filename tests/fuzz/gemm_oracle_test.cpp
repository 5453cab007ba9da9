#include "fuzz/gemm_oracle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "fuzz/gemm_operands.h"
#include "fuzz/poison.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

GemmCase make_case(GemmShape shape, std::int64_t lda, std::int64_t ldb, std::int64_t ldc,
                   InputKind kind, std::uint64_t seed = 7) {
  GemmCase c;
  c.problem = {shape, lda, ldb, ldc};
  c.inputs = kind;
  c.data_seed = seed;
  return c;
}

GemmCase packed_case(GemmShape shape, InputKind kind, std::uint64_t seed = 7) {
  return make_case(shape, shape.k, shape.n, shape.n, kind, seed);
}

// The test's own reference, independent of reference_element: the exact sum in double and
// sum_k |a_ik b_kj|.
struct Exact {
  double value = 0, magnitude = 0;
};
Exact exact_element(const GemmOperands& in, std::int64_t row, std::int64_t col) {
  Exact e;
  for (std::int64_t k = 0; k < in.a.cols; ++k) {
    const double p = double(in.a.at(row, k)) * double(in.b.at(k, col));
    e.value += p;
    e.magnitude += std::fabs(p);
  }
  return e;
}

double gamma_bound(std::int64_t k, double magnitude) {
  const double u = std::ldexp(1.0, -24);
  return double(k) * u / (1.0 - double(k) * u) * magnitude;
}

// C's region as a correct kernel leaves it: the exact value rounded once to float.
void write_exact_product(const GemmOperands& in, GuardedMatrix& c) {
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t j = 0; j < c.cols; ++j) c.at(r, j) = float(exact_element(in, r, j).value);
  }
}

// C's region as an FP32 kernel computes it: float accumulation, forwards or backwards over K.
void write_float_product(const GemmOperands& in, GuardedMatrix& c, bool reversed) {
  const std::int64_t K = in.a.cols;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t j = 0; j < c.cols; ++j) {
      float acc = 0.0f;
      for (std::int64_t i = 0; i < K; ++i) {
        const std::int64_t k = reversed ? K - 1 - i : i;
        acc = std::fma(in.a.at(r, k), in.b.at(k, j), acc);
      }
      c.at(r, j) = acc;
    }
  }
}

// A launch that did everything right; each test then breaks one thing in `after`.
struct Launch {
  GemmCase gemm_case;
  GemmOperands before, after;
  explicit Launch(const GemmCase& c) : gemm_case(c), before(make_operands(c)), after(before) {
    write_exact_product(before, after.c);
  }
  std::optional<Finding> judge() const {
    return judge_launch(gemm_case, Precision::fp32, before, after);
  }
};

// --- correct results pass -------------------------------------------------------------------

TEST(GemmOracle, CorrectResultPassesWithSmallIntegers) {
  for (const GemmCase& c : {packed_case({37, 29, 45}, InputKind::small_integers),
                            make_case({37, 29, 45}, 50, 31, 40, InputKind::small_integers, 3)}) {
    Launch launch(c);
    const auto finding = launch.judge();
    EXPECT_FALSE(finding.has_value()) << c.to_string() << ": " << finding->to_string();
  }
}

TEST(GemmOracle, FloatAccumulationInAnyOrderPassesWithRealInputs) {
  const GemmCase c = make_case({23, 19, 300}, 310, 25, 21, InputKind::real, 11);
  for (const bool reversed : {false, true}) {
    Launch launch(c);
    write_float_product(launch.before, launch.after.c, reversed);
    const auto finding = launch.judge();
    EXPECT_FALSE(finding.has_value()) << (reversed ? "backwards: " : "forwards: ")
                                      << finding->to_string();
  }
}

TEST(GemmOracle, SmallIntegerInputsAreIntegersInRange) {
  const Launch launch(make_case({9, 8, 7}, 10, 9, 8, InputKind::small_integers, 5));
  bool saw_nonzero = false;
  for (std::int64_t r = 0; r < 9; ++r) {
    for (std::int64_t k = 0; k < 7; ++k) {
      const float v = launch.before.a.at(r, k);
      ASSERT_EQ(v, std::round(v));
      ASSERT_GE(v, -8.0f);
      ASSERT_LE(v, 8.0f);
      saw_nonzero = saw_nonzero || v != 0.0f;
    }
    EXPECT_TRUE(is_poison(launch.before.a.at(r, 7))) << "A's padding column is poisoned";
  }
  EXPECT_TRUE(saw_nonzero);
  for (std::int64_t i = 0; i < std::int64_t(launch.before.c.guard); ++i) {
    EXPECT_TRUE(is_poison(launch.before.c.storage[std::size_t(i)]));
  }
  EXPECT_TRUE(is_poison(launch.before.c.at(0, 0))) << "C starts poisoned";
}

// --- wrong values ---------------------------------------------------------------------------

TEST(GemmOracle, ElementOffByOneIsAWrongElementAtItsRowAndColumn) {
  Launch launch(make_case({6, 5, 9}, 12, 7, 8, InputKind::small_integers));
  const double expected = exact_element(launch.before, 4, 3).value;
  launch.after.c.at(4, 3) += 1.0f;

  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "wrong element");
  EXPECT_EQ(finding->row, 4);
  EXPECT_EQ(finding->col, 3);
  EXPECT_EQ(finding->got, float(expected + 1.0));
  EXPECT_EQ(finding->expected, expected);
  EXPECT_EQ(finding->bound, 0.0) << "small integers are compared bit-exactly";
  EXPECT_EQ(finding->wrong_elements, 1);
  EXPECT_THAT(finding->to_string(), HasSubstr("wrong element at C[4][3]"));
}

TEST(GemmOracle, ReportsTheFirstWrongElementInRowMajorOrderAndCountsAll) {
  Launch launch(packed_case({8, 8, 8}, InputKind::small_integers));
  launch.after.c.at(5, 1) += 2.0f;
  launch.after.c.at(2, 7) -= 1.0f;
  launch.after.c.at(2, 6) = std::numeric_limits<float>::quiet_NaN();

  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "NaN in C");
  EXPECT_EQ(finding->row, 2);
  EXPECT_EQ(finding->col, 6);
  EXPECT_EQ(finding->wrong_elements, 3);
  EXPECT_THAT(finding->to_string(), HasSubstr("3 elements wrong in all"));
}

TEST(GemmOracle, RealResultJustInsideTheGammaBoundPasses) {
  Launch launch(packed_case({4, 4, 64}, InputKind::real, 21));
  const Exact e = exact_element(launch.before, 1, 2);
  const double bound = gamma_bound(64, e.magnitude);
  // The largest float whose distance from the exact value is still within the bound.
  float inside = float(e.value + 0.9 * bound);
  while (std::fabs(double(inside) - e.value) > bound) inside = std::nextafter(inside, 0.0f);
  ASSERT_GT(std::fabs(double(inside) - e.value), 0.5 * bound) << "the bound spans many ulps";
  launch.after.c.at(1, 2) = inside;

  const auto finding = launch.judge();
  EXPECT_FALSE(finding.has_value()) << finding->to_string();
}

TEST(GemmOracle, RealResultJustOutsideTheGammaBoundFails) {
  Launch launch(packed_case({4, 4, 64}, InputKind::real, 21));
  const Exact e = exact_element(launch.before, 1, 2);
  const double bound = gamma_bound(64, e.magnitude);
  float outside = float(e.value + 1.05 * bound);
  while (std::fabs(double(outside) - e.value) <= bound) {
    outside = std::nextafter(outside, std::numeric_limits<float>::infinity());
  }
  ASSERT_LT(std::fabs(double(outside) - e.value), 1.2 * bound);
  launch.after.c.at(1, 2) = outside;

  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "wrong element");
  EXPECT_EQ(finding->row, 1);
  EXPECT_EQ(finding->col, 2);
  EXPECT_EQ(finding->got, outside);
  EXPECT_NEAR(finding->expected, e.value, 1e-12);
  EXPECT_NEAR(finding->bound, bound, bound * 1e-9);
  EXPECT_EQ(finding->wrong_elements, 1);
}

TEST(GemmOracle, ReferenceElementMatchesTheExactSumAndGammaBound) {
  const Launch launch(make_case({3, 5, 100}, 101, 6, 5, InputKind::real, 2));
  const Exact e = exact_element(launch.before, 2, 4);
  const ReferenceElement ref =
      reference_element(launch.before, InputKind::real, Precision::fp32, 2, 4);
  EXPECT_DOUBLE_EQ(ref.value, e.value);
  EXPECT_DOUBLE_EQ(ref.bound, gamma_bound(100, e.magnitude));
  EXPECT_EQ(
      reference_element(launch.before, InputKind::small_integers, Precision::fp32, 2, 4).bound,
      0.0);
}

TEST(GemmOracle, NaNInCIsFound) {
  Launch launch(packed_case({7, 6, 5}, InputKind::real));
  launch.after.c.at(3, 4) = std::numeric_limits<float>::quiet_NaN();
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "NaN in C");
  EXPECT_EQ(finding->row, 3);
  EXPECT_EQ(finding->col, 4);
}

TEST(GemmOracle, InfInCIsFound) {
  for (const float inf : {std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    Launch launch(packed_case({7, 6, 5}, InputKind::small_integers));
    launch.after.c.at(6, 0) = inf;
    const auto finding = launch.judge();
    ASSERT_TRUE(finding.has_value());
    EXPECT_EQ(finding->what, "Inf in C");
    EXPECT_EQ(finding->row, 6);
    EXPECT_EQ(finding->col, 0);
  }
}

TEST(GemmOracle, UntouchedPoisonElementIsNeverWritten) {
  Launch launch(make_case({5, 9, 4}, 4, 9, 12, InputKind::small_integers));
  launch.after.c.at(4, 8) = poison_value();
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "element never written, or computed from poisoned memory");
  EXPECT_EQ(finding->row, 4);
  EXPECT_EQ(finding->col, 8);
  EXPECT_TRUE(is_poison(finding->got));
}

TEST(GemmOracle, KernelThatWritesNothingLeavesEveryElementUnwritten) {
  const GemmCase c = packed_case({3, 4, 5}, InputKind::small_integers);
  const GemmOperands before = make_operands(c);
  const auto finding = judge_launch(c, Precision::fp32, before, before);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "element never written, or computed from poisoned memory");
  EXPECT_EQ(finding->row, 0);
  EXPECT_EQ(finding->col, 0);
  EXPECT_EQ(finding->wrong_elements, 12);
}

// --- writes outside C and into the inputs ---------------------------------------------------

TEST(GemmOracle, WriteIntoCsPaddingColumnIsAWriteOutsideC) {
  // N = 5, ldc = 8: columns 5, 6, 7 of every row are padding.
  Launch launch(make_case({4, 5, 3}, 3, 5, 8, InputKind::small_integers));
  launch.after.c.at(2, 6) = 0.0f;
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_THAT(finding->what, StartsWith("write outside C: padding at row 2 column 6"));
  EXPECT_THAT(finding->what, HasSubstr("width 5, leading dimension 8"));
  EXPECT_EQ(finding->row, -1) << "not an element of C";
}

TEST(GemmOracle, WriteIntoTheGuardBeforeCIsAWriteOutsideC) {
  Launch launch(packed_case({4, 5, 3}, InputKind::small_integers));
  launch.after.c.storage[launch.after.c.guard - 1] = 1.0f;  // C[-1]
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "write outside C: the guard before it");
}

TEST(GemmOracle, WriteIntoTheGuardAfterCIsAWriteOutsideC) {
  Launch launch(packed_case({4, 5, 3}, InputKind::small_integers));
  launch.after.c.storage[launch.after.c.guard + 4 * 5] = 1.0f;  // C[M * ldc], one past the end
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "write outside C: the guard after it");
}

TEST(GemmOracle, WriteOfANaNOutsideCIsStillFound) {
  // The poison is a NaN with a payload of its own: a different NaN written over it is a change.
  Launch launch(packed_case({4, 5, 3}, InputKind::small_integers));
  launch.after.c.storage.back() = std::numeric_limits<float>::quiet_NaN();
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "write outside C: the guard after it");
}

TEST(GemmOracle, ModifiedElementOfAIsAnInputOverwritten) {
  Launch launch(packed_case({4, 5, 3}, InputKind::small_integers));
  launch.after.a.at(3, 2) += 1.0f;
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "input A overwritten at an element");
}

TEST(GemmOracle, ModifiedElementOfBIsAnInputOverwritten) {
  Launch launch(packed_case({4, 5, 3}, InputKind::real));
  launch.after.b.at(0, 4) = 0.5f;
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->what, "input B overwritten at an element");
}

TEST(GemmOracle, WriteIntoAsPaddingOrGuardIsAnInputOverwritten) {
  {
    Launch launch(make_case({4, 5, 3}, 6, 5, 5, InputKind::small_integers));
    launch.after.a.at(1, 4) = 0.0f;  // K = 3, lda = 6: column 4 is padding
    const auto finding = launch.judge();
    ASSERT_TRUE(finding.has_value());
    EXPECT_THAT(finding->what, StartsWith("input A overwritten at padding at row 1 column 4"));
  }
  {
    Launch launch(packed_case({4, 5, 3}, InputKind::small_integers));
    launch.after.b.storage.front() = 0.0f;
    const auto finding = launch.judge();
    ASSERT_TRUE(finding.has_value());
    EXPECT_EQ(finding->what, "input B overwritten at the guard before it");
  }
}

TEST(GemmOracle, WritesOutsideCAreReportedBeforeWrongElements) {
  Launch launch(make_case({4, 5, 3}, 3, 5, 6, InputKind::small_integers));
  launch.after.c.at(0, 0) += 1.0f;
  launch.after.c.at(3, 5) = 2.0f;  // padding of the last row
  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_THAT(finding->what, StartsWith("write outside C: padding at row 3 column 5"));
}

// --- the smallest problem -------------------------------------------------------------------

TEST(GemmOracle, OneByOneByOne) {
  for (const InputKind kind : {InputKind::small_integers, InputKind::real}) {
    Launch launch(packed_case({1, 1, 1}, kind, 4));
    const double expected = double(launch.before.a.at(0, 0)) * double(launch.before.b.at(0, 0));
    EXPECT_EQ(launch.after.c.at(0, 0), float(expected));
    EXPECT_FALSE(launch.judge().has_value()) << to_string(kind);

    launch.after.c.at(0, 0) = float(expected) + 1.0f;
    const auto finding = launch.judge();
    ASSERT_TRUE(finding.has_value()) << to_string(kind);
    EXPECT_EQ(finding->what, "wrong element");
    EXPECT_EQ(finding->row, 0);
    EXPECT_EQ(finding->col, 0);
    EXPECT_EQ(finding->wrong_elements, 1);
  }
}

// On x86 a quiet NaN keeps its payload through arithmetic, so an element computed from poisoned
// padding carries the poison bits: the oracle must not claim it was never written.
TEST(GemmOracle, ElementComputedFromPoisonOnTheCpuIsNotCalledUnwrittenAlone) {
  Launch launch(make_case({2, 2, 3}, 4, 2, 2, InputKind::small_integers));
  // The kernel reads one element too many along K: A's padding column 3, a poison NaN.
  volatile float poisoned_input = launch.before.a.at(1, 3);
  volatile float b_value = 2.0f;
  const float written = launch.after.c.at(1, 1) + poisoned_input * b_value;
  launch.after.c.at(1, 1) = written;
  ASSERT_TRUE(std::isnan(written));

  const auto finding = launch.judge();
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->row, 1);
  EXPECT_EQ(finding->col, 1);
  EXPECT_EQ(finding->what, "element never written, or computed from poisoned memory");
}


// --- a reference computed once for many launches ----------------------------------------------

// The full shape's reference is computed once and shared (tuner/pipeline/shared_references.h):
// judged against it, a launch gets the finding it gets with the reference computed in the judge.
TEST(GemmOracle, AReferenceComputedOnceJudgesAsTheOneComputedInTheJudge) {
  Launch launch(make_case({23, 19, 300}, 310, 25, 21, InputKind::real, 11));
  const ReferenceTable table = compute_reference(launch.before);
  ASSERT_EQ(table.value.size(), 23u * 19u);
  const Exact e = exact_element(launch.before, 4, 17);
  EXPECT_NEAR(table.value[4 * 19 + 17], e.value, 1e-12);
  EXPECT_NEAR(table.magnitude[4 * 19 + 17], e.magnitude, 1e-12);
  EXPECT_FALSE(judge_launch(launch.gemm_case, Precision::fp32, launch.before, launch.after, &table));

  const double bound = gamma_bound(300, e.magnitude);
  launch.after.c.at(4, 17) = float(e.value + 2 * bound);
  launch.after.c.at(9, 3) = std::numeric_limits<float>::quiet_NaN();
  const auto computed = launch.judge();
  const auto shared =
      judge_launch(launch.gemm_case, Precision::fp32, launch.before, launch.after, &table);
  ASSERT_TRUE(computed.has_value());
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(shared->to_string(), computed->to_string());
  EXPECT_EQ(shared->row, 4);
  EXPECT_EQ(shared->wrong_elements, 2);
}

TEST(GemmOracle, AReferenceOfAnotherSizeIsRefused) {
  Launch launch(packed_case({8, 8, 8}, InputKind::small_integers));
  const ReferenceTable other =
      compute_reference(make_operands(packed_case({8, 8, 9}, InputKind::small_integers)));
  EXPECT_THROW(judge_launch(launch.gemm_case, Precision::fp32, launch.before, launch.after, &other),
               std::invalid_argument);
}


// A tune gives each worker its share of the cores for a large reference: however many threads
// judge, the findings and the reference are the same.
TEST(GemmOracle, AnyNumberOfReferenceThreadsJudgesAlike) {
  Launch launch(make_case({211, 190, 128}, 130, 197, 191, InputKind::real, 5));  // 5M multiply-adds
  launch.after.c.at(3, 4) += 1.0f;
  launch.after.c.at(150, 189) = std::numeric_limits<float>::infinity();
  launch.after.c.at(210, 0) -= 1.0f;
  const auto all_cores = launch.judge();
  const ReferenceTable table = compute_reference(launch.before);
  ASSERT_TRUE(all_cores.has_value());
  EXPECT_EQ(all_cores->wrong_elements, 3);
  for (const unsigned threads : {1u, 3u, 7u}) {
    set_reference_threads(threads);
    const auto judged = launch.judge();
    ASSERT_TRUE(judged.has_value()) << threads;
    EXPECT_EQ(judged->to_string(), all_cores->to_string()) << threads;
    const ReferenceTable again = compute_reference(launch.before);
    EXPECT_EQ(again.value, table.value) << threads;
    EXPECT_EQ(again.magnitude, table.magnitude) << threads;
  }
  set_reference_threads(0);
}

}  // namespace
}  // namespace tiletune
