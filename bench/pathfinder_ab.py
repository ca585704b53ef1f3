"""Pathfinder kernels of a git revision against the working tree's, in one process, alternately.

    .venv/bin/python bench/pathfinder_ab.py [--rev e98e1e5] SPEC [SPEC ...]

SPEC is TASK:SIZE:IMAGES:REPS, TASK ``seg`` (pathfinder-seg) or ``lra`` (pathfinder), e.g.
``lra:32:1000:9 seg:128:40:9``. The revision's ``generators/pathfinder`` files are copied
(``git show``) into a temporary package, so both sets of kernels compile side by side; each
rep renders IMAGES images with one thread, old then new (the order flips every rep), both
from the same tables' inputs. Prints the rates, the ratio of the median times old / new and
whether every output array came out byte-identical. On a shared machine the ratio of one
run is what to read: the absolute rates move with the other jobs (an A/A run, both sides
the same code, scatters by about 5%).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

from longsynth import registry
from longsynth.generators.pathfinder import lra, seg
import longsynth.generators.pathfinder.process as new_process
import longsynth.generators.pathfinder.records as new_records
import longsynth.generators.pathfinder.tables as new_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "generators/pathfinder"


def old_package(rev, where):
    """The revision's pathfinder package as ``pathfinder_old`` under ``where``."""
    pkg = os.path.join(where, "pathfinder_old")
    os.makedirs(pkg)
    names = subprocess.run(["git", "ls-tree", "--name-only", rev, PACKAGE + "/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        if not name.endswith(".py"):
            continue
        text = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout
        with open(os.path.join(pkg, os.path.basename(name)), "w") as f:
            f.write(text.replace("longsynth.generators.pathfinder", "pathfinder_old"))
    sys.path.insert(0, where)
    import pathfinder_old.process
    import pathfinder_old.records
    import pathfinder_old.tables
    return pathfinder_old.records, pathfinder_old.process, pathfinder_old.tables


def setup(rec, proc, tab, cfg, P, eight_bit, n):
    """Tables, one thread's workspace and output arrays of one side."""
    margins = tuple(range(cfg.margin_min, cfg.margin_max + 1))
    T = tab.build_tables(cfg.paddle_length, float(cfg.paddle_thickness), margins, cfg.antialias_scale,
                         float(cfg.marker_radius), float(cfg.continuity), eight_bit=eight_bit)
    Q = rec.Params(**P._asdict())
    works = rec.workspace(Q, T, 1)
    M, nd = Q.M, 2 * Q.contour_length + Q.distractors * Q.distractor_length
    outs = (np.zeros((n, M, M), np.uint8), np.zeros((n, M, M) if Q.labels else (n, 1, 1), np.uint8),
            np.zeros((n, nd, 4), np.int32), np.zeros((n, 2 + Q.distractors, 2), np.int32),
            np.zeros((n, 6), np.int32), np.zeros(n))
    proc.render_batch(7, 1, 0, Q, T, works, *[o[:2] for o in outs])  # compile / load the cache
    return proc, Q, T, works, outs


def compare(sides, spec):
    task, size, n, reps = spec.split(":")
    size, n, reps = int(size), int(n), int(reps)
    module = {"seg": seg, "lra": lra}[task]
    cfg = module._resolve(registry.get({"seg": "pathfinder-seg", "lra": "pathfinder"}[task]).make_config(size=size))
    P, _ = module.params(cfg)
    run = {name: setup(*mods, cfg, P, task == "lra", n) for name, mods in sides.items()}
    times = {name: [] for name in run}
    same = True
    for r in range(reps):
        got = {}
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            proc, Q, T, works, outs = run[name]
            t0 = time.perf_counter()
            proc.render_batch(7, 1, r * n, Q, T, works, *outs)
            times[name].append(time.perf_counter() - t0)
            got[name] = [o.copy() for o in outs]
        same = same and all(np.array_equal(a, b) for a, b in zip(got["old"], got["new"]))
    old, new = np.median(times["old"]), np.median(times["new"])
    print(f"{task} {size} px, {n} images x {reps}: old {n / old:.0f} img/s, new {n / new:.0f} img/s, "
          f"old / new {old / new:.3f}, identical {same}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="e98e1e5")
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()
    numba.set_num_threads(1)
    with tempfile.TemporaryDirectory() as where:
        sides = {"old": old_package(args.rev, where), "new": (new_records, new_process, new_tables)}
        for spec in args.specs:
            compare(sides, spec)


if __name__ == "__main__":
    main()
