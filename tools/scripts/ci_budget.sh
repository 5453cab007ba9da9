#!/usr/bin/env bash
# Where CI's time goes on this machine (no GPU needed), as a table: the build from an empty build
# folder (the tiletune binary, then the rest), the main job's no-GPU path once built from an empty
# kernel cache, ctest (its total and the slowest tests), and the CPU fuzz per configuration of each
# shipped template from an empty cache (its covering sample, 40 cases each).
#
#   [STEPS="build main ctest fuzz"] [BUILD_DIR=DIR] tools/scripts/ci_budget.sh [SCRATCH]
#
# Everything is built and cached under SCRATCH (default: a new folder in $TMPDIR), never in ./build
# or the user's caches; without the build step, BUILD_DIR names a build folder to measure instead. A benchmark, not a test: it prints what it measured and fails only when a
# step fails. The whole of it takes about as long as CI.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
steps=${STEPS:-build main ctest fuzz}
scratch=${1:-$(mktemp -d "${TMPDIR:-/tmp}/tiletune-ci-budget.XXXXXX")}
mkdir -p "$scratch"
build=${BUILD_DIR:-$scratch/build}
rows=()
row() { rows+=("$(printf '%-58s %9s' "$1" "$2")"); }
# Seconds since a start taken as start=$EPOCHREALTIME, to a tenth.
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
failed=0

if [[ " $steps " == *" build "* ]]; then
  build="$scratch/build"
  rm -rf "$build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" \
    >"$scratch/cmake.log" 2>&1 || { echo "ci_budget: cmake failed: $scratch/cmake.log" >&2; exit 1; }
  start=$EPOCHREALTIME
  cmake --build "$build" --target tiletune >"$scratch/build.log" 2>&1 || failed=1
  row "build: the tiletune binary, empty build folder" "$(seconds_since "$start") s"
  start=$EPOCHREALTIME
  cmake --build "$build" >>"$scratch/build.log" 2>&1 || failed=1
  row "build: the rest (libraries, tests, examples)" "$(seconds_since "$start") s"
fi
[ -x "$build/tools/tiletune" ] || { echo "ci_budget: no $build/tools/tiletune: run the build step" >&2; exit 1; }
tiletune="$build/tools/tiletune"

if [[ " $steps " == *" main "* ]]; then
  # The main job's steps as tools/main_job.sh runs them, on the scratch build, an empty cache.
  export XDG_CACHE_HOME="$scratch/main-cache"
  rm -rf "$XDG_CACHE_HOME"
  templates=(kernels_src/*.cu)
  start=$EPOCHREALTIME
  "$tiletune" compile "${templates[@]}" --arch sm_90 --cover --seed 1 >"$scratch/main-compile.log" 2>&1 &
  compile=$!
  "$tiletune" fuzz "${templates[@]}" --backend cpu --cases 40 --cover --seed 1 >"$scratch/main-fuzz.log" 2>&1 || failed=1
  wait "$compile" || failed=1
  row "main job: covering sample, NVRTC compile beside CPU fuzz" "$(seconds_since "$start") s"
  start=$EPOCHREALTIME
  "$tiletune" tune "${templates[@]}" --backend cpu --shape 96x72x80 --strategy random --budget 2 --cases 20 \
    --seed 1 --db "$scratch/main.db" >"$scratch/main-tune.log" 2>&1 || failed=1
  "$tiletune" query --db "$scratch/main.db" --shape 96x72x80 >>"$scratch/main-tune.log" 2>&1 || failed=1
  row "main job: CPU tune of every template and a query" "$(seconds_since "$start") s"
  unset XDG_CACHE_HOME
fi

if [[ " $steps " == *" ctest "* ]]; then
  export XDG_CACHE_HOME="$scratch/ctest-cache"
  rm -rf "$XDG_CACHE_HOME"
  start=$EPOCHREALTIME
  CI=true ctest --test-dir "$build" -j "$(nproc)" --output-junit "$scratch/ctest.xml" >"$scratch/ctest.log" 2>&1 || failed=1
  row "ctest -j$(nproc), empty kernel caches: $(tail -n 40 "$scratch/ctest.log" | grep -o '[0-9]*% tests passed.*')" \
      "$(seconds_since "$start") s"
  # The slowest tests, from the JUnit report.
  while read -r time name; do
    row "  $name" "$(printf '%.0f s' "$time")"
  done < <(sed -nE 's/.*<testcase name="([^"]*)".*time="([0-9.]+)".*/\2 \1/p' "$scratch/ctest.xml" | sort -rn | head -n 15)
  unset XDG_CACHE_HOME
fi

if [[ " $steps " == *" fuzz "* ]]; then
  for template in kernels_src/*.cu; do
    export XDG_CACHE_HOME="$scratch/fuzz-cache-$(basename "$template" .cu)"
    rm -rf "$XDG_CACHE_HOME"
    start=$EPOCHREALTIME
    "$tiletune" fuzz "$template" --backend cpu --cases 40 --cover --seed 1 >"$scratch/fuzz-$(basename "$template").log" 2>&1 ||
      failed=1
    elapsed=$(seconds_since "$start")
    count=$(sed -nE 's/^([0-9]+) configurations passed.*/\1/p' "$scratch/fuzz-$(basename "$template").log")
    row "CPU fuzz, empty cache: $(basename "$template" .cu) ($count configurations)" \
        "$(awk -v s="$elapsed" -v n="${count:-0}" 'BEGIN { printf "%.2f s/config", n ? s / n : 0 }')"
  done
  unset XDG_CACHE_HOME
fi

echo
echo "CI budget on $(nproc) cores ($(date -u '+%Y-%m-%d %H:%M UTC')); logs in $scratch"
printf '%s\n' "${rows[@]}"
exit "$failed"
