#!/usr/bin/env bash
# One call on a GPU machine (issue #27): builds the scalescope CLI (CPU-only: profile needs no CUDA of its own),
# then (1) the overhead of `scalescope profile` outside its profiled window: bench/profile_job.py (DDP, NCCL, one
# rank per GPU) run plain and under profile, alternating, REPS times each (default 3), its own step time over
# steps 50–OVERHEAD_STEPS (default 800); (2) planted causes, each job profiled unmodified: none, host-sync, find-unused, slow-loader; the primary cause of
# each diagnosis. Logs and reports under $OUT; the table last.
#
#   bench/device-profile.sh        # from the repository root; NPROC=2 for two GPUs; REPS=3
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
NPROC=${NPROC:-1}
REPS=${REPS:-3}
OVERHEAD_STEPS=${OVERHEAD_STEPS:-800}
PLANTS=${PLANTS:-none host-sync find-unused slow-loader}
SECONDS=0
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())';
  git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
device_build_cpu scalescope || exit 1
echo "build: ${SECONDS}s"
EXE=build-device-cpu/tools/scalescope
RUN="torchrun --standalone --nproc_per_node $NPROC bench/profile_job.py"
step_of() { grep -o 'step_time [0-9.]*' "$1" | tail -1 | awk '{print $2}'; }
for r in $(seq 1 "$REPS"); do
  $RUN --steps "$OVERHEAD_STEPS" > "$OUT/plain.$r.log" 2>&1
  $EXE profile --keep "$OUT/overhead.$r" -- $RUN --steps "$OVERHEAD_STEPS" > "$OUT/profiled.$r.log" 2>&1
  echo "rep $r: plain $(step_of "$OUT/plain.$r.log") ms, profiled $(step_of "$OUT/profiled.$r.log") ms (${SECONDS}s)"
done
for plant in $PLANTS; do
  steps=200; [ "$plant" = slow-loader ] && steps=30
  $EXE profile --keep "$OUT/job.$plant" --out "$OUT/report.$plant.json" -- $RUN --plant "$plant" --steps $steps --time-from 20 \
    > "$OUT/plant.$plant.log" 2>&1
  echo "plant $plant: exit $? (${SECONDS}s)"
done
PLANTS="$PLANTS" python3 - "$OUT" "$REPS" <<'PY'
import json, re, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def step(path):
    m = re.findall(r"step_time ([0-9.]+)", open(path).read())
    return float(m[-1]) if m else None
plain = [step(f"{out}/plain.{r}.log") for r in range(1, reps + 1)]
prof = [step(f"{out}/profiled.{r}.log") for r in range(1, reps + 1)]
print("\n| run | plain ms/step | under profile ms/step |\n|---|---|---|")
for r, (a, b) in enumerate(zip(plain, prof), 1):
    print(f"| {r} | {a} | {b} |")
if all(plain) and all(prof):
    mp, mq = statistics.median(plain), statistics.median(prof)
    print(f"| median | {mp:.3f} | {mq:.3f} ({100 * (mq / mp - 1):+.2f} %) |")
print("\n| plant | primary | confidence | step (job's own) |\n|---|---|---|---|")
import os
for plant in os.environ["PLANTS"].split():
    try:
        d = json.load(open(f"{out}/report.{plant}.json"))["diagnosis"]
        p = d["primary"]
        print(f"| {plant} | {p['cause'] if p else None} | {p['confidence'] if p else ''} | {step(f'{out}/plant.{plant}.log')} |")
    except Exception as e:
        print(f"| {plant} | no report ({e}) | | |")
PY
# Fewer, smaller files back: the reports, the logs and the kept job directories in one archive.
tar -czf "$OUT/jobs.tgz" -C "$OUT" $(cd "$OUT" && ls -d job.* overhead.* plant.*.log profiled.*.log plain.*.log report.*.json 2>/dev/null) &&
  rm -rf "$OUT"/job.* "$OUT"/overhead.* "$OUT"/plant.*.log "$OUT"/profiled.*.log "$OUT"/plain.*.log
