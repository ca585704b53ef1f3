"""S4 layer of a git revision against the working tree's, in one process, alternately.

    python bench/s4_ab.py [--rev cac37c0] [--lengths 1024 4096 16384] [--reps 3] [--json PATH]

The revision's ``models_ref/s4.py`` and ``kernel.py`` are copied (``git show``) into a
temporary package, so both layers run side by side on the same input: H 128, N 64 (the S4
paper's LRA state size), batch 1, unidirectional, float32, one torch thread. Each rep times
forward + backward of ``layer(u).square().mean()``, old then new (the order flips every rep),
after one warm-up step each (the working tree's S4 sets its length there, once: its
Ctil is then the trained parameter, docs/models.md "S4"). Prints the median seconds and the
ratio old / new; on a shared machine the ratio of one run is what to read.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from _common import finish, machine
from longsynth.models_ref.layers.s4 import S4

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def old_s4(rev, where):
    """The revision's S4 class, from its models_ref/s4.py and kernel.py as package ``s4_old``."""
    pkg = os.path.join(where, "s4_old")
    os.makedirs(pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    for name in ("s4", "kernel"):
        text = subprocess.run(["git", "show", f"{rev}:models_ref/{name}.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        with open(os.path.join(pkg, name + ".py"), "w") as f:
            f.write(text.replace("longsynth.models_ref.", "s4_old."))
    sys.path.insert(0, where)
    import s4_old.s4

    return s4_old.s4.S4


def step(layer, u):
    layer.zero_grad(set_to_none=True)
    t = time.perf_counter()
    layer(u).square().mean().backward()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="cac37c0", help="the revision whose S4 is compared (default: before Ctil)")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "s4_ab.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    record = {"machine": machine(torch=torch.__version__), "rev": args.rev, "reps": args.reps, "rows": []}
    Old = old_s4(args.rev, tempfile.mkdtemp(prefix="s4-ab-"))
    rows = record["rows"]
    for L in args.lengths:
        torch.manual_seed(0)
        old, new = Old(128, 64), S4(128, 64)
        u = torch.randn(1, L, 128)
        step(old, u), step(new, u)  # warm-up; the new layer sets its length here
        times = {"old": [], "new": []}
        for r in range(args.reps):
            for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                times[name].append(step(old if name == "old" else new, u))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"L": L, "old_s": med["old"], "new_s": med["new"], "ratio_old_over_new": med["old"] / med["new"]})
        print(f"L {L:>6,}: {args.rev} {med['old']:.3f} s, working tree {med['new']:.3f} s, "
              f"old / new {med['old'] / med['new']:.2f}x", flush=True)
    finish(record["machine"])
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
