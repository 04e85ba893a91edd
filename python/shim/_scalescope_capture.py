"""What `scalescope profile` records inside each process of the user's job (imported by the sitecustomize beside it).

Per process that steps an optimizer (a rank), in SCALESCOPE_JOB_DIR:
  capture.rank<R>.json  schema scalescope.capture/1: the wall time between consecutive optimizer steps (ms), the
                        profiled window's place in that list, DDP's configuration and logging data, the versions,
                        and notes on anything that could not be captured. Rewritten atomically every few seconds
                        and at exit, so a killed or hung job still leaves its record.
  trace.rank<R>.json.gz torch.profiler's trace of the window: SCALESCOPE_STEPS steps after SCALESCOPE_WARMUP.

Step boundaries are the optimizer's steps: PyTorch's global step hook (torch >= 2.0), or each optimizer class's
step wrapped on first construction (older torch). With several optimizers, the first one to step sets the pace.
Nothing here changes what the job computes; every failure is caught and noted.
"""

import atexit
import functools
import gzip
import importlib
import importlib.abc
import importlib.util
import json
import os
import shutil
import socket
import sys
import time

SCHEMA = "scalescope.capture/1"
_notes = []
_state = None


def _env_int(name, default):
    try:
        return max(0, int(os.environ.get(name, default)))
    except ValueError:
        return default


def note_failure(what, error):
    """Records what could not be captured; never raises."""
    text = f"{what}: {type(error).__name__}: {error}"
    _notes.append(text)
    try:
        job = os.environ.get("SCALESCOPE_JOB_DIR")
        if job:
            with open(os.path.join(job, f"shim-notes.pid{os.getpid()}.txt"), "a") as f:
                f.write(text + "\n")
    except Exception:
        pass


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Waits for `import torch` to finish, then installs the hooks (one shot)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            try:
                _install(module)
            except Exception as e:
                note_failure("installing the hooks", e)

        spec.loader.exec_module = exec_module
        return spec


def watch_for_torch():
    if "torch" in sys.modules:
        _install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder())


def _install(torch):
    global _state
    if _state is not None:
        return
    _state = _Capture(torch)
    optimizer_module = sys.modules.get("torch.optim.optimizer") or importlib.import_module("torch.optim.optimizer")
    if hasattr(optimizer_module, "register_optimizer_step_post_hook"):
        optimizer_module.register_optimizer_step_post_hook(lambda opt, args, kwargs: _state.on_step(opt))
        _state.hooked = "global optimizer step hook"
    else:
        original_init = torch.optim.Optimizer.__init__

        @functools.wraps(original_init)
        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            try:
                _wrap_step(type(self))
            except Exception as e:
                note_failure("wrapping the optimizer's step", e)

        torch.optim.Optimizer.__init__ = init
        _state.hooked = "optimizer classes' step wrapped"
    try:
        ddp = torch.nn.parallel.DistributedDataParallel
        original_ddp_init = ddp.__init__

        @functools.wraps(original_ddp_init)
        def ddp_init(self, *args, **kwargs):
            original_ddp_init(self, *args, **kwargs)
            try:
                _state.on_ddp(self)
            except Exception as e:
                note_failure("reading DDP's configuration", e)

        ddp.__init__ = ddp_init
    except Exception as e:
        note_failure("hooking DistributedDataParallel", e)
    atexit.register(_state.finish)
    # Jobs that end by destroy_process_group() or os._exit() (gloo can hang at interpreter exit, so some skip the
    # exit handlers) still leave their final record.
    try:
        dist = torch.distributed
        original_destroy = dist.destroy_process_group

        @functools.wraps(original_destroy)
        def destroy_process_group(*args, **kwargs):
            _state.write()
            return original_destroy(*args, **kwargs)

        dist.destroy_process_group = destroy_process_group
    except Exception as e:
        note_failure("hooking destroy_process_group", e)
    original_exit = os._exit

    @functools.wraps(original_exit)
    def _exit(code):
        _state.finish()
        original_exit(code)

    os._exit = _exit


def _wrap_step(cls):
    if cls.__dict__.get("_scalescope_wrapped"):
        return
    original_step = cls.step

    @functools.wraps(original_step)
    def step(self, *args, **kwargs):
        result = original_step(self, *args, **kwargs)
        _state.on_step(self)
        return result

    cls.step = step
    cls._scalescope_wrapped = True


class _Capture:
    def __init__(self, torch):
        self.torch = torch
        self.job = os.environ["SCALESCOPE_JOB_DIR"]
        self.warmup = _env_int("SCALESCOPE_WARMUP", 10)
        self.window = _env_int("SCALESCOPE_STEPS", 5)
        self.hooked = ""
        self.pace_setter = None  # id of the optimizer whose steps count
        self.steps = 0  # optimizer steps seen
        self.last = None
        self.step_ms = []
        self.window_first = None  # index in step_ms of the first profiled interval
        self.window_count = 0
        self.export_index = None  # the interval inflated by writing the trace
        self.profiler = None
        self.trace_file = None
        self.ddp = None  # a weak reference to the DDP module
        self.ddp_config = None
        self.ddp_logging = None
        self.rank = None
        self.pid = None
        self.world_size = None
        self.last_write = 0.0
        self.ended = False

    # ── identity ──
    def _identify(self):
        self.pid = os.getpid()
        dist = getattr(self.torch, "distributed", None)
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
                return
        except Exception as e:
            note_failure("reading the process group", e)
        self.rank = int(os.environ.get("RANK", 0) or 0)
        self.world_size = int(os.environ.get("WORLD_SIZE", 1) or 1)

    # ── hooks ──
    def on_step(self, optimizer):
        now = time.perf_counter()
        try:
            if self.pace_setter is None:
                self.pace_setter = id(optimizer)
                self._identify()
            elif id(optimizer) != self.pace_setter:
                return
            self.steps += 1
            if self.last is not None:
                self.step_ms.append((now - self.last) * 1e3)
            self.last = now
            if self.profiler is None and self.window > 0 and self.trace_file is None and self.steps == self.warmup + 1:
                self._start_profiler()
            elif self.profiler is not None:
                self.profiler.step()
                self.window_count += 1
                if self.window_count >= self.window + 1:  # the warm-up step and the window
                    self._stop_profiler()
            if now - self.last_write > 3.0:
                self.write()
                self.last = time.perf_counter()  # the write is not the job's time
        except Exception as e:
            note_failure("timing a step", e)

    def on_ddp(self, module):
        import weakref

        self.ddp = weakref.ref(module)
        cap = getattr(module, "bucket_bytes_cap", None)
        params = [p for p in module.parameters() if p.requires_grad]
        self.ddp_config = {
            "find_unused_parameters": bool(getattr(module, "find_unused_parameters", False)),
            "static_graph": bool(getattr(module, "static_graph", False)),
            "gradient_as_bucket_view": bool(getattr(module, "gradient_as_bucket_view", False)),
            "bucket_cap_mb": cap / 2**20 if cap else None,
            "parameters": len(params),
            "gradient_bytes": sum(p.numel() * p.element_size() for p in params),
            "dtype": str(params[0].dtype).replace("torch.", "") if params else None,
            "device": str(params[0].device) if params else None,
        }

    # ── the profiler window ──
    def _start_profiler(self):
        profiler = self.torch.profiler
        activities = [profiler.ProfilerActivity.CPU]
        if self.torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        self.window_first = len(self.step_ms)  # the interval that ends at the next step
        # A schedule, so that each step is a ProfilerStep#N range; one warm-up step (CUPTI's start-up), then the window,
        # once. The trace is written when the window ends (on_trace_ready), before stop(): the profiler's own final
        # synchronisation then falls outside the trace.
        schedule = profiler.schedule(wait=0, warmup=1, active=self.window, repeat=1)
        self.profiler = profiler.profile(activities=activities, schedule=schedule, on_trace_ready=self._export,
                                         record_shapes=False, with_stack=False)
        self.profiler.start()

    def _export(self, profiler):
        try:
            plain = os.path.join(self.job, f"trace.rank{self.rank}.json")
            profiler.export_chrome_trace(plain)
            with open(plain, "rb") as src, gzip.open(plain + ".gz.tmp", "wb", compresslevel=3) as dst:
                shutil.copyfileobj(src, dst)
            os.replace(plain + ".gz.tmp", plain + ".gz")
            os.remove(plain)
            self.trace_file = os.path.basename(plain) + ".gz"
        except Exception as e:
            note_failure("writing the profiler trace", e)
            self.trace_file = ""

    def _stop_profiler(self):
        profiler, self.profiler = self.profiler, None
        try:
            profiler.stop()  # after a complete window the trace is written already (on_trace_ready)
            if self.trace_file is None:  # the job ended inside the window: keep what was recorded
                self._export(profiler)
            self._read_ddp_logging()
        except Exception as e:
            note_failure("stopping the profiler", e)
            if self.trace_file is None:
                self.trace_file = ""
        self.export_index = len(self.step_ms)  # the interval that ends at the next step holds the export
        self.write()

    def _read_ddp_logging(self):
        module = self.ddp() if self.ddp else None
        if module is None or not hasattr(module, "_get_ddp_logging_data"):
            return
        try:
            data = module._get_ddp_logging_data()
            keep = ("bucket_sizes", "bucket_cap_bytes", "has_rebuilt_buckets", "rebuilt_bucket_sizes", "comm_hook",
                    "unused_parameter_size", "avg_forward_compute_time", "avg_backward_compute_time",
                    "avg_backward_comm_time", "avg_backward_compute_comm_overlap_time", "backend_name",
                    "nccl_socket_ifname", "nccl_ib_timeout", "dtypes", "world_size", "iteration")
            self.ddp_logging = {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                                for k, v in data.items() if k in keep}
        except Exception as e:
            note_failure("reading DDP's logging data", e)

    # ── the record ──
    def record(self):
        torch = self.torch
        device = None
        try:
            if torch.cuda.is_available():
                device = torch.cuda.get_device_name(torch.cuda.current_device())
        except Exception:
            pass
        return {
            "schema": SCHEMA,
            "rank": self.rank,
            "world_size": self.world_size,
            "local_rank": int(os.environ.get("LOCAL_RANK", 0) or 0),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "torch": getattr(torch, "__version__", None),
            "device": device,
            "step_hook": self.hooked,
            "steps": self.steps,
            "step_ms": [round(x, 4) for x in self.step_ms],
            "warmup": self.warmup,
            "window": {"first": self.window_first, "count": self.window_count, "trace": self.trace_file,
                       "export": self.export_index},
            "ddp": self.ddp_config,
            "ddp_logging": self.ddp_logging,
            "notes": list(_notes),
            "ended": self.ended,
        }

    def write(self):
        self.last_write = time.perf_counter()
        if self.rank is None or os.getpid() != self.pid:  # a forked child (DataLoader worker) writes nothing
            return
        path = os.path.join(self.job, f"capture.rank{self.rank}.json")
        try:
            with open(path + ".tmp", "w") as f:
                json.dump(self.record(), f)
            os.replace(path + ".tmp", path)
        except Exception as e:
            note_failure("writing the capture", e)

    def finish(self):
        if self.rank is None or os.getpid() != self.pid:
            return
        try:
            if self.profiler is not None:  # the job ended inside the window: keep what was profiled
                self._stop_profiler()
            self.ended = True
            self.write()
        except Exception as e:
            note_failure("finishing", e)
