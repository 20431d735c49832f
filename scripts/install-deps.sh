#!/usr/bin/env bash
# Installs the Debian 12 packages tpusim needs to build, test and benchmark. Idempotent: packages that are
# already present are skipped by apt-get. Must run as root (or through sudo).
#   bash scripts/install-deps.sh           the build, test and benchmark packages
#   bash scripts/install-deps.sh --slurm   only the one-node Slurm cluster of scripts/ci-slurm.sh (CI)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libsystemc-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libboost-graph-dev libcli11-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  graphviz python3
)
if [[ "${1:-}" == --slurm ]]; then
  # Slurm's controller, node daemon and clients, and munge for its authentication: tpusim needs none of them;
  # CI uses them to run a sweep as a real job array.
  packages=(slurmctld slurmd slurm-client munge)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
