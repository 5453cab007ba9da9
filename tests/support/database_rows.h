// Reading a tiletune database back row by row, as tests compare two files: every row of a query
// as one line, and a dump of every table by what identifies its rows (names, hashes, shapes; never
// row ids, which differ between files that hold the same records).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace tiletune::testing_support {

// Every row of a query on the file, its columns joined by '|', sorted.
inline std::vector<std::string> rows(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << path;
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db) << ": " << sql;
  std::vector<std::string> lines;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string line;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
      line += (i ? "|" : "") + std::string(text ? text : "NULL");
    }
    lines.push_back(line);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// A dump of a file as "table: row" lines, sorted: the GPU, template and shape tables whole (a
// template version with its order within its name, not its number), then the tables a caller
// adds, whose queries name a row's GPU, template version and shape by the expressions below over
// the table aliased `x` and joined by `joins` (or `joins_with_shape`).
class DatabaseDump {
 public:
  static inline const std::string gpu =
      "g.name || ' ' || g.cc_major || g.cc_minor || ' ' || g.sm_count || ' ' || g.memory_bytes";
  static inline const std::string tmpl = "t.name || '@' || t.source_hash";
  static inline const std::string shape = "s.m || 'x' || s.n || 'x' || s.k";
  static inline const std::string joins =
      " JOIN gpus g ON g.id = x.gpu_id JOIN templates t ON t.id = x.template_id";
  static inline const std::string joins_with_shape = joins + " JOIN shapes s ON s.id = x.shape_id";

  explicit DatabaseDump(std::filesystem::path path) : path_(std::move(path)) {
    add("gpus", "SELECT name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz, "
                "driver_version, nvrtc_version FROM gpus");
    add("templates", "SELECT name, source_hash, path, source, precision, (SELECT count(*) FROM "
                     "templates v WHERE v.name = t.name AND v.registered_seq < t.registered_seq) "
                     "FROM templates t");
    add("shapes", "SELECT m, n, k FROM shapes");
  }

  void add(const std::string& table, const std::string& sql) {
    for (const std::string& row : rows(path_, sql)) lines_.push_back(table + ": " + row);
  }

  std::vector<std::string> lines() const {
    std::vector<std::string> sorted = lines_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

 private:
  std::filesystem::path path_;
  std::vector<std::string> lines_;
};

}  // namespace tiletune::testing_support
