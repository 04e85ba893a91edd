#!/usr/bin/env python3
"""A DDP training job for `scalescope profile`'s GPU measurements (bench/device-profile.sh): unmodified user code,
run under torchrun, on one GPU per rank (NCCL) or CPU ranks (gloo) when no GPU is present.

It prints its own step time over steps [--time-from, --steps), CUDA-synchronised wall clock, as
"step_time X ms" — the figure the overhead comparison uses: profile's window (steps 10–15 by default) lies before
--time-from, so the line measures what profile costs outside the window.

  --plant none         a bf16 MLP with 8 layers of 4096, batch 8192 per rank: GPU-bound
  --plant host-sync    the same with .item() on the loss and on the gradient norm every step
  --plant find-unused  the same with find_unused_parameters=True and a layer the forward never uses
  --plant slow-loader  the same fed by a DataLoader without workers whose samples take CPU time
  --plant mask-sync    the same with a boolean-mask select of the confident rows and .item() on their mean each step
  --plant tolist       the same with a per-step metric read with .tolist() (64 predicted classes)
  --same-gpu           every rank on GPU 0 (NCCL over sockets between them): several ranks on a one-GPU machine
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self, width, depth, unused):
        super().__init__()
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)])
        self.head = nn.Linear(width, 16)
        if unused:
            self.unused = nn.Linear(width, width)

    def forward(self, x):
        return self.head(self.body(x))


class Samples(torch.utils.data.Dataset):
    def __init__(self, n, width):
        self.n, self.width = n, width

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.randn(self.width)
        for _ in range(12):  # CPU work per sample, as a transform
            x = torch.tanh(x * 1.01)
        return x, i % 16


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--plant", default="none", choices=["none", "host-sync", "find-unused", "slow-loader", "mask-sync", "tolist"])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--time-from", type=int, default=50)
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--batch", type=int, default=8192)
    p.add_argument("--same-gpu", action="store_true",
                   help="every rank on GPU 0 with its own NCCL_HOSTID: NCCL's network transport on a one-GPU machine")
    a = p.parse_args()
    gpu = torch.cuda.is_available()
    if gpu and a.same_gpu:
        os.environ.setdefault("NCCL_HOSTID", f"scalescope-rank-{os.environ.get('RANK', '0')}")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        os.environ.setdefault("NCCL_IB_DISABLE", "1")
    dist.init_process_group("nccl" if gpu else "gloo")
    rank = dist.get_rank()
    local = 0 if a.same_gpu else int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    dtype = torch.bfloat16 if gpu else torch.float32
    model = Net(a.width, a.depth, a.plant == "find-unused").to(device=device, dtype=dtype)
    ddp = DDP(model, device_ids=[device.index] if gpu else None, find_unused_parameters=a.plant == "find-unused")
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    if a.plant == "slow-loader":
        loader = iter(torch.utils.data.DataLoader(Samples(a.steps * a.batch, a.width), batch_size=a.batch, num_workers=0))
        batches = lambda: next(loader)
    else:
        x0 = torch.randn(a.batch, a.width, device=device, dtype=dtype)
        y0 = torch.randint(0, 16, (a.batch,), device=device)
        batches = lambda: (x0, y0)
    t0 = None
    for step in range(a.steps):
        if step == a.time_from:
            if gpu:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        x, y = batches()
        x, y = x.to(device=device, dtype=dtype, non_blocking=True), y.to(device, non_blocking=True)
        out = ddp(x).float()
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.plant == "host-sync":
            loss.item()
            torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1e9).item()
        elif a.plant == "mask-sync":  # the select's size depends on the data: nonzero waits for the GPU, then .item()
            probs = out.detach().softmax(-1).amax(-1)
            probs[probs > 0.05].mean().item()
        elif a.plant == "tolist":
            out.detach()[:64].argmax(-1).tolist()
    if gpu:
        torch.cuda.synchronize()
    if rank == 0 and t0 is not None:
        print(f"step_time {(time.perf_counter() - t0) * 1e3 / (a.steps - a.time_from):.3f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
