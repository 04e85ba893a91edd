#!/usr/bin/env bash
# Configures and builds scalescope in ./build (Release-with-debug-info, Ninja). The CUDA/NCCL backend is built
# when nvcc is found (PATH or /usr/local/cuda/bin); otherwise a CPU-only build. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
cmake -S . -B build -G Ninja "$@"
cmake --build build
