#!/usr/bin/env bash
# One-stop set-up for a fresh Debian 12 machine (run as root, or with sudo available):
#   bash scripts/setup.sh        install packages, build, run the default scenario (quickstart)
#   bash scripts/setup.sh test   install packages, build, run a sweep as a Slurm job array on a one-node
#                                cluster (scripts/ci-slurm.sh), then the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-run}"
case "$mode" in
  run|test) ;;
  *) echo "usage: bash scripts/setup.sh [run|test]" >&2; exit 2 ;;
esac

bash scripts/install-deps.sh

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"

if [[ "$mode" == run ]]; then
  ./build/tools/tpusim run quickstart
else
  # A sweep as a real Slurm job array on a one-node cluster started and stopped by the script (before ctest,
  # so that ctest's summary stays the last lines of the output).
  bash scripts/ci-slurm.sh build/tools/tpusim
  ctest --test-dir build -j "$jobs" --output-on-failure
fi
