// tiletune cache: each cache's location, entries and size; --prune removes what killed processes
// left behind (never a live writer's temporary) and evicts the least recently used entries down to
// the cap; a bad size is one line and exit 2. Damaged entries are removed; a folder that is not a
// tiletune cache is never pruned. And the caps at work: a CPU fuzz under a small cap keeps its
// cache within it, and a damaged object in it is built again.
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

#include <fmt/format.h>

#include "tests/support/run_tiletune.h"
#include "tests/support/test_folder.h"
#include "tuner/core/kernel_template.h"

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
  // A file of `bytes` last modified `age_s` ago; an entry is whole (its checksum as each cache
  // writes it: a cubin entry's last line, a CPU object's trailer), any other file plain bytes.
  static void put(const fs::path& path, std::size_t bytes, int age_s) {
    std::string content(bytes, 'x');
    if (path.extension() == ".entry") {
      content.resize(bytes - 21);
      content += fmt::format("end {}\n", fnv1a_hex(content));
    } else if (path.extension() == ".so") {
      content.resize(bytes - 59);
      content += fmt::format("\ntiletune-cpu-object {:020} {}\n", content.size(), fnv1a_hex(content));
    }
    std::ofstream(path, std::ios::binary) << content;
    fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
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
  EXPECT_THAT(names(cubins()), ::testing::ElementsAre("CACHEDIR.TAG", "new.entry",
                                                      "other.entry.tmp-" + live + "-abcdef", "used.entry"));
  EXPECT_THAT(names(cpu()), ::testing::ElementsAre("CACHEDIR.TAG", "tiled-1.so"));
  EXPECT_THAT(run.out, HasSubstr("cubins  " + cubins().string() +
                                 ": 2 entries, 2.0 KiB (cap 2.0 KiB); 1 temporary file (0 stale); "
                                 "pruned: 1 stale temporary file removed, 0 damaged entries removed, "
                                 "1 entry evicted (1000 B)"))
      << run;
  EXPECT_THAT(run.out, HasSubstr("pruned: 1 stale temporary file removed, 0 damaged entries removed, "
                                 "0 entries evicted (0 B)")) << run;
  EXPECT_TRUE(fs::is_regular_file(cubins() / "CACHEDIR.TAG")) << "a pruned cache is marked as one";
}

TEST_F(CacheCommand, PruneRemovesDamagedEntries) {
  put(cubins() / "whole.entry", 1000, 10);
  put(cubins() / "cut.entry", 1000, 10);
  fs::resize_file(cubins() / "cut.entry", 100);
  put(cpu() / "whole-1.so", 1000, 10);
  put(cpu() / "flipped-1.so", 1000, 10);
  {
    std::fstream file(cpu() / "flipped-1.so", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(10);
    file.put('y');
  }
  const TiletuneRun run = cache({"--prune"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(names(cubins()), ::testing::ElementsAre("CACHEDIR.TAG", "whole.entry"));
  EXPECT_THAT(names(cpu()), ::testing::ElementsAre("CACHEDIR.TAG", "whole-1.so"));
  EXPECT_THAT(run.out, HasSubstr("1 damaged entry removed")) << run;
}

// A cache folder pointed at the wrong place costs no user file: without the tag tiletune writes,
// a folder holding anything but cache files is refused, and nothing in it is removed.
TEST_F(CacheCommand, PruneNeverTouchesAFolderThatIsNoCache) {
  const fs::path user = dir_ / "thesis";
  fs::create_directories(user / "project.tmp-1-abc");
  put(user / "results.entry", 5000, 1000);
  put(user / "thesis.tex", 5000, 1000);
  put(user / "project.tmp-1-abc" / "notes.tex", 100, 7200);
  fs::create_directory_symlink(user, dir_ / "link");
  for (const fs::path& folder : {user, dir_ / "link"}) {
    const TiletuneRun run =
        run_tiletune(dir_, {"cache", "--prune", "--max-size", "1", "--cache-dir", folder.string()}, environment());
    EXPECT_EQ(run.exit_code, 2) << run;
    EXPECT_EQ(run.err, "tiletune: " + folder.string() +
                           ": not a tiletune cache (no CACHEDIR.TAG of tiletune's, and it holds other "
                           "files); nothing removed\n") << run;
  }
  EXPECT_THAT(names(user), ::testing::ElementsAre("project.tmp-1-abc", "results.entry", "thesis.tex"));
  EXPECT_TRUE(fs::exists(user / "project.tmp-1-abc" / "notes.tex"));
  // A file where the cache should be is bad input, not an empty cache.
  put(dir_ / "file", 10, 0);
  const TiletuneRun file = run_tiletune(dir_, {"cache", "--cache-dir", (dir_ / "file").string()}, environment());
  EXPECT_EQ(file.exit_code, 2) << file;
  EXPECT_EQ(file.err, "tiletune: " + (dir_ / "file").string() + ": not a folder, so no cache\n") << file;
}

// Over the cap with entries it cannot remove (a cache another user owns, read-only): says so and
// fails, never "0 evicted" and success.
TEST_F(CacheCommand, PruneThatCannotEvictFails) {
  if (::geteuid() == 0) GTEST_SKIP() << "root removes files from a read-only folder";
  put(cubins() / "a.entry", 1000, 20);
  put(cubins() / "b.entry", 1000, 10);
  ASSERT_EQ(cache({"--prune"}).exit_code, 0);  // marks it
  fs::permissions(cubins(), fs::perms::owner_write, fs::perm_options::remove);
  const TiletuneRun run = cache({"--prune", "--max-size", "1K"});
  fs::permissions(cubins(), fs::perms::owner_write, fs::perm_options::add);
  EXPECT_EQ(run.exit_code, 3) << run;
  EXPECT_THAT(run.err, HasSubstr(cubins().string() + ": still over its cap of 1.0 KiB: 2 entries could not be removed")) << run;
  EXPECT_EQ(names(cubins()).size(), 3u);
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

// A changed object in the CPU cache (here bytes appended, which the loader would not notice) is
// found before it is loaded, and built again.
TEST_F(CacheCommand, ADamagedCpuObjectIsBuiltAgain) {
  const std::string naive = (fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu").string();
  const std::vector<std::string> fuzz = {"fuzz", naive, "--backend", "cpu", "--cases", "2", "--config", "BLOCK_X=16,BLOCK_Y=16"};
  ASSERT_EQ(run_tiletune(dir_, fuzz, environment()).exit_code, 0);
  std::vector<fs::path> objects;
  for (const auto& e : fs::directory_iterator(cpu())) {
    if (e.path().extension() == ".so") objects.push_back(e.path());
  }
  ASSERT_EQ(objects.size(), 1u);
  const std::uintmax_t size = fs::file_size(objects[0]);
  std::ofstream(objects[0], std::ios::binary | std::ios::app) << "appended";
  const TiletuneRun again = run_tiletune(dir_, fuzz, environment());
  EXPECT_EQ(again.exit_code, 0) << again;
  EXPECT_EQ(fs::file_size(objects[0]), size);
}

// A CPU kernel cache that cannot be written (here: under a file) slows a fuzz down, never fails
// it: the kernels are built in a folder of the run's own (with one warning line from the process
// that builds them: here the configuration's child, whose output the fuzz keeps to itself).
TEST_F(CacheCommand, AnUnwritableCpuCacheIsAWarningNotAFailure) {
  put(dir_ / "a-file", 10, 0);
  std::map<std::string, std::string> environment = this->environment();
  environment["XDG_CACHE_HOME"] = (dir_ / "a-file").string();
  const std::string naive = (fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu").string();
  const TiletuneRun run = run_tiletune(
      dir_, {"fuzz", naive, "--backend", "cpu", "--cases", "2", "--config", "BLOCK_X=16,BLOCK_Y=16"}, environment);
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.err, HasSubstr("pass naive [BLOCK_X=16,BLOCK_Y=16]: 2 cases")) << run;
}

}  // namespace
}  // namespace tiletune
