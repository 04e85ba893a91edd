#!/usr/bin/env bash
# Issue #30, item 2, one call on a several-GPU machine: `predict` checked against runs made after the prediction.
# For each configuration: the 1-GPU run (train --out) and the link's all-reduce sweep at N (comm --out) first, the
# prediction written to $OUT/predicted-*.json before the N-GPU run starts, then the N-GPU run, and predicted
# against measured with the error. Configurations beyond those fitted on: gpt-350m, --bucket-cap-mb 100, three
# GPUs, NCCL_P2P_DISABLE=1. At one GPU (a one-GPU machine) only the 1-GPU runs and the predictions are made: the
# dry run the issue asks for.
#   bench/device-predict-check.sh     (from the repository root; CONFIGS="model:N:cap:p2p …")
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
device_build scalescope || exit 1
EXE=build-device/tools/scalescope
GPUS=$(nvidia-smi -L | wc -l)
# model:ranks:bucket-cap-MiB:p2p(on|off)
CONFIGS=${CONFIGS:-"tiny-14m:2:25:on gpt2-124m:2:25:on gpt2-124m:2:25:off gpt2-124m:2:100:on gpt-350m:2:25:on gpt2-124m:3:25:on gpt2-124m:4:25:on gpt-1.3b:2:25:on"}
echo "GPUs: $GPUS; build ${SECONDS}s"
declare -A ONE
for c in $CONFIGS; do
  IFS=: read -r model n cap p2p <<< "$c"
  env=(); [ "$p2p" = off ] && env=(NCCL_P2P_DISABLE=1)
  key="$model-$cap"
  if [ -z "${ONE[$key]:-}" ]; then  # the 1-GPU run of this model and bucket cap
    $EXE train --backend gpu --model "$model" --bucket-cap-mb "$cap" -q --out "$OUT/one-$key.json" > "$OUT/one-$key.txt" 2>&1 ||
      { echo "1-GPU $key failed"; continue; }
    ONE[$key]=1
  fi
  name="$model-n$n-cap$cap-p2p$p2p"
  link="H200:NV18"
  if [ "$n" -le "$GPUS" ] && [ "$n" -ge 2 ]; then
    env "${env[@]}" $EXE comm --backend gpu -g "$n" -b 8 -e 1G -f 2 -q --out "$OUT/comm-n$n-p2p$p2p.json" > /dev/null 2>&1 &&
      link="$OUT/comm-n$n-p2p$p2p.json"
  fi
  $EXE predict "$OUT/one-$key.json" --link "$link" --gpus "$n" --out "$OUT/predicted-$name.json" > "$OUT/predicted-$name.txt" 2>&1 ||
    { echo "predict $name failed: $(tail -2 "$OUT/predicted-$name.txt")"; continue; }
  if [ "$n" -le "$GPUS" ]; then  # measured after the prediction was written
    env "${env[@]}" $EXE train --backend gpu --model "$model" --bucket-cap-mb "$cap" -n "$n" -q --out "$OUT/measured-$name.json" \
      > "$OUT/measured-$name.txt" 2>&1 || echo "measured $name failed"
  fi
  echo "$name done (${SECONDS}s)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("\n| configuration | link | predicted ms | measured ms | error |")
print("|---|---|---:|---:|---:|")
for p in sorted(glob.glob(f"{out}/predicted-*.json")):
    name = os.path.basename(p)[len("predicted-"):-len(".json")]
    j = json.load(open(p))
    pred = j["predictions"][0]["step_ms"]
    m = f"{out}/measured-{name}.json"
    meas = None
    if os.path.exists(m):
        t = json.load(open(m))
        meas = t["step_s"]["trimmed_mean"] * 1e3
    err = f"{100 * (pred / meas - 1):+.1f} %" if meas else "not run (too few GPUs)"
    link = j["link"][:40]
    print(f"| {name} | {link} | {pred:.2f} | {f'{meas:.2f}' if meas else '–'} | {err} |")
PY
echo "total: ${SECONDS}s"
