#!/usr/bin/env bash
# Issue #5 item 7 on a GPU machine: weak-scaling efficiency of the GPT presets at 1, 2, 4 … GPUs, scalescope
# (`scalescope train --backend gpu -n N`) beside PyTorch DDP (bench/peers/gpt_pytorch.py under torchrun), same
# architecture, batch per GPU and gradient dtype (fp32), with NVLink/P2P and with NCCL_P2P_DISABLE=1 (N ≥ 2).
# The table is printed last (bench/scaling_table.py). Outputs under $OUT. All three presets at 1, 2 and 4 GPUs do
# not fit one device call's 10 minutes: on nvidia-h200-x4 (bench/RESULTS.md, 2026-11-29) SCALING_MODELS="tiny-14m:64
# gpt2-124m:16" SCALING_NS="1 2 4" took 319 s with the build, and gpt-1.3b:8 at N = 1 and 4 about 400 s with two doctor
# runs; so one call per such group.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh  # carried libraries and data, no NVLink multicast, nvcc on PATH
device_build scalescope || exit 1
S=build-device/tools/scalescope
GPUS=$(nvidia-smi -L | wc -l)
for spec in ${SCALING_MODELS:-tiny-14m:64 gpt2-124m:16 gpt-1.3b:8}; do
  model=${spec%%:*}; batch=${spec##*:}
  for n in ${SCALING_NS:-1 2 4 8}; do  # world sizes; e.g. SCALING_NS="1 4" when 2 was measured before
    [ "$n" -le "$GPUS" ] || continue
    for p2p in on off; do
      [ "$p2p" = off ] && [ "$n" -lt 2 ] && continue
      env=(); [ "$p2p" = off ] && env=(NCCL_P2P_DISABLE=1)
      tag="$model-n$n-p2p$p2p"
      echo "== $tag"
      env "${env[@]}" timeout 300 $S train --backend gpu -n "$n" --model "$model" --batch "$batch" -q \
        --out "$OUT/ours-$tag.json" > "$OUT/ours-$tag.txt" 2>&1 || tail -3 "$OUT/ours-$tag.txt"
      env "${env[@]}" timeout 300 python3 -m torch.distributed.run --standalone --nproc_per_node "$n" \
        bench/peers/gpt_pytorch.py --model "$model" --batch "$batch" --json "$OUT/torch-$tag.json" \
        > "$OUT/torch-$tag.txt" 2>&1 || tail -3 "$OUT/torch-$tag.txt"
    done
  done
done
echo "== weak scaling, ours vs PyTorch DDP (efficiency = T(1)/T(N) with NVLink/P2P at N = 1)"
python3 bench/scaling_table.py "$OUT"
