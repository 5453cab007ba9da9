// The built tiletune binary run from a test: in a folder, with extra environment variables, its
// exit code and output kept; and the one-line failure contract its errors are held to.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_folder.h"

namespace tiletune::testing_tools {

inline const std::filesystem::path kTiletune =
    std::filesystem::path(TILETUNE_BINARY_DIR) / "tools" / "tiletune";

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct TiletuneRun {
  int exit_code = -1;
  std::string out, err;
};

inline std::ostream& operator<<(std::ostream& os, const TiletuneRun& run) {
  return os << "exit " << run.exit_code << "\n--- stdout\n" << run.out << "--- stderr\n" << run.err;
}

// Runs tiletune with `args` in `dir` (stdout and stderr to files there), `environment` added to
// this process's. `before_exec` runs in the child, whose pid tiletune keeps, just before it.
template <class BeforeExec = void (*)()>
TiletuneRun run_tiletune(const std::filesystem::path& dir, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& environment = {},
                 BeforeExec before_exec = [] {}) {
  const std::filesystem::path out = dir / "stdout", err = dir / "stderr";
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(127);
    before_exec();
    std::vector<char*> argv{const_cast<char*>(kTiletune.c_str())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(kTiletune.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  TiletuneRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_text(out);
  run.err = read_text(err);
  return run;
}

// The lines of a text, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The failure contract: exactly one line on stderr, "tiletune: ...", and the exit code.
inline void expect_one_line_failure(const TiletuneRun& run, int exit_code) {
  EXPECT_EQ(run.exit_code, exit_code) << run;
  const std::vector<std::string> lines = lines_of(run.err);
  ASSERT_EQ(lines.size(), 1u) << run;
  EXPECT_THAT(lines[0], ::testing::StartsWith("tiletune: ")) << run;
}

// A test with a folder of its own, removed afterwards, in which tiletune runs; the CPU backend's
// kernel cache and the cubin cache live in the build folder, shared by the CLI tests (never the
// user's), so that each configuration is built once across tests and runs.
class TiletuneFolderTest : public ::testing::Test {
 protected:
  explicit TiletuneFolderTest(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + testing_support::running_test_name() + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::filesystem::path cache =
        std::filesystem::path(TILETUNE_BINARY_DIR) / "tests" / "tools" / "cpu-tune-cache";
    environment_ = {{"XDG_CACHE_HOME", cache.string()},
                    {"TILETUNE_CACHE_DIR", (cache / "cubins").string()}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TiletuneRun tiletune(const std::vector<std::string>& args) const {
    return run_tiletune(dir_, args, environment_);
  }

  std::filesystem::path dir_;
  std::map<std::string, std::string> environment_;

 private:
  std::string prefix_;
};

}  // namespace tiletune::testing_tools
