-- Migrates a schema version 2 database to version 3: the table fuzz_passes is added, empty (a
-- configuration tuned before is fuzzed once more, the first time it is tuned at another shape).
-- ResultStore runs this inside one BEGIN IMMEDIATE transaction, after checking again, under the
-- write lock, that the file is still at version 2. The table must stay the one of db/schema.sql,
-- word for word (MigratedSchemaMatchesANewOne in tests/db/schema_migration_test.cpp).

CREATE TABLE fuzz_passes (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config TEXT NOT NULL,
  cases INTEGER NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (gpu_id, template_id, config)
) STRICT;

PRAGMA user_version = 3;
