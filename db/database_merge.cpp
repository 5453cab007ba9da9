#include "db/database_merge.h"

#include <sqlite3.h>

#include <memory>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "db/result_store.h"
#include "db/sqlite.h"
#include "tuner/core/kernel_template.h"  // is_identifier

namespace tiletune {
namespace {

namespace fs = std::filesystem;

// The schema versions an input may have (db/schema.sql and its migrations).
constexpr int kOldestVersion = 1, kNewestVersion = 8;

using sqlite::Connection;
using sqlite::exec;
using sqlite::fail;
using sqlite::kBusyTimeoutMs;
using sqlite::open_read_only;
using sqlite::Statement;

std::int64_t single_number(sqlite3* db, const fs::path& path, const std::string& sql, std::string_view doing) {
  Statement query(db, path, std::string(doing), sql);
  query.step();
  return query.int64(0);
}

// An input opened to be read as it is: `version` is set to its schema version, refused unless it
// is one this tiletune reads. A WAL database in a folder this process cannot write (no -shm file
// can be made there) is read as an immutable file where no -wal file says that a writer is at work.
Connection open_input(const fs::path& path, int& version) {
  std::error_code error;
  if (!fs::exists(path, error)) throw DatabaseError(path.string() + ": no such database");
  Connection db = open_read_only(path, false);
  try {
    version = int(single_number(db.get(), path, "PRAGMA user_version", "reading the schema version"));
  } catch (const DatabaseError&) {
    const int code = sqlite3_errcode(db.get());
    fs::path wal = path;
    wal += "-wal";
    if ((code != SQLITE_CANTOPEN && code != SQLITE_READONLY) || fs::exists(wal, error)) throw;
    db = open_read_only(path, true);
    version = int(single_number(db.get(), path, "PRAGMA user_version", "reading the schema version"));
  }
  if (version == 0) {
    throw DatabaseError(path.string() + ": not a tiletune database (no schema version): nothing merged");
  }
  if (version < kOldestVersion || version > kNewestVersion) {
    throw DatabaseError(fmt::format("{}: schema version {} is not one this tiletune reads ({} to {}): "
                                    "nothing merged", path.string(), version, kOldestVersion,
                                    kNewestVersion));
  }
  return db;
}

// Refuses an input whose template names are not identifiers: they become file names and C++ text
// wherever the merged database is exported, and tiletune records none such.
void check_template_names(sqlite3* db, const fs::path& path) {
  Statement names(db, path, "reading the template names", "SELECT name FROM templates");
  while (names.step()) {
    if (!is_identifier(names.text(0))) {
      throw DatabaseError(fmt::format("{}: template name {:?} is not an identifier: nothing merged",
                                      path.string(), names.text(0)));
    }
  }
}

// The ids of the rows another table names, found in OUT by what identifies them, from parameters
// numbered from `first` (the columns kGpuKey, kTemplateKey and kShapeKey read from an input). A
// key OUT does not hold gives NULL, which the NOT NULL columns refuse.
std::string gpu_id_of(int first) {
  return fmt::format("(SELECT id FROM gpus WHERE name = ?{} AND cc_major = ?{} AND cc_minor = ?{} "
                     "AND sm_count = ?{} AND memory_bytes = ?{})",
                     first, first + 1, first + 2, first + 3, first + 4);
}
std::string template_id_of(int first) {
  return fmt::format("(SELECT id FROM templates WHERE name = ?{} AND source_hash = ?{})", first, first + 1);
}
std::string shape_id_of(int first) {
  return fmt::format("(SELECT id FROM shapes WHERE m = ?{} AND n = ?{} AND k = ?{})", first, first + 1,
                     first + 2);
}
// What identifies the GPU, template version and shape of a row `x` of an input (5, 2 and 3
// columns); left joins, so that a row naming one its file lacks reads NULL instead of vanishing.
constexpr const char* kGpuKey = "g.name, g.cc_major, g.cc_minor, g.sm_count, g.memory_bytes";
constexpr const char* kTemplateKey = "t.name, t.source_hash";
constexpr const char* kShapeKey = "s.m, s.n, s.k";
std::string keyed(const char* table, bool shape = true) {
  return fmt::format("FROM {} x LEFT JOIN gpus g ON g.id = x.gpu_id LEFT JOIN templates t ON t.id = "
                     "x.template_id{}", table, shape ? " LEFT JOIN shapes s ON s.id = x.shape_id" : "");
}

// The times at which a database recorded something of each GPU or template version (`owner`:
// gpu_id or template_id): its results, fuzz passes and search steps, and with `profiles` its
// counters and bench rows, as far as its schema version has them.
std::string activity(int version, const char* owner, bool profiles) {
  std::string sql = fmt::format("SELECT {} AS owner, recorded_at AS at FROM results", owner);
  const auto add = [&](const char* table, int since) {
    if (version >= since) sql += fmt::format(" UNION ALL SELECT {}, recorded_at FROM {}", owner, table);
  };
  add("fuzz_passes", 3);
  add("search_trace", 6);
  if (profiles) {
    add("counters", 5);
    add("bench_results", 5);
  }
  return sql;
}

// A database's template versions with the time each was last tuned (database_merge.h): the
// latest of its own rows, or of those of the versions registered before it, if later (each
// registration came after theirs: so a file's own order is kept); with `origin` (0: OUT, then
// 1 + the input's position) and the version's registered_seq there.
std::string version_times(int version, int origin) {
  return fmt::format(R"sql(
      WITH activity AS ({}),
      last AS (SELECT owner, max(at) AS at FROM activity GROUP BY owner),
      timed AS (
        SELECT t.name, t.source_hash, t.registered_seq, l.at AS own,
               max(l.at) OVER (ORDER BY t.registered_seq
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM templates t LEFT JOIN last l ON l.owner = t.id)
      SELECT name, source_hash, max(coalesce(own, ''), coalesce(before, '')), {}, registered_seq
      FROM timed ORDER BY registered_seq)sql",
                     activity(version, "template_id", false), origin);
}

// Merges one input into OUT, inside OUT's open transaction.
class InputMerge {
 public:
  InputMerge(sqlite3* out, const fs::path& out_path, sqlite3* in, MergedInput& input, int origin)
      : out_(out), out_path_(out_path), in_(in), input_(input), origin_(origin) {}

  void run() {
    gpus();
    templates();
    copy("shapes", "SELECT m, n, k FROM shapes ORDER BY id",
         "INSERT INTO shapes (m, n, k) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING");
    results();
    if (version() >= 3) fuzz_passes();
    if (version() >= 4) missed_problems();
    if (version() >= 5) {
      counters();
      bench_results();
    }
    if (version() >= 6) search_trace();
  }

 private:
  int version() const { return input_.schema_version; }
  std::string doing(const char* table) const {
    return fmt::format("merging the {} of {}", table, input_.path.string());
  }
  std::int64_t rows_in_out(const char* table) const {
    return single_number(out_, out_path_, fmt::format("SELECT count(*) FROM {}", table), doing(table));
  }

  // Runs `write` on OUT for every row `read` gives from the input, and counts what it did.
  void copy(const char* table, const std::string& read, const std::string& write) {
    Statement rows(in_, input_.path, doing(table), read);
    Statement upsert(out_, out_path_, doing(table), write);
    const std::int64_t before = rows_in_out(table);
    const int changed = upsert.run_for_each(rows);
    const int added = int(rows_in_out(table) - before);
    input_.added[table] += added;
    input_.replaced[table] += changed - added;
  }

  void gpus() {
    const std::string read = fmt::format(R"sql(
        SELECT g.name, g.cc_major, g.cc_minor, g.sm_count, g.memory_bytes, g.clock_khz,
               g.driver_version, g.nvrtc_version,
               coalesce((SELECT max(a.at) FROM ({}) a WHERE a.owner = g.id), '')
        FROM gpus g ORDER BY g.id)sql", activity(version(), "gpu_id", true));
    const std::string write = fmt::format(R"sql(
        INSERT INTO gpus (name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz,
                          driver_version, nvrtc_version)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        ON CONFLICT (name, cc_major, cc_minor, sm_count, memory_bytes) DO UPDATE SET
          clock_khz = excluded.clock_khz,
          driver_version = excluded.driver_version,
          nvrtc_version = excluded.nvrtc_version
        WHERE ?9 > coalesce((SELECT max(a.at) FROM ({}) a WHERE a.owner = gpus.id), '')
          AND (clock_khz, driver_version, nvrtc_version)
              IS NOT (excluded.clock_khz, excluded.driver_version, excluded.nvrtc_version))sql",
        activity(kNewestVersion, "gpu_id", true));
    copy("gpus", read, write);
  }

  // New versions are added (their registered_seq is set when every input is in); the time each
  // was last tuned, and where it first came from, go to temp.merge_versions.
  void templates() {
    const std::string precision = version() >= 6 ? "precision" : "'fp32'";
    copy("templates",
         fmt::format("SELECT name, source_hash, path, source, {}, registered_seq FROM templates "
                     "ORDER BY registered_seq", precision),
         "INSERT INTO templates (name, source_hash, path, source, precision, registered_seq) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING");
    Statement times(in_, input_.path, doing("templates"),
                    version_times(version(), origin_));
    Statement note(out_, out_path_, doing("templates"), kNoteVersionTime);
    note.run_for_each(times);
  }

  void results() {
    const std::string read = fmt::format(R"sql(
        SELECT {}, {}, x.config, {}, x.status, x.detail, x.median_ms, x.min_ms, x.max_ms, x.runs,
               x.tflops, x.registers, x.static_shared_bytes, x.dynamic_shared_bytes,
               x.spill_bytes, x.driver_version, x.nvrtc_version, x.recorded_at, {}, {}
        {} ORDER BY x.id)sql", kGpuKey, kTemplateKey, kShapeKey,
        version() >= 7 ? "x.op" : "'nn'",  // every result before version 7 is C = A * B
        version() >= 8 ? "x.batch" : "1",  // and of one product before version 8
        keyed("results"));
    // The later evaluation replaces the row, as recording it again would; in the same second an
    // ok result beats a failure, then more timed runs win; a full tie keeps what is there.
    const std::string write = fmt::format(R"sql(
        INSERT INTO results (gpu_id, template_id, config, shape_id, status, detail, median_ms,
                             min_ms, max_ms, runs, tflops, registers, static_shared_bytes,
                             dynamic_shared_bytes, spill_bytes, driver_version, nvrtc_version,
                             recorded_at, op, batch)
        VALUES ({}, {}, ?8, {}, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25,
                ?26, ?27)
        ON CONFLICT (gpu_id, template_id, config, shape_id, op, batch) DO UPDATE SET
          status = excluded.status, detail = excluded.detail, median_ms = excluded.median_ms,
          min_ms = excluded.min_ms, max_ms = excluded.max_ms, runs = excluded.runs,
          tflops = excluded.tflops, registers = excluded.registers,
          static_shared_bytes = excluded.static_shared_bytes,
          dynamic_shared_bytes = excluded.dynamic_shared_bytes,
          spill_bytes = excluded.spill_bytes, driver_version = excluded.driver_version,
          nvrtc_version = excluded.nvrtc_version, recorded_at = excluded.recorded_at
        WHERE (excluded.recorded_at, excluded.status = 'ok', excluded.runs)
              > (results.recorded_at, results.status = 'ok', results.runs))sql",
        gpu_id_of(1), template_id_of(6), shape_id_of(9));
    copy("results", read, write);
  }

  void fuzz_passes() {
    copy("fuzz_passes",
         fmt::format("SELECT {}, {}, x.config, x.cases, x.recorded_at {} ORDER BY x.rowid", kGpuKey,
                     kTemplateKey, keyed("fuzz_passes", false)),
         fmt::format(R"sql(
             INSERT INTO fuzz_passes (gpu_id, template_id, config, cases, recorded_at)
             VALUES ({}, {}, ?8, ?9, ?10)
             ON CONFLICT (gpu_id, template_id, config) DO UPDATE SET
               cases = max(cases, excluded.cases),
               recorded_at = max(recorded_at, excluded.recorded_at)
             WHERE excluded.cases > cases OR excluded.recorded_at > recorded_at)sql",
                     gpu_id_of(1), template_id_of(6)));
  }

  void missed_problems() {
    copy("missed_problems",
         "SELECT gpu_name, template_name, m, n, k, lda, ldb, ldc, count, first_seen, last_seen "
         "FROM missed_problems ORDER BY rowid",
         R"sql(
             INSERT INTO missed_problems (gpu_name, template_name, m, n, k, lda, ldb, ldc, count,
                                          first_seen, last_seen)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT (gpu_name, template_name, m, n, k, lda, ldb, ldc) DO UPDATE SET
               count = max(count, excluded.count),
               first_seen = min(first_seen, excluded.first_seen),
               last_seen = max(last_seen, excluded.last_seen)
             WHERE excluded.count > count OR excluded.first_seen < first_seen
                OR excluded.last_seen > last_seen)sql");
  }

  // A profile's metrics go together: the input's are staged in temp.merge_counters, and each of
  // its profiles later than OUT's of the same four keys replaces all of OUT's metrics of them.
  void counters() {
    exec(out_, out_path_, "DELETE FROM temp.merge_counters", doing("counters"));
    Statement rows(in_, input_.path, doing("counters"),
                   fmt::format("SELECT {}, {}, x.config, {}, x.metric, x.value, x.ncu_version, "
                               "x.recorded_at {} ORDER BY x.rowid",
                               kGpuKey, kTemplateKey, kShapeKey, keyed("counters")));
    Statement stage(out_, out_path_, doing("counters"),
                    fmt::format("INSERT INTO temp.merge_counters VALUES ({}, {}, ?8, {}, ?12, ?13, ?14, ?15)",
                                gpu_id_of(1), template_id_of(6), shape_id_of(9)));
    stage.run_for_each(rows);
    exec(out_, out_path_, R"sql(
        DELETE FROM temp.merge_newer;
        INSERT INTO temp.merge_newer
        SELECT i.gpu_id, i.template_id, i.config, i.shape_id,
               EXISTS (SELECT 1 FROM counters c WHERE c.gpu_id = i.gpu_id
                       AND c.template_id = i.template_id AND c.config = i.config
                       AND c.shape_id = i.shape_id)
        FROM temp.merge_counters i
        GROUP BY i.gpu_id, i.template_id, i.config, i.shape_id
        HAVING max(i.recorded_at) > coalesce(
          (SELECT max(c.recorded_at) FROM counters c WHERE c.gpu_id = i.gpu_id
           AND c.template_id = i.template_id AND c.config = i.config AND c.shape_id = i.shape_id), '');
        DELETE FROM counters WHERE (gpu_id, template_id, config, shape_id) IN
          (SELECT gpu_id, template_id, config, shape_id FROM temp.merge_newer);)sql",
         doing("counters"));
    const std::string newer =
        "FROM temp.merge_counters i JOIN temp.merge_newer n ON (n.gpu_id, n.template_id, n.config, "
        "n.shape_id) = (i.gpu_id, i.template_id, i.config, i.shape_id)";
    input_.added["counters"] += int(single_number(
        out_, out_path_, fmt::format("SELECT count(*) {} WHERE NOT n.existed", newer), doing("counters")));
    input_.replaced["counters"] += int(single_number(
        out_, out_path_, fmt::format("SELECT count(*) {} WHERE n.existed", newer), doing("counters")));
    exec(out_, out_path_, fmt::format("INSERT INTO counters SELECT i.* {}", newer), doing("counters"));
  }

  void bench_results() {
    copy("bench_results",
         fmt::format("SELECT {}, {}, x.config, {}, x.ours_ms, x.cublas_ms, x.recorded_at {} "
                     "ORDER BY x.rowid", kGpuKey, kTemplateKey, kShapeKey, keyed("bench_results")),
         fmt::format(R"sql(
             INSERT INTO bench_results (gpu_id, template_id, config, shape_id, ours_ms, cublas_ms,
                                        recorded_at)
             VALUES ({}, {}, ?8, {}, ?12, ?13, ?14)
             ON CONFLICT (gpu_id, template_id, config, shape_id) DO UPDATE SET
               ours_ms = excluded.ours_ms, cublas_ms = excluded.cublas_ms,
               recorded_at = excluded.recorded_at
             WHERE excluded.recorded_at > bench_results.recorded_at)sql",
                     gpu_id_of(1), template_id_of(6), shape_id_of(9)));
  }

  void search_trace() {
    copy("search_trace",
         fmt::format("SELECT x.run_id, {}, {}, {}, x.seq, x.strategy, x.config, x.status, "
                     "x.median_ms, x.recorded_earlier, x.recorded_at {} ORDER BY x.rowid",
                     kGpuKey, kTemplateKey, kShapeKey, keyed("search_trace")),
         fmt::format(R"sql(
             INSERT INTO search_trace (run_id, gpu_id, template_id, shape_id, seq, strategy, config,
                                       status, median_ms, recorded_earlier, recorded_at)
             VALUES (?1, {}, {}, {}, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
             ON CONFLICT DO NOTHING)sql",
                     gpu_id_of(2), template_id_of(7), shape_id_of(9)));
  }

  sqlite3* out_;
  const fs::path& out_path_;
  sqlite3* in_;
  MergedInput& input_;
  int origin_;  // 1 + the input's position: orders versions of equal times (database_merge.h)

 public:
  // Keeps the latest time of a version, and where it was first met (OUT: 0, then the inputs).
  static constexpr const char* kNoteVersionTime = R"sql(
      INSERT INTO temp.merge_versions (name, source_hash, at, origin, origin_seq)
      VALUES (?1, ?2, ?3, ?4, ?5)
      ON CONFLICT (name, source_hash) DO UPDATE SET at = max(at, excluded.at))sql";
};

// Work tables of the merge, in the connection's temp database: OUT's file never holds them.
constexpr const char* kWorkTables = R"sql(
    CREATE TEMP TABLE merge_versions (name TEXT NOT NULL, source_hash TEXT NOT NULL,
      at TEXT NOT NULL, origin INTEGER NOT NULL, origin_seq INTEGER NOT NULL,
      PRIMARY KEY (name, source_hash));
    CREATE TEMP TABLE merge_counters (gpu_id INTEGER NOT NULL, template_id INTEGER NOT NULL,
      config TEXT NOT NULL, shape_id INTEGER NOT NULL, metric TEXT NOT NULL, value REAL NOT NULL,
      ncu_version TEXT NOT NULL, recorded_at TEXT NOT NULL);
    CREATE TEMP TABLE merge_newer (gpu_id INTEGER, template_id INTEGER, config TEXT,
      shape_id INTEGER, existed INTEGER);)sql";

// Gives every template version its place, as database_merge.h says: by the time it was last tuned,
// then where it was first met (OUT's own order first), then by source hash. Only the order within
// a name matters; the numbers are 1, 2, ... over all names, so that a merge that changes no time
// changes no number.
constexpr const char* kRenumberVersions = R"sql(
    WITH ordered AS (
      SELECT t.id, row_number() OVER (ORDER BY v.at, v.origin, v.origin_seq, t.source_hash, t.name)
               AS seq
      FROM templates t
      JOIN temp.merge_versions v ON v.name = t.name AND v.source_hash = t.source_hash)
    UPDATE templates SET registered_seq = ordered.seq
    FROM ordered WHERE ordered.id = templates.id AND templates.registered_seq != ordered.seq)sql";

// OUT opened to write, after ResultStore has created or migrated it.
Connection open_output(const fs::path& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  Connection db(raw, &sqlite3_close_v2);
  if (rc != SQLITE_OK) fail(db.get(), path, "opening");
  if (sqlite3_busy_timeout(db.get(), kBusyTimeoutMs) != SQLITE_OK) fail(db.get(), path, "opening");
  exec(db.get(), path, "PRAGMA foreign_keys = ON", "enabling foreign keys");
  return db;
}

void remove_database(const fs::path& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    fs::path file = path;
    file += suffix;
    fs::remove(file, ignored);
  }
}

}  // namespace

std::vector<MergedInput> merge_databases(const fs::path& out, const std::vector<fs::path>& inputs) {
  std::error_code error;
  const bool created = !fs::exists(out, error);
  // Every input is checked before anything is written: a refusal leaves OUT untouched.
  std::vector<MergedInput> merged;
  for (const fs::path& path : inputs) {
    if (!created && fs::equivalent(path, out, error)) {
      throw DatabaseError(fmt::format("{}: it is the database merged into: refused, nothing merged",
                                      path.string()));
    }
    MergedInput input;
    input.path = path;
    const Connection db = open_input(path, input.schema_version);
    check_template_names(db.get(), path);
    merged.push_back(std::move(input));
  }

  { const ResultStore store(out); }  // creates OUT, or checks or migrates its schema
  try {
    Connection db = open_output(out);
    exec(db.get(), out, kWorkTables, "preparing the merge");
    exec(db.get(), out, "BEGIN IMMEDIATE", "starting the merge");
    {
      Statement times(db.get(), out, "reading the template versions", version_times(kNewestVersion, 0));
      Statement note(db.get(), out, "reading the template versions", InputMerge::kNoteVersionTime);
      note.run_for_each(times);
    }
    for (std::size_t i = 0; i < merged.size(); ++i) {
      int version = 0;
      Connection in = open_input(merged[i].path, version);
      if (version != merged[i].schema_version) {
        throw DatabaseError(fmt::format("{}: migrated while being merged: nothing merged",
                                        merged[i].path.string()));
      }
      // One read transaction: the input is read as one snapshot, even while a tune writes it.
      exec(in.get(), merged[i].path, "BEGIN", "reading");
      InputMerge(db.get(), out, in.get(), merged[i], int(i) + 1).run();
      exec(in.get(), merged[i].path, "COMMIT", "reading");
    }
    exec(db.get(), out, kRenumberVersions, "ordering the template versions");
    exec(db.get(), out, "COMMIT", "committing the merge");
  } catch (...) {
    if (created) remove_database(out);  // the connection, closed by now, rolled back
    throw;
  }
  return merged;
}

}  // namespace tiletune
