#!/usr/bin/env bash
# Configures and builds scalescope in ./build (Ninja). The CUDA/NCCL backend is built when nvcc is found
# (PATH or /usr/local/cuda/bin); otherwise a CPU-only build. Extra arguments go to cmake. The build's output
# goes to build/build.log and is shown only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help)
    echo "usage: scripts/build.sh [CMAKE_ARGUMENT...]   e.g. -DSCALESCOPE_CUDA=OFF, -DCUDNN_ROOT=DIR, -DSCALESCOPE_CUDNN=OFF"
    echo "Configures and builds scalescope into build/ (Ninja); the log goes to build/build.log."
    exit 0 ;;
esac
mkdir -p build
# One build at a time in build/: a second one would stop the first half-way (Ninja's lock) and overwrite its log.
exec 9> build/.build.lock
if ! flock -n 9; then
  echo "build: another build is running in build/; waiting for it to finish" >&2
  flock 9
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
if [ -f build/build.ninja ]; then  # an existing build: only what changed is compiled
  echo "build: updating build/ (log: build/build.log)"
else
  echo "build: configuring and compiling into build/ (first build: about 8.5 minutes on 2 idle cores with nvcc, 4 to 6 without; log: build/build.log)"
fi
# Ninja's [done/total] counter every minute, so a long build is not silent.
( while sleep 60 > /dev/null 2>&1; do  # sleep must not hold stdout open past the kill
    step=$(tail -c 4096 build/build.log 2>/dev/null | grep -o '\[[0-9]*/[0-9]*\]' | tail -1)
    [ -n "$step" ] && echo "build: $step steps done"
  done ) 9>&- &  # not holding the build lock: its sleep can outlive the build by a minute
progress=$!
trap 'kill $progress 2>/dev/null' EXIT
if ! { cmake -S . -B build -G Ninja "$@" && cmake --build build; } > build/build.log 2>&1 9>&-; then
  grep -E "error|Error|FAILED" build/build.log | head -20 >&2 || true
  tail -20 build/build.log >&2
  echo "build: failed (full log: build/build.log)" >&2
  exit 1
fi
# Summary lines the configure step printed; a CPU-only build prints no cuDNN line, which is no failure (a grep
# without a match would be the script's exit status under pipefail, and stop test.sh and doctor.sh).
grep -o "scalescope: CUDA/NCCL backend [A-Z]*" build/build.log | tail -1 | sed 's/^/build: /' || true
grep -o "scalescope: cuDNN fused attention .*" build/build.log | tail -1 | sed 's/^/build: /' || true
grep -o "scalescope: to build cuDNN's attention.*" build/build.log | tail -1 | sed 's/^scalescope: /build: /' || true
