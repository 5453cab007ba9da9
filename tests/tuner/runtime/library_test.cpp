// The runtime library through its public API only (<tiletune/tiletune.h>), on a real H100 tune
// (tests/fixtures/tuned/h100_kernels_src.sql): selection as the plan says it, the CPU backend's
// results against a reference computed here, argument checks, defaults, misses, bundles, and the
// GPU backend where there is a GPU.
#include <gtest/gtest.h>
#include <tiletune/tiletune.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "db/result_store.h"
#include "tests/support/gpu_test.h"
#include "tests/support/test_folder.h"
#include "tests/support/tuned_fixture.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using testing_support::fresh_test_folder;
using testing_support::load_tuned_fixture;

constexpr const char* kH100 = testing_support::kTunedFixtureGpu;

struct Operands {
  std::vector<float> a, b, c;
};

Operands random_operands(const Problem& p, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  // Each operand's stored rows: op(A) is M x K, A stored K x M when transposed; likewise B.
  // A batch's entries lie their strides apart.
  const std::int64_t a_rows = p.op_a == Op::n ? p.M : p.K, b_rows = p.op_b == Op::n ? p.K : p.N;
  Operands o{std::vector<float>((p.batch - 1) * p.stride_a + a_rows * p.lda),
             std::vector<float>((p.batch - 1) * p.stride_b + b_rows * p.ldb),
             // C poisoned: every element must be written
             std::vector<float>((p.batch - 1) * p.stride_c + p.M * p.ldc, std::nanf(""))};
  for (float& x : o.a) x = value(generator);
  for (float& x : o.b) x = value(generator);
  return o;
}

// Every element of C against a double-precision dot product, within the tf32 bound (inputs
// rounded to TF32: 2t + t^2 + gamma_K(2u)(1 + t)^2 of sum |a||b|, t = 2^-11).
::testing::AssertionResult within_tf32_bound(const Problem& p, const float* a, const float* b,
                                             const float* c) {
  const double t = std::ldexp(1.0, -11), u = std::ldexp(1.0, -24);
  const double gamma = p.K * 2 * u / (1 - p.K * 2 * u);
  const double bound = 2 * t + t * t + gamma * (1 + t) * (1 + t);
  for (std::int64_t i = 0; i < p.M; ++i) {
    for (std::int64_t j = 0; j < p.N; ++j) {
      double sum = 0, magnitude = 0;
      for (std::int64_t k = 0; k < p.K; ++k) {
        const double product = double(a[p.op_a == Op::n ? i * p.lda + k : k * p.lda + i]) *
                               b[p.op_b == Op::n ? k * p.ldb + j : j * p.ldb + k];
        sum += product;
        magnitude += std::fabs(product);
      }
      if (!(std::fabs(c[i * p.ldc + j] - sum) <= bound * magnitude)) {
        return ::testing::AssertionFailure() << p.to_string() << ": C[" << i << "][" << j << "] = "
                                             << c[i * p.ldc + j] << ", reference " << sum;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Every element of op(A) op(B) against a double-precision dot product, within gamma_K * sum |a||b|
// (the bound of any summation order, u = 2^-24); elements beyond N in each row of C must be left
// alone.
::testing::AssertionResult matches_reference(const Problem& p, const Operands& o,
                                             const std::vector<float>& c_before) {
  const double u = std::ldexp(1.0, -24), gamma = p.K * u / (1 - p.K * u);
  for (std::int64_t e = 0; e < p.batch; ++e) {
    const auto a = [&](std::int64_t i, std::int64_t k) {
      return double(o.a[e * p.stride_a + (p.op_a == Op::n ? i * p.lda + k : k * p.lda + i)]);
    };
    const auto b = [&](std::int64_t k, std::int64_t j) {
      return double(o.b[e * p.stride_b + (p.op_b == Op::n ? k * p.ldb + j : j * p.ldb + k)]);
    };
    for (std::int64_t i = 0; i < p.M; ++i) {
      for (std::int64_t j = 0; j < p.ldc; ++j) {
        const std::int64_t at = e * p.stride_c + i * p.ldc + j;
        const float got = o.c[at];
        if (j >= p.N) {
          const float before = c_before[at];
          if (!(std::isnan(got) && std::isnan(before)) && got != before) {
            return ::testing::AssertionFailure() << "C[" << i << "][" << j << "] beyond N was written";
          }
          continue;
        }
        double sum = 0, magnitude = 0;
        for (std::int64_t k = 0; k < p.K; ++k) {
          sum += a(i, k) * b(k, j);
          magnitude += std::fabs(a(i, k) * b(k, j));
        }
        if (!(std::fabs(got - sum) <= gamma * magnitude + 1e-30)) {
          return ::testing::AssertionFailure() << p.to_string() << ": entry " << e << " C[" << i << "][" << j
                                               << "] = " << got << ", expected " << sum << " within "
                                               << gamma * magnitude;
        }
      }
    }
    // The gap before the next entry's C, if its stride leaves one, stays as it was.
    for (std::int64_t at = e * p.stride_c + p.M * p.ldc; e + 1 < p.batch && at < (e + 1) * p.stride_c; ++at) {
      if (!(std::isnan(o.c[at]) && std::isnan(c_before[at])) && o.c[at] != c_before[at]) {
        return ::testing::AssertionFailure() << "C's element " << at << ", between entries, was written";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// A database at `path` holding one record of the shipped template `file` on `gpu` (one more where
// it exists): the configuration, timed at `shape` (`ms`) for the transposes and batch `kind`.
void record_one(const std::filesystem::path& path, const GpuRecord& gpu, const std::string& file,
                const std::string& config, const GemmShape& shape, double ms = 1, TunedFor kind = {}) {
  ResultStore store(path);
  const std::int64_t id = store.register_gpu(gpu);
  const KernelTemplate tmpl = load_template(std::string(TILETUNE_SOURCE_DIR) + "/kernels_src/" + file);
  store.register_template({tmpl.name, tmpl.source_hash, tmpl.path.string(), tmpl.source});
  ResultRecord result;
  result.template_name = tmpl.name;
  result.template_hash = tmpl.source_hash;
  result.config = config;
  result.shape = shape;
  result.op = kind.op;
  result.batch = kind.batch;
  result.median_ms = result.min_ms = result.max_ms = ms;
  result.runs = 1;
  store.record_result(id, gpu, result);
}

class LibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fresh_test_folder("library");
    database_ = load_tuned_fixture(folder_ / "tuned.db");
  }
  Options cpu() const {
    Options options;
    options.backend = Backend::cpu;
    return options;
  }
  ::testing::AssertionResult runs_correctly(const Gemm& gemm, const Problem& p, std::uint32_t seed) {
    Operands o = random_operands(p, seed);
    const std::vector<float> before = o.c;
    gemm.run(p, o.a.data(), o.b.data(), o.c.data());
    return matches_reference(p, o, before);
  }

  std::filesystem::path folder_, database_;
};

TEST_F(LibraryTest, ListsTheRecordedTemplatesAndSaysWhereTheyComeFrom) {
  const Library library = Library::open(database_.string(), cpu());
  EXPECT_EQ(library.templates(), (std::vector<std::string>{"naive", "tiled", "warp_tiled"}));
  EXPECT_EQ(library.source(), "database " + database_.string());
  EXPECT_STREQ(version(), "0.1.0");
}

TEST_F(LibraryTest, AnExactRecordIsTheDatabasesBestForThatShape) {
  const Library library = Library::open(database_.string(), cpu());
  const ResultStore store(database_, ResultStore::Access::read_only);
  for (const GemmShape shape : {GemmShape{1024, 1024, 1024}, GemmShape{1000, 1000, 1000}, GemmShape{96, 2048, 512}}) {
    for (const std::string name : {"naive", "tiled", "warp_tiled"}) {
      const std::optional<ResultRecord> best = store.best(kH100, shape, name);
      ASSERT_TRUE(best);
      const Plan plan = library.gemm(name).plan(Problem::packed(shape.m, shape.n, shape.k));
      EXPECT_EQ(plan.config, best->config) << name << " " << shape.to_string();
      EXPECT_TRUE(plan.exact);
      EXPECT_EQ(plan.gpu, kH100);
      EXPECT_EQ(plan.gpu_match, GpuMatch::this_gpu);
      EXPECT_DOUBLE_EQ(plan.expected_ms, best->median_ms);
      EXPECT_GT(plan.fuzz_cases, 0);
      EXPECT_EQ(plan.recorded_M, shape.m);
      EXPECT_EQ(plan.backend, Backend::cpu);
    }
  }
}

TEST_F(LibraryTest, AnotherShapeTakesTheNearestRecordedOneAndScalesTheExpectedTime) {
  const Library library = Library::open(database_.string(), cpu());
  const Plan plan = library.gemm("warp_tiled").plan(Problem::packed(1100, 1050, 990));
  EXPECT_FALSE(plan.exact);
  EXPECT_EQ(plan.recorded_M, 1024);  // nearer than 1000^3 in log space? both near: the rule decides
  const Plan again = library.gemm("warp_tiled").plan(Problem::packed(1100, 1050, 990));
  EXPECT_EQ(plan.config, again.config);
  EXPECT_NE(plan.why.find("nearest recorded shape"), std::string::npos) << plan.why;
  const double flops = 2.0 * 1100 * 1050 * 990;
  const double recorded = 2.0 * plan.recorded_M * plan.recorded_N * plan.recorded_K;
  EXPECT_GT(plan.expected_ms, 0);
  EXPECT_NEAR(plan.expected_ms * recorded / flops,
              library.gemm("warp_tiled").plan(Problem::packed(plan.recorded_M, plan.recorded_N, plan.recorded_K)).expected_ms,
              1e-12);
}

TEST_F(LibraryTest, TheCpuBackendComputesEveryProblemCorrectly) {
  const Library library = Library::open(database_.string(), cpu());
  const std::vector<Problem> problems = {
      Problem::packed(96, 2048, 512),   Problem::packed(1, 1, 1),      Problem::packed(33, 17, 65),
      Problem{77, 65, 300, 301, 70, 66}, Problem{5, 130, 7, 9, 131, 200}, Problem::packed(128, 64, 16)};
  std::uint32_t seed = 1;
  for (const std::string name : {"naive", "tiled", "warp_tiled"}) {
    const Gemm gemm = library.gemm(name);
    for (const Problem& p : problems) EXPECT_TRUE(runs_correctly(gemm, p, seed++)) << name;
  }
}

TEST_F(LibraryTest, ATemplateWithTensorMapsRunsOnTheCpuBackendAtAnyLeadingDimension) {
  // A record of tf32_wgmma_tma (two tensor maps passed after the contract's parameters): the CPU
  // backend builds them from the problem, copying an operand whose rows TMA cannot read in place
  // (copy_unaligned), and the results meet the tf32 bound.
  record_one(folder_ / "tma.db", {kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"},
             "tf32_wgmma_tma.cu", "BM=128,STAGES=3,GROUP=4,SPLIT_WAVES=0", {256, 256, 256});
  Options options = cpu();
  options.gpu_name = kH100;
  options.lowest_precision = Precision::tf32;
  const Library library = Library::open((folder_ / "tma.db").string(), options);
  const Gemm gemm = library.gemm("tf32_wgmma_tma");
  for (const Problem& p : {Problem::packed(200, 136, 72), Problem{70, 130, 300, 304, 132, 131},
                           Problem::packed(1, 4, 4), Problem{20, 20, 21, 21, 20, 20},
                           Problem{33, 150, 141, 143, 151, 150}}) {
    Operands o = random_operands(p, 21);
    const std::vector<float> a = o.a, b = o.b;
    gemm.run(p, o.a.data(), o.b.data(), o.c.data());
    EXPECT_EQ(o.a, a) << p.to_string() << ": A is read, never written (the copy is the launcher's)";
    EXPECT_EQ(o.b, b) << p.to_string();
    EXPECT_TRUE(within_tf32_bound(p, o.a.data(), o.b.data(), o.c.data()));
  }
  // A sub-matrix one float in: rows 16-byte aligned apart, but not where they start.
  const Problem view{16, 20, 24, 28, 20, 20};
  Operands o = random_operands(view, 5);
  gemm.run(view, o.a.data() + 1, o.b.data(), o.c.data());
  EXPECT_TRUE(within_tf32_bound(view, o.a.data() + 1, o.b.data(), o.c.data()));
}

TEST_F(LibraryTest, AConfigurationThatAddsIntoCClearsItFirst) {
  // SPLIT_K > 1 adds partial sums into C (zero_output): a poisoned C must not leak into the result.
  Options options = cpu();
  options.gpu_name = "a GPU nobody recorded";
  options.defaults["warp_tiled"] = "BM=32,BN=64,BK=16,TM=4,TN=4,STAGES=2,SWIZZLE=0,SPLIT_K=4";
  const Library library = Library::open(database_.string(), options);
  const Gemm gemm = library.gemm("warp_tiled");
  const Problem p = Problem::packed(40, 70, 333);
  const Plan plan = gemm.plan(p);
  EXPECT_EQ(plan.gpu_match, GpuMatch::none);
  EXPECT_TRUE(plan.zero_output);
  EXPECT_EQ(plan.config, options.defaults["warp_tiled"]);
  EXPECT_TRUE(runs_correctly(gemm, p, 7));
}

TEST_F(LibraryTest, AStreamKConfigurationIsSizedForTheBackendsMultiprocessorCount) {
  // On the CPU the library's SM_COUNT is 1 (drawn_sm_count(0)): waves of 2 blocks for STREAM_K 2, and
  // 3 x 3 tiles of 128 x 128 make three whole waves and a partial one; the last two are shared.
  const std::string config = "BM=128,BN=128,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1,STREAM_K=2";
  record_one(folder_ / "stream_k.db", {kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"},
             "warp_tiled.cu", config, {300, 300, 77});
  Options options = cpu();
  options.gpu_name = kH100;
  const Library library = Library::open((folder_ / "stream_k.db").string(), options);
  const Gemm gemm = library.gemm("warp_tiled");
  const Problem p = Problem::packed(300, 300, 77);
  const Plan plan = gemm.plan(p);
  EXPECT_EQ(plan.config, config);
  EXPECT_EQ(plan.grid, (std::array<std::uint32_t, 3>{2, 4, 1}));
  EXPECT_TRUE(plan.zero_output);
  EXPECT_TRUE(runs_correctly(gemm, p, 7));
}

TEST_F(LibraryTest, WithoutARecordOrADefaultAProblemIsNoConfiguration) {
  Options options = cpu();
  options.gpu_name = "a GPU nobody recorded";
  const Library library = Library::open(database_.string(), options);
  try {
    library.gemm("tiled").plan(Problem::packed(64, 64, 64));
    FAIL() << "expected NoConfiguration";
  } catch (const NoConfiguration& e) {
    EXPECT_NE(std::string(e.what()).find("a GPU nobody recorded"), std::string::npos) << e.what();
  }
}

TEST_F(LibraryTest, ADefaultThatIsNotAConfigurationIsRefusedInOneLine) {
  Options options = cpu();
  options.gpu_name = "a GPU nobody recorded";
  options.defaults["tiled"] = "TILE=17";
  const Library library = Library::open(database_.string(), options);
  try {
    library.gemm("tiled").plan(Problem::packed(64, 64, 64));
    FAIL() << "expected NoConfiguration";
  } catch (const NoConfiguration& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TILE"), std::string::npos) << e.what();
  }
}

TEST_F(LibraryTest, BadProblemsAreInvalidProblemWithTheirCause) {
  const Library library = Library::open(database_.string(), cpu());
  const Gemm gemm = library.gemm("tiled");
  std::vector<float> a(100), b(100), c(100);
  const auto cause = [&](const Problem& p, const float* A, const float* B, float* C) -> std::string {
    try {
      gemm.run(p, A, B, C);
    } catch (const InvalidProblem& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(cause({0, 4, 4, 4, 4, 4}, a.data(), b.data(), c.data()).find("M=0 is not in [1, "), std::string::npos);
  EXPECT_NE(cause({4, 4, 8, 4, 4, 4}, a.data(), b.data(), c.data()).find("lda=4 is not in [8, "), std::string::npos);
  EXPECT_NE(cause({4, 8, 4, 4, 4, 8}, a.data(), b.data(), c.data()).find("ldb=4 is not in [8, "), std::string::npos);
  EXPECT_NE(cause({4, 8, 4, 4, 8, 7}, a.data(), b.data(), c.data()).find("ldc=7 is not in [8, "), std::string::npos);
  EXPECT_NE(cause({4, 4, 4, 4, 4, 4}, a.data(), nullptr, c.data()).find("B is a null pointer"), std::string::npos);
  EXPECT_NE(cause({4, 4, 1LL << 31, 1LL << 31, 4, 4}, a.data(), b.data(), c.data()).find("K=2147483648 is not in [1, 2147483647]"),
            std::string::npos);
  Problem transposed{4, 8, 4, 4, 8, 8};  // A stored K x M: lda must hold M
  transposed.op_a = Op::t;
  transposed.M = 6;
  EXPECT_NE(cause(transposed, a.data(), b.data(), c.data()).find("lda=4 is not in [6, "), std::string::npos);
  Problem batch = Problem::packed(4, 4, 4);
  batch.batch = 0;
  EXPECT_NE(cause(batch, a.data(), b.data(), c.data()).find("batch=0"), std::string::npos);
  EXPECT_EQ(cause({4, 4, 4, 4, 4, 4}, a.data(), b.data(), c.data()), "accepted");
}

TEST_F(LibraryTest, AnUnknownTemplateOrPathIsOneLineNamingIt) {
  const Library library = Library::open(database_.string(), cpu());
  try {
    library.gemm("warp_tiles");
    FAIL();
  } catch (const NoConfiguration& e) {
    EXPECT_NE(std::string(e.what()).find("no template named warp_tiles (recorded: naive, tiled, warp_tiled)"),
              std::string::npos) << e.what();
  }
  try {
    Library::open((folder_ / "missing.db").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.db: no such tiletune database or bundle"), std::string::npos);
  }
  std::ofstream(folder_ / "not-a.db") << "hello";
  EXPECT_THROW(Library::open((folder_ / "not-a.db").string()), Error);
  try {
    Library::open("");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "an empty path names no tiletune database or bundle");
  }
}

TEST_F(LibraryTest, TheSameRecordsAndProblemAlwaysGiveTheSamePlan) {
  const Library first = Library::open(database_.string(), cpu());
  const Library second = Library::open(database_.string(), cpu());
  std::mt19937 generator(3);
  std::uniform_int_distribution<int> size(1, 3000);
  for (int i = 0; i < 200; ++i) {
    const std::int64_t m = size(generator), n = size(generator), k = size(generator);
    const Problem p{m, n, k, k + i % 3, n + i % 5, n};
    for (const std::string name : {"tiled", "warp_tiled"}) {
      const Plan a = first.gemm(name).plan(p), b = second.gemm(name).plan(p);
      EXPECT_EQ(a.config, b.config);
      EXPECT_EQ(a.why, b.why);
    }
  }
}

TEST_F(LibraryTest, ConcurrentFirstCallsOfOneProblemAllGetItRight) {
  const Library library = Library::open(database_.string(), cpu());
  const Gemm gemm = library.gemm("warp_tiled");
  const Problem p{61, 45, 129, 130, 47, 45};
  std::vector<std::thread> threads;
  std::vector<int> correct(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { correct[t] = bool(runs_correctly(gemm, p, 100 + t)); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(correct, std::vector<int>(8, 1));
}

TEST_F(LibraryTest, ProblemsWithoutAnExactRecordAreKeptForTuneMissed) {
  Options options = cpu();
  options.record_misses = (folder_ / "misses.db").string();
  {
    const Library library = Library::open(database_.string(), options);
    const Gemm gemm = library.gemm("warp_tiled");
    gemm.plan(Problem::packed(1000, 1000, 1000));       // exact: not a miss
    gemm.plan(Problem{500, 600, 700, 701, 600, 600});   // a miss
    gemm.plan(Problem{500, 600, 700, 701, 600, 600});   // the same problem: kept once
    gemm.plan(Problem::packed(2048, 16, 300));          // another miss
  }
  const ResultStore misses(folder_ / "misses.db", ResultStore::Access::read_only);
  const std::vector<MissedProblem> kept = misses.missed_problems(std::nullopt, std::nullopt);
  ASSERT_EQ(kept.size(), 2u);
  for (const MissedProblem& miss : kept) {
    EXPECT_EQ(miss.gpu_name, kH100);
    EXPECT_EQ(miss.template_name, "warp_tiled");
    EXPECT_EQ(miss.count, 1);
  }
  std::vector<std::string> problems;
  for (const MissedProblem& miss : kept) problems.push_back(miss.problem.to_string());
  std::sort(problems.begin(), problems.end());
  EXPECT_EQ(problems, (std::vector<std::string>{"2048x16x300 lda=300 ldb=16 ldc=16",
                                                 "500x600x700 lda=701 ldb=600 ldc=600"}));
}

// The first-call trial on the H200 selection fixture (13 shapes: the model predicts), on the CPU
// backend: the model's 3 fastest of tiled at a shape nobody tuned, each timed; the plan serves the
// fastest measured, computes correctly, and the times are kept in the miss log, from which the
// next library serves the same winner without timing again.
TEST_F(LibraryTest, AFirstCallTrialServesTheFastestMeasuredAndTheNextProcessStartsFromIt) {
  const std::filesystem::path suite = testing_support::load_selection_fixture("suite", folder_ / "suite.db");
  Options options = cpu();
  options.record_misses = (folder_ / "misses.db").string();
  const Problem problem = Problem::packed(100, 90, 80);
  const Plan without = Library::open(suite.string(), options).gemm("tiled").plan(problem);
  EXPECT_EQ(without.trial_candidates, 0);
  EXPECT_EQ(without.why.find("trial"), std::string::npos) << without.why;

  options.trial_candidates = 3;
  Plan first;
  {
    const Library library = Library::open(suite.string(), options);
    first = library.gemm("tiled").plan(problem);
    EXPECT_EQ(first.trial_candidates, 3) << first.why;
    EXPECT_NE(first.why.find("; the first-call trial timed the model's 3 fastest: [" + first.config + "] fastest, "),
              std::string::npos) << first.why;
    EXPECT_GT(first.expected_ms, 0);
    EXPECT_TRUE(runs_correctly(library.gemm("tiled"), problem, 5));
  }
  const ResultStore misses(folder_ / "misses.db", ResultStore::Access::read_only);
  std::vector<std::string> timed;
  double fastest = 1e300;
  std::string fastest_config;
  for (const TraceRecord& step : misses.search_traces()) {
    if (step.strategy != "trial") continue;
    EXPECT_EQ(step.gpu_name, "CPU backend") << "a CPU time is never a GPU's";
    EXPECT_EQ(step.shape, (GemmShape{100, 90, 80}));
    timed.push_back(step.config);
    if (step.median_ms < fastest) fastest = step.median_ms, fastest_config = step.config;
  }
  ASSERT_EQ(timed.size(), 3u);
  EXPECT_EQ(timed.front(), without.config) << "the model's own choice is timed first";
  EXPECT_EQ(fastest_config, first.config);
  EXPECT_DOUBLE_EQ(fastest, first.expected_ms);

  const Plan next = Library::open(suite.string(), options).gemm("tiled").plan(problem);
  EXPECT_EQ(next.config, first.config);
  EXPECT_EQ(next.trial_candidates, 3);
  EXPECT_NE(next.why.find("; an earlier first-call trial on CPU backend timed 3 candidates at 100x90x80: ["),
            std::string::npos) << next.why;
  int rows = 0;
  for (const TraceRecord& step : ResultStore(folder_ / "misses.db", ResultStore::Access::read_only).search_traces()) {
    rows += step.strategy == "trial";
  }
  EXPECT_EQ(rows, 3) << "nothing timed again";
}

TEST_F(LibraryTest, ABundleServesWhatItsDatabaseServes) {
  const std::filesystem::path bundle = folder_ / "bundle";
  const std::string export_command = std::string(TILETUNE_BINARY_DIR) + "/tools/tiletune export --db " +
                                     database_.string() + " --out " + bundle.string() + " > " +
                                     (folder_ / "export.log").string() + " 2>&1";
  if (std::system(export_command.c_str()) != 0) {
    std::ifstream log(folder_ / "export.log");
    std::stringstream text;
    text << log.rdbuf();
    if (text.str().find("NVRTC") != std::string::npos) GTEST_SKIP() << "no NVRTC: " << text.str();
    FAIL() << text.str();
  }
  const Library from_database = Library::open(database_.string(), cpu());
  const Library from_bundle = Library::open(bundle.string(), cpu());
  EXPECT_EQ(from_bundle.source(), "bundle " + bundle.string());
  EXPECT_EQ(from_bundle.templates(), from_database.templates());
  for (const Problem& p : {Problem::packed(1000, 1000, 1000), Problem::packed(96, 2048, 512),
                           Problem{100, 90, 80, 81, 90, 95}}) {
    const Plan a = from_database.gemm("warp_tiled").plan(p), b = from_bundle.gemm("warp_tiled").plan(p);
    EXPECT_EQ(a.config, b.config) << p.to_string();
    EXPECT_EQ(a.exact, b.exact);
    EXPECT_TRUE(runs_correctly(from_bundle.gemm("warp_tiled"), p, 11));
  }
}

// The GPU backend: device pointers, the caller's context; skipped without a GPU, saying why.
class LibraryGpuTest : public testing_support::GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    folder_ = fresh_test_folder("library-gpu");
    database_ = load_tuned_fixture(folder_ / "tuned.db");
  }
  ::testing::AssertionResult runs_correctly(const Gemm& gemm, const Problem& p, std::uint32_t seed) {
    Operands o = random_operands(p, seed);
    const std::vector<float> before = o.c;
    DeviceBuffer a = DeviceBuffer::from(o.a), b = DeviceBuffer::from(o.b), c = DeviceBuffer::from(o.c);
    gemm.run(p, reinterpret_cast<const float*>(a.get()), reinterpret_cast<const float*>(b.get()),
             reinterpret_cast<float*>(c.get()));
    check_cuda(cuda_driver().cuCtxSynchronize(), "cuCtxSynchronize");
    c.download_into(o.c);
    return matches_reference(p, o, before);
  }
  std::filesystem::path folder_, database_;
};

TEST_F(LibraryGpuTest, EveryTemplateComputesEveryProblemCorrectly) {
  const Library library = Library::open(database_.string());
  const std::vector<Problem> problems = {
      Problem::packed(1000, 1000, 1000), Problem::packed(96, 2048, 512), Problem::packed(1, 1, 1),
      Problem::packed(33, 17, 65), Problem{77, 65, 300, 301, 70, 66}, Problem{5, 130, 7, 9, 131, 200}};
  std::uint32_t seed = 1;
  for (const std::string name : {"naive", "tiled", "warp_tiled"}) {
    const Gemm gemm = library.gemm(name);
    for (const Problem& p : problems) {
      EXPECT_TRUE(runs_correctly(gemm, p, seed++)) << name << "\n" << gemm.plan(p).to_string();
    }
  }
  const Plan plan = library.gemm("warp_tiled").plan(Problem::packed(1000, 1000, 1000));
  std::printf("%s\n", plan.to_string().c_str());
  EXPECT_EQ(plan.backend, Backend::gpu);
  if (device_->properties().name == kH100) {
    EXPECT_TRUE(plan.exact);
  } else {
    EXPECT_NE(plan.gpu_match, GpuMatch::this_gpu) << "the fixture holds an H100 only";
  }
}

TEST_F(LibraryGpuTest, ATemplateWithTensorMapsRunsAtAnyLeadingDimensionOnManyStreams) {
  // tf32_wgmma_tma recorded for this GPU: odd leading dimensions and a sub-matrix one float in are
  // copied into aligned rows before the kernel (copy_unaligned), on each caller's stream, from
  // four threads at once; the operands are left as they were and C meets the tf32 bound.
  const DeviceProperties& here = device_->properties();
  if (here.arch() != "sm_90") GTEST_SKIP() << "tf32_wgmma_tma is sm_90a's; this GPU is " << here.arch();
  record_one(folder_ / "tma.db",
             {here.name, here.cc_major, here.cc_minor, here.sm_count, here.clock_khz,
              here.memory_bytes, here.driver_version, "13.0"},
             "tf32_wgmma_tma.cu", "BM=128,STAGES=4,GROUP=4,SPLIT_WAVES=0", {512, 512, 512});
  Options options;
  options.lowest_precision = Precision::tf32;
  const Library library = Library::open((folder_ / "tma.db").string(), options);
  const Gemm gemm = library.gemm("tf32_wgmma_tma");
  const std::vector<Problem> problems = {Problem::packed(300, 260, 130), Problem{301, 259, 133, 135, 261, 259},
                                         Problem{600, 520, 257, 257, 521, 530}, Problem{17, 33, 65, 66, 33, 40}};
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      device_->make_current();
      CUstream stream = nullptr;
      check_cuda(cuda_driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      for (int round = 0; round < 3; ++round) {
        for (const Problem& p : problems) {
          // Every other round A is a view one float into its buffer: rows aligned apart, not where
          // they start.
          const std::size_t in = round % 2;
          Operands o = random_operands(p, 1000 * t + 10 * round + std::uint32_t(p.M % 7));
          o.a.insert(o.a.begin(), in, 0.0f);
          DeviceBuffer a = DeviceBuffer::from(o.a), b = DeviceBuffer::from(o.b), c = DeviceBuffer::from(o.c);
          gemm.run(p, reinterpret_cast<const float*>(a.get()) + in, reinterpret_cast<const float*>(b.get()),
                   reinterpret_cast<float*>(c.get()), stream);
          check_cuda(cuda_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
          std::vector<float> a_after(o.a.size()), b_after(o.b.size());
          a.download_into(a_after);
          b.download_into(b_after);
          c.download_into(o.c);
          if (a_after != o.a || b_after != o.b) failures[t] += p.to_string() + ": an operand changed; ";
          if (auto fine = within_tf32_bound(p, o.a.data() + in, o.b.data(), o.c.data()); !fine) {
            failures[t] += fine.message() + std::string("; ");
          }
        }
      }
      cuda_driver().cuStreamDestroy(stream);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<std::string>(4));
}

TEST_F(LibraryGpuTest, MoreThan48KiBOfDynamicSharedMemoryIsOptedInto) {
  // A record of this GPU for a configuration with 72 KiB of shared memory (3 stages of 128x16 and
  // 16x256 floats): the library must raise the kernel's limit before launching it.
  const DeviceProperties& here = device_->properties();
  record_one(folder_ / "big.db",
             {here.name, here.cc_major, here.cc_minor, here.sm_count, here.clock_khz,
              here.memory_bytes, here.driver_version, "13.0"},
             "warp_tiled.cu", "BM=128,BN=256,BK=16,TM=8,TN=16,STAGES=3,SWIZZLE=1,SPLIT_K=1,STREAM_K=0",
             {512, 512, 512});
  const Library library = Library::open((folder_ / "big.db").string());
  const Gemm gemm = library.gemm("warp_tiled");
  const Problem p = Problem::packed(300, 700, 200);
  ASSERT_GT(gemm.plan(p).dynamic_shared_bytes, 48u * 1024);
  EXPECT_TRUE(runs_correctly(gemm, p, 5)) << gemm.plan(p).to_string();
}

// The first-call trial on the GPU (the H200 selection fixture's records: this GPU's, or another
// of its compute capability's): it times the model's candidates on operands of its own, so the
// caller's C, written before the plan, is as it was after it; the kernel it chose computes right.
TEST_F(LibraryGpuTest, AFirstCallTrialTimesOnItsOwnOperandsAndItsChoiceComputesRight) {
  const std::filesystem::path suite = testing_support::load_selection_fixture("suite", folder_ / "suite.db");
  Options options;
  options.trial_candidates = 3;
  options.cache_dir = (folder_ / "cache").string();
  const Library library = Library::open(suite.string(), options);
  const Gemm gemm = library.gemm("tiled");
  const Problem p = Problem::packed(700, 500, 300);
  const std::vector<float> sevens(std::size_t(p.M * p.ldc), 7.0f);
  DeviceBuffer c = DeviceBuffer::from(sevens);
  const Plan plan = gemm.plan(p);
  check_cuda(cuda_driver().cuCtxSynchronize(), "cuCtxSynchronize");
  EXPECT_EQ(plan.trial_candidates, 3) << plan.why;
  EXPECT_NE(plan.why.find("; the first-call trial timed the model's 3 fastest: [" + plan.config + "]"),
            std::string::npos) << plan.why;
  std::vector<float> after(sevens.size());
  c.download_into(after);
  EXPECT_EQ(after, sevens) << "the caller's C is not the trial's";
  EXPECT_TRUE(runs_correctly(gemm, p, 9)) << plan.to_string();
}

TEST_F(LibraryGpuTest, ConcurrentFirstCallsShareOneBuild) {
  Options options;
  options.cache_dir = (folder_ / "cache").string();  // empty: each configuration compiles here
  const Library library = Library::open(database_.string(), options);
  const Gemm gemm = library.gemm("warp_tiled");
  const Problem p{61, 45, 129, 130, 47, 45};
  std::vector<std::thread> threads;
  std::vector<int> correct(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      device_->make_current();
      correct[t] = bool(runs_correctly(gemm, p, 100 + t));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(correct, std::vector<int>(8, 1));
  // One compile for the one configuration: one entry in the fresh cubin cache, the cache
  // folder's cubins/ (beside the tag that marks that folder as a cache).
  int entries = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(folder_ / "cache")) {
    entries += e.is_regular_file() && e.path().filename() != "CACHEDIR.TAG";
  }
  EXPECT_EQ(entries, 1);
  EXPECT_TRUE(std::filesystem::is_regular_file(folder_ / "cache" / "cubins" / "CACHEDIR.TAG"));
}

TEST_F(LibraryGpuTest, AMissedProblemTunedWithTuneMissedIsExactAfterwards) {
  // The whole loop of the issue: an application meets a problem without an exact record, the miss
  // is kept in the database, `tiletune tune --missed` tunes it, and the next process runs a record
  // of that very shape.
  Options options;
  options.record_misses = database_.string();
  const Problem p = Problem::packed(300, 200, 100);
  {
    const Library library = Library::open(database_.string(), options);
    EXPECT_FALSE(library.gemm("tiled").plan(p).exact);
  }
  const std::string tune = std::string(TILETUNE_BINARY_DIR) + "/tools/tiletune tune --missed --db " +
                           database_.string() + " > " + (folder_ / "tune.log").string() + " 2>&1";
  ASSERT_EQ(std::system(tune.c_str()), 0) << std::ifstream(folder_ / "tune.log").rdbuf();
  const Library library = Library::open(database_.string(), options);
  const Plan plan = library.gemm("tiled").plan(p);
  EXPECT_TRUE(plan.exact) << plan.to_string();
  EXPECT_TRUE(runs_correctly(library.gemm("tiled"), p, 9));
  const ResultStore store(database_, ResultStore::Access::read_only);
  EXPECT_TRUE(store.missed_problems(device_->properties().name, "tiled").empty());
}

// ---- The BLAS contract: Gemm::run's epilogue, and Blas (cuBLAS's column-major SGEMM) ----------

constexpr float kUntouched = 777.f;  // what every element outside the call's matrices holds

// Column-major op(X)[r][c] of a matrix stored with leading dimension ld, as cuBLAS reads it.
double element(char trans, const float* x, std::int64_t ld, std::int64_t r, std::int64_t c) {
  return trans == 'N' || trans == 'n' ? x[r + c * ld] : x[c + r * ld];
}

// C after cublasSgemmStridedBatched's C = alpha * op(A) op(B) + beta * C against a double
// reference from C's contents before: every element of each m x n entry within gamma_K of the
// sums' magnitudes, and every other element of C (its rows beyond m, the gaps between entries)
// as it was. beta = 0 must not read C (NaN there stays out).
::testing::AssertionResult matches_cublas(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                          float alpha, const std::vector<float>& a, std::int64_t lda,
                                          std::int64_t stride_a, const std::vector<float>& b, std::int64_t ldb,
                                          std::int64_t stride_b, float beta, const std::vector<float>& before,
                                          const std::vector<float>& c, std::int64_t ldc, std::int64_t stride_c,
                                          std::int64_t batch) {
  const double u = std::ldexp(1.0, -24), gamma = (k + 2) * u / (1 - (k + 2) * u);
  std::vector<bool> inside(c.size(), false);
  for (std::int64_t e = 0; e < batch; ++e) {
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        const std::size_t at = std::size_t(e * stride_c + i + j * ldc);
        inside[at] = true;
        double sum = 0, magnitude = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double product = element(ta, a.data() + e * stride_a, lda, i, p) *
                                 element(tb, b.data() + e * stride_b, ldb, p, j);
          sum += product;
          magnitude += std::fabs(product);
        }
        double expected = alpha * sum;
        magnitude *= std::fabs(alpha);
        if (beta != 0) {
          expected += double(beta) * before[at];
          magnitude += std::fabs(double(beta) * before[at]);
        }
        if (!(std::fabs(c[at] - expected) <= gamma * magnitude + 1e-30)) {
          return ::testing::AssertionFailure() << "op " << ta << tb << ": C[" << e << "](" << i << ", " << j
                                               << ") = " << c[at] << ", expected " << expected;
        }
      }
    }
  }
  for (std::size_t at = 0; at < c.size(); ++at) {
    if (!inside[at] && c[at] != before[at]) {
      return ::testing::AssertionFailure() << "C[" << at << "] outside the matrices was written: " << c[at];
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> random_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  std::vector<float> v(count);
  for (float& x : v) x = value(generator);
  return v;
}

// C's buffer for a batch: kUntouched everywhere, the entries' m x n elements random (or NaN).
std::vector<float> c_buffer(std::int64_t m, std::int64_t n, std::int64_t ldc, std::int64_t stride_c,
                            std::int64_t batch, bool nan, std::uint32_t seed) {
  std::vector<float> c(std::size_t((batch - 1) * stride_c + n * ldc + 5), kUntouched);
  const std::vector<float> values = random_values(c.size(), seed);
  for (std::int64_t e = 0; e < batch; ++e) {
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        const std::size_t at = std::size_t(e * stride_c + i + j * ldc);
        c[at] = nan ? std::nanf("") : values[at];
      }
    }
  }
  return c;
}

// Databases of the contract's templates as kernels_src has them (the fixture's versions predate
// `supports`): naive (2 ms) and tiled (1 ms) recorded at 64^3 on the H100.
class BlasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fresh_test_folder("blas");
    database_ = folder_ / "contract.db";
    record(database_, 2, 1);
  }
  void record(const std::filesystem::path& path, double naive_ms, double tiled_ms) const {
    const GpuRecord gpu{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
    record_one(path, gpu, "naive.cu", "BLOCK_X=16,BLOCK_Y=8", {64, 64, 64}, naive_ms);
    record_one(path, gpu, "tiled.cu", "TILE=8,PAD=1,SWIZZLE=0", {64, 64, 64}, tiled_ms);
  }
  Library open(const std::filesystem::path& path) const {
    Options options;
    options.backend = Backend::cpu;
    return Library::open(path.string(), options);
  }
  std::filesystem::path folder_, database_;
};

TEST_F(BlasTest, SgemmMatchesCublasForEveryTransposePairWithPaddedLeadingDimensions) {
  const Blas blas(open(database_));
  const std::int64_t m = 37, n = 29, k = 23;
  for (const char ta : {'N', 't'}) {
    for (const char tb : {'n', 'T'}) {
      const std::int64_t lda = (ta == 'N' ? m : k) + 3, ldb = (tb == 'n' ? k : n) + 2, ldc = m + 4;
      const std::vector<float> a = random_values(std::size_t(lda * (ta == 'N' ? k : m)), 1);
      const std::vector<float> b = random_values(std::size_t(ldb * (tb == 'n' ? n : k)), 2);
      const std::vector<float> before = c_buffer(m, n, ldc, 0, 1, false, 3);
      std::vector<float> c = before;
      blas.sgemm(ta, tb, m, n, k, 0.75f, a.data(), lda, b.data(), ldb, -1.5f, c.data(), ldc);
      EXPECT_TRUE(matches_cublas(ta, tb, m, n, k, 0.75f, a, lda, 0, b, ldb, 0, -1.5f, before, c, ldc, 0, 1));
    }
  }
}

TEST_F(BlasTest, BetaZeroNeverReadsC) {
  const Blas blas(open(database_));
  const std::int64_t m = 19, n = 33, k = 17, lda = k + 1, ldb = n, ldc = m + 2;
  const std::vector<float> a = random_values(std::size_t(lda * m), 4), b = random_values(std::size_t(ldb * k), 5);
  const std::vector<float> before = c_buffer(m, n, ldc, 0, 1, true, 6);
  std::vector<float> c = before;
  blas.sgemm('T', 'T', m, n, k, 2.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), ldc);
  EXPECT_TRUE(matches_cublas('T', 'T', m, n, k, 2.f, a, lda, 0, b, ldb, 0, 0.f, before, c, ldc, 0, 1));
}

TEST_F(BlasTest, StridedBatchedRunsEachEntryAndLeavesTheGapsAlone) {
  const Blas blas(open(database_));
  const std::int64_t m = 21, n = 13, k = 9, batch = 3, lda = k + 2, ldb = n + 1, ldc = m + 3;
  const std::int64_t stride_a = lda * m + 7, stride_b = 0, stride_c = ldc * n + 11;  // B shared by all
  const std::vector<float> a = random_values(std::size_t(stride_a * batch), 7);
  const std::vector<float> b = random_values(std::size_t(ldb * k), 8);
  const std::vector<float> before = c_buffer(m, n, ldc, stride_c, batch, false, 9);
  std::vector<float> c = before;
  blas.sgemm_strided_batched('t', 'T', m, n, k, -1.f, a.data(), lda, stride_a, b.data(), ldb, stride_b, 0.5f,
                             c.data(), ldc, stride_c, batch);
  EXPECT_TRUE(matches_cublas('t', 'T', m, n, k, -1.f, a, lda, stride_a, b, ldb, stride_b, 0.5f, before, c, ldc,
                             stride_c, batch));
}

// warp_tiled compiles the contract in (`specializes`): each problem runs the build that serves
// it, and a plan made for one build is not taken for a problem of another (alpha 1 against 2).
TEST_F(BlasTest, ATemplateThatCompilesTheContractInRunsTheBuildOfEachProblem) {
  const std::filesystem::path database = folder_ / "warp_tiled.db";
  const GpuRecord gpu{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
  record_one(database, gpu, "warp_tiled.cu", "BM=32,BN=64,BK=8,TM=4,TN=4,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0",
             {64, 64, 64});
  const Blas blas(open(database));
  const std::int64_t m = 37, n = 29, k = 23;
  for (const char ta : {'N', 'T'}) {
    for (const char tb : {'N', 'T'}) {
      for (const float alpha : {1.f, 2.f}) {
        const std::int64_t lda = (ta == 'N' ? m : k) + 1, ldb = (tb == 'N' ? k : n) + 3, ldc = m + 2;
        const std::vector<float> a = random_values(std::size_t(lda * (ta == 'N' ? k : m)), 11);
        const std::vector<float> b = random_values(std::size_t(ldb * (tb == 'N' ? n : k)), 12);
        const std::vector<float> before = c_buffer(m, n, ldc, 0, 1, false, 13);
        std::vector<float> c = before;
        blas.sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, 0.5f, c.data(), ldc);
        EXPECT_TRUE(matches_cublas(ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, 0.5f, before, c, ldc, 0, 1))
            << "alpha " << alpha;
      }
    }
  }
  Problem row_major{29, 37, 23, 29 + 3, 37 + 1, 37 + 2};
  row_major.op_a = Op::t;
  row_major.beta = 0.5f;
  const Plan plan = Blas(open(database)).plan(row_major);
  EXPECT_EQ(plan.template_name, "warp_tiled") << plan.to_string();
  EXPECT_NE(plan.why.find("in its build op_a=t beta"), std::string::npos) << plan.why;
}

TEST_F(BlasTest, ChoosesTheTemplateThatExpectsTheLeastTime) {
  // Column-major 40x30x20 with op(A) = A^T is the row-major problem 30x40x20, A and B swapped.
  Problem row_major{30, 40, 20, 20, 20, 40};
  row_major.op_b = Op::t;
  row_major.beta = 1;
  const Plan tiled = Blas(open(database_)).plan(row_major);
  EXPECT_EQ(tiled.template_name, "tiled") << tiled.to_string();
  EXPECT_NE(tiled.why.find("tuned for C = A * B; serves op=nt, alpha and beta (C read) at run time"),
            std::string::npos) << tiled.why;
  record(folder_ / "naive_faster.db", 0.5, 1);
  EXPECT_EQ(Blas(open(folder_ / "naive_faster.db")).plan(row_major).template_name, "naive");
}

// The first call ranks the templates without loading their kernels and plans only the fastest:
// the miss log, written by plans alone, holds tiled's miss (1 ms at 64^3 against naive's 2) and
// not naive's, and the call computes what cuBLAS would.
TEST_F(BlasTest, TheFirstCallPlansOnlyTheTemplateItRunsOn) {
  Options options;
  options.backend = Backend::cpu;
  options.record_misses = (folder_ / "misses.db").string();
  {
    const Blas blas(Library::open(database_.string(), options));
    const std::int64_t m = 40, n = 30, k = 20;
    const std::vector<float> a = random_values(std::size_t(m * k), 7), b = random_values(std::size_t(k * n), 8);
    const std::vector<float> before = c_buffer(m, n, m, 0, 1, false, 9);
    std::vector<float> c = before;
    blas.sgemm('N', 'N', m, n, k, 1.f, a.data(), m, b.data(), k, 0.f, c.data(), m);
    EXPECT_TRUE(matches_cublas('N', 'N', m, n, k, 1.f, a, m, 0, b, k, 0, 0.f, before, c, m, 0, 1));
  }
  const ResultStore misses(folder_ / "misses.db", ResultStore::Access::read_only);
  const std::vector<MissedProblem> kept = misses.missed_problems(std::nullopt, std::nullopt);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].template_name, "tiled");
  EXPECT_EQ(kept[0].problem.shape, (GemmShape{30, 40, 20})) << "row-major: M = n, N = m";
}

TEST_F(BlasTest, EveryArgumentIsCheckedAndNamedAsCublasNumbersIt) {
  const Blas blas(open(database_));
  std::vector<float> a(64, 1.f), b(64, 1.f), c(64, kUntouched);
  const auto cause = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const InvalidProblem& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    return "accepted";
  };
  const auto sgemm = [&](char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
                         std::int64_t ldb, std::int64_t ldc) {
    return cause([&] { blas.sgemm(ta, tb, m, n, k, 1, a.data(), lda, b.data(), ldb, 0, c.data(), ldc); });
  };
  const auto batched = [&](std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c, std::int64_t batch) {
    return cause([&] {
      blas.sgemm_strided_batched('N', 'N', 2, 2, 2, 1, a.data(), 2, stride_a, b.data(), 2, stride_b, 0, c.data(), 2,
                                 stride_c, batch);
    });
  };
  EXPECT_EQ(sgemm('X', 'N', 2, 2, 2, 2, 2, 2), "sgemm: parameter number 2 (transa = 'X') is none of N, n, T, t, C, c");
  EXPECT_NE(sgemm('N', '\0', 2, 2, 2, 2, 2, 2).find("parameter number 3 (transb = character 0)"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', -1, 2, 2, 2, 2, 2).find("parameter number 4 (m = -1) is below 0"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 2, -1, 2, 2, 2, 2).find("parameter number 5 (n = -1)"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 2, 2, -3, 2, 2, 2).find("parameter number 6 (k = -3)"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 3, 2, 2, 2, 2, 3).find("parameter number 9 (lda = 2) is below 3 (max(1, m)"), std::string::npos);
  EXPECT_NE(sgemm('T', 'N', 2, 2, 3, 2, 3, 2).find("parameter number 9 (lda = 2) is below 3 (max(1, k)"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 0, 0, 0, 0, 1, 1).find("parameter number 9 (lda = 0) is below 1"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 2, 2, 3, 2, 2, 2).find("parameter number 11 (ldb = 2) is below 3 (max(1, k)"), std::string::npos);
  EXPECT_NE(sgemm('N', 'C', 2, 3, 2, 2, 2, 2).find("parameter number 11 (ldb = 2) is below 3 (max(1, n)"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 3, 2, 2, 3, 2, 2).find("parameter number 14 (ldc = 2) is below 3"), std::string::npos);
  EXPECT_NE(sgemm('N', 'N', 1LL << 31, 2, 2, 1LL << 31, 2, 1LL << 31).find("parameter number 4 (m = 2147483648) exceeds"),
            std::string::npos);
  EXPECT_NE(batched(4, 4, 4, -1).find("sgemm_strided_batched: parameter number 18 (batchCount = -1)"), std::string::npos);
  EXPECT_NE(batched(-4, 4, 4, 2).find("parameter number 10 (strideA = -4)"), std::string::npos);
  EXPECT_NE(batched(4, -4, 4, 2).find("parameter number 13 (strideB = -4)"), std::string::npos);
  EXPECT_NE(batched(4, 4, 3, 2).find("parameter number 17 (strideC = 3) is below the 4 elements"), std::string::npos);
  EXPECT_EQ(batched(0, 0, 4, 2), "accepted");
  EXPECT_EQ(sgemm('c', 't', 2, 2, 2, 2, 2, 2), "accepted");
}

TEST_F(BlasTest, EmptyProblemsTouchNothingAndKZeroOnlyServesBetaOne) {
  const Blas blas(open(database_));
  std::vector<float> c(16, kUntouched);
  const std::vector<float> before = c;
  // A and B may be null where nothing is read.
  blas.sgemm('N', 'N', 0, 4, 4, 1, nullptr, 1, nullptr, 4, 0, c.data(), 1);
  blas.sgemm('N', 'N', 4, 0, 4, 1, nullptr, 4, nullptr, 4, 0, c.data(), 4);
  blas.sgemm_strided_batched('N', 'N', 2, 2, 2, 1, nullptr, 2, 4, nullptr, 2, 4, 0, c.data(), 2, 4, 0);
  blas.sgemm('N', 'N', 4, 4, 0, 1, nullptr, 4, nullptr, 1, 1, c.data(), 4);  // C = 1 * C
  EXPECT_EQ(c, before);
  try {
    blas.sgemm('N', 'N', 4, 4, 0, 1, nullptr, 4, nullptr, 1, 0.5f, c.data(), 4);
    FAIL() << "expected NoConfiguration";
  } catch (const NoConfiguration& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("k = 0 with beta = 0.5"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c, before);
}

TEST_F(BlasTest, ABiasEpilogueRunsThroughGemmRunAndItsBiasIsChecked) {
  const Gemm gemm = open(database_).gemm("tiled");
  Problem p{23, 18, 11, 13, 20, 19};  // row-major, padded
  p.alpha = 1.25f;
  p.beta = 0;
  for (const Epilogue epilogue : {Epilogue::bias_relu, Epilogue::bias_gelu}) {
    p.epilogue = epilogue;
    const std::vector<float> a = random_values(std::size_t(p.M * p.lda), 10), b = random_values(std::size_t(p.K * p.ldb), 11);
    const std::vector<float> bias = random_values(std::size_t(p.N), 12);
    std::vector<float> c(std::size_t(p.M * p.ldc), std::nanf(""));
    gemm.run(p, a.data(), b.data(), c.data(), nullptr, bias.data());
    const double u = std::ldexp(1.0, -24), gamma = (p.K + 2) * u / (1 - (p.K + 2) * u);
    for (std::int64_t i = 0; i < p.M; ++i) {
      for (std::int64_t j = 0; j < p.ldc; ++j) {
        const float got = c[std::size_t(i * p.ldc + j)];
        if (j >= p.N) {
          ASSERT_TRUE(std::isnan(got)) << "padding written at " << i << "," << j;
          continue;
        }
        double sum = 0, magnitude = std::fabs(bias[std::size_t(j)]);
        for (std::int64_t q = 0; q < p.K; ++q) {
          const double product = double(a[std::size_t(i * p.lda + q)]) * b[std::size_t(q * p.ldb + j)] * p.alpha;
          sum += product;
          magnitude += std::fabs(product);
        }
        const double x = sum + bias[std::size_t(j)];
        const double expected = epilogue == Epilogue::bias_relu
                                    ? std::max(x, 0.0)
                                    : 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        // GELU's tanh in float adds a few ulps of its own.
        ASSERT_NEAR(got, expected, gamma * magnitude + 1e-6) << to_string(epilogue) << " at " << i << "," << j;
      }
    }
  }
  std::vector<float> a(400), b(400), c(500), bias(18);
  try {
    gemm.run(p, a.data(), b.data(), c.data(), nullptr);
    FAIL() << "expected InvalidProblem";
  } catch (const InvalidProblem& e) {
    EXPECT_NE(std::string(e.what()).find("its epilogue adds a bias, but the bias pointer is null"), std::string::npos) << e.what();
  }
  p.epilogue = Epilogue::relu;
  try {
    gemm.run(p, a.data(), b.data(), c.data(), nullptr, bias.data());
    FAIL() << "expected InvalidProblem";
  } catch (const InvalidProblem& e) {
    EXPECT_NE(std::string(e.what()).find("a bias was given, but its epilogue adds none"), std::string::npos) << e.what();
  }
}

// Split-K and stream-K configurations add partial sums into a cleared C: the launcher runs their
// kernel for alpha op(A) op(B) alone (into scratch where beta != 0) and applies beta, the bias and
// the activation in a pass after it. Their records serve such problems as any other.
TEST_F(BlasTest, AConfigurationThatAddsIntoCServesBetaAndEpiloguesThroughThePass) {
  const GpuRecord gpu{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
  const std::pair<std::string, std::string> kinds[] = {
      {"split_k", "BM=32,BN=64,BK=8,TM=4,TN=4,STAGES=3,SWIZZLE=0,SPLIT_K=4,STREAM_K=0"},
      {"stream_k", "BM=64,BN=128,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1,STREAM_K=1"}};
  for (const auto& [kind, config] : kinds) {
    SCOPED_TRACE(config);
    const std::filesystem::path database = folder_ / (kind + ".db");
    record_one(database, gpu, "warp_tiled.cu", config, {64, 64, 64});
    const Library library = open(database);
    const Blas blas(library);
    // Column-major: beta read (a batch with gaps between its entries), then beta 0 over NaN.
    const std::int64_t m = 70, n = 45, k = 300, batch = 2, lda = m + 1, ldb = k + 2, ldc = m + 3;
    const std::int64_t stride_a = lda * k + 5, stride_b = ldb * n, stride_c = ldc * n + 7;
    const std::vector<float> a = random_values(std::size_t(stride_a * batch), 21);
    const std::vector<float> b = random_values(std::size_t(stride_b * batch), 22);
    for (const float beta : {0.5f, 0.f}) {
      const std::vector<float> before = c_buffer(m, n, ldc, stride_c, batch, beta == 0, 23);
      std::vector<float> c = before;
      blas.sgemm_strided_batched('N', 'N', m, n, k, -1.25f, a.data(), lda, stride_a, b.data(), ldb, stride_b,
                                 beta, c.data(), ldc, stride_c, batch);
      EXPECT_TRUE(matches_cublas('N', 'N', m, n, k, -1.25f, a, lda, stride_a, b, ldb, stride_b, beta, before, c,
                                 ldc, stride_c, batch));
    }
    // Row-major with a bias and GELU over beta C; the padding beyond N stays as it was.
    const Gemm gemm = library.gemm("warp_tiled");
    Problem p{41, 37, 290, 292, 39, 40};
    p.alpha = 1.5f;
    p.beta = -0.5f;
    p.epilogue = Epilogue::bias_gelu;
    const Plan plan = gemm.plan(p);
    EXPECT_EQ(plan.config, config);
    EXPECT_NE(plan.why.find("a pass over C after it applies beta and the epilogue"), std::string::npos) << plan.why;
    const std::vector<float> a2 = random_values(std::size_t(p.M * p.lda), 24), b2 = random_values(std::size_t(p.K * p.ldb), 25);
    const std::vector<float> bias = random_values(std::size_t(p.N), 26), before = random_values(std::size_t(p.M * p.ldc), 27);
    std::vector<float> c = before;
    gemm.run(p, a2.data(), b2.data(), c.data(), nullptr, bias.data());
    const double u = std::ldexp(1.0, -24), gamma = (p.K + 4) * u / (1 - (p.K + 4) * u);
    for (std::int64_t i = 0; i < p.M; ++i) {
      for (std::int64_t j = 0; j < p.ldc; ++j) {
        const std::size_t at = std::size_t(i * p.ldc + j);
        if (j >= p.N) {
          ASSERT_EQ(c[at], before[at]) << "padding written at " << i << "," << j;
          continue;
        }
        double sum = 0, magnitude = std::fabs(bias[std::size_t(j)]) + std::fabs(p.beta * before[at]);
        for (std::int64_t q = 0; q < p.K; ++q) {
          const double product = double(a2[std::size_t(i * p.lda + q)]) * b2[std::size_t(q * p.ldb + j)] * p.alpha;
          sum += product;
          magnitude += std::fabs(product);
        }
        const double x = sum + p.beta * double(before[at]) + bias[std::size_t(j)];
        const double expected = 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        ASSERT_NEAR(c[at], expected, gamma * magnitude + 1e-6) << "at " << i << "," << j;
      }
    }
  }
}

TEST_F(LibraryTest, ATemplateThatServesNoTransposeIsNoConfigurationSayingWhy) {
  const Library library = Library::open(database_.string(), cpu());
  Problem p{64, 64, 64, 64, 64, 64};
  p.op_a = Op::t;
  try {
    library.gemm("warp_tiled").plan(p);
    FAIL() << "expected NoConfiguration";
  } catch (const NoConfiguration& e) {
    EXPECT_EQ(std::string(e.what()),
              "problem 64x64x64 lda=64 ldb=64 ldc=64 op=tn: warp_tiled serves no transposed A (op_a=t) (it "
              "supports plain C = A * B only)");
  }
  // The plain problem of the same shape still plans.
  EXPECT_EQ(library.gemm("warp_tiled").plan(Problem::packed(64, 64, 64)).template_name, "warp_tiled");
}

// A record tuned for the problem's transposes at its shape (`tune --op nt`) is chosen over the
// plain product's, even a faster one (its time is another product's); other transposes and
// other shapes are served by the plain product's records as before.
TEST_F(LibraryTest, ARecordTunedForTheTransposesServesThemAtItsShape) {
  const GpuRecord h100{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
  const std::string plain = "BM=32,BN=256,BK=16,TM=8,TN=8,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0";
  const std::string nt = "BM=64,BN=128,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=1,SPLIT_K=1,STREAM_K=0";
  const std::filesystem::path db = folder_ / "transposes.db";
  record_one(db, h100, "warp_tiled.cu", plain, {96, 80, 72}, 1.0);
  record_one(db, h100, "warp_tiled.cu", nt, {96, 80, 72}, 2.0, Transposes{Op::n, Op::t});
  Options options = cpu();
  options.gpu_name = kH100;
  const Gemm gemm = Library::open(db.string(), options).gemm("warp_tiled");

  Problem p = Problem::packed(96, 80, 72);
  EXPECT_EQ(gemm.plan(p).config, plain);
  p.op_b = Op::t;
  p.ldb = 72;
  const Plan tuned = gemm.plan(p);
  EXPECT_EQ(tuned.config, nt);
  EXPECT_TRUE(tuned.exact);
  EXPECT_DOUBLE_EQ(tuned.expected_ms, 2.0);
  EXPECT_NE(tuned.why.find("tuned for op=nt"), std::string::npos) << tuned.why;
  EXPECT_TRUE(runs_correctly(gemm, p, 3));  // its build computes C = A B^T, B stored N x K

  Problem tn = Problem::packed(96, 80, 72);
  tn.op_a = Op::t;
  tn.lda = 96;
  EXPECT_EQ(gemm.plan(tn).config, plain);  // not tuned for tn
  Problem other = Problem::packed(97, 80, 72);
  other.op_b = Op::t;
  other.ldb = 72;
  EXPECT_EQ(gemm.plan(other).config, plain);  // tuned for nt at another shape only
}

// tf32_wgmma_tma's tn build needs shared memory that some of its configurations lack: a tn problem
// passes over their records to one with the build, while a tt problem (the swapped product, no
// more memory) takes the fastest; both compute within TF32's bound on the CPU backend.
TEST_F(LibraryTest, ATransposedProblemTakesOnlyConfigurationsWithItsBuild) {
  const GpuRecord h100{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
  const std::filesystem::path db = folder_ / "tma_transposes.db";
  const std::string roomy = "BM=256,STAGES=4,GROUP=1,SPLIT_WAVES=0";  // no room for the tn build's raw buffers
  const std::string fits = "BM=128,STAGES=3,GROUP=1,SPLIT_WAVES=0";
  record_one(db, h100, "tf32_wgmma_tma.cu", roomy, {160, 136, 72}, 1.0);
  record_one(db, h100, "tf32_wgmma_tma.cu", fits, {160, 136, 72}, 2.0);
  Options options = cpu();
  options.gpu_name = kH100;
  options.lowest_precision = Precision::tf32;
  const Gemm gemm = Library::open(db.string(), options).gemm("tf32_wgmma_tma");

  Problem tn = Problem::packed(160, 136, 72);
  tn.op_a = Op::t;
  tn.lda = 160;
  const Plan tn_plan = gemm.plan(tn);
  EXPECT_EQ(tn_plan.config, fits) << tn_plan.why;
  Problem tt = tn;
  tt.op_b = Op::t;
  tt.ldb = 72;
  EXPECT_EQ(gemm.plan(tt).config, roomy);
  for (const Problem& p : {tn, tt}) {
    Operands o = random_operands(p, 7);
    gemm.run(p, o.a.data(), o.b.data(), o.c.data());
    EXPECT_TRUE(within_tf32_bound(p, o.a.data(), o.b.data(), o.c.data()));
  }
}

// A strided batch (`tune --batch`) likewise: its record at the shape and batch first.
TEST_F(LibraryTest, ARecordTunedForABatchServesItAtItsShape) {
  const GpuRecord h100{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
  const std::string plain = "BM=32,BN=256,BK=16,TM=8,TN=8,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0";
  const std::string batched = "BM=64,BN=128,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=1,SPLIT_K=1,STREAM_K=0";
  const std::filesystem::path db = folder_ / "batch.db";
  record_one(db, h100, "warp_tiled.cu", plain, {96, 80, 72}, 1.0);
  record_one(db, h100, "warp_tiled.cu", batched, {96, 80, 72}, 3.0, TunedFor{{}, 3});
  Options options = cpu();
  options.gpu_name = kH100;
  const Gemm gemm = Library::open(db.string(), options).gemm("warp_tiled");

  Problem p = Problem::packed(96, 80, 72);
  EXPECT_EQ(gemm.plan(p).config, plain);
  p.batch = 3;
  p.stride_a = 96 * 72;
  p.stride_b = 72 * 80;
  p.stride_c = 96 * 80 + 5;  // a gap between C's entries, left alone
  const Plan tuned = gemm.plan(p);
  EXPECT_EQ(tuned.config, batched);
  EXPECT_TRUE(tuned.exact);
  EXPECT_DOUBLE_EQ(tuned.expected_ms, 3.0);
  EXPECT_NE(tuned.why.find("tuned for batch=3"), std::string::npos) << tuned.why;
  EXPECT_TRUE(runs_correctly(gemm, p, 5));

  p.batch = 4;  // not tuned for 4 entries
  EXPECT_EQ(gemm.plan(p).config, plain);
}

// Blas on the GPU (kernels_src's naive, tiled and warp_tiled, recorded on an H100; warp_tiled
// expected fastest): every transpose pair with alpha, beta and padded leading dimensions at a shape
// nobody tuned, and a strided batch over a C of NaN (beta 0) whose gaps must stay untouched, each
// against the column-major reference of cublasSgemm's semantics.
TEST_F(LibraryGpuTest, BlasComputesWhatCublasWouldForEveryTransposePairAndABatch) {
  const std::filesystem::path database = folder_ / "contract.db";
  const GpuRecord h100{kH100, 9, 0, 132, 1980000, 85000000000ull, 13000, "13.0"};
  record_one(database, h100, "naive.cu", "BLOCK_X=16,BLOCK_Y=8", {256, 256, 256}, 4);
  record_one(database, h100, "tiled.cu", "TILE=16,PAD=1,SWIZZLE=0", {256, 256, 256}, 2);
  record_one(database, h100, "warp_tiled.cu", "BM=64,BN=64,BK=16,TM=8,TN=4,STAGES=2,SWIZZLE=0,SPLIT_K=1,STREAM_K=0",
             {256, 256, 256}, 1);
  const Blas blas(Library::open(database.string()));
  const auto on_gpu = [&](const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
                          const auto& call) {
    DeviceBuffer da = DeviceBuffer::from(a), db = DeviceBuffer::from(b), dc = DeviceBuffer::from(c);
    call(reinterpret_cast<const float*>(da.get()), reinterpret_cast<const float*>(db.get()),
         reinterpret_cast<float*>(dc.get()));
    check_cuda(cuda_driver().cuCtxSynchronize(), "cuCtxSynchronize");
    dc.download_into(c);
  };
  const std::int64_t m = 301, n = 259, k = 133;
  for (const char ta : {'N', 'T'}) {
    for (const char tb : {'N', 'T'}) {
      const std::int64_t lda = (ta == 'N' ? m : k) + 3, ldb = (tb == 'N' ? k : n) + 1, ldc = m + 2;
      const std::vector<float> a = random_values(std::size_t(lda * (ta == 'N' ? k : m)), 11);
      const std::vector<float> b = random_values(std::size_t(ldb * (tb == 'N' ? n : k)), 12);
      const std::vector<float> before = c_buffer(m, n, ldc, 0, 1, false, 13);
      std::vector<float> c = before;
      on_gpu(a, b, c, [&](const float* A, const float* B, float* C) {
        blas.sgemm(ta, tb, m, n, k, 0.75f, A, lda, B, ldb, -1.5f, C, ldc);
      });
      Problem row_major{n, m, k, ldb, lda, ldc};  // what the call is, for the message
      row_major.op_a = tb == 'T' ? Op::t : Op::n;
      row_major.op_b = ta == 'T' ? Op::t : Op::n;
      row_major.alpha = 0.75f;
      row_major.beta = -1.5f;
      EXPECT_TRUE(matches_cublas(ta, tb, m, n, k, 0.75f, a, lda, 0, b, ldb, 0, -1.5f, before, c, ldc, 0, 1))
          << ta << tb << "\n" << blas.plan(row_major).to_string();
      EXPECT_EQ(blas.plan(row_major).template_name, "warp_tiled");
    }
  }
  const std::int64_t batch = 5, lda = 130, ldb = 70, ldc = 129;
  const std::int64_t stride_a = lda * 64 + 9, stride_b = ldb * 128 + 3, stride_c = ldc * 70 + 17;
  const std::vector<float> a = random_values(std::size_t(stride_a * batch), 14);
  const std::vector<float> b = random_values(std::size_t(stride_b * batch), 15);
  const std::vector<float> before = c_buffer(128, 70, ldc, stride_c, batch, true, 16);  // NaN: beta 0
  std::vector<float> c = before;
  on_gpu(a, b, c, [&](const float* A, const float* B, float* C) {
    blas.sgemm_strided_batched('N', 'N', 128, 70, 64, 1.f, A, lda, stride_a, B, ldb, stride_b, 0.f, C, ldc,
                               stride_c, batch);
  });
  EXPECT_TRUE(matches_cublas('N', 'N', 128, 70, 64, 1.f, a, lda, stride_a, b, ldb, stride_b, 0.f, before, c, ldc,
                             stride_c, batch));
}

TEST_F(LibraryTest, AProblemSaysTheContractBeyondThePlainProduct) {
  Problem p = Problem::packed(8, 4, 2);
  EXPECT_EQ(p.to_string(), "8x4x2 lda=2 ldb=4 ldc=4");
  p.op_b = Op::t;
  p.ldb = 2;
  p.alpha = 2;
  p.batch = 3;
  p.stride_a = 16;
  p.stride_c = 32;
  p.epilogue = Epilogue::gelu;
  EXPECT_EQ(p.to_string(), "8x4x2 lda=2 ldb=2 ldc=4 op=nt alpha=2 batch=3 stride_a=16 stride_b=0 stride_c=32 epilogue=gelu");
}

}  // namespace
}  // namespace tiletune
