#!/usr/bin/env bash
# README quick start, command 1: install, build, and run `scalescope doctor` (arguments are passed on).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/tools/scalescope doctor "$@"
