// tiletune cache: each cache's location, entries and size; --prune removes what killed processes
// left behind (never a live writer's temporary) and evicts the least recently used entries down to
// the cap; a bad size is one line and exit 2. And the caps at work: a CPU fuzz under a small cap
// keeps its cache within it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_tiletune.h"
#include "tests/support/test_folder.h"

namespace tiletune {
namespace {

using testing_support::dead_pid;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_tools::TiletuneRun;
using testing_tools::run_tiletune;

class CacheCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("cache-command");
    fs::create_directories(cubins());
    fs::create_directories(cpu());
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path cubins() const { return dir_ / "cubins"; }
  fs::path cpu() const { return dir_ / "xdg" / "tiletune" / "cpu"; }
  std::map<std::string, std::string> environment() const {
    return {{"XDG_CACHE_HOME", (dir_ / "xdg").string()}, {"TILETUNE_CACHE_MAX_SIZE", ""}};
  }
  TiletuneRun cache(std::vector<std::string> args) const {
    args.insert(args.begin(), {"cache", "--cache-dir", cubins().string()});
    return run_tiletune(dir_, args, environment());
  }
  static void put(const fs::path& path, std::size_t bytes, int age_s) {
    testing_support::write_aged_file(path, bytes, age_s);
  }
  static std::vector<std::string> names(const fs::path& folder) {
    return testing_support::sorted_names(folder);
  }

  fs::path dir_;
};

TEST_F(CacheCommand, PrintsEachCachesLocationEntriesAndSize) {
  put(cubins() / "a.entry", 1000, 10);
  put(cubins() / "b.entry", 2000, 10);
  put(cpu() / "naive-1.so", 3000, 10);
  put(cpu() / "cuda_on_cpu-1.h", 100, 10);
  const TiletuneRun run = cache({});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("cubins  " + cubins().string() + ": 2 entries, 2.9 KiB (cap 2.0 GiB); 0 temporary files (0 stale)\n")) << run;
  EXPECT_THAT(run.out, HasSubstr("cpu     " + cpu().string() + ": 1 entry, 2.9 KiB (cap 2.0 GiB)")) << run;
  EXPECT_EQ(names(cubins()).size(), 2u) << "without --prune nothing is removed";
}

TEST_F(CacheCommand, PruneRemovesStaleTemporariesAndEvictsTheLeastRecentlyUsedDownToTheCap) {
  const std::string dead = std::to_string(dead_pid());
  const std::string live = std::to_string(getpid());  // this test: a writer at work
  put(cubins() / "old.entry", 1000, 300);
  put(cubins() / "used.entry", 1000, 200);
  put(cubins() / "new.entry", 1000, 100);
  put(cubins() / ("new.entry.tmp-" + dead + "-abcdef"), 500, 0);
  put(cubins() / ("other.entry.tmp-" + live + "-abcdef"), 500, 0);
  put(cpu() / "tiled-1.so", 1000, 100);
  put(cpu() / ("tiled-2.so.tmp-" + dead + "-0"), 500, 0);
  fs::last_write_time(cubins() / "used.entry", fs::file_time_type::clock::now());  // a hit

  const TiletuneRun run = cache({"--prune", "--max-size", "2K"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(names(cubins()), ::testing::ElementsAre("new.entry", "other.entry.tmp-" + live + "-abcdef",
                                                      "used.entry"));
  EXPECT_THAT(names(cpu()), ::testing::ElementsAre("tiled-1.so"));
  EXPECT_THAT(run.out, HasSubstr("cubins  " + cubins().string() +
                                 ": 2 entries, 2.0 KiB (cap 2.0 KiB); 1 temporary file (0 stale); "
                                 "pruned: 1 stale temporary file removed, 1 entry evicted (1000 B)"))
      << run;
  EXPECT_THAT(run.out, HasSubstr("pruned: 1 stale temporary file removed, 0 entries evicted (0 B)")) << run;
}

TEST_F(CacheCommand, ABadSizeIsOneLineAndBadInput) {
  for (const auto& [args, env] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"cache", "--max-size", "lots"}, ""}, {{"cache"}, "2X"}}) {
    std::map<std::string, std::string> environment = this->environment();
    environment["TILETUNE_CACHE_MAX_SIZE"] = env;
    const TiletuneRun run = run_tiletune(dir_, args, environment);
    EXPECT_EQ(run.exit_code, 2) << run;
    EXPECT_THAT(run.err, StartsWith("tiletune: ")) << run;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run;
  }
}

TEST_F(CacheCommand, ACpuFuzzKeepsItsKernelCacheWithinTheCapAndLeavesNoTemporaries) {
  const std::string naive = (fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu").string();
  std::map<std::string, std::string> environment = this->environment();
  put(cpu() / "stale-kernel.so", 100000, 1000);  // least recently used
  put(cpu() / ("naive-x.so.tmp-" + std::to_string(dead_pid()) + "-0"), 100, 0);  // a killed build's
  environment["TILETUNE_CACHE_MAX_SIZE"] = "100K";
  const TiletuneRun run = run_tiletune(dir_, {"fuzz", naive, "--backend", "cpu", "--sample", "3", "--cases", "2"},
                               environment);
  ASSERT_EQ(run.exit_code, 0) << run;
  std::uintmax_t bytes = 0;
  int objects = 0;
  for (const auto& e : fs::directory_iterator(cpu())) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name << " left behind";
    EXPECT_NE(name, "stale-kernel.so") << "the least recently used entry is evicted first";
    if (e.path().extension() == ".so") {
      bytes += e.file_size();
      ++objects;
    }
  }
  EXPECT_GE(objects, 1);
  EXPECT_LE(bytes, 100u << 10) << "the cache outgrew its cap";
}

}  // namespace
}  // namespace tiletune
