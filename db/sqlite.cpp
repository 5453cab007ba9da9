#include "db/sqlite.h"

#include <utility>

#include "db/result_store.h"  // DatabaseError

namespace tiletune::sqlite {

void fail(sqlite3* db, const std::filesystem::path& path, std::string_view doing) {
  throw DatabaseError(path.string() + ": " + std::string(doing) + ": " +
                      (db ? sqlite3_errmsg(db) : "out of memory"));
}

void exec(sqlite3* db, const std::filesystem::path& path, const std::string& sql,
          std::string_view doing) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, path, doing);
}

Statement::Statement(sqlite3* db, const std::filesystem::path& path, std::string doing,
                     const std::string& sql)
    : db_(db), path_(path), doing_(std::move(doing)) {
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
    fail(db_, path_, doing_);
  }
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, path_, doing_);
}

int Statement::run_for_each(Statement& rows) {
  int changed = 0;
  while (rows.step()) {
    sqlite3_reset(stmt_);
    for (int i = 0; i < sqlite3_column_count(rows.stmt_); ++i) {
      check(sqlite3_bind_value(stmt_, i + 1, sqlite3_column_value(rows.stmt_, i)));
    }
    run();
    changed += sqlite3_changes(db_);
  }
  return changed;
}

std::string Statement::text(int column) const {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return data ? std::string(data, sqlite3_column_bytes(stmt_, column)) : std::string();
}

void Statement::bind_one(int index, const std::string& value) {
  check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                          SQLITE_TRANSIENT));
}

void Statement::bind_one(int index, const std::optional<std::string>& value) {
  if (value) {
    bind_one(index, *value);
  } else {
    check(sqlite3_bind_null(stmt_, index));
  }
}

Transaction::Transaction(sqlite3* db, const std::filesystem::path& path, std::string doing)
    : db_(db), path_(path), doing_(std::move(doing)) {
  exec(db_, path_, "BEGIN IMMEDIATE", doing_);
}

Transaction::~Transaction() {
  if (!committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  exec(db_, path_, "COMMIT", doing_);
  committed_ = true;
}

}  // namespace tiletune::sqlite
