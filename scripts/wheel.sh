#!/usr/bin/env bash
# A Python wheel of the build already compiled, for `pip install` into the environment that runs torchrun.
#   scripts/wheel.sh [BUILD_DIR] [OUT_DIR]     # defaults: build, BUILD_DIR/wheel; after scripts/build.sh
#   pip install build/wheel/scalescope-*.whl   # then `scalescope …` and `python -m scalescope …` in that environment
# Output: OUT_DIR/scalescope-<version>-py3-none-linux_<machine>.whl (its path and size on the last line). Inside it is
# what `cmake --install BUILD_DIR` lays out (stripped), at the same places relative to the prefix, so the installed
# CLI finds its GPU module, NCCL plugin and shim beside itself: .data/scripts/scalescope goes to the environment's
# bin/, .data/data/{lib/scalescope,share/scalescope/python,share/doc/scalescope} under its prefix; plus the small
# `scalescope` package of python/wheel (python -m scalescope). Compiles nothing: the version is the built CLI's
# `--version`; the platform tag is this machine's (manylinux is not claimed: the CLI links the system's Open MPI,
# OpenBLAS, hwloc … like the build, so the wheel is for this machine or one installed alike, scripts/setup.sh).
# Errors (exit 1): BUILD_DIR not configured or its CLI not built (run scripts/build.sh first), the install step
# failing (its log is shown), no Python with the wheel module (Debian: python3-wheel, scripts/setup.sh).
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
[ -d "$build" ] || { echo "wheel: no build directory '$build': run scripts/build.sh first" >&2; exit 1; }
build=$(cd "$build" && pwd)
out=${2:-$build/wheel}

if [ ! -f "$build/cmake_install.cmake" ] || [ ! -x "$build/tools/scalescope" ]; then
  echo "wheel: $build has no built scalescope CLI (tools/scalescope): run scripts/build.sh first" >&2
  exit 1
fi

# The packer: the first Python with the wheel module (python3-wheel), PYTHON when set.
py=""
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$candidate" > /dev/null 2>&1 && "$candidate" -m wheel version > /dev/null 2>&1; then
    py=$candidate
    break
  fi
done
[ -n "$py" ] || { echo "wheel: no Python with the wheel module found: install python3-wheel (scripts/setup.sh)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalescope_wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The install step, waiting for a build running in the same directory (scripts/build.sh's lock) so that a binary
# being linked is not packed half-written.
if [ -f "$build/.build.lock" ] && command -v flock > /dev/null; then
  exec 9< "$build/.build.lock"
  flock -s 9
fi
if ! cmake --install "$build" --prefix "$tmp/stage" > "$tmp/install.log" 2>&1; then
  cat "$tmp/install.log" >&2
  echo "wheel: cmake --install $build failed (above): run scripts/build.sh first" >&2
  exit 1
fi
exec 9<&-

stage=$tmp/stage
if ! version_line=$("$stage/bin/scalescope" --version 2>&1); then
  echo "wheel: the installed CLI does not run: $version_line" >&2
  exit 1
fi
version=$(echo "$version_line" | head -1 | awk '$1 == "scalescope" {print $2}')
[[ "$version" =~ ^[0-9]+(\.[0-9]+)*$ ]] || { echo "wheel: no version in '$version_line'" >&2; exit 1; }
tag=py3-none-linux_$(uname -m)

# The wheel's tree: the prefix's bin/ as .data/scripts, the rest of the prefix as .data/data, the package at the root.
tree=$tmp/tree
data=$tree/scalescope-$version.data
info=$tree/scalescope-$version.dist-info
mkdir -p "$data/scripts" "$data/data" "$info"
cp -p "$stage/bin/scalescope" "$data/scripts/scalescope"
for d in "$stage"/*; do
  [ "$(basename "$d")" = bin ] || cp -pr "$d" "$data/data/"
done
cp -r "$src/python/wheel/scalescope" "$tree/scalescope"
rm -rf "$tree/scalescope/__pycache__"
sed -i "s/^__version__ = .*/__version__ = \"$version\"/" "$tree/scalescope/__init__.py"

cat > "$info/METADATA" <<EOF
Metadata-Version: 2.1
Name: scalescope
Version: $version
Summary: measure, explain and predict data-parallel training scaling
Requires-Python: >=3.8
Description-Content-Type: text/markdown

scalescope measures data-parallel scaling, explains where the time beyond perfect scaling went and predicts what
more GPUs would give. This wheel installs the \`scalescope\` CLI into the environment's bin/ (beside torchrun),
its GPU module and NCCL profiler plugin into lib/scalescope/ and profile's Python shim into
share/scalescope/python/; \`scalescope profile -- torchrun --nproc_per_node 2 train.py\` then profiles a job
unmodified. Built for one machine's libraries (Open MPI, OpenBLAS, hwloc, CUDA's): see docs/install.md.
EOF
cat > "$info/WHEEL" <<EOF
Wheel-Version: 1.0
Generator: scalescope scripts/wheel.sh
Root-Is-Purelib: false
Tag: $tag
EOF

mkdir -p "$out"
"$py" -m wheel pack "$tree" -d "$out" > "$tmp/pack.log" 2>&1 || { cat "$tmp/pack.log" >&2; exit 1; }
whl=$out/scalescope-$version-$tag.whl
[ -f "$whl" ] || { cat "$tmp/pack.log" >&2; echo "wheel: $whl was not written" >&2; exit 1; }
echo "wheel: $whl ($(du -h "$whl" | cut -f1))"
