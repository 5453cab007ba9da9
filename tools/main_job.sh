#!/usr/bin/env bash
# The main job on a fresh machine: set up (the build packages and the tiletune binary only), then,
# on the shipped templates (kernels_src/*.cu)
#  - with a GPU: tune them for 4096x4096x4096 and print the best configurations;
#  - without one (or with --no-gpu, as CI runs it): say so, then show the whole tool working on a
#    covering sample (tiletune's --cover: a few configurations per template that together take
#    every value of every parameter, drawn anew each run from the printed seed,
#    $TILETUNE_MAIN_JOB_SEED to repeat one): compile it with NVRTC for sm_90, fuzz it on the CPU
#    backend (40 cases each), tune every template for a small shape on the CPU backend into a
#    database and query it. --all compiles and fuzzes every configuration instead (715; about
#    half an hour on 2 cores), which the tests do in CI (but warp_tiled's NVRTC compile, which
#    they take a pairwise sample of).
# The last line is a one-line summary. The exit status is the worst of the steps': 0 when every
# step passed, else the failing step's (1 findings, 2 bad input, 3 no NVRTC...).
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
force_cpu=0
every=0
for argument in "$@"; do
  case "$argument" in
    --no-gpu) force_cpu=1 ;;
    --all) every=1 ;;
    *) echo "tiletune main job: unknown argument '$argument' (usage: tools/main_job.sh [--no-gpu] [--all])" >&2
       exit 2 ;;
  esac
done
cases=40
seed=${TILETUNE_MAIN_JOB_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
tune_shape=96x72x80

bash tools/setup.sh --tiletune-only || exit $?
tiletune=build/tools/tiletune
templates=(kernels_src/*.cu)
minutes() { awk -v s=$((SECONDS - started)) 'BEGIN { printf "%.1f min", s / 60 }'; }

if ((!force_cpu)); then
  "$tiletune" tune "${templates[@]}" --shape 4096x4096x4096
  status=$?
  if [ "$status" -ne 3 ]; then  # 3: no GPU here (tools/cli/command_line.h)
    verdict=$([ "$status" -eq 0 ] && echo passed || echo "FAILED (exit $status)")
    echo "main job (GPU): tuned ${#templates[@]} shipped templates for 4096x4096x4096: $verdict in $(minutes)"
    exit "$status"
  fi
fi

if ((every)); then
  selection=()
  what="every configuration"
  echo "tiletune: without a GPU, compiling every configuration and fuzzing them on the CPU instead"
else
  selection=(--cover --seed "$seed")
  what="a covering sample (seed $seed)"
  echo "tiletune: without a GPU, checking $what of each template on the CPU instead" \
       "(TILETUNE_MAIN_JOB_SEED=$seed repeats it)"
fi
logs=$(mktemp -d "${TMPDIR:-/tmp}/tiletune-main-job.XXXXXX") || exit 3
compile_pid=""
trap '[ -n "$compile_pid" ] && kill "$compile_pid" 2>/dev/null; rm -rf "$logs"' EXIT
worst=0
# Remembers the worst exit status.
note() { (($1 > worst)) && worst=$1; return 0; }
# The numbers of the last line of $logs/NAME matching the sed expression, or "?".
count() { local n; n=$(sed -nE "s/$2/\\1/p" "$logs/$1" | tail -n 1); echo "${n:-?}"; }

# The NVRTC compile runs beside the CPU fuzz (whose host compiles run one at a time), so that
# both cores work; its table is printed when both are done.
"$tiletune" compile "${templates[@]}" --arch sm_90 "${selection[@]}" >"$logs/compile" 2>&1 &
compile_pid=$!
"$tiletune" fuzz "${templates[@]}" --backend cpu --cases "$cases" "${selection[@]}" 2>&1 | tee "$logs/fuzz"
note "${PIPESTATUS[0]}"
wait "$compile_pid"
note $?
compile_pid=""
cat "$logs/compile"

compiled=$(count compile '^([0-9]+) configurations compiled for .*$')
compile_failed=$(count compile '^[0-9]+ configurations compiled for [^,]*, ([0-9]+) failed$')
passed=$(count fuzz '^([0-9]+) configurations passed, .*$')
failed=$(count fuzz '^[0-9]+ configurations passed, ([0-9]+) failed.*$')
skipped=$(count fuzz '^[0-9]+ configurations passed, [0-9]+ failed, ([0-9]+) skipped.*$')
# A step that ended without its summary line is unknown, never a pass.
for n in "$compiled" "$compile_failed" "$passed" "$failed" "$skipped"; do
  [ "$n" = "?" ] && ((worst == 0)) && worst=1
done
tuned=""
if ((!every)); then
  # The tuner end to end on the CPU backend: two configurations of each template (a random
  # search), each fuzzed and timed, the winners recorded and asked for.
  "$tiletune" tune "${templates[@]}" --backend cpu --shape "$tune_shape" --strategy random --budget 2 \
    --cases 20 --seed "$seed" --db "$logs/main_job.db" 2>&1 | tee "$logs/tune"
  note "${PIPESTATUS[0]}"
  "$tiletune" query --db "$logs/main_job.db" --shape "$tune_shape" 2>&1 | tee "$logs/query"
  note "${PIPESTATUS[0]}"
  settled=$(count tune '^settled: ([0-9]+) ok.*$')
  [ "$settled" = "?" ] && ((worst == 0)) && worst=1
  [ -s "$logs/query" ] || { ((worst == 0)) && worst=1; }
  tuned=" CPU tune of $tune_shape: $settled configurations recorded, the database queried;"
fi
names=$(for t in "${templates[@]}"; do basename "$t" .cu; done | paste -sd, -)
verdict=$([ "$worst" -eq 0 ] && echo passed || echo "FAILED (exit $worst)")
echo "main job (no GPU): $names: $what: NVRTC compiled $compiled configurations ($compile_failed failed)," \
     "CPU fuzz, $cases cases each: $passed passed, $failed failed, $skipped skipped;$tuned" \
     "$verdict in $(minutes)"
exit "$worst"
