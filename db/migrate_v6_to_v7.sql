-- Migrates a schema version 6 database to version 7: results gain the transposes they ran with
-- (op, 'nn' for every earlier row: C = A * B), part of their key. ResultStore runs this inside one
-- BEGIN IMMEDIATE transaction, after checking again, under the write lock, that the file is still
-- at version 6.
--
-- SQLite cannot change a UNIQUE constraint, so results is rebuilt as in migrate_v1_to_v2.sql
-- (create the new table, copy, drop the old, rename the new). The table below must stay the
-- results table of db/schema.sql, word for word (MigratedSchemaMatchesANewOne in
-- tests/db/schema_migration_test.cpp). Row ids are kept, so ties in ranking stay in order.

CREATE TABLE results_v7 (
  id INTEGER PRIMARY KEY,
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config TEXT NOT NULL,
  shape_id INTEGER NOT NULL REFERENCES shapes (id),
  status TEXT NOT NULL
    CHECK (status IN ('ok', 'compile_error', 'wrong_result', 'launch_error', 'device_limit',
                      'timeout', 'crashed', 'pruned')),
  detail TEXT NOT NULL,
  median_ms REAL NOT NULL,
  min_ms REAL NOT NULL,
  max_ms REAL NOT NULL,
  runs INTEGER NOT NULL,
  tflops REAL NOT NULL,
  registers INTEGER NOT NULL,
  static_shared_bytes INTEGER NOT NULL,
  dynamic_shared_bytes INTEGER NOT NULL,
  spill_bytes INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  op TEXT NOT NULL DEFAULT 'nn' CHECK (op IN ('nn', 'nt', 'tn', 'tt')),
  UNIQUE (gpu_id, template_id, config, shape_id, op)
) STRICT;

INSERT INTO results_v7 (id, gpu_id, template_id, config, shape_id, status, detail, median_ms,
                        min_ms, max_ms, runs, tflops, registers, static_shared_bytes,
                        dynamic_shared_bytes, spill_bytes, driver_version, nvrtc_version,
                        recorded_at, op)
SELECT id, gpu_id, template_id, config, shape_id, status, detail, median_ms, min_ms, max_ms, runs,
       tflops, registers, static_shared_bytes, dynamic_shared_bytes, spill_bytes, driver_version,
       nvrtc_version, recorded_at, 'nn'
FROM results;

-- Dropping the old table drops its index too.
DROP TABLE results;
ALTER TABLE results_v7 RENAME TO results;

CREATE INDEX results_by_shape ON results (shape_id, status, median_ms);

PRAGMA user_version = 7;
