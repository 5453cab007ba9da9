// The tiletune binary as a user meets it: exit codes (tools/commands/command_line.h: 0 success,
// 1 findings, 2 bad input, 3 no GPU/driver/NVRTC), one "tiletune: " line on stderr per failure,
// and `query` against a database prepared here with ResultStore.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/result_store.h"
#include "tuner/gpu_device.h"

namespace tiletune {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

const fs::path kBinary = fs::path(TILETUNE_BINARY_DIR) / "tools" / "tiletune";
const fs::path kTemplates = fs::path(TILETUNE_SOURCE_DIR) / "kernels_src";
// Templates that are not shipped: test fixtures.
const fs::path kFixtureTemplates = fs::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Single quotes for /bin/sh.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Outcome {
  int exit_code = -1;
  std::string out, err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

std::ostream& operator<<(std::ostream& os, const Outcome& run) {
  return os << "exit " << run.exit_code << "\n--- stdout\n" << run.out << "--- stderr\n" << run.err;
}

// A folder of its own for each test, removed afterwards.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kBinary)) << kBinary << " was not built";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tiletune_cli_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs tiletune with the arguments, in dir_ (so a default ./tiletune.db lands there).
  Outcome tiletune(const std::vector<std::string>& args) const {
    std::string command = "cd " + quoted(dir_.string()) + " && " + quoted(kBinary.string());
    for (const std::string& arg : args) command += " " + quoted(arg);
    command += " >" + quoted((dir_ / "stdout").string()) + " 2>" + quoted((dir_ / "stderr").string());
    const int status = std::system(command.c_str());
    Outcome run;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.out = read_file(dir_ / "stdout");
    run.err = read_file(dir_ / "stderr");
    return run;
  }

  fs::path dir_;
};

// The failure contract: exactly one line on stderr, "tiletune: ...", and the exit code.
void expect_one_line_failure(const Outcome& run, int exit_code) {
  EXPECT_EQ(run.exit_code, exit_code) << run;
  const std::vector<std::string> lines = run.err_lines();
  ASSERT_EQ(lines.size(), 1u) << run;
  EXPECT_THAT(lines[0], StartsWith("tiletune: ")) << run;
  EXPECT_EQ(run.err.back(), '\n') << run;
}

bool gpu_present(std::string* why = nullptr) {
  try {
    GpuDevice device;
    return true;
  } catch (const GpuUnavailable& e) {
    if (why) *why = e.what();
    return false;
  }
}

#define SKIP_WITH_GPU()                                                                 \
  do {                                                                                  \
    if (gpu_present()) GTEST_SKIP() << "a GPU is present: this checks the no-GPU path"; \
  } while (0)

// --- bad input: exit 2 ----------------------------------------------------------------------

TEST_F(Cli, UnparsableShapesAreBadInput) {
  for (const char* shape : {"4096x", "0x1x1", "axbxc", "4096x4096", "1x1x1x1", "-1x2x3",
                            "99999999999x1x1"}) {
    SCOPED_TRACE(shape);
    const Outcome query = tiletune({"query", "--shape", shape, "--db", (dir_ / "none.db").string()});
    expect_one_line_failure(query, 2);
    EXPECT_THAT(query.err, HasSubstr(std::string("invalid shape '") + shape + "'"));

    const Outcome tune = tiletune({"tune", (kTemplates / "tiled.cu").string(), "--shape", shape});
    expect_one_line_failure(tune, 2);
    EXPECT_THAT(tune.err, HasSubstr("invalid shape"));
    EXPECT_FALSE(fs::exists(dir_ / "tiletune.db"));
  }
}

TEST_F(Cli, TemplateWithABadDeclarationIsBadInputNamingTheLine) {
  const fs::path bad = dir_ / "bad_decl.cu";
  write_file(bad,
             "// tiletune: entry k\n"
             "// tiletune: param T 8 16\n"
             "// tiletune: block T\n"
             "// tiletune: grid ceil_div(N, T\n"  // the parenthesis is never closed
             "extern \"C\" __global__ void k() {}\n");
  for (const char* command : {"compile", "fuzz", "tune"}) {
    SCOPED_TRACE(command);
    const Outcome run = tiletune({command, bad.string()});
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(bad.string() + ":4"));
  }
}

TEST_F(Cli, MissingTemplateFileIsBadInput) {
  const std::string missing = (dir_ / "missing.cu").string();
  for (const char* command : {"compile", "fuzz", "tune"}) {
    SCOPED_TRACE(command);
    const Outcome run = tiletune({command, missing});
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(missing));
  }
}

TEST_F(Cli, UnknownSubcommandOrOptionIsBadInput) {
  expect_one_line_failure(tiletune({"frobnicate"}), 2);
  expect_one_line_failure(tiletune({}), 2);
  const Outcome option = tiletune({"query", "--shape", "1x1x1", "--bogus"});
  expect_one_line_failure(option, 2);
  EXPECT_THAT(option.err, HasSubstr("--bogus"));
  const Outcome missing = tiletune({"query"});
  expect_one_line_failure(missing, 2);
  EXPECT_THAT(missing.err, HasSubstr("--shape"));
  const Outcome cases = tiletune({"fuzz", (kTemplates / "tiled.cu").string(), "--cases", "0"});
  expect_one_line_failure(cases, 2);
}

TEST_F(Cli, QueryOnAMissingDatabaseIsBadInputAndCreatesNothing) {
  const fs::path db = dir_ / "none.db";
  const Outcome run = tiletune({"query", "--shape", "64x64x64", "--db", db.string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr(db.string() + ": no such database"));
  EXPECT_FALSE(fs::exists(db));
  EXPECT_FALSE(fs::exists(dir_ / "tiletune.db"));
}

TEST_F(Cli, QueryOnAFileThatIsNotADatabaseIsBadInputAndLeavesItAlone) {
  const fs::path db = dir_ / "garbage.db";
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += char((i * 7919 + 13) % 251);
  write_file(db, garbage);
  const Outcome run = tiletune({"query", "--shape", "64x64x64", "--db", db.string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr(db.string()));
  EXPECT_EQ(read_file(db), garbage) << "the file was changed";
}

TEST_F(Cli, QueryOnADirectoryIsBadInput) {
  const Outcome run = tiletune({"query", "--shape", "64x64x64", "--db", dir_.string()});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr(dir_.string()));
}

// --- no GPU: exit 3 -------------------------------------------------------------------------

TEST_F(Cli, TuneWithoutAGpuIsAnEnvironmentErrorAndCreatesNoDatabase) {
  SKIP_WITH_GPU();
  const fs::path db = dir_ / "tuned.db";
  const Outcome run = tiletune({"tune", (kTemplates / "tiled.cu").string(), "--shape", "64x64x64",
                            "--db", db.string()});
  expect_one_line_failure(run, 3);
  EXPECT_THAT(run.err, AnyOf(HasSubstr("GPU"), HasSubstr("CUDA")));
  EXPECT_FALSE(fs::exists(db));
  EXPECT_FALSE(fs::exists(db.string() + "-wal"));
  EXPECT_FALSE(fs::exists(dir_ / "tiletune.db"));
}

TEST_F(Cli, FuzzWithoutAGpuIsAnEnvironmentError) {
  SKIP_WITH_GPU();
  const Outcome run = tiletune({"fuzz", (kTemplates / "tiled.cu").string(), "--cases", "5"});
  expect_one_line_failure(run, 3);
  EXPECT_THAT(run.err, AnyOf(HasSubstr("GPU"), HasSubstr("CUDA")));
}

TEST_F(Cli, FuzzChecksItsCaseBeforeLookingForAGpu) {
  const Outcome run = tiletune({"fuzz", (kTemplates / "tiled.cu").string(), "--config",
                            "TILE=16,PAD=0,SWIZZLE=0", "--case", "5x5x5 lda=2"});
  expect_one_line_failure(run, 2);
  EXPECT_THAT(run.err, HasSubstr("--case: "));
}

// --- compile: no GPU needed -----------------------------------------------------------------

TEST_F(Cli, CompileTiledForAmpereListsItsNineConfigurations) {
  const Outcome run = tiletune({"compile", (kTemplates / "tiled.cu").string(), "--arch", "sm_80"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, StartsWith("NVRTC ")) << run;
  EXPECT_THAT(run.out, HasSubstr(" for sm_80\n"));
  int rows = 0;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("tiled ", 0) == 0) {
      ++rows;
      EXPECT_THAT(line, HasSubstr("TILE=")) << line;
    }
  }
  EXPECT_EQ(rows, 9) << run;
  EXPECT_THAT(run.out, HasSubstr("9 configurations compiled for sm_80, 0 failed"));
  EXPECT_EQ(run.err, "");
}

TEST_F(Cli, CompileOfATemplateWithACudaErrorFindsItAndExitsOne) {
  const fs::path broken = dir_ / "broken.cu";
  write_file(broken,
             "// tiletune: entry broken_gemm\n"
             "// tiletune: param T 8 16\n"
             "// tiletune: block T\n"
             "// tiletune: grid 1\n"
             "extern \"C\" __global__ void broken_gemm(float* C) { C[threadIdx.x] = oops * TT_T }\n");
  const Outcome run = tiletune({"compile", broken.string(), "--arch", "sm_90"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("compile error"));
  EXPECT_THAT(run.out, HasSubstr("oops"));
  EXPECT_THAT(run.out, HasSubstr("0 configurations compiled for sm_90, 2 failed"));
}

// --- query against a prepared database ------------------------------------------------------

GpuRecord recorded_gpu(const std::string& name) {
  GpuRecord gpu;
  gpu.name = name;
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  gpu.clock_khz = 1980000;
  gpu.memory_bytes = 150'000'000'000ULL;
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  return gpu;
}

ResultRecord recorded_result(const std::string& config, GemmShape shape, double median_ms,
                             ResultStatus status = ResultStatus::ok) {
  ResultRecord r;
  r.template_name = "tiled";
  r.template_hash = "00000000000000aa";
  r.config = config;
  r.shape = shape;
  r.status = status;
  r.median_ms = median_ms;
  r.min_ms = median_ms * 0.9;
  r.max_ms = median_ms * 1.1;
  r.runs = 20;
  r.tflops = shape.flops() / (median_ms * 1e-3) / 1e12;
  r.registers = 40;
  r.static_shared_bytes = 2048;
  return r;
}

const GemmShape kSmall{1024, 1024, 1024};
const GemmShape kLarge{4096, 4096, 4096};

void prepare_database(const fs::path& path, const std::string& gpu_name) {
  ResultStore store(path);
  const GpuRecord gpu = recorded_gpu(gpu_name);
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template({"tiled", "00000000000000aa", "kernels_src/tiled.cu", "// tiled\n"});
  store.record_result(gpu_id, gpu, recorded_result("TILE=16,PAD=0,SWIZZLE=0", kSmall, 2.0));
  store.record_result(gpu_id, gpu, recorded_result("TILE=32,PAD=1,SWIZZLE=0", kSmall, 1.5));
  // Faster, but wrong: never an answer.
  store.record_result(gpu_id, gpu, recorded_result("TILE=8,PAD=0,SWIZZLE=0", kSmall, 0.5,
                                                   ResultStatus::wrong_result));
  store.record_result(gpu_id, gpu, recorded_result("TILE=32,PAD=0,SWIZZLE=1", kLarge, 90.0));
  store.record_result(gpu_id, gpu, recorded_result("TILE=16,PAD=1,SWIZZLE=0", kLarge, 80.0));
}

const std::string kGpu = "NVIDIA H200";

nlohmann::json parse_json(const Outcome& run) {
  try {
    return nlohmann::json::parse(run.out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "):\n" << run;
    return {};
  }
}

TEST_F(Cli, QueryJsonGivesTheFastestCorrectConfiguration) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  const Outcome run = tiletune({"query", "--shape", "1024x1024x1024", "--db", db.string(), "--gpu", kGpu, "--json"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err, "");
  const nlohmann::json answer = parse_json(run);
  EXPECT_EQ(answer.value("gpu", ""), kGpu);
  EXPECT_EQ(answer.value("shape", ""), "1024x1024x1024");
  EXPECT_EQ(answer.value("recorded_shape", ""), "1024x1024x1024");
  EXPECT_EQ(answer.value("exact", false), true);
  EXPECT_EQ(answer.value("template", ""), "tiled");
  EXPECT_EQ(answer.value("template_hash", ""), "00000000000000aa");
  EXPECT_EQ(answer.value("config", ""), "TILE=32,PAD=1,SWIZZLE=0");
  EXPECT_DOUBLE_EQ(answer.value("median_ms", 0.0), 1.5);
  EXPECT_EQ(answer.value("runs", 0), 20);
  EXPECT_EQ(answer.value("registers", 0), 40);
  EXPECT_NEAR(answer.value("tflops", 0.0), kSmall.flops() / 1.5e-3 / 1e12, 1e-9);
}

TEST_F(Cli, QueryOfAnUntunedShapeAnswersWithTheNearestRecordedShape) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  {
    const Outcome run = tiletune({"query", "--shape", "3000x3000x2500", "--db", db.string(), "--gpu", kGpu, "--json"});
    ASSERT_EQ(run.exit_code, 0) << run;
    const nlohmann::json answer = parse_json(run);
    EXPECT_EQ(answer.value("shape", ""), "3000x3000x2500");
    EXPECT_EQ(answer.value("recorded_shape", ""), "4096x4096x4096");
    EXPECT_EQ(answer.value("exact", true), false);
    EXPECT_EQ(answer.value("config", ""), "TILE=16,PAD=1,SWIZZLE=0");
  }
  {
    const Outcome run = tiletune({"query", "--shape", "1000x1100x900", "--db", db.string(), "--gpu", kGpu, "--json"});
    ASSERT_EQ(run.exit_code, 0) << run;
    const nlohmann::json answer = parse_json(run);
    EXPECT_EQ(answer.value("recorded_shape", ""), "1024x1024x1024");
    EXPECT_EQ(answer.value("config", ""), "TILE=32,PAD=1,SWIZZLE=0");
  }
  {
    const Outcome run = tiletune({"query", "--shape", "1000x1100x900", "--db", db.string(), "--gpu", kGpu});
    ASSERT_EQ(run.exit_code, 0) << run;
    EXPECT_THAT(run.out, HasSubstr("1000x1100x900 was not tuned on NVIDIA H200; nearest recorded shape: 1024x1024x1024"));
    EXPECT_THAT(run.out, HasSubstr("tiled [TILE=32,PAD=1,SWIZZLE=0]"));
  }
}

TEST_F(Cli, QueryExactOfAnUntunedShapeFindsNothing) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  const Outcome run = tiletune({"query", "--shape", "1000x1000x1000", "--db", db.string(), "--gpu", kGpu, "--exact"});
  expect_one_line_failure(run, 1);
  EXPECT_THAT(run.err, HasSubstr("no correct configuration recorded for 1000x1000x1000 on NVIDIA H200"));
  EXPECT_EQ(run.out, "");
}

TEST_F(Cli, QueryForAnotherGpuOrTemplateFindsNothing) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  expect_one_line_failure(
      tiletune({"query", "--shape", "1024x1024x1024", "--db", db.string(), "--gpu", "NVIDIA A100"}), 1);
  expect_one_line_failure(tiletune({"query", "--shape", "1024x1024x1024", "--db", db.string(), "--gpu",
                                    kGpu, "--kernel", "naive"}),
                          1);
}

TEST_F(Cli, QueryWithoutAGpuUsesTheOnlyGpuRecorded) {
  SKIP_WITH_GPU();
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  const Outcome run = tiletune({"query", "--shape", "4096x4096x4096", "--db", db.string(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(parse_json(run).value("gpu", ""), kGpu);
}

TEST_F(Cli, ListShowsWhatIsRecorded) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  const Outcome run = tiletune({"list", "--db", db.string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("NVIDIA H200 (sm_90, 132 SMs"));
  EXPECT_THAT(run.out, HasSubstr("tiled 00000000000000aa kernels_src/tiled.cu"));
  expect_one_line_failure(tiletune({"list", "--db", (dir_ / "none.db").string()}), 2);
}

// --- strategies: replays on an exhaustively tuned space -------------------------------------

// tiled's nine configurations at 64x64x64 with times (the real source, so the space can be
// enumerated from the database); `skip` leaves one unrecorded, and TILE=8,PAD=0,SWIZZLE=1 failed.
void prepare_tiled_space(const fs::path& path, const std::string& skip = "") {
  ResultStore store(path);
  const GpuRecord gpu = recorded_gpu(kGpu);
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template({"tiled", "00000000000000bb", (kTemplates / "tiled.cu").string(),
                           read_file(kTemplates / "tiled.cu")});
  const GemmShape shape{64, 64, 64};
  double median_ms = 0.5;
  for (const char* config : {"TILE=8,PAD=0,SWIZZLE=0", "TILE=8,PAD=0,SWIZZLE=1", "TILE=8,PAD=1,SWIZZLE=0",
                             "TILE=16,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=1", "TILE=16,PAD=1,SWIZZLE=0",
                             "TILE=32,PAD=0,SWIZZLE=0", "TILE=32,PAD=0,SWIZZLE=1", "TILE=32,PAD=1,SWIZZLE=0"}) {
    median_ms -= 0.03;  // the last is the fastest
    if (config == skip) continue;
    ResultRecord result = recorded_result(config, shape, median_ms,
                                          std::string(config) == "TILE=8,PAD=0,SWIZZLE=1"
                                              ? ResultStatus::wrong_result : ResultStatus::ok);
    result.template_hash = "00000000000000bb";
    store.record_result(gpu_id, gpu, result);
  }
}

TEST_F(Cli, StrategiesReplaysEveryStrategyAgainstTheRecordedOptimum) {
  const fs::path db = dir_ / "results.db";
  prepare_tiled_space(db);
  const Outcome run = tiletune({"strategies", "--db", db.string(), "--kernel", "tiled", "--shape",
                                "64x64x64", "--seeds", "3", "--budget", "100%", "--budget", "2",
                                "--batch", "2"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.err, "");
  EXPECT_THAT(run.out, HasSubstr("tiled 64x64x64 on NVIDIA H200: 9 configurations, 8 correct, "
                                 "optimum 0.2300 ms [TILE=32,PAD=1,SWIZZLE=0]"));
  for (const char* strategy : {"exhaustive", "random", "annealing", "genetic", "bayes"}) {
    EXPECT_THAT(run.out, ::testing::ContainsRegex(std::string("\n") + strategy +
                                                  " +100% +9 +1\\.0000 +1\\.0000 +3/3\n"))
        << "the whole space finds the optimum";
    EXPECT_THAT(run.out, ::testing::ContainsRegex(std::string("\n") + strategy + " +2 +2 "));
  }
}

TEST_F(Cli, StrategiesReplaysTheGuidedOnesWarmStartedFromTheOtherShapes) {
  const fs::path db = dir_ / "results.db";
  prepare_tiled_space(db);
  const Outcome cold = tiletune({"strategies", "--db", db.string(), "--kernel", "tiled", "--shape", "64x64x64",
                                 "--seeds", "3", "--budget", "1"});
  ASSERT_EQ(cold.exit_code, 0) << cold;
  EXPECT_THAT(cold.out, HasSubstr("\nwarm start: none\n"));
  EXPECT_THAT(cold.out, ::testing::Not(HasSubstr(" warm ")));

  {  // the optimum at 64^3 was also the winner at 128^3
    ResultStore store(db);
    const GpuRecord gpu = recorded_gpu(kGpu);
    ResultRecord result = recorded_result("TILE=32,PAD=1,SWIZZLE=0", GemmShape{128, 128, 128}, 1.0, ResultStatus::ok);
    result.template_hash = "00000000000000bb";
    store.record_result(store.register_gpu(gpu), gpu, result);
  }
  const Outcome warm = tiletune({"strategies", "--db", db.string(), "--kernel", "tiled", "--shape", "64x64x64",
                                 "--seeds", "3", "--budget", "1"});
  ASSERT_EQ(warm.exit_code, 0) << warm;
  EXPECT_THAT(warm.out, HasSubstr("\nwarm start: 1 configuration from 128x128x128\n"));
  for (const char* strategy : {"annealing", "genetic", "bayes"}) {
    EXPECT_THAT(warm.out, ::testing::ContainsRegex(std::string("\n") + strategy +
                                                   " warm +1 +1 +1\\.0000 +1\\.0000 +3/3\n"))
        << "the warm start's first configuration is the optimum";
  }
}

TEST_F(Cli, StrategiesNeedsTheWholeSpaceRecordedAndAnEvaluationBudget) {
  const fs::path db = dir_ / "results.db";
  prepare_tiled_space(db, "TILE=16,PAD=1,SWIZZLE=0");
  const std::vector<std::string> replay{"strategies", "--db", db.string(), "--kernel", "tiled", "--shape", "64x64x64"};
  const Outcome partial = tiletune(replay);
  expect_one_line_failure(partial, 1);
  EXPECT_THAT(partial.err, HasSubstr("only 8 of 9 configurations are recorded for tiled 64x64x64 on "
                                     "NVIDIA H200; run an exhaustive tune first"));

  prepare_tiled_space(db);
  std::vector<std::string> timed = replay;
  timed.insert(timed.end(), {"--budget", "90s"});
  const Outcome time_budget = tiletune(timed);
  expect_one_line_failure(time_budget, 2);
  EXPECT_THAT(time_budget.err, HasSubstr("budget '90s'"));
  std::vector<std::string> bad = replay;
  bad.insert(bad.end(), {"--budget", "12x"});
  expect_one_line_failure(tiletune(bad), 2);
  expect_one_line_failure(tiletune({"strategies", "--db", db.string(), "--kernel", "naive", "--shape", "64x64x64"}), 1);
}

// --- tuning on the CPU backend: the worker, its watchdog, resumption, concurrent tuners -------

// The CPU backend's built kernels and the cubin cache are shared by these tests (in the build
// folder, never the user's): each template is built once per test run.
class CpuTune : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    const fs::path cache = fs::path(TILETUNE_BINARY_DIR) / "tests" / "tools" / "cpu-tune-cache";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    setenv("TILETUNE_CACHE_DIR", (cache / "cubins").c_str(), 1);
  }

  // `kernel`: a shipped template's file name, or an absolute path.
  std::vector<std::string> tune(const std::string& kernel, std::vector<std::string> extra = {},
                                int cases = 20) const {
    std::vector<std::string> args{"tune", (kTemplates / kernel).string(), "--backend", "cpu",
                                  "--shape", "40x36x20", "--cases", std::to_string(cases),
                                  "--db", db().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  fs::path db() const { return dir_ / "tune.db"; }

  // Results recorded in the database so far (any status).
  int recorded() const {
    int count = 0;
    for (const ResultSummary& row : ResultStore(db()).summary()) count += row.results;
    return count;
  }
};

// "settled: 2 compile_error, 2 crashed, ..." from tune's output.
std::string settled_line(const Outcome& run) {
  const std::size_t start = run.out.find("settled: ");
  return start == std::string::npos ? "" : run.out.substr(start, run.out.find('\n', start) - start);
}

// Faults in the fuzz happen in the pool's workers (two here) or, with --fuzz-workers 0, in the
// evaluation worker itself: either way each costs only its configuration.
class CpuTuneFaults : public CpuTune, public ::testing::WithParamInterface<const char*> {};

TEST_P(CpuTuneFaults, EveryFaultOfTheZooIsRecordedAndEveryGoodVariantTimed) {
  const std::vector<std::string> options{"--watchdog", "2", "--fuzz-workers", GetParam()};
  const Outcome first = tiletune(tune((kFixtureTemplates / "fault_zoo.cu").string(), options));
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.out, HasSubstr("(" + std::string(GetParam()) + " fuzz workers)")) << first;
  EXPECT_EQ(settled_line(first), "settled: 2 compile_error, 2 crashed, 2 device_limit, 2 ok, 2 timeout") << first;
  EXPECT_THAT(first.err, HasSubstr("TILE=8,FAULT=1: crashed: the worker died: killed by signal 11"));
  EXPECT_THAT(first.err, HasSubstr("TILE=8,FAULT=2: timeout: the worker was silent for 2 s"));
  EXPECT_THAT(first.err, HasSubstr("TILE=16,FAULT=0: ok"));
  const auto ranking = ResultStore(db()).ranking("CPU backend", {40, 36, 20}, std::string("fault_zoo"));
  ASSERT_EQ(ranking.size(), 2u);
  for (const ResultRecord& r : ranking) EXPECT_GT(r.median_ms, 0.0) << r.config;

  const Outcome again = tiletune(tune((kFixtureTemplates / "fault_zoo.cu").string(), options));
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(settled_line(again), "settled: 10 recorded earlier") << "nothing is measured twice";
  EXPECT_THAT(again.out, HasSubstr("compiled 0 ")) << again;
}

INSTANTIATE_TEST_SUITE_P(FuzzWorkers, CpuTuneFaults, ::testing::Values("2", "0"));

// Starts tiletune in the background (stdout and stderr to files in dir_) and returns its pid.
pid_t start_tiletune(const fs::path& dir, const std::vector<std::string>& args, const std::string& tag) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    const std::string out = (dir / (tag + ".out")).string(), err = (dir / (tag + ".err")).string();
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(127);
    std::vector<std::string> words{kBinary.string()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Processes whose command line names `needle` (the workers of a tuner, by its --parent pid).
int processes_mentioning(const std::string& needle) {
  int found = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    const std::string state = read_file(entry.path() / "stat");
    const std::size_t paren = state.rfind(')');
    const bool zombie = paren != std::string::npos && paren + 2 < state.size() && state[paren + 2] == 'Z';
    if (!zombie && cmdline.find(needle) != std::string::npos) ++found;
  }
  return found;
}

TEST_F(CpuTune, KillDashNineInTheMiddleLosesNothingAndTheSameCommandResumes) {
  // Many cases per configuration: the tune must still be running when it is killed. Two fuzz
  // workers besides the evaluation worker: all three must die with the tuner.
  const pid_t tuner = start_tiletune(dir_, tune("naive.cu", {"--fuzz-workers", "2"}, 400), "killed");
  int before_kill = 0;
  for (int i = 0; i < 1200 && before_kill < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(db())) before_kill = recorded();
  }
  ASSERT_GE(before_kill, 3) << read_file(dir_ / "killed.err");
  const std::string worker_tag = "--parent " + std::to_string(tuner);
  EXPECT_EQ(processes_mentioning(worker_tag), 3) << "the evaluation worker and two fuzz workers";
  ASSERT_EQ(kill(tuner, SIGKILL), 0);
  int status = 0;
  waitpid(tuner, &status, 0);
  const int at_kill = recorded();
  ASSERT_LT(at_kill, 21) << "the tune ended before it was killed";
  // The workers die with their tuner (one may be spinning in a kernel that never returns).
  for (int i = 0; i < 50 && processes_mentioning(worker_tag) > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(processes_mentioning(worker_tag), 0) << "a worker outlived its tuner";

  const Outcome resumed = tiletune(tune("naive.cu", {}, 400));
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_THAT(settled_line(resumed), HasSubstr(std::to_string(at_kill) + " recorded earlier")) << resumed;
  const int space = 21;  // naive's configurations
  EXPECT_EQ(recorded(), space);
  EXPECT_THAT(resumed.out, HasSubstr(" " + std::to_string(space) + "/" + std::to_string(space) + " ")) << resumed;
}

TEST_F(CpuTune, TwoTunersWritingOneDatabaseAtOnceBothRecordEverything) {
  const pid_t first = start_tiletune(dir_, tune("tiled.cu"), "first");
  const pid_t second = start_tiletune(dir_, tune("naive.cu", {"--budget", "8"}), "second");
  int first_status = 0, second_status = 0;
  waitpid(first, &first_status, 0);
  waitpid(second, &second_status, 0);
  EXPECT_EQ(first_status, 0) << read_file(dir_ / "first.err");
  EXPECT_EQ(second_status, 0) << read_file(dir_ / "second.err");
  std::map<std::string, int> per_template;
  for (const ResultSummary& row : ResultStore(db()).summary()) per_template[row.template_name] += row.results;
  EXPECT_EQ(per_template["tiled"], 9);
  EXPECT_EQ(per_template["naive"], 8);
}

// A fuzz pass stands for every shape of that GPU, in later runs too, but only for as many cases
// as it passed: a tune asking for more fuzzes again.
TEST_F(CpuTune, AFuzzPassIsTrustedAtOtherShapesUpToItsNumberOfCases) {
  const auto tune_at = [&](const std::string& shape, int cases) {
    return tiletune({"tune", (kTemplates / "tiled.cu").string(), "--backend", "cpu", "--shape", shape,
                     "--cases", std::to_string(cases), "--db", db().string()});
  };
  const auto fuzzed = [](const Outcome& run) {
    const std::size_t stages = run.out.find("time by stage: ");
    return run.out.find("fuzz ", stages) != std::string::npos;
  };
  const Outcome first = tune_at("40x36x20", 5);
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_TRUE(fuzzed(first)) << first;
  const Outcome same_cases = tune_at("33x31x17", 5);
  ASSERT_EQ(same_cases.exit_code, 0) << same_cases;
  EXPECT_FALSE(fuzzed(same_cases)) << same_cases;
  const Outcome more_cases = tune_at("50x44x30", 20);
  ASSERT_EQ(more_cases.exit_code, 0) << more_cases;
  EXPECT_TRUE(fuzzed(more_cases)) << "5 passed cases do not stand for 20\n" << more_cases;
  const Outcome fewer_cases = tune_at("21x19x9", 10);
  ASSERT_EQ(fewer_cases.exit_code, 0) << fewer_cases;
  EXPECT_FALSE(fuzzed(fewer_cases)) << fewer_cases;
  EXPECT_EQ(settled_line(fewer_cases), "settled: 9 ok");
}

// A time budget ends the search on time: compiling, which streams ahead through the whole batch
// (here all of warp_tiled's space), stops with it instead of going on through the space.
TEST_F(CpuTune, ATimeBudgetAlsoStopsTheCompilingAhead) {
  const auto start = std::chrono::steady_clock::now();
  const Outcome run = tiletune({"tune", (kTemplates / "warp_tiled.cu").string(), "--backend", "cpu",
                                "--shape", "200x200x24", "--cases", "5", "--budget", "2s", "--db",
                                db().string(), "--cache-dir", (dir_ / "cubins").string()});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(run.exit_code, 0) << run;
  const std::size_t compiled_at = run.out.find("compiled ");
  ASSERT_NE(compiled_at, std::string::npos) << run;
  const int compiled = std::stoi(run.out.substr(compiled_at + 9));
  EXPECT_GT(compiled, 0) << run;
  EXPECT_LT(compiled, 100) << "compiling went on through the space of 256 after the budget\n" << run;
  EXPECT_LT(seconds, 60) << run;
}

// A guided tune of a shape starts from the winners of the nearest shape recorded before it.
TEST_F(CpuTune, AGuidedTuneWarmStartsFromTheNearestRecordedShape) {
  const auto tune_at = [&](const std::string& shape, std::vector<std::string> extra) {
    std::vector<std::string> args{"tune", (kTemplates / "tiled.cu").string(), "--backend", "cpu", "--shape", shape,
                                  "--cases", "10", "--db", db().string(), "--strategy", "annealing", "--budget", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return tiletune(args);
  };
  const Outcome first = tune_at("40x36x20", {});
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.out, ::testing::Not(HasSubstr("warm start"))) << "nothing was recorded before it";
  const Outcome second = tune_at("41x37x21", {});
  ASSERT_EQ(second.exit_code, 0) << second;
  EXPECT_THAT(second.out, ::testing::ContainsRegex("warm start: [1-3] configurations? from 40x36x20\n")) << second;
  const Outcome cold = tune_at("39x35x19", {"--cold-start"});
  ASSERT_EQ(cold.exit_code, 0) << cold;
  EXPECT_THAT(cold.out, ::testing::Not(HasSubstr("warm start"))) << cold;
}

TEST_F(CpuTune, AGuidedStrategySettlesItsBudgetAndABadBudgetIsOneLine) {
  const Outcome run = tiletune(tune("tiled.cu", {"--strategy", "annealing", "--budget", "50%"}));
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr(" 5/9 ")) << run;
  EXPECT_THAT(run.err, HasSubstr("strategy annealing, budget 50%"));
  expect_one_line_failure(tiletune(tune("tiled.cu", {"--budget", "lots"})), 2);
  expect_one_line_failure(tiletune(tune("tiled.cu", {"--strategy", "bogus"})), 2);
}

}  // namespace
}  // namespace tiletune
