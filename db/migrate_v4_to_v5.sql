-- Migrates a schema version 4 database to version 5: the tables counters and bench_results are
-- added, empty. ResultStore runs this inside one BEGIN IMMEDIATE transaction, after checking
-- again, under the write lock, that the file is still at version 4. The tables must stay those of
-- db/schema.sql, word for word (MigratedSchemaMatchesANewOne in tests/db/schema_migration_test.cpp).

CREATE TABLE counters (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config TEXT NOT NULL,
  shape_id INTEGER NOT NULL REFERENCES shapes (id),
  metric TEXT NOT NULL,
  value REAL NOT NULL,
  ncu_version TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (gpu_id, template_id, config, shape_id, metric)
) STRICT;

CREATE TABLE bench_results (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config TEXT NOT NULL,
  shape_id INTEGER NOT NULL REFERENCES shapes (id),
  ours_ms REAL NOT NULL,
  cublas_ms REAL NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (gpu_id, template_id, config, shape_id)
) STRICT;

PRAGMA user_version = 5;
