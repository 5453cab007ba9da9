// Opening a schema version 1 database (as tiletune wrote it before timeout, crashed and pruned
// existed) migrates it to version 2, then 3 (fuzz_passes), each step in one transaction: every row
// kept, the new statuses accepted, the schema the same as a new file's; a version 2 file takes
// the second step alone; a version 3 file gains missed_problems (version 4), a version 4 file
// counters and bench_results (version 5); several openers at
// once migrate once; a migration that fails changes nothing; other versions are refused.
#include "db/result_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/result_records.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

// db/schema.sql as it was at version 1 (comments left out): the files to be migrated. Frozen
// here on purpose: this is the old format, whatever schema.sql becomes.
constexpr const char* kSchemaVersion1 = R"sql(
PRAGMA journal_mode = WAL;
CREATE TABLE gpus (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  clock_khz INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  UNIQUE (name, cc_major, cc_minor, sm_count, memory_bytes)
) STRICT;
CREATE TABLE templates (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  path TEXT NOT NULL,
  source TEXT NOT NULL,
  registered_seq INTEGER NOT NULL,
  UNIQUE (name, source_hash)
) STRICT;
CREATE VIEW template_versions AS
SELECT t.*,
       t.registered_seq = (SELECT max(v.registered_seq) FROM templates v WHERE v.name = t.name)
         AS is_current
FROM templates t;
CREATE TABLE shapes (
  id INTEGER PRIMARY KEY,
  m INTEGER NOT NULL,
  n INTEGER NOT NULL,
  k INTEGER NOT NULL,
  UNIQUE (m, n, k)
) STRICT;
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config TEXT NOT NULL,
  shape_id INTEGER NOT NULL REFERENCES shapes (id),
  status TEXT NOT NULL
    CHECK (status IN ('ok', 'compile_error', 'wrong_result', 'launch_error', 'device_limit')),
  detail TEXT NOT NULL,
  median_ms REAL NOT NULL,
  min_ms REAL NOT NULL,
  max_ms REAL NOT NULL,
  runs INTEGER NOT NULL,
  tflops REAL NOT NULL,
  registers INTEGER NOT NULL,
  static_shared_bytes INTEGER NOT NULL,
  dynamic_shared_bytes INTEGER NOT NULL,
  spill_bytes INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  UNIQUE (gpu_id, template_id, config, shape_id)
) STRICT;
CREATE INDEX results_by_shape ON results (shape_id, status, median_ms);
PRAGMA user_version = 1;
)sql";

// A GPU, two versions of tiled (h2 current), two shapes and three results with ids that are not
// 1, 2, 3 (so that keeping them is seen).
constexpr const char* kVersion1Rows = R"sql(
INSERT INTO gpus VALUES (1, 'NVIDIA H200', 9, 0, 132, 150000000000, 1980000, 13000, '13.0');
INSERT INTO templates VALUES (1, 'tiled', 'h1', 'kernels_src/tiled.cu', '// tiled h1', 1);
INSERT INTO templates VALUES (2, 'tiled', 'h2', 'kernels_src/tiled.cu', '// tiled h2', 2);
INSERT INTO shapes VALUES (1, 1024, 1024, 1024);
INSERT INTO shapes VALUES (2, 4096, 256, 512);
INSERT INTO results VALUES (5, 1, 2, 'TILE=16', 1, 'ok', '', 1.5, 1.25, 1.75, 20, 1.4316557653333333,
                            40, 8448, 0, 0, 13000, '13.0', '2024-05-01 12:00:00');
INSERT INTO results VALUES (7, 1, 2, 'TILE=32', 1, 'wrong_result', 'C[3,4] = 1 expected 2',
                            0, 0, 0, 0, 0, 38, 16896, 0, 8, 12080, '12.8', '2024-05-01 12:00:01');
INSERT INTO results VALUES (9, 1, 1, 'TILE=8', 2, 'compile_error', 'undeclared_thing',
                            0, 0, 0, 0, 0, 0, 0, 0, 0, 13000, '13.0', '2024-04-30 08:00:00');
)sql";

void write_version_1_database(const fs::path& path) {
  exec_file(path, std::string(kSchemaVersion1) + kVersion1Rows);
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "1");
}

// The three rows of kVersion1Rows as ResultStore reads them.
ResultRecord version_1_fast() {
  ResultRecord result;
  result.template_name = "tiled";
  result.template_hash = "h2";
  result.config = "TILE=16";
  result.shape = kSquare;
  result.status = ResultStatus::ok;
  result.median_ms = 1.5;
  result.min_ms = 1.25;
  result.max_ms = 1.75;
  result.runs = 20;
  result.tflops = 1.4316557653333333;
  result.registers = 40;
  result.static_shared_bytes = 8448;
  result.recorded_at = "2024-05-01 12:00:00";
  return result;
}
ResultRecord version_1_wrong() {
  ResultRecord result;
  result.template_name = "tiled";
  result.template_hash = "h2";
  result.config = "TILE=32";
  result.shape = kSquare;
  result.status = ResultStatus::wrong_result;
  result.detail = "C[3,4] = 1 expected 2";
  result.registers = 38;
  result.static_shared_bytes = 16896;
  result.spill_bytes = 8;
  result.recorded_at = "2024-05-01 12:00:01";
  return result;
}
ResultRecord version_1_broken() {
  ResultRecord result;
  result.template_name = "tiled";
  result.template_hash = "h1";
  result.config = "TILE=8";
  result.shape = kTall;
  result.status = ResultStatus::compile_error;
  result.detail = "undeclared_thing";
  result.recorded_at = "2024-04-30 08:00:00";
  return result;
}

// The three rows are there, whole, whatever else was recorded since.
void expect_version_1_rows(const ResultStore& store) {
  const auto current = store.recorded_results(1, "h2", kSquare);
  ASSERT_TRUE(current.contains("TILE=16") && current.contains("TILE=32"));
  expect_same_result(current.at("TILE=16"), version_1_fast());
  EXPECT_EQ(current.at("TILE=16").recorded_at, version_1_fast().recorded_at);
  expect_same_result(current.at("TILE=32"), version_1_wrong());
  EXPECT_EQ(current.at("TILE=32").recorded_at, version_1_wrong().recorded_at);
  const auto old = store.recorded_results(1, "h1", kTall);
  ASSERT_EQ(old.size(), 1u);
  expect_same_result(old.at("TILE=8"), version_1_broken());
  EXPECT_EQ(old.at("TILE=8").recorded_at, version_1_broken().recorded_at);
}

// Each object of the schema as "type name: sql", in name order; the table name that a rename
// leaves quoted ("results") is unquoted, so that a migrated file compares equal to a new one.
std::string schema_of(const fs::path& path) {
  std::string text = query_file(path, R"sql(
      SELECT group_concat(line, char(10)) FROM (
        SELECT type || ' ' || name || ': ' || coalesce(sql, '') AS line
        FROM sqlite_schema ORDER BY type, name))sql");
  for (std::size_t at; (at = text.find("\"results\"")) != std::string::npos;) {
    text.replace(at, 9, "results");
  }
  return text;
}

class SchemaMigrationTest : public ResultStoreTest {};

TEST_F(SchemaMigrationTest, Version1FileIsMigratedKeepingEveryRow) {
  write_version_1_database(db_path());
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  expect_version_1_rows(store);
  EXPECT_EQ(store.recorded_results(1, "h2", kSquare).size(), 2u);
  EXPECT_EQ(query_file(db_path(), "SELECT group_concat(id) FROM (SELECT id FROM results ORDER BY id)"),
            "5,7,9");
  EXPECT_EQ(query_file(db_path(), "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
  EXPECT_EQ(query_file(db_path(), "PRAGMA journal_mode"), "wal");

  // Served as before: the current version's fastest ok result, the template's source and GPU.
  const auto best = store.best("NVIDIA H200", kSquare);
  ASSERT_TRUE(best.has_value());
  expect_same_result(*best, version_1_fast());
  ASSERT_EQ(store.templates().size(), 1u);
  EXPECT_EQ(store.templates()[0].source_hash, "h2");
  EXPECT_EQ(store.templates()[0].source, "// tiled h2");
  const GpuRecord gpu = h200();
  EXPECT_EQ(store.register_gpu(gpu), 1);

  // The new statuses are accepted, next to the old rows.
  store.record_result(1, gpu, make_result("tiled", "h2", "TILE=64", kSquare, ResultStatus::timeout, 0));
  store.record_result(1, gpu, make_result("tiled", "h2", "TILE=4", kSquare, ResultStatus::crashed, 0));
  store.record_result(1, gpu, make_result("tiled", "h2", "TILE=2", kSquare, ResultStatus::pruned, 0));
  const auto recorded = store.recorded_results(1, "h2", kSquare);
  ASSERT_EQ(recorded.size(), 5u);
  EXPECT_EQ(recorded.at("TILE=64").status, ResultStatus::timeout);
  EXPECT_EQ(recorded.at("TILE=4").status, ResultStatus::crashed);
  EXPECT_EQ(recorded.at("TILE=2").status, ResultStatus::pruned);

  // And the migration is done once: reopening changes nothing.
  {
    ResultStore again(db_path());
    expect_version_1_rows(again);
    EXPECT_EQ(again.recorded_results(1, "h2", kSquare).size(), 5u);
  }
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM results"), "6");
}

// A version 2 file, as tiletune wrote it before fuzz passes were kept: the version 1 file
// migrated by the project's own first step.
void write_version_2_database(const fs::path& path) {
  write_version_1_database(path);
  std::ifstream file(fs::path(TILETUNE_SOURCE_DIR) / "db" / "migrate_v1_to_v2.sql");
  exec_file(path, std::string(std::istreambuf_iterator<char>(file), {}));
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "2");
}

TEST_F(SchemaMigrationTest, Version2FileGainsAnEmptyFuzzPassTable) {
  write_version_2_database(db_path());
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  expect_version_1_rows(store);
  EXPECT_TRUE(store.fuzz_passes(1, "h2").empty()) << "a pass from before is not invented";
  store.record_fuzz_pass(1, "tiled", "h2", "TILE=16", 30);
  EXPECT_EQ(store.fuzz_passes(1, "h2"), (std::map<std::string, int>{{"TILE=16", 30}}));
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
}

// A version 3 file, as tiletune wrote it before missed problems were kept: the version 2 file
// migrated by the project's own second step, plus a fuzz pass.
void write_version_3_database(const fs::path& path) {
  write_version_2_database(path);
  std::ifstream file(fs::path(TILETUNE_SOURCE_DIR) / "db" / "migrate_v2_to_v3.sql");
  exec_file(path, std::string(std::istreambuf_iterator<char>(file), {}) +
                      "INSERT INTO fuzz_passes VALUES (1, 2, 'TILE=16', 30, '2024-05-02 09:00:00');");
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "3");
}

TEST_F(SchemaMigrationTest, Version3FileGainsAnEmptyMissedProblemTable) {
  write_version_3_database(db_path());
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  expect_version_1_rows(store);
  EXPECT_EQ(store.fuzz_passes(1, "h2"), (std::map<std::string, int>{{"TILE=16", 30}}));
  EXPECT_TRUE(store.missed_problems().empty());
  store.record_miss("NVIDIA H200", "tiled", GemmProblem{{100, 200, 300}, 300, 256, 200});
  ASSERT_EQ(store.missed_problems().size(), 1u);
  EXPECT_EQ(store.missed_problems()[0].problem, (GemmProblem{{100, 200, 300}, 300, 256, 200}));
  EXPECT_EQ(query_file(db_path(), "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
}

// The step to version 4 is one transaction too: when it fails (a table in the way), the file stays
// at version 3 with its rows and fuzz passes, and migrates once the way is clear.
TEST_F(SchemaMigrationTest, FailedMigrationToVersion4ChangesNothing) {
  write_version_3_database(db_path());
  exec_file(db_path(), "CREATE TABLE missed_problems (x INTEGER)");
  try {
    ResultStore store(db_path());
    ADD_FAILURE() << "opened";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("migrating schema version 3 to 4"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "3");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM results"), "3");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM fuzz_passes"), "1");

  exec_file(db_path(), "DROP TABLE missed_problems");
  ResultStore store(db_path());
  expect_version_1_rows(store);
  EXPECT_EQ(store.fuzz_passes(1, "h2"), (std::map<std::string, int>{{"TILE=16", 30}}));
}

// A version 3 file read-only (as query, list and the runtime library open it): it answers, has no
// missed problems, and stays at version 3.
TEST_F(SchemaMigrationTest, ReadOnlyVersion3FileHasNoMissedProblems) {
  write_version_3_database(db_path());
  {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    expect_version_1_rows(store);
    EXPECT_EQ(store.fuzz_passes(1, "h2"), (std::map<std::string, int>{{"TILE=16", 30}}));
    EXPECT_TRUE(store.missed_problems().empty());
    EXPECT_TRUE(store.missed_problems("NVIDIA H200", "tiled").empty());
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "3");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM sqlite_schema WHERE name = 'missed_problems'"),
            "0");
}

// A version 4 file, as tiletune wrote it before counters and bench rows were kept: the version 3
// file migrated by the project's own third step, plus a missed problem.
void write_version_4_database(const fs::path& path) {
  write_version_3_database(path);
  std::ifstream file(fs::path(TILETUNE_SOURCE_DIR) / "db" / "migrate_v3_to_v4.sql");
  exec_file(path, std::string(std::istreambuf_iterator<char>(file), {}) +
                      "INSERT INTO missed_problems VALUES ('NVIDIA H200', 'tiled', 100, 200, 300, "
                      "300, 256, 200, 2, '2024-05-03 10:00:00', '2024-05-04 10:00:00');");
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "4");
}

TEST_F(SchemaMigrationTest, Version4FileGainsEmptyCounterAndBenchTables) {
  write_version_4_database(db_path());
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  expect_version_1_rows(store);
  EXPECT_EQ(store.fuzz_passes(1, "h2"), (std::map<std::string, int>{{"TILE=16", 30}}));
  ASSERT_EQ(store.missed_problems().size(), 1u);
  EXPECT_EQ(store.missed_problems()[0].count, 2);
  EXPECT_TRUE(store.counters().empty());
  EXPECT_TRUE(store.bench_results().empty());

  CounterRecord counters;
  counters.template_name = "tiled";
  counters.template_hash = "h2";
  counters.config = "TILE=16";
  counters.shape = kSquare;
  counters.values = {{"dram_read_bytes", 12582912}};
  counters.ncu_version = "2025.3.1";
  store.record_counters(1, counters);
  BenchRecord bench;
  bench.template_name = "tiled";
  bench.template_hash = "h2";
  bench.config = "TILE=16";
  bench.shape = kSquare;
  bench.ours_ms = 1.5;
  bench.cublas_ms = 0.25;
  store.record_bench(1, bench);
  ASSERT_EQ(store.counters().size(), 1u);
  EXPECT_EQ(store.counters()[0].values, counters.values);
  ASSERT_EQ(store.bench_results().size(), 1u);
  EXPECT_EQ(store.bench_results()[0].cublas_ms, 0.25);
  EXPECT_EQ(query_file(db_path(), "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
}

// The step to version 5 is one transaction too: a table in the way of the second new one leaves
// the file at version 4, without the first.
TEST_F(SchemaMigrationTest, FailedMigrationToVersion5ChangesNothing) {
  write_version_4_database(db_path());
  exec_file(db_path(), "CREATE TABLE bench_results (x INTEGER)");
  try {
    ResultStore store(db_path());
    ADD_FAILURE() << "opened";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("migrating schema version 4 to 5"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "4");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM sqlite_schema WHERE name = 'counters'"), "0");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM results"), "3");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM missed_problems"), "1");

  exec_file(db_path(), "DROP TABLE bench_results");
  ResultStore store(db_path());
  expect_version_1_rows(store);
  EXPECT_EQ(store.missed_problems().size(), 1u);
}

// Read-only (query, list, report), a version 4 file answers with no counters and no bench rows,
// and stays at version 4.
TEST_F(SchemaMigrationTest, ReadOnlyVersion4FileHasNoCountersNorBenchRows) {
  write_version_4_database(db_path());
  {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    expect_version_1_rows(store);
    EXPECT_EQ(store.missed_problems().size(), 1u);
    EXPECT_TRUE(store.counters().empty());
    EXPECT_TRUE(store.counters("NVIDIA H200", "tiled").empty());
    EXPECT_TRUE(store.bench_results().empty());
    EXPECT_TRUE(store.bench_results("NVIDIA H200").empty());
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "4");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM sqlite_schema WHERE name = 'counters'"), "0");
}

void write_version_5_database(const fs::path& path) {
  write_version_4_database(path);
  std::ifstream file(fs::path(TILETUNE_SOURCE_DIR) / "db" / "migrate_v4_to_v5.sql");
  exec_file(path, std::string(std::istreambuf_iterator<char>(file), {}) +
                      "INSERT INTO bench_results VALUES (1, 2, 'TILE=16', 1, 1.5, 0.25, "
                      "'2024-05-05 10:00:00');");
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "5");
}

// Version 6: every template recorded before it computes in fp32, and no search was traced.
TEST_F(SchemaMigrationTest, Version5FileGainsFp32TemplatesAndAnEmptySearchTrace) {
  write_version_5_database(db_path());
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  expect_version_1_rows(store);
  ASSERT_EQ(store.bench_results().size(), 1u);
  EXPECT_EQ(store.bench_results()[0].cublas_ms, 0.25);
  EXPECT_EQ(query_file(db_path(), "SELECT group_concat(DISTINCT precision) FROM templates"), "fp32");
  for (const TemplateRecord& tmpl : store.templates(false)) EXPECT_EQ(tmpl.precision, Precision::fp32);
  EXPECT_TRUE(store.search_traces().empty());

  TraceRecord step;
  step.run_id = "00000000000000ab";
  step.template_name = "tiled";
  step.template_hash = "h2";
  step.shape = kSquare;
  step.seq = 1;
  step.strategy = "random";
  step.config = "TILE=16";
  step.median_ms = 1.5;
  store.record_trace(1, step);
  ASSERT_EQ(store.search_traces().size(), 1u);
  EXPECT_EQ(store.search_traces()[0].strategy, "random");
  EXPECT_EQ(store.search_traces()[0].gpu_name, "NVIDIA H200");
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
}

// A precision outside the declared ones cannot be stored, in a migrated file as in a new one.
TEST_F(SchemaMigrationTest, MigratedPrecisionColumnKeepsItsCheck) {
  write_version_5_database(db_path());
  { ResultStore store(db_path()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "UPDATE templates SET precision = 'fp16'", nullptr, nullptr, nullptr),
            SQLITE_CONSTRAINT);
  sqlite3_close(db);
  EXPECT_EQ(query_file(db_path(), "SELECT group_concat(DISTINCT precision) FROM templates"), "fp32");
}

TEST_F(SchemaMigrationTest, ReadOnlyVersion5FileHasNoTracesAndFp32Templates) {
  write_version_5_database(db_path());
  {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    expect_version_1_rows(store);
    EXPECT_TRUE(store.search_traces().empty());
    ASSERT_FALSE(store.templates().empty());
    for (const TemplateRecord& tmpl : store.templates()) EXPECT_EQ(tmpl.precision, Precision::fp32);
    // No precision column to read: every result and bench row is of an fp32 template.
    for (const CurrentResult& row : store.current_results()) {
      EXPECT_EQ(row.precision, Precision::fp32);
    }
    for (const BenchRecord& row : store.bench_results()) EXPECT_EQ(row.precision, Precision::fp32);
    EXPECT_TRUE(store.best("NVIDIA H200", kSquare).has_value());
    EXPECT_FALSE(store.best("NVIDIA H200", kSquare, std::nullopt, Precision::tf32).has_value());
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "5");
}

void write_version_6_database(const fs::path& path) {
  write_version_5_database(path);
  std::ifstream file(fs::path(TILETUNE_SOURCE_DIR) / "db" / "migrate_v5_to_v6.sql");
  exec_file(path, std::string(std::istreambuf_iterator<char>(file), {}));
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "6");
}

// Version 7: every result before it is of C = A * B (op nn), and a configuration may then be
// recorded at the same shape for other transposes beside it.
TEST_F(SchemaMigrationTest, Version6ResultsAreOfPlainProductsAndGainTransposedNeighbours) {
  write_version_6_database(db_path());
  {
    ResultStore read_only(db_path(), ResultStore::Access::read_only);
    expect_version_1_rows(read_only);  // read as nn
    EXPECT_TRUE(read_only.recorded_results(1, "h2", kSquare, Transposes{Op::n, Op::t}).empty());
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "6");
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  expect_version_1_rows(store);
  EXPECT_EQ(query_file(db_path(), "SELECT group_concat(DISTINCT op) FROM results"), "nn");

  ResultRecord nt = version_1_fast();
  nt.op = {Op::n, Op::t};
  nt.median_ms = 9;
  store.record_result(1, GpuRecord{}, nt);
  expect_version_1_rows(store);  // nn's row of the same configuration is still there, unchanged
  const auto transposed = store.recorded_results(1, "h2", kSquare, nt.op);
  ASSERT_EQ(transposed.size(), 1u);
  EXPECT_EQ(transposed.at("TILE=16").median_ms, 9);
  EXPECT_EQ(transposed.at("TILE=16").op, nt.op);
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
}

void write_version_7_database(const fs::path& path) {
  write_version_6_database(path);
  std::ifstream file(fs::path(TILETUNE_SOURCE_DIR) / "db" / "migrate_v6_to_v7.sql");
  exec_file(path, std::string(std::istreambuf_iterator<char>(file), {}) +
                      "UPDATE results SET op = 'nt' WHERE id = 7;");
  ASSERT_EQ(query_file(path, "PRAGMA user_version"), "7");
}

// Version 8: every result before it is of one product (batch 1), its transposes kept, and a
// configuration may then be recorded at the same shape and transposes for a strided batch.
TEST_F(SchemaMigrationTest, Version7ResultsAreOfOneProductAndGainBatchedNeighbours) {
  write_version_7_database(db_path());
  const Transposes nt{Op::n, Op::t};
  {
    ResultStore read_only(db_path(), ResultStore::Access::read_only);
    EXPECT_EQ(read_only.recorded_results(1, "h2", kSquare, nt).size(), 1u);  // read as batch 1
    EXPECT_TRUE(read_only.recorded_results(1, "h2", kSquare, TunedFor{{}, 8}).empty());
    ASSERT_EQ(read_only.current_results().size(), 1u);  // the ok row; the nt one is a failure
    EXPECT_EQ(read_only.current_results()[0].result.batch, 1);
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "7");
  ResultStore store(db_path());
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
  EXPECT_EQ(query_file(db_path(), "SELECT group_concat(x, ' ') FROM "
                                  "(SELECT op || ':' || batch AS x FROM results ORDER BY id)"),
            "nn:1 nt:1 nn:1");
  EXPECT_EQ(store.recorded_results(1, "h2", kSquare, nt).at("TILE=32").status, ResultStatus::wrong_result);

  ResultRecord batched = version_1_fast();
  batched.batch = 96;
  batched.median_ms = 40;
  store.record_result(1, GpuRecord{}, batched);
  EXPECT_EQ(store.recorded_results(1, "h2", kSquare).at("TILE=16").median_ms, version_1_fast().median_ms)
      << "the single product's row of the same configuration is still there, unchanged";
  const auto recorded = store.recorded_results(1, "h2", kSquare, TunedFor{{}, 96});
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded.at("TILE=16").median_ms, 40);
  EXPECT_EQ(recorded.at("TILE=16").batch, 96);
  const auto best = store.best("NVIDIA H200", kSquare, std::nullopt, Precision::fp32, TunedFor{{}, 96});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->batch, 96);
  EXPECT_FALSE(store.best("NVIDIA H200", kSquare, std::nullopt, Precision::fp32, TunedFor{{}, 12}));
  EXPECT_EQ(query_file(db_path(), "PRAGMA foreign_key_check"), "");
}

// query and list open read-only: an older file answers as it is, and stays at its version.
TEST_F(SchemaMigrationTest, ReadOnlyOpeningReadsOlderVersionsWithoutMigrating) {
  for (const char* version : {"1", "2"}) {
    SCOPED_TRACE(version);
    fs::remove(db_path());
    if (std::string(version) == "1") {
      write_version_1_database(db_path());
    } else {
      write_version_2_database(db_path());
    }
    {
      ResultStore store(db_path(), ResultStore::Access::read_only);
      expect_version_1_rows(store);
      const auto best = store.best("NVIDIA H200", kSquare);
      ASSERT_TRUE(best.has_value());
      expect_same_result(*best, version_1_fast());
      EXPECT_FALSE(store.summary().empty());
      try {
        store.fuzz_passes(1, "h2");
        ADD_FAILURE() << "read fuzz passes from a version " << version << " file";
      } catch (const DatabaseError& error) {
        EXPECT_EQ(std::string(error.what()), db_path().string() + ": schema version " + version +
                                                 " keeps no fuzz passes: run 'tiletune tune' with this "
                                                 "database to migrate it");
      }
    }
    EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), version);
  }
}

// Keeps the migrations' tables the same as db/schema.sql's.
TEST_F(SchemaMigrationTest, MigratedSchemaMatchesANewOne) {
  write_version_1_database(db_path());
  { ResultStore migrated(db_path()); }
  const fs::path fresh = dir_ / "fresh.db";
  { ResultStore created(fresh); }
  const std::string expected = schema_of(fresh);
  EXPECT_NE(expected.find("table results: CREATE TABLE results ("), std::string::npos) << expected;
  EXPECT_NE(expected.find("index results_by_shape: CREATE INDEX"), std::string::npos) << expected;
  EXPECT_NE(expected.find("table fuzz_passes: CREATE TABLE fuzz_passes ("), std::string::npos) << expected;
  EXPECT_EQ(schema_of(db_path()), expected);
  const fs::path from_version_2 = dir_ / "from-version-2.db";
  write_version_2_database(from_version_2);
  { ResultStore migrated(from_version_2); }
  EXPECT_EQ(schema_of(from_version_2), expected);
  EXPECT_NE(expected.find("table missed_problems: CREATE TABLE missed_problems ("), std::string::npos)
      << expected;
  const fs::path from_version_3 = dir_ / "from-version-3.db";
  write_version_3_database(from_version_3);
  { ResultStore migrated(from_version_3); }
  EXPECT_EQ(schema_of(from_version_3), expected);
  EXPECT_NE(expected.find("table counters: CREATE TABLE counters ("), std::string::npos) << expected;
  EXPECT_NE(expected.find("table bench_results: CREATE TABLE bench_results ("), std::string::npos)
      << expected;
  const fs::path from_version_4 = dir_ / "from-version-4.db";
  write_version_4_database(from_version_4);
  { ResultStore migrated(from_version_4); }
  EXPECT_EQ(schema_of(from_version_4), expected);
  EXPECT_NE(expected.find("table search_trace: CREATE TABLE search_trace ("), std::string::npos)
      << expected;
  const fs::path from_version_5 = dir_ / "from-version-5.db";
  write_version_5_database(from_version_5);
  { ResultStore migrated(from_version_5); }
  EXPECT_EQ(schema_of(from_version_5), expected);
  EXPECT_NE(expected.find("op TEXT NOT NULL DEFAULT 'nn'"), std::string::npos) << expected;
  const fs::path from_version_6 = dir_ / "from-version-6.db";
  write_version_6_database(from_version_6);
  { ResultStore migrated(from_version_6); }
  EXPECT_EQ(schema_of(from_version_6), expected);
  EXPECT_NE(expected.find("batch INTEGER NOT NULL DEFAULT 1"), std::string::npos) << expected;
  const fs::path from_version_7 = dir_ / "from-version-7.db";
  write_version_7_database(from_version_7);
  { ResultStore migrated(from_version_7); }
  EXPECT_EQ(schema_of(from_version_7), expected);
}

// Where the migrated tables start in the file: SQLite allocates pages deterministically, so a
// file migrated once has the same layout as any other file migrated once, and a file migrated
// twice (by an opener that did not notice another had done it) a different one.
std::string layout_of(const fs::path& path) {
  return query_file(path, R"sql(
      SELECT group_concat(name || '@' || rootpage, ' ') FROM (
        SELECT name, rootpage FROM sqlite_schema WHERE tbl_name = 'results' ORDER BY name))sql");
}

// Tuners started together on an old file: one migrates, the others find it done (they check the
// version again once they hold the write lock), nobody fails and no row is lost or doubled.
TEST_F(SchemaMigrationTest, ConcurrentOpenersMigrateOnce) {
  write_version_1_database(db_path());
  { ResultStore once(db_path()); }
  const std::string migrated_once = layout_of(db_path());
  for (int round = 0; round < 10; ++round) {
    const fs::path path = dir_ / ("old-" + std::to_string(round) + ".db");
    write_version_1_database(path);
    std::atomic<int> failures = 0;
    std::vector<std::thread> openers;
    for (int i = 0; i < 4; ++i) {
      openers.emplace_back([&] {
        try {
          ResultStore store(path);
          if (store.recorded_results(1, "h2", kSquare).size() != 2) ++failures;
        } catch (const DatabaseError& error) {
          ADD_FAILURE() << error.what();
          ++failures;
        }
      });
    }
    for (auto& opener : openers) opener.join();
    ASSERT_EQ(failures, 0) << "round " << round;
    EXPECT_EQ(query_file(path, "PRAGMA user_version"), "8");
    EXPECT_EQ(query_file(path, "SELECT count(*) FROM results"), "3");
    EXPECT_EQ(query_file(path, "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(layout_of(path), migrated_once) << "migrated more than once";
  }
}

// A migration that fails halfway (here: a table in the way of the new one) is rolled back whole:
// the file stays at version 1 with its rows and its old table.
TEST_F(SchemaMigrationTest, FailedMigrationChangesNothing) {
  write_version_1_database(db_path());
  exec_file(db_path(), "CREATE TABLE results_v2 (x INTEGER)");
  try {
    ResultStore store(db_path());
    ADD_FAILURE() << "opened";
  } catch (const DatabaseError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(db_path().string()), std::string::npos) << message;
    EXPECT_NE(message.find("migrating schema version 1 to 2"), std::string::npos) << message;
  }
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "1");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM results"), "3");
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM results_v2"), "0");
  EXPECT_NE(query_file(db_path(), "SELECT sql FROM sqlite_schema WHERE name = 'results'")
                .find("'device_limit')"),
            std::string::npos)
      << "the version 1 CHECK is still there";

  // Out of the way, it migrates.
  exec_file(db_path(), "DROP TABLE results_v2");
  ResultStore store(db_path());
  expect_version_1_rows(store);
}

TEST_F(SchemaMigrationTest, OtherVersionsAreRefused) {
  for (const int version : {9, 42, -1}) {
    const fs::path path = dir_ / ("v" + std::to_string(version) + ".db");
    { ResultStore store(path); }
    exec_file(path, "PRAGMA user_version = " + std::to_string(version));
    try {
      ResultStore store(path);
      ADD_FAILURE() << "opened schema version " << version;
    } catch (const DatabaseError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(path.string()), std::string::npos) << message;
      EXPECT_NE(message.find("unsupported schema version " + std::to_string(version) +
                             " (this tiletune reads version 8 and migrates versions 1 to 7)"),
                std::string::npos)
          << message;
    }
    EXPECT_EQ(query_file(path, "PRAGMA user_version"), std::to_string(version)) << "left alone";
  }
}

}  // namespace
}  // namespace tiletune
