#!/usr/bin/env bash
# Tunes on a Slurm cluster: submits a job array of N shards of one tune (tune_shard.sbatch, a GPU
# per task) and the merge of their databases (merge_shards.sbatch, after all of them succeed).
#
#   tools/slurm/tune_on_slurm.sh --tasks N --results DIR [--tiletune PATH] [--gpus-per-task G]
#       [--local-dir DIR] [--sbatch-arg ARG]... [--wait] -- TUNE_ARGS...
#
#   tools/slurm/tune_on_slurm.sh --tasks 32 --results /shared/tunes/suite --gpus-per-task h100:1 \
#       --sbatch-arg=--time=2:00:00 -- kernels_src/warp_tiled.cu --shape 4096x4096x4096 \
#       --shape 1000x1000x1000 --shape 64x4096x4096
#
# TUNE_ARGS are `tiletune tune`'s (templates, shapes, strategy, budget...; not --db or --shard).
# DIR, tiletune, the templates and the current folder (where the tasks start) must be on a file
# system every node sees. Each task tunes on
# node-local disk (--local-dir, else $TMPDIR, else /tmp) and publishes DIR/shards/shard-I.db when
# its shard is complete; the merge writes DIR/tiletune.db. Logs: DIR/logs/shard-I.JOB.out and
# merge-JOB.out, one per submission.
# --gpus-per-task asks each task for G GPUs (--gres=gpu:G; TYPE:G for a GPU type of the site's
# gres.conf, e.g. h100:1, since every shard must tune one GPU model; 0 for none, `--backend cpu`);
# --sbatch-arg passes an option to both sbatch calls (--partition=gpu, --time=4:00:00...), as do
# Slurm's SBATCH_* variables. --wait returns when the merge has ended, with its exit status.
#
# Resuming: run the same command again. DIR remembers the tune's arguments and refuses others;
# shards already published are not submitted again, and a shard that failed resumes from what it
# had recorded (DIR/partial/shard-I.db): tiletune measures nothing twice.
set -euo pipefail
script_dir=$(cd "$(dirname "$0")" && pwd)

usage() {
  sed -n '5,6p' "$0" | sed 's/^#   //' >&2
  exit 2
}
fail() {
  echo "tune_on_slurm: $*" >&2
  exit 2
}

tasks="" results="" tiletune=${TILETUNE:-} gpus=1 local_dir="" wait=false sbatch_args=()
while (($#)); do
  case $1 in
    --tasks) tasks=${2:-}; shift 2 || usage ;;
    --results) results=${2:-}; shift 2 || usage ;;
    --tiletune) tiletune=${2:-}; shift 2 || usage ;;
    --gpus-per-task) gpus=${2:-}; shift 2 || usage ;;
    --local-dir) local_dir=${2:-}; shift 2 || usage ;;
    --sbatch-arg) sbatch_args+=("${2:-}"); shift 2 || usage ;;
    --wait) wait=true; shift ;;
    --) shift; break ;;
    *) fail "unknown option $1 (the tune's arguments go after --)" ;;
  esac
done
tune_args=("$@")
[[ $tasks =~ ^[1-9][0-9]{0,5}$ ]] && ((tasks <= 100000)) ||
  fail "--tasks must be a number of shards from 1 to 100000, not '$tasks'"
# Slurm reads a comma in --export as the next variable and expands % in --output: such paths
# would reach every task cut or changed.
for path in "$results" "$local_dir"; do
  if [[ $path == *[,%]* ]]; then
    fail "'$path' holds a comma or %, which Slurm would read as its own: choose another path"
  fi
done
[[ $gpus =~ ^([A-Za-z0-9_.-]+:)?[0-9]+$ ]] ||
  fail "--gpus-per-task must be a count or TYPE:COUNT, not '$gpus'"
[ -n "$results" ] || fail "--results DIR is needed: the shared folder for the databases"
((${#tune_args[@]})) || fail "no tune arguments after --: templates and shapes at least"
for arg in "${tune_args[@]}"; do
  case $arg in
    --db | --db=* | --shard | --shard=*) fail "$arg is set per shard: leave it out" ;;
    *.cu) [ -f "$arg" ] || fail "no template $arg (relative paths are read from $PWD)" ;;
  esac
done
command -v sbatch >/dev/null || fail "no sbatch on PATH: this submits to Slurm"

if [ -z "$tiletune" ]; then
  if [ -x "$script_dir/../../build/tools/tiletune" ]; then
    tiletune=$script_dir/../../build/tools/tiletune
  else
    tiletune=$(command -v tiletune) || fail "no tiletune found: give --tiletune PATH"
  fi
fi
[ -x "$tiletune" ] || fail "--tiletune $tiletune is not an executable"
tiletune=$(cd "$(dirname "$tiletune")" && pwd)/$(basename "$tiletune")
mkdir -p "$results/shards" "$results/logs"
results=$(cd "$results" && pwd)

# One tune per results folder: shards of different tunes must never be merged together.
recorded=$(printf '%q ' --tasks "$tasks" -- "${tune_args[@]}")
recorded=${recorded% }
if [ -f "$results/tune.args" ]; then
  [ "$(cat "$results/tune.args")" = "$recorded" ] ||
    fail "$results holds a tune of other arguments ($(cat "$results/tune.args")):" \
         "use another --results"
else
  echo "$recorded" >"$results/tune.args"
fi

missing=()
for ((i = 0; i < tasks; ++i)); do
  [ -f "$results/shards/shard-$i.db" ] || missing+=("$i")
done

env_args=--export=ALL,TILETUNE_SHARDS=$tasks
[ -n "$local_dir" ] && env_args+=,TILETUNE_LOCAL_DIR=$local_dir
dependency=()
if ((${#missing[@]})); then
  array=$(IFS=,; echo "${missing[*]}")
  ((${#missing[@]} == tasks)) && array=0-$((tasks - 1))
  gres=()
  [ "${gpus##*:}" = 0 ] || gres=(--gres=gpu:"$gpus")
  array_job=$(sbatch --parsable --array="$array" "${gres[@]}" "$env_args" \
                --output="$results/logs/shard-%a.%A.out" "${sbatch_args[@]}" \
                "$script_dir/tune_shard.sbatch" "$results" "$tiletune" "${tune_args[@]}")
  array_job=${array_job%%;*}
  dependency=(--dependency=afterok:"$array_job" --kill-on-invalid-dep=yes)
  echo "submitted shard(s) $array of $tasks as job array $array_job"
else
  echo "all $tasks shards are in $results/shards: merging only"
fi

wait_args=()
[ "$wait" = true ] && wait_args=(--wait)
echo "merge: into $results/tiletune.db once every shard has succeeded"
set +e
merge_job=$(sbatch --parsable "${dependency[@]}" "$env_args" --output="$results/logs/merge-%j.out" \
              "${sbatch_args[@]}" "${wait_args[@]}" \
              "$script_dir/merge_shards.sbatch" "$results" "$tiletune" "$tasks")
rc=$?
set -e
merge_job=${merge_job%%;*}
[ -n "$merge_job" ] && echo "merge job $merge_job (log: $results/logs/merge-$merge_job.out)"
[ "$wait" = true ] || exit "$rc"
# sbatch --wait answers 0 for a job cancelled before it ran: a merge that ran left its log.
if ((rc == 0)) && [ ! -f "$results/logs/merge-$merge_job.out" ]; then
  echo "tune_on_slurm: the merge did not run: a shard failed (logs in $results/logs); run the" \
       "same command again to resume" >&2
  exit 1
fi
exit "$rc"
