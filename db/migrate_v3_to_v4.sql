-- Migrates a schema version 3 database to version 4: the table missed_problems is added, empty.
-- ResultStore runs this inside one BEGIN IMMEDIATE transaction, after checking again, under the
-- write lock, that the file is still at version 3. The table must stay the one of db/schema.sql,
-- word for word (MigratedSchemaMatchesANewOne in tests/db/schema_migration_test.cpp).

CREATE TABLE missed_problems (
  gpu_name TEXT NOT NULL,
  template_name TEXT NOT NULL,
  m INTEGER NOT NULL,
  n INTEGER NOT NULL,
  k INTEGER NOT NULL,
  lda INTEGER NOT NULL,
  ldb INTEGER NOT NULL,
  ldc INTEGER NOT NULL,
  count INTEGER NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  PRIMARY KEY (gpu_name, template_name, m, n, k, lda, ldb, ldc)
) STRICT;

PRAGMA user_version = 4;
