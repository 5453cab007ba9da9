#!/usr/bin/env bash
# The counters, the report and the lab on a GPU machine, on a database a user would report on:
#   STEPS=tune    guided tunes of warp_tiled (annealing, genetic, bayes, random; --budget each) at
#                 two shapes, so that the search trace holds every strategy, then `tiletune bench`
#                 of warp_tiled at the 13-shape suite (an exhaustive tune that replays what the
#                 guided ones measured, then each winner against cuBLAS SGEMM, recorded);
#   STEPS=profile `tiletune profile --top 1` of every shape's winner, tools/scripts/gpu_counters_check.sh
#                 (our shared wavefronts beside Nsight Compute's own Source Counters rule) at two
#                 shapes, `tiletune lab bank-conflicts`, and `tiletune report` (HTML and Markdown).
# Both by default; split them where one device call would run too long. The database is
# $DB (default $OUT/report.db); logs, tables and the report go to $OUT (default gpu-report-out).
#
#   STEPS="tune profile" tools/scripts/gpu_report_check.sh [path/to/tiletune]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tools/tiletune}
OUT=${OUT:-gpu-report-out}
DB=${DB:-$OUT/report.db}
STEPS=${STEPS:-tune profile}
BUDGET=${BUDGET:-40}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
guided_shapes=(--shape 4096x4096x4096 --shape 1000x1000x1000)

status=0
table=()
step() {  # step NAME COMMAND...: runs it, logs it, remembers its exit and time
  local name=$1 started=$SECONDS code
  shift
  echo "== $name: $*" >>"$OUT/steps.log"
  "$@" >>"$OUT/steps.log" 2>&1
  code=$?
  [ "$code" -eq 0 ] || status=1
  table+=("$(printf '%-34s exit %-3s %5d s' "$name" "$code" $((SECONDS - started)))")
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [[ " $STEPS " == *" tune "* ]]; then
  for strategy in annealing genetic bayes random; do
    step "tune --strategy $strategy" "$BIN" tune kernels_src/warp_tiled.cu "${guided_shapes[@]}" \
      --strategy "$strategy" --budget "$BUDGET" --db "$DB"
  done
  step "bench (exhaustive tune, 13 shapes)" "$BIN" bench kernels_src/warp_tiled.cu --db "$DB"
  grep -A20 -i 'geomean\|shape' "$OUT/steps.log" | tail -20 >"$OUT/bench-table.txt"
fi
if [[ " $STEPS " == *" profile "* ]]; then
  step "profile --top 1" "$BIN" profile --db "$DB" --kernel warp_tiled --top 1
  step "counters against Source Counters" env OUT="$OUT" bash tools/scripts/gpu_counters_check.sh "$BIN" \
    "$DB" warp_tiled 4096x4096x4096 1000x1000x1000
  step "lab bank-conflicts" "$BIN" lab bank-conflicts --out "$OUT"
  step "report (html)" "$BIN" report --db "$DB" --out "$OUT/report.html"
  step "report (md)" "$BIN" report --db "$DB" --out "$OUT/report.md" --format md
  step "query --json 4096^3" "$BIN" query --db "$DB" --kernel warp_tiled --shape 4096x4096x4096 --json
fi
echo "== summary (full log: $OUT/steps.log)"
printf '%s\n' "${table[@]}"
[ -f "$OUT/counters-check.log" ] && sed -n '/== summary/,$p' "$OUT/steps.log" | tail -4
exit $status
