#!/usr/bin/env bash
# What the merge step of a sharded tune costs: builds SHARDS shard databases of CONFIGS
# configurations x 13 shapes each (a result, a fuzz pass and a search step per configuration and
# shape, as an exhaustive tune writes them; every shard's configurations its own), from a small
# real CPU-backend tune, then times `tiletune merge` of all of them into an empty database, and
# once more into the merged one (idempotent: nothing to add).
#
#   tools/slurm/merge_cost.sh [path/to/tiletune] [SHARDS=100] [CONFIGS=50]
#
# Needs the sqlite3 command (tools/setup.sh installs it). Prints the rows and seconds of each merge.
set -euo pipefail
tiletune=$(readlink -f "${1:-build/tools/tiletune}") shards=${2:-100} configs=${3:-50}
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tiletune-merge-cost.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

XDG_CACHE_HOME=$work/cache "$tiletune" tune "$source_dir/kernels_src/tiled.cu" --backend cpu \
  --shape 32x32x32 --cases 5 --db base.db >/dev/null 2>&1
shapes="(1024,1024,1024),(2048,2048,2048),(4096,4096,4096),(8192,8192,8192),(1000,1000,1000),
  (4095,4097,4093),(3001,2999,1537),(8191,8191,8191),(64,4096,4096),(4096,64,4096),
  (4096,4096,64),(127,129,8191),(17,33,65)"
for ((s = 0; s < shards; ++s)); do
  cp base.db "shard-$s.db"
  sqlite3 "shard-$s.db" "
    INSERT OR IGNORE INTO shapes (m, n, k) VALUES $shapes;
    CREATE TEMP TABLE configs AS
      WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < $configs)
      SELECT 'TILE=' || (100000 + $s * $configs + i) || ',PAD=0,SWIZZLE=0' AS config FROM c;
    INSERT INTO results (gpu_id, template_id, config, shape_id, status, detail, median_ms, min_ms,
                         max_ms, runs, tflops, registers, static_shared_bytes,
                         dynamic_shared_bytes, spill_bytes, driver_version, nvrtc_version,
                         recorded_at)
      SELECT g.id, t.id, c.config, s.id, 'ok', '', 1.5, 1.4, 1.6, 7, 91.6, 128, 0, 33792, 0,
             g.driver_version, g.nvrtc_version, '2026-11-26 12:00:00'
      FROM configs c, shapes s, gpus g, templates t WHERE NOT (s.m = 32 AND s.n = 32 AND s.k = 32);
    INSERT INTO fuzz_passes (gpu_id, template_id, config, cases, recorded_at)
      SELECT g.id, t.id, c.config, 30, '2026-11-26 12:00:00' FROM configs c, gpus g, templates t;
    INSERT INTO search_trace (run_id, gpu_id, template_id, shape_id, seq, strategy, config, status,
                              median_ms, recorded_earlier, recorded_at)
      SELECT printf('%016x', $s), g.id, t.id, s.id, row_number() OVER (PARTITION BY s.id),
             'exhaustive', c.config, 'ok', 1.5, 0, '2026-11-26 12:00:00'
      FROM configs c, shapes s, gpus g, templates t WHERE NOT (s.m = 32 AND s.n = 32 AND s.k = 32);"
done
rows=$(sqlite3 shard-0.db "SELECT count(*) FROM results")
bytes=$(stat -c %s shard-0.db)
echo "$shards shards of $rows results, $rows search steps and $configs fuzz passes each" \
     "($((bytes / 1024)) KiB a file)"
TIMEFORMAT='%R s (CPU %U s user, %S s system)'
for pass in "into an empty database" "again (nothing new)"; do
  took=$({ time "$tiletune" merge merged.db shard-*.db >/dev/null; } 2>&1)
  echo "merge $pass: $(sqlite3 merged.db "SELECT count(*) FROM results") results in $took," \
       "$(($(stat -c %s merged.db) / 1048576)) MiB"
done
