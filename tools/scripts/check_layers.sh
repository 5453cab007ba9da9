#!/usr/bin/env bash
# The layers of the source tree, bottom to top, and every #include between its folders checked
# against them: a folder may include its own files and those of a lower floor, never a higher one
# or another room of its floor. Prints the folder-to-folder include counts, then each arrow that
# breaks the order, and exits 1 when there is one.
#   tools/scripts/check_layers.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"

# floor of each folder (the longest listed prefix of a file's path names its room)
floors=(
  "0 tuner/runtime/include"  # the public API's types (Precision), which the core shares
  "1 tuner/system"
  "1 tuner/core"
  "2 tuner/backend"
  "3 tuner/backend/gpu"
  "3 tuner/backend/cpu"
  "4 fuzz"
  "4 db"
  "4 tuner/search"
  "4 tuner/profiling"
  "5 tuner/pipeline"
  "5 tuner/runtime"
  "6 tools/cli"     # the command line's helpers, which the bench programs use too
  "7 tools/labs"
  "7 tools/bench"
  "8 tools/report"
  "8 tools/fuzzing"
  "9 tools/commands"
  "10 tools"
)

room_of() {  # the listed folder a path lies in
  local path=$1 best="" entry folder
  for entry in "${floors[@]}"; do
    folder=${entry#* }
    if [[ $path == "$folder"/* && ${#folder} -gt ${#best} ]]; then best=$folder; fi
  done
  echo "$best"
}
floor_of() {
  local entry
  for entry in "${floors[@]}"; do [[ ${entry#* } == "$1" ]] && { echo "${entry%% *}"; return; }; done
  echo "?"
}

declare -A count
broken=0
while IFS=: read -r file _ included; do
  from=$(room_of "$file"); to=$(room_of "$included")
  [[ -z $from || -z $to || $from == "$to" ]] && continue
  count["$from -> $to"]=$(( ${count["$from -> $to"]:-0} + 1 ))
done < <(find tuner fuzz db tools -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.in' \) |
         xargs grep -HnoE '#include "(tuner|fuzz|db|tools)/[^"]+"' |
         sed -E 's/#include "([^"]+)"/\1/')

for arrow in $(printf '%s\n' "${!count[@]}" | sed 's/ -> /->/' | sort); do
  from=${arrow%%->*}; to=${arrow##*->}
  mark=""
  if (( $(floor_of "$from") <= $(floor_of "$to") )); then mark="  <- breaks the layers"; broken=$((broken + 1)); fi
  printf '%-20s -> %-22s %4d%s\n' "$from" "$to" "${count["$from -> $to"]}" "$mark"
done
if ((broken)); then
  echo "check_layers: $broken include arrow(s) run against the layers" >&2
  exit 1
fi
echo "check_layers: every include between folders runs down the layers"
