// The real tunes tests select from, `sqlite3 .dump`s loaded into databases:
// tests/fixtures/tuned/h100_kernels_src.sql, kernels_src/*.cu tuned on an H100 at three shapes, and
// the selection fixture (below).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tiletune::testing_support {

inline constexpr const char* kTunedFixtureGpu = "NVIDIA H100 80GB HBM3";

// Writes the database a `sqlite3 .dump` makes at `path` (which must not exist) and returns the path.
inline std::filesystem::path load_sql_dump(const std::filesystem::path& dump_path,
                                           const std::filesystem::path& path) {
  std::ifstream dump(dump_path);
  EXPECT_TRUE(dump) << "cannot read " << dump_path;
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

// Writes the fixture's database at `path` (which must not exist) and returns the path.
inline std::filesystem::path load_tuned_fixture(const std::filesystem::path& path) {
  return load_sql_dump(std::string(TILETUNE_SOURCE_DIR) + "/tests/fixtures/tuned/h100_kernels_src.sql", path);
}

// The selection fixture (tests/fixtures/selection/README.md), unpacked into the build folder when
// CMake configures: exhaustive tunes on an H200 at bench's suite ("suite") and at held-out
// workload shapes ("heldout"). Writes the named one's database at `path`.
inline constexpr const char* kSelectionFixtureGpu = "NVIDIA H200";
inline std::filesystem::path load_selection_fixture(const std::string& name,
                                                    const std::filesystem::path& path) {
  return load_sql_dump(std::string(TILETUNE_BINARY_DIR) + "/fixtures/selection/" + name + ".sql", path);
}

}  // namespace tiletune::testing_support
