// library_bench without a GPU: its arguments, its report's tables and JSON, and its one line when
// there is no GPU to measure on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tools/bench/bench_suite.h"
#include "tools/bench/library_bench_options.h"
#include "tools/bench/library_bench_report.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

namespace fs = std::filesystem;

// A folder holding a file to pass as --db (the options only check that it exists).
class LibraryBenchOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("library_bench_test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "bundle");
    std::ofstream(db()) << "not read by the options\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return (dir_ / "tuned.db").string(); }
  std::string bundle() const { return (dir_ / "bundle").string(); }

  LibraryBenchOptions parse(std::vector<std::string> args) {
    args.insert(args.begin(), "library_bench");
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    return parse_library_bench_options(int(argv.size()), argv.data());
  }
  std::string usage_error(const std::vector<std::string>& args) {
    try {
      parse(args);
    } catch (const LibraryBenchUsageError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no usage error";
    return "";
  }

  fs::path dir_;
};

TEST_F(LibraryBenchOptionsTest, DefaultsAreBenchsSuiteAndWarpTiled) {
  const LibraryBenchOptions options = parse({"--db", db()});
  EXPECT_EQ(options.db, db());
  EXPECT_EQ(options.kernel, "warp_tiled");
  EXPECT_EQ(options.bundle, "");
  EXPECT_EQ(options.out, "");
  ASSERT_EQ(options.shapes.size(), std::size(kBenchSuite));
  EXPECT_EQ(options.shapes.front(), (GemmShape{1024, 1024, 1024}));
  EXPECT_EQ(options.shapes.back(), (GemmShape{17, 33, 65}));
  EXPECT_EQ(options.overhead_shape(), (GemmShape{17, 33, 65}));
  EXPECT_EQ(options.batches, 200);
  EXPECT_EQ(options.calls_per_batch, 100);
}

TEST_F(LibraryBenchOptionsTest, TakesEveryOption) {
  const LibraryBenchOptions options =
      parse({"--db", db(), "--kernel", "tiled", "--bundle", bundle(), "--shape", "512x256x256",
             "--shape", "64x64x4096", "--out", "report.json", "--batches", "5", "--calls-per-batch", "7"});
  EXPECT_EQ(options.kernel, "tiled");
  EXPECT_EQ(options.bundle, bundle());
  EXPECT_EQ(options.out, "report.json");
  EXPECT_EQ(options.shapes, (std::vector<GemmShape>{{512, 256, 256}, {64, 64, 4096}}));
  EXPECT_EQ(options.overhead_shape(), (GemmShape{64, 64, 4096}));  // the fewest flops
  EXPECT_EQ(options.batches, 5);
  EXPECT_EQ(options.calls_per_batch, 7);
}

TEST_F(LibraryBenchOptionsTest, BadArgumentsAreOneLineEach) {
  EXPECT_THAT(usage_error({}), HasSubstr("--db"));
  EXPECT_EQ(usage_error({"--db", (dir_ / "absent.db").string()}),
            "--db " + (dir_ / "absent.db").string() + ": no such database file");
  EXPECT_EQ(usage_error({"--db", db(), "--bundle", db()}), "--bundle " + db() + ": no such folder");
  EXPECT_THAT(usage_error({"--db", db(), "--shape", "12x0x3"}), MatchesRegex("--shape: .*12x0x3.*"));
  EXPECT_THAT(usage_error({"--db", db(), "--batches", "0"}), HasSubstr("--batches"));
  EXPECT_THAT(usage_error({"--db", db(), "--frobnicate"}), HasSubstr("--frobnicate"));
}

TEST_F(LibraryBenchOptionsTest, HelpIsTextToPrint) {
  try {
    parse({"--help"});
    FAIL() << "no help";
  } catch (const LibraryBenchHelp& help) {
    EXPECT_THAT(help.text, HasSubstr("--calls-per-batch"));
  }
}

TEST(LibraryBenchReport, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
}

LibraryBenchReport sample_report() {
  LibraryBenchReport report;
  report.gpu = "NVIDIA H100 80GB HBM3";
  report.db = "tuned.db";
  report.kernel = "warp_tiled";
  report.bundle = "bundle";
  report.overhead = OverheadResult{{17, 33, 65}, "BM=32,BN=32", 200, 100, 2.5, 3.0};
  report.first_call = FirstCallResult{900, 12, 8, 0.05};
  // cuBLAS 1 ms: the library at 2 ms is half as fast (0.5), the direct launch at 0.5 ms twice (2).
  report.suite.push_back({{1024, 1024, 1024}, "BM=64", true, "BM=64", 2.0, 0.5, 1.0});
  report.suite.push_back({{17, 33, 65}, "BM=32", false, "BM=16", 0.5, 2.0, 1.0});
  report.unrecorded.push_back({4096, 4096, 64});
  return report;
}

TEST(LibraryBenchReport, RatiosAreBenchsAndTheirGeometricMeans) {
  const LibraryBenchReport report = sample_report();
  EXPECT_DOUBLE_EQ(report.suite[0].library_ratio(), 0.5);
  EXPECT_DOUBLE_EQ(report.suite[0].direct_ratio(), 2.0);
  EXPECT_DOUBLE_EQ(*report.library_geomean(), 1.0);  // sqrt(0.5 * 2)
  EXPECT_DOUBLE_EQ(*report.direct_geomean(), 1.0);
  EXPECT_FALSE(LibraryBenchReport{}.library_geomean().has_value());
}

TEST(LibraryBenchReport, JsonHoldsEveryNumber) {
  const nlohmann::json json = report_json(sample_report());
  EXPECT_EQ(json["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(json["kernel"], "warp_tiled");
  EXPECT_EQ(json["bundle"], "bundle");
  EXPECT_EQ(json["overhead"]["shape"], "17x33x65");
  EXPECT_EQ(json["overhead"]["config"], "BM=32,BN=32");
  EXPECT_EQ(json["overhead"]["batches"], 200);
  EXPECT_EQ(json["overhead"]["calls_per_batch"], 100);
  EXPECT_DOUBLE_EQ(json["overhead"]["direct_us_per_call"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(json["overhead"]["library_us_per_call"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(json["overhead"]["difference_us"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(json["overhead"]["target_us"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(json["first_call"]["cold_ms"].get<double>(), 900);
  EXPECT_DOUBLE_EQ(json["first_call"]["warm_disk_ms"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(json["first_call"]["bundle_ms"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(json["first_call"]["second_call_ms"].get<double>(), 0.05);
  ASSERT_EQ(json["suite"].size(), 2u);
  const nlohmann::json& row = json["suite"][1];
  EXPECT_EQ(row["shape"], "17x33x65");
  EXPECT_EQ(row["plan_config"], "BM=32");
  EXPECT_EQ(row["plan_exact"], false);
  EXPECT_EQ(row["bench_config"], "BM=16");
  EXPECT_DOUBLE_EQ(row["library_ms"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(row["direct_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(row["cublas_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(row["library_ratio"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(row["direct_ratio"].get<double>(), 0.5);
  EXPECT_EQ(json["unrecorded"], nlohmann::json::array({"4096x4096x64"}));
  EXPECT_DOUBLE_EQ(json["library_geomean_ratio"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(json["direct_geomean_ratio"].get<double>(), 1.0);
}

TEST(LibraryBenchReport, JsonOfPartsNotMeasuredIsNull) {
  LibraryBenchReport report;
  report.first_call = FirstCallResult{900, 12, std::nullopt, 0.05};
  const nlohmann::json json = report_json(report);
  EXPECT_TRUE(json["overhead"].is_null());
  EXPECT_TRUE(json["bundle"].is_null());
  EXPECT_TRUE(json["first_call"]["bundle_ms"].is_null());
  EXPECT_EQ(json["suite"], nlohmann::json::array());
  EXPECT_TRUE(json["library_geomean_ratio"].is_null());
}

TEST(LibraryBenchReport, TablesSayWhatTheyMeasure) {
  const LibraryBenchReport report = sample_report();
  EXPECT_THAT(overhead_table(*report.overhead), HasSubstr("difference                              0.500"));
  EXPECT_THAT(first_call_table(*report.first_call), HasSubstr("bundle (its cubin, an empty cache)"));
  const std::string suite = suite_table(report);
  EXPECT_THAT(suite, HasSubstr("bench times another configuration: BM=16"));
  EXPECT_THAT(suite, HasSubstr("4096x4096x64     no correct configuration recorded"));
  EXPECT_THAT(suite, HasSubstr("over 2 shapes: library 1.000, direct 1.000"));
  const std::string summary = summary_table(report);
  EXPECT_THAT(summary, HasSubstr("0.500 us  (target < 2 us: met)"));
  EXPECT_THAT(summary, HasSubstr("shapes without a record"));
  LibraryBenchReport slow = report;
  slow.overhead->library_us = 5.0;
  EXPECT_THAT(summary_table(slow), HasSubstr("2.500 us  (target < 2 us: MISSED)"));
}

// Without a GPU (or, on the GPU host, asking for one that is not there) library_bench says so in
// one line and exits 3, before it reads the database.
TEST_F(LibraryBenchOptionsTest, WithoutAGpuItIsOneLineAndExit3) {
  const fs::path binary = fs::path(TILETUNE_BINARY_DIR) / "tools" / "library_bench";
  const std::string command = "TILETUNE_DEVICE=4095 '" + binary.string() + "' --db '" + db() +
                              "' >'" + (dir_ / "out").string() + "' 2>'" + (dir_ / "err").string() + "'";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  std::ifstream err_file(dir_ / "err");
  const std::string err{std::istreambuf_iterator<char>(err_file), {}};
  EXPECT_EQ(WEXITSTATUS(status), 3) << err;
  EXPECT_THAT(err, MatchesRegex("library_bench: no (CUDA driver|usable GPU|GPU number 4095)[^\n]*\n"));
}

}  // namespace
}  // namespace tiletune
