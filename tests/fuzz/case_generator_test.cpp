#include "fuzz/case_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <vector>

#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;

constexpr int kSamples = 2000;

// kSamples cases drawn at RapidCheck's nominal size (the full ranges), each from its own seed.
std::vector<GemmCase> sample_cases(const std::vector<std::int64_t>& moduli,
                                   const CaseLimits& limits = {}) {
  const rc::Gen<GemmCase> gen = gen_gemm_case(moduli, limits);
  std::vector<GemmCase> cases;
  for (int i = 0; i < kSamples; ++i) cases.push_back(gen(rc::Random(std::uint64_t(i) + 1)).value());
  return cases;
}

template <typename Predicate>
double fraction(const std::vector<GemmCase>& cases, Predicate predicate) {
  return double(std::count_if(cases.begin(), cases.end(), predicate)) / double(cases.size());
}

Configuration config(std::vector<std::pair<std::string, std::int64_t>> values) {
  return Configuration{std::move(values)};
}

// --- remainder_moduli -----------------------------------------------------------------------

TEST(RemainderModuli, TakesParameterValuesOfTwoOrMore) {
  EXPECT_THAT(remainder_moduli(config({{"TILE", 16}, {"PAD", 1}, {"SWIZZLE", 0}})), ElementsAre(16));
  EXPECT_THAT(remainder_moduli(config({{"BLOCK_X", 32}, {"BLOCK_Y", 2}})), ElementsAre(32, 2));
  EXPECT_THAT(remainder_moduli(config({{"BM", 64}, {"BN", 64}, {"TM", 8}})), ElementsAre(64, 8))
      << "each value once";
}

TEST(RemainderModuli, FallsBackTo16And32WhenNoValueIsTwoOrMore) {
  EXPECT_THAT(remainder_moduli(config({})), ElementsAre(16, 32));
  EXPECT_THAT(remainder_moduli(config({{"PAD", 0}, {"SWIZZLE", 1}})), ElementsAre(16, 32));
  EXPECT_THAT(remainder_moduli(config({{"NEG", -4}})), ElementsAre(16, 32));
}

// --- gen_gemm_case --------------------------------------------------------------------------

TEST(CaseGenerator, EveryCaseIsAValidProblemWithinTheLimits) {
  const CaseLimits limits{3, 300, 10};
  for (const std::vector<std::int64_t>& moduli :
       {std::vector<std::int64_t>{16}, std::vector<std::int64_t>{8, 32}, std::vector<std::int64_t>{2}}) {
    const std::int64_t largest = *std::max_element(moduli.begin(), moduli.end());
    const std::int64_t max_dimension = std::max<std::int64_t>(limits.max_whole_tiles * largest + largest - 1, 69);
    for (const GemmCase& c : sample_cases(moduli, limits)) {
      const GemmProblem& p = c.problem;
      ASSERT_TRUE(p.valid()) << c.to_string();
      ASSERT_LE(p.shape.m, max_dimension) << c.to_string();
      ASSERT_LE(p.shape.n, max_dimension) << c.to_string();
      ASSERT_LE(p.shape.k, std::max(max_dimension, limits.max_long_k)) << c.to_string();
      ASSERT_LE(p.lda - p.shape.k, limits.max_extra_ld) << c.to_string();
      ASSERT_LE(p.ldb - p.shape.n, limits.max_extra_ld) << c.to_string();
      ASSERT_LE(p.ldc - p.shape.n, limits.max_extra_ld) << c.to_string();
      ASSERT_LT(c.data_seed, 1u << 30);
      ASSERT_LT(c.schedule_seed, 1u << 30);
    }
  }
}

TEST(CaseGenerator, MostSizesLeaveAPartialTile) {
  const std::vector<GemmCase> cases = sample_cases({16});
  const double m_partial = fraction(cases, [](const GemmCase& c) { return c.problem.shape.m % 16 != 0; });
  const double n_partial = fraction(cases, [](const GemmCase& c) { return c.problem.shape.n % 16 != 0; });
  const double k_partial = fraction(cases, [](const GemmCase& c) { return c.problem.shape.k % 16 != 0; });
  EXPECT_GT(m_partial, 0.75);
  EXPECT_GT(n_partial, 0.75);
  EXPECT_GT(k_partial, 0.6);
  // ... and the sizes span several whole tiles, not just the first one.
  EXPECT_GT(fraction(cases, [](const GemmCase& c) { return c.problem.shape.m > 3 * 16; }), 0.2);
  EXPECT_GT(fraction(cases, [](const GemmCase& c) { return c.problem.shape.m == 1; }), 0.03);
}

TEST(CaseGenerator, RemaindersCoverEveryResidueOfTheTile) {
  std::set<std::int64_t> residues;
  for (const GemmCase& c : sample_cases({16})) residues.insert(c.problem.shape.m % 16);
  for (std::int64_t r = 1; r < 16; ++r) EXPECT_TRUE(residues.count(r)) << "M % 16 == " << r;
}

TEST(CaseGenerator, EveryModulusIsUsed) {
  // No whole tiles: a partial tile of 3 is 1 or 2, one of 1000 is 1..999. Sizes above 69 (the
  // small arbitrary range) come from the tile of 1000 alone, sizes 1 and 2 mostly from the 3.
  const std::vector<GemmCase> cases = sample_cases({3, 1000}, CaseLimits{0, 4, 1});
  EXPECT_GT(fraction(cases, [](const GemmCase& c) { return c.problem.shape.m > 69; }), 0.2);
  EXPECT_GT(fraction(cases, [](const GemmCase& c) { return c.problem.shape.m <= 2; }), 0.3);
}

TEST(CaseGenerator, LeadingDimensionsAreSometimesWiderThanTheMatrix) {
  const std::vector<GemmCase> cases = sample_cases({16});
  for (const auto& [name, wider] :
       {std::pair<const char*, bool (*)(const GemmCase&)>{"lda", [](const GemmCase& c) { return c.problem.lda > c.problem.shape.k; }},
        {"ldb", [](const GemmCase& c) { return c.problem.ldb > c.problem.shape.n; }},
        {"ldc", [](const GemmCase& c) { return c.problem.ldc > c.problem.shape.n; }}}) {
    const double share = fraction(cases, wider);
    EXPECT_GT(share, 0.2) << name << " is wider in " << share * 100 << "% of cases";
    EXPECT_LT(share, 0.8) << name << " is packed in only " << (1 - share) * 100 << "% of cases";
  }
}

// A run starts at size 0 and spreads its cases over sizes 0..100: wider strides must not wait for
// the largest sizes, or a 30-case run (what `tiletune tune` does per configuration) hardly tries
// them. (620219d drew the choice with a size-scaled inRange: no wider stride below size ~74.)
TEST(CaseGenerator, LeadingDimensionsAreWiderAtSmallSizesToo) {
  const rc::Gen<GemmCase> gen = gen_gemm_case({16});
  for (const int size : {10, 25, 50}) {
    int wider = 0;
    for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
      const GemmCase c = gen(rc::Random(seed), size).value();
      if (c.problem.ldc > c.problem.shape.n) ++wider;
    }
    EXPECT_GT(wider, 200) << "at size " << size << " ldc is wider in " << wider << " of 1000 cases";
  }
}

TEST(CaseGenerator, EveryInputKindAndLongKAppear) {
  const std::vector<GemmCase> cases = sample_cases({16});
  for (const InputKind kind :
       {InputKind::small_integers, InputKind::real, InputKind::sparse_real}) {
    const double share = fraction(cases, [&](const GemmCase& c) { return c.inputs == kind; });
    EXPECT_GT(share, 0.2) << to_string(kind);
    EXPECT_LT(share, 0.47) << to_string(kind);
  }
  // Without the long-K branch K is at most 4 * 16 + 15 = 79.
  EXPECT_GT(fraction(cases, [](const GemmCase& c) { return c.problem.shape.k > 79; }), 0.02);
}

TEST(CaseGenerator, SeedsVary) {
  std::set<std::uint64_t> data, schedule;
  for (const GemmCase& c : sample_cases({16})) {
    data.insert(c.data_seed);
    schedule.insert(c.schedule_seed);
  }
  EXPECT_GT(data.size(), std::size_t(kSamples * 9 / 10));
  EXPECT_GT(schedule.size(), std::size_t(kSamples * 9 / 10));
}

TEST(CaseGenerator, SameRandomGivesTheSameCase) {
  const rc::Gen<GemmCase> gen = gen_gemm_case({16, 32});
  for (std::uint64_t seed = 1; seed < 50; ++seed) {
    EXPECT_EQ(gen(rc::Random(seed)).value().to_string(), gen(rc::Random(seed)).value().to_string());
  }
}

// Accepting the first shrink each time walks the most direct way down.
GemmCase shrink_all_the_way(const rc::Shrinkable<GemmCase>& start) {
  rc::Shrinkable<GemmCase> current = start;
  for (int steps = 0; steps < 10000; ++steps) {
    auto next = current.shrinks().next();
    if (!next) break;
    current = *next;
  }
  return current.value();
}

TEST(CaseGenerator, ShrinksSizesToOneAndSeedsToZero) {
  const rc::Gen<GemmCase> gen = gen_gemm_case({16, 32});
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const GemmCase start = gen(rc::Random(seed)).value();
    const GemmCase smallest = shrink_all_the_way(gen(rc::Random(seed)));
    EXPECT_EQ(smallest.problem.shape, (GemmShape{1, 1, 1})) << "from " << start.to_string();
    EXPECT_EQ(smallest.data_seed, 0u) << "from " << start.to_string();
    EXPECT_EQ(smallest.schedule_seed, 0u) << "from " << start.to_string();
  }
}

TEST(CaseGenerator, ShrinksToPackedStrides) {
  const rc::Gen<GemmCase> gen = gen_gemm_case({16});
  int not_packed = 0;
  std::string example;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const GemmCase smallest = shrink_all_the_way(gen(rc::Random(seed)));
    if (!(smallest.problem == GemmProblem::packed(smallest.problem.shape))) {
      ++not_packed;
      example = gen(rc::Random(seed)).value().to_string() + " shrinks to " + smallest.to_string();
    }
  }
  EXPECT_EQ(not_packed, 0) << not_packed << " of 40 cases never shrink to packed strides, e.g. "
                           << example;
}

TEST(CaseGenerator, PackedOnlyLimitsGenerateOnlyPackedCases) {
  CaseLimits packed_only;
  packed_only.max_extra_ld = 0;
  const rc::Gen<GemmCase> gen = gen_gemm_case({16}, packed_only);
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    GemmCase c;
    ASSERT_NO_THROW(c = gen(rc::Random(seed)).value()) << "seed " << seed;
    EXPECT_EQ(c.problem, GemmProblem::packed(c.problem.shape)) << c.to_string();
  }
}

TEST(CaseGenerator, CrowdedCasesOnlyWhenAsked) {
  const auto crowded = [](const GemmCase& c) {
    return c.problem.shape.m >= 192 && c.problem.shape.n >= 192;
  };
  EXPECT_EQ(fraction(sample_cases({16}), crowded), 0.0);
  CaseLimits limits;
  limits.crowded_cases = true;
  const std::vector<GemmCase> cases = sample_cases({16}, limits);
  const double share = fraction(cases, crowded);
  EXPECT_GT(share, 0.05);
  EXPECT_LT(share, 0.2);
  for (const GemmCase& c : cases) {
    if (crowded(c)) {
      EXPECT_LE(c.problem.shape.m, 512) << c.to_string();
      EXPECT_GE(c.problem.shape.k, 192) << "many K tiles: " << c.to_string();
      EXPECT_LE(c.problem.shape.k, 512) << c.to_string();
    }
  }
}

// Shrinking runs after the generator has returned: a crowded case must still shrink (this once
// read a generator's dangling captures).
TEST(CaseGenerator, CrowdedCasesShrinkToOneByOneByOne) {
  CaseLimits limits;
  limits.crowded_cases = true;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    rc::Shrinkable<GemmCase> root = [&] {
      const rc::Gen<GemmCase> temporary = gen_gemm_case({16, 32}, limits);
      return temporary(rc::Random(seed));
    }();
    EXPECT_EQ(shrink_all_the_way(root).problem.shape, (GemmShape{1, 1, 1}));
  }
}

TEST(CaseGenerator, EachShrinkIsAValidProblem) {
  const rc::Gen<GemmCase> gen = gen_gemm_case({16, 32});
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const rc::Shrinkable<GemmCase> root = gen(rc::Random(seed));
    auto shrinks = root.shrinks();
    int seen = 0;
    while (auto shrink = shrinks.next()) {
      ASSERT_TRUE(shrink->value().problem.valid()) << shrink->value().to_string();
      if (++seen == 200) break;
    }
    EXPECT_GT(seen, 0) << root.value().to_string() << " has no shrinks";
  }
}

// --- requirements ---------------------------------------------------------------------------

// A template that states preconditions on the problem, and its one configuration.
KernelTemplate with_requirements(const std::string& requirements) {
  return parse_template("// tiletune: entry k\n// tiletune: param T 16\n" + requirements +
                            "// tiletune: block T\n// tiletune: grid 1\n",
                        "req.cu");
}
const Configuration kT16{{{"T", 16}}};

TEST(CaseRequirements, EveryCaseAndEveryShrinkMeetsThem) {
  const KernelTemplate tmpl = with_requirements(
      "// tiletune: require M % 8 == 0 && N % T == 0\n// tiletune: require lda % 4 == 0\n"
      "// tiletune: require ldc % 4 == 0 && K >= 3\n");
  const CaseRequirements requirements(tmpl, kT16);
  const rc::Gen<GemmCase> gen = gen_gemm_case({16}, {}, requirements, requirements.find_admissible());
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const rc::Shrinkable<GemmCase> root = gen(rc::Random(seed));
    ASSERT_TRUE(root.value().problem.valid()) << root.value().to_string();
    ASSERT_TRUE(tmpl.satisfies_requirements(kT16, root.value().problem)) << root.value().to_string();
    if (seed > 4) continue;  // shrinking all the way is slow: a few suffice
    auto shrinks = root.shrinks();
    for (int seen = 0; seen < 100; ++seen) {
      const auto shrink = shrinks.next();
      if (!shrink) break;
      ASSERT_TRUE(tmpl.satisfies_requirements(kT16, shrink->value().problem)) << shrink->value().to_string();
    }
    // All the way down: 1x1x1 repaired. M and N move to the nearest multiples; K >= 3 moves by a
    // whole tile, keeping the partial one (17 = 16 + 1); lda to the nearest multiple of 4 >= K.
    const GemmCase smallest = shrink_all_the_way(root);
    EXPECT_EQ(smallest.problem.shape, (GemmShape{8, 16, 17})) << smallest.to_string();
    EXPECT_EQ(smallest.problem.lda, 20) << smallest.to_string();
    EXPECT_EQ(smallest.problem.ldb, 16) << smallest.to_string();
    EXPECT_EQ(smallest.problem.ldc, 16) << smallest.to_string();
  }
}

TEST(CaseRequirements, RepairMovesEachSizeToTheNearestAdmissibleValue) {
  const KernelTemplate tmpl = with_requirements("// tiletune: require M % 8 == 0 && lda % 4 == 0\n");
  const CaseRequirements requirements(tmpl, kT16);
  GemmProblem p{{13, 5, 7}, 9, 5, 5};
  ASSERT_EQ(requirements.violated(p), "M % 8 == 0 && lda % 4 == 0");
  ASSERT_TRUE(requirements.repair(p));
  EXPECT_EQ(p, (GemmProblem{{16, 5, 7}, 8, 5, 5})) << p.to_string();
  EXPECT_EQ(requirements.violated(p), std::nullopt);
  GemmProblem one = GemmProblem::packed({1, 1, 1});
  ASSERT_TRUE(requirements.repair(one));
  EXPECT_EQ(one, (GemmProblem{{8, 1, 1}, 4, 1, 1})) << "never below 1, lda never below K";
}

TEST(CaseRequirements, CoupledSizesAndLargeModuliAreMetToo) {
  const KernelTemplate tmpl = with_requirements(
      "// tiletune: require M == N\n// tiletune: require K % 512 == 0 && ldb == N + 4\n");
  const CaseRequirements requirements(tmpl, kT16);
  const rc::Gen<GemmCase> gen = gen_gemm_case({16}, {}, requirements, requirements.find_admissible());
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    const GemmCase c = gen(rc::Random(seed)).value();
    ASSERT_TRUE(tmpl.satisfies_requirements(kT16, c.problem)) << c.to_string();
  }
}

TEST(CaseRequirements, ABoundIsMetByWholeTilesKeepingThePartialOne) {
  const KernelTemplate tmpl = with_requirements("// tiletune: require K >= 4 * T * 64 && M < 2 * T\n");
  const CaseRequirements requirements(tmpl, kT16);
  GemmProblem p{{40, 9, 70}, 75, 9, 9};
  ASSERT_TRUE(requirements.repair(p));
  // K: the first 70 + 16 k >= 4096; M: 40 - 16 < 32.
  EXPECT_EQ(p, (GemmProblem{{24, 9, 4102}, 4107, 9, 9})) << p.to_string();
}

TEST(CaseRequirements, ACaseMadeLargeByABoundComesBackDownInMAndN) {
  const KernelTemplate tmpl = with_requirements("// tiletune: require K >= 4 * T * 64\n");
  const CaseRequirements requirements(tmpl, kT16);
  // Draws of at most 79 x 79 x 79: every large case is the bound's doing.
  const CaseLimits small{4, 64, 40};
  const rc::Gen<GemmCase> gen = gen_gemm_case({16}, small, requirements, requirements.find_admissible());
  std::int64_t largest_m = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const GemmCase c = gen(rc::Random(seed)).value();
    const GemmShape& s = c.problem.shape;
    ASSERT_TRUE(tmpl.satisfies_requirements(kT16, c.problem)) << c.to_string();
    ASSERT_LE(s.m * s.n * s.k, std::int64_t(1) << 22) << c.to_string();
    largest_m = std::max(largest_m, s.m);
  }
  EXPECT_GT(largest_m, 16) << "M and N still vary";
}

// The shipped warp_tiled states tuning bounds on the shape (no tile more than twice the matrix,
// split K only with K >= 4 BK SPLIT_K): every configuration still gets cases that meet them.
TEST(CaseRequirements, EveryWarpTiledConfigurationHasCasesThatMeetItsRequirements) {
  const KernelTemplate tmpl =
      load_template(std::filesystem::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "warp_tiled.cu");
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  ASSERT_GT(configs.size(), 400u);
  for (const Configuration& config : configs) {
    const CaseRequirements requirements(tmpl, config);
    const std::optional<GemmProblem> admissible = requirements.find_admissible();
    ASSERT_TRUE(admissible.has_value()) << config.to_string() << ": " << requirements.why_none();
    const rc::Gen<GemmCase> gen =
        gen_gemm_case(remainder_moduli(config), {}, requirements, admissible);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const GemmCase c = gen(rc::Random(seed)).value();
      ASSERT_TRUE(tmpl.satisfies_requirements(config, c.problem)) << config.to_string() << " " << c.to_string();
    }
  }
}

TEST(CaseRequirements, TuningLimitsAreNoPreconditionOfTheFuzz) {
  const KernelTemplate tmpl = with_requirements("// tiletune: tune_if M >= 100 && K % 8 == 0\n");
  const CaseRequirements requirements(tmpl, kT16);
  EXPECT_TRUE(requirements.empty());
  // warp_tiled's large tiles and split-K slices are fuzzed on small and thin cases too.
  const KernelTemplate warp_tiled =
      load_template(std::filesystem::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "warp_tiled.cu");
  const Configuration big = warp_tiled.parse_configuration(
      "BM=128,BN=128,BK=8,TM=8,TN=8,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0");
  GemmProblem small = GemmProblem::packed({3, 5, 7});
  EXPECT_EQ(CaseRequirements(warp_tiled, big).violated(small), std::nullopt);
  EXPECT_TRUE(CaseRequirements(warp_tiled, big).repair(small));
  EXPECT_EQ(small, GemmProblem::packed({3, 5, 7})) << "nothing to repair";
}

TEST(CaseRequirements, NoneMeetableIsSaidNamingTheRequirement) {
  for (const std::string requirement : {"lda < 0", "M % 2 == 0 && M % 2 == 1", "T == 8"}) {
    const KernelTemplate tmpl = with_requirements("// tiletune: require K >= 1\n// tiletune: require " +
                                                  requirement + "\n");
    const CaseRequirements requirements(tmpl, kT16);
    EXPECT_EQ(requirements.find_admissible(), std::nullopt) << requirement;
    EXPECT_THAT(requirements.why_none(), ::testing::StartsWith("no case meets requirement '" + requirement + "'"));
  }
  EXPECT_TRUE(CaseRequirements().empty());
  EXPECT_NE(CaseRequirements(with_requirements(""), kT16).find_admissible(), std::nullopt);
}

TEST(GenDimension, SizesAreWholeTilesPlusARemainderOrSmall) {
  const rc::Gen<std::int64_t> gen = gen_dimension({16}, 2);
  int partial = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    const std::int64_t d = gen(rc::Random(seed)).value();
    ASSERT_GE(d, 1);
    ASSERT_LE(d, 69);  // max(2 * 16 + 15, the small range [1, 70))
    if (d % 16 != 0) ++partial;
  }
  EXPECT_GT(partial, 3000 * 3 / 4);
}

TEST(GenDimension, AtSizeZeroOnlyTheSmallestSizesAppear) {
  // RapidCheck starts a run at size 0: the first cases are the tiniest.
  const rc::Gen<std::int64_t> gen = gen_dimension({16, 32}, 4);
  for (std::uint64_t seed = 1; seed <= 200; ++seed) EXPECT_EQ(gen(rc::Random(seed), 0).value(), 1);
}

}  // namespace
}  // namespace tiletune
