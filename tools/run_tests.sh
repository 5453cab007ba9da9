#!/usr/bin/env bash
# Sets up, builds and runs every test (ctest). Tests that need a GPU skip with a message here.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
