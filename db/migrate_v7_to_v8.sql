-- Migrates a schema version 7 database to version 8: results gain the batch they ran with (the
-- number of products of a strided batch, 1 for every earlier row), part of their key beside the
-- transposes: a configuration's speed over a batch of small products is not its speed over one.
-- ResultStore runs this inside one BEGIN IMMEDIATE transaction, after checking again, under the
-- write lock, that the file is still at version 7.
--
-- SQLite cannot change a UNIQUE constraint, so results is rebuilt as in migrate_v6_to_v7.sql. The
-- table below must stay the results table of db/schema.sql, word for word
-- (MigratedSchemaMatchesANewOne in tests/db/schema_migration_test.cpp). Row ids are kept.

CREATE TABLE results_v8 (
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
  batch INTEGER NOT NULL DEFAULT 1 CHECK (batch >= 1),
  UNIQUE (gpu_id, template_id, config, shape_id, op, batch)
) STRICT;

INSERT INTO results_v8 (id, gpu_id, template_id, config, shape_id, status, detail, median_ms,
                        min_ms, max_ms, runs, tflops, registers, static_shared_bytes,
                        dynamic_shared_bytes, spill_bytes, driver_version, nvrtc_version,
                        recorded_at, op, batch)
SELECT id, gpu_id, template_id, config, shape_id, status, detail, median_ms, min_ms, max_ms, runs,
       tflops, registers, static_shared_bytes, dynamic_shared_bytes, spill_bytes, driver_version,
       nvrtc_version, recorded_at, op, 1
FROM results;

-- Dropping the old table drops its index too.
DROP TABLE results;
ALTER TABLE results_v8 RENAME TO results;

CREATE INDEX results_by_shape ON results (shape_id, status, median_ms);

PRAGMA user_version = 8;
