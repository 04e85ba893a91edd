#!/usr/bin/env bash
# Issue #5 item 7, the 2-GPU gap to PyTorch DDP: what the NCCL kernels beside backward cost us. Builds scalescope
# and the GPU tests, runs the tests, then `scalescope train --backend gpu --model gpt2-124m` at world size 1 and
# at every GPU of the machine for each CUDA stream priority (--stream-priority equal|comm|compute) and NCCL CTA
# limit (NCCL_MAX_CTAS unset|16|8), with the phase breakdown of each printed last (bench/phase_table.py).
# Outputs under $OUT, each as soon as it exists. Environment: OVERLAP_MODEL (gpt2-124m), OVERLAP_TESTS=0 skips
# the tests, OVERLAP_CTAS (the NCCL_MAX_CTAS values, "unset 16 8"), OVERLAP_CAP (a bucket cap in MiB to try, 100;
# empty: none).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
GPUS=$(nvidia-smi -L | wc -l)
MODEL=${OVERLAP_MODEL:-gpt2-124m}
device_build scalescope test_gpt_cuda test_mlp_lm_cuda || exit 1
[ "${OVERLAP_TESTS:-1}" = 1 ] && run_gpu_tests test_gpt_cuda test_mlp_lm_cuda
S=build-device/tools/scalescope
run() {  # run TAG N ENV... -- FLAGS...
  local tag=$1 n=$2; shift 2
  local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  env "${env[@]}" timeout 240 $S train --backend gpu -n "$n" --model "$MODEL" -q "$@" \
    --out "$OUT/$tag.json" > "$OUT/$tag.txt" 2>&1 || { echo "$tag failed:"; tail -3 "$OUT/$tag.txt"; }
}
run "n1-equal" 1 --
for prio in equal comm compute; do
  for ctas in ${OVERLAP_CTAS:-unset 16 8}; do
    env=(); [ "$ctas" != unset ] && env=(NCCL_MAX_CTAS=$ctas)
    run "n$GPUS-$prio-ctas$ctas" "$GPUS" "${env[@]}" -- --stream-priority "$prio"
  done
done
[ -n "${OVERLAP_CAP:-100}" ] && run "n$GPUS-equal-cap${OVERLAP_CAP:-100}" "$GPUS" -- --bucket-cap-mb "${OVERLAP_CAP:-100}"
python3 bench/phase_table.py "$OUT"/n*.json
