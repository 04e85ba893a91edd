#!/usr/bin/env bash
# One call on a GPU machine: `scalescope comm` beside nccl-tests all_reduce_perf / all_gather_perf built from
# their public source on that machine (carried in .device/nccl-tests, never committed), bf16, 8 B to 4 GiB, at
# every world size the machine has (1, 2, 4 …), with NVLink/P2P and with NCCL_P2P_DISABLE=1; then the data
# check of every collective, type, operation and root; then proof that the check catches corruption.
# Outputs under $OUT; the parity tables are printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh  # carried libraries and data, no NVLink multicast, nvcc on PATH
device_build scalescope || exit 1
S=build-device/tools/scalescope
NT=""
if [ -d .device/nccl-tests/src ]; then
  make -C .device/nccl-tests/src -j "$(nproc)" BUILDDIR="$PWD/build-nccl-tests" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > "$OUT/nccl-tests-build.log" 2>&1 && NT=build-nccl-tests
  [ -n "$NT" ] || tail -20 "$OUT/nccl-tests-build.log"
fi
GPUS=$(nvidia-smi -L | wc -l)
: > "$OUT/parity.txt"
for n in ${COMM_NS:-1 2 4 8}; do  # world sizes; e.g. COMM_NS=4 when 1 and 2 were measured before
  [ "$n" -le "$GPUS" ] || continue
  for p2p in on off; do
    [ "$p2p" = off ] && [ "$n" -lt 2 ] && continue
    env=(); [ "$p2p" = off ] && env=(NCCL_P2P_DISABLE=1)
    for coll in all_reduce all_gather; do
      tag="$coll-n$n-p2p$p2p"
      if [ -n "$NT" ]; then
        env "${env[@]}" timeout 300 $NT/${coll}_perf -b 8 -e 4G -f 2 -g "$n" -d bfloat16 -w 5 -n 20 > "$OUT/nccl-tests-$tag.txt" 2>&1
        $S comm --from "$OUT/nccl-tests-$tag.txt" --out "$OUT/nccl-tests-$tag.json" > /dev/null 2>&1
      fi
      env "${env[@]}" timeout 300 $S comm --backend gpu -g "$n" --collective "$coll" -b 8 -e 4G -f 2 -d bfloat16 -w 5 -n 20 -q \
        --out "$OUT/ours-$tag.json" > "$OUT/ours-$tag.txt" 2>&1
      [ -n "$NT" ] && python3 bench/compare_comm.py "$OUT/ours-$tag.json" "$OUT/nccl-tests-$tag.json" "$tag" >> "$OUT/parity.txt"
    done
  done
done
if [ -n "${COMM_ALL_COLLECTIVES:-}" ]; then  # every collective, bf16, 8 B to 4 GiB, at all the machine's GPUs
  echo "== every collective, bf16, 8 B to 4 GiB, $GPUS GPU(s)"
  timeout 900 $S comm --backend gpu -g "$GPUS" --collective all -b 8 -e 4G -f 2 -d bfloat16 -w 5 -n 20 -q \
    --out "$OUT/ours-all-collectives.json" > "$OUT/ours-all-collectives.txt" 2>&1
  grep -E "^# scalescope comm:|busbw plateau|latency  " "$OUT/ours-all-collectives.txt"
fi
echo "== data check: every collective, type, op and root on $GPUS GPU(s)"
timeout 300 $S comm --backend gpu -g "$GPUS" --collective all -d all -o all -r all -b 8 -e 1M -f 8 -n 2 -w 0 -c 1 \
  --no-per-iteration -q --out "$OUT/check.json" > "$OUT/check.txt" 2>&1
echo "exit $? (0: every checked element exact); reports: $(grep -c '^# scalescope comm (nccl): ' "$OUT/check.txt")"
echo "== the check catches corruption (expect exit 1)"
SCALESCOPE_TEST_CORRUPT_RESULT=1 timeout 60 $S comm --backend gpu -g 1 -b 8 -e 64 -f 2 -q --no-per-iteration > "$OUT/corrupt.txt" 2>&1
echo "exit $?: $(grep -m1 'wrong element' "$OUT/corrupt.txt")"
echo "== ours, all-reduce bf16 at $GPUS GPU(s) (summary)"
sed -n '/scalescope summary/,$p' "$OUT/ours-all_reduce-n$GPUS-p2pon.txt" | head -12
echo "== parity (ours / nccl-tests)"
cat "$OUT/parity.txt"
