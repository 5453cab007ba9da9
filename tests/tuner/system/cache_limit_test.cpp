// The caches' size cap: sizes parse, eviction removes the least recently used entries first and
// never the one just written, a writer's cap evicts once the folder passes it and clears what dead
// processes left behind, and stale temporaries are removed while a live writer's stay.
#include "tuner/system/cache_limit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_folder.h"

namespace tiletune {
namespace {

using testing_support::dead_pid;

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

bool is_entry(const fs::path& file) { return file.extension() == ".entry"; }

class CacheLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("cache-limit");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of `bytes` bytes, last used `age_s` seconds ago.
  fs::path put(const std::string& name, std::size_t bytes, int age_s) const {
    testing_support::write_aged_file(dir_ / name, bytes, age_s);
    return dir_ / name;
  }
  // The folder's files but the tag that marks it as a cache.
  std::vector<std::string> names() const {
    std::vector<std::string> found = testing_support::sorted_names(dir_);
    std::erase(found, std::string(kCacheTagFile));
    return found;
  }
  fs::path dir_;
};

TEST(CacheSizes, ParseAndFormat) {
  EXPECT_EQ(parse_size("1048576"), 1048576u);
  EXPECT_EQ(parse_size("64K"), 64u << 10);
  EXPECT_EQ(parse_size("500M"), 500u << 20);
  EXPECT_EQ(parse_size("2G"), std::uint64_t(2) << 30);
  EXPECT_EQ(parse_size("2GiB"), std::uint64_t(2) << 30);
  EXPECT_EQ(parse_size("1.5g"), std::uint64_t(3) << 29);
  EXPECT_EQ(parse_size("100B"), 100u);
  for (const char* bad : {"", "G", "-1G", "2X", "1..5G", "0", "2 G", "99999999T"}) {
    EXPECT_THROW(parse_size(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(std::uint64_t(3) << 29), "1.5 GiB");
  EXPECT_EQ(kDefaultCacheCap, std::uint64_t(2) << 30);
}

TEST(CacheSizes, TheCapComesFromTheEnvironmentElseTheDefault) {
  unsetenv("TILETUNE_CACHE_MAX_SIZE");
  EXPECT_EQ(cache_cap_from_environment(), kDefaultCacheCap);
  setenv("TILETUNE_CACHE_MAX_SIZE", "300M", 1);
  EXPECT_EQ(cache_cap_from_environment(), 300u << 20);
  setenv("TILETUNE_CACHE_MAX_SIZE", "lots", 1);
  try {
    cache_cap_from_environment();
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("TILETUNE_CACHE_MAX_SIZE: 'lots' is not a size"));
  }
  EXPECT_EQ(cache_cap_or_default(), kDefaultCacheCap);
  unsetenv("TILETUNE_CACHE_MAX_SIZE");
}

TEST_F(CacheLimit, EvictionRemovesTheLeastRecentlyUsedEntriesFirstAndOnlyEntries) {
  put("old.entry", 100, 300);
  put("middle.entry", 100, 200);
  put("new.entry", 100, 100);
  put("shared-header.h", 5000, 1000);  // not an entry: neither counted nor evicted
  const CacheUsage before = measure_cache(dir_, is_entry);
  EXPECT_EQ(before.entries, 3u);
  EXPECT_EQ(before.bytes, 300u);

  const Eviction evicted = evict_to_cap(dir_, is_entry, 250);
  EXPECT_EQ(evicted.entries, 1u);
  EXPECT_EQ(evicted.bytes, 100u);
  EXPECT_THAT(names(), ElementsAre("middle.entry", "new.entry", "shared-header.h"));
  touch_entry(dir_ / "middle.entry");  // used now: new.entry is the oldest
  evict_to_cap(dir_, is_entry, 150);
  EXPECT_THAT(names(), ElementsAre("middle.entry", "shared-header.h"));
}

TEST_F(CacheLimit, EvictionNeverRemovesTheEntryJustWritten) {
  put("old.entry", 100, 300);
  const fs::path fresh = put("huge.entry", 1000, 400);  // older time, but just written
  evict_to_cap(dir_, is_entry, 500, fresh);
  EXPECT_THAT(names(), ElementsAre("huge.entry"));
}

TEST_F(CacheLimit, AWriterEvictsOncePastTheCapAndClearsStaleTemporariesFirst) {
  const std::string dead = std::to_string(dead_pid());
  const std::string live = std::to_string(getpid());
  put("a.entry.tmp-" + dead + "-qwerty", 100, 0);  // a killed writer's
  put("b.entry.tmp-" + live + "-qwerty", 100, 0);  // a live writer's, at work
  CacheCap cap(dir_, is_entry, 1000);
  put("1.entry", 400, 30);
  cap.wrote(dir_ / "1.entry", 400);
  EXPECT_THAT(names(), UnorderedElementsAre("1.entry", "b.entry.tmp-" + live + "-qwerty"));
  put("2.entry", 400, 20);
  cap.wrote(dir_ / "2.entry", 400);
  EXPECT_EQ(measure_cache(dir_, is_entry).entries, 2u) << "800 bytes: within the cap";
  put("3.entry", 400, 10);
  cap.wrote(dir_ / "3.entry", 400);
  // 1200 > 1000: evicted down to 900, oldest first.
  EXPECT_THAT(names(), UnorderedElementsAre("2.entry", "3.entry", "b.entry.tmp-" + live + "-qwerty"));
}

// A writer claims the folder it writes (a CACHEDIR.TAG) only when it holds nothing but the cache's
// files; in any other folder it evicts and removes nothing, however far past the cap.
TEST_F(CacheLimit, AWriterRemovesNothingFromAFolderThatIsNoCache) {
  const std::string dead = std::to_string(dead_pid());
  put("thesis.tex", 5000, 1000);
  put("old.entry", 5000, 1000);
  fs::create_directories(dir_ / ("project.tmp-" + dead + "-abc"));
  CacheCap cap(dir_, is_entry, 100);
  put("new.entry", 400, 0);
  cap.wrote(dir_ / "new.entry", 400);
  EXPECT_THAT(names(), ElementsAre("new.entry", "old.entry", "project.tmp-" + dead + "-abc", "thesis.tex"));
  EXPECT_FALSE(is_tiletune_cache(dir_));

  // An empty folder, or one of the cache's files alone, is claimed.
  const fs::path cache = dir_ / "cache";
  fs::create_directories(cache);
  testing_support::write_aged_file(cache / "a.entry", 10, 0);
  EXPECT_TRUE(claim_cache_folder(cache, is_entry));
  EXPECT_TRUE(is_tiletune_cache(cache));
  EXPECT_TRUE(claim_cache_folder(cache, is_entry)) << "claimed once, claimed for good";
}

TEST_F(CacheLimit, StaleTemporariesAreRemovedAndALiveWritersStay) {
  const std::string dead = std::to_string(dead_pid());
  const std::string live = std::to_string(getpid());
  put("x.entry", 10, 0);
  put("a.so.tmp-" + dead + "-abc123", 10, 0);
  put("b.so.tmp-" + live + "-abc123", 10, 0);
  put("c.so.tmp-" + live + "-abc123", 10, 7200);  // two hours: nobody writes that long
  put("d.entry.tmp.Zz9Yy8", 10, 7200);            // an older tiletune's, old
  put("e.entry.tmp.Zz9Yy8", 10, 0);               // an older tiletune's, recent: may be live
  fs::create_directory(dir_ / ("kernel.tmp-" + dead + "-abc123"));
  std::ofstream(dir_ / ("kernel.tmp-" + dead + "-abc123") / "inside") << "x";

  const CacheUsage usage = measure_cache(dir_, is_entry);
  EXPECT_EQ(usage.temporaries, 6u);
  EXPECT_EQ(usage.stale_temporaries, 4u);
  EXPECT_EQ(remove_stale_temporaries(dir_), 4u);
  EXPECT_THAT(names(), ElementsAre("b.so.tmp-" + live + "-abc123", "e.entry.tmp.Zz9Yy8", "x.entry"));
}

}  // namespace
}  // namespace tiletune
