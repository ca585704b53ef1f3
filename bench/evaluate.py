"""The evaluate harness's cost: time before a run's first training step, and --jobs 2 against 1.

    python bench/evaluate.py [--steps 100] [--repeats 2] [--json bench/results/evaluate.json]

1. Overhead per run: from the start of ``evaluate.execute`` (what every job runs) to the
   first training forward pass - protocol, data, the model checks (three forward passes on
   two samples), the model built again under the run's seed, optimizer. Measured for the
   tiny DLR on ``cumsum`` (on the fly) and on ``listops-subtrees`` (a small stored dataset),
   beside the time of one training step, the best of ``--repeats``.
2. Throughput: the same sweep (the tiny DLR on four atomic tasks, ``--steps`` each) with
   ``--jobs 1`` and ``--jobs 2`` (one torch thread per run in both), alternating, the best of
   ``--repeats``; the ratio of their wall times. Both give identical metrics (checked).
"""
import argparse
import json
import os
import shutil
import tempfile
import time

import torch

from longsynth.models_ref.models import factories
from longsynth.models_ref.evaluation.sweep import Settings, evaluate, execute
from longsynth.models_ref.evaluation.harness import Job
from _common import finish, machine


class _FirstStep:
    """A factory that notes when its module first runs a training forward pass."""

    def __init__(self):
        self.first = None
        self.steps = []

    def __call__(self, spec):
        module = factories.BUILTIN["dlr"](spec)
        outer = self

        def hook(mod, args):
            if mod.training and torch.is_grad_enabled():
                now = time.perf_counter()
                outer.first = outer.first or now
                outer.steps.append(now)

        module.register_forward_pre_hook(hook)
        return module


def overhead(job, repeats):
    best = None
    for _ in range(repeats):
        d = tempfile.mkdtemp(prefix="bench-evaluate-")
        f = _FirstStep()
        t0 = time.perf_counter()
        execute(job, d, factory=f)
        step = (f.steps[-1] - f.steps[1]) / max(len(f.steps) - 2, 1)  # steady state
        row = {"before_first_step_s": round(f.first - t0, 3), "step_s": round(step, 4)}
        best = row if best is None or row["before_first_step_s"] < best["before_first_step_s"] else best
        shutil.rmtree(d)
    return best


def sweep(jobs, steps):
    d = tempfile.mkdtemp(prefix="bench-evaluate-")
    t0 = time.perf_counter()
    rep = evaluate("dlr", "cumsum,shift,select-fixed,cummax", out=d,
                   settings=Settings(steps=steps, jobs=jobs), progress=False)
    wall = time.perf_counter() - t0
    shutil.rmtree(d)
    return wall, sorted((r["task"], r["test"]["r2"]) for r in rep.runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100, help="training steps per run in the throughput sweep")
    ap.add_argument("--repeats", type=int, default=2, help="repetitions; the best is kept")
    ap.add_argument("--json", default=None, help="write the results here")
    a = ap.parse_args()
    from longsynth.store import generate

    root = tempfile.mkdtemp(prefix="bench-evaluate-ls-")
    generate(root, "listops-subtrees", {"min_length": 200, "max_length": 1000}, seed=0,
             splits={"train": 400, "val": 40, "test": 40}, workers=1)
    rows = {
        "cumsum (on the fly, L 512)": overhead(Job(model="dlr", protocol="atomic", task="cumsum", steps=20),
                                               a.repeats),
        "listops-subtrees (stored)": overhead(Job(model="dlr", protocol="listops-subtrees", task="listops-subtrees",
                                                  data=root, steps=20), a.repeats),
    }
    shutil.rmtree(root)
    for name, r in rows.items():
        print(f"{name}: {r['before_first_step_s']:.2f} s before the first step; one step {r['step_s'] * 1000:.0f} ms")
    walls = {1: [], 2: []}
    metrics = {}
    for _ in range(a.repeats):
        for jobs in (1, 2):
            wall, metrics[jobs] = sweep(jobs, a.steps)
            walls[jobs].append(wall)
    assert metrics[1] == metrics[2], "--jobs 1 and --jobs 2 disagree"
    w1, w2 = min(walls[1]), min(walls[2])
    print(f"sweep of 4 runs x {a.steps} steps: --jobs 1 {w1:.1f} s, --jobs 2 {w2:.1f} s: {w1 / w2:.2f}x")
    out = {"machine": finish(machine(torch=torch.__version__)),
           "overhead": rows, "sweep": {"steps": a.steps, "runs": 4, "jobs1_s": round(w1, 2), "jobs2_s": round(w2, 2),
                                       "speedup": round(w1 / w2, 2), "walls": walls}}
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
