"""A genuine DDP training job on CPU ranks (gloo) with one planted inefficiency, for `scalescope profile`'s tests.
Nothing in it knows about scalescope. Run under torchrun:

  torchrun --nproc_per_node 2 --redirects 1 --tee 1 tests/profile/ddp_job.py --steps 30 [--plant CAUSE]

CAUSE: none; straggler (rank 1 runs its forward four times: the other ranks wait in the all-reduce); slow-loader
(the DataLoader sleeps per batch); host-sync (a .item() on the loss every step, timed with a device sync);
find-unused (find_unused_parameters=True with a branch that is never used); crash (rank 1 raises a RuntimeError at
its third step).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self, width, depth, with_unused):
        super().__init__()
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(depth)])
        self.head = nn.Linear(width, 10)
        if with_unused:  # a layer the forward never uses: DDP must search for it every step
            self.unused = nn.Linear(width, width)

    def forward(self, x, extra=0):
        for _ in range(1 + extra):
            y = self.body(x)
        return self.head(y)


class Data(Dataset):
    def __init__(self, n, width, delay_s):
        self.n, self.width, self.delay_s = n, width, delay_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.width, generator=g), i % 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--plant", default="none", choices=["none", "straggler", "slow-loader", "host-sync", "find-unused", "crash"])
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Net(a.width, a.depth, a.plant == "find-unused"), find_unused_parameters=a.plant == "find-unused")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    delay = 0.004 if a.plant == "slow-loader" else 0.0
    loader = DataLoader(Data(a.steps * a.batch * world, a.width, delay), batch_size=a.batch,
                        sampler=torch.utils.data.distributed.DistributedSampler(Data(a.steps * a.batch * world, a.width, 0)),
                        num_workers=0)
    start = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        if step >= a.steps:
            break
        extra = 3 if (a.plant == "straggler" and rank == 1) else 0
        if a.plant == "crash" and rank == 1 and step == 2:
            raise RuntimeError("planted failure on rank 1 at step 2")
        loss = nn.functional.cross_entropy(model(x, extra), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.plant == "host-sync":
            loss.item()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f} time {(time.perf_counter() - start) * 1e3:.1f} ms", flush=True)
    if rank == 0:
        print(f"done: {a.steps} steps in {time.perf_counter() - start:.2f} s", flush=True)
    dist.destroy_process_group()
    os._exit(0)  # gloo can hang at interpreter exit (Debian's torch 1.13)


if __name__ == "__main__":
    main()
