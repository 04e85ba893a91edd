#!/usr/bin/env bash
# One call on a GPU machine (issue #5): build the GPT targets, run the GPT tests (CPU reference and every CUDA
# kernel against it), then time our CUDA GPT and the PyTorch peer back to back on one GPU for tiny-14m
# (batch 64), gpt2-124m (batch 16) and gpt-1.3b (batch 8) — ours with its default (fused attention where the
# head width allows: cuDNN's where built in; GELU outputs recomputed in backward), with --attention flash (this
# project's kernels), with --attention gemm and with --keep-activations — and print the comparison table last.
# Before that, bench_attention_speed times one layer's attention through each path. Results go to $OUT (default
# ./out): gpt-speed.json (every measurement), gpt-speed.txt (the table), attention.txt, tests.txt (test summary)
# and logs.tar.gz (everything else). Meant to finish in under 8 minutes.
# Both sides train on the same real text (their default --data: $SCALESCOPE_DATA, which device-env.sh points at
# the carried fortunes package, else /usr/share/games/fortunes).
#
#   bench/device-gpt.sh            # on the GPU machine, from the repository root
#   GPT_PRESETS="gpt2-124m:16 gpt-1.3b:8" GPT_TESTS="test_gpt_cuda" bench/device-gpt.sh   # fewer presets/tests
#   GPT_FLASH=0 GPT_GEMM=0 GPT_KEEP=0 bench/device-gpt.sh   # ours with its defaults and PyTorch only
#                                                            # (1 runs a variant, anything else skips it)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
LOGS="$OUT/logs"
rm -rf "$LOGS"  # a run that died before packing them must not lend its results to this table
mkdir -p "$LOGS"
source bench/device-env.sh  # carried libraries and data, no NVLink multicast, nvcc on PATH
SECONDS=0
log() { echo "== [${SECONDS}s] $*" | tee -a "$LOGS/steps.log"; }

log "machine"
{ date -u; uname -r; nproc; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv;
  nvcc --version | tail -1; cmake --version | head -1; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)';
  git rev-parse HEAD 2>/dev/null; } > "$LOGS/machine.txt" 2>&1
cat "$LOGS/machine.txt"

log "build (GPT targets only)"
BUILD=build-device
if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$LOGS/build.log" 2>&1 &&
       timeout 360 cmake --build "$BUILD" -j "$(nproc)" --target test_gpt_cpu test_gpt_cuda bench_gpt_speed bench_attention_speed \
         >> "$LOGS/build.log" 2>&1; }; then
  tail -60 "$LOGS/build.log"
  tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
  exit 1
fi
grep -iE "warning" "$LOGS/build.log" | grep -E "gpt|lt_matmul|gpt_speed" | head -20
# The MLP's GPU test links the whole CUDA library (NCCL code included); its failure to build is reported, not fatal.
# Other listed tests (test_mlp_lm_cuda, test_step_graph) link the whole CUDA library, NCCL code included.
EXTRA_TESTS=$(for t in ${GPT_TESTS:-test_mlp_lm_cuda}; do case $t in test_gpt_cuda|test_gpt_cpu) ;; *) echo "$t";; esac; done)
if [ -n "$EXTRA_TESTS" ]; then
  timeout 240 cmake --build "$BUILD" -j "$(nproc)" --target $EXTRA_TESTS > "$LOGS/build-extra.log" 2>&1 ||
    { echo "$EXTRA_TESTS did not build:"; grep -E "error" "$LOGS/build-extra.log" | head -5; }
fi

log "tests"
: > "$OUT/tests.txt"
for t in ${GPT_TESTS:-test_gpt_cuda test_gpt_cpu test_mlp_lm_cuda}; do
  [ -x "$BUILD/tests/$t" ] || { echo "$t: not built" | tee -a "$OUT/tests.txt"; continue; }
  timeout 300 "$BUILD/tests/$t" > "$LOGS/$t.log" 2>&1
  rc=$?
  { echo "$t: exit $rc"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|error|Expected|Which is|actual|cpu |held " "$LOGS/$t.log" | head -60; } \
    | tee -a "$OUT/tests.txt"
done

log "attention alone: own flash kernels, cuDNN's and the GEMM path"
timeout 120 "$BUILD/bench/bench_attention_speed" --json "$LOGS/attention.json" 2>&1 | tee "$OUT/attention.txt"

log "speed: ours vs PyTorch, one GPU"
for spec in ${GPT_PRESETS:-tiny-14m:64 gpt2-124m:16 gpt-1.3b:8}; do
  model=${spec%%:*}
  batch=${spec##*:}
  log "$model batch $batch: ours"
  timeout 150 "$BUILD/bench/bench_gpt_speed" --model "$model" --batch "$batch" --json "$LOGS/ours-$model.json" 2>&1 \
    | tee "$LOGS/ours-$model.txt"
  [ "${GPT_FLASH:-1}" = 1 ] && log "$model batch $batch: ours, --attention flash" &&
  timeout 150 "$BUILD/bench/bench_gpt_speed" --model "$model" --batch "$batch" --attention flash \
    --json "$LOGS/flash-$model.json" 2>&1 | tee "$LOGS/flash-$model.txt" | tail -1
  [ "${GPT_GEMM:-1}" = 1 ] && log "$model batch $batch: ours, --attention gemm" &&
  timeout 150 "$BUILD/bench/bench_gpt_speed" --model "$model" --batch "$batch" --attention gemm \
    --json "$LOGS/gemm-$model.json" 2>&1 | tee "$LOGS/gemm-$model.txt" | tail -1
  [ "${GPT_KEEP:-1}" = 1 ] && log "$model batch $batch: ours, --keep-activations" &&
  timeout 150 "$BUILD/bench/bench_gpt_speed" --model "$model" --batch "$batch" --keep-activations \
    --json "$LOGS/keep-$model.json" 2>&1 | tee "$LOGS/keep-$model.txt" | tail -1
  log "$model batch $batch: pytorch"
  timeout 150 python3 bench/peers/gpt_pytorch.py --model "$model" --batch "$batch" --json "$LOGS/torch-$model.json" 2>&1 \
    | tee "$LOGS/torch-$model.txt" | tail -3
done

log "table"
python3 - "$LOGS" "$OUT" <<'EOF' | tee "$OUT/gpt-speed.txt"
import json, os, sys
logs, out = sys.argv[1], sys.argv[2]
gib = 1024 ** 3
rows, everything = [], {}
for model in ("tiny-14m", "gpt2-124m", "gpt-1.3b"):
    def load(kind):
        try:
            with open(os.path.join(logs, f"{kind}-{model}.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None
    ours, torch_, keep, gemm, flash = load("ours"), load("torch"), load("keep"), load("gemm"), load("flash")
    if not (ours or torch_):
        continue
    everything[model] = {"ours": ours, "ours_own_flash_attention": flash, "ours_gemm_attention": gemm, "ours_keep_activations": keep, "pytorch": torch_}
    def fmt(x, spec):
        return format(x, spec) if x is not None else "-"
    o_tps = ours["tokens_per_s"] if ours else None
    t_tps = torch_["tokens_per_s"] if torch_ else None
    ratio = o_tps / t_tps if o_tps and t_tps else None
    rows.append((model, str(ours["batch"] if ours else (torch_["batch"] if torch_ else "-")),
                 fmt(o_tps / 1e3 if o_tps else None, ".1f"), fmt(t_tps / 1e3 if t_tps else None, ".1f"),
                 fmt(ratio, ".2f"), fmt(100 * ours["mfu"] if ours else None, ".1f"),
                 fmt(ours["step_ms"] if ours else None, ".2f"), fmt(torch_["step_ms"] if torch_ else None, ".2f"),
                 fmt(ours["memory"]["model_bytes"] / gib if ours else None, ".2f"),
                 fmt(ours["memory"]["device_used_bytes"] / gib if ours else None, ".2f"),
                 fmt(torch_["memory"]["max_allocated_bytes"] / gib if torch_ else None, ".2f"),
                 fmt(torch_["memory"]["max_reserved_bytes"] / gib if torch_ else None, ".2f"),
                 (ours.get("attention", "-") if ours else "-"),
                 fmt(flash["tokens_per_s"] / t_tps if flash and t_tps else None, ".2f"),
                 fmt(flash["step_ms"] if flash else None, ".2f"),
                 fmt(gemm["tokens_per_s"] / t_tps if gemm and t_tps else None, ".2f"),
                 fmt(gemm["step_ms"] if gemm else None, ".2f"),
                 fmt(keep["tokens_per_s"] / t_tps if keep and t_tps else None, ".2f"),
                 fmt(keep["memory"]["model_bytes"] / gib if keep else None, ".2f")))
head = ("preset", "batch", "ours ktok/s", "torch ktok/s", "ratio", "ours MFU %", "ours ms", "torch ms",
        "ours GiB", "ours dev GiB", "torch alloc GiB", "torch rsv GiB", "ours attention", "flash ratio", "flash ms", "gemm ratio", "gemm ms", "keep ratio", "keep GiB")
widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
print("  ".join("-" * w for w in widths))
for r in rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
rates = [v["ours"]["gemm_flops"] / 1e12 for v in everything.values() if v["ours"]]
if rates:
    print(f"MFU = model FLOPs (6N + 12LTd per token) x tokens/s / the cuBLASLt bf16 8192^3 GEMM rate each run "
          f"measured before it ({min(rates):.0f}-{max(rates):.0f} TFLOP/s). ours GiB = GptCuda::device_bytes (live buffers, compare with torch alloc = "
          f"max_memory_allocated); ours dev GiB = drop in cudaMemGetInfo (compare with torch rsv = max_memory_reserved); "
          f"ours attention = the fused attention ours ran by default (cudnn where built in); flash = ours with "
          f"--attention flash (this project's fused kernels); gemm = ours with --attention gemm (cuBLASLt attention GEMMs, the default before flash attention); "
          f"keep = ours with --keep-activations (GELU outputs kept, not recomputed).")
with open(os.path.join(out, "gpt-speed.json"), "w") as f:
    json.dump(everything, f, indent=2)
EOF

log "done"
# At most 8 files come back from a lent machine: keep the summaries apart, pack the logs.
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
