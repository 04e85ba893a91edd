#!/usr/bin/env bash
# One call on a GPU machine (issues #29, #31, #28): (1) the GPU backend as a run-time module — the binary's libraries,
# its start-up (bench/startup.py), and GPU work through the module (train at one rank, comm, doctor with its probes
# and its NCCL probe); (2) predict from a 1-GPU PyTorch DDP job under `scalescope profile` (bench/peers/gpt_pytorch.py
# under torchrun at one rank), against the DDP efficiencies measured on 2 and 4 H200s (bench/predict_rows.csv).
# Logs under $OUT; the tables last.
#   bench/device-module.sh        (from the repository root; MODELS="tiny-14m gpt2-124m gpt-1.3b")
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
SECONDS=0
{ date -u; nvidia-smi -L; git rev-parse HEAD 2>/dev/null; python3 -c "import torch; print('torch', torch.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
device_build scalescope || exit 1
echo "build: ${SECONDS}s"
EXE=build-device/tools/scalescope
{ echo "# NEEDED of the binary"; readelf -d "$EXE" | grep NEEDED; echo "# NEEDED of the module"; readelf -d build-device/tools/libscalescope-gpu.so | grep NEEDED; } > "$OUT/needed.txt" 2>&1
echo "CUDA libraries linked into the binary: $(grep -A100 'of the binary' "$OUT/needed.txt" | sed '/of the module/q' | grep -ciE 'cuda|nccl|cublas|cupti')"
python3 bench/startup.py --exe "$EXE" --repeat 20 | tee "$OUT/startup.txt"
/usr/bin/time -f "%e s %M KB" -o "$OUT/topo.time" $EXE topo > "$OUT/topo.txt" 2>&1
echo "topo (loads the module): $(cat "$OUT/topo.time"); $(grep '^CUDA:' "$OUT/topo.txt")"
$EXE train --backend gpu --model gpt2-124m -q --out "$OUT/train-gpt2.json" > "$OUT/train-gpt2.txt" 2>&1
echo "train gpt2-124m 1 GPU: exit $?"
$EXE comm --backend gpu -g 1 -b 8 -e 256M -f 4 -q --out "$OUT/comm.json" > "$OUT/comm.txt" 2>&1
echo "comm 1 GPU: exit $?"
t0=$SECONDS
$EXE doctor --world-sizes 1 --model mlp-1m --warmup-rounds 1 --rounds 1 --steps-per-round 2 -q --out "$OUT/doctor.json" > "$OUT/doctor.txt" 2>&1
echo "doctor (probes, NCCL probe, 1 rank): exit $? in $((SECONDS - t0)) s"
sed -n '/^NCCL probe/,/^$/p' "$OUT/doctor.txt"
grep -A3 "^diagnosis\|primary\|no-defect" "$OUT/doctor.txt" | head -8

# DDP at one GPU under profile, then predict.
MODELS=${MODELS:-"tiny-14m gpt2-124m gpt-1.3b"}
for m in $MODELS; do
  case $m in tiny-14m) b=64 ;; gpt2-124m) b=16 ;; gpt-1.3b) b=8 ;; esac
  t0=$SECONDS
  $EXE profile --keep "$OUT/ddp-$m" --warmup 20 --steps 5 -- torchrun --standalone --nproc_per_node 1 --redirects 1 --tee 1 \
    bench/peers/gpt_pytorch.py --model "$m" --batch "$b" --json "$OUT/ddp-$m.result.json" > "$OUT/profile-$m.txt" 2>&1
  echo "profile $m: exit $? in $((SECONDS - t0)) s"
  $EXE predict "$OUT/ddp-$m" --link H200:NV18 --gpus 2,4 --out "$OUT/predict-$m.json" > "$OUT/predict-$m.txt" 2>&1
  echo "predict $m: exit $?"
done
python3 - "$OUT" $MODELS <<'PY'
import csv, json, statistics, sys
out, models = sys.argv[1], sys.argv[2:]
names = {}
rows = list(csv.DictReader(open("bench/predict_rows.csv")))
print("\n| model | ranks | 1-GPU step ms (profiled job) | predicted step ms | predicted eff. | measured eff. (median of rows) | error |")
print("|---|---:|---:|---:|---:|---:|---:|")
for m in models:
    try:
        p = json.load(open(f"{out}/predict-{m}.json"))
    except Exception as e:
        print(f"| {m} | – | – | – | – | – | predict failed: {e} |"); continue
    import re
    found = re.search(r"step ([0-9.]+) ms", str(p.get("input", "")))
    one = found.group(1) if found else None
    for q in p.get("predictions", []):
        n = q["ranks"]
        meas = [float(r["step1_ms"]) / float(r["stepN_ms"]) for r in rows
                if r["engine"] == "ddp" and r["model"] == names.get(m, m) and r["link"] == "nvlink" and int(r["world_size"]) == n
                and r["step1_ms"] and r["stepN_ms"]]
        me = statistics.median(meas) if meas else None
        err = f"{100 * (me / q['efficiency'] - 1):+.1f} %" if me else "n/a"
        print(f"| {m} | {n} | {one if one else '?'} | {q['step_ms']:.2f} | {100 * q['efficiency']:.1f} % | "
              f"{f'{100 * me:.1f} % ({len(meas)} rows)' if me else 'none'} | {err} |")
try:
    d = json.load(open(f"{out}/doctor.json"))
except Exception:
    d = {}
np_ = d.get("nccl_probe", {})
print(f"\nNCCL probe: ran {np_.get('ran')}, NCCL {np_.get('nccl')}, {np_.get('seconds', 0):.1f} s, settings {np_.get('settings')}, error '{np_.get('error')}'")
PY
echo "total: ${SECONDS}s"
