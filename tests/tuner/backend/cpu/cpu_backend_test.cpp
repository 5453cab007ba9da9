// The CPU backend: the shipped templates compute correct results through it, the bugs it exists
// to catch (a missing barrier, a read of unwritten shared memory, a trap, divergent barriers) are
// caught, and what it cannot run is refused cleanly. Sanitized (with AddressSanitizer's runtime
// preloaded), an access to the guards or padding and undefined behaviour are findings of a case,
// and the process goes on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include "fuzz/cpu_executor.h"
#include "fuzz/gemm_executor.h"
#include "tuner/backend/cpu/block_scheduler.h"
#include "tuner/backend/cpu/cpu_kernel.h"
#include "tuner/backend/cpu/host_compiler.h"
#include "tuner/backend/cpu/sanitizer_runtime.h"
#include "tuner/backend/entry_contract.h"
#include "tuner/backend/operand_staging.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/configurations.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kTestPoisonBits = 0x7fc0beef;
float test_poison() { return std::bit_cast<float>(kTestPoisonBits); }
bool is_test_poison(float v) { return std::bit_cast<std::uint32_t>(v) == kTestPoisonBits; }

// Kept in the build folder between runs, like a user's cache between fuzz runs; the build key
// changes with the source, the flags and cuda_on_cpu.h.
fs::path test_cache_dir() { return fs::path(TILETUNE_BINARY_DIR) / "cpu-backend-test-cache"; }

// A cache folder of one test's own, removed afterwards.
class ScratchCache {
 public:
  explicit ScratchCache(const std::string& name)
      : path_(test_cache_dir() / (name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
  }
  ~ScratchCache() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

CpuBackendOptions test_options(unsigned workers = 2) {
  CpuBackendOptions options;
  options.cache_dir = test_cache_dir();
  options.workers = workers;
  return options;
}

KernelTemplate shipped(const std::string& name) {
  return load_template(fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / (name + ".cu"));
}

// Poisoned guards and padding around each matrix, as the fuzzer lays them out; filled without the
// fuzz library so that these tests depend on the backend alone.
GuardedMatrix guarded(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  GuardedMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.ld = ld;
  m.guard = kMinGuardElements;
  m.storage.assign(2 * m.guard + std::size_t(rows * ld), test_poison());
  return m;
}

struct Problem {
  GemmCase gemm_case;
  GemmOperands operands;
};

Problem make_problem(int m, int n, int k, int lda, int ldb, int ldc, std::uint64_t seed = 1) {
  Problem p;
  p.gemm_case.problem = {{m, n, k}, lda, ldb, ldc};
  p.gemm_case.data_seed = seed;
  p.operands = {guarded(m, k, lda), guarded(k, n, ldb), guarded(m, n, ldc)};
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> value(-8, 8);
  for (GuardedMatrix* x : {&p.operands.a, &p.operands.b}) {
    for (std::int64_t r = 0; r < x->rows; ++r) {
      for (std::int64_t c = 0; c < x->cols; ++c) x->at(r, c) = float(value(random));
    }
  }
  return p;
}

// Exact for small integers. Empty when C holds A*B in its region and poison everywhere else.
std::string check_result(const Problem& p) {
  const GuardedMatrix& a = p.operands.a;
  const GuardedMatrix& b = p.operands.b;
  const GuardedMatrix& c = p.operands.c;
  int wrong = 0;
  std::string first;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t col = 0; col < c.cols; ++col) {
      double expected = 0;
      for (std::int64_t i = 0; i < a.cols; ++i) expected += double(a.at(r, i)) * b.at(i, col);
      if (c.at(r, col) != float(expected)) {
        if (wrong++ == 0) {
          first = "C(" + std::to_string(r) + "," + std::to_string(col) +
                  ") = " + std::to_string(c.at(r, col)) + ", expected " + std::to_string(expected);
        }
      }
    }
  }
  for (std::size_t i = 0; i < c.storage.size(); ++i) {
    const std::int64_t offset = std::int64_t(i) - std::int64_t(c.guard);
    const bool inside = offset >= 0 && offset < c.rows * c.ld && offset % c.ld < c.cols;
    if (!inside && !is_test_poison(c.storage[i])) {
      return "C's storage element " + std::to_string(i) + " outside the matrix was written";
    }
  }
  if (wrong > 0) return std::to_string(wrong) + " wrong elements, first " + first;
  return {};
}

std::string run_and_check(CpuExecutor& executor, int m, int n, int k, int lda, int ldb, int ldc,
                          std::uint64_t schedule_seed) {
  Problem p = make_problem(m, n, k, lda, ldb, ldc, schedule_seed + 7);
  p.gemm_case.schedule_seed = schedule_seed;
  executor.run(p.gemm_case, p.operands);
  return check_result(p);
}

struct Shape {
  int m, n, k, lda, ldb, ldc;
};
const Shape kAwkwardShapes[] = {
    {37, 29, 45, 50, 33, 31}, {1, 1, 1, 1, 1, 1},         {64, 64, 64, 64, 64, 64},
    {5, 70, 3, 9, 71, 80},    {33, 17, 100, 100, 17, 17},
};

void expect_correct(const KernelTemplate& tmpl, const std::string& config_text) {
  CpuExecutor executor(tmpl, tmpl.parse_configuration(config_text), test_options());
  for (const Shape& s : kAwkwardShapes) {
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      EXPECT_EQ(run_and_check(executor, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, seed), "")
          << tmpl.name << " " << config_text << " on " << s.m << "x" << s.n << "x" << s.k
          << " seed " << seed;
    }
  }
}

TEST(CpuBackend, NaiveIsCorrectOnAwkwardShapes) {
  const KernelTemplate naive = shipped("naive");
  for (const char* config : {"BLOCK_X=8,BLOCK_Y=8", "BLOCK_X=32,BLOCK_Y=4", "BLOCK_X=64,BLOCK_Y=16",
                             "BLOCK_X=128,BLOCK_Y=1"}) {
    expect_correct(naive, config);
  }
}

TEST(CpuBackend, TiledIsCorrectOnAwkwardShapes) {
  const KernelTemplate tiled = shipped("tiled");
  for (const char* config : {"TILE=8,PAD=0,SWIZZLE=1", "TILE=32,PAD=1,SWIZZLE=0",
                             "TILE=16,PAD=0,SWIZZLE=0", "TILE=16,PAD=1,SWIZZLE=0"}) {
    expect_correct(tiled, config);
  }
}

TEST(CpuBackend, EveryShippedConfigurationRuns) {
  for (const char* name : {"naive", "tiled"}) {
    const KernelTemplate tmpl = shipped(name);
    for (const Configuration& config : enumerate_configurations(tmpl)) {
      CpuExecutor executor(tmpl, config, test_options());
      EXPECT_EQ(run_and_check(executor, 37, 29, 45, 50, 33, 31, 5), "")
          << name << " " << config.to_string();
    }
  }
}

// 15 tiles of 128 x 128 in waves of STREAM_K x SM_COUNT blocks: whole waves only (1, 3), whole
// waves and a shared one (2, 4), every tile shared (8, 12), fewer tiles than blocks (16). Every
// share must add up to C.
TEST(CpuBackend, WarpTiledStreamKIsRightForEveryMultiprocessorCount) {
  const KernelTemplate tmpl = shipped("warp_tiled");
  for (const char* tile_and_stream_k : {"BM=128,BN=128,STREAM_K=1", "BM=128,BN=128,STREAM_K=4",
                                        "BM=64,BN=128,STREAM_K=2"}) {
    const std::string stream_k = tile_and_stream_k;
    const Configuration config = tmpl.parse_configuration(
        stream_k + ",BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1");
    CpuExecutor executor(tmpl, config, test_options());
    std::set<int> counts;
    for (std::uint64_t seed = 0; counts.size() < 4; ++seed) {
      if (!counts.insert(drawn_sm_count(seed)).second) continue;
      EXPECT_EQ(run_and_check(executor, 300, 600, 77, 80, 603, 601, seed), "")
          << "STREAM_K " << stream_k << ", SM_COUNT " << drawn_sm_count(seed);
    }
  }
}

// warp_tiled copies B 16 bytes at a time only from aligned rows: where B is read by 16 rows of
// blocks or more (copy_unaligned), the launcher copies an unaligned B into aligned rows first and
// the kernel reads that copy. Right with the copy, and without it at fewer rows of blocks.
TEST(CpuBackend, WarpTiledIsRightWithAndWithoutTheAligningCopyOfB) {
  const KernelTemplate tmpl = shipped("warp_tiled");
  const Configuration config = tmpl.parse_configuration(
      "BM=32,BN=64,BK=16,TM=4,TN=4,STAGES=3,SWIZZLE=0,SPLIT_K=1,STREAM_K=0");
  CpuExecutor executor(tmpl, config, test_options());
  for (const int m : {490, 480}) {
    const GemmProblem problem{{m, 70, 45}, 50, 73, 71};
    const LaunchGeometry geometry = tmpl.launch_geometry(config, problem.shape, /*sm_count=*/132);
    EXPECT_EQ(plan_operand_staging(geometry, 0, 4, problem).copies.size(), m > 480 ? 1u : 0u)
        << m << " rows: " << (m + 31) / 32 << " rows of blocks";
    for (std::uint64_t seed = 0; seed < 2; ++seed) {
      EXPECT_EQ(run_and_check(executor, m, 70, 45, 50, 73, 71, seed), "") << m << " rows, seed " << seed;
    }
  }
}

TEST(CpuBackend, ResultDoesNotDependOnWorkerCount) {
  const KernelTemplate tiled = shipped("tiled");
  const Configuration config = tiled.parse_configuration("TILE=8,PAD=1,SWIZZLE=0");
  for (unsigned workers : {1u, 3u, 8u}) {
    CpuExecutor executor(tiled, config, test_options(workers));
    EXPECT_EQ(executor.backend_name(), "cpu (" + std::to_string(workers) + " workers)");
    EXPECT_EQ(run_and_check(executor, 70, 45, 33, 40, 50, 45, 9), "") << workers << " workers";
  }
}

// tiled with one of its two barriers deleted.
KernelTemplate tiled_without_barrier(bool first) {
  std::string source = shipped("tiled").source;
  const std::string barrier = "__syncthreads();";
  const std::size_t at = first ? source.find(barrier) : source.rfind(barrier);
  EXPECT_NE(at, std::string::npos);
  source.replace(at, barrier.size(), "");
  return parse_template(source, "tiled_mutant.cu");
}

// How many of the schedule seeds 0..seeds-1 give a wrong result on a shape with several K tiles.
int wrong_seeds(const KernelTemplate& tmpl, const std::string& config, int seeds) {
  CpuExecutor executor(tmpl, tmpl.parse_configuration(config), test_options());
  int wrong = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    wrong += run_and_check(executor, 24, 24, 64, 64, 24, 24, std::uint64_t(seed)).empty() ? 0 : 1;
  }
  return wrong;
}

TEST(CpuBackend, MissingSecondBarrierIsCaught) {
  EXPECT_GT(wrong_seeds(tiled_without_barrier(false), "TILE=8,PAD=0,SWIZZLE=0", 8), 0);
  EXPECT_GT(wrong_seeds(tiled_without_barrier(false), "TILE=16,PAD=1,SWIZZLE=0", 8), 0);
}

TEST(CpuBackend, MissingFirstBarrierIsCaught) {
  EXPECT_GT(wrong_seeds(tiled_without_barrier(true), "TILE=8,PAD=0,SWIZZLE=1", 8), 0);
  EXPECT_GT(wrong_seeds(tiled_without_barrier(true), "TILE=32,PAD=0,SWIZZLE=0", 8), 0);
}

TEST(CpuBackend, IntactTiledIsRightForEverySeed) {
  EXPECT_EQ(wrong_seeds(shipped("tiled"), "TILE=8,PAD=0,SWIZZLE=0", 32), 0);
}

// One warp per element of C: the lanes stage A's row with asynchronous copies (masked ones read
// nothing), multiply, and sum with shuffles.
KernelTemplate warp_dot() {
  return parse_template(R"(// tiletune: entry warp_dot
// tiletune: param P 0
// tiletune: block 32
// tiletune: grid N, M
#include <tiletune/async_copy.h>
extern "C" __global__ void warp_dot(const float* A, const float* B, float* C, int M, int N, int K,
                                    int lda, int ldb, int ldc) {
  __shared__ __align__(16) float row[32];
  const int lane = threadIdx.x, r = blockIdx.y, col = blockIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 32) {
    const int k = k0 + lane;
    tt_cp_async_4(row + lane, A + (size_t)r * lda + k, k < K ? 4 : 0);
    tt_cp_async_commit();
    tt_cp_async_wait<0>();
    __syncwarp();
    if (k < K) acc += row[lane] * B[(size_t)k * ldb + col];
    __syncwarp();
  }
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) C[(size_t)r * ldc + col] = acc;
}
)",
                        "warp_dot.cu");
}

TEST(CpuBackend, AWarpLevelTemplateIsCorrectOnAwkwardShapes) {
  expect_correct(warp_dot(), "P=0");
}

// A one-parameter template around `body`, one thread per element of C, 8x8 blocks.
KernelTemplate custom(const std::string& name, const std::string& body,
                      const std::string& shared = "0") {
  return parse_template(R"(// tiletune: entry custom_gemm
// tiletune: param TILE 8
// tiletune: block TILE, TILE
// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
// tiletune: shared )" + shared +
                            R"(
extern "C" __global__ void custom_gemm(const float* A, const float* B, float* C, int M, int N,
                                       int K, int lda, int ldb, int ldc) {
  const int row = blockIdx.y * TT_TILE + threadIdx.y;
  const int col = blockIdx.x * TT_TILE + threadIdx.x;
)" + body + "}\n",
                        name + ".cu");
}

void expect_unsupported(const KernelTemplate& tmpl, const std::string& what) {
  try {
    CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
    ADD_FAILURE() << tmpl.name << " was accepted";
  } catch (const UnsupportedOnBackend& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("not supported on the CPU backend: ", 0), 0u) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  }
}

TEST(CpuBackend, WarpReductionIsUnsupported) {
  expect_unsupported(custom("reduction", R"(
  const unsigned v = __reduce_add_sync(0xffffffffu, 1u);
  if (row < M && col < N) C[row * ldc + col] = v;
)"),
                     "__reduce_add_sync");
}

TEST(CpuBackend, InlineAssemblyIsUnsupported) {
  expect_unsupported(custom("ptx", R"(
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
)"),
                     "inline assembly");
}

TEST(CpuBackend, UnsupportedFeatureHiddenInAMacroIsFound) {
  expect_unsupported(custom("macro", R"(
#define TT_MATCH(v) __match_any_sync(~0u, v)
  const unsigned v = TT_MATCH(1u);
  (void)v;
)"),
                     "__match_any_sync");
}

TEST(CpuBackend, CudaHeaderIsUnsupported) {
  expect_unsupported(custom("wmma", "#include <mma.h>\n"), "<mma.h>");
}

TEST(CpuBackend, FeaturesInCommentsAndDisabledBranchesAreIgnored) {
  const KernelTemplate tmpl = custom("quiet", R"(
  // asm volatile("trap;"); __shfl_down_sync
  /* __syncwarp(); */
#if 0
  asm("trap;");
#endif
  const char* text = "asm __shfl_sync";
  (void)text;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * lda + k] * B[k * ldb + col];
  C[row * ldc + col] = acc;
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  EXPECT_EQ(run_and_check(executor, 20, 9, 13, 13, 9, 9, 0), "");
}

TEST(CpuBackend, CompileErrorCarriesTheCompilersMessage) {
  const KernelTemplate broken = custom("broken", R"(
  int x = undeclared_name + 1;
)");
  try {
    CpuExecutor executor(broken, broken.parse_configuration("TILE=8"), test_options());
    ADD_FAILURE() << "a broken template compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("does not compile"), std::string::npos) << e.what();
    EXPECT_NE(e.log().find("undeclared_name"), std::string::npos) << e.log();
    // The log names the template and the line in it.
    EXPECT_NE(e.log().find("broken.cu:11"), std::string::npos) << e.log();
  }
}

// custom_gemm declared with `parameters` instead of the contract's; its body is the naive product
// for packed matrices, so that nothing but the signature is wrong.
KernelTemplate with_signature(const std::string& name, const std::string& parameters) {
  return parse_template(R"(// tiletune: entry custom_gemm
// tiletune: param TILE 8
// tiletune: block TILE, TILE
// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
extern "C" __global__ void custom_gemm()" + parameters + R"() {
  const int row = blockIdx.y * TT_TILE + threadIdx.y;
  const int col = blockIdx.x * TT_TILE + threadIdx.x;
  if (row >= int(M) || col >= int(N)) return;
  float acc = 0;
  for (int i = 0; i < int(K); ++i) acc += A[row * K + i] * B[i * N + col];
  C[row * N + col] = acc;
}
)",
                        name + ".cu");
}

// The one line an entry of another type is refused with when it is loaded, or "" when it loads.
std::string entry_refusal(const KernelTemplate& tmpl) {
  try {
    CpuKernel kernel(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
    return "";
  } catch (const EntryContractError& e) {
    EXPECT_NE(std::string(e.what()).find(tmpl.name + " (TILE=8): "), std::string::npos) << e.what();
    return e.log();
  }
}

TEST(CpuBackend, AnEntryTakingOtherParametersIsRefusedWhenLoadedNamingItsType) {
  EXPECT_EQ(entry_refusal(with_signature(
                "swapped", "int M, int N, int K, const float* A, const float* B, float* C")),
            "entry custom_gemm is void(int, int, int, const float*, const float*, float*); the "
            "contract is void(const float* A, const float* B, float* C, int M, int N, int K, int "
            "lda, int ldb, int ldc)");
  // Sizes and places the GPU's layout check cannot tell from the contract's.
  EXPECT_THAT(entry_refusal(with_signature("unsigned_sizes",
                                           "const float* A, const float* B, float* C, unsigned M, "
                                           "unsigned N, unsigned K, int lda, int ldb, int ldc")),
              ::testing::StartsWith("entry custom_gemm is void(const float*, const float*, float*, "
                                    "unsigned int, unsigned int, unsigned int, int, int, int);"));
  EXPECT_THAT(entry_refusal(with_signature("output_first",
                                           "float* C, const float* A, const float* B, int M, int "
                                           "N, int K, int lda, int ldb, int ldc")),
              ::testing::StartsWith("entry custom_gemm is void(float*, const float*, const float*, "));
}

TEST(CpuBackend, AnEntryThatIsNotInTheCodeIsRefusedInOneLine) {
  KernelTemplate misspelt = custom("misspelt", "  if (row < M && col < N) C[row * ldc + col] = 0;\n");
  misspelt.entry = "custom_gemmm";
  const std::string refusal = entry_refusal(misspelt);
  EXPECT_THAT(refusal, ::testing::StartsWith("entry custom_gemmm is not in the compiled code: "));
  EXPECT_THAT(refusal, ::testing::HasSubstr("custom_gemmm"));
  EXPECT_THAT(refusal, ::testing::Not(::testing::HasSubstr("\n")));

  KernelTemplate mangled = custom("mangled", "  if (row < M && col < N) C[row * ldc + col] = 0;\n");
  mangled.source.replace(mangled.source.find("extern \"C\" "), 11, "");
  EXPECT_EQ(entry_refusal(mangled), "entry custom_gemm is not in the compiled code under that name "
                                    "(a C++ name, mangled); declare it extern \"C\"");
}

TEST(CpuBackend, AnEntryOfTheContractsTypeLoadsWhateverItsQualifiers) {
  EXPECT_EQ(entry_refusal(with_signature("restricted",
                                         "const float* __restrict__ A, const float* __restrict__ "
                                         "B, float* __restrict__ C, const int M, const int N, "
                                         "const int K, int lda, int ldb, int ldc")),
            "");
}

TEST(CpuBackend, SecondBuildComesFromTheCache) {
  const KernelTemplate naive = shipped("naive");
  const Configuration config = naive.parse_configuration("BLOCK_X=16,BLOCK_Y=16");
  const ScratchCache cache("cache-test");
  CpuBackendOptions options = test_options();
  options.cache_dir = cache.path();
  const auto start = std::chrono::steady_clock::now();
  const CpuKernel first(naive, config, options);
  const auto middle = std::chrono::steady_clock::now();
  const CpuKernel second(naive, config, options);
  const auto end = std::chrono::steady_clock::now();
  EXPECT_FALSE(first.from_cache());
  EXPECT_TRUE(second.from_cache());
  EXPECT_EQ(first.object_path(), second.object_path());
  EXPECT_LT(end - middle, (middle - start) / 2);

  // Another configuration, or another compiler flag, is another object.
  const CpuKernel other(naive, naive.parse_configuration("BLOCK_X=16,BLOCK_Y=8"), options);
  EXPECT_FALSE(other.from_cache());
  EXPECT_NE(other.object_path(), first.object_path());
}

// A cached object damaged on disk (here truncated to 100 bytes) does not load: it is built again,
// and the cache holds a sound object afterwards.
TEST(CpuBackend, ADamagedCacheEntryIsBuiltAgain) {
  const KernelTemplate naive = shipped("naive");
  const Configuration config = naive.parse_configuration("BLOCK_X=16,BLOCK_Y=16");
  const ScratchCache cache("damaged-cache-test");
  CpuBackendOptions options = test_options();
  options.cache_dir = cache.path();
  fs::path object;
  {
    const CpuKernel built(naive, config, options);
    object = built.object_path();
  }
  fs::resize_file(object, 100);
  const CpuKernel rebuilt(naive, config, options);
  EXPECT_FALSE(rebuilt.from_cache()) << "the damaged object was trusted";
  EXPECT_EQ(rebuilt.object_path(), object);
  EXPECT_GT(fs::file_size(object), 100u);
  const CpuKernel again(naive, config, options);
  EXPECT_TRUE(again.from_cache());
}

// With GCC, cuda_on_cpu.h is precompiled once per cache folder and flag set, and later builds use
// it; a damaged one (here truncated, which GCC cannot read) fails no build: it is removed, the
// kernel is compiled from the header's text, and the next build makes it again.
std::vector<fs::path> precompiled_headers(const fs::path& cache) {
  std::vector<fs::path> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(cache)) {
    if (entry.path().extension() == ".gch") found.push_back(entry.path());
  }
  return found;
}

TEST(CpuBackend, TheHeaderIsPrecompiledOnceAndADamagedOneIsMadeAgain) {
  if (!HostCompiler("").is_gcc()) {
    GTEST_SKIP() << "the host compiler is not GCC: kernels include the header's text";
  }
  const KernelTemplate naive = shipped("naive");
  const ScratchCache cache("precompiled-header-test");
  CpuBackendOptions options = test_options();
  options.cache_dir = cache.path();
  const CpuKernel first(naive, naive.parse_configuration("BLOCK_X=16,BLOCK_Y=16"), options);
  const std::vector<fs::path> made = precompiled_headers(cache.path());
  ASSERT_EQ(made.size(), 1u);
  const CpuKernel second(naive, naive.parse_configuration("BLOCK_X=16,BLOCK_Y=8"), options);
  EXPECT_EQ(precompiled_headers(cache.path()), made) << "one for both configurations";

  fs::resize_file(made[0], 100);
  const CpuKernel third(naive, naive.parse_configuration("BLOCK_X=8,BLOCK_Y=8"), options);
  EXPECT_FALSE(third.from_cache());
  EXPECT_TRUE(precompiled_headers(cache.path()).empty()) << "the damaged header was kept";
  const CpuKernel fourth(naive, naive.parse_configuration("BLOCK_X=32,BLOCK_Y=4"), options);
  ASSERT_EQ(precompiled_headers(cache.path()), made);
  EXPECT_GT(fs::file_size(made[0]), 100u);
}

// Blocks start in an order drawn from the schedule seed: always a permutation of the launch's
// blocks, and over seeds by index, from the last and strided, so that a result that depends on
// which block runs first fails under some seeds.
TEST(CpuBackend, BlocksStartInAnOrderDrawnFromTheScheduleSeed) {
  std::set<std::string> kinds;
  for (std::uint64_t count : {1u, 2u, 3u, 7u, 12u, 64u, 97u}) {
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      const BlockOrder order = block_order(seed, count);
      std::vector<std::uint64_t> started;
      for (std::uint64_t i = 0; i < count; ++i) started.push_back(order(i));
      std::vector<std::uint64_t> sorted = started;
      std::sort(sorted.begin(), sorted.end());
      for (std::uint64_t i = 0; i < count; ++i) ASSERT_EQ(sorted[i], i) << "seed " << seed << " of " << count;
      if (count < 3) continue;
      kinds.insert(started[0] == 0 && started[1] == 1           ? "by index"
                   : started[0] == count - 1 && started[1] == count - 2 ? "from the last"
                                                                       : "strided");
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"by index", "from the last", "strided"}));
}

TEST(CpuBackend, TrapIsALaunchError) {
  const KernelTemplate tmpl = custom("trapping", R"(
  if (M == 16 && row == 3 && col == 2) __trap();
  if (row < M && col < N) C[row * ldc + col] = 0;
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  Problem p = make_problem(16, 16, 4, 4, 16, 16);
  try {
    executor.run(p.gemm_case, p.operands);
    ADD_FAILURE() << "the trap went unnoticed";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("__trap() in block (0, 0, 0), thread (2, 3, 0)"),
              std::string::npos)
        << e.what();
  }
  // The other fibers were unwound and the workers go on: the next launch runs normally.
  Problem q = make_problem(8, 8, 4, 4, 8, 8);
  executor.run(q.gemm_case, q.operands);
  EXPECT_EQ(q.operands.c.at(7, 7), 0.0f);
}

TEST(CpuBackend, DivergentBarriersAreALaunchError) {
  const KernelTemplate tmpl = custom("divergent", R"(
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    __syncthreads();
  }
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  Problem p = make_problem(8, 8, 1, 1, 8, 8);
  try {
    executor.run(p.gemm_case, p.operands);
    ADD_FAILURE() << "divergent barriers went unnoticed";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("barrier divergence"), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, ThreadsThatReturnedDoNotBlockABarrier) {
  // Half the threads leave before a barrier the others meet at twice.
  const KernelTemplate tmpl = custom("early_exit", R"(
  __shared__ float cell[TT_TILE][TT_TILE];
  if (threadIdx.x % 2 == 1) return;
  cell[threadIdx.y][threadIdx.x] = 1.0f;
  __syncthreads();
  cell[threadIdx.y][threadIdx.x] += 1.0f;
  __syncthreads();
  if (row < M && col < N) C[row * ldc + col] = cell[threadIdx.y][threadIdx.x];
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  Problem p = make_problem(8, 8, 1, 1, 8, 8);
  executor.run(p.gemm_case, p.operands);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) {
      if (c % 2 == 0) {
        EXPECT_EQ(p.operands.c.at(r, c), 2.0f);
      } else {
        EXPECT_TRUE(is_test_poison(p.operands.c.at(r, c)));
      }
    }
  }
}

TEST(CpuBackend, UnwrittenSharedMemoryReadsAsNaN) {
  // Every block reads a shared cell no thread wrote, after the previous block on the same worker
  // wrote all of them.
  const KernelTemplate tmpl = custom("stale_shared", R"(
  __shared__ float cell[TT_TILE * TT_TILE];
  const int me = threadIdx.y * TT_TILE + threadIdx.x;
  if (blockIdx.x % 2 == 0) cell[me] = 5.0f;
  __syncthreads();
  if (row < M && col < N) C[row * ldc + col] = cell[me];
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options(1));
  Problem p = make_problem(8, 32, 1, 1, 32, 32);
  executor.run(p.gemm_case, p.operands);
  for (int c = 0; c < 32; ++c) {
    if ((c / 8) % 2 == 0) {
      EXPECT_EQ(p.operands.c.at(0, c), 5.0f) << c;
    } else {
      EXPECT_TRUE(std::isnan(p.operands.c.at(0, c))) << c << ": " << p.operands.c.at(0, c);
    }
  }
}

// The tiled product over the TILE x TILE tiles As and Bs, for a kernel that has placed them in
// dynamic shared memory and knows its row and col.
const std::string kTiledProduct = R"(
  const int tx = threadIdx.x, ty = threadIdx.y;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TT_TILE) {
    As[ty * TT_TILE + tx] = (row < M && k0 + tx < K) ? A[row * lda + k0 + tx] : 0.0f;
    Bs[ty * TT_TILE + tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * ldb + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TT_TILE; ++k) acc += As[ty * TT_TILE + k] * Bs[k * TT_TILE + tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * ldc + col] = acc;
)";

// That kernel computes the product right on awkward shapes.
void expect_tiled_product_right(const KernelTemplate& tmpl) {
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  for (const Shape& s : kAwkwardShapes) {
    EXPECT_EQ(run_and_check(executor, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, 3), "");
  }
}

TEST(CpuBackend, DynamicSharedMemoryWorks) {
  // tiled with its two tiles in dynamic shared memory.
  expect_tiled_product_right(custom("dynamic_tiled", R"(
  extern __shared__ __align__(16) float tiles[];
  float* As = tiles;
  float* Bs = tiles + TT_TILE * TT_TILE;
)" + kTiledProduct,
                                    "2 * TILE * TILE * 4"));
}

TEST(CpuBackend, DynamicSharedMemoryDeclaredInAFunctionTemplateWorks) {
  // The same tiles, declared in a device function template the kernel calls (where GCC calls the
  // array's thread_local init function unconditionally: it used to crash the CPU backend).
  const KernelTemplate tmpl = parse_template(R"(// tiletune: entry templated_gemm
// tiletune: param TILE 8
// tiletune: block TILE, TILE
// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
// tiletune: shared 2 * TILE * TILE * 4
template <int Tile>
__device__ void tile_product(const float* A, const float* B, float* C, int M, int N, int K,
                             int lda, int ldb, int ldc) {
  extern __shared__ float tiles[];
  float* As = tiles;
  float* Bs = tiles + Tile * Tile;
  const int row = blockIdx.y * Tile + threadIdx.y, col = blockIdx.x * Tile + threadIdx.x;
)" + kTiledProduct + R"(
}
extern "C" __global__ void templated_gemm(const float* A, const float* B, float* C, int M, int N,
                                          int K, int lda, int ldb, int ldc) {
  tile_product<TT_TILE>(A, B, C, M, N, K, lda, ldb, ldc);
}
)",
                                             "templated_dynamic.cu");
  expect_tiled_product_right(tmpl);
}

TEST(CpuBackend, DynamicSharedMemoryDeclaredInNamespacesWorks) {
  // A block-scope extern declaration names an entity of its namespace: the storage is defined
  // there (one array in a nested namespace, one of the same name in a function template of
  // another namespace, where the init-function call is unconditional too).
  const KernelTemplate tmpl = parse_template(R"(// tiletune: entry namespaced_gemm
// tiletune: param TILE 8
// tiletune: block TILE, TILE
// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
// tiletune: shared 2 * TILE * TILE * 4
namespace outer::inner {
__device__ float* a_tile() {
  extern __shared__ float tiles[];
  return tiles;
}
}  // namespace outer::inner
namespace other {
template <int Tile>
__device__ float* b_tile() {
  extern __shared__ float tiles[];
  return tiles + Tile * Tile;
}
}  // namespace other
extern "C" __global__ void namespaced_gemm(const float* A, const float* B, float* C, int M, int N,
                                           int K, int lda, int ldb, int ldc) {
  float* As = outer::inner::a_tile();
  float* Bs = other::b_tile<TT_TILE>();
  const int row = blockIdx.y * TT_TILE + threadIdx.y, col = blockIdx.x * TT_TILE + threadIdx.x;
)" + kTiledProduct + R"(
}
)",
                                             "namespaced_dynamic.cu");
  expect_tiled_product_right(tmpl);
}

TEST(CpuBackend, TooMuchDynamicSharedMemoryIsUnsupported) {
  const KernelTemplate tmpl = custom("greedy", "", "300000");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  Problem p = make_problem(8, 8, 1, 1, 8, 8);
  EXPECT_THROW(executor.run(p.gemm_case, p.operands), UnsupportedOnBackend);
}

TEST(CpuBackend, BlockTooLargeForCudaIsALaunchError) {
  const KernelTemplate naive = shipped("naive");
  CpuKernel kernel(naive, naive.parse_configuration("BLOCK_X=8,BLOCK_Y=8"), test_options());
  LaunchGeometry geometry;
  geometry.block = {64, 32, 1};
  EXPECT_THROW(kernel.launch(geometry, nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 1, 0),
               LaunchError);
}

TEST(CpuBackend, AtomicsAreEmulated) {
  // Every thread of the block adds 1 to C(0, 0).
  const KernelTemplate tmpl = custom("atomic", R"(
  if (row >= M || col >= N) return;
  if (row == 0 && col == 0) C[0] = 0.0f;
  __syncthreads();
  atomicAdd(&C[0], 1.0f);
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), test_options());
  Problem p = make_problem(8, 8, 1, 1, 8, 8);
  executor.run(p.gemm_case, p.operands);
  EXPECT_EQ(p.operands.c.at(0, 0), 64.0f);
}

TEST(CpuBackend, ZeroOutputClearsCBeforeAKernelThatAddsIntoIt) {
  // Split-K's contract: two slices (gridDim.z) each add half of K into C, which starts as NaN
  // poison; only the launcher's clearing makes the sum right, and only inside M x N.
  const std::string source = R"(// tiletune: name adder
// tiletune: entry adder_gemm
// tiletune: param SPLIT 1 2
// tiletune: block 8, 8
// tiletune: grid ceil_div(N, 8), ceil_div(M, 8), SPLIT
// tiletune: zero_output SPLIT > 1
extern "C" __global__ void adder_gemm(const float* A, const float* B, float* C, int M, int N,
                                      int K, int lda, int ldb, int ldc) {
  const int row = blockIdx.y * 8 + threadIdx.y, col = blockIdx.x * 8 + threadIdx.x;
  if (row >= M || col >= N) return;
  const int half = (K + 1) / 2, begin = TT_SPLIT > 1 ? blockIdx.z * half : 0;
  const int end = TT_SPLIT > 1 ? min(K, begin + half) : K;
  float acc = 0.0f;
  for (int k = begin; k < end; ++k) acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
  if (TT_SPLIT > 1) atomicAdd(&C[(size_t)row * ldc + col], acc); else C[(size_t)row * ldc + col] = acc;
}
)";
  const KernelTemplate tmpl = parse_template(source, "adder.cu");
  for (const char* config : {"SPLIT=1", "SPLIT=2"}) {
    SCOPED_TRACE(config);
    CpuExecutor executor(tmpl, tmpl.parse_configuration(config), test_options());
    for (const Shape& s : kAwkwardShapes) {
      EXPECT_EQ(run_and_check(executor, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, 1), "");
    }
  }
}

TEST(CpuBackend, MissingCompilerIsReported) {
  const KernelTemplate naive = shipped("naive");
  CpuBackendOptions options = test_options();
  options.compiler = "/nonexistent/c++";
  const ScratchCache cache("no-compiler");
  options.cache_dir = cache.path();
  EXPECT_THROW(CpuKernel(naive, naive.parse_configuration("BLOCK_X=8,BLOCK_Y=8"), options),
               std::runtime_error);
}

bool asan_runtime_loaded() { return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr; }

TEST(CpuBackend, SanitizingWithoutTheRuntimeIsRefused) {
  if (asan_runtime_loaded()) GTEST_SKIP() << "AddressSanitizer's runtime is loaded";
  const KernelTemplate naive = shipped("naive");
  CpuBackendOptions options = test_options();
  options.sanitize = true;
  try {
    CpuKernel kernel(naive, naive.parse_configuration("BLOCK_X=8,BLOCK_Y=8"), options);
    ADD_FAILURE() << "an instrumented kernel was loaded without the runtime";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("LD_PRELOAD"), std::string::npos) << e.what();
  }
}

// ---- sanitized kernels ------------------------------------------------------------------------

TEST(SanitizerReports, AsanReportIsCondensedToTheTemplatesLine) {
  const std::string text = R"(=================================================================
==5489==ERROR: AddressSanitizer: use-after-poison on address 0x621000006d1c at pc 0x7fb670ccdd75
READ of size 4 at 0x621000006d1c thread T1
    #0 0x7fb670ccdd74 in __ldg<float> /home/u/.cache/tiletune/cpu/cuda_on_cpu-34ed8e3f4041b3c5.h:218
    #1 0x7fb670ccdd74 in tiled_gemm /work/kernels_src/tiled.cu:43
    #2 0x56379f80cfcc in run_thread /work/main/fuzz/cpu_backend/block_scheduler.cpp:104
    #3 0x56379f98494e in make_fcontext (/work/main/build/tools/tiletune+0x25f94e)

0x621000006d1c is located 2076 bytes inside of 4100-byte region [0x621000006500,0x621000007504)
allocated by thread T0 here:
    #0 0x7fb6706b94c8 in operator new(unsigned long) ../src/libsanitizer/asan/asan_new_delete.cpp:95
    #1 0x56379f82cd7f in tiletune::GuardedMatrix::GuardedMatrix(long, long, long) operands.h:25

SUMMARY: AddressSanitizer: use-after-poison /work/kernels_src/tiled.cu:43 in tiled_gemm
)";
  SanitizerReport report = parse_asan_report(text, "tiled.cu");
  EXPECT_EQ(report.tool, "AddressSanitizer");
  EXPECT_EQ(report.kind, "use-after-poison");
  EXPECT_EQ(report.access, "READ of size 4");
  EXPECT_EQ(report.function, "tiled_gemm");
  EXPECT_EQ(report.location, "tiled.cu:43");
  EXPECT_EQ(report.text, text);
  // The first stack only: where it happened, not where the memory came from.
  EXPECT_EQ(report.stack, (std::vector<std::uintptr_t>{0x7fb670ccdd74, 0x7fb670ccdd74,
                                                        0x56379f80cfcc, 0x56379f98494e}));
  report.cuda_thread = "block (1, 0, 0), thread (7, 2, 0)";
  EXPECT_EQ(report.one_line(),
            "AddressSanitizer: use-after-poison READ of size 4 in tiled_gemm at tiled.cu:43, "
            "block (1, 0, 0), thread (7, 2, 0)");

  // Not the template's report (another file name): the first frame with a source line.
  const SanitizerReport other = parse_asan_report(text, "naive.cu");
  EXPECT_EQ(other.function, "__ldg<float>");
  EXPECT_EQ(other.location, "cuda_on_cpu-34ed8e3f4041b3c5.h:218");
}

TEST(SanitizerReports, UbsanSummaryIsCondensed) {
  const SanitizerReport report = parse_sanitizer_summary(
      "SUMMARY: UndefinedBehaviorSanitizer: signed-integer-overflow /tmp/k/overflow.cu:12:31 in ",
      "overflow.cu");
  EXPECT_EQ(report.tool, "UndefinedBehaviorSanitizer");
  EXPECT_EQ(report.kind, "signed-integer-overflow");
  EXPECT_EQ(report.location, "overflow.cu:12");
  EXPECT_EQ(report.one_line(),
            "UndefinedBehaviorSanitizer: signed-integer-overflow at overflow.cu:12");

  const SanitizerReport named = parse_sanitizer_summary(
      "SUMMARY: AddressSanitizer: heap-buffer-overflow t.cu:9 in custom_gemm", "t.cu");
  EXPECT_EQ(named.function, "custom_gemm");
  EXPECT_EQ(named.location, "t.cu:9");

  const SanitizerFinding finding({report, named});
  EXPECT_EQ(std::string(finding.what()),
            "UndefinedBehaviorSanitizer: signed-integer-overflow at overflow.cu:12 (1 more reports "
            "in this launch)");
}

// The CpuBackendSanitized tests run only with AddressSanitizer's runtime in the process: CMake
// registers them a second time with it preloaded. They take it out of LD_PRELOAD again, so that
// the compiler they start runs without it, as tiletune does.
bool sanitizing_process() {
  if (!asan_runtime_loaded()) return false;
  ensure_sanitizer_runtime("");
  return true;
}

CpuBackendOptions sanitized_options(unsigned workers = 2) {
  CpuBackendOptions options = test_options(workers);
  options.sanitize = true;
  return options;
}

// Runs the case and returns the sanitizer finding's message, or "" when there was none.
std::string sanitizer_finding(CpuExecutor& executor, Problem& p) {
  try {
    executor.run(p.gemm_case, p.operands);
  } catch (const SanitizerFinding& e) {
    return e.what();
  }
  return "";
}

using PoisonedQuery = int (*)(const volatile void*);

TEST(CpuBackendSanitized, GuardsAndPaddingArePoisonedDuringALaunch) {
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  const auto poisoned =
      reinterpret_cast<PoisonedQuery>(dlsym(RTLD_DEFAULT, "__asan_address_is_poisoned"));
  ASSERT_NE(poisoned, nullptr);
  for (const std::int64_t ld : {5, 8, 9}) {
    GuardedMatrix m = guarded(3, 5, ld);
    {
      const PoisonedGuards guards{guarded_region(m)};
      for (std::size_t i = 0; i < m.storage.size(); ++i) {
        const std::int64_t offset = std::int64_t(i) - std::int64_t(m.guard);
        const bool inside = offset >= 0 && offset < m.rows * m.ld && offset % m.ld < m.cols;
        const float* element = &m.storage[i];
        if (inside) {
          EXPECT_FALSE(poisoned(element)) << "ld " << ld << ", element " << offset;
          continue;
        }
        // ASan's granules are 8 bytes, addressable from their start: an element in the first
        // half of a granule whose second half belongs to the matrix cannot be poisoned.
        const bool granule_start = reinterpret_cast<std::uintptr_t>(element) % 8 == 0;
        const std::int64_t next = offset + 1;
        const bool next_inside = next >= 0 && next < m.rows * m.ld && next % m.ld < m.cols;
        EXPECT_EQ(bool(poisoned(element)), !(granule_start && next_inside))
            << "ld " << ld << ", element " << offset;
      }
    }
    for (const float& element : m.storage) ASSERT_FALSE(poisoned(&element)) << "ld " << ld;
  }
}

TEST(CpuBackendSanitized, CorrectKernelsPass) {
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  const KernelTemplate tiled = shipped("tiled");
  const KernelTemplate naive = shipped("naive");
  CpuExecutor tiled_executor(tiled, tiled.parse_configuration("TILE=16,PAD=0,SWIZZLE=0"),
                             sanitized_options());
  CpuExecutor naive_executor(naive, naive.parse_configuration("BLOCK_X=32,BLOCK_Y=4"),
                             sanitized_options());
  EXPECT_EQ(tiled_executor.backend_name(), "cpu (2 workers, sanitized)");
  for (const Shape& s : kAwkwardShapes) {
    EXPECT_EQ(run_and_check(tiled_executor, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, 1), "");
    EXPECT_EQ(run_and_check(naive_executor, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, 2), "");
  }
}

// tiled with A loaded without its K mask (the mutant missing_load_mask of fuzz/mutants/tiled.json).
KernelTemplate tiled_without_load_mask() {
  std::string source = shipped("tiled").source;
  const std::string masked = "(row < M && a_col < K) ? tt_op_a(";
  const std::size_t at = source.find(masked);
  EXPECT_NE(at, std::string::npos);
  source.replace(at, masked.size(), "(row < M) ? tt_op_a(");
  return parse_template(source, "tiled_missing_load_mask.cu");
}

TEST(CpuBackendSanitized, AWarpLevelTemplatePasses) {
  // The last lane of a warp to arrive reads the others' contributions on their fibers' stacks.
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  const KernelTemplate tmpl = warp_dot();
  CpuExecutor executor(tmpl, tmpl.parse_configuration("P=0"), sanitized_options());
  for (const Shape& s : kAwkwardShapes) {
    EXPECT_EQ(run_and_check(executor, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, 3), "");
  }
}

TEST(CpuBackendSanitized, UnmaskedLoadOfPaddingOrGuardIsAFindingAndTheNextCaseRuns) {
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  const KernelTemplate mutant = tiled_without_load_mask();
  CpuExecutor executor(mutant, mutant.parse_configuration("TILE=8,PAD=0,SWIZZLE=0"),
                       sanitized_options());
  // (A template parsed from text has no path: its lines are the name's, "tiled.cu". The load is
  // <tiletune/gemm_contract.h>'s, whose text is put into the template where it is included.)
  const std::string expected =
      "AddressSanitizer: use-after-poison READ of size 4 in tt_op_a(float const*, int, int, int, "
      "tt_gemm_args const&) at tiled.cu:";

  // K = 5 of a tile of 8, lda = 8: threads 5..7 read the padding of their row of A.
  Problem padding = make_problem(8, 8, 5, 8, 8, 8);
  EXPECT_EQ(sanitizer_finding(executor, padding).rfind(expected, 0), 0u)
      << sanitizer_finding(executor, padding);
  EXPECT_THAT(sanitizer_finding(executor, padding), ::testing::HasSubstr(", block (0, 0, 0), thread ("));

  // Packed A: the rows' overrun reads the next row, the last row's the guard band after A.
  Problem guard = make_problem(8, 8, 5, 5, 8, 8);
  EXPECT_EQ(sanitizer_finding(executor, guard).rfind(expected, 0), 0u);

  // K a whole number of tiles: the mutant is right, and nothing from before is reported again.
  EXPECT_EQ(run_and_check(executor, 16, 8, 16, 16, 8, 8, 0), "");
  // The same finding is reported every time, as shrinking and replays need.
  EXPECT_EQ(sanitizer_finding(executor, padding).rfind(expected, 0), 0u);
}

TEST(CpuBackendSanitized, SignedOverflowIsAnUndefinedBehaviourFindingEveryTime) {
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  const KernelTemplate tmpl = custom("sanitized_overflow", R"(
  if (row >= M || col >= N) return;
  const int big = 2147483647 - M;
  const int sum = big + K;
  C[row * ldc + col] = float(sum % 7);
)");
  CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), sanitized_options());
  Problem fine = make_problem(8, 8, 4, 4, 8, 8);
  executor.run(fine.gemm_case, fine.operands);
  // UBSan reports each check of a loaded object once: the executor reloads it after a report.
  for (int round = 0; round < 2; ++round) {
    Problem p = make_problem(8, 8, 9, 9, 8, 8);
    EXPECT_EQ(sanitizer_finding(executor, p).rfind("UndefinedBehaviorSanitizer: "
                                                   "signed-integer-overflow at "
                                                   "sanitized_overflow.cu:13, block (0, 0, 0)",
                                                   0),
              0u)
        << "round " << round;
  }
  Problem again = make_problem(8, 8, 4, 4, 8, 8);
  executor.run(again.gemm_case, again.operands);
  EXPECT_EQ(again.operands.c.at(7, 7), float((2147483647 - 8 + 4) % 7));
}

TEST(CpuBackendSanitized, TrapStillUnwindsCleanly) {
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  // A trap unwinds the fibers waiting at the barrier. The redzones of their frames must not stay
  // poisoned for the next kernel on the same stacks, whose frames are laid out differently.
  const KernelTemplate trapping = custom("sanitized_trap", R"(
  volatile float scratch[4];
  scratch[threadIdx.x % 4] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) __trap();
  __syncthreads();
  C[0] = scratch[0];
)");
  const KernelTemplate deep = custom("sanitized_deep", R"(
  volatile float scratch[256];
  for (int i = 0; i < 256; ++i) scratch[i] = float(i);
  if (row < M && col < N) C[row * ldc + col] = scratch[(row + col) % 256];
)");
  CpuExecutor trapper(trapping, trapping.parse_configuration("TILE=8"), sanitized_options(1));
  CpuExecutor after(deep, deep.parse_configuration("TILE=8"), sanitized_options(1));
  Problem p = make_problem(8, 8, 1, 1, 8, 8);
  try {
    trapper.run(p.gemm_case, p.operands);
    ADD_FAILURE() << "the trap went unnoticed";
  } catch (const SanitizerFinding& e) {
    ADD_FAILURE() << "a trap became a sanitizer finding: " << e.what();
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("__trap() in block (0, 0, 0), thread (0, 0, 0)"),
              std::string::npos)
        << e.what();
  }
  Problem q = make_problem(8, 8, 1, 1, 8, 8);
  after.run(q.gemm_case, q.operands);
  EXPECT_EQ(q.operands.c.at(7, 7), 14.0f);
}

TEST(CpuBackendSanitized, OverflowPastTheAllocationIsReportedAndTheProcessGoesOn) {
  if (!sanitizing_process()) GTEST_SKIP() << "needs LD_PRELOAD of AddressSanitizer's runtime";
  // Without guards: one element written just past C's allocation (into ASan's redzone).
  const KernelTemplate tmpl = custom("sanitized_past_end", R"(
  if (row >= M || col >= N) return;
  C[row * ldc + col] = 1.0f;
  if (row == M - 1 && col == N - 1) C[M * ldc] = 2.0f;
)");
  const CpuExecutor executor(tmpl, tmpl.parse_configuration("TILE=8"), sanitized_options());
  const LaunchGeometry geometry = tmpl.launch_geometry(tmpl.parse_configuration("TILE=8"),
                                                       GemmShape{8, 8, 1});
  std::vector<float> a(8), b(8), c(64);
  std::vector<SanitizerReport> reports;
  {
    SanitizerReportCapture capture("sanitized_past_end.cu");
    EXPECT_THROW(executor.kernel().launch(geometry, a.data(), b.data(), c.data(), 8, 8, 1, 1, 8,
                                          8, 0),
                 LaunchError);
    reports = capture.take();
  }
  // This object was loaded after the process's first ASan report: the runtime's symbolizer does
  // not know it, addr2line does.
  place_in_object(reports, executor.kernel().loaded_path().string(), "sanitized_past_end.cu");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].one_line(),
            "AddressSanitizer: heap-buffer-overflow WRITE of size 4 in custom_gemm at "
            "sanitized_past_end.cu:13, block (0, 0, 0), thread (7, 7, 0)");
  EXPECT_NE(reports[0].text.find("0 bytes to the right of 256-byte region"), std::string::npos)
      << reports[0].text;
}

}  // namespace
}  // namespace tiletune
