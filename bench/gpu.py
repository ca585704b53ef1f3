"""The paper-scale cells that say most in about ten minutes of one GPU, in one command.

    python bench/gpu.py --out bench/results/gpu                 # on a machine with one GPU
    python bench/gpu.py --smoke --out /tmp/gpu-smoke            # the same plan at tiny scale on the CPU

A GPU is lent to a session rarely and for about 15 minutes (docs/validation.md, "Findings"):
this runs, through `longsynth evaluate --device cuda --jobs N` (the runs share the card), the
contrasts whose CPU runs could only be shrunk, at the papers' own lengths, each with a step
budget that fits the ten minutes (the reports then say "budget cut: not a verdict", and show the
curves). It writes the reports under --out and a summary (gpu.json) there; it commits nothing.

The cells (CELLS): Grazzi et al. Table 3 at its own lengths (train 3-40, test 40-256),
`deltanet` against `deltanet-signed` on parity; Mamba Table 1 at length 4,096, `s6-nogate`
against `s4d-nogate` on selective copying; one DLR paper Table 1 cell (`dlr` on cumsum at
L = 4,096, the paper's own setting). `--smoke` runs the same plan at tiny scale for a few steps
on the CPU, so the script is tested without a GPU (tests/test_gpu_bench.py).
"""
import argparse
import json
import os
import subprocess
import sys
import time

from _common import finish, machine, write_json

# (name, model, suite, steps at paper scale on one GPU): the budget is set so that the
# plan, two runs at a time, fits about ten minutes of an H100 (estimates from `--dry-run`)
CELLS = [
    ("grazzi-parity-deltanet", "deltanet", "parity", 3000),
    ("grazzi-parity-deltanet-signed", "deltanet-signed", "parity", 3000),
    ("mamba-t1-s6-nogate", "s6-nogate", "selective-copying", 1500),
    ("mamba-t1-s4d-nogate", "s4d-nogate", "selective-copying", 1500),
    ("dlr-t1-cumsum", "dlr", "cumsum", 2000),
]
SMOKE_STEPS = 3


def run_cell(name, model, suite, steps, args):
    """One `longsynth evaluate` of a cell; returns its summary record."""
    out = os.path.join(args.out, name)
    cmd = [sys.executable, "-m", "longsynth", "evaluate", model, "--suite", suite,
           "--scale", "tiny" if args.smoke else "paper", "--steps", str(SMOKE_STEPS if args.smoke else steps),
           "--device", "cpu" if args.smoke else "cuda", "--out", out]
    if args.jobs > 1:
        cmd += ["--jobs", str(args.jobs)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    last = (r.stdout.strip().splitlines() or [""])[-1] if r.returncode == 0 else \
        (r.stderr.strip().splitlines() or ["?"])[-1]
    print(f"{name:32s} rc {r.returncode}  {wall:7.1f} s  {last}", flush=True)
    report = os.path.join(out, "report.json")
    rows = json.load(open(report))["rows"] if r.returncode == 0 and os.path.exists(report) else None
    return {"name": name, "model": model, "suite": suite, "command": cmd[2:], "returncode": r.returncode,
            "wall_s": round(wall, 1), "rows": rows, "last_line": last}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the reports and gpu.json")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once on the card (each cell's sweep)")
    ap.add_argument("--smoke", action="store_true", help="tiny scale, a few steps, on the CPU")
    ap.add_argument("--only", default=None, help="comma-separated cell names (default: every cell)")
    args = ap.parse_args()
    if not args.smoke:
        import torch

        if not torch.cuda.is_available():
            sys.exit("bench/gpu.py: no CUDA device here; --smoke runs the plan on the CPU")
    cells = [c for c in CELLS if args.only is None or c[0] in args.only.split(",")]
    results = {"machine": machine(smoke=args.smoke), "cells": []}
    for name, model, suite, steps in cells:
        results["cells"].append(run_cell(name, model, suite, steps, args))
    finish(results["machine"])
    write_json(os.path.join(args.out, "gpu.json"), results)
    sys.exit(0 if all(c["returncode"] == 0 for c in results["cells"]) else 1)


if __name__ == "__main__":
    main()
