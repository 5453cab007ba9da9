-- Migrates a schema version 5 database to version 6: templates get their declared precision (every
-- template before version 6 computes in fp32) and the table search_trace is added, empty.
-- ResultStore runs this inside one BEGIN IMMEDIATE transaction, after checking again, under the
-- write lock, that the file is still at version 5. The tables must stay those of db/schema.sql,
-- word for word (MigratedSchemaMatchesANewOne in tests/db/schema_migration_test.cpp).

ALTER TABLE templates ADD COLUMN precision TEXT NOT NULL DEFAULT 'fp32'
    CHECK (precision IN ('fp32', 'tf32', 'tf32x3'));

-- What a search did, in its order: one row per configuration a strategy settled in one tune
-- process (run_id: 16 random hex digits per process), numbered from 1 per template version and
-- shape (seq), whether it was measured then or taken from an earlier record (recorded_earlier).
-- Append-only, unlike results: it is what `tiletune report` plots as convergence per strategy.
CREATE TABLE search_trace (
  run_id TEXT NOT NULL,
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  shape_id INTEGER NOT NULL REFERENCES shapes (id),
  seq INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  config TEXT NOT NULL,
  status TEXT NOT NULL,
  median_ms REAL NOT NULL,
  recorded_earlier INTEGER NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (run_id, gpu_id, template_id, shape_id, seq)
) STRICT;

PRAGMA user_version = 6;
