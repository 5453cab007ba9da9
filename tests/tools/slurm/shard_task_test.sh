#!/usr/bin/env bash
# tools/slurm/tune_shard.sbatch run as a plain script (what an array task sees, without Slurm):
# which tiletune exits publish a shard. A finished tune that found no correct configuration for a
# pair it searched whole (exit 1 and tiletune's line saying so) is published; bad input (exit 2)
# is not, and leaves nothing in the results folder but nothing to resume from either.
#
# shard_task_test.sh TILETUNE SOURCE_DIR
set -euo pipefail
tiletune=$(readlink -f "$1") source_dir=$(readlink -f "$2")
task=$source_dir/tools/slurm/tune_shard.sbatch
work=$(mktemp -d "${TMPDIR:-/tmp}/tiletune-shard-task-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $1" >&2
  exit 1
}
export XDG_CACHE_HOME=$work/cache SLURM_ARRAY_TASK_ID=0 TILETUNE_SHARDS=1 TILETUNE_LOCAL_DIR=$work

# Every configuration of floor_grid fails its fuzz: tiletune exits 1, the shard is complete.
rc=0
bash "$task" "$work/found-none" "$tiletune" "$source_dir/tests/fixtures/kernels/floor_grid.cu" \
  --backend cpu --shape 32x32x32 --strategy annealing --budget 2 --cases 5 >"$work/none.out" 2>&1 ||
  rc=$?
[ "$rc" = 0 ] || fail "a finished tune without a correct configuration failed its task (exit $rc):
$(tail -n 5 "$work/none.out")"
grep -q '^shard 0/1: finished; 1 of 1 template and shape pairs have no correct configuration$' \
  "$work/none.out" ||
  fail "the task did not say why tiletune exited 1: $(tail -n 3 "$work/none.out")"
[ -f "$work/found-none/shards/shard-0.db" ] || fail "the finished shard was not published"

# Bad input: the task fails with tiletune's exit status and publishes nothing.
rc=0
bash "$task" "$work/bad" "$tiletune" "$source_dir/kernels_src/tiled.cu" --backend cpu \
  --shape 0x32x32 >"$work/bad.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad input: exit $rc instead of tiletune's 2: $(tail -n 3 "$work/bad.out")"
[ ! -e "$work/bad/shards/shard-0.db" ] || fail "a failed tune was published"
[ -z "$(ls "$work" | grep '^tiletune-shard-')" ] || fail "the task left its local folder behind"
echo "exit 1 of a finished tune published, exit 2 not"
