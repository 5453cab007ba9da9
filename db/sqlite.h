// SQLite as the database layer uses it: every call checked, a failure thrown as a DatabaseError
// that names the file and what was being done ("registering GPU NVIDIA H200"); statements and
// transactions finalized or rolled back on scope exit. Internal to db/.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tiletune::sqlite {

// How long a writer waits for another process's transaction before giving up.
inline constexpr int kBusyTimeoutMs = 10'000;

// Throws DatabaseError: "PATH: DOING: SQLite's message".
[[noreturn]] void fail(sqlite3* db, const std::filesystem::path& path, std::string_view doing);

// A connection, closed on scope exit.
using Connection = std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)>;

// Opens `path` to read it, changing nothing, the busy timeout set. `immutable`: as a file that
// nothing writes (no locks, no -shm file), for a WAL database in a folder this process cannot
// write when no -wal file says that a writer is at work.
Connection open_read_only(const std::filesystem::path& path, bool immutable);

// Runs SQL that returns no rows (one statement or several).
void exec(sqlite3* db, const std::filesystem::path& path, const std::string& sql,
          std::string_view doing);

// One prepared statement: parameters bound by position, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::filesystem::path& path, std::string doing,
            const std::string& sql);
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  template <class... Args>
  Statement& bind(const Args&... args) {
    int index = 0;
    (bind_one(++index, args), ...);
    return *this;
  }

  // Steps once: true when a row is available.
  bool step();
  // Steps to the end.
  void run() {
    while (step()) {
    }
  }
  // Runs this statement once per row of `rows` (of another connection), the row's columns bound
  // to ?1, ?2, ... as they are; returns the rows this changed.
  int run_for_each(Statement& rows);

  std::int64_t int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  int integer(int column) const { return sqlite3_column_int(stmt_, column); }
  double real(int column) const { return sqlite3_column_double(stmt_, column); }
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string text(int column) const;

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, doing_);
  }
  void bind_one(int index, std::int64_t value) { check(sqlite3_bind_int64(stmt_, index, value)); }
  void bind_one(int index, int value) { check(sqlite3_bind_int(stmt_, index, value)); }
  void bind_one(int index, double value) { check(sqlite3_bind_double(stmt_, index, value)); }
  void bind_one(int index, const std::string& value);
  void bind_one(int index, const char* value) { bind_one(index, std::string(value)); }
  // An absent optional binds NULL: queries read "?N IS NULL" as "no filter".
  void bind_one(int index, const std::optional<std::string>& value);

  sqlite3* db_;
  const std::filesystem::path& path_;
  std::string doing_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock up front, so a concurrent writer waits in the busy
// handler instead of failing when it upgrades a read lock. Rolls back unless committed.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::filesystem::path& path, std::string doing);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  sqlite3* db_;
  const std::filesystem::path& path_;
  std::string doing_;
  bool committed_ = false;
};

}  // namespace tiletune::sqlite
