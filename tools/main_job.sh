#!/usr/bin/env bash
# The main job on a fresh machine: set up, then
#  - with a GPU: tune the shipped templates for 4096x4096x4096 and print the best configurations;
#  - without one: say so, compile every configuration with NVRTC and fuzz them all on the CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh || exit $?
tiletune=build/tools/tiletune

"$tiletune" tune kernels_src/*.cu --shape 4096x4096x4096
status=$?
[ "$status" -ne 3 ] && exit "$status"  # 3: no GPU here (tools/commands/command_line.h)
echo "tiletune: without a GPU, compiling every configuration and fuzzing them on the CPU instead"
"$tiletune" compile kernels_src/*.cu --arch sm_90 || exit $?
"$tiletune" fuzz kernels_src/*.cu --backend cpu --cases 40
