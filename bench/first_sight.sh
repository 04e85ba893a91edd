#!/usr/bin/env bash
# First-sight score of a batch of diagnosis cases (issue #36): runs `scalescope analyze` on every evidence file of
# each case folder (everything but case.md), as a user would, and compares the primary cause with the id the batch's
# INDEX.md gives ("| case-id | `cause-id` | …" rows). Prints one line per case and the total; writes each case's
# JSON under OUT (default: a temporary directory).
#   usage: bench/first_sight.sh SCALESCOPE_BINARY BATCH_DIR [OUT_DIR]
set -euo pipefail
bin=${1:?usage: bench/first_sight.sh SCALESCOPE_BINARY BATCH_DIR [OUT_DIR]}
batch=${2:?usage: bench/first_sight.sh SCALESCOPE_BINARY BATCH_DIR [OUT_DIR]}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
hits=0; total=0; none=0; refused=0
while IFS=$'\t' read -r id want; do
  dir="$batch/$id"
  [ -d "$dir" ] || { echo "MISSING  $id (no folder)"; continue; }
  mapfile -t files < <(find "$dir" -maxdepth 1 -type f ! -name case.md | sort)
  total=$((total + 1))
  rc=0
  "$bin" analyze "${files[@]}" --out "$out/$id.json" > "$out/$id.txt" 2>&1 || rc=$?
  got=$(python3 -c 'import json,sys
try:
    d=json.load(open(sys.argv[1])); p=(d.get("diagnosis") or {}).get("primary")
    print(p["cause"] if p else "none")
except Exception: print("(no json)")' "$out/$id.json" 2>/dev/null || echo "(no json)")
  [ "$got" = none ] && none=$((none + 1))
  grep -q "not a recognised input" "$out/$id.txt" && refused=$((refused + 1))
  if [ "$got" = "$want" ]; then hits=$((hits + 1)); mark=pass; else mark=MISS; fi
  printf '%-5s %-62s expected %-26s got %s (exit %s)\n' "$mark" "$id" "$want" "$got" "$rc"
done < <(grep -oE '^\|\s*[A-Za-z0-9._-]+\s*\|\s*`[a-z0-9-]+`' "$batch/INDEX.md" | sed -E 's/^\|\s*([^ |]+)\s*\|\s*`([^`]+)`/\1\t\2/')
echo "first sight: $hits of $total named the expected primary cause; $none answered none; $refused with a file refused as not a recognised input (JSON and text under $out)"
