#!/usr/bin/env python3
"""Start-up cost of the scalescope binary on small inputs (issue #29: under 30 ms and 30 MB).

Runs each command REPEAT times after two unmeasured runs (page cache warm), as a user would from a shell, and
prints the median wall time and the largest resident set (the child's ru_maxrss) per command. Commands that read
files only: they must not load the GPU module, so the figures hold on a machine without CUDA.

  bench/startup.py [--exe build/tools/scalescope] [--repeat 20]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "diagnosis")
COMMANDS = [
    ("--version", ["--version"]),
    ("analyze timings.md", ["analyze", os.path.join(FIX, "comm-bound-small-model", "timings.md")]),
    ("analyze nccl-tests 8xH100", ["analyze", os.path.join(FIX, "no-defect", "all_reduce_8xh100.txt")]),
    ("topo --from", ["topo", "--from", os.path.join(FIX, "no-defect", "topo.txt")]),
    ("predict doctor.json", ["predict", os.path.join(FIX, "compute-contention", "doctor.json"), "--link", "H200:NV18",
                             "--gpus", "2,4,8"]),
]


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
RSS_FILE = f"/tmp/scalescope_startup_rss.{os.getpid()}"


def wall_once(argv):
    """Wall seconds and exit status of one run, started with posix_spawn (vfork: the harness adds little)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status = os.waitpid(pid, 0)
        return time.perf_counter() - start, os.waitstatus_to_exitcode(status)
    finally:
        os.close(devnull)


def rss_once(argv):
    """Peak RSS (KiB) of one run from GNU time (-f %M), or None without it. (A child forked from Python would report
    Python's pages, which the kernel counts into the child's peak up to its exec; GNU time's own are ~1 MB.)"""
    if not GNU_TIME:
        return None
    subprocess.run([GNU_TIME, "-f", "%M", "-o", RSS_FILE] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(RSS_FILE) as f:
        numbers = [x for x in f.read().split() if x.isdigit()]
    return int(numbers[-1]) if numbers else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "tools", "scalescope"))
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    if not os.access(a.exe, os.X_OK):
        sys.exit(f"startup.py: {a.exe} is not an executable: build first (scripts/build.sh) or pass --exe")
    floor = statistics.median(wall_once(["/bin/true"])[0] * 1e3 for _ in range(a.repeat))
    print(f"{'command':28} {'median ms':>10} {'max ms':>8} {'max RSS MB':>11}  exit")
    worst_ms = worst_mb = 0.0
    for name, args in COMMANDS:
        argv = [a.exe] + args
        for _ in range(2):
            wall_once(argv)
        walls, codes = [], set()
        for _ in range(a.repeat):
            w, c = wall_once(argv)
            walls.append(w * 1e3)
            codes.add(c)
        rss = [r / 1024 for r in (rss_once(argv) for _ in range(3)) if r is not None]
        med = statistics.median(walls)
        worst_ms, worst_mb = max(worst_ms, med), max([worst_mb] + rss)
        rss_text = f"{max(rss):11.1f}" if rss else f"{'n/a':>11}"
        print(f"{name:28} {med:10.1f} {max(walls):8.1f} {rss_text}  {','.join(map(str, sorted(codes)))}")
    print(f"(/bin/true through the same harness: {floor:.1f} ms)")
    if not GNU_TIME:
        print("(no /usr/bin/time, so no RSS: install Debian's 'time')")
    if os.path.exists(RSS_FILE):
        os.remove(RSS_FILE)
    verdict = "within" if worst_ms < 30 and worst_mb < 30 else "OVER"
    print(f"largest median {worst_ms:.1f} ms, largest RSS {worst_mb:.1f} MB: {verdict} the 30 ms / 30 MB goal")


if __name__ == "__main__":
    main()
