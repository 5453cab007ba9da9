// The tiletune binary as a user meets it: exit codes (tools/commands/command_line.h: 0 success,
// 1 findings, 2 bad input, 3 no GPU/driver/NVRTC), one "tiletune: " line on stderr per failure,
// and `query` against a database prepared here with ResultStore.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
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

}  // namespace
}  // namespace tiletune
