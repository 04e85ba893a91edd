#!/usr/bin/env bash
# Issue #30, item 4, one call on a several-GPU machine: doctor's diagnosis against known faults, each planted on a
# real run, and the cause id it names first against the expected one (../shared/diagnosis-causes.md):
#   healthy NVLink → no-defect; NCCL_P2P_DISABLE=1 → nccl-env-override; NCCL_P2P_LEVEL=LOC → nccl-env-override;
#   NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (sockets) → nccl-env-override (or net-socket-fallback); one GPU slowed by
#   a GEMM loop beside it → straggler; --no-overlap → no-overlap; tiny-14m at batch 4 → comm-bound-small-model (or
#   launch-bound). At one GPU (a one-GPU machine) it runs the same at world size 1 only, where every answer is
#   expected to be "none" (nothing to compare): that is the dry run the issue asks for.
#   bench/device-faults.sh        (from the repository root; MODEL=gpt2-124m N=all GPUs)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
device_build scalescope || exit 1
EXE=build-device/tools/scalescope
GPUS=$(nvidia-smi -L | wc -l)
N=${N:-$GPUS}
MODEL=${MODEL:-gpt2-124m}
SIZES=$([ "$N" -ge 2 ] && echo "1,$N" || echo "1")
QUICK="--warmup-rounds 3 --rounds 5 --steps-per-round 10"
echo "GPUs: $GPUS; world sizes $SIZES; model $MODEL; build ${SECONDS}s"
primary() { sed -n 's/^  primary: \([a-z0-9-]*\).*/\1/p' "$1" | head -1; }
declare -a ROWS
run() {  # run NAME EXPECTED ENV… -- DOCTOR-ARGS…
  local name=$1 expected=$2; shift 2
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local t0=$SECONDS
  env "${env[@]}" $EXE doctor --world-sizes "$SIZES" -q --out "$OUT/$name.json" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$? got
  got=$(primary "$OUT/$name.txt")
  [ -z "$got" ] && got="(none)"
  ROWS+=("| $name | ${env[*]:-–} $* | $expected | $got | $([ "$N" -lt 2 ] && echo "dry run" || { [[ " $expected " == *" $got "* ]] && echo yes || echo NO; }) | $rc | $((SECONDS - t0)) s |")
  echo "${ROWS[-1]}"
}
run healthy "no-defect" X=1 -- --model "$MODEL" $QUICK
run p2p-disable "nccl-env-override" NCCL_P2P_DISABLE=1 -- --model "$MODEL" $QUICK
run p2p-level-loc "nccl-env-override" NCCL_P2P_LEVEL=LOC -- --model "$MODEL" $QUICK
run sockets "nccl-env-override net-socket-fallback" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- --model "$MODEL" $QUICK
run no-overlap "no-overlap" X=1 -- --model "$MODEL" --no-overlap $QUICK
run small-batch "comm-bound-small-model launch-bound" X=1 -- --model tiny-14m --batch 4 $QUICK
# A straggler: a GEMM loop on the last GPU for the run's length (a load beside it, as a shared node would have).
if [ "$N" -ge 2 ]; then
  python3 - "$((N - 1))" > "$OUT/load.log" 2>&1 <<'PY' &
import sys, time, torch
d = torch.device("cuda", int(sys.argv[1]))
a = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
end = time.time() + 600
while time.time() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize(d)
PY
  LOAD=$!
  sleep 5
  run straggler "straggler" X=1 -- --model "$MODEL" $QUICK
  kill $LOAD 2>/dev/null; wait $LOAD 2>/dev/null
fi
{
  echo "| fault | setting | expected | named first | right | exit | time |"
  echo "|---|---|---|---|---|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
} | tee "$OUT/faults.md"
echo "total: ${SECONDS}s"
