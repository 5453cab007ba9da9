#!/usr/bin/env bash
# Tuning on every GPU of the host against tuning on one (`tune --devices`): exhaustive tunes of
# warp_tiled at $SHAPES (default: the 13-shape suite of `tiletune bench`, tools/bench/bench_suite.h,
# a catalogue as a lab tunes it), each into a database of its own:
#   1. --devices all from an empty cubin cache (which it fills);
#   2. with the cubin cache warm (compiles nothing: the evaluation throughput alone): --devices 0,
#      then --devices all;
#   3. --devices 0 from an empty cubin cache again (COLD=1, the default), unless the time so far
#      and its estimate (the warm tune's time and what compiling cost the first) pass $LIMIT
#      seconds (default 510): compiling is shared by the devices, so its time is not divided;
# and prints, for each pair, the configurations per second and their ratio (targets with the cache
# warm: >= 1.8x on 2 GPUs, >= 3.5x on 4), then the winners of the two warm tunes shape by shape,
# and the times of every configuration both recorded: two GPUs timing at once must not slow each
# other down (cross-talk), so the ratios stay within the timing noise (a few %). The GPUs of one
# model must be one GPU row in the database. Given a folder of test binaries, it runs the device
# tests that need several GPUs too (devices_cli_tests).
# A tune's start (CUDA contexts, created one at a time host-wide) and its last shape's
# re-measurement (on one GPU) do not divide among the GPUs, so short tunes scale less: on 4 H100s
# 8 shapes tuned at 3.4x, the suite at 3.7x. The suite takes about 3.6 minutes on one H100 and 7.5
# in all on 2 H100s (step 3 skipped); SHAPES (the shapes), BUDGET (evaluations per template and
# shape, e.g. 100: the same first configurations in both tunes) and COLD=0 (no step 3) make it
# shorter. Logs and databases go to $OUT (default ./gpu-devices-out) as one archive,
# gpu-devices.tgz, with the summary beside it; a short table comes last.
#
#   [SHAPES="4096x4096x4096 4095x4097x4093"] [BUDGET=N] [COLD=0|1] [LIMIT=510] tools/scripts/gpu_devices_bench.sh \
#     [path/to/tiletune] [folder of test binaries]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-build/tools/tiletune}")
OUT=$(realpath -m "${OUT:-gpu-devices-out}")
WORK=${WORK:-/tmp/tiletune-devices}
SUITE="1024x1024x1024 2048x2048x2048 4096x4096x4096 8192x8192x8192 1000x1000x1000 4095x4097x4093
       3001x2999x1537 8191x8191x8191 64x4096x4096 4096x64x4096 4096x4096x64 127x129x8191 17x33x65"
SHAPES=${SHAPES:-$SUITE}
BUDGET=${BUDGET:-}
COLD=${COLD:-1}
LIMIT=${LIMIT:-510}
TESTS=${2:-}
mkdir -p "$OUT"
rm -rf "$WORK" && mkdir -p "$WORK"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
export TILETUNE_CACHE_DIR="$WORK/cubins"

nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$WORK/gpu.txt"
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "host cores: $(nproc), GPUs: $GPUS, shapes: $(echo $SHAPES)${BUDGET:+, budget $BUDGET per shape}" | tee -a "$WORK/gpu.txt"

shape_args=()
for shape in $SHAPES; do shape_args+=(--shape "$shape"); done
budget_args=()
[ -n "$BUDGET" ] && budget_args=(--budget "$BUDGET")

BEGIN=$(date +%s)
declare -A seconds
tune() {  # NAME DEVICES: an exhaustive tune into $WORK/NAME.db, its output in NAME.txt and NAME.log
  local name=$1 devices=$2
  local start=$(date +%s%N)
  "$BIN" tune kernels_src/warp_tiled.cu "${shape_args[@]}" "${budget_args[@]}" --devices "$devices" \
    --db "$WORK/$name.db" >"$WORK/$name.txt" 2>"$WORK/$name.log"
  local status=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  seconds[$name]=$((ms / 1000))
  printf '%s (--devices %s): exit %d after %d.%03d s\n' "$name" "$devices" "$status" $((ms / 1000)) \
    $((ms % 1000)) | tee -a "$WORK/summary.txt"
}

tune all-cold all
tune one-warm 0
tune all-warm all
if [ "$COLD" = 1 ]; then
  estimate=$(( ${seconds[one-warm]} + ${seconds[all-cold]} - ${seconds[all-warm]} ))
  if (( $(date +%s) - BEGIN + estimate < LIMIT )); then
    rm -rf "$TILETUNE_CACHE_DIR"
    tune one-cold 0
  else
    echo "one-cold: skipped, about $estimate s more would pass ${LIMIT} s" | tee -a "$WORK/summary.txt"
  fi
fi
if [ -n "$TESTS" ]; then
  "$TESTS/devices_cli_tests" --gtest_filter='*Gpu*' >"$WORK/gtest-devices.txt" 2>&1
  echo "devices_cli_tests on the GPUs: exit $? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$WORK/gtest-devices.txt" | tr '\n' ' '))" \
    | tee -a "$WORK/summary.txt"
fi

tar czf "$OUT/gpu-devices.tgz" -C "$WORK" --exclude=cubins . && cp "$WORK/summary.txt" "$OUT/"

echo
echo "== summary"; cat "$WORK/gpu.txt" "$WORK/summary.txt"
for run in one-cold all-cold one-warm all-warm; do
  [ -f "$WORK/$run.txt" ] || continue
  echo "== $run"; grep -E "^(wall|time by stage|settled|device [0-9]+ by stage)" "$WORK/$run.txt"
  sed -n '/^device /,/^$/p' "$WORK/$run.txt"
done
python3 - "$WORK" "$GPUS" <<'EOF'
import re, sqlite3, statistics, sys
work, gpus = sys.argv[1], int(sys.argv[2])

def rate(run):  # configurations per second, from tune's "wall" line
  try:
    text = open(f"{work}/{run}.txt").read()
  except OSError:
    return None
  found = re.search(r"^wall ([0-9.]+) s, ([0-9.]+) configurations/s", text, re.M)
  return (float(found.group(1)), float(found.group(2))) if found else None

def times(run):  # (shape, config) -> median ms of every ok result
  db = sqlite3.connect(f"{work}/{run}.db")
  rows = db.execute("""SELECT s.m || 'x' || s.n || 'x' || s.k, r.config, r.median_ms, r.detail
                       FROM results r JOIN shapes s ON s.id = r.shape_id WHERE r.status = 'ok'""")
  return {(shape, config): (ms, detail) for shape, config, ms, detail in rows}

print(f"\n{'cache':<6} {'one GPU':>18} {'all ' + str(gpus) + ' GPUs':>18} {'ratio':>7}  target")
target = {2: 1.8, 4: 3.5}.get(gpus)
for cache in ("cold", "warm"):
  one, every = rate(f"one-{cache}"), rate(f"all-{cache}")
  if not one or not every:
    continue
  ratio = every[1] / one[1]
  verdict = "" if cache == "cold" or target is None else (">= %.1fx: %s" % (target, "met" if ratio >= target else "MISSED"))
  print(f"{cache:<6} {one[1]:>8.2f} cfg/s {one[0]:>4.0f}s {every[1]:>8.2f} cfg/s {every[0]:>4.0f}s {ratio:>6.2f}x  {verdict}")

one, every = times("one-warm"), times("all-warm")
print(f"\nwinners, warm tunes (each re-measured with the best few on one GPU):\n{'shape':<16} {'one GPU ms':>11} {'all GPUs ms':>12} {'ratio':>7}  same configuration")
for shape in sorted({s for s, _ in one}):
  best_one = min(((ms, c) for (s, c), (ms, _) in one.items() if s == shape), default=None)
  best_all = min(((ms, c) for (s, c), (ms, _) in every.items() if s == shape), default=None)
  if best_one and best_all:
    print(f"{shape:<16} {best_one[0]:>11.4f} {best_all[0]:>12.4f} {best_all[0] / best_one[0]:>7.3f}  "
          f"{'yes' if best_one[1] == best_all[1] else 'no: ' + best_all[1]}")

models = sqlite3.connect(f"{work}/all-warm.db").execute("SELECT name, COUNT(*) FROM gpus GROUP BY name").fetchall()
print("\nGPU rows with all GPUs: " + ", ".join(f"{name}: {rows}" for name, rows in models)
      + ("" if all(rows == 1 for _, rows in models) else "  (MORE THAN ONE ROW FOR A MODEL)"))

# Every configuration timed in both tunes, first pass only (the re-measured best few are left out):
# with all GPUs they were timed while the other GPUs timed and their fuzz pools ran.
ratios = [every[key][0] / one[key][0] for key in one.keys() & every.keys()
          if not one[key][1].startswith("re-measured") and not every[key][1].startswith("re-measured")]
if ratios:
  ratios.sort()
  q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
  print(f"\ncross-talk: {len(ratios)} configurations timed in both; time with all GPUs / with one: "
        f"median {statistics.median(ratios):.3f}, p10 {q(0.1):.3f}, p90 {q(0.9):.3f}")
EOF
