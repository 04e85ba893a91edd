#!/usr/bin/env bash
# One call on a GPU machine (issue #5, flash attention): build the CLI and the attention benchmark, run the GPU
# tests that cover the fused kernels (FLASH_TESTS), train gpt2-124m through the DP engine eagerly and replayed
# from a CUDA graph, time one layer's attention (bench_attention_speed) and profile the fused kernels with Nsight
# Compute (clocks left alone: --clock-control none). Outputs in $OUT (default ./out): flash.txt (the summary
# printed last), ncu.txt (the profile's details) and logs.tar.gz.
#
#   bench/device-flash.sh                       # from the repository root on the GPU machine
#   FLASH_NCU=0 FLASH_TRAIN=0 bench/device-flash.sh   # tests and the attention benchmark only
#   FLASH_REPS=2 FLASH_GPT="gpt2-124m:16" bench/device-flash.sh
#       # the attention benchmark twice, and bench_gpt_speed for each preset:rows as many times
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
source bench/device-env.sh
SECONDS=0
log() { echo "== [${SECONDS}s] $*" | tee -a "$LOGS/steps.log"; }
TESTS=${FLASH_TESTS:-test_gpt_cuda test_step_graph}

log "build"
OUT=$LOGS device_build scalescope bench_attention_speed bench_gpt_speed $TESTS || exit 1
log "tests"
OUT=$LOGS run_gpu_tests $TESTS | tee "$OUT/flash.txt"
grep -hE "Failure|Expected|Which is|actual" "$LOGS"/test_*.txt | head -20

for rep in $(seq "${FLASH_REPS:-1}"); do
  log "attention alone, repetition $rep"
  build-device/bench/bench_attention_speed --runs 30 --json "$LOGS/attention-$rep.json" 2>&1 | tee -a "$OUT/flash.txt"
done
for spec in ${FLASH_GPT:-}; do
  for rep in $(seq "${FLASH_REPS:-1}"); do
    log "bench_gpt_speed $spec, repetition $rep"
    timeout 150 build-device/bench/bench_gpt_speed --model "${spec%%:*}" --batch "${spec##*:}" \
      --json "$LOGS/gpt-${spec%%:*}-$rep.json" 2>&1 | tail -1 | tee -a "$OUT/flash.txt"
  done
done

if [ "${FLASH_TRAIN:-1}" = 1 ]; then
  for mode in eager graph; do
    log "train gpt2-124m, $mode"
    extra=()
    [ $mode = graph ] && extra=(--cuda-graph)
    timeout 180 build-device/tools/scalescope train --backend gpu --world-size 1 --model gpt2-124m \
      --out "$LOGS/train-$mode.json" "${extra[@]}" > "$LOGS/train-$mode.txt" 2>&1
    echo "train $mode: exit $? — $(grep -m1 -iE 'step time|ms per step|tokens/s' "$LOGS/train-$mode.txt")" | tee -a "$OUT/flash.txt"
  done
fi

if [ "${FLASH_NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  log "ncu"
  timeout 240 ncu --clock-control none -k regex:flash_ -c 8 --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    build-device/bench/bench_attention_speed --runs 1 > "$OUT/ncu.txt" 2>&1
  echo "ncu: exit $?" | tee -a "$OUT/flash.txt"
  grep -E "flash_|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Stall|Warp Cycles Per Issued" \
    "$OUT/ncu.txt" | head -80 >> "$OUT/flash.txt"
fi
log "done"
cat "$OUT/flash.txt" | tail -70
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
