#!/usr/bin/env bash
# One call on a GPU machine (the lent nvidia-h200* kinds): build scalescope, run its whole test suite
# (GPU tests included), then `scalescope doctor` on the GPUs with NVLink/P2P and with NCCL_P2P_DISABLE=1
# (the seed's PCIe-bound regime), and on CPU ranks. Logs and JSON go to $OUT (default ./out).
#
#   bench/device-doctor.sh            # on the GPU machine, from the repository root
#
# DOCTOR_MODELS (mlp-100m tiny-14m gpt2-124m gpt-1.3b) picks the models; DOCTOR_CTEST=0 skips the test suite and
# DOCTOR_EXTRAS=0 the 1-GPU train runs and the CPU-rank doctor, for a shorter call.
#
# The machine has no package registry: bench/device-env.sh unpacks what it lacks (the default text, simdjson)
# from the Debian packages carried in .device/debs, under /tmp (never into /).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh  # carried libraries and data, no NVLink multicast, nvcc on PATH
log() { echo "== $*" | tee -a "$OUT/steps.log"; }

log "machine"
{ date -u; uname -r; nproc; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv;
  nvidia-smi topo -m; nvcc --version | tail -1; cmake --version | head -1; git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

log "build"
device_build || exit 1
S=build-device/tools/scalescope
$S --version

if [ "${DOCTOR_CTEST:-1}" = 1 ]; then  # DOCTOR_CTEST=0: the doctor runs only (a shorter call)
  log "tests (unit, GPU, CPU-rank integration)"
  timeout 300 ctest --test-dir build-device --output-on-failure -j 4 > "$OUT/ctest.log" 2>&1
  grep -E "tests passed|Failed|Skipped" "$OUT/ctest.log" | head -30
fi

GPUS=$(nvidia-smi -L | wc -l)
# The MLP of the vertical slice, then the GPT presets of issue #5 (each at its default batch per GPU).
for model in ${DOCTOR_MODELS:-mlp-100m tiny-14m gpt2-124m gpt-1.3b}; do
  log "doctor, GPU ranks, NVLink/P2P allowed ($GPUS GPUs), $model"
  # With the kernel traces (one more round per world size, in no figure): the kernel-by-kernel compute loss.
  timeout 300 $S doctor --backend gpu --model "$model" --out "$OUT/doctor-gpu-$model.json" \
    --kernel-trace "/tmp/kernel-traces/$model" 2> "$OUT/doctor-gpu-$model.err" \
    | tee "$OUT/doctor-gpu-$model.txt" | sed -n '/^world size/,/^step ms/p;/^compute beside one rank/,/^$/p'
  if [ "$GPUS" -ge 2 ]; then  # one GPU has no peer: P2P settings change nothing there
    log "doctor, GPU ranks, NCCL_P2P_DISABLE=1, $model"
    NCCL_P2P_DISABLE=1 timeout 300 $S doctor --backend gpu --model "$model" --out "$OUT/doctor-gpu-nop2p-$model.json" \
      2> "$OUT/doctor-gpu-nop2p-$model.err" | tee "$OUT/doctor-gpu-nop2p-$model.txt" | sed -n '/^world size/,/^step ms/p'
  fi
done
if [ "${DOCTOR_EXTRAS:-1}" = 1 ]; then  # DOCTOR_EXTRAS=0: no 1-GPU train runs, no CPU-rank doctor
log "train, 1 GPU, phase breakdown: overlap on / off, real text / synthetic"
for extra in "" "--no-overlap" "--data synthetic" "--model gpt2-124m"; do
  timeout 120 $S train --backend gpu -q $extra 2>&1 | tee -a "$OUT/train-gpu.txt" | grep -E "^(forward|backward|exposed|optimizer|step total|throughput|gradient|loss)"
done
log "doctor, CPU ranks (MPI), up to 8"
timeout 240 $S doctor --backend cpu --max-world-size 8 --out "$OUT/doctor-cpu.json" 2> "$OUT/doctor-cpu.err" | tee "$OUT/doctor-cpu.txt"
fi
log "done"
# At most 8 files come back from a lent machine: keep the JSON reports apart, pack the logs.
tar -czf "$OUT/logs.tar.gz" -C "$OUT" --remove-files machine.txt steps.log build.log ctest.log train-gpu.txt \
  $(cd "$OUT" && ls doctor-*.err doctor-*.txt 2>/dev/null)
