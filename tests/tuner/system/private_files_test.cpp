// Temporary files nobody else can redirect: a symlink planted where a file is created is refused
// and its target left alone; private directories are fresh and 0700; temporary names carry their
// creator's pid, and only what a dead process (or an old one) left is stale.
#include "tuner/system/private_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <system_error>

#include "tests/support/test_folder.h"

namespace tiletune {
namespace {

using testing_support::dead_pid;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class PrivateFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("private-files");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PrivateFiles, WriteNewFileRefusesAPlantedSymlinkAndLeavesItsTargetAlone) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  const fs::path planted = dir_ / "predictable-name";
  fs::create_symlink(victim, planted);
  try {
    write_new_file(planted, "overwritten");
    FAIL() << "wrote through a symlink";
  } catch (const std::system_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(planted.string()));
  }
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(planted));
}

TEST_F(PrivateFiles, WriteNewFileRefusesAnExistingFileAndCreatesPrivately) {
  write_new_file(dir_ / "a", "first");
  EXPECT_THROW(write_new_file(dir_ / "a", "second"), std::system_error);
  EXPECT_EQ(read_file(dir_ / "a"), "first");
  struct stat status {};
  ASSERT_EQ(stat((dir_ / "a").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
}

TEST_F(PrivateFiles, CopyToNewFileRefusesAPlantedSymlink) {
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  std::ofstream(dir_ / "source") << "object bytes";
  fs::create_symlink(victim, dir_ / "copy");
  EXPECT_THROW(copy_to_new_file(dir_ / "source", dir_ / "copy"), std::system_error);
  EXPECT_EQ(read_file(victim), "precious");
  copy_to_new_file(dir_ / "source", dir_ / "fresh-copy");
  EXPECT_EQ(read_file(dir_ / "fresh-copy"), "object bytes");
}

TEST_F(PrivateFiles, PrivateDirectoriesAreFreshAndOnlyTheOwnersAndRemovedWithTheirContent) {
  fs::path kept;
  {
    const PrivateDirectory first(dir_, "tiletune-x-");
    const PrivateDirectory second(dir_, "tiletune-x-");
    EXPECT_NE(first.path(), second.path());
    EXPECT_THAT(first.path().filename().string(), StartsWith("tiletune-x-"));
    struct stat status {};
    ASSERT_EQ(lstat(first.path().c_str(), &status), 0);
    EXPECT_TRUE(S_ISDIR(status.st_mode));
    EXPECT_EQ(status.st_mode & 0777, 0700u);
    write_new_file(first.path() / "log", "text");
    kept = first.path();
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST_F(PrivateFiles, OwnDirectoryIsMadePrivateAndRefusesOneOthersCouldHavePlanted) {
  const fs::path fresh = own_directory(dir_ / "mine");
  struct stat status {};
  ASSERT_EQ(lstat(fresh.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0700u);
  EXPECT_EQ(own_directory(fresh), fresh) << "an existing private one is taken as it is";

  const fs::path open_to_all = dir_ / "open";
  fs::create_directory(open_to_all);
  fs::permissions(open_to_all, fs::perms::all);
  EXPECT_THROW(own_directory(open_to_all), std::runtime_error);
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directory(elsewhere);
  fs::permissions(elsewhere, fs::perms::owner_all);
  fs::create_directory_symlink(elsewhere, dir_ / "link");
  try {
    own_directory(dir_ / "link");
    FAIL() << "a symlink was taken for a directory of our own";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not a directory"));
  }
}

TEST_F(PrivateFiles, TemporariesBesideATargetAreExclusiveAndNamedWithThePid) {
  const fs::path target = dir_ / "0123.entry";
  const TemporaryBeside a = create_temporary_beside(target);
  const TemporaryBeside b = create_temporary_beside(target);
  close(a.fd);
  close(b.fd);
  EXPECT_NE(a.path, b.path);
  EXPECT_THAT(a.path.string(), StartsWith(target.string() + ".tmp-" + std::to_string(getpid()) + "-"));
  EXPECT_EQ(temporary_owner(a.path.filename().string()), getpid());
}

TEST(TemporaryNames, OwnerIsParsedOnlyFromATemporaryName) {
  EXPECT_EQ(temporary_owner("abc.entry.tmp-1234-Xy9aB0"), 1234);
  EXPECT_EQ(temporary_owner("naive-0123.so.tmp-77-0"), 77);  // older CPU cache temporaries
  EXPECT_EQ(temporary_owner("abc.entry"), std::nullopt);
  EXPECT_EQ(temporary_owner("abc.tmp-12"), std::nullopt);
  EXPECT_EQ(temporary_owner("abc.tmp-12-"), std::nullopt);
  EXPECT_EQ(temporary_owner("abc.tmp-x-123456"), std::nullopt);
  EXPECT_TRUE(temporary_name("abc.entry.tmp.Ab12Cd"));  // older cubin cache temporaries
  EXPECT_FALSE(temporary_name("abc.entry"));
}

TEST_F(PrivateFiles, OnlyTemporariesOfDeadOwnersOrOldOnesAreStale) {
  const auto entry = [&](const std::string& name) {
    std::ofstream(dir_ / name) << "x";
    return fs::directory_entry(dir_ / name);
  };
  const std::chrono::seconds hour{3600};
  const std::string live = std::to_string(getpid());
  const std::string dead = std::to_string(dead_pid());
  EXPECT_FALSE(stale_temporary(entry("a.entry.tmp-" + live + "-abcdef"), hour)) << "a live writer's";
  EXPECT_TRUE(stale_temporary(entry("b.entry.tmp-" + dead + "-abcdef"), hour)) << "a dead writer's";
  EXPECT_FALSE(stale_temporary(entry("c.entry"), hour)) << "an entry is never a temporary";
  EXPECT_FALSE(stale_temporary(entry("d.entry.tmp.abcdef"), hour)) << "recent, owner unknown";

  const fs::directory_entry old_live = entry("e.entry.tmp-" + live + "-abcdef");
  const fs::directory_entry old_unknown = entry("f.entry.tmp.abcdef");
  fs::last_write_time(old_live.path(), fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::last_write_time(old_unknown.path(), fs::file_time_type::clock::now() - std::chrono::hours(2));
  EXPECT_TRUE(stale_temporary(old_live, hour)) << "no writer keeps a temporary for two hours";
  EXPECT_TRUE(stale_temporary(old_unknown, hour));
  fs::create_directory(dir_ / ("g.tmp-" + dead + "-abcdef"));
  EXPECT_TRUE(stale_temporary(fs::directory_entry(dir_ / ("g.tmp-" + dead + "-abcdef")), hour))
      << "a private directory of a dead process";
}

}  // namespace
}  // namespace tiletune
