-- The tiletune database, schema version 8 (kept in PRAGMA user_version). Created in one
-- transaction when ResultStore opens a new or empty file; a file of version 1 to 7 is migrated by
-- db/migrate_v1_to_v2.sql ... db/migrate_v7_to_v8.sql in turn, from its own version on; any other
-- version is refused.
--
-- Version 2 added the statuses timeout, crashed and pruned to results; version 3 the table
-- fuzz_passes; version 4 the table missed_problems; version 5 the tables counters and
-- bench_results; version 6 the column templates.precision and the table search_trace; version 7
-- the column results.op; version 8 the column results.batch.

-- A GPU as identified across driver updates; the other columns hold what was last registered.
CREATE TABLE gpus (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  clock_khz INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  UNIQUE (name, cc_major, cc_minor, sm_count, memory_bytes)
) STRICT;

-- One row per version (source hash) of a kernel template. Each registration gives the version the
-- next registered_seq: the version of a name with the highest one is the current version.
-- precision is the template's declaration (tuner/precision.h), written where version 6's ALTER
-- TABLE puts it, so that a migrated file and a new one read the same.
CREATE TABLE templates (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  path TEXT NOT NULL,
  source TEXT NOT NULL,
  registered_seq INTEGER NOT NULL, precision TEXT NOT NULL DEFAULT 'fp32'
    CHECK (precision IN ('fp32', 'tf32', 'tf32x3')),
  UNIQUE (name, source_hash)
) STRICT;

-- templates with is_current: whether the row is the current version of its name.
CREATE VIEW template_versions AS
SELECT t.*,
       t.registered_seq = (SELECT max(v.registered_seq) FROM templates v WHERE v.name = t.name)
         AS is_current
FROM templates t;

-- Problem sizes, row-major C[m x n] = A[m x k] * B[k x n].
CREATE TABLE shapes (
  id INTEGER PRIMARY KEY,
  m INTEGER NOT NULL,
  n INTEGER NOT NULL,
  k INTEGER NOT NULL,
  UNIQUE (m, n, k)
) STRICT;

-- One evaluation of a configuration (Configuration::to_string(), kept inline) of a template
-- version on a GPU and shape, with the transposes op ('nn' is C = A * B; 'nt' reads B stored
-- N x K, and so on: tuner/core/gemm_shape.h) and the batch (the products of a strided batch, each
-- of the shape, packed); a new evaluation of the same six keys replaces the row. The
-- statuses are ResultStatus's names (db/result_store.h): a migration must extend them. Timings,
-- tflops and resources are 0 where the status did not get that far. driver_version and
-- nvrtc_version are those of the evaluation; recorded_at is UTC "YYYY-MM-DD HH:MM:SS".
CREATE TABLE results (
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

-- best/ranking look results up by shape, then filter on GPU name and template version.
CREATE INDEX results_by_shape ON results (shape_id, status, median_ms);

-- A configuration of a template version that passed its fuzz on a GPU, and how many random cases
-- it passed (the most, over all its fuzzes). The fuzz does not depend on the shape: a tune of
-- another shape trusts the pass, unless it asks for more cases than were passed.
CREATE TABLE fuzz_passes (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  template_id INTEGER NOT NULL REFERENCES templates (id),
  config TEXT NOT NULL,
  cases INTEGER NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (gpu_id, template_id, config)
) STRICT;

-- A problem that the runtime library (Options::record_misses) was asked to run on a GPU and had
-- no exact record for: `tiletune tune --missed` tunes these shapes, and forgets a shape's rows once
-- it has an ok result. Keyed by names, not row ids: the library records without registering the
-- GPU or the template. count: how many processes met it (each records a problem once);
-- first_seen and last_seen are UTC "YYYY-MM-DD HH:MM:SS".
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

-- Hardware counters of a configuration of a template version on a GPU and shape, read by Nsight
-- Compute (`tiletune profile`): one row per metric, by tiletune's short name
-- (tuner/profiling/counter_metrics.h), in that metric's unit. A new profile of the same four keys
-- replaces all their rows; ncu_version is the ncu that measured them, recorded_at UTC
-- "YYYY-MM-DD HH:MM:SS".
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

-- A configuration's time against cuBLAS's on the same GPU and shape, measured together (what the
-- report's winner against cuBLAS shows); a new measurement of the same four keys replaces the row.
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

PRAGMA user_version = 8;
