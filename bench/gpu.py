"""The runs a CPU cannot make that say most in about ten minutes of one GPU, in one command.

    python bench/gpu.py --out bench/results/gpu                     # on a machine with one GPU
    python bench/gpu.py --plan extra --only chomsky-cs --out ...    # a group of the second plan
    python bench/gpu.py --smoke --out /tmp/gpu-smoke                # the same plan, a few steps on the CPU

A GPU is lent to a session rarely, for about 15 minutes of device time in all and at most 10 minutes a
command (docs/validation.md, "Findings"). This runs each cell of a plan through `longsynth evaluate
--device cuda` (`--jobs N`: a cell's runs at once on the card; the cells run one after another), writes
the reports under --out and a summary (gpu.json) there after each cell, so a plan stopped at ten minutes
keeps what it finished; it commits nothing. A cell is (group, model, suite, scale, steps[, seeds]): its name is
GROUP-MODEL, and `--only` takes names or groups; the Chomsky DCF and CS cells run 3 seeds each (`--seeds 3`: their
reports read the best of them, as Table 2 does). A budget cut below the protocol's steps makes the report
say "budget cut: not a verdict" and show the curves; a cut can only hold a model back, so a contrast that
shows at it still reads, and one that does not reads "not shown".

`main`, about 9 minutes by the estimates below, most telling first: the runs a CPU's dry run puts at hours to weeks:
seq_icl's 8 x 128 Transformer on RegBench at their recipe cut to a third (their LSTM's side, 0.529, is a CPU run:
docs/validation.md), Grazzi et al.'s DeltaNet parity pair at their lengths (train 3-40, test 40-256), zoology Figure
2's (128, 8) cell with its attention (`zoology-attention`, the width x lr grid), one DLR Table 1 cell (cumsum, L
4,096). `extra`, about an hour in all with the Chomsky seeds (by `--only` groups; the Chomsky DCF and CS cells one a
command): the laptop-scale certificates (docs/validation.md, "Findings"), which a CPU session can
also run (minutes to two hours each) and a GPU runs from about as fast to tens of times faster: Grazzi's Mamba pair,
the Chomsky contrasts tested to 500, Mamba Table 1 at length 256,
Figure 2's BaseConv. Not here: Mamba Table 1 at length 4,096 (the selective scan is a loop over positions: 475K
torch ops a step, over a second a step on any GPU) and Table 2's s6 (the same loop at length 256: its 15,000 steps
take ~30 min there as here).

`--smoke` runs the chosen plan at the tiny scale for 3 steps a cell (seq-icl-transformer, which has no tiny row:
its laptop row for one step) on the CPU, so the script is tested without a GPU (tests/test_gpu_bench.py).

The estimates (per cell below): a step of these small models on a GPU is bound by launching its torch ops,
so it is counted as the ops of one training step (forward and backward, counted on the CPU with a
TorchDispatchMode through `evaluate --dry-run`'s timing step) at ~10 us each (~2 us a view), plus 1.5 ms
(optimizer, clipping, the batch) and the matmuls at 1e14 FLOP/s (bf16), plus ~20 s a cell (start, CUDA,
data). No GPU has checked them (none was lent): a first run should set them from its own wall times.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from _common import finish, machine, write_json

# (group, model, suite, scale, GPU steps or None for the protocol's[, seeds]): the estimate, and the CPU's dry run
MAIN = [
    # 10,000 of their 31,400 steps of 32 (64 of 200 epochs; the whole recipe, ~6 min, would leave no room for the
    # rest, and their LSTM's 0.529 at the whole recipe is what the cut Transformer has to pass): 1,271 ops (404 not
    # views) and 2.9e11 FLOP a step at their widest rows (~550 tokens): 9-13 ms a step, 1.5-2.2 min, + 200
    # validations with checkpoints ~0.5 min: ~3 min (CPU: 4.6-6.3 s a step by the dry run, 13-22 s measured:
    # 2-8 days for the recipe)
    ("regbench", "seq-icl-transformer", "regbench", "paper", 10_000),
    # 3,000 of 20,000 steps of 256: 1,198 ops, 9 ms a step, ~45 s each (CPU: 0.9-1.3 s a step, 5-8 h; the laptop
    # scale's 2,000 steps took 53 and 62 min: deltanet-signed 0.908 against deltanet 0.504, docs/validation.md)
    ("grazzi-parity", "deltanet-signed", "parity", "paper", 3000),
    ("grazzi-parity", "deltanet", "parity", "paper", 3000),
    # 1,000 of 12,500 steps of 512, 16 runs (4 widths x 4 lrs), two at a time: 284 ops, 3-9 ms a step by width,
    # ~1.2 min, + 64 validations and checkpoints a run ~1 min: ~2.7 min (CPU: 7-32 s a step, 5-6 weeks)
    ("zoology-f2", "zoology-attention", "mqar-128", "paper", 1000),
    # 2,000 of 40,000 steps of 16 at L 4,096: 383 ops, the FFTs in float32 bound it: 20-40 ms, ~1.5 min
    # (CPU: 1.8-4 s a step, 20-45 h)
    ("dlr-t1-cumsum", "dlr", "cumsum", "paper", 2000),
]
EXTRA = [
    # Grazzi Table 3's Mamba pair, 3,000 of 20,000 steps of 256: 5,000 ops (the scan's loop), 24 ms, ~1.5 min
    # each (CPU: the laptop scale's 2,000 steps took 42 and 57 min, s6-signed 0.995 against s6 0.495 over 40-256:
    # docs/validation.md)
    ("grazzi-parity", "s6-signed", "parity", "paper", 3000),
    ("grazzi-parity", "s6", "parity", "paper", 3000),
    # Chomsky, trained 1-40, tested 41-500, the laptop protocols whole (the ops grow with the row: counted at
    # the timed row, scaled to a mean one). Regular (parity check: lstm and rnn solve, the Transformer not):
    # ~1.1, 0.7, 0.9 min (CPU dry run: 11, 2-3, 7-10 min)
    ("chomsky-regular", "lstm", "chomsky-parity-check", "laptop", None),
    ("chomsky-regular", "rnn", "chomsky-parity-check", "laptop", None),
    ("chomsky-regular", "chomsky-transformer", "chomsky-parity-check", "laptop", None),
    # DCF (reverse string: the Stack-RNN solves, the LSTM not): 7,215 and 3,333 ops at 68 positions, ~1.5 and
    # ~1 min a seed (CPU: 4-5, 20-22 min), 3 seeds each (one cell a command: 10 min at most): on the CPU the
    # authors' Stack-RNN reversed strings to 500 in 4 seeds of 4 (docs/validation.md); Table 2's columns are best-ofs
    ("chomsky-dcf", "stack-rnn", "chomsky-reverse-string", "laptop", None, 3),
    ("chomsky-dcf", "lstm", "chomsky-reverse-string", "laptop", None, 3),
    # CS (duplicate string: the Tape-RNN solves, the Stack-RNN not), 5,000 steps: 17,445 and 10,819 ops at 102
    # positions, ~7.5 and ~5 min a seed (CPU: 33, 15 min), 3 seeds each, one cell a command with `--jobs 3` (the
    # seeds at once: 10 min at most). On the CPU the Tape-RNN's 5,000 steps read 0.641 over 41-500, mid-climb, where
    # the authors' own code is at that budget (docs/validation.md)
    ("chomsky-cs", "tape-rnn", "chomsky-duplicate-string", "laptop", 5000, 3),
    ("chomsky-cs", "stack-rnn", "chomsky-duplicate-string", "laptop", 5000, 3),
    # Mamba Table 1 at length 256 (224 noise, 16 to copy), 2,500 steps of 64 at lr 3e-3: s6-nogate's scan 30,102
    # ops, ~0.13 s a step, ~5.5 min; s4d-nogate ~0.8 min (CPU, measured: 21 and 9 min; committed, one seed each)
    ("mamba-t1", "s6-nogate", "selective-copying", "laptop", None),
    ("mamba-t1", "s4d-nogate", "selective-copying", "laptop", None),
    # Figure 2's other side, as zoology-attention in MAIN: 185 ops, ~3 min (CPU: 6-36 s a step, 4 weeks)
    ("zoology-f2", "base-conv", "mqar-128", "paper", 1000),
]
PLANS = {"main": MAIN, "extra": EXTRA}
# --smoke: (scale, steps) of a cell's model; seq-icl-transformer has no tiny row: its laptop row, one step (a step
# at batch 32 and each of the two evaluations take ~20 s on a core)
SMOKE = {"seq-icl-transformer": ("laptop", 1)}


def run_cell(group, model, suite, scale, steps, args, seeds=1):
    """One `longsynth evaluate` of a cell (``seeds`` runs of it, one seed at --smoke); returns its summary record."""
    name = f"{group}-{model}"
    out = os.path.join(args.out, name)
    if args.smoke:
        scale, steps = SMOKE.get(model, ("tiny", 3))
    cmd = [sys.executable, "-m", "longsynth", "evaluate", model, "--suite", suite, "--scale", scale,
           "--device", "cpu" if args.smoke else "cuda", "--out", out]
    cmd += ["--steps", str(steps)] if steps else []
    cmd += ["--jobs", str(args.jobs)] if args.jobs > 1 else []
    cmd += ["--seeds", str(seeds)] if seeds > 1 and not args.smoke else []
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    last = (r.stdout.strip().splitlines() or [""])[-1] if r.returncode == 0 else \
        (r.stderr.strip().splitlines() or ["?"])[-1]
    print(f"{name:36s} rc {r.returncode}  {wall:7.1f} s  {last}", flush=True)
    report = os.path.join(out, "report.json")
    rows = json.load(open(report))["rows"] if r.returncode == 0 and os.path.exists(report) else None
    return {"name": name, "group": group, "model": model, "suite": suite, "command": cmd[2:],
            "returncode": r.returncode, "wall_s": round(wall, 1), "rows": rows, "last_line": last}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the reports and gpu.json")
    ap.add_argument("--plan", choices=PLANS, default="main", help="main: ten minutes; extra: the rest (by --only)")
    ap.add_argument("--only", default=None, help="comma-separated cell names or groups of the plan (default: all)")
    ap.add_argument("--jobs", type=int, default=2, help="a cell's runs at once on the card (the mqar grid's 16)")
    ap.add_argument("--smoke", action="store_true", help="tiny scale, a few steps, on the CPU")
    args = ap.parse_args()
    cells = PLANS[args.plan]
    if args.only is not None:
        only = args.only.split(",")
        unknown = set(only) - {c[0] for c in cells} - {f"{c[0]}-{c[1]}" for c in cells}
        if unknown:
            sys.exit(f"bench/gpu.py: --only: no cell or group {', '.join(sorted(unknown))} in the {args.plan} plan")
        cells = [c for c in cells if c[0] in only or f"{c[0]}-{c[1]}" in only]
    if not args.smoke:
        import torch

        if not torch.cuda.is_available():
            sys.exit("bench/gpu.py: no CUDA device here; --smoke runs the plan on the CPU")
    results = {"machine": machine(smoke=args.smoke), "plan": args.plan, "cells": []}
    for cell in cells:
        group, model, suite, scale, steps, *seeds = cell
        results["cells"].append(run_cell(group, model, suite, scale, steps, args, *seeds))
        write_json(os.path.join(args.out, "gpu.json"), results)  # after each: a plan stopped early keeps it
    finish(results["machine"])
    write_json(os.path.join(args.out, "gpu.json"), results)
    sys.exit(0 if all(c["returncode"] == 0 for c in results["cells"]) else 1)


if __name__ == "__main__":
    main()
