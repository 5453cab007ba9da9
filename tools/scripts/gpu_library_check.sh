#!/usr/bin/env bash
# The runtime library's check on a GPU machine, in one call, against a database where warp_tiled
# is recorded at every shape of the suite: `tiletune bench` (it only measures), `tiletune export`
# of a bundle, library_bench (run's overhead over a direct launch, the first-call cost, the suite
# against cuBLAS through the library: its ratios beside bench's), the example client against the
# database and the bundle, and the GPU test binaries of a folder. Full logs go to $OUT (default
# ./gpu-library-out); a short table comes last, one line per step with its exit.
#
#   tools/scripts/gpu_library_check.sh DB [path/to/tiletune] [path/to/library_bench] [path/to/gemm_client]
#                              [folder of GPU test binaries]
#
# libtiletune.so is found in $LIB_DIR (default: tuner/runtime beside tiletune's tools/ folder), and
# with it the shared SQLite and Boost.Context it needs where the machine has none.
# STEPS picks steps (default: "bench export library client tests"); KERNEL the template.
set -uo pipefail
cd "$(dirname "$0")/../.."
DB=${1:?usage: tools/scripts/gpu_library_check.sh DB [tiletune] [library_bench] [gemm_client] [tests folder]}
BIN=${2:-build/tools/tiletune}
BENCH=${3:-build/tools/library_bench}
CLIENT=${4:-}
TESTS=${5:-}
OUT=${OUT:-gpu-library-out}
KERNEL=${KERNEL:-warp_tiled}
STEPS=${STEPS:-bench export library client tests}
LIB_DIR=${LIB_DIR:-$(dirname "$BIN")/../tuner/runtime}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$LIB_DIR:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
summary=()
ran=" "  # the steps of this call (an $OUT of an earlier call may hold others)
# step NAME PATTERN COMMAND...: runs COMMAND (at most 300 s) with its output in $OUT/NAME.txt and
# notes its exit, its time and its last line matching PATTERN (an extended regular expression).
step() {
  local name=$1 pattern=$2; shift 2
  local start=$SECONDS
  ran+="$name "
  timeout 300 "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  summary+=("$(printf '%-30s exit %3s %4ss  %s' "$name" "$rc" "$((SECONDS - start))" \
    "$(grep -E -- "$pattern" "$OUT/$name.txt" | tail -n 1 | cut -c1-110)")")
  return "$rc"
}
wants() { [[ " $STEPS " == *" $1 "* ]]; }

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/gpu.txt"
else
  echo "no nvidia-smi on this machine" | tee "$OUT/gpu.txt"
fi
echo "database $DB; libtiletune from $LIB_DIR; steps: $STEPS"
# libtiletune.so needs shared SQLite and Boost.Context, which a bare GPU machine may lack: carry
# them into $LIB_DIR. A missing one is named here rather than as the benchmark's exit 127.
for binary in "$BENCH" ${CLIENT:+"$CLIENT"}; do
  if [ -x "$binary" ] && missing=$(ldd "$binary" 2>/dev/null | grep 'not found'); then
    echo "$binary cannot start, libraries not found (add them to $LIB_DIR):"; echo "$missing"
  fi
done

if wants bench; then
  step bench 'geometric mean|^tiletune:' "$BIN" bench --db "$DB" --kernel "$KERNEL"
fi
if wants export; then
  rm -rf "$OUT/bundle"
  step export '.' "$BIN" export --db "$DB" --out "$OUT/bundle" --kernel "$KERNEL"
fi
if wants library; then
  bundle_args=()
  [ -d "$OUT/bundle" ] && bundle_args=(--bundle "$OUT/bundle")
  step library_bench 'run overhead|geomean, library|^library_bench:|error while loading' \
    "$BENCH" --db "$DB" --kernel "$KERNEL" "${bundle_args[@]}" --out "$OUT/library_bench.json"
fi
if wants client; then
  if [ -n "$CLIENT" ] && [ -x "$CLIENT" ]; then
    step client-db '.' "$CLIENT" "$DB" --kernel "$KERNEL"
    if [ -d "$OUT/bundle" ]; then step client-bundle '.' "$CLIENT" "$OUT/bundle" --kernel "$KERNEL"; fi
  else
    summary+=("$(printf '%-30s skipped: no example client binary given (%s)' client "${CLIENT:-none}")")
  fi
fi
if wants tests; then
  if [ -n "$TESTS" ] && [ -d "$TESTS" ]; then
    passed=0 failed=0 failures=""
    for t in "$TESTS"/*; do
      [ -f "$t" ] && [ -x "$t" ] || continue
      name=gtest-$(basename "$t")
      if step "$name" '^\[  (PASSED|FAILED)  \]' "$t"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1)) failures+=" $(basename "$t")"
      fi
    done
    summary+=("$(printf '%-30s %s binaries passed, %s failed%s' tests "$passed" "$failed" "${failures:+:$failures}")")
  else
    summary+=("$(printf '%-30s skipped: no folder of GPU test binaries given' tests)")
  fi
fi

for name in bench library_bench; do
  if [[ "$ran" == *" $name "* ]]; then echo; echo "== $name"; tail -n 24 "$OUT/$name.txt"; fi
done
for name in client-db client-bundle; do
  if [[ "$ran" == *" $name "* ]]; then echo; echo "== $name"; head -n 20 "$OUT/$name.txt"; fi
done
echo
printf '%s\n' "${summary[@]}"
