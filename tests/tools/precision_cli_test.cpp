// The declared precision as a user meets it: query serves only templates at least as accurate as
// --precision (fp32 > tf32x3 > tf32, fp32 by default) and says which it answered with, list shows
// each template's, the fuzzer judges a template by its own (tests/fixtures/kernels/tf32_naive.cu
// passes as tf32 and fails as fp32), and bench times the winners of one precision against cuBLAS
// in the matching mode (on a GPU).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/result_store.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/gpu_device.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::run_tiletune;
using testing_tools::TiletuneRun;

namespace fs = std::filesystem;

using testing_support::kTemplates;
const fs::path kTf32Naive =
    fs::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels" / "tf32_naive.cu";
const std::string kGpu = "NVIDIA H200";
const GemmShape kShape{1024, 1024, 1024};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

GpuRecord recorded_gpu() {
  GpuRecord gpu;
  gpu.name = kGpu;
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  gpu.clock_khz = 1980000;
  gpu.memory_bytes = 150'000'000'000ULL;
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  return gpu;
}

ResultRecord result_of(const std::string& name, const std::string& hash, double median_ms) {
  ResultRecord r;
  r.template_name = name;
  r.template_hash = hash;
  r.config = "TILE=16";
  r.shape = kShape;
  r.median_ms = median_ms;
  r.min_ms = r.max_ms = median_ms;
  r.runs = 20;
  r.tflops = kShape.flops() / (median_ms * 1e-3) / 1e12;
  return r;
}

// One template of each precision at one shape; the less accurate, the faster.
void prepare_database(const fs::path& path) {
  ResultStore store(path);
  const GpuRecord gpu = recorded_gpu();
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template({"simt", "00000000000000a1", "simt.cu", "// simt\n", Precision::fp32});
  store.register_template(
      {"split", "00000000000000a2", "split.cu", "// split\n", Precision::tf32x3});
  store.register_template(
      {"tensor", "00000000000000a3", "tensor.cu", "// tensor\n", Precision::tf32});
  store.record_result(gpu_id, gpu, result_of("simt", "00000000000000a1", 3.0));
  store.record_result(gpu_id, gpu, result_of("split", "00000000000000a2", 2.0));
  store.record_result(gpu_id, gpu, result_of("tensor", "00000000000000a3", 1.0));
}

bool gpu_present(std::string* why) {
  try {
    GpuDevice device;
    return true;
  } catch (const GpuUnavailable& e) {
    *why = e.what();
    return false;
  }
}

class PrecisionCli : public testing_tools::TiletuneFolderTest {
 protected:
  PrecisionCli() : TiletuneFolderTest("tiletune_precision_cli_") {}

  fs::path db() const { return dir_ / "results.db"; }

  // The query's JSON answer at kShape, --precision as given (none: the default).
  nlohmann::json answer(const std::string& precision) const {
    std::vector<std::string> args = {"query", "--shape", kShape.to_string(), "--db", db().string(),
                                     "--gpu", kGpu, "--json"};
    if (!precision.empty()) args.insert(args.end(), {"--precision", precision});
    const TiletuneRun run = tiletune(args);
    EXPECT_EQ(run.exit_code, 0) << run;
    try {
      return nlohmann::json::parse(run.out);
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << "not JSON (" << e.what() << "):\n" << run;
      return {};
    }
  }
};

// --- query and list -------------------------------------------------------------------------

TEST_F(PrecisionCli, QueryServesOnlyTemplatesAtLeastAsAccurateAsAsked) {
  prepare_database(db());
  const nlohmann::json fp32 = answer("");
  EXPECT_EQ(fp32.value("template", ""), "simt");
  EXPECT_EQ(fp32.value("precision", ""), "fp32");
  EXPECT_EQ(answer("fp32").value("template", ""), "simt");
  const nlohmann::json tf32x3 = answer("tf32x3");
  EXPECT_EQ(tf32x3.value("template", ""), "split");
  EXPECT_EQ(tf32x3.value("precision", ""), "tf32x3");
  const nlohmann::json tf32 = answer("tf32");
  EXPECT_EQ(tf32.value("template", ""), "tensor");
  EXPECT_EQ(tf32.value("precision", ""), "tf32");

  const TiletuneRun text = tiletune({"query", "--shape", kShape.to_string(), "--db", db().string(),
                                     "--gpu", kGpu});
  EXPECT_EQ(text.exit_code, 0) << text;
  EXPECT_THAT(text.out, HasSubstr("simt [TILE=16]")) << text;
  EXPECT_THAT(text.out, HasSubstr("precision fp32")) << text;
}

TEST_F(PrecisionCli, QueryOfANamedTemplateBelowThePrecisionSaysHowToAcceptIt) {
  prepare_database(db());
  const std::vector<std::string> query = {"query", "--shape", kShape.to_string(), "--db",
                                          db().string(), "--gpu", kGpu, "--kernel", "tensor"};
  const TiletuneRun refused = tiletune(query);
  expect_one_line_failure(refused, 1);
  EXPECT_THAT(refused.err, HasSubstr("tensor declares precision tf32, below the lowest asked for "
                                     "(fp32): --precision tf32 accepts it"))
      << refused;
  std::vector<std::string> accepting = query;
  accepting.insert(accepting.end(), {"--precision", "tf32"});
  const TiletuneRun accepted = tiletune(accepting);
  EXPECT_EQ(accepted.exit_code, 0) << accepted;
  EXPECT_THAT(accepted.out, HasSubstr("tensor [TILE=16]")) << accepted;
  // tf32x3 is more accurate than tf32 and less than fp32.
  accepting = query;
  accepting.back() = "split";
  accepting.insert(accepting.end(), {"--precision", "tf32"});
  EXPECT_EQ(tiletune(accepting).exit_code, 0);
}

TEST_F(PrecisionCli, QueryWithOnlyLessAccurateTemplatesRecordedSaysWhatItLeftOut) {
  {
    ResultStore store(db());
    const GpuRecord gpu = recorded_gpu();
    const std::int64_t gpu_id = store.register_gpu(gpu);
    store.register_template(
        {"tensor", "00000000000000a3", "tensor.cu", "// tensor\n", Precision::tf32});
    store.record_result(gpu_id, gpu, result_of("tensor", "00000000000000a3", 1.0));
  }
  const TiletuneRun run = tiletune({"query", "--shape", kShape.to_string(), "--db", db().string(),
                                    "--gpu", kGpu, "--precision", "tf32x3"});
  expect_one_line_failure(run, 1);
  EXPECT_THAT(run.err, HasSubstr("(1 template of a precision below tf32x3 left out: --precision "
                                 "accepts it)"))
      << run;
}

TEST_F(PrecisionCli, AnUnknownPrecisionIsBadInput) {
  prepare_database(db());
  for (const std::string command : {"query", "bench"}) {
    std::vector<std::string> args = {command, "--precision", "fp16", "--db", db().string()};
    if (command == "query") args.insert(args.end(), {"--shape", "64x64x64"});
    const TiletuneRun run = tiletune(args);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr("--precision fp16: not one of fp32, tf32, tf32x3")) << run;
  }
}

TEST_F(PrecisionCli, ListShowsEachTemplatesPrecision) {
  prepare_database(db());
  const TiletuneRun run = tiletune({"list", "--db", db().string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("simt 00000000000000a1 simt.cu precision fp32")) << run;
  EXPECT_THAT(run.out, HasSubstr("split 00000000000000a2 split.cu precision tf32x3")) << run;
  EXPECT_THAT(run.out, HasSubstr("tensor 00000000000000a3 tensor.cu precision tf32")) << run;
}

// --- the fuzzer judges by the declared precision --------------------------------------------

TEST_F(PrecisionCli, ATf32TemplatePassesItsOwnBoundAndFailsAsFp32) {
  const auto fuzz = [](const fs::path& kernel) {
    return std::vector<std::string>{"fuzz", kernel.string(), "--backend", "cpu", "--cases", "60",
                                    "--config", "BLOCK_X=16,BLOCK_Y=4"};
  };
  const TiletuneRun as_tf32 = tiletune(fuzz(kTf32Naive));
  EXPECT_EQ(as_tf32.exit_code, 0) << as_tf32;

  // The same arithmetic declared fp32: the fp32 bound, K * 2^-24, catches the rounded inputs.
  std::string source = read_file(kTf32Naive);
  const std::string declaration = "// tiletune: precision tf32\n";
  source.replace(source.find(declaration), declaration.size(), "// tiletune: precision fp32\n");
  std::ofstream(dir_ / "tf32_declared_fp32.cu") << source;
  const TiletuneRun as_fp32 = tiletune(fuzz(dir_ / "tf32_declared_fp32.cu"));
  EXPECT_EQ(as_fp32.exit_code, 1) << as_fp32;
  EXPECT_THAT(as_fp32.out + as_fp32.err, HasSubstr("wrong element")) << as_fp32;
}

// --- bench ----------------------------------------------------------------------------------

TEST_F(PrecisionCli, BenchRefusesTemplatesOfAnotherPrecisionBeforeLookingForAGpu) {
  const TiletuneRun run = tiletune(
      {"bench", "--precision", "tf32", (kTemplates / "tiled.cu").string(), "--db", db().string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err,
              HasSubstr("none of the templates given declares precision tf32: tiled (fp32)"))
      << run;
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(PrecisionCli, BenchWithoutAGpuIsOneLine) {
  std::string why;
  if (gpu_present(&why)) GTEST_SKIP() << "a GPU is present: this checks the no-GPU path";
  const TiletuneRun run = tiletune({"bench", "--precision", "tf32", kTf32Naive.string(), "--db",
                                    db().string()});
  expect_one_line_failure(run, 3);
}

// On a GPU: the TF32 fixture tuned and benched against cuBLAS in TF32, errors beside the speeds,
// and the row recorded with its precision (what report labels it by).
TEST_F(PrecisionCli, BenchOfTf32WinnersIsAgainstCublasTf32WithTheErrorsOfBoth) {
  std::string why;
  if (!gpu_present(&why)) GTEST_SKIP() << "no GPU: " << why;
  const TiletuneRun run = tiletune({"bench", "--precision", "tf32", kTf32Naive.string(), "--shape",
                                    "256x256x256", "--shape", "129x65x257", "--db", db().string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("precision tf32 against cuBLAS TF32")) << run;
  for (const std::string shape : {"256x256x256", "129x65x257"}) {
    bool found = false;
    for (const std::string& line : lines_of(run.out)) {
      if (line.rfind(shape, 0) != 0) continue;
      found = true;
      EXPECT_THAT(line, HasSubstr("tf32_naive")) << run;
      EXPECT_THAT(line, ::testing::ContainsRegex("[0-9.e+-]+u [0-9.e+-]+ .*[0-9.e+-]+u [0-9.e+-]+"))
          << run;
    }
    EXPECT_TRUE(found) << shape << " not benched:\n" << run;
  }
  const ResultStore store(db(), ResultStore::Access::read_only);
  const std::vector<BenchRecord> rows = store.bench_results();
  ASSERT_EQ(rows.size(), 2u);
  for (const BenchRecord& row : rows) EXPECT_EQ(row.precision, Precision::tf32);
  // An fp32 bench of the same database finds no winner of its precision.
  const TiletuneRun fp32 = tiletune({"bench", "--shape", "256x256x256", "--db", db().string()});
  EXPECT_EQ(fp32.exit_code, 1) << fp32;
  EXPECT_THAT(fp32.out, HasSubstr("no correct configuration of precision fp32 recorded")) << fp32;
}

}  // namespace
}  // namespace tiletune
