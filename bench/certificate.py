"""Certificates that can fail: tiny atomic certificates with their positive controls, on real
data and on broken data (targets permuted across each batch's samples).

    python bench/certificate.py [--tasks select,mips,cummax] [--broken select] [--json bench/results/certificate.json]
        [--keep docs/validation]

Each task runs ``longsynth validate TASK`` (the reference DLR, and the paper's best model at
L = 512 where DLR is expected to fail: presets.positive_control); each ``--broken`` task runs
it again with ``permute_targets`` (the negative control), whose verdict must fail. One torch
thread, one run at a time. ``--keep DIR`` copies each certificate's metrics.json and
curves.png there (TASK-dlr-tiny[-permuted].json, ...-control-MODEL.json).
"""
import argparse
import json
import os
import shutil
import tempfile
import time

import torch

from longsynth.models_ref.evaluation.validate import validate
from _common import finish, machine


def certify(task, broken, keep):
    d = tempfile.mkdtemp(prefix="bench-certificate-")
    t0 = time.perf_counter()
    r = validate(task, report_dir=d, progress=False, permute_targets=broken)
    wall = time.perf_counter() - t0
    c = r["positive_control"] or {}
    row = {"task": task, "broken": broken, "dlr_test_r2": r["test"]["r2"], "dlr_paper": (r["paper"] or {}).get("r2"),
           "control": c.get("model"), "control_test_r2": c.get("test"), "control_threshold": c.get("threshold"),
           "certificate": r["certificate"], "wall_s": round(wall, 1), "steps": r["steps"],
           "data": r["data"]["params"]}
    if keep:
        name = f"{task}-dlr-tiny" + ("-permuted" if broken else "")
        shutil.copy(os.path.join(d, "metrics.json"), os.path.join(keep, name + ".json"))
        shutil.copy(os.path.join(d, "curves.png"), os.path.join(keep, name + ".png"))
        if c.get("model"):
            stem = os.path.join(keep, f"{name}-control-{c['model']}")
            shutil.copy(os.path.join(c["report_dir"], "metrics.json"), stem + ".json")
            shutil.copy(os.path.join(c["report_dir"], "curves.png"), stem + ".png")
    shutil.rmtree(d)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="select,mips,cummax", help="atomic tasks to certify on real data")
    ap.add_argument("--broken", default="select", help="tasks to certify again on permuted targets")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--keep", default=None, help="copy the certificates (metrics.json, curves.png) here")
    a = ap.parse_args()
    record = machine(torch=torch.__version__)
    torch.set_num_threads(1)
    rows = []
    plan = [(t, False) for t in a.tasks.split(",") if t] + [(t, True) for t in a.broken.split(",") if t]
    for task, broken in plan:
        row = certify(task, broken, a.keep)
        torch.set_num_threads(1)
        rows.append(row)
        ctl = "" if row["control"] is None else f"; control {row['control']} {row['control_test_r2']:.3f} " \
                                                  f"(needs {row['control_threshold']:.2f})"
        print(f"{task}{' (targets permuted)' if broken else ''}: DLR {row['dlr_test_r2']:.3f}{ctl}; "
              f"certificate {'passed' if row['certificate']['passed'] else 'FAILED'} ({row['wall_s']:.0f} s)",
              flush=True)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"machine": finish(record), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
