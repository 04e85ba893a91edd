#!/usr/bin/env bash
# Issue #5 item 7, where our extra milliseconds at 2 GPUs come from, beside PyTorch DDP in one call. Builds
# scalescope and the GPU tests, runs them (GAP_TEST_LIST below; GAP_TESTS=0 skips them), then one or more
# experiment sets (GAP_SET, e.g. "boundaries graph"; their file names must not collide):
#   phases (default): twice in turn, gpt2-124m at 1 and 2 GPUs for both sides with each side's forward,
#     backward and optimizer timed by CUDA events (the peer's --phases), and ours at 2 GPUs with --no-overlap
#     (no NCCL kernel beside forward or backward: what is left is not SM sharing);
#   clocks: ours at 1, 2 and 2 --no-overlap GPUs and DDP at 1 and 2, each with nvidia-smi sampling SM clock,
#     power and the clock-event reasons every 100 ms (is the step power-capped?);
#   trace: ours at 1, 2 and 2 --no-overlap GPUs with --kernel-trace, each trace read by `scalescope analyze`,
#     and bench/kernel_diff.py: the time per step of every kernel at 2 GPUs beside 1;
#   workspace: ours at 1 and 2 GPUs with cuBLASLt workspaces of GAP_WORKSPACES MiB ("32 0"), traced: do the
#     memsets cuBLASLt issues before its kernels depend on the workspace, and what do they cost;
#   autotune: ours at 1 and 2 GPUs with SCALESCOPE_GEMM_AUTOTUNE=0 and =1 for GAP_WS_MODELS (tiny-14m:64
#     gpt2-124m:16 gpt-1.3b:8): does timing cuBLASLt's candidates, memsets included, beat its first choice;
#   graph: ours at 1 and 2 GPUs eager and with --cuda-graph for GAP_WS_MODELS, then DDP at 1 and 2 GPUs for
#     GAP_MODEL (GAP_DDP=0 leaves it out), and GAP_MODEL at 2 GPUs with --cuda-graph --kernel-trace read by
#     `scalescope analyze`: do CUDA graphs close the launch gaps between kernels;
#   boundaries: bench_kernel_boundary (GPU time of one kernel boundary in a graph of empty or 5 µs kernels on
#     GPU 0 alone, with peer access to GPU 1, with an NCCL communicator over both), then ours and DDP at 1 and
#     2 GPUs, each traced kernel by kernel (ours --kernel-trace, DDP the
#     profiler's 3 steps, CPU and CUDA activity), and bench/kernel_diff.py on rank 0 of each pair: does DDP's
#     median gap at a kernel boundary grow at 2 GPUs as ours does, and how many kernels does each side run per
#     step (the profiler's CPU overhead can starve DDP's launch queue: compare its traced step with the untimed);
#   optimizer: for each of GAP_WS_MODELS, ours at 1 and 2 GPUs and at 2 with --overlap-optimizer (AdamW of the
#     parameters outside the last bucket beside that bucket's all-reduce), both 2-GPU runs again with
#     --stream-priority comm (NCCL's blocks scheduled first), then DDP at 1 and 2 GPUs for the models in
#     GAP_DDP_MODELS (default: all; GAP_DDP=0 leaves DDP out); with GAP_P2P_OFF=1 also both 2-GPU runs of ours
#     and DDP's under NCCL_P2P_DISABLE=1; ours traced kernel by kernel for GAP_MODEL at 1 and 2 GPUs (the timed rounds stay untraced) and compared by
#     bench/kernel_diff.py: do both ranks' GEMMs now run the kernels the 1-GPU run chose;
#   ctas: for each of GAP_WS_MODELS (gpt2-124m:16 gpt-1.3b:8), ours at 1 and 2 GPUs, and at 2 with NCCL_MAX_CTAS
#     of each value in GAP_CTAS ("8 16"): fewer SMs for NCCL's kernel, a longer all-reduce; GAP_MODEL traced at 2
#     GPUs with the first value and with SCALESCOPE_GEMM_AUTOTUNE=0, read by bench/beside_nccl.py beside a traced
#     1-GPU run;
#   embedding: for each of GAP_WS_MODELS (gpt2-124m:16 gpt-1.3b:8), ours at 1 GPU, then at 2 GPUs alternately
#     with --embedding-exchange all-reduce (the tied embedding's gradient all-reduced whole after backward, as
#     DDP) and all-gather (its head part all-reduced early, tokens and embedding-output gradients all-gathered
#     at the end), GAP_REPS ("1 2") times; with GAP_P2P_OFF=1 (or a list of model names) both again under
#     NCCL_P2P_DISABLE=1 (and DDP too); DDP at 1 and 2
#     GPUs unless GAP_DDP=0; with GAP_CAPS ("50 100") all-gather at 2 GPUs again with each bucket cap (MiB); each
#     2-GPU result's last loss, replica spread and exchange are printed;
#   env: ours at 2 GPUs without overlap under NCCL_P2P_DISABLE=1 and NCCL_CUMEM_ENABLE=0 (does NCCL's peer
#     memory mapping slow the compute kernels when no NCCL kernel runs beside them?);
#   pairs: two independent world-size-1 jobs at once on GPUs 0 and 1 (what a second busy GPU costs without
#     communication), ours with PyTorch's own NCCL library (LD_LIBRARY_PATH, same ABI), a Kineto trace of 3
#     DDP steps read by `scalescope analyze`, and short runs of both sides with NCCL_DEBUG=INFO
#     NCCL_DEBUG_SUBSYS=INIT,COLL,TUNING (buckets, algorithm, protocol and channels of each all-reduce).
# GAP_REPS ("1 2") names the repetitions of the phases set, GAP_DDP=0 leaves DDP out of it. GAP_TEST_LIST names
# the GPU tests to build and run (default all six), GAP_RUN_TIMEOUT (240) limits each of our runs, seconds.
# Outputs under $OUT; our phase table and DDP's step (and phases) are printed last. GAP_MODEL (gpt2-124m) and
# GAP_BATCH (16) pick the workload.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
source bench/device-env.sh
MODEL=${GAP_MODEL:-gpt2-124m}
BATCH=${GAP_BATCH:-16}
TESTS=${GAP_TEST_LIST:-test_gpt_cuda test_mlp_lm_cuda test_cupti_tracer test_step_graph test_nccl_communicator test_stream_blocker}
[ "${GAP_TESTS:-1}" = 1 ] || TESTS=
SETS=" ${GAP_SET:-phases} "  # one or more sets, run in the order given
for SET in $SETS; do  # before the build: a typo should not cost a GPU call
  case "$SET" in pairs|clocks|trace|workspace|graph|autotune|boundaries|optimizer|ctas|embedding|env|phases) ;;
    *) echo "device-gap.sh: unknown GAP_SET '$SET' (pairs clocks trace workspace graph autotune boundaries optimizer ctas embedding env phases)"
       exit 2 ;;
  esac
done
EXTRA=; [[ "$SETS" == *" boundaries "* ]] && EXTRA=bench_kernel_boundary
device_build scalescope $TESTS $EXTRA || exit 1
[ -n "$TESTS" ] && run_gpu_tests $TESTS
S=$PWD/build-device/tools/scalescope
ours() {  # ours TAG N [ENV...] -- [FLAGS...]
  local tag=$1 n=$2; shift 2
  local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  env "${env[@]}" timeout "${GAP_RUN_TIMEOUT:-240}" $S train --backend gpu -n "$n" --model "$MODEL" --batch "$BATCH" -q "$@" \
    --out "$OUT/$tag.json" > "$OUT/$tag.txt" 2>&1 || { echo "$tag failed:"; tail -3 "$OUT/$tag.txt"; }
}
ddp() {  # ddp TAG N [ENV...] -- [FLAGS...]
  local tag=$1 n=$2; shift 2
  local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  env "${env[@]}" timeout 300 python3 -m torch.distributed.run --standalone --nproc_per_node "$n" \
    bench/peers/gpt_pytorch.py --model "$MODEL" --batch "$BATCH" --json "$OUT/ddp-$tag.json" "$@" \
    > "$OUT/ddp-$tag.txt" 2>&1 || { echo "ddp-$tag failed:"; tail -3 "$OUT/ddp-$tag.txt"; }
}
TORCH_NCCL=$(dirname "$(find /opt/torch/.venv -name 'libnccl.so.2' 2>/dev/null | head -1)")
echo "PyTorch's NCCL: $TORCH_NCCL ($(python3 -c 'import torch; print(torch.cuda.nccl.version())'))"

for SET in $SETS; do
if [ "$SET" = pairs ]; then  # first call: pairs of 1-GPU jobs, PyTorch's NCCL, NCCL's logs
  ours n1 1 --
  ours n1-gpu0-alone-pair 1 CUDA_VISIBLE_DEVICES=0 -- & ours n1-gpu1-alone-pair 1 CUDA_VISIBLE_DEVICES=1 -- & wait
  ours n2 2 --
  ours n2-torch-nccl 2 LD_LIBRARY_PATH="$TORCH_NCCL:${LD_LIBRARY_PATH:-}" --
  ddp n1 1 --
  ddp n1-gpu0-alone-pair 1 CUDA_VISIBLE_DEVICES=0 -- & ddp n1-gpu1-alone-pair 1 CUDA_VISIBLE_DEVICES=1 -- & wait
  ddp n2 2 -- --trace-dir "$OUT/ddp-trace"
  # NCCL's own account of each all-reduce (outside the timed runs: logging every collective costs host time)
  dbg=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,TUNING)
  ours n2-nccl-debug 2 "${dbg[@]}" NCCL_DEBUG_FILE="$OUT/nccl-ours.%h.%p.log" -- --warmup-rounds 1 --rounds 1
  ddp n2-nccl-debug 2 "${dbg[@]}" NCCL_DEBUG_FILE="$OUT/nccl-ddp.%h.%p.log" -- --warmup-rounds 1 --rounds 1
  $S analyze "$OUT"/ddp-trace/rank*.json > "$OUT/analyze-ddp-trace.txt" 2>&1
  $S analyze "$OUT"/nccl-ours.*.log > "$OUT/analyze-nccl-ours.txt" 2>&1
  $S analyze "$OUT"/nccl-ddp.*.log > "$OUT/analyze-nccl-ddp.txt" 2>&1
elif [ "$SET" = clocks ]; then  # the GPUs' SM clock, power and clock-event reasons during each run
  q=index,utilization.gpu,clocks.sm,clocks.mem,power.draw,temperature.gpu
  reasons=clocks_event_reasons.active
  nvidia-smi --query-gpu=$reasons --format=csv,noheader > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  sampled() {  # sampled TAG COMMAND...: runs COMMAND with nvidia-smi sampling every 100 ms into clocks-TAG.csv
    local tag=$1; shift
    nvidia-smi --query-gpu=$q,$reasons --format=csv,noheader,nounits -lms 100 > "$OUT/clocks-$tag.csv" 2>&1 &
    local smi=$!
    "$@"
    kill $smi; wait $smi 2>/dev/null
  }
  nvidia-smi --query-gpu=index,power.limit,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/power-limits.csv"
  sampled n1 ours n1 1 --
  sampled n2 ours n2 2 --
  sampled n2-no-overlap ours n2-no-overlap 2 -- --no-overlap
  sampled ddp-n1 ddp n1 1 -- --phases
  sampled ddp-n2 ddp n2 2 -- --phases
  python3 - "$OUT" <<'PY'
import csv, glob, os, sys
print(f"{'run':<16} gpu busy-samples  SM MHz  mem MHz  power W  temp C  reasons (hex, while busy)")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "clocks-*.csv"))):
    rows = [r for r in csv.reader(open(path)) if len(r) >= 7]
    for gpu in sorted({r[0].strip() for r in rows}):
        busy = [r for r in rows if r[0].strip() == gpu and r[1].strip().isdigit() and int(r[1]) >= 50]
        if not busy:
            continue
        mean = lambda k: sum(float(r[k]) for r in busy) / len(busy)
        reasons = sorted({r[6].strip() for r in busy})
        print(f"{os.path.basename(path)[7:-4]:<16} {gpu:>3} {len(busy):>12} {mean(2):>7.0f} {mean(3):>8.0f} {mean(4):>8.1f} "
              f"{mean(5):>7.1f}  {' '.join(reasons)}")
PY
elif [ "$SET" = trace ]; then  # kernel by kernel (CUPTI): which kernels slow down at 2 GPUs
  ours n1 1 -- --kernel-trace "$OUT/trace-n1"
  ours n2 2 -- --kernel-trace "$OUT/trace-n2"
  ours n2-no-overlap 2 -- --no-overlap --kernel-trace "$OUT/trace-n2-no-overlap"
  for t in n1 n2 n2-no-overlap; do
    $S analyze "$OUT"/trace-$t/rank*.json > "$OUT/analyze-trace-$t.txt" 2>&1
    echo "analyze trace-$t: exit $?"; grep -A4 "^rank  steps" "$OUT/analyze-trace-$t.txt"
  done
  for t in n2-no-overlap n2; do
    echo "== kernels: n1 vs $t (rank 0)"
    python3 bench/kernel_diff.py "$OUT/trace-n1/rank0.json" "$OUT/trace-$t/rank0.json" 12
  done
elif [ "$SET" = workspace ]; then  # cuBLASLt's workspace: its memsets and the step, at 1 and 2 GPUs
  if [ -n "${GAP_WS_MODELS:-}" ]; then  # untraced, several presets: "tiny-14m:64 gpt-1.3b:8"
    for spec in $GAP_WS_MODELS; do
      for ws in ${GAP_WORKSPACES:-32 0}; do
        for n in 1 2; do
          MODEL=${spec%%:*} BATCH=${spec##*:} ours "${spec%%:*}-n$n-ws$ws" $n SCALESCOPE_CUBLASLT_WORKSPACE_MB=$ws --
        done
      done
    done
  else
    for ws in ${GAP_WORKSPACES:-32 0}; do
      ours n1-ws$ws 1 SCALESCOPE_CUBLASLT_WORKSPACE_MB=$ws -- --kernel-trace "$OUT/trace-n1-ws$ws"
      ours n2-ws$ws 2 SCALESCOPE_CUBLASLT_WORKSPACE_MB=$ws -- --kernel-trace "$OUT/trace-n2-ws$ws"
    done
    for ws in ${GAP_WORKSPACES:-32 0}; do
      echo "== kernels: 1 vs 2 GPUs, workspace $ws MiB (rank 0)"
      python3 bench/kernel_diff.py "$OUT/trace-n1-ws$ws/rank0.json" "$OUT/trace-n2-ws$ws/rank0.json" 4
    done
    echo "== kernels at 1 GPU: workspace 32 MiB vs 0"
    python3 bench/kernel_diff.py "$OUT/trace-n1-ws32/rank0.json" "$OUT/trace-n1-ws0/rank0.json" 8
  fi
elif [ "$SET" = graph ]; then  # --cuda-graph beside eager steps, 1 and 2 GPUs, and DDP
  for spec in ${GAP_WS_MODELS:-tiny-14m:64 gpt2-124m:16 gpt-1.3b:8}; do
    for n in 1 2; do
      MODEL=${spec%%:*} BATCH=${spec##*:} ours "${spec%%:*}-n$n-eager" $n --
      MODEL=${spec%%:*} BATCH=${spec##*:} ours "${spec%%:*}-n$n-graph" $n -- --cuda-graph
    done
  done
  if [ "${GAP_DDP:-1}" = 1 ]; then ddp n1 1 -- --phases; ddp n2 2 -- --phases; fi
  ours n2-graph-traced 2 -- --cuda-graph --kernel-trace "$OUT/trace-n2-graph"  # does CUPTI see graph kernels?
  $S analyze "$OUT"/trace-n2-graph/rank*.json > "$OUT/analyze-trace-n2-graph.txt" 2>&1
  echo "analyze trace-n2-graph: exit $?"; grep -A3 "^rank  steps" "$OUT/analyze-trace-n2-graph.txt"
elif [ "$SET" = autotune ]; then  # SCALESCOPE_GEMM_AUTOTUNE=0 and =1 (the default), 1 and 2 GPUs
  for spec in ${GAP_WS_MODELS:-tiny-14m:64 gpt2-124m:16 gpt-1.3b:8}; do
    for tune in 0 1; do
      for n in 1 2; do
        MODEL=${spec%%:*} BATCH=${spec##*:} ours "${spec%%:*}-n$n-tune$tune" $n SCALESCOPE_GEMM_AUTOTUNE=$tune --
      done
    done
  done
elif [ "$SET" = boundaries ]; then  # kernel boundaries at 1 and 2 GPUs, both sides
  timeout 120 build-device/bench/bench_kernel_boundary --json "$OUT/kernel-boundary.json" 2>&1 | tee "$OUT/kernel-boundary.txt"
  ours n1 1 -- --kernel-trace "$OUT/trace-n1"
  ours n2 2 -- --kernel-trace "$OUT/trace-n2"
  ddp n1 1 -- --trace-dir "$OUT/ddp-trace-n1"
  ddp n2 2 -- --trace-dir "$OUT/ddp-trace-n2"
  for side in trace ddp-trace; do
    echo "== $side: 1 vs 2 GPUs (rank 0)"
    python3 bench/kernel_diff.py "$OUT/$side-n1/rank0.json" "$OUT/$side-n2/rank0.json" 6
  done
elif [ "$SET" = optimizer ]; then  # --overlap-optimizer at 2 GPUs beside the default, and DDP
  for spec in ${GAP_WS_MODELS:-tiny-14m:64 gpt2-124m:16 gpt-1.3b:8}; do
    m=${spec%%:*}; trace1=(); trace2=()
    [ "$m" = "$MODEL" ] && trace1=(--kernel-trace "$OUT/trace-$m-n1") && trace2=(--kernel-trace "$OUT/trace-$m-n2")
    MODEL=$m BATCH=${spec##*:} ours "$m-n1" 1 -- "${trace1[@]}"
    MODEL=$m BATCH=${spec##*:} ours "$m-n2" 2 -- "${trace2[@]}"
    MODEL=$m BATCH=${spec##*:} ours "$m-n2-oo" 2 -- --overlap-optimizer
    MODEL=$m BATCH=${spec##*:} ours "$m-n2-comm" 2 -- --stream-priority comm
    MODEL=$m BATCH=${spec##*:} ours "$m-n2-oo-comm" 2 -- --overlap-optimizer --stream-priority comm
    if [ "${GAP_P2P_OFF:-0}" = 1 ]; then
      MODEL=$m BATCH=${spec##*:} ours "$m-n2-p2poff" 2 NCCL_P2P_DISABLE=1 --
      MODEL=$m BATCH=${spec##*:} ours "$m-n2-p2poff-oo" 2 NCCL_P2P_DISABLE=1 -- --overlap-optimizer
    fi
    [ "${GAP_DDP:-1}" = 1 ] || continue
    [[ " ${GAP_DDP_MODELS:-$m} " == *" $m "* ]] || continue
    MODEL=$m BATCH=${spec##*:} ddp "$m-n1" 1 --
    MODEL=$m BATCH=${spec##*:} ddp "$m-n2" 2 --
    [ "${GAP_P2P_OFF:-0}" = 1 ] && MODEL=$m BATCH=${spec##*:} ddp "$m-n2-p2poff" 2 NCCL_P2P_DISABLE=1 --
  done
  if [ -d "$OUT/trace-$MODEL-n2" ]; then
    echo "== $MODEL, ours traced: 1 vs 2 GPUs (rank 0, then rank 1)"
    python3 bench/kernel_diff.py "$OUT/trace-$MODEL-n1/rank0.json" "$OUT/trace-$MODEL-n2/rank0.json" 6
    python3 bench/kernel_diff.py "$OUT/trace-$MODEL-n1/rank0.json" "$OUT/trace-$MODEL-n2/rank1.json" 6 2>/dev/null | head -9
  fi
elif [ "$SET" = ctas ]; then  # NCCL's blocks capped: fewer SMs taken from backward's kernels
  ctas=(${GAP_CTAS:-8 16})
  for spec in ${GAP_WS_MODELS:-gpt2-124m:16 gpt-1.3b:8}; do
    m=${spec%%:*}; b=${spec##*:}
    MODEL=$m BATCH=$b ours "$m-n1" 1 --
    MODEL=$m BATCH=$b ours "$m-n2" 2 --
    for v in "${ctas[@]}"; do MODEL=$m BATCH=$b ours "$m-n2-ctas$v" 2 NCCL_MAX_CTAS=$v --; done
  done
  ours traced-n1 1 -- --kernel-trace "$OUT/trace-n1"
  ours traced-n2-ctas${ctas[0]} 2 NCCL_MAX_CTAS=${ctas[0]} -- --kernel-trace "$OUT/trace-n2-ctas"
  ours traced-n2-tune0 2 SCALESCOPE_GEMM_AUTOTUNE=0 -- --kernel-trace "$OUT/trace-n2-tune0"
  for t in n2-ctas n2-tune0; do
    echo "== $MODEL: beside NCCL, n1 vs $t rank 0"
    python3 bench/beside_nccl.py "$OUT/trace-n1/rank0.json" "$OUT/trace-$t/rank0.json" | tail -8
  done
elif [ "$SET" = embedding ]; then  # the tied embedding's gradient all-gathered instead of all-reduced at the end
  for spec in ${GAP_WS_MODELS:-gpt2-124m:16 gpt-1.3b:8}; do
    m=${spec%%:*}; b=${spec##*:}
    MODEL=$m BATCH=$b ours "$m-n1" 1 --
    for rep in ${GAP_REPS:-1 2}; do
      MODEL=$m BATCH=$b ours "$m-n2-allreduce-r$rep" 2 -- --embedding-exchange all-reduce
      MODEL=$m BATCH=$b ours "$m-n2-allgather-r$rep" 2 -- --embedding-exchange all-gather
    done
    for cap in ${GAP_CAPS:-}; do  # larger buckets: fewer, longer all-reduces beside backward
      MODEL=$m BATCH=$b ours "$m-n2-allgather-cap$cap" 2 -- --embedding-exchange all-gather --bucket-cap-mb "$cap"
    done
    p2p_off=0; [[ " ${GAP_P2P_OFF:-0} " == *" 1 "* || " ${GAP_P2P_OFF:-} " == *" $m "* ]] && p2p_off=1
    if [ $p2p_off = 1 ]; then
      MODEL=$m BATCH=$b ours "$m-n2-p2poff-allreduce" 2 NCCL_P2P_DISABLE=1 -- --embedding-exchange all-reduce
      MODEL=$m BATCH=$b ours "$m-n2-p2poff-allgather" 2 NCCL_P2P_DISABLE=1 -- --embedding-exchange all-gather
    fi
    if [ "${GAP_DDP:-1}" = 1 ]; then
      MODEL=$m BATCH=$b ddp "$m-n1" 1 --
      MODEL=$m BATCH=$b ddp "$m-n2" 2 --
      [ $p2p_off = 1 ] && MODEL=$m BATCH=$b ddp "$m-n2-p2poff" 2 NCCL_P2P_DISABLE=1 --
    fi
  done
  for f in $(ls "$OUT"/*-n2-*.json | grep -v "/ddp-"); do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(f\"{sys.argv[1].split('/')[-1]:<34} gathered {d.get('embedding_all_gathered')} last loss {d['losses'][-1]:.5f} replica spread {d['replica_gradient_spread']:.1e} all-gather {d['phases'].get('all_gather_s', 0)*1e3:.3f} ms\")" "$f"
  done
elif [ "$SET" = env ]; then  # is the compute slowdown at 2 GPUs without overlap NCCL's memory mapping?
  ours n1 1 --
  ours n2-no-overlap 2 -- --no-overlap
  ours n2-no-overlap-p2p-off 2 NCCL_P2P_DISABLE=1 -- --no-overlap
  ours n2-no-overlap-cumem-off 2 NCCL_CUMEM_ENABLE=0 -- --no-overlap
  ours n2 2 --
  ours n2-cumem-off 2 NCCL_CUMEM_ENABLE=0 --
elif [ "$SET" = phases ]; then  # both sides' forward/backward/optimizer CUDA-event phases at 1 and 2 GPUs
  for rep in ${GAP_REPS:-1 2}; do
    ours n1-r$rep 1 --
    ours n2-r$rep 2 --
    ours n2-no-overlap-r$rep 2 -- --no-overlap
    [ "${GAP_DDP:-1}" = 1 ] || continue
    ddp n1-r$rep 1 -- --phases
    ddp n2-r$rep 2 -- --phases
  done
fi
done
nccl_summary() {  # the distinct all-reduce lines of one rank's NCCL log, pointers and op counts blanked
  echo "-- $(basename "$1"): $(grep -m1 -o 'NCCL version [0-9.+a-z]*' "$1")"
  grep -E 'AllReduce|nChannels|channels' "$1" | sed -E 's/^[^]]*\] *//; s/opCount [0-9a-f]+//; s/0x[0-9a-f]+/P/g' |
    sort | uniq -c | sort -rn | head -14
}
if [[ "$SETS" == *" pairs "* ]]; then
  nccl_summary "$(ls "$OUT"/nccl-ours.*.log | head -1)"
  nccl_summary "$(ls "$OUT"/nccl-ddp.*.log | head -1)"
  tail -25 "$OUT/analyze-ddp-trace.txt"
fi
python3 bench/phase_table.py $(ls "$OUT"/*.json | grep -v '/ddp-\|/kernel-boundary')
for f in $(ls "$OUT"/ddp-*.json 2>/dev/null); do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=d.get('phases_ms',{}); print(f\"{sys.argv[1].split('/')[-1]:<28} {d['world_size']:>2} step {d['step_ms']:7.2f}\", *(f'{k} {v:.2f}' for k,v in p.items()))" "$f"
done
