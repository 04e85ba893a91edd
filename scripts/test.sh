#!/usr/bin/env bash
# README quick start, command 2: install, build, and run the whole test suite (unit and integration; GPU
# tests skip with their reason when no GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure "$@"
