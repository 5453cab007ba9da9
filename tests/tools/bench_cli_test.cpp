// bench's BLAS contract options as a user meets them: --op, --batch and --epilogue, a bad value
// one line and exit 2 before any GPU is looked for, bench without a GPU its usual one line, and
// on a GPU the contract benched against cuBLAS and cuBLASLt, or skipped where the recorded
// template cannot serve it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/gpu_device.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::TiletuneRun;

namespace fs = std::filesystem;

using testing_support::kTemplates;
const fs::path kTf32Naive =
    fs::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels" / "tf32_naive.cu";

bool gpu_present(std::string* why) {
  try {
    GpuDevice device;
    return true;
  } catch (const GpuUnavailable& e) {
    *why = e.what();
    return false;
  }
}

class BenchCli : public testing_tools::TiletuneFolderTest {
 protected:
  BenchCli() : TiletuneFolderTest("tiletune_bench_cli_") {}

  fs::path db() const { return dir_ / "results.db"; }

  TiletuneRun bench(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"bench", "--db", db().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return tiletune(args);
  }
};

TEST_F(BenchCli, BadContractOptionsAreOneLineBeforeLookingForAGpu) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--op", "tx"}, "--op: tx not in {nn,nt,tn,tt}"},
      {{"--op", "NT"}, "--op: NT not in {nn,nt,tn,tt}"},
      {{"--batch", "0"}, "--batch: must be positive, not 0"},
      {{"--batch", "-2"}, "--batch: must be positive, not -2"},
      {{"--batch", "two"}, "--batch"},
      {{"--epilogue", "swish"}, "--epilogue: swish not in {none,bias,relu,bias_relu,gelu,bias_gelu}"},
      // Valid alone, too large for its shape: the problem says why.
      {{"--batch", "3000000000", "--shape", "64x64x64"},
       "--batch 3000000000 at 64x64x64: batch=3000000000 is not in [1, 2147483647]"},
  };
  for (const auto& [options, said] : cases) {
    const TiletuneRun run = bench(options);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(said)) << run;
    EXPECT_FALSE(fs::exists(db())) << run;
  }
}

TEST_F(BenchCli, HelpSaysTheContractAndTheYardsticks) {
  const TiletuneRun run = tiletune({"bench", "--help"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("--op TEXT:{nn,nt,tn,tt}=nn")) << run;
  EXPECT_THAT(run.out, HasSubstr("--batch INT:POSITIVE=1")) << run;
  EXPECT_THAT(run.out, HasSubstr("--epilogue TEXT:{none,bias,relu,bias_relu,gelu,bias_gelu}=none"))
      << run;
  EXPECT_THAT(run.out, HasSubstr("alpha 1 and beta 0")) << run;
  EXPECT_THAT(run.out, HasSubstr("cuBLASLt")) << run;
}

TEST_F(BenchCli, ContractBenchWithoutAGpuIsOneLine) {
  std::string why;
  if (gpu_present(&why)) GTEST_SKIP() << "a GPU is present: this checks the no-GPU path";
  const TiletuneRun run = bench({(kTemplates / "naive.cu").string(), "--shape", "64x64x64", "--op",
                                 "tn", "--batch", "3", "--epilogue", "bias_gelu"});
  expect_one_line_failure(run, 3);
  EXPECT_FALSE(fs::exists(db())) << run;
}

// On a GPU: naive (which serves the whole contract) tuned for the shape's plain product, then
// benched at op=tn, a batch of 3 and bias_gelu against both yardsticks; nothing recorded.
TEST_F(BenchCli, TheContractIsBenchedAgainstCublasAndCublasLt) {
  std::string why;
  if (!gpu_present(&why)) GTEST_SKIP() << "no GPU: " << why;
  const TiletuneRun run = bench({(kTemplates / "naive.cu").string(), "--shape", "96x80x72",
                                 "--shape", "33x17x65", "--op", "tn", "--batch", "3",
                                 "--epilogue", "bias_gelu"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("problems op=tn batch=3 bias_gelu (alpha 1, beta 0, packed)"))
      << run;
  for (const std::string shape : {"96x80x72", "33x17x65"}) {
    bool found = false;
    for (const std::string& line : lines_of(run.out)) {
      if (line.rfind(shape, 0) != 0) continue;
      found = true;
      EXPECT_THAT(line, HasSubstr("op=tn batch=3 bias_gelu")) << run;
      EXPECT_THAT(line, HasSubstr("naive")) << run;
    }
    EXPECT_TRUE(found) << shape << " not benched:\n" << run;
  }
  EXPECT_THAT(run.out, HasSubstr("geometric mean of ratios over 2 shapes:")) << run;
  EXPECT_THAT(run.out, HasSubstr("vs cuBLAS SGEMM + kernel")) << run;
  const ResultStore store(db(), ResultStore::Access::read_only);
  EXPECT_TRUE(store.bench_results().empty());
}

// On a GPU: a template that serves no transpose is skipped in one line, and the run says so in
// its exit code.
TEST_F(BenchCli, ARecordThatCannotServeTheContractIsSkipped) {
  std::string why;
  if (!gpu_present(&why)) GTEST_SKIP() << "no GPU: " << why;
  const TiletuneRun run = bench({"--precision", "tf32", kTf32Naive.string(), "--shape",
                                 "128x128x128", "--op", "nt"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, ::testing::ContainsRegex(
                           "128x128x128 +skipped: no record serves op=nt batch=1 none; the best "
                           "recorded, tf32_naive \\["))
      << run;
  EXPECT_THAT(run.out, HasSubstr("serves no transposed B (op_b=t)")) << run;
}

}  // namespace
}  // namespace tiletune
