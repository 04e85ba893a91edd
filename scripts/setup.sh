#!/usr/bin/env bash
# Installs what scalescope needs on a fresh Debian 12 or Ubuntu 24.04 machine (as root, or with sudo).
# Packages already present are left alone. apt's own output goes to build/setup.log and is shown only on failure.
#
#   scripts/setup.sh                    # the packages below
#   scripts/setup.sh --cudnn-frontend   # also cudnn-frontend (header-only, NVIDIA's, pinned tag) for cuDNN's fused
#                                       # attention on GPUs: cloned into ~/.cache/scalescope, where CMake looks;
#                                       # needs git, network, and cuDNN 9 itself (cudnn.h, libcudnn: NVIDIA's
#                                       # packages, or pip's nvidia-cudnn-cu13 with -DCUDNN_ROOT=its directory)
set -euo pipefail
cd "$(dirname "$0")/.."

CUDNN_FRONTEND_TAG=v1.23.0  # CMakeLists.txt's frontend_pinned: it looks for this tag's directory
with_cudnn_frontend=0
for arg in "$@"; do
  case $arg in
    --cudnn-frontend) with_cudnn_frontend=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option '$arg' (the only option is --cudnn-frontend; --help says more)" >&2; exit 2 ;;
  esac
done

# Clones cudnn-frontend's pinned tag (headers only are used) unless already there. The clone goes to a temporary
# directory first (removed on any exit), so an interrupted clone never looks complete; a directory left without
# the header (a partial copy) is replaced. Run it as the user who builds: the cache is that user's.
fetch_cudnn_frontend() {
  local dest="${XDG_CACHE_HOME:-$HOME/.cache}/scalescope/cudnn-frontend-${CUDNN_FRONTEND_TAG#v}"
  if [ -f "$dest/include/cudnn_frontend.h" ]; then
    echo "setup: cudnn-frontend ${CUDNN_FRONTEND_TAG} present in $dest"
    return 0
  fi
  command -v git >/dev/null 2>&1 || { echo "setup: --cudnn-frontend needs git (install it, or clone NVIDIA/cudnn-frontend ${CUDNN_FRONTEND_TAG} yourself and pass -DCUDNN_FRONTEND_ROOT=DIR)" >&2; return 1; }
  mkdir -p "$(dirname "$dest")"
  tmp=$(mktemp -d "$(dirname "$dest")/.cudnn-frontend.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "setup: cloning NVIDIA/cudnn-frontend ${CUDNN_FRONTEND_TAG} into $dest"
  if ! git clone -q --depth 1 --branch "$CUDNN_FRONTEND_TAG" https://github.com/NVIDIA/cudnn-frontend.git "$tmp/src"; then
    echo "setup: cloning cudnn-frontend failed (network?); without it the build uses this project's attention kernels" >&2
    echo "       (or clone NVIDIA/cudnn-frontend ${CUDNN_FRONTEND_TAG} elsewhere and run scripts/build.sh -DCUDNN_FRONTEND_ROOT=DIR)" >&2
    return 1
  fi
  [ -f "$tmp/src/include/cudnn_frontend.h" ] || { echo "setup: the clone has no include/cudnn_frontend.h" >&2; return 1; }
  if [ -e "$dest" ]; then
    echo "setup: replacing $dest, which has no include/cudnn_frontend.h"
    rm -rf "$dest"
  fi
  mv "$tmp/src" "$dest"
}

# The headers first: they need no root, so a user without it still gets them.
if [ "$with_cudnn_frontend" -eq 1 ]; then fetch_cudnn_frontend || exit 1; fi

packages=(
  build-essential cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin          # CPU ranks (MPI) and multi-node GPU bootstrap
  libopenblas-dev                     # CPU GEMMs of the fp32 reference models
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  libhwloc-dev                        # scalescope topo: NUMA nodes, CPU sets, PCI tree
  libsimdjson-dev zlib1g-dev          # scalescope analyze: Kineto traces (.json, .json.gz)
  fortunes                            # the default training text: /usr/share/games/fortunes
  python3-wheel python3-venv          # scripts/wheel.sh packs the pip wheel; its test installs it in a venv (the
                                      # venv's own pip comes from ensurepip: python3-venv, no python3-pip needed)
)

# Wanted, not required: without it the tests that run genuine PyTorch jobs skip and say why.
optional=(
  python3-torch                       # scalescope profile's tests: genuine DDP jobs on CPU ranks (gloo)
  chromium                            # the HTML report's test renders the page headless (--html)
  time                                # bench/startup.py: the peak memory of a start (GNU time -f %M)
  iproute2                            # the two-host mpirun test: two network namespaces (tests/multinode)
)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
missing_optional=()
for p in "${optional[@]}"; do installed "$p" || missing_optional+=("$p"); done

# Optional packages: one attempt as root (or with password-less sudo); a failure (no network, no root) is a note.
install_optional() {
  [ ${#missing_optional[@]} -eq 0 ] && return 0
  local s=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then s="sudo"; else
      echo "setup: optional, not installed (no root): ${missing_optional[*]} — the tests that need it skip"; return 0; fi
  fi
  mkdir -p build
  if { $s apt-get update -qq && DEBIAN_FRONTEND=noninteractive $s apt-get install -y -qq --no-install-recommends \
         "${missing_optional[@]}"; } > build/setup-optional.log 2>&1; then
    echo "setup: installed ${missing_optional[*]}"
  else
    echo "setup: optional, could not be installed: ${missing_optional[*]} (build/setup-optional.log) — the tests that need it skip"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  install_optional
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
install_optional
