#include "db/sqlite.h"

#include <cctype>
#include <string_view>
#include <utility>

#include "db/result_store.h"  // DatabaseError

namespace tiletune::sqlite {

void fail(sqlite3* db, const std::filesystem::path& path, std::string_view doing) {
  throw DatabaseError(path.string() + ": " + std::string(doing) + ": " +
                      (db ? sqlite3_errmsg(db) : "out of memory"));
}

namespace {

// A path as an SQLite URI's path: every byte but the unreserved ones and '/' percent-encoded.
std::string uri_path(const std::filesystem::path& path) {
  constexpr std::string_view kUnreserved = "-._~/";
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string encoded;
  for (const unsigned char c : std::filesystem::absolute(path).string()) {
    if (std::isalnum(c) || kUnreserved.find(char(c)) != std::string_view::npos) {
      encoded += char(c);
    } else {
      encoded += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return encoded;
}

}  // namespace

Connection open_read_only(const std::filesystem::path& path, bool immutable) {
  sqlite3* raw = nullptr;
  const std::string name = "file:" + uri_path(path) + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
  const int rc = sqlite3_open_v2(name.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Connection db(raw, &sqlite3_close_v2);
  if (rc != SQLITE_OK) fail(db.get(), path, "opening to read");
  if (sqlite3_busy_timeout(db.get(), kBusyTimeoutMs) != SQLITE_OK) {
    fail(db.get(), path, "setting the busy timeout");
  }
  return db;
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
