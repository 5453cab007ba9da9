// What the db tests share: sample records, a field-by-field comparison, SQLite on the file
// directly, and a fixture that gives each test a fresh directory.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include "db/result_store.h"

namespace tiletune {

inline const GemmShape kSquare{1024, 1024, 1024};
inline const GemmShape kTall{4096, 256, 512};

inline GpuRecord h200() {
  GpuRecord gpu;
  gpu.name = "NVIDIA H200";
  gpu.cc_major = 9;
  gpu.cc_minor = 0;
  gpu.sm_count = 132;
  gpu.clock_khz = 1980000;
  gpu.memory_bytes = 150'000'000'000ULL;  // beyond 32 bits on purpose
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  return gpu;
}

inline TemplateRecord make_template(const std::string& name, const std::string& hash) {
  return {name, hash, "kernels_src/" + name + ".cu", "// " + name + " " + hash + "\n"};
}

inline ResultRecord make_result(const std::string& name, const std::string& hash,
                                const std::string& config, GemmShape shape, ResultStatus status,
                                double median_ms) {
  ResultRecord result;
  result.template_name = name;
  result.template_hash = hash;
  result.config = config;
  result.shape = shape;
  result.status = status;
  result.median_ms = median_ms;
  result.min_ms = median_ms * 0.9;
  result.max_ms = median_ms * 1.2;
  result.runs = 20;
  result.tflops = shape.flops() / (median_ms * 1e-3) / 1e12;
  return result;
}

// Every field but recorded_at, which the store fills.
inline void expect_same_result(const ResultRecord& actual, const ResultRecord& expected) {
  EXPECT_EQ(actual.template_name, expected.template_name);
  EXPECT_EQ(actual.template_hash, expected.template_hash);
  EXPECT_EQ(actual.config, expected.config);
  EXPECT_EQ(actual.shape, expected.shape);
  EXPECT_EQ(actual.status, expected.status);
  EXPECT_EQ(actual.detail, expected.detail);
  EXPECT_DOUBLE_EQ(actual.median_ms, expected.median_ms);
  EXPECT_DOUBLE_EQ(actual.min_ms, expected.min_ms);
  EXPECT_DOUBLE_EQ(actual.max_ms, expected.max_ms);
  EXPECT_EQ(actual.runs, expected.runs);
  EXPECT_DOUBLE_EQ(actual.tflops, expected.tflops);
  EXPECT_EQ(actual.registers, expected.registers);
  EXPECT_EQ(actual.static_shared_bytes, expected.static_shared_bytes);
  EXPECT_EQ(actual.dynamic_shared_bytes, expected.dynamic_shared_bytes);
  EXPECT_EQ(actual.spill_bytes, expected.spill_bytes);
}

// Runs one statement on the file with SQLite directly and returns the first column of its first
// row as text ("" when there is none).
inline std::string query_file(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string value;
  const int rc = sqlite3_step(stmt);
  EXPECT_TRUE(rc == SQLITE_ROW || rc == SQLITE_DONE) << sqlite3_errmsg(db);
  if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0)) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Runs a script of statements on the file with SQLite directly (creating it if need be).
inline void exec_file(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// Each test gets a fresh directory for its database, removed afterwards.
class ResultStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    dir_ = std::filesystem::temp_directory_path() /
           ("tiletune-db-test-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(random()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::filesystem::path db_path() const { return dir_ / "tiletune.db"; }

  std::filesystem::path dir_;
};

}  // namespace tiletune
