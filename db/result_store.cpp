#include "db/result_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "db/schema_sql.h"
#include "db/sqlite.h"
#include "tuner/core/kernel_template.h"  // is_identifier

namespace tiletune {
namespace {

using sqlite::exec;
using sqlite::fail;
using sqlite::kBusyTimeoutMs;
using sqlite::Statement;
using sqlite::Transaction;

// The user_version that db/schema.sql sets. The older versions that opening migrates, each to the
// next, in turn, are kMigrations' (db/schema_sql.h, from db/migrate_v*_to_v*.sql); any other is
// refused.
constexpr int kSchemaVersion = 8;

int schema_version(sqlite3* db, const std::filesystem::path& path) {
  Statement query(db, path, "reading the schema version", "PRAGMA user_version");
  query.step();
  return query.integer(0);
}

// Migrates a file from one version to the next, all or nothing: a failure (or a crash) leaves the
// file at its version with every row.
void migrate(sqlite3* db, const std::filesystem::path& path, const Migration& migration) {
  const std::string doing = "migrating schema version " + std::to_string(migration.from) + " to " +
                            std::to_string(migration.from + 1);
  Transaction transaction(db, path, doing);
  // Another process may have migrated it while this one waited for the lock; then there is
  // nothing to do (the transaction rolls back, having changed nothing).
  if (schema_version(db, path) != migration.from) return;
  exec(db, path, migration.sql, doing);
  transaction.commit();
}

// Creates the schema in a new or empty file, migrates a file of an older version (kMigrations) and
// refuses files of any other schema.
void create_or_check_schema(sqlite3* db, const std::filesystem::path& path) {
  if (schema_version(db, path) == 0) {
    Transaction transaction(db, path, "creating the schema");
    // Another process may have created it while this one waited for the lock.
    if (schema_version(db, path) == 0) {
      Statement objects(db, path, "creating the schema", "SELECT count(*) FROM sqlite_schema");
      objects.step();
      if (objects.int64(0) != 0) {
        throw DatabaseError(path.string() +
                            ": not a tiletune database (it has tables but no schema version)");
      }
      exec(db, path, kSchemaSql, "creating the schema");
      transaction.commit();
    }
  }
  for (const Migration& migration : kMigrations) {
    if (schema_version(db, path) == migration.from) migrate(db, path, migration);
  }
  const int version = schema_version(db, path);
  if (version != kSchemaVersion) {
    throw DatabaseError(path.string() + ": unsupported schema version " + std::to_string(version) +
                        " (this tiletune reads version " + std::to_string(kSchemaVersion) +
                        " and migrates versions 1 to " + std::to_string(kSchemaVersion - 1) + ")");
  }
}

// WAL lets one tuner read while another writes; this first read also rejects non-SQLite files.
void enable_wal(sqlite3* db, const std::filesystem::path& path) {
  // Switching a new file needs an exclusive lock. When several processes open it at once, SQLite
  // answers BUSY at once to some of them rather than wait (that could deadlock): retry instead.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  auto keep_mode = [](void* mode, int, char** values, char**) {
    *static_cast<std::string*>(mode) = values[0] ? values[0] : "";
    return 0;
  };
  std::string mode;
  int rc;
  while ((rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", keep_mode, &mode, nullptr)) ==
             SQLITE_BUSY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (rc != SQLITE_OK) fail(db, path, "switching to WAL mode");
  if (mode != "wal") {
    throw DatabaseError(path.string() + ": switching to WAL mode: journal mode stays " + mode);
  }
}

using sqlite::Connection;
using sqlite::open_read_only;

// Opens a database to read it, changing nothing (ResultStore::Access::read_only); `version` is
// set to its schema version.
// A FIFO would block SQLite's first read, and a folder or device is no database: refused first.
void check_regular_file(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw DatabaseError(path.string() + ": not a regular file, so no database");
  }
}

sqlite3* open_database_read_only(const std::filesystem::path& path, int& version) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw DatabaseError(path.string() + ": no such database (run 'tiletune tune' first)");
  }
  check_regular_file(path);
  Connection db = open_read_only(path, false);
  try {
    version = schema_version(db.get(), path);  // the first read: it rejects non-SQLite files
  } catch (const DatabaseError&) {
    // A WAL database in a folder this process cannot write: SQLite cannot create the -shm file
    // its readers share. A writer would need a -wal file there, so where there is none nothing
    // writes the file, and it can be read as it stands.
    const int code = sqlite3_errcode(db.get());
    std::filesystem::path wal = path;
    wal += "-wal";
    if ((code != SQLITE_CANTOPEN && code != SQLITE_READONLY) || std::filesystem::exists(wal, error)) throw;
    db = open_read_only(path, true);
    version = schema_version(db.get(), path);
  }
  if (version == 0) {
    Statement objects(db.get(), path, "reading the schema", "SELECT count(*) FROM sqlite_schema");
    objects.step();
    throw DatabaseError(path.string() + (objects.int64(0) == 0
                                             ? ": no tiletune schema yet (run 'tiletune tune' first)"
                                             : ": not a tiletune database (it has tables but no schema version)"));
  }
  // Versions 1 to 6 differ from this one in what only a tune, the runtime library or a profile
  // writes (the statuses a result may have, the fuzz passes, the missed problems, the counters and
  // bench rows, the search traces, the precision of templates, all fp32 before, the transposes of
  // results, all nn before): what a reader asks for reads the same.
  const bool older = std::any_of(kMigrations.begin(), kMigrations.end(),
                                 [&](const Migration& m) { return m.from == version; });
  if (version != kSchemaVersion && !older) {
    throw DatabaseError(path.string() + ": unsupported schema version " + std::to_string(version) +
                        " (this tiletune reads version " + std::to_string(kSchemaVersion) +
                        " and versions 1 to " + std::to_string(kSchemaVersion - 1) + ")");
  }
  return db.release();
}

sqlite3* open_database(const std::filesystem::path& path) {
  check_regular_file(path);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                 nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)> db(raw, &sqlite3_close_v2);
  if (rc != SQLITE_OK) fail(db.get(), path, "opening");
  // SQLite silently falls back to read-only when the file is write-protected.
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    throw DatabaseError(path.string() + ": opening: the file is read-only");
  }
  if (sqlite3_busy_timeout(db.get(), kBusyTimeoutMs) != SQLITE_OK) {
    fail(db.get(), path, "setting the busy timeout");
  }
  enable_wal(db.get(), path);
  exec(db.get(), path, "PRAGMA foreign_keys = ON", "enabling foreign keys");
  create_or_check_schema(db.get(), path);
  return db.release();
}

// The id of a registered template version; `doing` names the operation in the error.
std::int64_t template_id(sqlite3* db, const std::filesystem::path& path, const std::string& doing,
                         const std::string& name, const std::string& hash) {
  Statement find(db, path, doing, "SELECT id FROM templates WHERE name = ?1 AND source_hash = ?2");
  if (!find.bind(name, hash).step()) {
    throw DatabaseError(path.string() + ": " + doing + ": template version " + hash +
                        " is not registered");
  }
  return find.int64(0);
}

// The id of a shape's row, added if new.
std::int64_t shape_id(sqlite3* db, const std::filesystem::path& path, const std::string& doing,
                      const GemmShape& shape) {
  Statement add(db, path, doing, "INSERT INTO shapes (m, n, k) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING");
  add.bind(shape.m, shape.n, shape.k).run();
  Statement find(db, path, doing, "SELECT id FROM shapes WHERE m = ?1 AND n = ?2 AND k = ?3");
  find.bind(shape.m, shape.n, shape.k).step();
  return find.int64(0);
}

// A row of the ranking query's columns, in their order.
ResultRecord read_result(const Statement& row) {
  ResultRecord result;
  result.template_name = row.text(0);
  result.template_hash = row.text(1);
  result.config = row.text(2);
  result.shape = {row.int64(3), row.int64(4), row.int64(5)};
  result.status = parse_result_status(row.text(6));
  result.detail = row.text(7);
  result.median_ms = row.real(8);
  result.min_ms = row.real(9);
  result.max_ms = row.real(10);
  result.runs = row.integer(11);
  result.tflops = row.real(12);
  result.registers = row.integer(13);
  result.static_shared_bytes = row.integer(14);
  result.dynamic_shared_bytes = row.integer(15);
  result.spill_bytes = row.integer(16);
  result.recorded_at = row.text(17);
  return result;
}

}  // namespace

ResultStore::ResultStore(const std::filesystem::path& path, Access access)
    : db_(access == Access::read_only ? open_database_read_only(path, schema_version_)
                                      : open_database(path)),
      path_(path) {
  if (access == Access::read_write) schema_version_ = kSchemaVersion;  // created or migrated
}

ResultStore::~ResultStore() { sqlite3_close_v2(db_); }

// register_gpu and register_template are single statements, atomic by themselves. The IMMEDIATE
// transaction, as in record_result, makes their locking explicit: the write lock is taken (a
// concurrent process's registration waited for in the busy handler) before anything is read, so
// an upsert never acts on a snapshot that another process's commit has made stale.
std::int64_t ResultStore::register_gpu(const GpuRecord& gpu) {
  const std::string doing = "registering GPU " + gpu.name;
  Transaction transaction(db_, path_, doing);
  Statement upsert(db_, path_, doing, R"sql(
      INSERT INTO gpus (name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz,
                        driver_version, nvrtc_version)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
      ON CONFLICT (name, cc_major, cc_minor, sm_count, memory_bytes) DO UPDATE SET
        clock_khz = excluded.clock_khz,
        driver_version = excluded.driver_version,
        nvrtc_version = excluded.nvrtc_version
      RETURNING id)sql");
  upsert.bind(gpu.name, gpu.cc_major, gpu.cc_minor, gpu.sm_count,
              static_cast<std::int64_t>(gpu.memory_bytes), gpu.clock_khz, gpu.driver_version,
              gpu.nvrtc_version);
  upsert.step();
  const std::int64_t id = upsert.int64(0);
  upsert.run();  // RETURNING rows are only final once the statement has run to completion
  transaction.commit();
  return id;
}

void ResultStore::register_template(const TemplateRecord& tmpl) {
  const std::string doing = "registering template " + tmpl.name;
  Transaction transaction(db_, path_, doing);
  // One statement, so that taking the next sequence number and storing it is atomic.
  Statement upsert(db_, path_, doing, R"sql(
      INSERT INTO templates (name, source_hash, path, source, registered_seq, precision)
      VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(registered_seq), 0) + 1 FROM templates), ?5)
      ON CONFLICT (name, source_hash) DO UPDATE SET
        path = excluded.path,
        source = excluded.source,
        registered_seq = excluded.registered_seq,
        precision = excluded.precision)sql");
  upsert.bind(tmpl.name, tmpl.source_hash, tmpl.path, tmpl.source, to_string(tmpl.precision)).run();
  transaction.commit();
}

void ResultStore::record_result(std::int64_t gpu_id, const GpuRecord& gpu,
                                const ResultRecord& result) {
  const std::string doing = "recording a result of " + result.template_name;
  Transaction transaction(db_, path_, doing);

  Statement find_template(db_, path_, doing,
                          "SELECT id FROM templates WHERE name = ?1 AND source_hash = ?2");
  if (!find_template.bind(result.template_name, result.template_hash).step()) {
    throw DatabaseError(path_.string() + ": " + doing + ": template version " +
                        result.template_hash + " is not registered");
  }
  const std::int64_t template_id = find_template.int64(0);

  Statement add_shape(db_, path_, doing,
                      "INSERT INTO shapes (m, n, k) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING");
  add_shape.bind(result.shape.m, result.shape.n, result.shape.k).run();

  Statement upsert(db_, path_, doing, R"sql(
      INSERT INTO results (gpu_id, template_id, config, shape_id, status, detail, median_ms,
                           min_ms, max_ms, runs, tflops, registers, static_shared_bytes,
                           dynamic_shared_bytes, spill_bytes, driver_version, nvrtc_version,
                           recorded_at, op, batch)
      VALUES (?1, ?2, ?3, (SELECT id FROM shapes WHERE m = ?4 AND n = ?5 AND k = ?6), ?7, ?8, ?9,
              ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, datetime('now'), ?20, ?21)
      ON CONFLICT (gpu_id, template_id, config, shape_id, op, batch) DO UPDATE SET
        status = excluded.status,
        detail = excluded.detail,
        median_ms = excluded.median_ms,
        min_ms = excluded.min_ms,
        max_ms = excluded.max_ms,
        runs = excluded.runs,
        tflops = excluded.tflops,
        registers = excluded.registers,
        static_shared_bytes = excluded.static_shared_bytes,
        dynamic_shared_bytes = excluded.dynamic_shared_bytes,
        spill_bytes = excluded.spill_bytes,
        driver_version = excluded.driver_version,
        nvrtc_version = excluded.nvrtc_version,
        recorded_at = excluded.recorded_at)sql");
  upsert
      .bind(gpu_id, template_id, result.config, result.shape.m, result.shape.n, result.shape.k,
            to_string(result.status), result.detail, result.median_ms, result.min_ms,
            result.max_ms, result.runs, result.tflops, result.registers,
            result.static_shared_bytes, result.dynamic_shared_bytes, result.spill_bytes,
            gpu.driver_version, gpu.nvrtc_version, result.op.to_string(), result.batch)
      .run();
  transaction.commit();
}

void ResultStore::record_fuzz_pass(std::int64_t gpu_id, const std::string& template_name,
                                   const std::string& template_hash, const std::string& config,
                                   int cases) {
  const std::string doing = "recording a fuzz pass of " + template_name;
  Transaction transaction(db_, path_, doing);
  Statement upsert(db_, path_, doing, R"sql(
      INSERT INTO fuzz_passes (gpu_id, template_id, config, cases, recorded_at)
      VALUES (?1, (SELECT id FROM templates WHERE name = ?2 AND source_hash = ?3), ?4, ?5,
              datetime('now'))
      ON CONFLICT (gpu_id, template_id, config) DO UPDATE SET
        cases = max(cases, excluded.cases),
        recorded_at = excluded.recorded_at)sql");
  // A template that is not registered leaves template_id NULL, which the NOT NULL refuses.
  upsert.bind(gpu_id, template_name, template_hash, config, cases).run();
  transaction.commit();
}

std::map<std::string, int> ResultStore::fuzz_passes(std::int64_t gpu_id,
                                                    const std::string& template_hash) const {
  if (schema_version_ < 3) {  // read as it is: the table came with version 3
    throw DatabaseError(path_.string() + ": schema version " + std::to_string(schema_version_) +
                        " keeps no fuzz passes: run 'tiletune tune' with this database to migrate it");
  }
  Statement query(db_, path_, "reading the fuzz passes of template version " + template_hash, R"sql(
      SELECT f.config, max(f.cases)
      FROM fuzz_passes f JOIN templates t ON t.id = f.template_id
      WHERE f.gpu_id = ?1 AND t.source_hash = ?2
      GROUP BY f.config)sql");
  query.bind(gpu_id, template_hash);
  std::map<std::string, int> passes;
  while (query.step()) passes.emplace(query.text(0), int(query.int64(1)));
  return passes;
}

bool ResultStore::has_result(std::int64_t gpu_id, const std::string& template_hash,
                             const std::string& config, const GemmShape& shape, TunedFor kind) const {
  const std::string sql = R"sql(
      SELECT 1 FROM results r
      JOIN templates t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      WHERE r.gpu_id = ?1 AND t.source_hash = ?2 AND r.config = ?3
        AND s.m = ?4 AND s.n = ?5 AND s.k = ?6 AND )sql" + tuned_for_condition("r", 7) + R"sql(
      LIMIT 1)sql";
  Statement query(db_, path_, "looking up a result", sql.c_str());
  return query.bind(gpu_id, template_hash, config, shape.m, shape.n, shape.k, kind.op.to_string(), kind.batch)
      .step();
}

std::map<std::string, ResultRecord> ResultStore::recorded_results(
    std::int64_t gpu_id, const std::string& template_hash, const GemmShape& shape, TunedFor kind) const {
  // Matched like has_result: by GPU row, template source hash, shape, transposes and batch.
  // Should two template names share a source, the later row of a configuration wins (by id).
  const std::string sql = R"sql(
      SELECT t.name, t.source_hash, r.config, s.m, s.n, s.k, r.status, r.detail, r.median_ms,
             r.min_ms, r.max_ms, r.runs, r.tflops, r.registers, r.static_shared_bytes,
             r.dynamic_shared_bytes, r.spill_bytes, r.recorded_at
      FROM results r
      JOIN templates t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      WHERE r.gpu_id = ?1 AND t.source_hash = ?2 AND s.m = ?3 AND s.n = ?4 AND s.k = ?5
        AND )sql" + tuned_for_condition("r", 6) + R"sql(
      ORDER BY r.id)sql";
  Statement query(db_, path_, "reading the recorded results of template version " + template_hash,
                  sql.c_str());
  query.bind(gpu_id, template_hash, shape.m, shape.n, shape.k, kind.op.to_string(), kind.batch);
  std::map<std::string, ResultRecord> results;
  while (query.step()) {
    ResultRecord result = read_result(query);
    result.op = kind.op;
    result.batch = kind.batch;
    std::string config = result.config;
    results.insert_or_assign(std::move(config), std::move(result));
  }
  return results;
}

std::optional<ResultRecord> ResultStore::best(const std::string& gpu_name, const GemmShape& shape,
                                              const std::optional<std::string>& template_name,
                                              Precision precision, TunedFor kind) const {
  auto ranked = ranked_results(gpu_name, shape, template_name, precision, kind);
  if (ranked.empty()) return std::nullopt;
  return std::move(ranked.front());
}

std::vector<ResultRecord> ResultStore::ranking(const std::string& gpu_name, const GemmShape& shape,
                                               const std::optional<std::string>& template_name,
                                               TunedFor kind) const {
  return ranked_results(gpu_name, shape, template_name, std::nullopt, kind);
}

std::vector<ResultRecord> ResultStore::ranked_results(
    const std::string& gpu_name, const GemmShape& shape,
    const std::optional<std::string>& template_name, std::optional<Precision> precision,
    TunedFor kind) const {
  // A read-only file older than version 6 has no precision column: its templates are all fp32.
  const std::string sql = std::string(R"sql(
      SELECT t.name, t.source_hash, r.config, s.m, s.n, s.k, r.status, r.detail, r.median_ms,
             r.min_ms, r.max_ms, r.runs, r.tflops, r.registers, r.static_shared_bytes,
             r.dynamic_shared_bytes, r.spill_bytes, r.recorded_at
      FROM results r
      JOIN gpus g ON g.id = r.gpu_id
      JOIN template_versions t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      WHERE g.name = ?1 AND s.m = ?2 AND s.n = ?3 AND s.k = ?4
        AND r.status = 'ok' AND t.is_current AND (?5 IS NULL OR t.name = ?5)
        AND (?6 IS NULL OR )sql") + (schema_version_ < 6 ? "'fp32'" : "t.precision") + R"sql( = ?6)
        AND )sql" + tuned_for_condition("r", 7) + R"sql(
      -- Equal medians (the timer's resolution makes them common on small shapes) are ordered as
      -- the runtime library's selection orders them (tuner/runtime/record_set.h), so that best,
      -- query, bench and the library name the same winner.
      ORDER BY r.median_ms, t.name, r.config)sql";
  Statement query(db_, path_, "ranking results for " + gpu_name, sql.c_str());
  const std::optional<std::string> precision_name =
      precision ? std::optional<std::string>(to_string(*precision)) : std::nullopt;
  query.bind(gpu_name, shape.m, shape.n, shape.k, template_name, precision_name, kind.op.to_string(),
             kind.batch);
  std::vector<ResultRecord> results;
  while (query.step()) {
    results.push_back(read_result(query));
    results.back().op = kind.op;
    results.back().batch = kind.batch;
  }
  return results;
}

std::vector<CurrentResult> ResultStore::current_results() const {
  // Versions 1 and 2 have no fuzz_passes table (read as they are): their configurations count 0.
  const char* fuzz_cases = schema_version_ >= 3
                               ? "(SELECT max(f.cases) FROM fuzz_passes f WHERE f.gpu_id = r.gpu_id "
                                 "AND f.template_id = r.template_id AND f.config = r.config)"
                               : "NULL";
  const std::string sql = std::string(R"sql(
      SELECT t.name, t.source_hash, r.config, s.m, s.n, s.k, r.status, r.detail, r.median_ms,
             r.min_ms, r.max_ms, r.runs, r.tflops, r.registers, r.static_shared_bytes,
             r.dynamic_shared_bytes, r.spill_bytes, r.recorded_at,
             g.name, g.cc_major, g.cc_minor, g.sm_count, g.clock_khz, g.memory_bytes,
             g.driver_version, g.nvrtc_version, )sql") + fuzz_cases + ", " +
                          (schema_version_ < 6 ? "'fp32'" : "t.precision") + ", " + op_column("r") + ", " +
                          batch_column("r") + R"sql(
      FROM results r
      JOIN gpus g ON g.id = r.gpu_id
      JOIN template_versions t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      WHERE r.status = 'ok' AND t.is_current
      ORDER BY r.id)sql";
  Statement query(db_, path_, "reading the results of the current template versions", sql.c_str());
  std::vector<CurrentResult> results;
  while (query.step()) {
    CurrentResult row;
    row.result = read_result(query);
    row.gpu.name = query.text(18);
    row.gpu.cc_major = query.integer(19);
    row.gpu.cc_minor = query.integer(20);
    row.gpu.sm_count = query.integer(21);
    row.gpu.clock_khz = query.integer(22);
    row.gpu.memory_bytes = static_cast<std::uint64_t>(query.int64(23));
    row.gpu.driver_version = query.integer(24);
    row.gpu.nvrtc_version = query.text(25);
    row.fuzz_cases = query.is_null(26) ? 0 : query.integer(26);
    row.precision = parse_precision(query.text(27)).value_or(Precision::fp32);
    row.result.op = Transposes::parse(query.text(28)).value_or(Transposes{});
    row.result.batch = query.int64(29);
    results.push_back(std::move(row));
  }
  return results;
}

std::vector<GemmShape> ResultStore::shapes_with_results(
    const std::string& gpu_name, const std::optional<std::string>& template_name, TunedFor kind) const {
  const std::string sql = R"sql(
      SELECT DISTINCT s.m, s.n, s.k
      FROM results r
      JOIN gpus g ON g.id = r.gpu_id
      JOIN template_versions t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      WHERE g.name = ?1 AND r.status = 'ok' AND t.is_current AND (?2 IS NULL OR t.name = ?2)
        AND )sql" + tuned_for_condition("r", 3) + R"sql(
      ORDER BY s.m, s.n, s.k)sql";
  Statement query(db_, path_, "listing the shapes with results for " + gpu_name, sql.c_str());
  query.bind(gpu_name, template_name, kind.op.to_string(), kind.batch);
  std::vector<GemmShape> shapes;
  while (query.step()) shapes.push_back({query.int64(0), query.int64(1), query.int64(2)});
  return shapes;
}

std::vector<TemplateRecord> ResultStore::templates(bool current_only) const {
  // A read-only file older than version 6 has no precision column: its templates are all fp32.
  const std::string sql = std::string("SELECT name, source_hash, path, source, ") +
                          (schema_version_ < 6 ? "'fp32'" : "precision") + R"sql( FROM template_versions
                            WHERE is_current OR NOT ?1
                            ORDER BY name, registered_seq DESC)sql";
  Statement query(db_, path_, "listing the templates", sql.c_str());
  query.bind(current_only ? 1 : 0);
  std::vector<TemplateRecord> records;
  while (query.step()) {
    records.push_back({query.text(0), query.text(1), query.text(2), query.text(3),
                       parse_precision(query.text(4)).value_or(Precision::fp32)});
    // Names become file names and C++ text (export): tiletune records identifiers only.
    if (!is_identifier(records.back().name)) {
      throw DatabaseError(fmt::format("{}: template name {:?} is not an identifier: the database was "
                                      "edited by something other than tiletune",
                                      path_.string(), records.back().name));
    }
  }
  return records;
}

std::vector<GpuRecord> ResultStore::gpus() const {
  Statement query(db_, path_, "listing the GPUs", R"sql(
      SELECT name, cc_major, cc_minor, sm_count, clock_khz, memory_bytes, driver_version,
             nvrtc_version
      FROM gpus ORDER BY id)sql");
  std::vector<GpuRecord> records;
  while (query.step()) {
    GpuRecord gpu;
    gpu.name = query.text(0);
    gpu.cc_major = query.integer(1);
    gpu.cc_minor = query.integer(2);
    gpu.sm_count = query.integer(3);
    gpu.clock_khz = query.integer(4);
    gpu.memory_bytes = static_cast<std::uint64_t>(query.int64(5));
    gpu.driver_version = query.integer(6);
    gpu.nvrtc_version = query.text(7);
    records.push_back(std::move(gpu));
  }
  return records;
}

std::vector<ResultSummary> ResultStore::summary() const {
  // GPU rows that share a name (one model, several memory sizes or hosts) count as one GPU, as
  // they do in best().
  const std::string sql = R"sql(
      SELECT g.name, t.name, t.source_hash, t.is_current, s.m, s.n, s.k, count(*),
             sum(r.status = 'ok'), max(CASE WHEN r.status = 'ok' THEN r.tflops END), )sql" +
                          op_column("r") + " AS op, " + batch_column("r") + R"sql( AS batch
      FROM results r
      JOIN gpus g ON g.id = r.gpu_id
      JOIN template_versions t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      GROUP BY g.name, t.id, s.id, op, batch
      ORDER BY g.name, t.name, t.registered_seq DESC, s.m, s.n, s.k, op, batch)sql";
  Statement query(db_, path_, "summarizing the results", sql.c_str());
  std::vector<ResultSummary> rows;
  while (query.step()) {
    ResultSummary row;
    row.gpu_name = query.text(0);
    row.template_name = query.text(1);
    row.template_hash = query.text(2);
    row.template_current = query.integer(3) != 0;
    row.shape = {query.int64(4), query.int64(5), query.int64(6)};
    row.results = query.integer(7);
    row.ok = query.integer(8);
    if (!query.is_null(9)) row.best_tflops = query.real(9);
    row.op = Transposes::parse(query.text(10)).value_or(Transposes{});
    row.batch = query.int64(11);
    rows.push_back(std::move(row));
  }
  return rows;
}

void ResultStore::record_miss(const std::string& gpu_name, const std::string& template_name,
                              const GemmProblem& problem) {
  const std::string doing = "recording a missed problem";
  Transaction transaction(db_, path_, doing);
  // One upsert: two processes that miss the same problem at once both count, one after the other.
  Statement upsert(db_, path_, doing, R"sql(
      INSERT INTO missed_problems (gpu_name, template_name, m, n, k, lda, ldb, ldc, count,
                                   first_seen, last_seen)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, datetime('now'), datetime('now'))
      ON CONFLICT (gpu_name, template_name, m, n, k, lda, ldb, ldc) DO UPDATE SET
        count = count + 1,
        last_seen = excluded.last_seen)sql");
  upsert
      .bind(gpu_name, template_name, problem.shape.m, problem.shape.n, problem.shape.k, problem.lda,
            problem.ldb, problem.ldc)
      .run();
  transaction.commit();
}

std::vector<MissedProblem> ResultStore::missed_problems(
    const std::optional<std::string>& gpu_name, const std::optional<std::string>& template_name) const {
  if (schema_version_ < 4) return {};  // read as it is: the table came with version 4
  Statement query(db_, path_, "listing the missed problems", R"sql(
      SELECT gpu_name, template_name, m, n, k, lda, ldb, ldc, count, first_seen, last_seen
      FROM missed_problems
      WHERE (?1 IS NULL OR gpu_name = ?1) AND (?2 IS NULL OR template_name = ?2)
      ORDER BY gpu_name, template_name, m, n, k, lda, ldb, ldc)sql");
  query.bind(gpu_name, template_name);
  std::vector<MissedProblem> missed;
  while (query.step()) {
    MissedProblem row;
    row.gpu_name = query.text(0);
    row.template_name = query.text(1);
    row.problem = {{query.int64(2), query.int64(3), query.int64(4)},
                   query.int64(5), query.int64(6), query.int64(7)};
    row.count = query.integer(8);
    row.first_seen = query.text(9);
    row.last_seen = query.text(10);
    missed.push_back(std::move(row));
  }
  return missed;
}

int ResultStore::forget_misses(const std::string& gpu_name, const std::string& template_name,
                               const GemmShape& shape) {
  const std::string doing = "forgetting the missed problems " + shape.to_string() + " of " +
                            template_name + " on " + gpu_name;
  Transaction transaction(db_, path_, doing);
  Statement remove(db_, path_, doing, R"sql(
      DELETE FROM missed_problems
      WHERE gpu_name = ?1 AND template_name = ?2 AND m = ?3 AND n = ?4 AND k = ?5)sql");
  remove.bind(gpu_name, template_name, shape.m, shape.n, shape.k).run();
  const int removed = sqlite3_changes(db_);
  transaction.commit();
  return removed;
}

void ResultStore::record_counters(std::int64_t gpu_id, const CounterRecord& counters) {
  const std::string doing = "recording the counters of " + counters.template_name + " " +
                            counters.config + " at " + counters.shape.to_string();
  Transaction transaction(db_, path_, doing);
  const std::int64_t tmpl =
      template_id(db_, path_, doing, counters.template_name, counters.template_hash);
  const std::int64_t shape = shape_id(db_, path_, doing, counters.shape);
  // Replaced as a whole: a metric this ncu no longer reads must not survive from an older profile.
  Statement remove(db_, path_, doing, R"sql(
      DELETE FROM counters WHERE gpu_id = ?1 AND template_id = ?2 AND config = ?3 AND shape_id = ?4)sql");
  remove.bind(gpu_id, tmpl, counters.config, shape).run();
  for (const auto& [metric, value] : counters.values) {
    Statement insert(db_, path_, doing, R"sql(
        INSERT INTO counters (gpu_id, template_id, config, shape_id, metric, value, ncu_version,
                              recorded_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, datetime('now')))sql");
    insert.bind(gpu_id, tmpl, counters.config, shape, metric, value, counters.ncu_version).run();
  }
  transaction.commit();
}

std::vector<CounterRecord> ResultStore::counters(const std::optional<std::string>& gpu_name,
                                                 const std::optional<std::string>& template_name) const {
  if (schema_version_ < 5) return {};  // read as it is: the table came with version 5
  Statement query(db_, path_, "reading the counters", R"sql(
      SELECT g.name, t.name, t.source_hash, c.config, s.m, s.n, s.k, c.metric, c.value,
             c.ncu_version, c.recorded_at, g.id
      FROM counters c
      JOIN gpus g ON g.id = c.gpu_id
      JOIN template_versions t ON t.id = c.template_id
      JOIN shapes s ON s.id = c.shape_id
      WHERE t.is_current AND (?1 IS NULL OR g.name = ?1) AND (?2 IS NULL OR t.name = ?2)
      ORDER BY g.name, g.id, t.name, s.m, s.n, s.k, c.config, c.metric)sql");
  query.bind(gpu_name, template_name);
  std::vector<CounterRecord> records;
  std::int64_t last_gpu_id = -1;  // GPU rows of one name (several hosts) stay apart
  while (query.step()) {
    CounterRecord key;
    key.gpu_name = query.text(0);
    key.template_name = query.text(1);
    key.template_hash = query.text(2);
    key.config = query.text(3);
    key.shape = {query.int64(4), query.int64(5), query.int64(6)};
    const bool same_key = !records.empty() && last_gpu_id == query.int64(11) &&
                          records.back().template_hash == key.template_hash &&
                          records.back().config == key.config && records.back().shape == key.shape;
    if (!same_key) {
      key.ncu_version = query.text(9);
      key.recorded_at = query.text(10);
      records.push_back(std::move(key));
      last_gpu_id = query.int64(11);
    }
    records.back().values[query.text(7)] = query.real(8);
  }
  return records;
}

void ResultStore::record_bench(std::int64_t gpu_id, const BenchRecord& row) {
  const std::string doing = "recording a bench row of " + row.template_name + " " + row.config +
                            " at " + row.shape.to_string();
  Transaction transaction(db_, path_, doing);
  const std::int64_t tmpl = template_id(db_, path_, doing, row.template_name, row.template_hash);
  const std::int64_t shape = shape_id(db_, path_, doing, row.shape);
  Statement upsert(db_, path_, doing, R"sql(
      INSERT INTO bench_results (gpu_id, template_id, config, shape_id, ours_ms, cublas_ms,
                                 recorded_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, datetime('now'))
      ON CONFLICT (gpu_id, template_id, config, shape_id) DO UPDATE SET
        ours_ms = excluded.ours_ms,
        cublas_ms = excluded.cublas_ms,
        recorded_at = excluded.recorded_at)sql");
  upsert.bind(gpu_id, tmpl, row.config, shape, row.ours_ms, row.cublas_ms).run();
  transaction.commit();
}

std::vector<BenchRecord> ResultStore::bench_results(const std::optional<std::string>& gpu_name) const {
  if (schema_version_ < 5) return {};  // read as it is: the table came with version 5
  // A read-only file of version 5 has no precision column: its templates are all fp32.
  const std::string sql = std::string(R"sql(
      SELECT g.name, t.name, t.source_hash, b.config, s.m, s.n, s.k, b.ours_ms, b.cublas_ms,
             b.recorded_at, )sql") + (schema_version_ < 6 ? "'fp32'" : "t.precision") + R"sql(
      FROM bench_results b
      JOIN gpus g ON g.id = b.gpu_id
      JOIN template_versions t ON t.id = b.template_id
      JOIN shapes s ON s.id = b.shape_id
      WHERE t.is_current AND (?1 IS NULL OR g.name = ?1)
      ORDER BY g.name, g.id, t.name, s.m, s.n, s.k, b.config)sql";
  Statement query(db_, path_, "reading the bench rows", sql.c_str());
  query.bind(gpu_name);
  std::vector<BenchRecord> rows;
  while (query.step()) {
    BenchRecord row;
    row.gpu_name = query.text(0);
    row.template_name = query.text(1);
    row.template_hash = query.text(2);
    row.config = query.text(3);
    row.shape = {query.int64(4), query.int64(5), query.int64(6)};
    row.ours_ms = query.real(7);
    row.cublas_ms = query.real(8);
    row.recorded_at = query.text(9);
    row.precision = parse_precision(query.text(10)).value_or(Precision::fp32);
    rows.push_back(std::move(row));
  }
  return rows;
}

void ResultStore::record_trace(std::int64_t gpu_id, const TraceRecord& step) {
  const std::string doing = "recording step " + std::to_string(step.seq) + " of the search of " +
                            step.template_name + " at " + step.shape.to_string();
  Transaction transaction(db_, path_, doing);
  const std::int64_t tmpl = template_id(db_, path_, doing, step.template_name, step.template_hash);
  const std::int64_t shape = shape_id(db_, path_, doing, step.shape);
  Statement insert(db_, path_, doing, R"sql(
      INSERT INTO search_trace (run_id, gpu_id, template_id, shape_id, seq, strategy, config,
                                status, median_ms, recorded_earlier, recorded_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, datetime('now')))sql");
  insert.bind(step.run_id, gpu_id, tmpl, shape, step.seq, step.strategy, step.config,
              to_string(step.status), step.median_ms, step.recorded_earlier ? 1 : 0)
      .run();
  transaction.commit();
}

std::vector<TraceRecord> ResultStore::search_traces() const {
  if (schema_version_ < 6) return {};  // read as it is: the table came with version 6
  Statement query(db_, path_, "reading the search traces", R"sql(
      SELECT r.run_id, g.name, t.name, t.source_hash, s.m, s.n, s.k, r.seq, r.strategy, r.config,
             r.status, r.median_ms, r.recorded_earlier, r.recorded_at
      FROM search_trace r
      JOIN gpus g ON g.id = r.gpu_id
      JOIN template_versions t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id
      WHERE t.is_current
      ORDER BY g.name, g.id, t.name, s.m, s.n, s.k, r.run_id, r.seq)sql");
  std::vector<TraceRecord> steps;
  while (query.step()) {
    TraceRecord step;
    step.run_id = query.text(0);
    step.gpu_name = query.text(1);
    step.template_name = query.text(2);
    step.template_hash = query.text(3);
    step.shape = {query.int64(4), query.int64(5), query.int64(6)};
    step.seq = query.integer(7);
    step.strategy = query.text(8);
    step.config = query.text(9);
    step.status = parse_result_status(query.text(10));
    step.median_ms = query.real(11);
    step.recorded_earlier = query.integer(12) != 0;
    step.recorded_at = query.text(13);
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace tiletune
