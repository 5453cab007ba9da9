// The tiletune binary as a user meets it: exit codes (tools/cli/command_line.h: 0 success,
// 1 findings, 2 bad input, 3 no GPU/driver/NVRTC), one "tiletune: " line on stderr per failure,
// and `query` against a database prepared here with ResultStore.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sqlite3.h>
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
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/result_store.h"
#include "tests/support/source_tree.h"
#include "tests/support/test_folder.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace fs = std::filesystem;

const fs::path kBinary = fs::path(TILETUNE_BINARY_DIR) / "tools" / "tiletune";
using testing_support::kTemplates;
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
    dir_ = fs::temp_directory_path() /
           ("tiletune_cli_" + testing_support::running_test_name() + "_" + std::to_string(getpid()));
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
  EXPECT_THAT(run.err, HasSubstr(dir_.string() + ": not a regular file, so no database"));
}

// A FIFO would block SQLite's first read for ever: every command that reads a database refuses it.
TEST_F(Cli, AFifoAsTheDatabaseIsRefusedWithoutBlocking) {
  const fs::path fifo = dir_ / "fifo.db";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list", "--db", fifo.string()},
        std::vector<std::string>{"query", "--shape", "64x64x64", "--db", fifo.string()},
        std::vector<std::string>{"report", "--db", fifo.string()},
        std::vector<std::string>{"strategies", "--kernel", "tiled", "--shape", "64x64x64", "--db",
                                 fifo.string()}}) {
    const Outcome run = tiletune(args);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(fifo.string() + ": not a regular file")) << run;
  }
}

// An output that is the database (by its name, another path, a link, or its -wal file) would be
// overwritten: report and export refuse it in one line and the database stays whole.
TEST_F(Cli, AnOutputThatIsTheDatabaseIsRefusedAndTheDatabaseKept) {
  const fs::path db = dir_ / "same.db";
  { ResultStore store(db); }
  const std::string bytes = read_file(db);
  fs::create_directories(dir_ / "sub");
  fs::create_symlink(db, dir_ / "link.db");
  for (const std::string& out : {db.string(), (dir_ / "sub" / ".." / "same.db").string(),
                                (dir_ / "link.db").string(), db.string() + "-wal"}) {
    const Outcome report = tiletune({"report", "--db", db.string(), "--out", out});
    expect_one_line_failure(report, 2);
    EXPECT_THAT(report.err, HasSubstr("--out " + out + ": that is the database " + db.string())) << report;
    const Outcome exported = tiletune({"export", "--db", db.string(), "--out", out});
    expect_one_line_failure(exported, 2);
    EXPECT_THAT(exported.err, HasSubstr("that is the database")) << exported;
  }
  EXPECT_EQ(read_file(db), bytes) << "the database was changed";
  EXPECT_FALSE(fs::exists(db.string() + "-wal"));
  EXPECT_EQ(tiletune({"list", "--db", db.string()}).exit_code, 0);
}

// A template whose requirements leave no configuration: nothing fuzzed, compiled or tuned is no
// pass, and a tune of it makes no database.
TEST_F(Cli, FuzzCompileAndTuneOfATemplateWithAnEmptySpaceAreBadInput) {
  const fs::path empty = dir_ / "empty.cu";
  write_file(empty, "// tiletune: require TILE > 1000\n" + read_file(kTemplates / "tiled.cu"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"fuzz", empty.string(), "--backend", "cpu", "--cases", "3"},
        std::vector<std::string>{"compile", empty.string()},
        std::vector<std::string>{"tune", empty.string(), "--backend", "cpu", "--shape", "64x48x80", "--db",
                                 (dir_ / "empty.db").string()}}) {
    const Outcome run = tiletune(args);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(empty.string() + ": no configuration of tiled meets its requirements"))
        << run;
  }
  EXPECT_FALSE(fs::exists(dir_ / "empty.db"));
}

// The same shape given twice is tuned once, not a database error.
TEST_F(Cli, AShapeGivenTwiceIsTunedOnce) {
  const Outcome run = tiletune({"tune", (kTemplates / "tiled.cu").string(), "--backend", "cpu", "--shape", "40x36x20",
                                "--shape", "40x36x20", "--strategy", "random", "--budget", "1", "--db",
                                (dir_ / "twice.db").string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("settled: 1 ok")) << run;
}

// A watchdog past a week would overflow into a negative timeout: refused before anything runs.
TEST_F(Cli, AWatchdogBeyondAWeekIsBadInput) {
  const std::string tiled = (kTemplates / "tiled.cu").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"fuzz", tiled, "--backend", "cpu", "--watchdog", "1e300"},
        std::vector<std::string>{"tune", tiled, "--backend", "cpu", "--shape", "64x48x80",
                                 "--watchdog", "9223372036854775807", "--db", "wd.db"},
        std::vector<std::string>{"mutants", (fs::path(TILETUNE_SOURCE_DIR) / "fuzz" / "mutants" / "tiled.json").string(),
                                 "--backend", "cpu", "--watchdog", "1e300"}}) {
    const Outcome run = tiletune(args);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr("--watchdog")) << run;
  }
  EXPECT_FALSE(fs::exists(dir_ / "wd.db"));
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

TEST_F(Cli, SanitizeCasesBeyondWhatACommandLineHoldsAreCappedWithAMessage) {
  SKIP_WITH_GPU();
  const Outcome run = tiletune({"fuzz", (kTemplates / "tiled.cu").string(), "--cases", "5",
                                "--sanitize", "--sanitize-cases", "100000000"});
  EXPECT_THAT(run.err, HasSubstr("tiletune: --sanitize-cases 100000000 capped to 1000")) << run;
  EXPECT_EQ(run.exit_code, 3) << run;  // then: no GPU (or no compute-sanitizer) here
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

// --- the entry contract ----------------------------------------------------------------------

// The naive product under `declaration` ("NAME(parameters)"), whose entry is declared `entry`.
std::string gemm_template(const std::string& entry, const std::string& declaration,
                          const std::string& index_a = "row * lda + i",
                          const std::string& index_b = "i * ldb + col",
                          const std::string& index_c = "row * ldc + col") {
  return "// tiletune: entry " + entry +
         "\n"
         "// tiletune: param BLOCK 8 16\n"
         "// tiletune: block BLOCK, BLOCK\n"
         "// tiletune: grid ceil_div(N, BLOCK), ceil_div(M, BLOCK)\n" +
         declaration +
         " {\n"
         "  const int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
         "  const int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (row >= M || col >= N) return;\n"
         "  float sum = 0;\n"
         "  for (int i = 0; i < K; ++i) sum += A[" + index_a + "] * B[" + index_b + "];\n"
         "  C[" + index_c + "] = sum;\n"
         "}\n";
}

const std::string kContractParameters =
    "(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, int ldc)";

// Right for packed matrices, but its parameters are (M, N, K, A, B, C): launched with the
// contract's arguments it reads pointers as sizes and sizes as pointers.
std::string swapped_signature_template() {
  return gemm_template("swapped_gemm",
                       "extern \"C\" __global__ void swapped_gemm(int M, int N, int K, "
                       "const float* A, const float* B, float* C)",
                       "row * K + i", "i * N + col", "row * N + col");
}

TEST_F(Cli, CompileOfATemplateWhoseEntryIsMisspeltFailsNamingIt) {
  const fs::path misspelt = dir_ / "misspelt.cu";
  write_file(misspelt, gemm_template("misspelt_gemm",
                                     "extern \"C\" __global__ void mispelt_gemm" + kContractParameters));
  const Outcome run = tiletune({"compile", misspelt.string(), "--arch", "sm_90"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("misspelt     BLOCK=8                                  compile error\n"
                                 "entry misspelt_gemm is not in the compiled code, whose __global__ "
                                 "functions are mispelt_gemm\n")) << run;
  EXPECT_THAT(run.out, HasSubstr("0 configurations compiled for sm_90, 2 failed")) << run;
}

TEST_F(Cli, CompileOfAnEntryThatIsNotExternCFailsNamingItsCppName) {
  const fs::path mangled = dir_ / "mangled.cu";
  write_file(mangled, gemm_template("mangled_gemm", "__global__ void mangled_gemm" + kContractParameters));
  const Outcome run = tiletune({"compile", mangled.string(), "--arch", "sm_90"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("entry mangled_gemm is not in the compiled code: it is compiled as "
                                 "_Z12mangled_gemmPKfS0_Pfiiiiii, a C++ name; declare it extern \"C\"\n"))
      << run;
  EXPECT_THAT(run.out, HasSubstr("0 configurations compiled for sm_90, 2 failed")) << run;
}

TEST_F(Cli, CompileOfAnEntryTakingOtherParametersFailsNamingThem) {
  const fs::path swapped = dir_ / "swapped.cu";
  write_file(swapped, swapped_signature_template());
  const Outcome run = tiletune({"compile", swapped.string(), "--arch", "sm_80"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("entry swapped_gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); "
                                 "the contract is 9: " + kContractParameters + "\n")) << run;
  EXPECT_THAT(run.out, HasSubstr("0 configurations compiled for sm_80, 2 failed")) << run;
}

TEST_F(Cli, CpuFuzzRefusesAnEntryTakingOtherParametersBeforeAnyCase) {
  const fs::path cache = fs::path(TILETUNE_BINARY_DIR) / "tests" / "tools" / "cpu-tune-cache";
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  const fs::path swapped = dir_ / "swapped.cu";
  write_file(swapped, swapped_signature_template());
  const Outcome run = tiletune({"fuzz", swapped.string(), "--backend", "cpu", "--cases", "20"});
  EXPECT_EQ(run.exit_code, 1) << run;
  for (const char* config : {"BLOCK=8", "BLOCK=16"}) {
    EXPECT_THAT(run.err, HasSubstr("FAIL swapped [" + std::string(config) + "]: ")) << run;
  }
  EXPECT_THAT(run.err, HasSubstr("entry swapped_gemm is void(int, int, int, const float*, const "
                                 "float*, float*); the contract is void" + kContractParameters + "\n"))
      << run;
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("minimal case"))) << "refused before any case";
  EXPECT_THAT(run.out, StartsWith("0 configurations passed, 2 failed")) << run;
}

TEST_F(Cli, GpuFuzzRefusesAnEntryTakingOtherParametersBeforeAnyCase) {
  std::string why;
  if (!gpu_present(&why)) GTEST_SKIP() << "no GPU: " << why;
  setenv("TILETUNE_CACHE_DIR", (dir_ / "cubins").c_str(), 1);
  const fs::path swapped = dir_ / "swapped.cu";
  write_file(swapped, swapped_signature_template());
  const Outcome run = tiletune({"fuzz", swapped.string(), "--cases", "20"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.err, HasSubstr("FAIL swapped [BLOCK=8]: ")) << run;
  EXPECT_THAT(run.err, HasSubstr("entry swapped_gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); "
                                 "the contract is 9: " + kContractParameters + "\n")) << run;
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("minimal case"))) << "refused before any case";
  EXPECT_THAT(run.out, StartsWith("0 configurations passed, 2 failed")) << run;
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
    // Its temporary folders inside the test's, so that one a killed tuner leaves goes with it.
    if (setenv("TMPDIR", dir.c_str(), 1) != 0) _exit(127);
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
// tune --workload: the shapes `plan` names, the heaviest first (weighed by 2MNK until the database
// can predict); a second tune with a larger budget goes on to the next, the first one recorded.
TEST_F(CpuTune, AWorkloadTunesTheShapesPlanNamesAndTheNextBudgetGoesOn) {
  std::ofstream(dir_ / "workload.txt") << "# rows_of_eight needs M % 8 == 0 and K % 4 == 0\n"
                                          "16x20x8 5\n64x64x64\n24x16x12\n";
  const auto tune_workload = [&](const std::string& budget) {
    return tiletune({"tune", (kFixtureTemplates / "rows_of_eight.cu").string(), "--backend", "cpu",
                     "--workload", "workload.txt", "--budget", budget, "--cases", "5", "--db", db().string()});
  };
  const auto shapes_recorded = [&] {
    std::set<std::string> shapes;
    for (const ResultSummary& row : ResultStore(db()).summary()) shapes.insert(row.shape.to_string());
    return shapes;
  };
  const Outcome first = tune_workload("1");
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.err, HasSubstr("tune 1 shape (budget 1), the most useful first:\n    1  64x64x64")) << first;
  EXPECT_EQ(shapes_recorded(), std::set<std::string>{"64x64x64"});
  const Outcome second = tune_workload("2");
  ASSERT_EQ(second.exit_code, 0) << second;
  EXPECT_THAT(second.err, HasSubstr("already tuned: 64x64x64")) << second;
  EXPECT_EQ(shapes_recorded(), (std::set<std::string>{"64x64x64", "16x20x8", "24x16x12"}))
      << "the two left, each the plan's next\n" << second;
  const Outcome nothing = tune_workload("2");
  ASSERT_EQ(nothing.exit_code, 0) << nothing;
  EXPECT_THAT(nothing.out, HasSubstr("nothing of workload.txt to tune on CPU backend")) << nothing;

  const Outcome time_budget = tune_workload("5m");
  expect_one_line_failure(time_budget, 2);
  EXPECT_THAT(time_budget.err, HasSubstr("--workload needs --budget N, the number of shapes to tune (not '5m')"));
  expect_one_line_failure(tiletune({"tune", (kFixtureTemplates / "rows_of_eight.cu").string(), "--workload",
                                    "workload.txt", "--budget", "1", "--shape", "64x64x64"}), 2);
}

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

// tune --op nt: each configuration fuzzed, verified and timed in its build for B stored N x K
// (warp_tiled compiles the transpose in), and recorded for nt beside the plain product's results
// of the same configurations; query --op nt answers with it, a plain query with the plain one.
// A template that does not serve the transposes is left out in one line.
TEST_F(CpuTune, ATuneOfTransposesIsRecordedForThemAndQueryChoosesIt) {
  const std::vector<std::string> search = {"--strategy", "random", "--budget", "2"};
  const Outcome plain = tiletune(tune("warp_tiled.cu", search, 5));
  ASSERT_EQ(plain.exit_code, 0) << plain;
  std::vector<std::string> nt_args = tune("warp_tiled.cu", search, 5);
  nt_args.insert(nt_args.begin() + 2, (kTemplates / "tf32_wgmma.cu").string());
  nt_args.insert(nt_args.end(), {"--op", "nt"});
  const Outcome nt = tiletune(nt_args);
  ASSERT_EQ(nt.exit_code, 0) << nt;
  EXPECT_THAT(nt.err, HasSubstr("tf32_wgmma serves no transposed B (op_b=t) (it supports plain C = A * "
                                "B only): not tuned\n")) << nt;
  EXPECT_THAT(nt.err, HasSubstr("op=nt, strategy random")) << nt;
  EXPECT_EQ(settled_line(nt), "settled: 2 ok") << nt;
  EXPECT_THAT(nt.out, ::testing::Not(HasSubstr("recorded earlier"))) << "the plain results are not nt's\n" << nt;

  std::map<std::string, int> results_by_op;
  for (const ResultSummary& row : ResultStore(db()).summary()) {
    if (row.template_name == "warp_tiled") results_by_op[row.op.to_string()] += row.results;
  }
  EXPECT_EQ(results_by_op, (std::map<std::string, int>{{"nn", 2}, {"nt", 2}}));

  const auto query = [&](const std::string& op) {
    return tiletune({"query", "--shape", "40x36x20", "--op", op, "--kernel", "warp_tiled", "--json",
                     "--db", db().string()});
  };
  const Outcome asked_nt = query("nt");
  ASSERT_EQ(asked_nt.exit_code, 0) << asked_nt;
  const nlohmann::json answer = parse_json(asked_nt);
  EXPECT_EQ(answer.value("tuned_for_op", ""), "nt") << asked_nt;
  EXPECT_EQ(answer.value("ldb", 0), 20) << "B stored N x K, packed";
  EXPECT_THAT(answer.value("why", ""), HasSubstr("has a record of 40x36x20 tuned for op=nt")) << asked_nt;
  const Outcome asked_nn = query("nn");
  ASSERT_EQ(asked_nn.exit_code, 0) << asked_nn;
  EXPECT_EQ(parse_json(asked_nn).value("tuned_for_op", ""), "nn") << asked_nn;
  const Outcome asked_tn = query("tn");  // not tuned for tn: the plain product's record serves it
  ASSERT_EQ(asked_tn.exit_code, 0) << asked_tn;
  EXPECT_EQ(parse_json(asked_tn).value("tuned_for_op", ""), "nn") << asked_tn;

  const Outcome none = tiletune({"tune", (kTemplates / "tf32_wgmma.cu").string(), "--backend", "cpu",
                                 "--op", "tn", "--db", db().string()});
  EXPECT_EQ(none.exit_code, 2) << none;
  EXPECT_THAT(none.err, HasSubstr("no template given serves op=tn: nothing to tune")) << none;
}

// tune --batch 3: each configuration fuzzed, verified and timed in its build for a strided batch
// (warp_tiled compiles it in) over 3 packed entries, and recorded for the batch beside the single
// product's results; query --batch 3 answers with it, another batch with the single product's.
// A template that does not serve batches is left out in one line; a batch past the indices' range
// is bad input.
TEST_F(CpuTune, ATuneOfABatchIsRecordedForItAndQueryChoosesIt) {
  const std::vector<std::string> search = {"--strategy", "random", "--budget", "2"};
  const Outcome plain = tiletune(tune("warp_tiled.cu", search, 5));
  ASSERT_EQ(plain.exit_code, 0) << plain;
  std::vector<std::string> batch_args = tune("warp_tiled.cu", search, 5);
  batch_args.insert(batch_args.begin() + 2, (kTemplates / "tf32_wgmma_tma.cu").string());
  batch_args.insert(batch_args.end(), {"--batch", "3", "--op", "tn"});
  const Outcome batched = tiletune(batch_args);
  ASSERT_EQ(batched.exit_code, 0) << batched;
  EXPECT_THAT(batched.err, HasSubstr("tf32_wgmma_tma serves no batch=3")) << batched;
  EXPECT_THAT(batched.err, HasSubstr("op=tn batch=3, strategy random")) << batched;
  EXPECT_EQ(settled_line(batched), "settled: 2 ok") << batched;
  EXPECT_THAT(batched.out, ::testing::Not(HasSubstr("recorded earlier"))) << batched;

  std::map<std::string, int> results_by_kind;
  for (const ResultSummary& row : ResultStore(db()).summary()) {
    if (row.template_name == "warp_tiled") results_by_kind[TunedFor{row.op, row.batch}.to_string()] += row.results;
  }
  EXPECT_EQ(results_by_kind, (std::map<std::string, int>{{"", 2}, {"op=tn batch=3", 2}}));
  for (const CurrentResult& row : ResultStore(db()).current_results()) {
    if (row.result.batch != 3) continue;
    EXPECT_DOUBLE_EQ(row.result.tflops, 3 * GemmShape({40, 36, 20}).tflops(row.result.median_ms))
        << "a batch's time is of its 3 products";
  }
  const Outcome listed = tiletune({"list", "--db", db().string()});
  EXPECT_THAT(listed.out, HasSubstr("40x36x20 op=tn batch=3")) << listed;

  const auto query = [&](const std::string& batch) {
    return tiletune({"query", "--shape", "40x36x20", "--op", "tn", "--batch", batch, "--kernel",
                     "warp_tiled", "--json", "--db", db().string()});
  };
  const Outcome asked = query("3");
  ASSERT_EQ(asked.exit_code, 0) << asked;
  const nlohmann::json answer = parse_json(asked);
  EXPECT_EQ(answer.value("tuned_for_batch", 0), 3) << asked;
  EXPECT_EQ(answer.value("tuned_for_op", ""), "tn") << asked;
  EXPECT_THAT(answer.value("why", ""), HasSubstr("has a record of 40x36x20 tuned for op=tn batch=3")) << asked;
  const Outcome other = query("4");  // not tuned for 4 entries: the single product's record serves
  ASSERT_EQ(other.exit_code, 0) << other;
  EXPECT_EQ(parse_json(other).value("tuned_for_batch", 0), 1) << other;

  const Outcome none = tiletune({"tune", (kTemplates / "tf32_wgmma_tma.cu").string(), "--backend", "cpu",
                                 "--batch", "2", "--db", db().string()});
  EXPECT_EQ(none.exit_code, 2) << none;
  EXPECT_THAT(none.err, HasSubstr("no template given serves batch=2: nothing to tune")) << none;
  const Outcome too_many = tiletune({"tune", (kTemplates / "warp_tiled.cu").string(), "--backend", "cpu",
                                     "--shape", "64x64x64", "--batch", "3000000000", "--db", db().string()});
  EXPECT_EQ(too_many.exit_code, 2) << too_many;
  EXPECT_THAT(too_many.err, HasSubstr("--shape 64x64x64 with batch=3000000000: batch=3000000000 is not in [1, "))
      << too_many;
}

// The swapped parameters are refused from NVRTC's output, which tune compiles on the CPU backend
// too; C before A and B has the contract's layout, and the CPU backend's check of the entry's type
// refuses it.
TEST_F(CpuTune, AnEntryTakingOtherParametersIsRecordedACompileErrorNamingThem) {
  const fs::path swapped = dir_ / "swapped.cu", output_first = dir_ / "output_first.cu";
  write_file(swapped, swapped_signature_template());
  write_file(output_first,
             gemm_template("output_first_gemm",
                           "extern \"C\" __global__ void output_first_gemm(float* C, const float* A, "
                           "const float* B, int M, int N, int K, int lda, int ldb, int ldc)"));
  const Outcome run = tiletune({"tune", swapped.string(), output_first.string(), "--backend", "cpu",
                                "--shape", "40x36x20", "--cases", "20", "--db", db().string()});
  EXPECT_THAT(run.exit_code, AnyOf(0, 1)) << run;  // not a crash
  EXPECT_EQ(settled_line(run), "settled: 4 compile_error") << run;
  EXPECT_THAT(run.err, HasSubstr("swapped 40x36x20 BLOCK=16: compile_error: entry swapped_gemm takes "
                                 "6 parameters (4, 4, 4, 8, 8, 8 bytes); the contract is 9: " +
                                 kContractParameters + "\n"))
      << run;
  EXPECT_THAT(run.err, HasSubstr("output_first 40x36x20 BLOCK=16: compile_error: entry "
                                 "output_first_gemm is void(float*, const float*, const float*, int, "
                                 "int, int, int, int, int); the contract is void" +
                                 kContractParameters + "\n"))
      << run;
  EXPECT_TRUE(ResultStore(db()).ranking("CPU backend", {40, 36, 20}).empty());
}

TEST_F(CpuTune, AGuidedStrategySettlesItsBudgetAndABadBudgetIsOneLine) {
  const Outcome run = tiletune(tune("tiled.cu", {"--strategy", "annealing", "--budget", "50%"}));
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr(" 5/9 ")) << run;
  EXPECT_THAT(run.err, HasSubstr("strategy annealing, budget 50%"));
  expect_one_line_failure(tiletune(tune("tiled.cu", {"--budget", "lots"})), 2);
  expect_one_line_failure(tiletune(tune("tiled.cu", {"--strategy", "bogus"})), 2);
}

// --- the CPU backend runs template code natively: each configuration in a child process ------

// FAULT 1 writes a terabyte past C (one thread, once M > 1), FAULT 2 never returns (once M > 1),
// FAULT 0 is correct and comes last: it must still be fuzzed after the other two.
const char* const kFaultyTemplate = R"(// tiletune: name faulty
// tiletune: entry faulty_gemm
// tiletune: param FAULT 1 2 0
// tiletune: block 8, 8
// tiletune: grid ceil_div(N, 8), ceil_div(M, 8)
extern "C" __global__ void faulty_gemm(const float* A, const float* B, float* C, int M, int N, int K,
                                       int lda, int ldb, int ldc) {
  const int row = blockIdx.y * 8 + threadIdx.y;
  const int col = blockIdx.x * 8 + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
  C[(size_t)row * ldc + col] = acc;
#if TT_FAULT == 1
  if (row == 0 && col == 0 && M > 1) C[(size_t)1 << 40] = 0.0f;
#elif TT_FAULT == 2
  if (row == 0 && col == 0 && M > 1) { volatile int spin = 1; while (spin) {} }
#endif
}
)";

// The text of the replay command's --case argument in a FAIL block about `config`.
std::string replayed_case(const std::string& err, const std::string& config) {
  const std::size_t fail = err.find("FAIL faulty [" + config + "]");
  const std::size_t replay = err.find("replay: ", fail);
  if (fail == std::string::npos || replay == std::string::npos) return "";
  const std::size_t at = err.find("--case '", replay);
  if (at == std::string::npos) return "";
  return err.substr(at + 8, err.find('\'', at + 8) - at - 8);
}

TEST_F(CpuTune, FuzzReportsAFarWriteAndAnEndlessLoopWithTheirCaseAndGoesOn) {
  write_file(dir_ / "faulty.cu", kFaultyTemplate);
  const auto start = std::chrono::steady_clock::now();
  const Outcome run = tiletune({"fuzz", (dir_ / "faulty.cu").string(), (kTemplates / "tiled.cu").string(),
                                "--backend", "cpu", "--cases", "10", "--watchdog", "2"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(120)) << run;
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.err, ::testing::ContainsRegex(
                           "FAIL faulty \\[FAULT=1\\]: crashed on case [0-9]+: the process fuzzing it "
                           "was killed by signal 11"))
      << run;
  EXPECT_THAT(run.err, ::testing::ContainsRegex(
                           "FAIL faulty \\[FAULT=2\\]: hung \\(no progress\\) on case [0-9]+: the "
                           "process fuzzing it was killed after 2 s without output"))
      << run;
  EXPECT_THAT(run.err, HasSubstr("pass faulty [FAULT=0]: 10 cases")) << run;
  EXPECT_THAT(run.err, HasSubstr("pass tiled [TILE=32,PAD=1,SWIZZLE=0]: 10 cases")) << run;
  EXPECT_THAT(run.out, HasSubstr("10 configurations passed, 2 failed")) << run;

  // Each replay line reproduces its failure on the case it names.
  for (const auto& [config, what] : {std::pair{"FAULT=1", "crashed on case 1"},
                                     std::pair{"FAULT=2", "hung (no progress) on case 1"}}) {
    const std::string gemm_case = replayed_case(run.err, config);
    ASSERT_FALSE(gemm_case.empty()) << config << "\n" << run;
    const Outcome replay = tiletune({"fuzz", (dir_ / "faulty.cu").string(), "--backend", "cpu",
                                     "--config", config, "--case", gemm_case, "--watchdog", "2"});
    EXPECT_EQ(replay.exit_code, 1) << replay;
    EXPECT_THAT(replay.err, HasSubstr(what)) << replay;
  }
}

// --- the watchdog judges progress, not length; a timeout is retried once --------------------

// MODE 1 is correct but sleeps 0.5 s in every fuzz case (none at the tuning shape, M = 40): its
// fuzz of 12 cases takes 6 s, longer than the watchdog (4 s, which also leaves a loaded machine
// time to build each kernel), with each case well within it. MODE 2 never returns from a fuzz
// case. MODE 0 is correct and quick.
const char* const kSlowTemplate = R"(// tiletune: name slow
// tiletune: entry slow_gemm
// tiletune: param MODE 1 2 0
// tiletune: block 8, 8
// tiletune: grid ceil_div(N, 8), ceil_div(M, 8)
#if !defined(__CUDA_ARCH__)
#include <unistd.h>
#endif
extern "C" __global__ void slow_gemm(const float* A, const float* B, float* C, int M, int N, int K,
                                     int lda, int ldb, int ldc) {
  const int row = blockIdx.y * 8 + threadIdx.y;
  const int col = blockIdx.x * 8 + threadIdx.x;
#if !defined(__CUDA_ARCH__) && TT_MODE == 1
  if (M != 40 && row == 0 && col == 0) usleep(500000);
#elif TT_MODE == 2
  if (M != 40 && row == 0 && col == 0) { volatile int spin = 1; while (spin) {} }
#endif
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
  C[(size_t)row * ldc + col] = acc;
}
)";

TEST_F(CpuTune, ASlowButProgressingFuzzIsOkAndAHangIsATimeoutAfterOneRetry) {
  write_file(dir_ / "slow.cu", kSlowTemplate);
  for (const char* fuzz_workers : {"1", "0"}) {
    SCOPED_TRACE(std::string("--fuzz-workers ") + fuzz_workers);
    fs::remove(db());
    const Outcome run = tiletune({"tune", (dir_ / "slow.cu").string(), "--backend", "cpu", "--shape",
                                  "40x36x20", "--cases", "12", "--watchdog", "4", "--fuzz-workers",
                                  fuzz_workers, "--db", db().string()});
    ASSERT_EQ(run.exit_code, 0) << run;
    EXPECT_EQ(settled_line(run), "settled: 2 ok, 1 timeout") << run;
    EXPECT_THAT(run.err, HasSubstr("MODE=1: ok")) << run;
    EXPECT_THAT(run.err, ::testing::ContainsRegex(
                             "MODE=2: timeout: the worker was silent for 4 s and was killed \\(stage: "
                             "fuzz, case [^)]*\\); the same on a retry in a fresh worker"))
        << run;
    const auto ranking = ResultStore(db()).ranking("CPU backend", {40, 36, 20}, std::string("slow"));
    ASSERT_EQ(ranking.size(), 2u);
  }
}

// --- what the CPU backend cannot run is a recorded status; headers beside a template work ----

// A template whose index arithmetic lives in a header beside it, included by a relative path.
const char* const kRelativeIncludeTemplate = R"(// tiletune: name relinc
// tiletune: entry relinc_gemm
// tiletune: param X 0 1
// tiletune: block 8, 8
// tiletune: grid ceil_div(N, 8), ceil_div(M, 8)
#include "helpers.h"
extern "C" __global__ void relinc_gemm(const float* A, const float* B, float* C, int M, int N, int K,
                                       int lda, int ldb, int ldc) {
  const int row = INDEX_OF(blockIdx.y, threadIdx.y);
  const int col = INDEX_OF(blockIdx.x, threadIdx.x);
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
  C[(size_t)row * ldc + col] = acc;
}
)";

TEST_F(CpuTune, ARelativeIncludeWorksOnBothBackendsAndAChangedHeaderIsNeverServedStale) {
  fs::create_directories(dir_ / "src");
  write_file(dir_ / "src" / "relinc.cu", kRelativeIncludeTemplate);
  write_file(dir_ / "src" / "helpers.h", "#pragma once\n#define INDEX_OF(b, t) ((b) * 8 + (t))\n");
  const std::string kernel = (dir_ / "src" / "relinc.cu").string();
  const std::vector<std::string> fuzz{"fuzz", kernel, "--backend", "cpu", "--cases", "10"};
  const std::vector<std::string> tune{"tune", kernel, "--backend", "cpu", "--shape", "40x36x20",
                                      "--cases", "10", "--db", db().string()};

  const Outcome compiled = tiletune({"compile", kernel, "--arch", "sm_90"});
  EXPECT_EQ(compiled.exit_code, 0) << compiled;
  const Outcome fuzzed = tiletune(fuzz);
  EXPECT_EQ(fuzzed.exit_code, 0) << fuzzed;
  EXPECT_THAT(fuzzed.out, HasSubstr("2 configurations passed")) << fuzzed;
  const Outcome tuned = tiletune(tune);
  EXPECT_EQ(tuned.exit_code, 0) << tuned;
  EXPECT_EQ(settled_line(tuned), "settled: 2 ok") << tuned;

  // A bug in the header: every cache (NVRTC's, the CPU backend's, the database's fuzz passes)
  // must see a new version of the template.
  write_file(dir_ / "src" / "helpers.h", "#pragma once\n#define INDEX_OF(b, t) ((b) * 8 + (t) + 1)\n");
  const Outcome refuzzed = tiletune(fuzz);
  EXPECT_EQ(refuzzed.exit_code, 1) << refuzzed;
  EXPECT_THAT(refuzzed.err, HasSubstr("FAIL relinc [X=0]")) << refuzzed;
  const Outcome retuned = tiletune(tune);
  EXPECT_EQ(settled_line(retuned), "settled: 2 wrong_result") << retuned;
}

// X=1 uses a warp reduction, which the CPU backend cannot run; X=0 is correct and comes after it.
const char* const kWarpShuffleTemplate = R"(// tiletune: name shuffle
// tiletune: entry shuffle_gemm
// tiletune: param X 1 0
// tiletune: block 32, 1
// tiletune: grid N, M
extern "C" __global__ void shuffle_gemm(const float* A, const float* B, float* C, int M, int N, int K,
                                        int lda, int ldb, int ldc) {
  const int row = blockIdx.y;
  const int col = blockIdx.x;
  float acc = 0.0f;
  for (int k = threadIdx.x; k < K; k += 32) acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
#if TT_X
  const unsigned sum = __reduce_add_sync(0xffffffffu, (unsigned)(int)acc);
  if (threadIdx.x == 0) C[(size_t)row * ldc + col] = (float)(int)sum;
#else
  __shared__ float part[32];
  part[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int i = 0; i < 32; ++i) sum += part[i];
    C[(size_t)row * ldc + col] = sum;
  }
#endif
}
)";

TEST_F(CpuTune, CodeTheCpuBackendCannotRunIsRecordedAndTheTuneGoesOn) {
  write_file(dir_ / "shuffle.cu", kWarpShuffleTemplate);
  const Outcome run = tiletune({"tune", (dir_ / "shuffle.cu").string(), "--backend", "cpu", "--shape",
                                "40x36x20", "--cases", "10", "--db", db().string()});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(settled_line(run), "settled: 1 device_limit, 1 ok") << run;
  EXPECT_THAT(run.err, HasSubstr("X=1: device_limit: not supported on the CPU backend: warp "
                                 "reduction (__reduce_add_sync)"))
      << run;
}

TEST_F(CpuTune, AShapeTooLargeForHostMemoryIsRecordedAndTheTuneGoesOn) {
  // 500000 x 1000000 x 1000000: A alone takes 2 TB. Two configurations of the template above
  // (its correct one first), each recorded; the run is not aborted.
  write_file(dir_ / "relinc.cu", kRelativeIncludeTemplate);
  write_file(dir_ / "helpers.h", "#define INDEX_OF(b, t) ((b) * 8 + (t))\n");
  const Outcome run = tiletune({"tune", (dir_ / "relinc.cu").string(), "--backend", "cpu", "--shape",
                                "500000x1000000x1000000", "--cases", "10", "--db", db().string()});
  // No correct configuration for the shape: exit 0 or 1 by the rules for that, never an abort.
  EXPECT_THAT(run.exit_code, AnyOf(0, 1)) << run;
  EXPECT_EQ(settled_line(run), "settled: 2 device_limit") << run;
  EXPECT_THAT(run.err, ::testing::ContainsRegex("X=0: device_limit: the shape 500000x1000000x1000000 "
                                                "needs [0-9.]+ GiB of host memory"))
      << run;
  EXPECT_EQ(recorded(), 2);
}

// --- a confirmation that did not finish is redone by the resume -------------------------------

// The state a kill leaves when it comes while the best few are re-measured: here after the
// confirmation recorded 3 of its 5 results. The resume measures nothing new, but confirms again.
TEST_F(CpuTune, AResumeRedoesAConfirmationThatDidNotFinish) {
  const Outcome first = tiletune(tune("tiled.cu"));
  ASSERT_EQ(first.exit_code, 0) << first;
  ASSERT_THAT(first.out, HasSubstr("the best 5 re-measured together")) << first;
  const GemmShape shape{40, 36, 20};
  {
    ResultStore store(db());
    const GpuRecord gpu = store.gpus().front();
    const std::int64_t gpu_id = store.register_gpu(gpu);
    // The confirmed five: not always the five fastest now, since a re-measured time can come out
    // slower than another configuration's first one (a loaded machine).
    std::vector<ResultRecord> confirmed;
    for (ResultRecord& r : store.ranking("CPU backend", shape, std::string("tiled"))) {
      if (r.detail.starts_with("re-measured with the best 5")) confirmed.push_back(r);
    }
    ASSERT_EQ(confirmed.size(), 5u);
    for (int i = 0; i < 2; ++i) {
      confirmed[i].detail = "";  // as the first timing recorded it
      store.record_result(gpu_id, gpu, confirmed[i]);
    }
  }
  const Outcome resumed = tiletune(tune("tiled.cu"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_EQ(settled_line(resumed), "settled: 9 recorded earlier") << resumed;
  EXPECT_THAT(resumed.out, HasSubstr("the best 5 re-measured together")) << resumed;
  int confirmed = 0;
  for (const ResultRecord& r : ResultStore(db()).ranking("CPU backend", shape, std::string("tiled"))) {
    confirmed += r.detail.starts_with("re-measured with the best 5") ? 1 : 0;
  }
  EXPECT_GE(confirmed, 5);

  // Once it finished, a resume confirms nothing again.
  const Outcome again = tiletune(tune("tiled.cu"));
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, ::testing::Not(HasSubstr("re-measured together"))) << again;
}

// --- the best of several templates re-measured together ---------------------------------------

// Templates tuned together are searched one after the other, minutes apart on a GPU whose clocks
// drift; so at each shape the best few of every template of one precision are timed again together
// before the fastest of the precision stands. A template of another precision is not among them.
TEST_F(CpuTune, TheBestOfEachTemplateOfAPrecisionAreReMeasuredTogether) {
  const fs::path tf32_naive = kFixtureTemplates / "tf32_naive.cu";
  const std::vector<std::string> together =
      tune("tiled.cu", {(kTemplates / "naive.cu").string(), tf32_naive.string()}, 10);
  const Outcome first = tiletune(together);
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.out, HasSubstr("across templates")) << first;
  EXPECT_THAT(first.out, HasSubstr("the best 10 of 2 templates (5 each at most) re-measured together "
                                   "in 5 rounds"))
      << first;
  EXPECT_THAT(first.out, ::testing::Not(HasSubstr(" tf32    "))) << "tf32 has one template\n" << first;
  // The fp32 searches leave their re-measurement to the one across templates, which repeats it
  // with more beside them; tf32_naive, alone in its precision, re-measures its own.
  const auto count = [&](const std::string& text) {
    int n = 0;
    for (std::size_t at = first.out.find(text); at != std::string::npos; at = first.out.find(text, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("its best re-measured with the other templates' (below)"), 2) << first;
  EXPECT_EQ(count("re-measured together in 5 rounds"), 2) << "tf32_naive's and the one across\n" << first;
  const GemmShape shape{40, 36, 20};
  const auto remeasured_together = [&](const std::string& name) {
    int count = 0;
    for (const ResultRecord& r : ResultStore(db()).ranking("CPU backend", shape, name)) {
      count += r.detail.starts_with("re-measured with the best of 2 templates") ? 1 : 0;
    }
    return count;
  };
  EXPECT_EQ(remeasured_together("tiled"), 5);
  EXPECT_EQ(remeasured_together("naive"), 5);
  EXPECT_EQ(remeasured_together("tf32_naive"), 0);

  // Nothing new measured and the re-measurement complete: a resume does not repeat it.
  const Outcome again = tiletune(together);
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, ::testing::Not(HasSubstr("re-measured together"))) << again;

  // A kill while it ran leaves some results as the searches recorded them: the resume redoes it.
  {
    ResultStore store(db());
    const GpuRecord gpu = store.gpus().front();
    const std::int64_t gpu_id = store.register_gpu(gpu);
    int reset = 0;
    for (ResultRecord r : store.ranking("CPU backend", shape, std::string("naive"))) {
      if (reset == 3 || !r.detail.starts_with("re-measured with the best of 2 templates")) continue;
      r.detail = "";
      store.record_result(gpu_id, gpu, r);
      ++reset;
    }
    ASSERT_EQ(reset, 3);
  }
  const Outcome resumed = tiletune(together);
  ASSERT_EQ(resumed.exit_code, 0) << resumed;
  EXPECT_THAT(resumed.out, HasSubstr("the best 10 of 2 templates (5 each at most) re-measured together"))
      << resumed;
  // The best five now, which need not be the five re-measured before (a re-measured time can come
  // out slower than another configuration's first one on a loaded machine).
  EXPECT_GE(remeasured_together("naive"), 5);
  EXPECT_GE(remeasured_together("tiled"), 5);
}

// --- hostile input: counts capped, names checked, replay lines quoted, spaces too large to
// list, databases only read -------------------------------------------------------------------

// On a GPU each fuzz worker is a CUDA context, which the driver creates one at a time while the
// host's other processes wait: a tune with nothing to fuzz starts none. Nothing to fuzz: a new
// shape whose configurations passed their fuzz at another (the fuzz does not depend on the shape),
// or a resumed tune.
TEST_F(CpuTune, ATuneWithNothingToFuzzStartsNoFuzzWorker) {
  const Outcome first = tiletune(tune("tiled.cu", {"--fuzz-workers", "1"}));
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.out, HasSubstr("workers started 2 (1 fuzz workers)")) << first;

  std::vector<std::string> other_shape = tune("tiled.cu", {"--fuzz-workers", "1"});
  *std::find(other_shape.begin(), other_shape.end(), "40x36x20") = "33x17x41";
  const Outcome other = tiletune(other_shape);
  ASSERT_EQ(other.exit_code, 0) << other;
  EXPECT_THAT(other.out, HasSubstr("workers started 1 (0 fuzz workers)")) << other;
  EXPECT_THAT(other.out, ::testing::Not(HasSubstr("recorded earlier"))) << "the new shape was measured";

  const Outcome again = tiletune(tune("tiled.cu", {"--fuzz-workers", "1"}));
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, HasSubstr("recorded earlier")) << again;
  EXPECT_THAT(again.out, HasSubstr("workers started 1 (0 fuzz workers)")) << again;
}

TEST_F(CpuTune, FuzzWorkersBeyondTheCoresAreCappedWithAMessage) {
  const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  const Outcome run = tiletune(tune("naive.cu", {"--fuzz-workers", "100000", "--budget", "4"}, 5));
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.err, HasSubstr("tiletune: --fuzz-workers 100000 capped to " + cores +
                                 ": this machine has " + cores + " cores\n")) << run;
  EXPECT_THAT(run.out, HasSubstr("(" + cores + " fuzz workers)")) << run;
  const std::size_t started = run.out.find("workers started ");
  ASSERT_NE(started, std::string::npos) << run;
  EXPECT_LE(std::stoi(run.out.substr(started + 16)), std::stoi(cores) + 1) << "the fuzz workers and the evaluation worker";
}

// naive.cu declaring `name` as a path: refused on its line by every command, and nothing lands
// outside the caches or --cubin-dir (which sit deep enough for the name to climb out of them).
TEST_F(CpuTune, ATemplateNameThatIsAPathIsRefusedAndNothingIsWrittenOutside) {
  const fs::path deep = dir_ / "a" / "b" / "c" / "d";
  fs::create_directories(deep);
  setenv("XDG_CACHE_HOME", (deep / "cache").c_str(), 1);
  setenv("TILETUNE_CACHE_DIR", (deep / "cubins").c_str(), 1);
  std::string source = read_file(kTemplates / "naive.cu");
  const std::string name = "// tiletune: name naive";
  ASSERT_NE(source.find(name), std::string::npos);
  const std::string line = std::to_string(
      1 + std::count(source.begin(), source.begin() + std::ptrdiff_t(source.find(name)), '\n'));
  source.replace(source.find(name), name.size(), "// tiletune: name ../../../../escaped");
  const fs::path kernel = deep / "escape.cu";
  write_file(kernel, source);
  const std::string config = "BLOCK_X=8,BLOCK_Y=8";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"compile", kernel.string(), "--config", config, "--cubin-dir", (deep / "kept").string()},
        std::vector<std::string>{"fuzz", kernel.string(), "--backend", "cpu", "--config", config, "--cases", "5"},
        std::vector<std::string>{"tune", kernel.string(), "--backend", "cpu", "--shape", "40x36x20", "--cases",
                                 "5", "--db", (deep / "tune.db").string()}}) {
    SCOPED_TRACE(args.front());
    const Outcome run = tiletune(args);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(kernel.string() + ":" + line +
                                   ": name '../../../../escaped' is not an identifier")) << run;
  }
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr("escaped"))) << entry.path();
  }
}

// Without a `name`, a file's stem that is not an identifier gives one: my-kernel.cu is my_kernel.
TEST_F(Cli, ATemplateNamedAfterAStemThatIsNotAnIdentifierGetsAnIdentifier) {
  std::string source = read_file(kTemplates / "naive.cu");
  const std::string name = "// tiletune: name naive\n";
  ASSERT_NE(source.find(name), std::string::npos);
  source.erase(source.find(name), name.size());
  write_file(dir_ / "my-kernel.cu", source);
  const Outcome run = tiletune({"compile", (dir_ / "my-kernel.cu").string(), "--config", "BLOCK_X=8,BLOCK_Y=8",
                                "--arch", "sm_90", "--cubin-dir", (dir_ / "cubins").string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_TRUE(fs::exists(dir_ / "cubins" / "my_kernel-BLOCK_X_8_BLOCK_Y_8.cubin")) << run;
}

// tiled.cu without its store mask, in a folder whose name has spaces and a quote: the printed
// replay line, run by the shell as it stands, replays the same failure.
TEST_F(CpuTune, TheReplayLineQuotesEveryArgumentAndReplaysTheSameFailureThroughTheShell) {
  const fs::path folder = dir_ / "kernels with spaces and a ' quote";
  fs::create_directories(folder);
  std::string source = read_file(kTemplates / "tiled.cu");
  const std::string mask = "  if (row < M && col < N) {";
  ASSERT_NE(source.find(mask), std::string::npos);
  source.replace(source.find(mask), mask.size(), "  {");
  const fs::path kernel = folder / "no store mask $(touch pwned).cu";
  write_file(kernel, source);
  const Outcome run = tiletune({"fuzz", kernel.string(), "--backend", "cpu", "--config",
                                "TILE=8,PAD=0,SWIZZLE=0", "--cases", "50"});
  ASSERT_EQ(run.exit_code, 1) << run;
  std::string failure, replay;
  for (const std::string& line : run.err_lines()) {
    if (line.starts_with("FAIL ")) failure = line;
    if (line.starts_with("  replay: ")) replay = line.substr(10);
  }
  ASSERT_FALSE(replay.empty()) << run;
  EXPECT_THAT(replay, StartsWith("tiletune fuzz ")) << replay;

  const std::string command = "cd " + quoted(dir_.string()) + " && PATH=" + quoted(kBinary.parent_path().string()) +
                              ":\"$PATH\" sh -c " + tiletune::quoted(replay) + " >replay.out 2>replay.err";
  const int status = std::system(command.c_str());
  const std::string replayed = read_file(dir_ / "replay.err");
  ASSERT_TRUE(WIFEXITED(status)) << replayed;
  EXPECT_EQ(WEXITSTATUS(status), 1) << replay << "\n" << replayed;
  EXPECT_THAT(replayed, HasSubstr(failure + "\n")) << replay;
  EXPECT_FALSE(fs::exists(dir_ / "pwned")) << "the shell ran what the file name holds";
}

// fuzz --shard I/N: the shares fuzz each configuration once between them; --cover takes every
// value of every parameter; a share that does not exist is bad input.
TEST_F(CpuTune, FuzzSharesAndCoveringSamples) {
  const std::string tiled = (kTemplates / "tiled.cu").string();
  std::set<std::string> fuzzed;
  for (const char* share : {"0/2", "1/2"}) {
    const Outcome run = tiletune({"fuzz", tiled, "--backend", "cpu", "--cases", "3", "--shard", share});
    ASSERT_EQ(run.exit_code, 0) << run;
    std::istringstream lines(run.err);  // the progress lines
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("pass tiled [")) {
        EXPECT_TRUE(fuzzed.insert(line.substr(0, line.find(']'))).second) << line << " fuzzed twice";
      }
    }
  }
  EXPECT_EQ(fuzzed.size(), 9u) << "tiled's nine configurations, each in one share";
  expect_one_line_failure(tiletune({"fuzz", tiled, "--backend", "cpu", "--shard", "2/2"}), 2);

  const Outcome covered = tiletune({"fuzz", tiled, "--backend", "cpu", "--cases", "3", "--cover", "--seed", "4"});
  ASSERT_EQ(covered.exit_code, 0) << covered;
  for (const char* value : {"TILE=8,", "TILE=16,", "TILE=32,", "PAD=0", "PAD=1", "SWIZZLE=0", "SWIZZLE=1"}) {
    EXPECT_THAT(covered.err, HasSubstr(value)) << covered;
  }
  const Outcome compiled = tiletune({"compile", tiled, "--arch", "sm_90", "--cover", "--seed", "4"});
  if (compiled.exit_code != 3) {  // 3: no NVRTC here
    ASSERT_EQ(compiled.exit_code, 0) << compiled;
    EXPECT_THAT(compiled.out, HasSubstr("\n3 configurations compiled for sm_90, 0 failed")) << compiled;
  }
}

// `tiletune compile` fills the cubin cache a tune reads: a second compile takes its outcome from
// there, and --no-cache compiles again.
TEST_F(CpuTune, CompileStoresInTheCubinCacheThatASecondCompileReads) {
  setenv("TILETUNE_CACHE_DIR", (dir_ / "cubins").c_str(), 1);  // empty: the first compile is real
  const std::vector<std::string> compile = {"compile", (kTemplates / "tiled.cu").string(), "--arch",
                                            "sm_90", "--config", "TILE=16,PAD=1,SWIZZLE=0"};
  const Outcome first = tiletune(compile);
  if (first.exit_code == 3) GTEST_SKIP() << "no NVRTC here: " << first.err;
  ASSERT_EQ(first.exit_code, 0) << first;
  EXPECT_THAT(first.out, Not(HasSubstr("cached"))) << first;
  const Outcome second = tiletune(compile);
  ASSERT_EQ(second.exit_code, 0) << second;
  EXPECT_THAT(second.out, HasSubstr(" cached\n1 configurations compiled for sm_90, 0 failed")) << second;
  std::vector<std::string> fresh = compile;
  fresh.push_back("--no-cache");
  const Outcome again = tiletune(fresh);
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, Not(HasSubstr("cached"))) << again;
  // What the report of each says is the same compile's.
  const auto row = [](const std::string& out) { return out.substr(out.find("tiled "), 70); };
  EXPECT_EQ(row(second.out), row(first.out));
}

// `tiletune compile --shape` compiles what a tune of those shapes would time: the configurations
// the tuning limits admit at one of them, each once.
TEST_F(CpuTune, CompileOfShapesTakesWhatTheirTuningLimitsAdmit) {
  setenv("TILETUNE_CACHE_DIR", (dir_ / "cubins").c_str(), 1);
  const fs::path limited = dir_ / "limited.cu";
  write_file(limited, "// tiletune: tune_if TILE < M\n" + read_file(kTemplates / "tiled.cu"));
  const Outcome both = tiletune({"compile", limited.string(), "--arch", "sm_90", "--shape", "12x64x64",
                                 "--shape", "20x64x64", "--shape", "12x64x64"});
  if (both.exit_code == 3) GTEST_SKIP() << "no NVRTC here: " << both.err;
  ASSERT_EQ(both.exit_code, 0) << both;
  // TILE 8 at M = 12, TILE 8 and 16 at M = 20: three configurations of each TILE.
  EXPECT_THAT(both.out, HasSubstr("\n6 configurations compiled for sm_90, 0 failed")) << both;
  EXPECT_THAT(both.out, Not(HasSubstr("TILE=32"))) << both;
  const Outcome none = tiletune({"compile", limited.string(), "--arch", "sm_90", "--shape", "8x64x64"});
  ASSERT_EQ(none.exit_code, 0) << none;
  EXPECT_THAT(none.out, HasSubstr("tiled        no configuration is tuned at 8x64x64\n0 configurations"))
      << none;
  expect_one_line_failure(tiletune({"compile", limited.string(), "--shape", "8x64"}), 2);
  expect_one_line_failure(tiletune({"compile", limited.string(), "--shape", "8x8x8", "--cover"}), 2);
}

// CI's plain fuzz and its sanitized samples: --except-sample N fuzzes exactly the configurations
// that --sample N (the same seed) does not.
TEST_F(CpuTune, AnExceptSampleFuzzesEveryConfigurationTheSampleDoesNot) {
  const std::string tiled = (kTemplates / "tiled.cu").string();
  std::map<std::string, int> fuzzed;  // configuration: runs that fuzzed it
  for (const char* selection : {"--sample", "--except-sample"}) {
    const Outcome run = tiletune({"fuzz", tiled, "--backend", "cpu", "--cases", "2", "--seed", "7",
                                  selection, "3"});
    ASSERT_EQ(run.exit_code, 0) << run;
    EXPECT_THAT(run.out, StartsWith(std::string(selection) == "--sample" ? "3 configurations passed"
                                                                        : "6 configurations passed"))
        << run;
    std::istringstream lines(run.err);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("pass tiled [")) ++fuzzed[line.substr(0, line.find(']'))];
    }
  }
  EXPECT_EQ(fuzzed.size(), 9u) << "tiled's nine configurations";
  for (const auto& [config, runs] : fuzzed) EXPECT_EQ(runs, 1) << config;
  expect_one_line_failure(tiletune({"fuzz", tiled, "--backend", "cpu", "--sample", "3",
                                    "--except-sample", "3"}), 2);
}

// 12 parameters of 10 values: a space of 10^12 configurations. A sample is drawn without listing
// it; what must list it is refused at once, naming the size and the limit, before any file is made.
TEST_F(CpuTune, ASpaceTooLargeToListIsSampledOrRefusedInOneLine) {
  std::string source = read_file(kTemplates / "naive.cu");
  const std::string params = "// tiletune: param BLOCK_X 8 16 32 64 128\n// tiletune: param BLOCK_Y 1 2 4 8 16 32\n";
  ASSERT_NE(source.find(params), std::string::npos);
  std::string twelve;
  for (int p = 0; p < 10; ++p) twelve += "// tiletune: param P" + std::to_string(p) + " 0 1 2 3 4 5 6 7 8 9\n";
  twelve += "// tiletune: param BLOCK_X 8 16 24 32 40 48 56 64 96 128\n"
            "// tiletune: param BLOCK_Y 1 2 3 4 5 6 7 8 16 32\n";
  source.replace(source.find(params), params.size(), twelve);
  const fs::path kernel = dir_ / "huge.cu";
  write_file(kernel, source);

  const Outcome sampled = tiletune({"fuzz", kernel.string(), "--backend", "cpu", "--sample", "2", "--cases", "5"});
  ASSERT_EQ(sampled.exit_code, 0) << sampled;
  EXPECT_THAT(sampled.out, HasSubstr("2 configurations passed, 0 failed")) << sampled;

  const std::string refusal = "naive has 1000000000000 configurations before requirements";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tune", kernel.string(), "--backend", "cpu", "--shape", "40x36x20", "--budget",
                                 "5", "--strategy", "random", "--db", db().string()},
        std::vector<std::string>{"fuzz", kernel.string(), "--backend", "cpu", "--cases", "5"},
        std::vector<std::string>{"compile", kernel.string(), "--arch", "sm_90"}}) {
    SCOPED_TRACE(args.front());
    const Outcome run = tiletune(args);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(refusal)) << run;
    EXPECT_THAT(run.err, HasSubstr("more than the 1000000 tiletune enumerates")) << run;
  }
  EXPECT_FALSE(fs::exists(db())) << "refused before the database was made";
}

// query and list only read: a database kept in rollback-journal mode by another program, write
// protected in a write-protected folder, answers and stays byte for byte as it was, with no
// -wal, -shm or -journal file beside it.
TEST_F(Cli, QueryAndListOnlyReadTheDatabase) {
  const fs::path folder = dir_ / "read-only";
  fs::create_directories(folder);
  const fs::path db = folder / "results.db";
  prepare_database(db, kGpu);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  ASSERT_EQ(read_file(db)[18], 1) << "the file's header says rollback journal";
  const std::string before = fnv1a_hex(read_file(db));
  const auto read_only = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  fs::permissions(db, read_only);
  fs::permissions(folder, read_only | fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec);

  const Outcome query = tiletune({"query", "--shape", "1024x1024x1024", "--gpu", kGpu, "--db", db.string()});
  const Outcome list = tiletune({"list", "--db", db.string()});
  const Outcome strategies = tiletune({"strategies", "--db", db.string(), "--kernel", "nothing", "--shape", "64x64x64"});
  fs::permissions(folder, fs::perms::owner_all);
  EXPECT_EQ(query.exit_code, 0) << query;
  EXPECT_THAT(query.out, HasSubstr("TILE=32,PAD=1,SWIZZLE=0")) << query;
  EXPECT_EQ(list.exit_code, 0) << list;
  EXPECT_THAT(list.out, HasSubstr("tiled 00000000000000aa kernels_src/tiled.cu")) << list;
  EXPECT_EQ(strategies.exit_code, 1) << strategies;
  EXPECT_EQ(fnv1a_hex(read_file(db)), before) << "the database was changed";
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) files.push_back(entry.path().filename().string());
  EXPECT_THAT(files, ::testing::ElementsAre("results.db"));
}

// --- verdicts: no empty or false pass ---------------------------------------------------------

// naive.cu with the classic floor-division grid: N / BLOCK_X blocks, none at all when N < BLOCK_X.
fs::path write_floor_grid_template(const fs::path& dir) {
  std::string source = read_file(kTemplates / "naive.cu");
  const std::string grid = "// tiletune: grid ceil_div(N, BLOCK_X), ceil_div(M, BLOCK_Y)";
  const std::size_t at = source.find(grid);
  EXPECT_NE(at, std::string::npos) << "naive.cu's grid line changed";
  if (at != std::string::npos) source.replace(at, grid.size(), "// tiletune: grid N / BLOCK_X, M / BLOCK_Y");
  const fs::path path = dir / "floorgrid.cu";
  write_file(path, source);
  return path;
}

// No row mask (M % 8 == 0 required) and A read as float4 (lda % 4 == 0 required).
constexpr const char* kAlignedTemplate = R"(// tiletune: name aligned
// tiletune: entry aligned_gemm
// tiletune: param BLOCK_X 16 32
// tiletune: require M % 8 == 0
// tiletune: require lda % 4 == 0
// tiletune: block BLOCK_X, 8
// tiletune: grid ceil_div(N, BLOCK_X), M / 8
extern "C" __global__ void aligned_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K, int lda,
                                        int ldb, int ldc) {
  const int col = blockIdx.x * TT_BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * 8 + threadIdx.y;
  if (col >= N) return;
  const float* a = A + (size_t)row * lda;
  float acc = 0.0f;
  int k = 0;
  for (; k + 4 <= K; k += 4) {
    const float4 v = *reinterpret_cast<const float4*>(a + k);
    acc += v.x * B[(size_t)k * ldb + col];
    acc += v.y * B[(size_t)(k + 1) * ldb + col];
    acc += v.z * B[(size_t)(k + 2) * ldb + col];
    acc += v.w * B[(size_t)(k + 3) * ldb + col];
  }
  for (; k < K; ++k) acc += a[k] * B[(size_t)k * ldb + col];
  C[(size_t)row * ldc + col] = acc;
}
)";

fs::path write_aligned_template(const fs::path& dir, const std::string& extra_requirement = "") {
  std::string source = kAlignedTemplate;
  if (!extra_requirement.empty()) {
    source.insert(source.find("// tiletune: block"), "// tiletune: require " + extra_requirement + "\n");
  }
  const fs::path path = dir / "aligned.cu";
  write_file(path, source);
  return path;
}

// query's leading dimensions and GPU steps (the runtime library's rule, tuner/runtime/selection.h):
// "aligned" needs lda % 4 == 0 and is the fastest; "tiled" (prepare_database) is a version today's
// parser refuses, served unchecked.
void record_aligned(const fs::path& path, const GpuRecord& gpu, GemmShape shape, double median_ms) {
  ResultStore store(path);
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template({"aligned", fnv1a_hex(kAlignedTemplate), "aligned.cu", kAlignedTemplate});
  ResultRecord result = recorded_result("BLOCK_X=32", shape, median_ms);
  result.template_name = "aligned";
  result.template_hash = fnv1a_hex(kAlignedTemplate);
  store.record_result(gpu_id, gpu, result);
  store.record_fuzz_pass(gpu_id, "aligned", result.template_hash, "BLOCK_X=32", 250);
}

TEST_F(Cli, QueryLeadingDimensionsLeaveOutTheConfigurationsWhoseRequirementsExcludeThem) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  record_aligned(db, recorded_gpu(kGpu), kSmall, 0.5);
  const std::vector<std::string> query = {"query", "--shape", "1024x1024x1024", "--db", db.string(),
                                          "--gpu", kGpu, "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = query;
    args.insert(args.end(), extra.begin(), extra.end());
    return tiletune(args);
  };
  {
    const Outcome packed = with({});
    ASSERT_EQ(packed.exit_code, 0) << packed;
    const nlohmann::json answer = parse_json(packed);
    EXPECT_EQ(answer.value("template", ""), "aligned");
    EXPECT_EQ(answer.value("gpu_step", ""), "this_gpu");
    EXPECT_EQ(answer.value("lda", 0), 1024);
    EXPECT_EQ(answer.value("fuzz_cases", 0), 250);
    EXPECT_THAT(answer.value("why", ""), HasSubstr("NVIDIA H200 has a record of 1024x1024x1024"));
  }
  {
    const Outcome strided = with({"--lda", "1026", "--ldc", "1030"});
    ASSERT_EQ(strided.exit_code, 0) << strided;
    const nlohmann::json answer = parse_json(strided);
    EXPECT_EQ(answer.value("template", ""), "tiled");
    EXPECT_EQ(answer.value("config", ""), "TILE=32,PAD=1,SWIZZLE=0");
    EXPECT_EQ(answer.value("exact", false), true);
    EXPECT_EQ(answer.value("lda", 0), 1026);
    EXPECT_EQ(answer.value("ldb", 0), 1024);
    EXPECT_EQ(answer.value("ldc", 0), 1030);
    EXPECT_THAT(answer.value("why", ""), HasSubstr("its requirements were not checked"));
  }
  {
    const Outcome only_aligned = with({"--lda", "1026", "--kernel", "aligned"});
    expect_one_line_failure(only_aligned, 1);
    EXPECT_THAT(only_aligned.err, HasSubstr("no correct configuration recorded for 1024x1024x1024 on "
                                            "NVIDIA H200 of template aligned"));
    EXPECT_THAT(only_aligned.err, HasSubstr("'lda % 4 == 0'"));
  }
  {
    const Outcome too_small = with({"--ldb", "1000"});
    expect_one_line_failure(too_small, 2);
    EXPECT_THAT(too_small.err, HasSubstr("invalid leading dimensions for 1024x1024x1024"));
  }
}

TEST_F(Cli, QueryFallsBackToAGpuOfTheSameComputeCapabilityAndSaysSo) {
  const fs::path db = dir_ / "results.db";
  prepare_database(db, kGpu);
  record_aligned(db, recorded_gpu("NVIDIA GH200 480GB"), kLarge, 60.0);
  const Outcome json = tiletune({"query", "--shape", "4096x4096x4096", "--kernel", "aligned", "--db",
                                 db.string(), "--gpu", kGpu, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json;
  const nlohmann::json answer = parse_json(json);
  EXPECT_EQ(answer.value("gpu", ""), kGpu);
  EXPECT_EQ(answer.value("recorded_gpu", ""), "NVIDIA GH200 480GB");
  EXPECT_EQ(answer.value("gpu_step", ""), "same_compute_capability");
  EXPECT_EQ(answer.value("config", ""), "BLOCK_X=32");

  const Outcome text = tiletune({"query", "--shape", "4096x4096x4096", "--kernel", "aligned", "--db",
                                 db.string(), "--gpu", kGpu});
  ASSERT_EQ(text.exit_code, 0) << text;
  EXPECT_THAT(text.out, HasSubstr("nothing of aligned recorded on NVIDIA H200 fits; NVIDIA GH200 480GB "
                                  "has the same compute capability (9.0)"));
  EXPECT_THAT(text.out, HasSubstr("NVIDIA GH200 480GB 4096x4096x4096: aligned [BLOCK_X=32]"));
  // Its own record comes first: tiled on the H200.
  const Outcome any = tiletune({"query", "--shape", "4096x4096x4096", "--db", db.string(), "--gpu", kGpu, "--json"});
  ASSERT_EQ(any.exit_code, 0) << any;
  EXPECT_EQ(parse_json(any).value("template", ""), "tiled");
  // --exact stays on the GPU asked for.
  expect_one_line_failure(tiletune({"query", "--shape", "4096x4096x4096", "--kernel", "aligned", "--db",
                                    db.string(), "--gpu", kGpu, "--exact"}),
                          1);
}

// The line of `text` that contains `needle`, or "".
std::string line_with(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const std::size_t start = text.rfind('\n', at) + 1;
  return text.substr(start, text.find('\n', at) - start);
}

TEST_F(CpuTune, FuzzOfAFloorDivisionGridFailsEachConfigurationWithAMinimalCaseAndAReplay) {
  const fs::path floorgrid = write_floor_grid_template(dir_);
  const Outcome run = tiletune({"fuzz", floorgrid.string(), "--backend", "cpu", "--cases", "50",
                                "--config", "BLOCK_X=16,BLOCK_Y=4", "--config", "BLOCK_X=128,BLOCK_Y=1"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("0 configurations passed, 2 failed")) << run;
  for (const char* config : {"BLOCK_X=16,BLOCK_Y=4", "BLOCK_X=128,BLOCK_Y=1"}) {
    const std::string fail = line_with(run.err, std::string("FAIL naive [") + config + "]");
    EXPECT_THAT(fail, HasSubstr("cannot run this case: ")) << run;
    EXPECT_THAT(fail, HasSubstr("is 0, outside [1, ")) << run;
  }
  EXPECT_THAT(run.err, HasSubstr("minimal case (")) << run;
  const std::string replay = line_with(run.err, "replay: tiletune fuzz ");
  ASSERT_NE(replay, "") << run;
  const std::size_t case_at = replay.find("--case '");
  ASSERT_NE(case_at, std::string::npos) << replay;
  const std::string minimal = replay.substr(case_at + 8, replay.rfind('\'') - case_at - 8);
  const Outcome again = tiletune({"fuzz", floorgrid.string(), "--backend", "cpu", "--config",
                                  "BLOCK_X=16,BLOCK_Y=4", "--case", minimal});
  EXPECT_EQ(again.exit_code, 1) << again;
  EXPECT_THAT(again.err, HasSubstr("cannot run this case: ")) << again;
}

TEST_F(CpuTune, TuneOfAFloorDivisionGridRecordsNoPassExitsOneAndQueryServesNothing) {
  const fs::path floorgrid = write_floor_grid_template(dir_);
  // At 128x128x32 every configuration's floor-division grid covers C exactly: only the fuzz can
  // tell that smaller shapes are left unwritten.
  const Outcome run = tiletune({"tune", floorgrid.string(), "--backend", "cpu", "--shape", "128x128x32",
                                "--cases", "20", "--db", db().string()});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("(no correct configuration)")) << run;
  EXPECT_THAT(run.err, HasSubstr("have no correct configuration")) << run;
  EXPECT_THAT(run.err, HasSubstr("cannot run this case: ")) << run;
  EXPECT_EQ(recorded(), 21) << "every configuration is recorded, none as ok";
  EXPECT_TRUE(ResultStore(db()).ranking("CPU backend", {128, 128, 32}, std::string("naive")).empty());
  for (const char* shape : {"128x128x32", "100x100x40"}) {  // the tuned shape, and one it is nearest to
    const Outcome query = tiletune({"query", "--shape", shape, "--db", db().string(), "--gpu", "CPU backend"});
    expect_one_line_failure(query, 1);
    EXPECT_THAT(query.err, HasSubstr("no correct configuration recorded")) << query;
  }
}

TEST_F(CpuTune, FuzzDrawsOnlyCasesThatMeetTheRequirementsAndRunsThemAll) {
  const fs::path aligned = write_aligned_template(dir_);
  const Outcome run = tiletune({"fuzz", aligned.string(), "--backend", "cpu", "--cases", "60"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.err, HasSubstr("pass aligned [BLOCK_X=16]: 60 cases")) << run;
  EXPECT_THAT(run.err, HasSubstr("pass aligned [BLOCK_X=32]: 60 cases")) << run;
  EXPECT_THAT(run.out, HasSubstr("2 configurations passed, 0 failed, 0 skipped; 120 cases")) << run;

  // The kernel does need them: without its requirements the same fuzz fails.
  std::string unrequired = read_file(aligned);
  for (const char* line : {"// tiletune: require M % 8 == 0\n", "// tiletune: require lda % 4 == 0\n"}) {
    unrequired.erase(unrequired.find(line), std::string(line).size());
  }
  write_file(dir_ / "unrequired.cu", unrequired);
  const Outcome without = tiletune({"fuzz", (dir_ / "unrequired.cu").string(), "--backend", "cpu",
                                    "--cases", "60", "--config", "BLOCK_X=16"});
  EXPECT_EQ(without.exit_code, 1) << without;

  // A replayed case that a requirement excludes is bad input, naming the requirement.
  const Outcome replay = tiletune({"fuzz", aligned.string(), "--backend", "cpu", "--config", "BLOCK_X=16",
                                   "--case", "16x16x6 lda=6 ldb=16 ldc=16"});
  expect_one_line_failure(replay, 2);
  EXPECT_THAT(replay.err, HasSubstr("does not meet requirement 'lda % 4 == 0'")) << replay;
  const Outcome admitted = tiletune({"fuzz", aligned.string(), "--backend", "cpu", "--config", "BLOCK_X=16",
                                     "--case", "16x16x6 lda=8 ldb=16 ldc=16"});
  EXPECT_EQ(admitted.exit_code, 0) << admitted;
}

TEST_F(CpuTune, RequirementsNoCaseCanMeetFailEachConfigurationNamingTheRequirement) {
  const fs::path aligned = write_aligned_template(dir_, "lda < 0");
  const Outcome run = tiletune({"fuzz", aligned.string(), "--backend", "cpu", "--cases", "20"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.out, HasSubstr("0 configurations passed, 2 failed, 0 skipped; 0 cases")) << run;
  EXPECT_THAT(line_with(run.err, "FAIL aligned [BLOCK_X=16]"),
              HasSubstr("no case meets requirement 'lda < 0'")) << run;
  EXPECT_THAT(run.err, Not(HasSubstr("pass "))) << run;
}

// A fuzz in which every configuration was skipped (here: the CPU backend cannot run a barrier with
// a predicate) tested nothing: it is not a pass, and exits 3 saying so.
TEST_F(CpuTune, AFuzzThatSkippedEveryConfigurationIsNotAPass) {
  std::string source = read_file(kTemplates / "naive.cu");
  const std::string body = "  const int col = blockIdx.x";
  source.insert(source.find(body), "  if (__syncthreads_count(1) == 0) return;\n");
  write_file(dir_ / "predicate.cu", source);
  const Outcome run = tiletune({"fuzz", (dir_ / "predicate.cu").string(), "--backend", "cpu",
                                "--cases", "5", "--sample", "2"});
  EXPECT_EQ(run.exit_code, 3) << run;
  EXPECT_THAT(run.out, HasSubstr("0 configurations passed, 0 failed, 2 skipped")) << run;
  EXPECT_THAT(run.err, HasSubstr("barrier with a predicate")) << run;
  EXPECT_THAT(run.err, HasSubstr("tiletune: nothing was fuzzed: every configuration was skipped on")) << run;
}

// A mutant fuzzed on no case at all is neither caught nor a pass: it is broken, and fails the run.
TEST_F(CpuTune, MutantsCountAMutantFuzzedOnTooFewCasesAsBrokenNotCaught) {
  fs::copy_file(kTemplates / "naive.cu", dir_ / "naive.cu");
  write_file(dir_ / "suite.json", R"({
  "template": "naive.cu",
  "mutants": [
    {
      "name": "unmeetable",
      "bug": "a requirement no case can meet",
      "replace": [ { "from": "// tiletune: block BLOCK_X, BLOCK_Y",
                     "to": "// tiletune: require lda < 0\n// tiletune: block BLOCK_X, BLOCK_Y" } ]
    }
  ]
})");
  const Outcome run = tiletune({"mutants", (dir_ / "suite.json").string(), "--backend", "cpu",
                                "--cases", "10", "--config", "BLOCK_X=16,BLOCK_Y=4"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.err, HasSubstr("BROKEN naive~unmeetable [BLOCK_X=16,BLOCK_Y=4]: no case meets "
                                 "requirement 'lda < 0'")) << run;
  EXPECT_THAT(run.out, HasSubstr("0 mutants caught in every configuration, 1 survived")) << run;
}

// --no-shrink (CI's mutant suites): the catch is the same, its case is the first that failed.
TEST_F(CpuTune, MutantsNoShrinkReportsTheFirstFailingCaseOfTheSameCatch) {
  const std::vector<std::string> mutant = {
      "mutants", (fs::path(TILETUNE_SOURCE_DIR) / "fuzz" / "mutants" / "naive.json").string(),
      "--backend", "cpu", "--mutant", "missing_column_mask", "--config", "BLOCK_X=16,BLOCK_Y=4",
      "--cases", "50"};
  const Outcome shrunk = tiletune(mutant);
  std::vector<std::string> first_case = mutant;
  first_case.push_back("--no-shrink");
  const Outcome found = tiletune(first_case);
  for (const Outcome* run : {&shrunk, &found}) {
    EXPECT_EQ(run->exit_code, 0) << *run;
    EXPECT_THAT(run->out, HasSubstr("1 mutants caught in every configuration, 0 survived")) << *run;
  }
  EXPECT_THAT(shrunk.err, HasSubstr("minimal case: ")) << shrunk;
  EXPECT_THAT(found.err, HasSubstr("first failing case: ")) << found;
  EXPECT_THAT(found.out, HasSubstr("smallest first counterexample")) << found;
}

TEST_F(CpuTune, ANearestShapeAnswerIsAConfigurationWhoseRequirementsAdmitTheShapeAsked) {
  const fs::path aligned = write_aligned_template(dir_);
  for (const fs::path& kernel : {aligned, kTemplates / "naive.cu"}) {
    const Outcome tuned = tiletune({"tune", kernel.string(), "--backend", "cpu", "--shape", "40x36x20",
                                    "--strategy", "random", "--budget", "2", "--cases", "20",
                                    "--db", db().string()});
    ASSERT_EQ(tuned.exit_code, 0) << tuned;
  }
  // M = 41: aligned's `M % 8 == 0` excludes it, whatever its speed; naive answers.
  const Outcome odd = tiletune({"query", "--shape", "41x36x20", "--db", db().string(), "--gpu", "CPU backend"});
  ASSERT_EQ(odd.exit_code, 0) << odd;
  EXPECT_THAT(odd.out, HasSubstr(": naive [")) << odd;
  const Outcome only_aligned = tiletune({"query", "--shape", "41x36x20", "--kernel", "aligned",
                                         "--db", db().string(), "--gpu", "CPU backend", "--json"});
  EXPECT_EQ(only_aligned.exit_code, 1) << only_aligned;
  // M = 48 meets it: aligned may answer again.
  const Outcome even = tiletune({"query", "--shape", "48x36x20", "--kernel", "aligned", "--db",
                                 db().string(), "--gpu", "CPU backend"});
  EXPECT_EQ(even.exit_code, 0) << even;
  EXPECT_THAT(even.out, HasSubstr(": aligned [")) << even;
}

TEST_F(CpuTune, TuneAppliesRequirementsToThePackedShape) {
  const fs::path aligned = write_aligned_template(dir_);
  const Outcome ok = tiletune({"tune", aligned.string(), "--backend", "cpu", "--shape", "40x36x20",
                               "--cases", "20", "--db", db().string()});
  EXPECT_EQ(ok.exit_code, 0) << ok;
  EXPECT_EQ(settled_line(ok), "settled: 2 ok") << ok;
  // K = 22: the packed lda is 22, which `lda % 4 == 0` excludes; nothing to tune is no winner.
  const Outcome excluded = tiletune({"tune", aligned.string(), "--backend", "cpu", "--shape", "40x36x22",
                                     "--cases", "20", "--db", db().string()});
  EXPECT_EQ(excluded.exit_code, 1) << excluded;
  EXPECT_THAT(excluded.out, HasSubstr("(no correct configuration)")) << excluded;

  // Tuned beside a template that answers at that shape, it is no finding: the tune's winner there
  // is the other's.
  const Outcome beside = tiletune({"tune", aligned.string(), (kTemplates / "tiled.cu").string(), "--backend",
                                   "cpu", "--shape", "40x36x22", "--cases", "20", "--db", db().string()});
  EXPECT_EQ(beside.exit_code, 0) << beside;
  EXPECT_THAT(beside.out, HasSubstr("(none for the shape; other templates answer)")) << beside;
  EXPECT_THAT(beside.out, ::testing::Not(HasSubstr("(no correct configuration)"))) << beside;
}

// --- user-like faulty kernels (tests/fixtures/kernels): what each must come to, as a user runs
// fuzz, compile, tune and query on the CPU backend ------------------------------------------

struct FaultyKernel {
  const char* file;
  int fuzz_exit;                 // of `fuzz --backend cpu`
  const char* fuzz_says;         // a line of its output, in part
  int tune_exit;                 // of `tune --backend cpu` at 40x36x24
  const char* settled;           // tune's settled line
  int compile_exit;              // of `compile` (NVRTC, no GPU)
};

std::ostream& operator<<(std::ostream& out, const FaultyKernel& k) { return out << k.file; }

class FaultyKernels : public CpuTune, public ::testing::WithParamInterface<FaultyKernel> {};

TEST_P(FaultyKernels, EndAsTheirCommentSays) {
  const FaultyKernel& k = GetParam();
  const std::string path = (kFixtureTemplates / k.file).string();
  const Outcome fuzz = tiletune({"fuzz", path, "--backend", "cpu", "--cases", "30", "--watchdog", "5"});
  EXPECT_EQ(fuzz.exit_code, k.fuzz_exit) << fuzz;
  EXPECT_THAT(fuzz.out + fuzz.err, HasSubstr(k.fuzz_says)) << fuzz;
  // Never an empty pass: a configuration that passes ran every case asked for.
  EXPECT_THAT(fuzz.err, ::testing::Not(::testing::ContainsRegex(": 0 cases"))) << fuzz;

  const Outcome tune = tiletune({"tune", path, "--backend", "cpu", "--shape", "40x36x24", "--cases",
                                 "30", "--watchdog", "5", "--db", db().string()});
  EXPECT_EQ(tune.exit_code, k.tune_exit) << tune;
  EXPECT_EQ(settled_line(tune), k.settled) << tune;
  // What query serves was proven correct: nothing when no configuration is.
  const Outcome query = tiletune({"query", "--shape", "40x36x24", "--db", db().string(), "--gpu",
                                  "CPU backend"});
  EXPECT_EQ(query.exit_code, k.tune_exit == 0 ? 0 : 1) << query;

  const Outcome compile = tiletune({"compile", path, "--arch", "sm_90"});
  EXPECT_EQ(compile.exit_code, k.compile_exit) << compile;
}

INSTANTIATE_TEST_SUITE_P(
    Cli, FaultyKernels,
    ::testing::Values(
        FaultyKernel{"floor_grid.cu", 1, "cannot run this case", 1, "settled: 6 launch_error", 0},
        FaultyKernel{"rows_of_eight.cu", 0, "2 configurations passed, 0 failed", 0, "settled: 2 ok", 0},
        FaultyKernel{"swapped_signature.cu", 1, "the contract is", 1, "settled: 2 compile_error", 1},
        FaultyKernel{"misspelt_entry.cu", 1, "entry misspelt_entry_gemm is not in the compiled code",
                     1, "settled: 2 compile_error", 1},
        FaultyKernel{"far_write.cu", 1, "crashed on case 1", 0, "settled: 1 crashed, 1 ok", 0},
        FaultyKernel{"endless_loop.cu", 1, "hung (no progress) on case 1", 0, "settled: 1 ok, 1 timeout", 0}),
    [](const ::testing::TestParamInfo<FaultyKernel>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

}  // namespace
}  // namespace tiletune
