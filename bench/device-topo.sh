#!/usr/bin/env bash
# One call on a GPU machine (the lent nvidia-h200* kinds): build scalescope, run `scalescope topo` live and
# `nvidia-smi topo -m`, read that saved output back with `scalescope topo --from`, and check in the same call
# that the live link classes match nvidia-smi's (`--compare`). Prints a short table last. Outputs go to $OUT
# (default ./out): topo-live.txt/.json, nvidia-smi-topo.txt, topo-from-smi.txt/.json, nvidia-smi-q.txt, build.log,
# unit.log (8 files: at most 8 come back from a lent machine).
#
#   bench/device-topo.sh            # on the GPU machine, from the repository root
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh  # carried libraries and data, no NVLink multicast, nvcc on PATH

echo "== build"
device_build scalescope test_topo_corpus test_smi_topo_parser || exit 1
S=build-device/tools/scalescope
build-device/tests/test_smi_topo_parser > "$OUT/unit.log" 2>&1 && build-device/tests/test_topo_corpus >> "$OUT/unit.log" 2>&1
unit=$?

echo "== nvidia-smi"
nvidia-smi topo -m > "$OUT/nvidia-smi-topo.txt" 2>&1
smi=$?
cat "$OUT/nvidia-smi-topo.txt"
nvidia-smi -q -d PCIE,PERFORMANCE > "$OUT/nvidia-smi-q.txt" 2>&1
nvidia-smi nvlink -s >> "$OUT/nvidia-smi-q.txt" 2>&1

echo "== scalescope topo (live), compared with nvidia-smi topo -m"
$S topo --compare "$OUT/nvidia-smi-topo.txt" --out "$OUT/topo-live.json" > "$OUT/topo-live.txt" 2>&1
live=$?
cat "$OUT/topo-live.txt"

echo "== scalescope topo --from nvidia-smi-topo.txt"
$S topo --from "$OUT/nvidia-smi-topo.txt" --out "$OUT/topo-from-smi.json" > "$OUT/topo-from-smi.txt" 2>&1
from=$?
sed -n '/^link classes/,$p' "$OUT/topo-from-smi.txt"

echo "== summary"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
cmp_line=$(grep -m1 '^link classes: ' "$OUT/topo-live.txt" || echo "link classes: no comparison printed")
printf '%-44s %s\n' "check" "result"
printf '%-44s %s\n' "GPUs (nvidia-smi -L)" "$gpus"
printf '%-44s %s\n' "nvidia-smi topo -m" "$([ $smi -eq 0 ] && echo ok || echo "failed ($smi)")"
printf '%-44s %s\n' "parser + corpus unit tests" "$([ $unit -eq 0 ] && echo passed || echo FAILED)"
printf '%-44s %s\n' "scalescope topo --from (nvidia-smi's text)" "$([ $from -eq 0 ] && echo "exit 0" || echo "exit $from")"
printf '%-44s %s\n' "scalescope topo live vs nvidia-smi" "$([ $live -eq 0 ] && echo MATCH || echo "MISMATCH or error (exit $live)")"
echo "$cmp_line"
[ $smi -eq 0 ] && [ $unit -eq 0 ] && [ $from -eq 0 ] && [ $live -eq 0 ]
