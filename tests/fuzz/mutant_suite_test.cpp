// Mutant suites: the shipped ones apply to today's templates, and a suite that no longer fits its
// template (or is malformed) is an error that names the mutant, never a mutant silently equal to
// the original.
#include "fuzz/mutant_suite.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tuner/core/configurations.h"

namespace tiletune {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSource = TILETUNE_SOURCE_DIR;

class MutantSuiteFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::path(TILETUNE_BINARY_DIR) / "mutant_suite_test" /
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(folder_ / name) << text;
    return folder_ / name;
  }
  // A suite over a copy of tiled.cu beside it.
  fs::path suite(const std::string& mutants) {
    fs::copy_file(kSource / "kernels_src" / "tiled.cu", folder_ / "tiled.cu",
                  fs::copy_options::overwrite_existing);
    return write("suite.json", R"({"template": "tiled.cu", "mutants": )" + mutants + "}");
  }
  std::string load_error(const fs::path& path) {
    try {
      load_mutant_suite(path);
    } catch (const MutantSuiteError& e) {
      return e.what();
    }
    return "";
  }
  fs::path folder_;
};

TEST(ShippedMutantSuites, EveryMutantAppliesAndDiffersFromItsTemplate) {
  for (const char* name :
       {"tiled.json", "naive.json", "warp_tiled.json", "tf32_mma.json", "tf32x3_mma.json",
        "tf32_wgmma.json", "tf32_wgmma_specialized.json", "tf32x3_wgmma.json",
        "tf32_wgmma_rounded_loads.json", "tf32_wgmma_transposed_b.json", "tf32_wgmma_tma.json"}) {
    const MutantSuite suite = load_mutant_suite(kSource / "fuzz" / "mutants" / name);
    ASSERT_FALSE(suite.mutants.empty()) << name;
    for (const Mutant& mutant : suite.mutants) {
      const KernelTemplate mutated = suite.apply(mutant);
      EXPECT_NE(mutated.source, suite.original.source) << mutant.name;
      EXPECT_EQ(mutated.name, suite.original.name + "~" + mutant.name);
      EXPECT_EQ(mutated.path, suite.original.path);
      EXPECT_EQ(enumerate_configurations(mutated).size(),
                enumerate_configurations(suite.original).size())
          << mutant.name << " keeps the search space";
      EXPECT_FALSE(mutant.bug.empty()) << mutant.name;
    }
  }
}

TEST(ShippedMutantSuites, TiledCoversTheBugsTheFuzzerMustCatch) {
  const MutantSuite suite = load_mutant_suite(kSource / "fuzz" / "mutants" / "tiled.json");
  for (const char* name : {"missing_second_sync", "missing_load_mask", "missing_store_mask",
                           "wrong_swizzle_inverse", "leading_dimension_ignored",
                           "partial_k_tile_dropped", "index_overflow_32bit"}) {
    EXPECT_NO_THROW(suite.find(name)) << name;
  }
  EXPECT_FALSE(suite.find("index_overflow_32bit").gpu_only.empty());
  EXPECT_TRUE(suite.find("missing_store_mask").gpu_only.empty());
}

TEST(ShippedMutantSuites, WhereLimitsAMutantToTheConfigurationsItIsLiveIn) {
  const MutantSuite suite = load_mutant_suite(kSource / "fuzz" / "mutants" / "tiled.json");
  const Mutant& swizzle = suite.find("wrong_swizzle_inverse");
  EXPECT_TRUE(swizzle.live_in(suite.original, suite.original.parse_configuration("TILE=16,PAD=0,SWIZZLE=1")));
  EXPECT_FALSE(swizzle.live_in(suite.original, suite.original.parse_configuration("TILE=16,PAD=1,SWIZZLE=0")));
  const Mutant& store = suite.find("missing_store_mask");
  EXPECT_TRUE(store.live_in(suite.original, suite.original.parse_configuration("TILE=8,PAD=1,SWIZZLE=0")));
}

TEST_F(MutantSuiteFiles, AnEditThatNoLongerMatchesNamesTheMutant) {
  const fs::path path = suite(R"([{"name": "gone", "bug": "b",
                                    "replace": [{"from": "no such text", "to": ""}]}])");
  const std::string error = load_error(path);
  EXPECT_THAT(error, HasSubstr("mutant gone"));
  EXPECT_THAT(error, HasSubstr("occurs 0 times"));
}

TEST_F(MutantSuiteFiles, AnAmbiguousEditIsRefused) {
  const std::string error = load_error(
      suite(R"([{"name": "twice", "bug": "b", "replace": [{"from": "__syncthreads();", "to": ""}]}])"));
  EXPECT_THAT(error, HasSubstr("occurs 2 times"));
}

TEST_F(MutantSuiteFiles, MalformedSuitesAreRefusedWithTheirCause) {
  EXPECT_THAT(load_error(write("bad.json", "{ not json")), HasSubstr("not JSON"));
  EXPECT_THAT(load_error(write("none.json", R"({"mutants": []})")), HasSubstr("\"template\""));
  EXPECT_THAT(load_error(suite("[]")), HasSubstr("non-empty list"));
  EXPECT_THAT(load_error(suite(R"([{"name": "x", "replace": [{"from": "a", "to": "b"}]}])")),
              HasSubstr("missing \"bug\""));
  EXPECT_THAT(load_error(suite(R"([{"name": "x", "bug": "b", "where": "TILES > 8",
                                     "replace": [{"from": "float acc", "to": "double acc"}]}])")),
              HasSubstr("'TILES', not a parameter"));
  EXPECT_THAT(load_error(suite(R"([{"name": "x y", "bug": "b",
                                     "replace": [{"from": "float acc", "to": "double acc"}]}])")),
              HasSubstr("mutant name 'x y'"));
  EXPECT_THAT(load_error(write("missing.json", R"({"template": "absent.cu", "mutants": [1]})")),
              HasSubstr("absent.cu"));
  EXPECT_THAT(load_error(folder_ / "nowhere.json"), HasSubstr("cannot be read"));
}

TEST_F(MutantSuiteFiles, AMutantThatBreaksTheDeclarationsIsRefused) {
  const std::string error = load_error(suite(
      R"([{"name": "nodecl", "bug": "b", "replace": [{"from": "// tiletune: entry tiled_gemm", "to": ""}]}])"));
  EXPECT_THAT(error, HasSubstr("mutant nodecl breaks the template's declarations"));
}

}  // namespace
}  // namespace tiletune
