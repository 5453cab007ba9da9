#!/usr/bin/env bash
# Our shared-memory wavefront counters against Nsight Compute's own Source Counters section, on a
# GPU machine: for the recorded winner of each shape (default 4096^3), `tiletune profile` stores
# shared_{ld,st}_{wavefronts,ideal_wavefronts,excessive_wavefronts}; ncu then profiles the same
# launch (tiletune profile-launch) with the SourceCounters section, whose rule states the excessive
# wavefronts it finds, and with the raw metrics our counters are made of (and the LDGSTS ones, to
# see whether asynchronous copies land in them). Full output in $OUT/counters-check.log.
#
#   tools/scripts/gpu_counters_check.sh path/to/tiletune DATABASE [TEMPLATE [MxNxK...]]
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$1 DB=$2 KERNEL=${3:-warp_tiled}
shift $(( $# < 3 ? $# : 3 ))
SHAPES=("$@")
[ ${#SHAPES[@]} -gt 0 ] || SHAPES=(4096x4096x4096)
OUT=${OUT:-gpu-counters-out}
mkdir -p "$OUT"
log=$OUT/counters-check.log
export PATH=$PATH:/usr/local/cuda/bin
raw=smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__sass_data_bytes_mem_shared_op_ld.sum
raw+=,smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__sass_data_bytes_mem_shared_op_st.sum
raw+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
raw+=,smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum,sm__sass_data_bytes_mem_shared_op_ldgsts.sum
raw+=,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum
raw+=,smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum

field() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -1; }
summary=()
for shape in "${SHAPES[@]}"; do
  json=$("$BIN" query --db "$DB" --kernel "$KERNEL" --shape "$shape" --exact --json)
  config=$(field config <<<"$json") hash=$(field template_hash <<<"$json")
  echo "== $KERNEL $config at $shape (version $hash)" | tee -a "$log"
  "$BIN" profile --db "$DB" --kernel "$KERNEL" --shape "$shape" --config "$config" >>"$log" 2>&1
  ours=$("$BIN" query --db "$DB" --kernel "$KERNEL" --shape "$shape" --exact --json)
  grep -E '"shared_|bank_conflicts' <<<"$ours" | tee -a "$log"
  launch=("$BIN" profile-launch --db "$DB" --kernel "$KERNEL" --template-hash "$hash" --config "$config"
          --shape "$shape" --launches 1)
  ncu --clock-control none -k "regex:$KERNEL" -c 1 --section SourceCounters --print-details all \
    "${launch[@]}" >"$OUT/source-counters-$shape.txt" 2>&1
  grep -iE 'excessive|wavefront|bank' "$OUT/source-counters-$shape.txt" | tee -a "$log"
  ncu --clock-control none -k "regex:$KERNEL" -c 1 --metrics "$raw" --print-units base \
    "${launch[@]}" 2>&1 | grep -E '__|sm__' | tee -a "$log"
  summary+=("$shape $(grep -oiE '[0-9,]+ excessive wavefronts' "$OUT/source-counters-$shape.txt" | head -2 | tr '\n' ' ')| ours: $(grep -oE '"shared_ld_excessive_wavefronts": *[0-9.e+]+|"shared_st_excessive_wavefronts": *[0-9.e+]+' <<<"$ours" | tr '\n' ' ')")
done
ncu --query-metrics 2>/dev/null | grep -iE 'shared' >"$OUT/shared-metrics.txt"
echo "== summary (ncu Source Counters rule | ours)"
printf '%s\n' "${summary[@]}"
