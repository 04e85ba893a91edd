#!/usr/bin/env python3
"""The GPT decoder of scalescope (src/train/gpt.h) in plain PyTorch, timed like bench_gpt_speed.

Same architecture: token + position embeddings, pre-LayerNorm blocks (LayerNorm eps 1e-5, causal multi-head
attention through F.scaled_dot_product_attention(is_causal=True), GELU tanh approximation MLP), final
LayerNorm, output head tied to the token embedding, mean cross-entropy over all B·T positions; no dropout.
Same initialisation scheme (N(0, 0.02²) matrices and embeddings, the two residual projections
N(0, (0.02/sqrt(2L))²), biases 0, LayerNorm 1/0) — the same distribution, not the same numbers (scalescope
draws from its own counter-based generator). Same training step: eager mode, torch.autocast(bfloat16) with
fp32 parameters, torch.optim.AdamW(fused=True) with weight decay on the four matrices of each block only.

Same data (--data, as bench_gpt_speed): by default byte-level tokens of real text ($SCALESCOPE_DATA, else
/usr/share/games/fortunes), rows of seq + 1 tokens at random offsets, a fresh batch each step; 'synthetic' is
random bytes, 'random' ids uniform over the vocabulary (this peer's data until 2026-12-01); a .bin file is an
llm.c token file (magic 20240520 header) or a nanoGPT one (raw uint16).

Same protocol: a step stages its batch of rows x (seq + 1) tokens from pinned host memory, runs forward,
backward and AdamW; 3 warm-up rounds, 5 timed rounds of 10 steps timed with CUDA events; step time = mean of
the middle 3 rounds / 10. Memory: torch.cuda.max_memory_allocated (peak of live tensors) and
max_memory_reserved (what the caching allocator took from the device).

    python3 bench/peers/gpt_pytorch.py --model gpt2-124m --batch 16 --json out.json
    torchrun --standalone --nproc_per_node 4 bench/peers/gpt_pytorch.py --model gpt2-124m --batch 16   # DDP

Under torchrun it trains with PyTorch DDP (NCCL, default buckets), --batch rows per rank (weak scaling), and
reports the slowest rank's step time and the global tokens/s.

Needs only torch.
"""
import argparse
import os
import json
import math

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.nn as nn
import torch.nn.functional as F

# name: (layers, d_model, heads, ffn, vocab, seq) — as GptConfig::preset
PRESETS = {
    "tiny-14m": (4, 312, 12, 1200, 30522, 128),
    "gpt2-124m": (12, 768, 12, 3072, 50304, 1024),
    "gpt-350m": (24, 1024, 16, 4096, 50304, 1024),
    "gpt-1.3b": (24, 2048, 16, 8192, 50304, 1024),
    "llama2-7b-shape": (32, 4096, 32, 11008, 32000, 4096),
    "llama2-13b-shape": (40, 5120, 40, 13824, 32000, 4096),
}


LLMC_MAGIC = 20240520  # llm.c dev/data/data_common.py: 256 int32 header, version 1 = uint16 tokens
MAX_CORPUS_BYTES = 256 << 20  # as scalescope's kMaxCorpusBytes: text beyond this is not read


def data_error(message):
    raise SystemExit(f"gpt_pytorch.py: {message}")


def load_tokens(data, vocab, min_tokens, origin=""):
    """The corpus as a 1-D int64 tensor, read by scalescope's TextCorpus rules (src/train/text_data.h): a .bin file
    is an llm.c token file (header magic 20240520, version 1, its count matching the size) or else a nanoGPT one
    (raw uint16); otherwise a text file, or a directory whose regular files are read sorted by name, each file
    once even when reached through several links, files with a NUL byte in their first 4 KiB skipped as binary,
    at most 256 MiB in all, one token per byte. Exits with a message naming the path and what to do otherwise."""
    if data == "synthetic":
        return torch.randint(0, 256, (4 << 20,), generator=torch.Generator().manual_seed(42), dtype=torch.int64)
    where = f"'{data}'{origin}"
    remedy = "pass --data FILE|DIR, install the default text (apt-get install fortunes), or use --data synthetic"
    if not os.path.exists(data):
        data_error(f"data path {where} does not exist; {remedy}")
    if not (os.path.isfile(data) or os.path.isdir(data)):
        data_error(f"data path {where} is not a regular file or directory (a device, FIFO or socket); {remedy}")
    if os.path.isfile(data) and data.endswith(".bin"):
        with open(data, "rb") as f:
            raw = f.read()
        if len(raw) >= 1024 and int.from_bytes(raw[:4], "little", signed=True) == LLMC_MAGIC:
            version = int.from_bytes(raw[4:8], "little", signed=True)
            count = int.from_bytes(raw[8:12], "little", signed=True)
            if version != 1:
                data_error(f"{where} is an llm.c token file of version {version}; only version 1 (uint16 tokens) is read")
            if count < 0 or 1024 + 2 * count != len(raw):
                data_error(f"{where} announces {count} tokens but holds {len(raw) - 1024} bytes after its header")
            raw = raw[1024:]
        if len(raw) % 2:
            data_error(f"{where} has an odd size: not a uint16 token file")
        tokens = (torch.frombuffer(bytearray(raw), dtype=torch.int16).to(torch.int64) & 0xFFFF if raw
                  else torch.empty(0, dtype=torch.int64))  # little-endian uint16, as x86 and Arm hosts store it
    else:
        files = [data] if os.path.isfile(data) else sorted(
            os.path.join(data, n) for n in os.listdir(data) if os.path.isfile(os.path.join(data, n)))
        seen, chunks, total = set(), [], 0
        for path in files:
            st = os.stat(path)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with open(path, "rb") as f:
                if b"\0" in f.read(4096):
                    continue  # binary (e.g. fortune's .dat indexes)
                f.seek(0)
                body = f.read(MAX_CORPUS_BYTES - total)
            chunks.append(body)
            total += len(body)
            if total >= MAX_CORPUS_BYTES:
                break
        raw = b"".join(chunks)
        tokens = (torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(torch.int64) if raw
                  else torch.empty(0, dtype=torch.int64))
    if tokens.numel() < min_tokens:
        data_error(f"{where} holds {tokens.numel()} tokens, fewer than one row of {min_tokens}; {remedy}")
    if int(tokens.max()) >= vocab:
        data_error(f"{where} holds token id {int(tokens.max())}, beyond the vocabulary of {vocab}")
    return tokens


class Block(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.fc = nn.Linear(d, ffn)
        self.fc_proj = nn.Linear(ffn, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, d, heads, ffn, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, ffn) for _ in range(layers))
        self.lnf = nn.LayerNorm(d, eps=1e-5)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" in name:
                nn.init.ones_(p)
            elif name.endswith("proj.weight"):  # attention and MLP output projections
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.lnf(x), self.wte.weight)  # tied head


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--layers", type=int, default=0, help="override the preset's layer count (0: keep)")
    ap.add_argument("--warmup-rounds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps-per-round", type=int, default=10)
    ap.add_argument("--data", default="",
                    help="a text file or directory, a .bin token file, 'synthetic' (random bytes) or 'random' (ids "
                         "uniform over the vocabulary); default $SCALESCOPE_DATA, else /usr/share/games/fortunes")
    ap.add_argument("--json", default="")
    ap.add_argument("--phases", action="store_true",
                    help="also time forward, backward (with DDP's exposed all-reduce: the stream waits for the last "
                         "bucket at the end of backward) and optimizer with CUDA events around each, as scalescope's "
                         "phases; adds three event records per step")
    ap.add_argument("--trace-dir", default="",
                    help="after timing, profile 3 more steps (torch.profiler, CPU + CUDA) and write one Kineto trace "
                         "per rank, DIR/rank<R>.json, for `scalescope analyze`")
    ap.add_argument("--sdpa-backend", default="default", choices=["default", "flash", "cudnn", "efficient"],
                    help="restrict scaled_dot_product_attention to one backend (torch.nn.attention.sdpa_kernel) for "
                         "the whole run; default: PyTorch's own choice (FlashAttention-2 on an H200 in torch 2.11)")
    a = ap.parse_args()
    if a.sdpa_backend != "default":  # held for the whole run: the forward's choice also fixes the backward's kernel
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                   "efficient": SDPBackend.EFFICIENT_ATTENTION}[a.sdpa_backend]
        sdpa_kernel(backend).__enter__()

    layers, d, heads, ffn, vocab, seq = PRESETS[a.model]
    layers = a.layers or layers
    # The data before the GPU: a bad path fails at once. Tokens as bench_gpt_speed reads them.
    env_data = os.environ.get("SCALESCOPE_DATA", "")
    data = a.data or env_data or "/usr/share/games/fortunes"
    corpus = None
    if data != "random":
        corpus = load_tokens(data, vocab, seq + 1, " (from $SCALESCOPE_DATA)" if not a.data and env_data else "")
    data_description = (f"random: token ids uniform over the vocabulary of {vocab}" if corpus is None
                        else f"{data}: {corpus.numel()} tokens")
    # Under torchrun (RANK/WORLD_SIZE/LOCAL_RANK set): PyTorch DDP, one process per GPU, default buckets
    # (first 1 MiB, cap 25 MiB), gradients in fp32 as the parameters — the same gradient dtype as scalescope's.
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if world > 1 or "RANK" in os.environ:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
    dev = torch.device("cuda", local_rank)
    torch.manual_seed(1234)
    model = GPT(layers, d, heads, ffn, vocab, seq).to(dev)
    params = sum(p.numel() for p in model.parameters())
    if dist.is_initialized():
        model = DDP(model, device_ids=[local_rank])
    named = list((n.removeprefix("module."), p) for n, p in model.named_parameters())
    decay = [p for n, p in named if p.dim() == 2 and n.startswith("blocks.")]
    no_decay = [p for n, p in named if not (p.dim() == 2 and n.startswith("blocks."))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8, fused=True)
    gen = torch.Generator().manual_seed(42 + rank)
    steps = (a.warmup_rounds + a.rounds) * a.steps_per_round + (5 if a.trace_dir else 0)
    if corpus is None:
        batches = [torch.randint(0, vocab, (a.batch, seq + 1), generator=gen, dtype=torch.int64).pin_memory()
                   for _ in range(steps)]
    else:  # rows at random offsets of the corpus, each step's drawn ahead (the steps never wait for them)
        offsets = torch.arange(seq + 1)
        batches = [corpus[torch.randint(0, corpus.numel() - seq, (a.batch, 1), generator=gen) + offsets].pin_memory()
                   for _ in range(steps)]

    phase_events = []  # per timed step with --phases: events after staging, forward, backward, optimizer

    def step(i, marks=None):
        rows = batches[i % len(batches)].to(dev, non_blocking=True)
        if marks: marks[0].record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(rows[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, vocab), rows[:, 1:].reshape(-1))
        if marks: marks[1].record()
        loss.backward()
        if marks: marks[2].record()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if marks: marks[3].record()
        return loss.detach()

    torch.cuda.reset_peak_memory_stats()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    round_ms, losses, i = [], [], 0
    for r in range(a.warmup_rounds + a.rounds):
        if dist.is_initialized():  # every rank starts the round together, as scalescope's ranks do
            dist.barrier(device_ids=[local_rank])
            torch.cuda.synchronize()
        start.record()
        round_losses = []
        for _ in range(a.steps_per_round):
            marks = None
            if a.phases and r >= a.warmup_rounds:
                marks = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                phase_events.append(marks)
            round_losses.append(step(i, marks))
            i += 1
        stop.record()
        stop.synchronize()
        if r >= a.warmup_rounds:
            round_ms.append(start.elapsed_time(stop) / a.steps_per_round)
        losses += [float(x) for x in round_losses]
    if a.trace_dir:  # outside the timed rounds: the profiler's own overhead never touches the figures above
        os.makedirs(a.trace_dir, exist_ok=True)
        path = os.path.join(a.trace_dir, f"rank{rank}.json")
        sched = torch.profiler.schedule(wait=1, warmup=1, active=3)
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts, schedule=sched,
                                    on_trace_ready=lambda prof: prof.export_chrome_trace(path)) as prof:
            for _ in range(5):
                step(i)
                i += 1
                prof.step()
        torch.cuda.synchronize()
    if dist.is_initialized():  # the job's step is the slowest rank's
        t = torch.tensor(round_ms, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        round_ms = t.tolist()
    middle = sorted(round_ms)[1:-1] if len(round_ms) >= 3 else round_ms  # mean of the middle rounds
    step_ms = sum(middle) / len(middle)
    tokens_per_s = world * a.batch * seq / (step_ms / 1e3)
    allocated, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    gib = 1024 ** 3
    if rank != 0:
        dist.destroy_process_group()
        return
    print(f"pytorch {a.model} (layers {layers}) world size {world}, batch {a.batch} per rank: {tokens_per_s / 1e3:.1f} k tokens/s, step {step_ms:.2f} ms, "
          f"max allocated {allocated / gib:.2f} GiB, reserved {reserved / gib:.2f} GiB; "
          f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; torch {torch.__version__}, SDPA backend {a.sdpa_backend} (flash "
          f"{torch.backends.cuda.flash_sdp_enabled()}, cuDNN {torch.backends.cuda.cudnn_sdp_enabled()})")
    result = {
        "schema": "scalescope.gpt_speed/1",
        "implementation": f"pytorch {torch.__version__} eager, autocast bf16, SDPA, fused AdamW",
        "device": torch.cuda.get_device_name(),
        "sdpa_backend": a.sdpa_backend,
        "model": a.model, "layers": layers, "batch": a.batch, "data": data_description, "seq": seq, "parameters": params, "world_size": world,
        "protocol": {"warmup_rounds": a.warmup_rounds, "rounds": a.rounds, "steps_per_round": a.steps_per_round},
        "round_step_ms": round_ms, "step_ms": step_ms, "tokens_per_s": tokens_per_s,
        "memory": {"max_allocated_bytes": allocated, "max_reserved_bytes": reserved},
        "loss_first": losses[0], "loss_last": losses[-1],
    }
    if phase_events:  # rank 0's mean per timed step, ms; the events of every round have completed
        names = ("forward", "backward_with_exposed_comm", "optimizer")
        result["phases_ms"] = {name: sum(m[k].elapsed_time(m[k + 1]) for m in phase_events) / len(phase_events)
                               for k, name in enumerate(names)}
        print("phases (ms per step, rank 0): " + ", ".join(f"{k} {v:.2f}" for k, v in result["phases_ms"].items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
