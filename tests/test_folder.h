// What several test files share: an empty folder of the running test's own, and the pid of a
// process that is gone (for files whose writer must look dead).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace tiletune::testing_support {

// $TMPDIR/tiletune-PREFIX-TEST-PID, created empty (whatever an earlier run left is removed).
inline std::filesystem::path fresh_test_folder(const std::string& prefix) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tiletune-" + prefix + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
       "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The pid of a process that has exited and been reaped.
inline pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

}  // namespace tiletune::testing_support
