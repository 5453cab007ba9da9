// What several test files share: an empty folder of the running test's own (removed when the
// test passes, kept for a look when it fails), aged files and the
// sorted listing of a folder (for caches), and the pid of a process that is gone (for files whose
// writer must look dead).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tiletune::testing_support {

// Removes the folders fresh_test_folder made for a test once it has passed; a failed test's are
// kept, and named, for a look at what it left.
class TestFolderCleaner : public ::testing::EmptyTestEventListener {
 public:
  static TestFolderCleaner& installed() {
    static TestFolderCleaner* const cleaner = [] {
      auto* made = new TestFolderCleaner;
      ::testing::UnitTest::GetInstance()->listeners().Append(made);  // which owns it
      return made;
    }();
    return *cleaner;
  }
  void add(const std::filesystem::path& folder) { folders_.push_back(folder); }

  void OnTestEnd(const ::testing::TestInfo& test) override {
    for (const std::filesystem::path& folder : folders_) {
      if (test.result()->Failed()) {
        std::printf("[ kept     ] %s (the test failed)\n", folder.c_str());
      } else {
        std::error_code ignored;  // a folder the test removed itself, or one still in use: leave it
        std::filesystem::remove_all(folder, ignored);
      }
    }
    folders_.clear();
  }

 private:
  std::vector<std::filesystem::path> folders_;
};

// The running test's name as one path component: a parameterized test's "Name/2" as "Name-2" (its
// '/' would make a folder the test's own removal leaves behind).
inline std::string running_test_name() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

// $TMPDIR/tiletune-PREFIX-TEST-PID, created empty (whatever an earlier run left is removed), and
// removed again when the test passes.
inline std::filesystem::path fresh_test_folder(const std::string& prefix) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tiletune-" + prefix + "-" + running_test_name() + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TestFolderCleaner::installed().add(dir);
  return dir;
}

// A file of `bytes` bytes, last written `age_s` seconds ago (a cache entry's last use).
inline void write_aged_file(const std::filesystem::path& path, std::size_t bytes, int age_s) {
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
  std::filesystem::last_write_time(
      path, std::filesystem::file_time_type::clock::now() - std::chrono::seconds(age_s));
}

// The names of a folder's entries, sorted.
inline std::vector<std::string> sorted_names(const std::filesystem::path& folder) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    found.push_back(e.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The pid of a process that has exited and been reaped.
inline pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

}  // namespace tiletune::testing_support
