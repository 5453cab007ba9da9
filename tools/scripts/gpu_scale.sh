#!/usr/bin/env bash
# Tuning at scale on a GPU machine, in one call (issue: parallel, cached, guided, resumable):
#   1. an exhaustive tune of warp_tiled at one shape from an empty cubin cache and database:
#      configurations per second and the wall time by stage;
#   2. the same command again (resumes: measures nothing), and a fresh database with the warm
#      cubin cache (compiles nothing, measures everything), once with the fuzz pool and once with
#      --fuzz-workers 0 (the evaluation worker fuzzes): what fuzzing side by side gains;
#   3. exhaustive tunes of more shapes, then every strategy replayed on every recorded space at
#      10% and 20% budgets (`tiletune strategies`: cold, and warm started from the other shapes);
#      then real guided tunes at 20%, each strategy in a fresh database over $SHAPE and the first
#      two of $MORE_SHAPES in turn, so that the second and third start warm from the ones before;
#   4. the fault zoo: every fault recorded with its status, every good variant timed.
# STEPS picks the parts (default "tune search": 1-2, then 3-4), so that each fits in one call of
# a time-limited machine; databases and the cubin cache persist in $WORK between calls. Logs and
# databases go to $OUT (default ./gpu-scale-out) as one archive, gpu-scale.tgz, with the summary
# beside it; a short table comes last.
#
#   [STEPS=tune|search] tools/scripts/gpu_scale.sh [path/to/tiletune]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-build/tools/tiletune}")
OUT=$(realpath -m "${OUT:-gpu-scale-out}")
WORK=${WORK:-/tmp/tiletune-scale}
STEPS=${STEPS:-tune search}
mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
export TILETUNE_CACHE_DIR="$WORK/cubins"
SHAPE=${SHAPE:-4096x4096x4096}
MORE_SHAPES=${MORE_SHAPES:-"2048x2048x2048 1000x1000x1000"}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
echo "host cores: $(nproc)" | tee -a "$OUT/gpu.txt"

timed() {  # NAME COMMAND...: runs, logs, prints the wall seconds
  local name=$1; shift
  local start=$(date +%s%N)
  "$@" >"$WORK/$name.txt" 2>"$WORK/$name.log"
  local status=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%s: exit %d after %d.%03d s\n' "$name" "$status" $((ms / 1000)) $((ms % 1000)) | tee -a "$WORK/summary.txt"
}

if [[ $STEPS == *tune* ]]; then
  rm -rf "$WORK"/* && mkdir -p "$WORK"
  timed exhaustive "$BIN" tune kernels_src/warp_tiled.cu --shape "$SHAPE" --db "$WORK/exhaustive.db"
  timed resume "$BIN" tune kernels_src/warp_tiled.cu --shape "$SHAPE" --db "$WORK/exhaustive.db"
  timed cached "$BIN" tune kernels_src/warp_tiled.cu --shape "$SHAPE" --db "$WORK/cached.db"
  timed cached-inline-fuzz "$BIN" tune kernels_src/warp_tiled.cu --shape "$SHAPE" --fuzz-workers 0 \
    --db "$WORK/cached-inline-fuzz.db"
  for shape in $MORE_SHAPES; do
    timed "exhaustive-$shape" "$BIN" tune kernels_src/warp_tiled.cu --shape "$shape" --db "$WORK/exhaustive.db"
  done
fi
if [[ $STEPS == *search* ]]; then
  for shape in "$SHAPE" $MORE_SHAPES; do
    timed "strategies-$shape" "$BIN" strategies --db "$WORK/exhaustive.db" --kernel warp_tiled --shape "$shape" \
      --seeds 20 --budget 10% --budget 20%
  done
  read -r -a more <<<"$MORE_SHAPES"
  for strategy in annealing genetic bayes; do
    rm -f "$WORK/guided-$strategy.db"*
    for shape in "$SHAPE" "${more[@]:0:2}"; do
      timed "guided-$strategy-$shape" "$BIN" tune kernels_src/warp_tiled.cu --shape "$shape" --strategy "$strategy" \
        --budget 20% --db "$WORK/guided-$strategy.db"
    done
  done
  rm -f "$WORK/zoo.db"*
  timed fault-zoo "$BIN" tune tests/fixtures/kernels/fault_zoo.cu --shape 1000x1000x1000 --watchdog 5 --db "$WORK/zoo.db"
fi
# At most a few files come back from a lent machine: one archive and the summary.
tar czf "$OUT/gpu-scale.tgz" -C "$WORK" --exclude=cubins . && cp "$WORK/summary.txt" "$OUT/"

echo
echo "== summary"; cat "$WORK/summary.txt"
for run in exhaustive resume cached cached-inline-fuzz exhaustive-2048x2048x2048 exhaustive-1000x1000x1000 fault-zoo; do
  [ -f "$WORK/$run.txt" ] || continue
  echo "== $run"; grep -E "^(wall|time by stage|settled)" "$WORK/$run.txt"; sed -n '/^shape/,/^$/p' "$WORK/$run.txt" | head -4
done
for f in "$WORK"/strategies-*.txt; do [ -f "$f" ] && { echo "== $(basename "$f" .txt)"; cat "$f"; }; done
if ls "$WORK"/guided-*.txt >/dev/null 2>&1; then
  echo "== real guided tunes at 20% (each shape warm started from those before it) against the exhaustive optimum"
  field() { sed -n "s/^  \"$1\": \"\{0,1\}\([^\"]*[^\",]\)\"\{0,1\},\{0,1\}$/\1/p"; }  # from query's JSON
  printf '%-10s %-16s %-58s %9s %9s %7s\n' strategy shape "best configuration found" "ms" optimum ratio
  for f in "$WORK"/guided-*.txt; do
    name=$(basename "$f" .txt); strategy=${name#guided-}; strategy=${strategy%%-*}; shape=${name##*-}
    found=$("$BIN" query --shape "$shape" --exact --json --db "$WORK/guided-$strategy.db" 2>/dev/null)
    best=$("$BIN" query --shape "$shape" --exact --json --db "$WORK/exhaustive.db" 2>/dev/null)
    ms=$(field median_ms <<<"$found"); optimum=$(field median_ms <<<"$best")
    printf '%-10s %-16s %-58s %9.4f %9.4f %7.3f\n' "$strategy" "$shape" "$(field config <<<"$found")" "$ms" "$optimum" \
      "$(awk -v a="$ms" -v b="$optimum" 'BEGIN { print a / b }')"
    grep -o "warm start: .*" "$f" | sed 's/^/           /'
  done
fi
if [ -f "$WORK/fault-zoo.log" ]; then
  echo "== fault zoo results"; grep -E "FAULT=.*: [a-z_]+" "$WORK/fault-zoo.log" | sed 's/^.*fault_zoo /fault_zoo /' | cut -c1-160
fi
