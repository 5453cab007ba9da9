// CubinCache: entries round-trip (images and compile errors), every part of the key separates
// entries, damaged or foreign files are misses, concurrent writers are safe, an unusable
// directory degrades to no caching with one warning; and CompiledKernels over a cache, where a
// second run compiles nothing and gets the same cubins. Each test has its own temporary
// directory; the NVRTC tests are skipped where NVRTC cannot be loaded.
#include "tuner/backend/gpu/cubin_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/skip_without_nvrtc.h"
#include "tuner/core/configurations.h"
#include "tuner/backend/gpu/compiled_kernels.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A key built by hand: no NVRTC needed.
CubinKey sample_key() {
  CubinKey key;
  key.template_name = "tiled";
  key.file_name = "tiled.cu";
  key.source_digest = source_digest("extern \"C\" __global__ void tiled_gemm() {}\n");
  key.config = "TILE=16,PAD=1,SWIZZLE=0";
  key.options = {"-arch=sm_90", "--std=c++17", "-lineinfo", "--ptxas-options=-v", "-DTT_TILE=16",
                 "-DTT_PAD=1", "-DTT_SWIZZLE=0"};
  key.nvrtc_version = "13.0";
  key.arch = "sm_90";
  return key;
}

// An image whose cubin holds every byte value, newlines and NULs included.
CompileOutcome sample_image() {
  CompiledKernelImage image;
  image.arch = "sm_90";
  image.cubin = {'\x7f', 'E', 'L', 'F'};
  for (int i = 0; i < 3000; ++i) image.cubin.push_back(static_cast<char>(i * 37 % 256));
  image.log = "ptxas info    : Compiling entry function 'tiled_gemm' for 'sm_90'\n"
              "ptxas info    : Used 40 registers, used 1 barriers, 8448 bytes smem\n";
  image.report = {40, 8448, 16, 8, 12};
  return {std::move(image), "", ""};
}

CompileOutcome sample_error() {
  return {std::nullopt, "tiled [TILE=16,PAD=1,SWIZZLE=0] does not compile for sm_90",
          "tiled.cu(7): error: identifier \"undeclared_thing\" is undefined\n\n1 error detected\n"};
}

void expect_same_outcome(const std::optional<CompileOutcome>& actual, const CompileOutcome& expected) {
  ASSERT_TRUE(actual.has_value()) << "a miss";
  ASSERT_EQ(actual->image.has_value(), expected.image.has_value());
  if (expected.image) {
    EXPECT_EQ(actual->image->arch, expected.image->arch);
    EXPECT_EQ(actual->image->cubin, expected.image->cubin);
    EXPECT_EQ(actual->image->log, expected.image->log);
    EXPECT_EQ(actual->image->report.registers, expected.image->report.registers);
    EXPECT_EQ(actual->image->report.static_shared_bytes, expected.image->report.static_shared_bytes);
    EXPECT_EQ(actual->image->report.stack_frame_bytes, expected.image->report.stack_frame_bytes);
    EXPECT_EQ(actual->image->report.spill_store_bytes, expected.image->report.spill_store_bytes);
    EXPECT_EQ(actual->image->report.spill_load_bytes, expected.image->report.spill_load_bytes);
  }
  EXPECT_EQ(actual->error, expected.error);
  EXPECT_EQ(actual->log, expected.log);
}

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Files in the directory (the cache's entries and anything left beside them).
// The folder's files but the tag that marks it as a cache (tuner/system/cache_limit.h).
std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() != kCacheTagFile) names.push_back(entry.path().filename().string());
  }
  return names;
}

// Sets an environment variable for the scope (unset: nullptr), restoring it afterwards.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnvironment() { set(old_ ? old_->c_str() : nullptr); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  void set(const char* value) {
    if (value) {
      setenv(name_, value, 1);
    } else {
      unsetenv(name_);
    }
  }

  const char* name_;
  std::optional<std::string> old_;
};

class CubinCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    dir_ = fs::temp_directory_path() /
           ("tiletune-cubin-cache-test-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(random()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  fs::path cache_dir() const { return dir_ / "cubins"; }

  fs::path dir_;
};

TEST_F(CubinCacheTest, ImageRoundTrip) {
  CubinCache cache(cache_dir());
  EXPECT_FALSE(fs::exists(cache_dir())) << "created when the first entry is stored";
  EXPECT_FALSE(cache.load(sample_key()).has_value());
  cache.store(sample_key(), sample_image());
  expect_same_outcome(cache.load(sample_key()), sample_image());
  expect_same_outcome(CubinCache(cache_dir()).load(sample_key()), sample_image());
  EXPECT_EQ(cache.entry_path(sample_key()).parent_path(), cache_dir());
  EXPECT_THAT(cache.entry_path(sample_key()).filename().string(),
              ::testing::MatchesRegex("[0-9a-f]{32}\\.entry"));
  EXPECT_EQ(files_in(cache_dir()).size(), 1u) << "no temporary file is left behind";
  EXPECT_TRUE(is_tiletune_cache(cache_dir())) << "the folder it made is marked as a cache";
}

TEST_F(CubinCacheTest, CompileErrorRoundTrip) {
  CubinCache cache(cache_dir());
  cache.store(sample_key(), sample_error());
  expect_same_outcome(cache.load(sample_key()), sample_error());
  // Storing again replaces the entry.
  cache.store(sample_key(), sample_image());
  expect_same_outcome(cache.load(sample_key()), sample_image());
}

TEST_F(CubinCacheTest, EveryPartOfTheKeyMakesAnotherEntry) {
  CubinCache cache(cache_dir());
  cache.store(sample_key(), sample_image());
  const std::vector<std::pair<const char*, std::function<void(CubinKey&)>>> changes = {
      {"template name", [](CubinKey& key) { key.template_name = "tiled2"; }},
      {"file name", [](CubinKey& key) { key.file_name = "other.cu"; }},
      {"source", [](CubinKey& key) { key.source_digest = source_digest("// another source\n"); }},
      {"config", [](CubinKey& key) { key.config = "TILE=32,PAD=1,SWIZZLE=0"; }},
      {"an option's value", [](CubinKey& key) { key.options[4] = "-DTT_TILE=32"; }},
      {"one option more", [](CubinKey& key) { key.options.push_back("-G"); }},
      {"one option less", [](CubinKey& key) { key.options.pop_back(); }},
      {"options' order", [](CubinKey& key) { std::swap(key.options[4], key.options[5]); }},
      {"two options as one", [](CubinKey& key) {
         key.options[5] = key.options[5] + key.options[6];
         key.options.pop_back();
       }},
      {"NVRTC version", [](CubinKey& key) { key.nvrtc_version = "13.1"; }},
      {"arch", [](CubinKey& key) { key.arch = "sm_80"; }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    CubinKey key = sample_key();
    change(key);
    EXPECT_NE(key.text(), sample_key().text());
    EXPECT_NE(key.digest(), sample_key().digest());
    EXPECT_FALSE(cache.load(key).has_value());
  }
  expect_same_outcome(cache.load(sample_key()), sample_image());
}

// The cap: once the entries outgrow it, a store evicts the least recently used, a hit counting as
// a use; the entry just stored stays; what a killed writer left is cleared and temporaries are
// named with their writer's pid.
TEST_F(CubinCacheTest, StoresPastTheCapEvictTheLeastRecentlyUsedEntries) {
  const auto key_of = [](int i) {
    CubinKey key = sample_key();
    key.config = "TILE=" + std::to_string(i);
    return key;
  };
  const std::uint64_t entry_bytes = [&] {
    CubinCache probe(dir_ / "probe");
    probe.store(key_of(0), sample_image());
    return fs::file_size(probe.entry_path(key_of(0)));
  }();
  fs::create_directories(cache_dir());
  const std::string dead_writer = ".tmp-999999999-abcdef";  // no such pid
  write_file(cache_dir() / ("leftover.entry" + dead_writer), "half an entry");

  CubinCache cache(cache_dir(), 3 * entry_bytes + entry_bytes / 2);  // room for 3
  for (int i = 1; i <= 3; ++i) {
    cache.store(key_of(i), sample_image());
    fs::last_write_time(cache.entry_path(key_of(i)),
                        fs::file_time_type::clock::now() - std::chrono::seconds(100 - i));
  }
  EXPECT_EQ(files_in(cache_dir()).size(), 3u) << "the killed writer's temporary is cleared";
  ASSERT_TRUE(cache.load(key_of(1)).has_value());  // a hit: entry 2 is now the least recently used
  cache.store(key_of(4), sample_image());
  EXPECT_TRUE(cache.load(key_of(1)).has_value());
  EXPECT_FALSE(cache.load(key_of(2)).has_value()) << "the least recently used is evicted";
  EXPECT_TRUE(cache.load(key_of(4)).has_value());
  EXPECT_LE(files_in(cache_dir()).size(), 3u);

  CubinCache tiny(dir_ / "tiny", 1);  // smaller than any entry: the one just stored stays
  tiny.store(key_of(1), sample_image());
  tiny.store(key_of(2), sample_image());
  EXPECT_FALSE(tiny.load(key_of(1)).has_value());
  EXPECT_TRUE(tiny.load(key_of(2)).has_value());
}

// The source enters the key by its digest: any change of a byte, or of the length, changes it.
TEST(CubinCacheKey, SourceDigestCoversEveryByteAndTheLength) {
  const std::string source = "extern \"C\" __global__ void k(float* c) { c[0] = 1.0f; }\n";
  EXPECT_THAT(source_digest(source), ::testing::MatchesRegex("[0-9a-f]{32}:[0-9]+"));
  EXPECT_EQ(source_digest(source), source_digest(std::string(source)));
  for (std::size_t i = 0; i < source.size(); ++i) {
    std::string changed = source;
    changed[i] ^= 1;
    EXPECT_NE(source_digest(changed), source_digest(source)) << "byte " << i;
  }
  EXPECT_NE(source_digest(source + " "), source_digest(source));
  EXPECT_NE(source_digest(""), source_digest(std::string(1, '\0')));
}

// A file at a key's digest whose stored key is another (a digest collision, simulated by copying
// an entry to another key's name) is a miss.
TEST_F(CubinCacheTest, EntryOfAnotherKeyIsAMiss) {
  CubinCache cache(cache_dir());
  cache.store(sample_key(), sample_image());
  CubinKey other = sample_key();
  other.config = "TILE=8,PAD=0,SWIZZLE=0";
  fs::copy_file(cache.entry_path(sample_key()), cache.entry_path(other));
  EXPECT_FALSE(cache.load(other).has_value());
  cache.store(other, sample_error());
  expect_same_outcome(cache.load(other), sample_error());
  expect_same_outcome(cache.load(sample_key()), sample_image());
}

TEST_F(CubinCacheTest, DamagedEntriesAreMissesAndGetOverwritten) {
  CubinCache cache(cache_dir());
  for (const CompileOutcome& outcome : {sample_image(), sample_error()}) {
    cache.store(sample_key(), outcome);
    const fs::path path = cache.entry_path(sample_key());
    const std::string good = read_file(path);
    ASSERT_FALSE(good.empty());

    // Every truncation, from empty to one byte short.
    for (std::size_t length = 0; length < good.size(); ++length) {
      write_file(path, good.substr(0, length));
      ASSERT_FALSE(cache.load(sample_key()).has_value()) << "truncated to " << length;
    }
    // A flipped bit anywhere, a byte more, garbage, another format.
    std::mt19937 random(1);
    for (int trial = 0; trial < 200; ++trial) {
      std::string bad = good;
      bad[random() % bad.size()] ^= static_cast<char>(1 << (random() % 8));
      write_file(path, bad);
      ASSERT_FALSE(cache.load(sample_key()).has_value()) << "trial " << trial;
    }
    write_file(path, good + "x");
    EXPECT_FALSE(cache.load(sample_key()).has_value());
    std::string garbage(5000, '\0');
    for (char& byte : garbage) byte = static_cast<char>(random());
    write_file(path, garbage);
    EXPECT_FALSE(cache.load(sample_key()).has_value());
    write_file(path, "\x7f" "ELF not an entry\n");
    EXPECT_FALSE(cache.load(sample_key()).has_value());

    // A miss is compiled again and stored over the damaged file.
    cache.store(sample_key(), outcome);
    expect_same_outcome(cache.load(sample_key()), outcome);
    EXPECT_TRUE(cache.writable());
  }
}

// Tuners sharing the cache (here threads) store the same entry while others read it: once an
// entry is there, a reader always finds it whole (an entry rewritten in place would be seen half
// written, a miss), and no temporary file is left behind.
TEST_F(CubinCacheTest, ConcurrentWritersOfTheSameEntry) {
  CubinCache cache(cache_dir());
  const CompileOutcome image = sample_image();
  std::atomic<bool> writing = true, stored = false;
  std::atomic<int> missed_after_store = 0, wrong = 0, whole = 0;
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      CubinCache reader(cache_dir());
      while (writing) {
        const bool there = stored;
        const auto loaded = reader.load(sample_key());
        if (!loaded) {
          missed_after_store += there;
        } else if (loaded->image && loaded->image->cubin == image.image->cubin) {
          ++whole;
        } else {
          ++wrong;
        }
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < 6; ++w) {
    writers.emplace_back([&] {
      CubinCache writer(cache_dir());
      for (int i = 0; i < 50; ++i) {
        writer.store(sample_key(), image);
        stored = true;
      }
    });
  }
  for (auto& writer : writers) writer.join();
  writing = false;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(missed_after_store, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(whole, 0);
  expect_same_outcome(cache.load(sample_key()), image);
  EXPECT_EQ(files_in(cache_dir()),
            std::vector<std::string>{cache.entry_path(sample_key()).filename().string()});
}

// A directory that cannot be created (its parent is a file: even root cannot) means no caching,
// one warning line, and no error.
TEST_F(CubinCacheTest, UnusableDirectoryDegradesWithOneWarning) {
  write_file(dir_ / "a-file", "not a directory");
  const fs::path impossible = dir_ / "a-file" / "cubins";
  CubinCache cache(impossible);
  ::testing::internal::CaptureStderr();
  cache.store(sample_key(), sample_image());
  cache.store(sample_key(), sample_error());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { cache.store(sample_key(), sample_image()); });
  for (auto& thread : threads) thread.join();
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(warnings, HasSubstr(impossible.string()));
  EXPECT_THAT(warnings, HasSubstr("warning"));
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_FALSE(cache.writable());
  EXPECT_FALSE(cache.load(sample_key()).has_value());

  // No directory at all (nothing in the environment to make one of): the same.
  CubinCache nowhere{fs::path()};
  ::testing::internal::CaptureStderr();
  nowhere.store(sample_key(), sample_image());
  nowhere.store(sample_key(), sample_image());
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  EXPECT_FALSE(nowhere.load(sample_key()).has_value());
}

TEST_F(CubinCacheTest, DefaultDirectoryFollowsTheEnvironment) {
  {
    ScopedEnvironment cache("TILETUNE_CACHE_DIR", "/somewhere/cubins");
    ScopedEnvironment xdg("XDG_CACHE_HOME", "/xdg");
    ScopedEnvironment home("HOME", "/home/user");
    EXPECT_EQ(default_cubin_cache_dir(), fs::path("/somewhere/cubins"));
  }
  {
    ScopedEnvironment cache("TILETUNE_CACHE_DIR", nullptr);
    ScopedEnvironment xdg("XDG_CACHE_HOME", "/xdg");
    ScopedEnvironment home("HOME", "/home/user");
    EXPECT_EQ(default_cubin_cache_dir(), fs::path("/xdg/tiletune/cubins"));
  }
  {
    ScopedEnvironment cache("TILETUNE_CACHE_DIR", "");
    ScopedEnvironment xdg("XDG_CACHE_HOME", "relative/is/ignored");
    ScopedEnvironment home("HOME", "/home/user");
    EXPECT_EQ(default_cubin_cache_dir(), fs::path("/home/user/.cache/tiletune/cubins"));
  }
  {
    ScopedEnvironment cache("TILETUNE_CACHE_DIR", nullptr);
    ScopedEnvironment xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnvironment home("HOME", nullptr);
    EXPECT_EQ(default_cubin_cache_dir(), fs::path());
  }
}

// --- with NVRTC ------------------------------------------------------------------------------

// T = 1, 2, 4 compile; T = 8 names something that does not exist. A comment unique to the process
// and moment keeps NVRTC's own cache (12.9+, on a machine with a driver) out of the way, so the
// first compile runs ptxas and its outcome is stored.
KernelTemplate half_broken_template() {
  return parse_template(
      "// tiletune: name half\n// tiletune: entry half_gemm\n// tiletune: param T 1 2 4 8\n"
      "// tiletune: block T\n// tiletune: grid 1\n"
      "extern \"C\" __global__ void half_gemm(const float* A, const float* B, float* C, int M, int N,"
      " int K, int lda, int ldb, int ldc) {\n"
      "#if TT_T == 8\n  C[threadIdx.x] = undeclared_thing;\n#else\n  C[threadIdx.x] = TT_T;\n#endif\n"
      "}\n"
      "extern \"C\" __device__ int cubin_cache_test_" + std::to_string(getpid()) + "_" +
          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + " = 1;\n",
      "half.cu");
}

TEST(CubinCacheKey, OfATemplateUsesTheCompilesExactOptions) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = half_broken_template();
  const Configuration config = tmpl.parse_configuration("T=4");
  const CubinKey key = CubinKey::of(tmpl, config, "sm_90");
  EXPECT_EQ(key.options, nvrtc_options(tmpl, config, "sm_90"));
  EXPECT_THAT(key.options, ::testing::Contains("-arch=sm_90"));
  EXPECT_THAT(key.options, ::testing::Contains("-DTT_T=4"));
  EXPECT_EQ(key.nvrtc_version, nvrtc_version());
  EXPECT_EQ(key.file_name, "half.cu");
  EXPECT_EQ(key.template_name, "half");
  EXPECT_EQ(key.config, "T=4");
  EXPECT_EQ(key.source_digest, source_digest(tmpl.source));

  KernelTemplate edited = tmpl;
  edited.source += "// an edit\n";
  for (const CubinKey& other :
       {CubinKey::of(edited, config, "sm_90"), CubinKey::of(tmpl, tmpl.parse_configuration("T=2"), "sm_90"),
        CubinKey::of(tmpl, config, "sm_80")}) {
    EXPECT_NE(other.digest(), key.digest());
  }
}

class CompiledKernelsCacheTest : public CubinCacheTest {};

TEST_F(CompiledKernelsCacheTest, SecondRunCompilesNothingAndGetsTheSameCubins) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = half_broken_template();
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  ASSERT_EQ(configs.size(), 4u);

  CompiledKernels first("sm_90", 2, CubinCache(cache_dir()));
  first.prepare(tmpl, configs);
  EXPECT_EQ(first.statistics().compiled, 4);
  EXPECT_EQ(first.statistics().from_cache, 0);
  EXPECT_GT(first.statistics().compile_seconds, 0);
  EXPECT_EQ(files_in(cache_dir()).size(), 4u) << "the compile error is kept too";

  CompiledKernels second("sm_90", 2, CubinCache(cache_dir()));
  second.prepare(tmpl, configs);
  EXPECT_EQ(second.statistics().compiled, 0);
  EXPECT_EQ(second.statistics().from_cache, 4);
  EXPECT_EQ(second.statistics().compile_seconds, 0);
  for (const Configuration& config : configs) {
    SCOPED_TRACE(config.to_string());
    if (config.at("T") == 8) {
      for (CompiledKernels* compiled : {&first, &second}) {
        try {
          compiled->get(tmpl, config);
          ADD_FAILURE() << "T=8 compiled";
        } catch (const CompileError& e) {
          EXPECT_EQ(std::string(e.what()), "half [T=8] does not compile for sm_90");
          EXPECT_THAT(e.log(), HasSubstr("undeclared_thing"));
        }
      }
      continue;
    }
    const CompiledKernelImage& fresh = first.get(tmpl, config);
    const CompiledKernelImage& cached = second.get(tmpl, config);
    EXPECT_EQ(cached.arch, "sm_90");
    EXPECT_EQ(cached.cubin, fresh.cubin);
    EXPECT_EQ(cached.log, fresh.log);
    EXPECT_GT(cached.report.registers, 0);
    EXPECT_EQ(cached.report.registers, fresh.report.registers);
    EXPECT_EQ(cached.report.static_shared_bytes, fresh.report.static_shared_bytes);
    EXPECT_EQ(cached.report.spill_bytes(), fresh.report.spill_bytes());
  }
  EXPECT_EQ(second.statistics().compiled, 0) << "get found everything in memory";

  // get() without prepare looks in the cache too (as an evaluation worker does).
  CompiledKernels worker("sm_90", 1, CubinCache(cache_dir()));
  EXPECT_EQ(worker.get(tmpl, configs[2]).cubin, first.get(tmpl, configs[2]).cubin);
  EXPECT_THROW(worker.get(tmpl, configs[3]), CompileError);
  EXPECT_EQ(worker.statistics().compiled, 0);
  EXPECT_EQ(worker.statistics().from_cache, 2);
}

// Another source, architecture or configuration is compiled, not served from the cache.
TEST_F(CompiledKernelsCacheTest, ChangedInputsAreCompiledAgain) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = half_broken_template();
  const std::vector<Configuration> some = {tmpl.parse_configuration("T=1"),
                                           tmpl.parse_configuration("T=2")};
  {
    CompiledKernels compiled("sm_90", 2, CubinCache(cache_dir()));
    compiled.prepare(tmpl, some);
    EXPECT_EQ(compiled.statistics().compiled, 2);
  }
  {
    CompiledKernels compiled("sm_80", 2, CubinCache(cache_dir()));
    compiled.prepare(tmpl, some);
    EXPECT_EQ(compiled.statistics().compiled, 2) << "another architecture";
    EXPECT_EQ(compiled.get(tmpl, some[0]).arch, "sm_80");
  }
  {
    KernelTemplate edited = tmpl;
    edited.source += "// an edit\n";
    edited.source_hash = fnv1a_hex(edited.source);
    CompiledKernels compiled("sm_90", 2, CubinCache(cache_dir()));
    compiled.prepare(edited, some);
    EXPECT_EQ(compiled.statistics().compiled, 2) << "another source";
  }
  {
    CompiledKernels compiled("sm_90", 2, CubinCache(cache_dir()));
    compiled.prepare(tmpl, enumerate_configurations(tmpl));
    EXPECT_EQ(compiled.statistics().from_cache, 2);
    EXPECT_EQ(compiled.statistics().compiled, 2) << "T=4 and T=8 were never compiled";
  }
}

TEST_F(CompiledKernelsCacheTest, UnusableCacheDirectoryStillCompiles) {
  SKIP_WITHOUT_NVRTC();
  write_file(dir_ / "a-file", "not a directory");
  const KernelTemplate tmpl = half_broken_template();
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  CompiledKernels compiled("sm_90", 2, CubinCache(dir_ / "a-file" / "cubins"));
  ::testing::internal::CaptureStderr();
  compiled.prepare(tmpl, configs);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_EQ(compiled.statistics().compiled, 4);
  EXPECT_GT(compiled.get(tmpl, configs[0]).cubin.size(), 4u);
}

// Without a cache argument nothing goes to disk, wherever the environment points.
TEST_F(CompiledKernelsCacheTest, WithoutACacheNothingIsWritten) {
  SKIP_WITHOUT_NVRTC();
  ScopedEnvironment cache("TILETUNE_CACHE_DIR", cache_dir().c_str());
  ScopedEnvironment xdg("XDG_CACHE_HOME", (dir_ / "xdg").c_str());
  ScopedEnvironment home("HOME", (dir_ / "home").c_str());
  const KernelTemplate tmpl = half_broken_template();
  CompiledKernels compiled("sm_90", 2);
  compiled.prepare(tmpl, enumerate_configurations(tmpl));
  EXPECT_EQ(compiled.statistics().compiled, 4);
  EXPECT_EQ(compiled.statistics().from_cache, 0);
  EXPECT_EQ(files_in(dir_).size(), 0u);
}

}  // namespace
}  // namespace tiletune
