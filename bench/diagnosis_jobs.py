#!/usr/bin/env python3
"""Single-GPU PyTorch jobs with one known inefficiency each, profiled as a user would profile them, for the diagnosis.

Each job prints its own step time measured without the profiler (20 steps, CUDA-synchronised wall clock) as
"step_time X ms", then records a torch.profiler trace of 5 steps after 3 warm-up steps. `scalescope analyze
JOB/trace.json.gz JOB/train.log` must name the job's cause first:

  healthy         large bf16 GEMMs, nothing else                         -> no defect (GPU busy almost all the step)
  host_sync       .item() on intermediate values and per-step metrics     -> host-sync
  input_bound     a DataLoader without workers whose samples take CPU time -> input-bound
  launch_bound    300 tiny layers at batch 4: kernels of a few µs          -> launch-bound
  find_unused     DDP (one rank) with find_unused_parameters=True, 400 small layers -> ddp-unused-parameters
  find_unused_off the same with the flag off                               -> not ddp-unused-parameters (the control)

Usage: diagnosis_jobs.py OUTDIR [JOB…]   (all jobs by default). Needs one CUDA GPU and torch ≥ 2.0.
"""
import os
import sys
import time

import torch
import torch.nn as nn

WARMUP, TIMED = 5, 20


def step_time_ms(step, n=TIMED):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


def profile(step, path):
    from torch.profiler import ProfilerActivity, profile as prof, schedule
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=schedule(wait=0, warmup=3, active=5),
              on_trace_ready=lambda p: p.export_chrome_trace(path)) as p:
        for _ in range(8):
            step()
            p.step()
    torch.cuda.synchronize()


def run(name, model, step_fn, out, log):
    for _ in range(WARMUP):
        step_fn()
    ms = step_time_ms(step_fn)
    print(f"[{name}] step {WARMUP + TIMED} | step_time {ms:.2f} ms", file=log, flush=True)
    path = os.path.join(out, "trace.json")
    profile(step_fn, path)
    os.system(f"gzip -f {path}")
    print(f"[{name}] profiled 5 steps into trace.json.gz", file=log, flush=True)


def mlp(width, depth, dtype=torch.float32):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).cuda().to(dtype)


def job_healthy(out, log):
    model = mlp(8192, 6, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()
        opt.step()
    run("healthy", model, step, out, log)


def job_host_sync(out, log):
    model = mlp(2048, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(1024, 2048, device="cuda")
    history = []

    def step():
        opt.zero_grad(set_to_none=True)
        h = x
        for i, layer in enumerate(model):
            h = layer(h)
            if i % 4 == 3:  # a data-dependent check inside forward: reads a value back to the host
                if h.abs().max().item() > 1e6:
                    h = h / 2
        loss = h.pow(2).mean()
        loss.backward()
        opt.step()
        history.append(loss.item())                 # per-step logging
        _ = (h.argmax(-1) == 0).float().mean().cpu()  # a metric on the host
    run("host_sync", model, step, out, log)


class SlowDataset(torch.utils.data.Dataset):
    """Samples that cost CPU time to make (decoding, augmentation): 0.4 ms each."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.0004:
            pass
        return torch.randn(1024), torch.tensor(i % 10)


def job_input_bound(out, log):
    model = mlp(1024, 4)
    head = nn.Linear(1024, 10).cuda()
    opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    loader = iter(torch.utils.data.DataLoader(SlowDataset(), batch_size=64, num_workers=0))
    lossf = nn.CrossEntropyLoss()

    def step():
        xb, yb = next(loader)
        xb, yb = xb.cuda(non_blocking=True), yb.cuda(non_blocking=True)
        opt.zero_grad(set_to_none=True)
        lossf(head(model(xb)), yb).backward()
        opt.step()
    run("input_bound", model, step, out, log)


def job_launch_bound(out, log):
    model = mlp(32, 300)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4, 32, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).sum().backward()
        opt.step()
    run("launch_bound", model, step, out, log)


def job_find_unused(out, log, flag):
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1)
    model = torch.nn.parallel.DistributedDataParallel(mlp(256, 400), find_unused_parameters=flag)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).sum().backward()
        opt.step()
    run("find_unused" if flag else "find_unused_off", model, step, out, log)


JOBS = {
    "healthy": job_healthy,
    "host_sync": job_host_sync,
    "input_bound": job_input_bound,
    "launch_bound": job_launch_bound,
    "find_unused": lambda o, l: job_find_unused(o, l, True),
    "find_unused_off": lambda o, l: job_find_unused(o, l, False),
}


def main():
    outdir = sys.argv[1]
    names = sys.argv[2:] or list(JOBS)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    for name in names:
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        # The job's log is what it prints, warnings included (stderr goes to the same file).
        with open(os.path.join(d, "train.log"), "w") as log:
            fd = os.dup(2)
            os.dup2(log.fileno(), 2)
            try:
                JOBS[name](d, log)
            finally:
                sys.stderr.flush()
                os.dup2(fd, 2)
                os.close(fd)
        print(open(os.path.join(d, "train.log")).read(), end="", flush=True)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
