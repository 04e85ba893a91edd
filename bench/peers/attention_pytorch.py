#!/usr/bin/env python3
"""One layer's causal attention in PyTorch, timed like bench_attention_speed: the peer of our flash kernels.

Same inputs and layout as the GPT peer (bench/peers/gpt_pytorch.py) hands to attention: q, k and v are views of
one [B, T, 3d] bf16 tensor (the qkv projection's output) as [B, H, T, hd]; F.scaled_dot_product_attention(
is_causal=True) with one backend allowed at a time (--backend: flash = FlashAttention-2's kernels in PyTorch,
cudnn = cuDNN's fused attention), forward alone and backward alone (y from one forward kept; the gradients of the
q, k, v views, so SDPA's backward without the copy into qkv's gradient that follows it in a model — ours writes
that layout itself). dy has y's own memory layout, [B, T, H, hd] in memory, as the output projection's backward
hands it to SDPA in the model; a contiguous [B, H, T, hd] dy (this script until 2026-12-01; --contiguous-dy)
moved the flash backward by at most 0.03 ms (bench/RESULTS.md, 2026-12-01, third session). Each timing is the median over --runs calls of
CUDA-event time after 3 warm-up calls. FLOPs as bench_attention_speed counts them: 4·B·H·hd·T(T+1)/2 forward and
10·B·H·hd·T(T+1)/2 backward (the causal products needed, 2·hd FLOPs per query-key pair each).

    python3 bench/peers/attention_pytorch.py [--shape B,T,H,hd]... [--backend flash|cudnn]... [--runs 30] [--json FILE]

Shapes default to bench_attention_speed's: 16,1024,12,64 (gpt2-124m) and 8,1024,16,128 (gpt-1.3b). Needs torch.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def parse_shape(text):
    try:
        b, t, h, hd = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape {text!r}: expected B,T,H,hd (four whole numbers, e.g. 8,1024,16,128)")
    if min(b, t, h, hd) < 1:
        raise argparse.ArgumentTypeError(f"--shape {text!r}: every size must be >= 1")
    return b, t, h, hd


def median_seconds(runs, body):
    for _ in range(3):
        body()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        body()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def measure(shape, runs, backend="flash", model_layout=True):
    b, t, h, hd = shape
    d = h * hd
    gen = torch.Generator(device="cuda").manual_seed(1)
    qkv = torch.randn(b, t, 3 * d, device="cuda", dtype=torch.bfloat16, generator=gen).requires_grad_(True)

    def heads():
        q, k, v = qkv.split(d, dim=2)
        return tuple(z.view(b, t, h, hd).transpose(1, 2) for z in (q, k, v))

    pairs = b * h * t * (t + 1) / 2
    with sdpa_kernel([BACKENDS[backend]]):
        with torch.no_grad():
            fwd = median_seconds(runs, lambda: F.scaled_dot_product_attention(*heads(), is_causal=True))
        q, k, v = heads()
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        dy = torch.empty_like(y) if model_layout else torch.empty(b, h, t, hd, device="cuda", dtype=torch.bfloat16)
        dy.normal_(generator=gen)
        # The gradients of the [B, H, T, hd] views: SDPA's backward alone, not the copy of dq, dk, dv into
        # qkv's gradient that follows it in a model (our backward writes dqkv itself).
        bwd = median_seconds(runs, lambda: torch.autograd.grad(y, (q, k, v), dy, retain_graph=True))
    return {"backend": backend, "dy_layout": "model (y's)" if model_layout else "contiguous [B, H, T, hd]",
            "batch": b, "seq": t, "heads": h, "head_dim": hd, "forward_s": fwd, "backward_s": bwd,
            "forward_flops": 4 * hd * pairs, "backward_flops": 10 * hd * pairs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", type=parse_shape, action="append", help="B,T,H,hd (repeatable)")
    ap.add_argument("--backend", choices=sorted(BACKENDS), action="append",
                    help="SDPA backend (repeatable; default flash)")
    ap.add_argument("--contiguous-dy", action="store_true",
                    help="also time the backward with a contiguous [B, H, T, hd] dy (the layout before 2026-12-01)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", help="write the measurements here (atomically)")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be >= 1")
    if not torch.cuda.is_available():
        sys.exit("attention_pytorch.py: no CUDA device; run it on the GPU machine")
    shapes = a.shape or [(16, 1024, 12, 64), (8, 1024, 16, 128)]
    results = []
    runs = [(s, be, True) for s in shapes for be in (a.backend or ["flash"])]
    if a.contiguous_dy:
        runs += [(s, be, False) for s in shapes for be in (a.backend or ["flash"])]
    for s, be, model_layout in runs:
        r = measure(s, a.runs, be, model_layout)
        results.append(r)
        print(f"B {r['batch']} T {r['seq']} H {r['heads']} hd {r['head_dim']}: pytorch SDPA {be} (dy {r['dy_layout']}) forward "
              f"{r['forward_s'] * 1e3:7.3f} ms ({r['forward_flops'] / r['forward_s'] / 1e12:5.1f} TFLOP/s)  backward "
              f"{r['backward_s'] * 1e3:7.3f} ms ({r['backward_flops'] / r['backward_s'] / 1e12:5.1f} TFLOP/s)")
    if a.json:
        doc = {"schema": "scalescope.attention_speed_pytorch/1", "torch": torch.__version__,
               "device": torch.cuda.get_device_name(), "runs": a.runs, "shapes": results}
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
