#!/usr/bin/env bash
# tools/slurm on a real Slurm: a private single-node cluster (private_slurm.sh: munged, slurmctld
# and slurmd from Debian's packages, 4 CPUs and 4 fake GPUs, loopback only) runs
# tools/slurm/tune_on_slurm.sh for a CPU-backend tune of kernels_src/naive.cu and tiled.cu at two small shapes
# as a 4-task array. Shard 2 is killed once its tune has finished; the array's other shards must be
# published, the merge must not run, and shard 2's results must be kept as partial. Submitted
# again, only shard 2 runs, resuming (it measures nothing), and the merge follows. The merged
# database must hold, row for row (timings aside), what one `tiletune tune` process records.
# Everything lives in a private temporary folder; the daemons are stopped however the test ends.
#
# slurm_tune_test.sh TILETUNE SOURCE_DIR
# Without Slurm or munge (tools/setup.sh installs them), or when they cannot start: fails where
# CI=true, else skips (exit 77) with the reason.
set -euo pipefail
tiletune=$(readlink -f "$1") source_dir=$(readlink -f "$2")
wrapper=$source_dir/tools/slurm/tune_on_slurm.sh

unavailable() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI=true: the Slurm test must run; tools/setup.sh installs Slurm)" >&2
    exit 1
  fi
  echo "SKIP: $1 (tools/setup.sh installs Slurm)"
  exit 77
}
fail() {
  echo "FAIL: $1" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/tiletune-slurm-test.XXXXXX")
chmod 711 "$work"  # searchable, not readable, by others: munged's socket must be reachable
source "$source_dir/tests/tools/slurm/private_slurm.sh"
on_exit() {
  local rc=$?
  private_slurm_stop
  if ((rc != 0 && rc != 77)) && [ -d "$work/results/logs" ]; then
    tail -n 20 "$work"/results/logs/* "$work"/slurm/log/slurm*.log >&2 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 143' TERM  # the EXIT trap runs on a kill too
trap 'exit 130' INT

start=$(date +%s%N)
seconds_since_start() {
  local ms=$((($(date +%s%N) - start) / 1000000))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}
if ! private_slurm_start "$work/slurm" 4 4 2>"$work/slurm-start.err"; then
  why=$(tr -s '\n' ' ' <"$work/slurm-start.err")
  unavailable "no Slurm: ${why% }"
fi
echo "private Slurm up in $(seconds_since_start) s"

export XDG_CACHE_HOME=$work/cache  # the CPU backend's built kernels, shared by the tasks
# naive and tiled: 30 configurations, shared out among the 4 shards by a hash of each template's
# version and configuration, so that shard 2 has some to tune whatever the versions (with tiled's
# 9 alone, one version in 13 left it none).
tune_args=("$source_dir/kernels_src/naive.cu" "$source_dir/kernels_src/tiled.cu" --backend cpu
           --shape 32x32x32 --shape 48x40x24 --cases 10)

# The tasks' tiletune: the real one, except that shard 2 is killed, the first time, once its tune
# has finished (after every result is recorded, before its database is published).
cat >"$work/tiletune" <<EOF
#!/usr/bin/env bash
"$tiletune" "\$@" || exit
if [ "\${SLURM_ARRAY_TASK_ID:-}" = 2 ] && [ "\$1" = tune ] && [ ! -e "$work/killed-once" ]; then
  touch "$work/killed-once"
  kill -KILL \$\$
fi
EOF
chmod +x "$work/tiletune"
submit() {
  "$wrapper" --tasks 4 --results "$work/results" --tiletune "$work/tiletune" --local-dir "$work" \
    --wait -- "${tune_args[@]}"
}

cd "$work"
# Bad input: one line, exit 2, nothing submitted.
refused() {
  local expected=$1 out rc=0
  shift
  # With the tiletune under test, not whichever one the wrapper would find beside the sources.
  out=$("$wrapper" --tiletune "$tiletune" "$@" 2>&1) || rc=$?
  [ "$rc" = 2 ] && [ "$out" = "tune_on_slurm: $expected" ] ||
    fail "tune_on_slurm $*: exit $rc, '$out' instead of exit 2, '$expected'"
}
refused "--db is set per shard: leave it out" --tasks 4 --results "$work/results" -- \
  "${tune_args[@]}" --db other.db

# The first submission: shard 2 fails, so the merge must not run (--wait reports its cancel).
if submit; then fail "the merge ran although shard 2 failed"; fi
echo "first array ended at $(seconds_since_start) s"
for i in 0 1 3; do
  [ -f "results/shards/shard-$i.db" ] ||
    fail "shard $i was not published (shards: $(ls results/shards))"
done
[ ! -e results/shards/shard-2.db ] || fail "shard 2 was published although it was killed"
[ -f results/partial/shard-2.db ] || fail "shard 2's results were not kept in results/partial"
[ ! -e results/tiletune.db ] || fail "results/tiletune.db was written although shard 2 failed"
before=$(cksum results/shards/shard-0.db)

# The second: only shard 2 runs again, from its partial database; then the merge.
submit | tee resubmit.out
echo "resubmission merged at $(seconds_since_start) s"
grep -q '^submitted shard(s) 2 of 4 as job array' resubmit.out ||
  fail "the resubmission did not submit shard 2 alone: $(head -n 1 resubmit.out)"
[ "$(cksum results/shards/shard-0.db)" = "$before" ] ||
  fail "shard 0 was rewritten by the resubmission"
[ ! -e results/partial/shard-2.db ] || fail "shard 2's partial database outlived its publication"
runs=$(sqlite3 results/shards/shard-2.db "SELECT count(DISTINCT run_id) FROM search_trace")
measured=$(sqlite3 results/shards/shard-2.db "SELECT count(*) FROM search_trace
  WHERE run_id = (SELECT run_id FROM search_trace ORDER BY recorded_at DESC, rowid DESC LIMIT 1)
    AND recorded_earlier = 0")
[ "$runs" = 2 ] && [ "$measured" = 0 ] ||
  fail "shard 2 did not resume: $runs tune runs in its trace, the last measured $measured"

refused "$work/results holds a tune of other arguments ($(cat results/tune.args)): use another \
--results" --tasks 3 --results "$work/results" -- "${tune_args[@]}"

# The same tune in one process.
"$tiletune" tune "${tune_args[@]}" --db single.db >single.out 2>&1 ||
  fail "the one-process tune failed: $(tail -n 1 single.out)"
echo "one-process tune done at $(seconds_since_start) s: $(grep '^wall' single.out)"

# Row for row, timings aside: every table that a tune writes, by names rather than row ids. A
# result's detail says which the confirmation re-measured (the fastest: a timing), so that is left
# out; the search trace is compared as the configurations first measured, whatever the run.
dump() {
  sqlite3 -separator ' | ' "$1" "
    SELECT 'gpu', name, cc_major, cc_minor, sm_count, memory_bytes FROM gpus ORDER BY 2;
    SELECT 'template', name, source_hash, precision, length(source) FROM templates ORDER BY 2, 3;
    SELECT 'shape', m, n, k FROM shapes ORDER BY 2, 3, 4;
    SELECT 'result', g.name, t.name, t.source_hash, r.config, s.m, s.n, s.k, r.status,
           CASE WHEN r.detail LIKE 're-measured with the best %' THEN '' ELSE r.detail END,
           r.registers, r.static_shared_bytes, r.dynamic_shared_bytes, r.spill_bytes
      FROM results r JOIN gpus g ON g.id = r.gpu_id JOIN templates t ON t.id = r.template_id
      JOIN shapes s ON s.id = r.shape_id ORDER BY 2, 3, 4, 5, 6, 7, 8;
    SELECT 'fuzz pass', g.name, t.source_hash, f.config, f.cases
      FROM fuzz_passes f JOIN gpus g ON g.id = f.gpu_id JOIN templates t ON t.id = f.template_id
      ORDER BY 2, 3, 4;
    SELECT 'trace', t.source_hash, s.m, s.n, s.k, x.strategy, x.config, x.status
      FROM search_trace x JOIN templates t ON t.id = x.template_id
      JOIN shapes s ON s.id = x.shape_id
      WHERE x.recorded_earlier = 0 ORDER BY 2, 3, 4, 5, 6, 7;
    SELECT 'missed', * FROM missed_problems ORDER BY 2, 3, 4, 5, 6;"
}
dump single.db >single.rows
dump results/tiletune.db >merged.rows
grep -q "^result | CPU backend | tiled | .* | ok | " single.rows ||
  fail "the one-process tune recorded no ok result: $(head -n 3 single.rows)"
diff single.rows merged.rows >rows.diff || fail "merged database differs from one process:
$(head -n 20 rows.diff)"
echo "4 shards on Slurm (one killed and resubmitted), merged: $(grep -c '^result' merged.rows)" \
     "results equal to one process's; $(seconds_since_start) s from start to teardown"
