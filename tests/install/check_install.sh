#!/usr/bin/env bash
# What `cmake --install` and the .deb put in place must work on its own: run from ctest with the build directory.
#   check_install.sh BUILD_DIR [deb]
# install: into a fresh prefix; the CLI answers, reads a fixture, and `profile` points the job at the installed shim
# and NCCL plugin (not the source tree's). deb: cpack builds the package; its content is unpacked and checked alike.
set -euo pipefail
build=$1
mode=${2:-install}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalescope_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$mode" = deb ]; then
  command -v dpkg-deb >/dev/null || { echo "dpkg-deb not found: the .deb check needs Debian's dpkg"; exit 77; }
  (cd "$build" && cpack -G DEB --config CPackConfig.cmake -B "$tmp/pkg" > "$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; exit 1; }
  deb=$(ls "$tmp"/pkg/scalescope_*.deb)
  dpkg-deb -I "$deb" | grep -E "Package|Version|Depends"
  dpkg-deb -x "$deb" "$tmp/root"
  prefix=$tmp/root/usr
else
  cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
  prefix=$tmp/prefix
fi
for f in bin/scalescope lib/scalescope/libscalescope-nccl-profiler.so share/scalescope/python/sitecustomize.py \
         share/scalescope/python/_scalescope_capture.py share/doc/scalescope/README.md share/doc/scalescope/profile.md; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
exe=$prefix/bin/scalescope
"$exe" --version
# The GPU module (CUDA builds): installed beside the plugin, and the installed binary loads that one.
if ! "$exe" --version | grep -q "built without CUDA"; then
  [ -e "$prefix/lib/scalescope/libscalescope-gpu.so" ] || { echo "missing after install: lib/scalescope/libscalescope-gpu.so"; exit 1; }
  "$exe" topo > "$tmp/topo.log" 2>&1 || true
  grep -q "GPU module $prefix/lib/scalescope/libscalescope-gpu.so" "$tmp/topo.log" ||
    { echo "the installed binary did not load the installed GPU module"; cat "$tmp/topo.log"; exit 1; }
fi
"$exe" analyze "$src/tests/fixtures/diagnosis/no-overlap/train.json" | grep -q "no-overlap" || { echo "analyze failed"; exit 1; }
# profile from the installed tree: the job's environment names the installed shim and plugin.
(cd "$tmp" && env -u SCALESCOPE_SHIM_DIR -u SCALESCOPE_NCCL_PLUGIN "$exe" profile --keep "$tmp/job" -- true > "$tmp/profile.log" 2>&1) || true
job=$tmp/job/job.json
[ -f "$job" ] || { cat "$tmp/profile.log"; echo "no job.json"; exit 1; }
grep -q "$prefix/share/scalescope/python" "$job" || { echo "profile did not use the installed shim"; cat "$job"; exit 1; }
grep -q "$prefix/lib/scalescope/libscalescope-nccl-profiler.so" "$job" || { echo "profile did not use the installed plugin"; cat "$job"; exit 1; }
echo "install ($mode) OK: $prefix"
