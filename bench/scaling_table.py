#!/usr/bin/env python3
"""Weak-scaling table of scalescope vs PyTorch DDP from the JSON files of bench/device-scaling.sh.

usage: scaling_table.py DIR

Reads DIR/ours-MODEL-nN-p2pP.json (scalescope train --out) and DIR/torch-MODEL-nN-p2pP.json
(bench/peers/gpt_pytorch.py --json under torchrun) and prints, per model and P2P setting, the step time and the
weak-scaling efficiency T(1)/T(N) of both, side by side.
"""
import glob
import json
import os
import re
import sys


def load(directory):
    runs = {}
    for path in glob.glob(os.path.join(directory, "*.json")):
        m = re.match(r"(ours|torch)-(.+)-n(\d+)-p2p(on|off)\.json$", os.path.basename(path))
        if not m:
            continue
        who, model, n, p2p = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        doc = json.load(open(path))
        step_ms = doc["step_s"]["trimmed_mean"] * 1e3 if who == "ours" else doc["step_ms"]
        runs[(who, model, n, p2p)] = step_ms
    return runs


def main():
    runs = load(sys.argv[1])
    print(f"{'model':<12} {'p2p':<4} {'N':>2} {'ours ms':>9} {'ours eff':>9} {'DDP ms':>9} {'DDP eff':>8}")
    for model in sorted({k[1] for k in runs}):
        for p2p in ("on", "off"):
            for n in sorted({k[2] for k in runs if k[1] == model}):
                ours, torch = runs.get(("ours", model, n, p2p)), runs.get(("torch", model, n, p2p))
                if ours is None and torch is None:
                    continue
                base_o = runs.get(("ours", model, 1, "on"))
                base_t = runs.get(("torch", model, 1, "on"))
                eff_o = f"{100 * base_o / ours:.1f} %" if ours and base_o else "-"
                eff_t = f"{100 * base_t / torch:.1f} %" if torch and base_t else "-"
                fmt = lambda x: f"{x:.2f}" if x else "-"
                print(f"{model:<12} {p2p:<4} {n:>2} {fmt(ours):>9} {eff_o:>9} {fmt(torch):>9} {eff_t:>8}")


if __name__ == "__main__":
    main()
