// The property runner with executors written here, on the CPU: a correct SGEMM, and SGEMMs with
// the bugs tiled kernels really have, each of which must be found and shrunk to a small case.
#include "fuzz/property_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const Configuration kTile16{{{"TILE", 16}}};

// A plain SGEMM in FP32 that writes C's region and nothing else; `k_end` lets a buggy subclass
// stop early along K.
class CpuSgemm : public GemmExecutor {
 public:
  void run(const GemmCase& gemm_case, GemmOperands& operands) override {
    ++runs;
    seen.push_back(gemm_case.to_string());
    const GemmProblem& p = gemm_case.problem;
    for (std::int64_t r = 0; r < p.shape.m; ++r) {
      for (std::int64_t c = 0; c < p.shape.n; ++c) {
        float acc = 0.0f;
        for (std::int64_t k = 0; k < k_end(p.shape.k); ++k) {
          acc += operands.a.data()[r * p.lda + k] * operands.b.data()[k * p.ldb + c];
        }
        operands.c.data()[r * store_stride(p) + c] = acc;
      }
    }
  }
  std::string backend_name() const override { return "cpu (test)"; }

  int runs = 0;
  std::vector<std::string> seen;  // every case run, in order

 protected:
  virtual std::int64_t k_end(std::int64_t k) const { return k; }
  virtual std::int64_t store_stride(const GemmProblem& p) const { return p.ldc; }
};

// Walks K in tiles of 16 and forgets the last partial one: right only when K % 16 == 0.
class DropsPartialKTile : public CpuSgemm {
  std::int64_t k_end(std::int64_t k) const override { return k / 16 * 16; }
};

// Stores C as if it were packed (row stride N instead of ldc).
class IgnoresLdc : public CpuSgemm {
  std::int64_t store_stride(const GemmProblem& p) const override { return p.shape.n; }
};

// Every launch fails, as after an illegal address.
class AlwaysFailsToLaunch : public GemmExecutor {
 public:
  void run(const GemmCase&, GemmOperands&) override {
    ++runs;
    throw LaunchError("cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)");
  }
  std::string backend_name() const override { return "broken"; }
  int runs = 0;
};

FuzzSettings settings(int cases, std::uint64_t seed = 1) {
  FuzzSettings s;
  s.cases = cases;
  s.seed = seed;
  return s;
}

TEST(PropertyRunner, CorrectExecutorPassesEveryCase) {
  CpuSgemm executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32, settings(100));
  EXPECT_EQ(report.verdict, FuzzVerdict::passed) << report.finding;
  EXPECT_EQ(report.cases_passed, 100);
  EXPECT_EQ(executor.runs, 100);
  EXPECT_FALSE(report.counterexample.has_value());
  EXPECT_EQ(report.finding, "");
  EXPECT_EQ(report.shrink_steps, 0);
}

TEST(PropertyRunner, DroppedPartialKTileIsFoundAndShrunkToOneElement) {
  DropsPartialKTile executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32, settings(100));
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
  ASSERT_TRUE(report.counterexample.has_value());
  const GemmShape& s = report.counterexample->problem.shape;
  SCOPED_TRACE(report.counterexample->to_string());
  EXPECT_EQ(s.m, 1);
  EXPECT_EQ(s.n, 1);
  EXPECT_GE(s.k % 16, 1) << "the bug needs a partial K tile";
  EXPECT_LE(s.k, 15) << "no whole K tile is needed to show it";
  EXPECT_THAT(report.finding, StartsWith("wrong element at C[0][0]: got 0, expected "));
}

TEST(PropertyRunner, BugAfterAWholeKTileIsShrunkToOneWholeTilePlusARemainder) {
  // Drops the partial K tile only after at least one whole one: the first (tiny) cases pass, and
  // the failing case RapidCheck finds later has to be shrunk.
  class DropsPartialKTileAfterAWholeOne : public CpuSgemm {
    std::int64_t k_end(std::int64_t k) const override { return k > 16 ? k / 16 * 16 : k; }
  } executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32,
                                               settings(100, 9));
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
  ASSERT_TRUE(report.counterexample.has_value());
  const GemmShape& s = report.counterexample->problem.shape;
  SCOPED_TRACE(report.counterexample->to_string());
  EXPECT_GT(report.cases_passed, 0);
  EXPECT_GT(report.shrink_steps, 0);
  // M and N may stop at 2: B's values are drawn after A's, so a smaller M redraws B, and with
  // the data seed already at 0 the product that shows the bug can come out 0.
  EXPECT_LE(s.m, 2);
  EXPECT_LE(s.n, 2);
  EXPECT_GE(s.k, 17);
  EXPECT_LE(s.k, 31) << "one whole tile and a remainder are enough";
  EXPECT_THAT(report.finding, StartsWith("wrong element at C[0][0]"));
}

TEST(PropertyRunner, IgnoredLdcIsFoundWithAStridedMinimalCase) {
  IgnoresLdc executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32, settings(100));
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
  ASSERT_TRUE(report.counterexample.has_value());
  const GemmProblem& p = report.counterexample->problem;
  SCOPED_TRACE(report.counterexample->to_string());
  // Two rows and one padding column are the least that shows it: row 1 lands in row 0's padding.
  // Shrinking is local: a size drawn as q * 16 + r shrinks q and r downward, so it may stop at
  // 17 (q = 1, r = 1) rather than reach 2 (q = 0, r = 2); anything above one tile is not minimal.
  EXPECT_GE(p.shape.m, 2);
  EXPECT_LE(p.shape.m, 17);
  EXPECT_EQ(p.shape.n, 1);
  EXPECT_EQ(p.ldc, 2);
  EXPECT_THAT(report.finding, StartsWith("write outside C: padding at row 0 column 1"));
}

// 30 cases, the number `tiletune tune` runs per configuration, are enough to catch a kernel that
// ignores ldc, whatever the seed (see CaseGenerator.LeadingDimensionsAreWiderAtSmallSizesToo).
TEST(PropertyRunner, IgnoredLdcIsCaughtInEveryThirtyCaseRun) {
  int missed = 0;
  std::string seeds;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    IgnoresLdc executor;
    if (fuzz_configuration(executor, kTile16, Precision::fp32,
                           settings(30, seed)).verdict == FuzzVerdict::passed) {
      ++missed;
      seeds += " " + std::to_string(seed);
    }
  }
  EXPECT_EQ(missed, 0) << "the kernel ignoring ldc passed 30 cases with seeds" << seeds;
}

TEST(PropertyRunner, CounterexampleReplaysToTheSameFinding) {
  DropsPartialKTile executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32,
                                               settings(100, 7));
  ASSERT_TRUE(report.counterexample.has_value());

  const FuzzReport replay = run_single_case(executor, *report.counterexample, Precision::fp32);
  EXPECT_EQ(replay.verdict, FuzzVerdict::wrong_result);
  EXPECT_EQ(replay.finding, report.finding);
  ASSERT_TRUE(replay.counterexample.has_value());
  EXPECT_EQ(replay.counterexample->to_string(), report.counterexample->to_string());
  EXPECT_EQ(replay.cases_passed, 0);

  // The text form replays too (what `tiletune fuzz --case` takes).
  const GemmCase parsed = GemmCase::parse(report.counterexample->to_string());
  EXPECT_EQ(run_single_case(executor, parsed, Precision::fp32).finding, report.finding);
}

TEST(PropertyRunner, SameSeedGivesTheSameCounterexample) {
  DropsPartialKTile first, second;
  const FuzzReport a = fuzz_configuration(first, kTile16, Precision::fp32, settings(100, 42));
  const FuzzReport b = fuzz_configuration(second, kTile16, Precision::fp32, settings(100, 42));
  ASSERT_TRUE(a.counterexample.has_value());
  ASSERT_TRUE(b.counterexample.has_value());
  EXPECT_EQ(a.counterexample->to_string(), b.counterexample->to_string());
  EXPECT_EQ(a.finding, b.finding);
  EXPECT_EQ(a.cases_passed, b.cases_passed);
  EXPECT_EQ(first.runs, second.runs);
}

TEST(PropertyRunner, WithoutShrinkingTheFirstFailingCaseIsReported) {
  DropsPartialKTile executor;
  FuzzSettings s = settings(100, 3);
  s.shrink = false;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32, s);
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result);
  ASSERT_TRUE(report.counterexample.has_value());
  EXPECT_EQ(report.shrink_steps, 0);
  ASSERT_GT(executor.seen.size(), std::size_t(report.cases_passed));
  EXPECT_EQ(report.counterexample->to_string(), executor.seen[std::size_t(report.cases_passed)])
      << "the first failing case";
  // RapidCheck evaluates the failing case once more to describe it; no other case runs.
  for (std::size_t i = std::size_t(report.cases_passed); i < executor.seen.size(); ++i) {
    EXPECT_EQ(executor.seen[i], report.counterexample->to_string());
  }
  EXPECT_NE(report.counterexample->problem.shape.k % 16, 0);
  EXPECT_THAT(report.finding, HasSubstr("wrong element"));
}

TEST(PropertyRunner, LaunchErrorIsItsOwnVerdictAndStopsLaunching) {
  AlwaysFailsToLaunch executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32, settings(100));
  EXPECT_EQ(report.verdict, FuzzVerdict::launch_error);
  EXPECT_THAT(report.finding, StartsWith("launch failed: "));
  EXPECT_THAT(report.finding, HasSubstr("CUDA_ERROR_ILLEGAL_ADDRESS"));
  ASSERT_TRUE(report.counterexample.has_value());
  EXPECT_EQ(report.cases_passed, 0);
  EXPECT_EQ(executor.runs, 1) << "after a launch error the backend is not launched again";
}

TEST(PropertyRunner, RunSingleCaseJudgesOneCase) {
  const GemmCase c = GemmCase::parse("5x7x19 lda=21 ldb=7 ldc=9 inputs=small_integers data=4 schedule=0");
  {
    CpuSgemm correct;
    const FuzzReport report = run_single_case(correct, c, Precision::fp32);
    EXPECT_EQ(report.verdict, FuzzVerdict::passed) << report.finding;
    EXPECT_EQ(report.cases_passed, 1);
    EXPECT_EQ(correct.runs, 1);
    EXPECT_FALSE(report.counterexample.has_value());
  }
  {
    DropsPartialKTile buggy;  // 19 = 16 + 3: the last 3 products are missing everywhere
    const FuzzReport report = run_single_case(buggy, c, Precision::fp32);
    EXPECT_EQ(report.verdict, FuzzVerdict::wrong_result);
    EXPECT_EQ(report.cases_passed, 0);
    EXPECT_THAT(report.finding, StartsWith("wrong element at C[0][0]"));
    ASSERT_TRUE(report.counterexample.has_value());
    EXPECT_EQ(report.counterexample->to_string(), c.to_string());
  }
  {
    IgnoresLdc buggy;
    EXPECT_THAT(run_single_case(buggy, c, Precision::fp32).finding,
                StartsWith("write outside C: padding at row 0"));
  }
  {
    AlwaysFailsToLaunch broken;
    const FuzzReport report = run_single_case(broken, c, Precision::fp32);
    EXPECT_EQ(report.verdict, FuzzVerdict::launch_error);
    EXPECT_THAT(report.finding, StartsWith("launch failed: "));
  }
}

TEST(PropertyRunner, BugOnlyInLongCasesIsStillFound) {
  // Wrong only when K > 200: only the occasional long-K case (or none at small sizes) shows it.
  class WrongBeyondK200 : public CpuSgemm {
    std::int64_t k_end(std::int64_t k) const override { return k > 200 ? k - 1 : k; }
  } executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32,
                                               settings(300, 5));
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result);
  ASSERT_TRUE(report.counterexample.has_value());
  EXPECT_GT(report.counterexample->problem.shape.k, 200);
  EXPECT_EQ(report.counterexample->problem.shape.m, 1);
  EXPECT_EQ(report.counterexample->problem.shape.n, 1);
}

// --- cases that cannot be run, requirements, too few cases ------------------------------------

// Throws what the template's launch geometry throws for a grid of zero blocks (grid N / 16): a
// case the configuration accepts but cannot run.
class ZeroGridBelowTile : public CpuSgemm {
 public:
  void run(const GemmCase& gemm_case, GemmOperands& operands) override {
    if (gemm_case.problem.shape.n < 16) {
      ++refused;
      throw TemplateError("floor: grid x for TILE=16 at " + gemm_case.problem.shape.to_string() +
                          ": 'N / 16' is 0, outside [1, 4294967295]");
    }
    CpuSgemm::run(gemm_case, operands);
  }
  int refused = 0;
};

TEST(PropertyRunner, ACaseThatCannotRunFailsWithItsReasonAndAMinimalCase) {
  ZeroGridBelowTile executor;
  const FuzzReport report = fuzz_configuration(executor, kTile16, Precision::fp32, settings(50));
  EXPECT_EQ(report.verdict, FuzzVerdict::cannot_run) << report.finding;
  EXPECT_THAT(report.finding, StartsWith("cannot run this case: floor: grid x"));
  ASSERT_TRUE(report.counterexample.has_value());
  EXPECT_EQ(report.counterexample->problem.shape.n, 1) << "shrunk to the smallest N that fails";
  EXPECT_EQ(report.counterexample->problem.shape.m, 1);
  EXPECT_EQ(report.counterexample->problem.shape.k, 1);
  EXPECT_GT(executor.refused, 0);
}

TEST(PropertyRunner, AnythingThrownButALaunchErrorFailsARunOfOneCase) {
  class ThrowsAnInt : public CpuSgemm {
    void run(const GemmCase&, GemmOperands&) override { throw 7; }
  } executor;
  const GemmCase c = GemmCase::parse("5x7x19 lda=21 ldb=7 ldc=9 inputs=small_integers data=4 schedule=0");
  const FuzzReport report = run_single_case(executor, c, Precision::fp32);
  EXPECT_EQ(report.verdict, FuzzVerdict::cannot_run);
  EXPECT_THAT(report.finding, StartsWith("cannot run this case: "));
  EXPECT_EQ(report.cases_passed, 0);
  ZeroGridBelowTile floor;
  EXPECT_EQ(run_single_case(floor, c, Precision::fp32).verdict, FuzzVerdict::cannot_run);
}

TEST(PropertyRunner, WhatTheBackendCannotRunIsThrownForTheCallerToSkip) {
  class NoSharedMemoryHere : public CpuSgemm {
    void run(const GemmCase&, GemmOperands&) override {
      throw UnsupportedOnBackend("not supported on the CPU backend: 300000 bytes of dynamic shared memory");
    }
  } executor;
  EXPECT_THROW(fuzz_configuration(executor, kTile16, Precision::fp32, settings(20)),
               UnsupportedOnBackend);
  const GemmCase c = GemmCase::parse("5x7x19");
  EXPECT_THROW(run_single_case(executor, c, Precision::fp32), UnsupportedOnBackend);
}

// A template whose kernel has no row mask and loads A four floats at a time.
KernelTemplate aligned_template(const std::string& requirements) {
  return parse_template("// tiletune: entry k\n// tiletune: param TILE 16\n" + requirements +
                            "// tiletune: block TILE\n// tiletune: grid ceil_div(N, TILE)\n",
                        "aligned.cu");
}

// Refuses (as the real executors do) any case the requirements exclude.
class ChecksRequirements : public CpuSgemm {
 public:
  explicit ChecksRequirements(KernelTemplate tmpl) : tmpl_(std::move(tmpl)) {}
  void run(const GemmCase& gemm_case, GemmOperands& operands) override {
    tmpl_.check_requirements(kTile16, gemm_case.problem);
    CpuSgemm::run(gemm_case, operands);
  }
 private:
  KernelTemplate tmpl_;
};

TEST(PropertyRunner, EveryCaseMeetsTheRequirementsAndAllCasesRun) {
  const KernelTemplate tmpl = aligned_template(
      "// tiletune: require M % 8 == 0 && lda % 4 == 0\n// tiletune: require ldc % 4 == 0\n");
  ChecksRequirements executor(tmpl);
  const FuzzReport report =
      fuzz_configuration(executor, kTile16, Precision::fp32, settings(100),
                         CaseRequirements(tmpl, kTile16));
  EXPECT_EQ(report.verdict, FuzzVerdict::passed) << report.finding;
  EXPECT_EQ(report.cases_passed, 100);
  EXPECT_EQ(executor.runs, 100);
}

TEST(PropertyRunner, AShrunkCaseMeetsTheRequirements) {
  const KernelTemplate tmpl = aligned_template("// tiletune: require M % 8 == 0 && lda % 4 == 0\n");
  class Checked : public ChecksRequirements {
   public:
    using ChecksRequirements::ChecksRequirements;
    std::int64_t k_end(std::int64_t k) const override { return k / 16 * 16; }  // drops K's last partial tile
  } executor(tmpl);
  const FuzzReport report =
      fuzz_configuration(executor, kTile16, Precision::fp32, settings(100),
                         CaseRequirements(tmpl, kTile16));
  ASSERT_EQ(report.verdict, FuzzVerdict::wrong_result) << report.finding;
  ASSERT_TRUE(report.counterexample.has_value());
  const GemmProblem& minimal = report.counterexample->problem;
  EXPECT_TRUE(tmpl.satisfies_requirements(kTile16, minimal)) << minimal.to_string();
  EXPECT_EQ(minimal.shape.m, 8) << minimal.to_string();
  EXPECT_NE(minimal.shape.k % 16, 0) << minimal.to_string();
}

TEST(PropertyRunner, RequirementsNoCaseMeetsAreAnErrorNamingThem) {
  for (const std::string requirement : {"lda < 0", "M % 2 == 0 && M % 2 == 1"}) {
    const KernelTemplate tmpl = aligned_template("// tiletune: require " + requirement + "\n");
    CpuSgemm executor;
    const FuzzReport report =
        fuzz_configuration(executor, kTile16, Precision::fp32, settings(20),
                           CaseRequirements(tmpl, kTile16));
    EXPECT_EQ(report.verdict, FuzzVerdict::too_few_cases);
    EXPECT_THAT(report.finding, HasSubstr("no case meets requirement '" + requirement + "'"));
    EXPECT_EQ(report.cases_passed, 0);
    EXPECT_EQ(executor.runs, 0);
  }
}

TEST(PropertyRunner, FewerCasesThanAskedIsNeverAPass) {
  FuzzSettings asked = settings(100);
  FuzzReport report;
  settle_verdict(rc::detail::SuccessResult{40, {}}, asked, report);
  EXPECT_EQ(report.verdict, FuzzVerdict::too_few_cases);
  EXPECT_EQ(report.cases_passed, 40);
  EXPECT_THAT(report.finding, HasSubstr("only 40 of 100 cases ran"));

  report = FuzzReport{};
  settle_verdict(rc::detail::GaveUpResult{0, "Too many cases discarded"}, asked, report);
  EXPECT_EQ(report.verdict, FuzzVerdict::too_few_cases);
  EXPECT_THAT(report.finding, HasSubstr("only 0 of 100 cases ran: Too many cases discarded"));

  report = FuzzReport{};
  settle_verdict(rc::detail::Error("reproduce string mismatch"), asked, report);
  EXPECT_NE(report.verdict, FuzzVerdict::passed);
  EXPECT_THAT(report.finding, HasSubstr("reproduce string mismatch"));

  report = FuzzReport{};  // a property that failed before any case was judged (its generator)
  rc::detail::FailureResult failure;
  failure.numSuccess = 3;
  failure.description = "generator threw";
  settle_verdict(failure, asked, report);
  EXPECT_EQ(report.verdict, FuzzVerdict::cannot_run);
  EXPECT_THAT(report.finding, HasSubstr("generator threw"));

  report = FuzzReport{};
  settle_verdict(rc::detail::SuccessResult{100, {}}, asked, report);
  EXPECT_EQ(report.verdict, FuzzVerdict::passed);
  EXPECT_EQ(report.cases_passed, 100);
}


// --- references kept for the next configuration that draws the same cases --------------------

TEST(PropertyRunner, ConfigurationsThatDrawTheSameCasesComputeEachReferenceOnce) {
  const Configuration swizzled{{{"TILE", 16}, {"SWIZZLE", 1}}};  // the same tile sizes as kTile16
  ReferenceCache references;
  CpuSgemm first, second;
  const FuzzReport report =
      fuzz_configuration(first, kTile16, Precision::fp32, settings(30), {}, &references);
  EXPECT_EQ(report.verdict, FuzzVerdict::passed) << report.finding;
  EXPECT_EQ(references.hits(), 0);
  EXPECT_EQ(references.misses(), 30);
  const FuzzReport twin =
      fuzz_configuration(second, swizzled, Precision::fp32, settings(30), {}, &references);
  EXPECT_EQ(twin.verdict, FuzzVerdict::passed) << twin.finding;
  EXPECT_EQ(second.seen, first.seen) << "the same cases";
  EXPECT_EQ(references.hits(), 30) << "each reference computed once";

  // A kept reference judges as one computed afresh: a bug is still found, on the same case.
  DropsPartialKTile buggy_alone, buggy_kept;
  const FuzzReport alone = fuzz_configuration(buggy_alone, kTile16, Precision::fp32, settings(30));
  const FuzzReport kept =
      fuzz_configuration(buggy_kept, kTile16, Precision::fp32, settings(30), {}, &references);
  ASSERT_EQ(alone.verdict, FuzzVerdict::wrong_result);
  EXPECT_EQ(kept.verdict, FuzzVerdict::wrong_result);
  EXPECT_EQ(kept.finding, alone.finding);
  ASSERT_TRUE(kept.counterexample.has_value());
  EXPECT_EQ(kept.counterexample->to_string(), alone.counterexample->to_string());
}

TEST(PropertyRunner, KeptReferencesAreTheLastTwoConfigurationsWithinTheCap) {
  CpuSgemm executor;
  const Configuration tile8{{{"TILE", 8}}}, tile32{{{"TILE", 32}}};
  // The misses of kTile16's cases after `between` (a few, tiny ones, every configuration draws).
  const auto misses_after = [&](const std::vector<Configuration>& between) {
    ReferenceCache references;
    fuzz_configuration(executor, kTile16, Precision::fp32, settings(10), {}, &references);
    for (const Configuration& config : between) {
      fuzz_configuration(executor, config, Precision::fp32, settings(10), {}, &references);
    }
    const int misses = references.misses();
    fuzz_configuration(executor, kTile16, Precision::fp32, settings(10), {}, &references);
    return references.misses() - misses;
  };
  EXPECT_EQ(misses_after({tile8}), 0) << "kept over one configuration";
  EXPECT_GT(misses_after({tile8, tile32}), 5) << "forgotten after two";

  ReferenceCache none(0);  // a cap that keeps nothing
  fuzz_configuration(executor, kTile16, Precision::fp32, settings(10), {}, &none);
  fuzz_configuration(executor, kTile16, Precision::fp32, settings(10), {}, &none);
  EXPECT_EQ(none.hits(), 0);
  EXPECT_EQ(none.misses(), 20);
}

}  // namespace
}  // namespace tiletune
