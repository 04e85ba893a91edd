#!/usr/bin/env bash
# Configures and builds scalescope in ./build (Ninja). The CUDA/NCCL backend is built when nvcc is found
# (PATH or /usr/local/cuda/bin); otherwise a CPU-only build. Extra arguments go to cmake. The build's output
# goes to build/build.log and is shown only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
mkdir -p build
echo "build: configuring and compiling into build/ (about 8.5 minutes on 2 cores with nvcc, 4 without; log: build/build.log)"
# Ninja's [done/total] counter every minute, so a long build is not silent.
( while sleep 60 > /dev/null 2>&1; do  # sleep must not hold stdout open past the kill
    step=$(tail -c 4096 build/build.log 2>/dev/null | grep -o '\[[0-9]*/[0-9]*\]' | tail -1)
    [ -n "$step" ] && echo "build: $step steps done"
  done ) &
progress=$!
trap 'kill $progress 2>/dev/null' EXIT
if ! { cmake -S . -B build -G Ninja "$@" && cmake --build build; } > build/build.log 2>&1; then
  grep -E "error|Error|FAILED" build/build.log | head -20 >&2 || true
  tail -20 build/build.log >&2
  echo "build: failed (full log: build/build.log)" >&2
  exit 1
fi
grep -o "scalescope: CUDA/NCCL backend [A-Z]*" build/build.log | tail -1 | sed 's/^/build: /'
grep -o "scalescope: cuDNN fused attention .*" build/build.log | tail -1 | sed 's/^/build: /'
