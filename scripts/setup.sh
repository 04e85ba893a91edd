#!/usr/bin/env bash
# Installs what scalescope needs on a fresh Debian 12 or Ubuntu 24.04 machine (as root, or with sudo).
# Packages already present are left alone; on a machine without apt-get it only checks and reports.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin          # CPU ranks (MPI) and multi-node GPU bootstrap
  libopenblas-dev                     # CPU GEMMs of the fp32 reference model
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwloc-dev zlib1g-dev libsimdjson-dev
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

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get is not available; please install: ${missing[*]}" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
