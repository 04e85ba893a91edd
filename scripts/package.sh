#!/usr/bin/env bash
# The Debian package of the current build: build/scalescope_<version>_<arch>.deb (CPack, CMakeLists.txt).
#   scripts/package.sh            # after scripts/build.sh
#   sudo apt install ./build/scalescope_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target scalescope scalescope_nccl_profiler
(cd build && cpack -G DEB --config CPackConfig.cmake)
ls build/scalescope_*.deb
