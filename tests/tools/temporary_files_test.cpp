// tiletune's temporary files cannot be redirected: a symlink planted in $TMPDIR under the name a
// sanitized CPU fuzz once gave its private copy of a kernel object ("tiletune-<pid>-<n>-<object>",
// written with O_TRUNC) must leave its target untouched, and nothing is left behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_tiletune.h"
#include "tests/support/test_folder.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using testing_tools::run_tiletune;

class TemporaryFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("temporary-files");
    fs::create_directories(dir_ / "tmp");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TemporaryFiles, SanitizedCpuFuzzDoesNotWriteThroughASymlinkPlantedInTmpdir) {
  const std::vector<std::string> fuzz = {
      "fuzz", (fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu").string(), "--backend",
      "cpu", "--sanitize", "--config", "BLOCK_X=16,BLOCK_Y=4", "--cases", "3"};
  const std::map<std::string, std::string> environment = {
      {"XDG_CACHE_HOME", (dir_ / "cache").string()}, {"TMPDIR", (dir_ / "tmp").string()}};
  // The first run builds the object, whose name the attacker can then predict.
  const testing_tools::TiletuneRun build = run_tiletune(dir_, fuzz, environment);
  ASSERT_EQ(build.exit_code, 0) << build;
  std::string object;
  for (const auto& e : fs::directory_iterator(dir_ / "cache" / "tiletune" / "cpu")) {
    if (e.path().extension() == ".so") object = e.path().filename().string();
  }
  ASSERT_FALSE(object.empty());
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the private copy is removed after the run";

  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  const fs::path tmp = dir_ / "tmp";
  // In the child that becomes tiletune (its pid stays through tiletune's own re-execution).
  const testing_tools::TiletuneRun attacked = run_tiletune(dir_, fuzz, environment, [&] {
    for (int copy = 0; copy < 16; ++copy) {
      const fs::path link = tmp / ("tiletune-" + std::to_string(getpid()) + "-" +
                                   std::to_string(copy) + "-" + object);
      if (symlink(victim.c_str(), link.c_str()) != 0) _exit(126);
    }
  });
  EXPECT_EQ(attacked.exit_code, 0) << attacked;
  EXPECT_TRUE(testing_tools::read_text(victim) == "precious") << "written through a planted symlink";
  for (const auto& e : fs::directory_iterator(tmp)) {
    EXPECT_TRUE(fs::is_symlink(e.symlink_status())) << e.path() << " left behind";
  }
}

}  // namespace
}  // namespace tiletune
