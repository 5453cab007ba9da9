// load_sql_dump DUMP.sql DB: writes the database a `sqlite3 .dump` makes (as
// tests/support/tuned_fixture.h does for the gtests), so that the report's browser test can open
// the H200 selection fixture's report without the sqlite3 command, which CI need not have.
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <sstream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: load_sql_dump DUMP.sql DB\n");
    return 2;
  }
  std::ifstream dump(argv[1]);
  if (!dump) {
    std::fprintf(stderr, "load_sql_dump: cannot read %s\n", argv[1]);
    return 1;
  }
  std::stringstream sql;
  sql << dump.rdbuf();
  sqlite3* db = nullptr;
  char* error = nullptr;
  const bool ok = sqlite3_open(argv[2], &db) == SQLITE_OK &&
                  sqlite3_exec(db, sql.str().c_str(), nullptr, nullptr, &error) == SQLITE_OK;
  if (!ok) std::fprintf(stderr, "load_sql_dump: %s: %s\n", argv[2], error ? error : sqlite3_errmsg(db));
  sqlite3_free(error);
  sqlite3_close(db);
  return ok ? 0 : 1;
}
