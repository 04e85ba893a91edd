#!/usr/bin/env bash
# Installs what scalescope needs on a fresh Debian 12 or Ubuntu 24.04 machine (as root, or with sudo).
# Packages already present are left alone. apt's own output goes to build/setup.log and is shown only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin          # CPU ranks (MPI) and multi-node GPU bootstrap
  libopenblas-dev                     # CPU GEMMs of the fp32 reference models
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  libhwloc-dev                        # scalescope topo: NUMA nodes, CPU sets, PCI tree
  libsimdjson-dev zlib1g-dev          # scalescope analyze: Kineto traces (.json, .json.gz)
  fortunes                            # the default training text: /usr/share/games/fortunes
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

command="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get is not available; install these packages by other means: ${missing[*]}" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "setup: these packages are missing: ${missing[*]}" >&2
    echo "setup: run as root (or ask an administrator):  $command" >&2
    echo "setup: without 'fortunes', pass your own text with --data FILE|DIR or set SCALESCOPE_DATA;" >&2
    echo "       with every library present, scripts/build.sh builds without root." >&2
    exit 1
  fi
fi

mkdir -p build
echo "setup: installing ${missing[*]} (log: build/setup.log)"
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
     > build/setup.log 2>&1; then
  tail -30 build/setup.log >&2
  echo "setup: apt-get failed (full log: build/setup.log)" >&2
  exit 1
fi
echo "setup: done"
