#!/usr/bin/env bash
# The shortest multi-GPU check, for a lent several-GPU machine when little device time is left: doctor on the
# MLP with NVLink/P2P and with NCCL_P2P_DISABLE=1, scalescope comm beside nccl-tests all_reduce_perf at every
# GPU, doctor on gpt2-124m, and topo live against nvidia-smi. Each result is written to $OUT as soon as it
# exists (a call cut short still returns what was measured); summary.txt collects the tables.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
J=$(nproc)
GPUS=$(nvidia-smi -L | wc -l)
SUM="$OUT/summary.txt"
say() { echo "$@" | tee -a "$SUM"; }
say "== $(date -u) $GPUS × $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
( make -C .device/nccl-tests/src -j "$J" BUILDDIR="$PWD/build-nccl-tests" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > /tmp/nccl-tests-build.log 2>&1 ) &
{ cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-device -j "$J" --target scalescope; } \
  > /tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
S=build-device/tools/scalescope
for p2p in on off; do
  env=(); [ "$p2p" = off ] && env=(NCCL_P2P_DISABLE=1)
  say "== doctor mlp-100m, P2P $p2p"
  env "${env[@]}" $S doctor --backend gpu -q --out "$OUT/doctor-mlp-p2p$p2p.json" 2>&1 | sed -n '/^topology/p;/^world size/,$p' | tee -a "$SUM"
done
wait
if [ -x build-nccl-tests/all_reduce_perf ]; then
  say "== all-reduce bf16 at $GPUS GPUs: ours vs nccl-tests"
  build-nccl-tests/all_reduce_perf -b 8 -e 1G -f 4 -g "$GPUS" -d bfloat16 -w 5 -n 20 > /tmp/nt.txt 2>&1
  $S comm --from /tmp/nt.txt --out "$OUT/nccl-tests.json" > /dev/null 2>&1
  $S comm --backend gpu -g "$GPUS" -b 8 -e 1G -f 4 -d bfloat16 -w 5 -n 20 -q --out "$OUT/ours-comm.json" > /tmp/ours.txt 2>&1
  python3 bench/compare_comm.py "$OUT/ours-comm.json" "$OUT/nccl-tests.json" "all_reduce-n$GPUS" | tee -a "$SUM"
fi
say "== doctor gpt2-124m"
$S doctor --backend gpu --model gpt2-124m -q --out "$OUT/doctor-gpt2.json" 2>&1 | sed -n '/^world size/,$p' | tee -a "$SUM"
say "== topo live vs nvidia-smi topo -m"
nvidia-smi topo -m > /tmp/smi.txt 2>&1
$S topo --compare /tmp/smi.txt 2>&1 | sed -n '/^link classes/,/^$/p;/^link classes: /p' | tee -a "$SUM"
