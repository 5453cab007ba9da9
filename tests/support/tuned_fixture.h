// The real tune the runtime tests select from: tests/fixtures/tuned/h100_kernels_src.sql, a
// `sqlite3 .dump` of kernels_src/*.cu tuned on an H100 at three shapes, loaded into a database.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tiletune::testing_support {

inline constexpr const char* kTunedFixtureGpu = "NVIDIA H100 80GB HBM3";

// Writes the fixture's database at `path` (which must not exist) and returns the path.
inline std::filesystem::path load_tuned_fixture(const std::filesystem::path& path) {
  std::ifstream dump(std::string(TILETUNE_SOURCE_DIR) + "/tests/fixtures/tuned/h100_kernels_src.sql");
  std::stringstream sql;
  sql << dump.rdbuf();
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.str().c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  return path;
}

}  // namespace tiletune::testing_support
