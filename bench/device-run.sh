#!/usr/bin/env bash
# Runs several bench/device-NAME.sh scripts in one call on a lent GPU machine, e.g.
#   bench/device-run.sh topo comm doctor
# Each script's outputs are packed into $OUT/NAME.tar.gz (a lent machine returns at most 8 files), and the last
# lines of its console output are printed.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/out}
mkdir -p "$FINAL"
for name in "$@"; do
  dir=$(mktemp -d)
  echo "######## bench/device-$name.sh"
  OUT=$dir bash "bench/device-$name.sh" > "$dir/console.log" 2>&1
  echo "(exit $?)"
  tail -n "${TAIL_LINES:-40}" "$dir/console.log"
  tar -czf "$FINAL/$name.tar.gz" -C "$dir" .
done
