#!/usr/bin/env python3
"""An all-reduce sweep through torch.distributed (NCCL) for checking scalescope's NCCL profiler plugin on a GPU
(bench/device-nccl-plugin.sh): for each size, WARMUP calls, then ITERS calls timed with CUDA events around the whole
loop, printed as "size_bytes N event_us X" (mean per call). Run under torchrun; with --same-gpu every rank uses GPU 0
and gets its own NCCL_HOSTID, so NCCL sees separate hosts and goes through its network transport (sockets on lo):
a real multi-rank NCCL with proxy threads on a one-GPU machine. The plugin's per-collective GPU times are then
compared with these event times by the device script.
"""
import argparse
import os

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--same-gpu", action="store_true")
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args()
    rank = int(os.environ.get("RANK", 0))
    if a.same_gpu:
        os.environ.setdefault("NCCL_HOSTID", f"scalescope-rank-{rank}")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        os.environ.setdefault("NCCL_IB_DISABLE", "1")
    local = 0 if a.same_gpu else int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    size = a.min_bytes
    while size <= a.max_bytes:
        x = torch.ones(size // 4, device="cuda", dtype=torch.float32)
        for _ in range(a.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.iters):
            dist.all_reduce(x)
        end.record()
        torch.cuda.synchronize()
        if rank == 0:
            print(f"size_bytes {size} event_us {start.elapsed_time(end) * 1e3 / a.iters:.2f}", flush=True)
        size *= a.factor
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
