#!/usr/bin/env bash
# One call on a one-GPU machine (issues #38 and #36): the inputs of `predict` from a trace alone, and two planted
# host syncs under `profile`.
# (1) A one-rank PyTorch DDP job (bench/peers/gpt_pytorch.py under torchrun: autocast bf16, fused AdamW, DDP's
#     default buckets) under `scalescope profile --keep` (its window: 10 steps after 20), which also writes a plain
#     torch.profiler trace of its own (--trace-dir: 3 active steps after the timed rounds), for each MODEL. Nothing is
#     predicted here: the job directories and the traces come back and `predict` runs on them on the CPU.
# (2) bench/profile_job.py with --plant none / mask-sync / tolist under `profile`: the step each costs, the primary cause.
# Logs under $OUT; the jobs as one archive; the table last.
#   bench/device-predict-trace.sh     (from the repository root; MODELS="gpt2-124m:16:12 gpt2-124m:16:2")
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())';
  git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
device_build_cpu scalescope || exit 1
echo "build: ${SECONDS}s"
EXE=build-device-cpu/tools/scalescope
JOBS=$OUT/jobs
mkdir -p "$JOBS"
MODELS=${MODELS:-"gpt2-124m:16:12 gpt2-124m:16:2"}
for spec in $MODELS; do
  IFS=: read -r m b l <<< "$spec"
  name="$m-b$b-l$l"
  t0=$SECONDS
  $EXE profile --keep "$JOBS/ddp-$name" --warmup 20 --steps 10 -- torchrun --standalone --nproc_per_node 1 \
    bench/peers/gpt_pytorch.py --model "$m" --batch "$b" --layers "$l" --trace-dir "$JOBS/user-$name" \
    --json "$JOBS/ddp-$name.result.json" > "$JOBS/profile-$name.txt" 2>&1
  echo "profile $name: exit $? in $((SECONDS - t0)) s; $(grep -o 'step [0-9.]* ms' "$JOBS/profile-$name.txt" | tail -1)"
  [ -f "$JOBS/user-$name/rank0.json" ] && gzip -9 "$JOBS/user-$name/rank0.json"
done
step_of() { grep -o 'step_time [0-9.]*' "$1" | tail -1 | awk '{print $2}'; }
RUN="torchrun --standalone --nproc_per_node 1 bench/profile_job.py"
PLANTS=${PLANTS:-"none mask-sync tolist"}
for plant in $PLANTS; do
  $RUN --plant "$plant" --steps 300 --time-from 50 > "$JOBS/plain.$plant.log" 2>&1
  $EXE profile --keep "$JOBS/job.$plant" --out "$JOBS/report.$plant.json" -- $RUN --plant "$plant" --steps 300 --time-from 50 \
    > "$JOBS/plant.$plant.log" 2>&1
  echo "plant $plant: exit $?, plain $(step_of "$JOBS/plain.$plant.log") ms, profiled $(step_of "$JOBS/plant.$plant.log") ms (${SECONDS}s)"
done
PLANTS="$PLANTS" python3 - "$JOBS" <<'PY'
import json, os, re, sys
jobs = sys.argv[1]
def step(path):
    try:
        m = re.findall(r"step_time ([0-9.]+)", open(path).read())
    except OSError:
        return None
    return float(m[-1]) if m else None
print("\n| plant | plain ms/step | primary | confidence |\n|---|---|---|---|")
for plant in os.environ["PLANTS"].split():
    try:
        d = json.load(open(f"{jobs}/report.{plant}.json"))["diagnosis"]
        p = d["primary"]
        print(f"| {plant} | {step(f'{jobs}/plain.{plant}.log')} | {p['cause'] if p else None} | {p['confidence'] if p else ''} |")
    except Exception as e:
        print(f"| {plant} | {step(f'{jobs}/plain.{plant}.log')} | no report ({e}) | |")
PY
tar -czf "$OUT/jobs.tgz" -C "$OUT" jobs && rm -rf "$JOBS"
ls -la "$OUT"
