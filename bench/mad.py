"""Benchmark: MAD's own generators beside longsynth's kernels and authors' streams, in one run.

    python bench/mad.py --mad /tmp/mad-lab [--budget 3] [--only TASK,...] [--json PATH]

``--mad`` is a checkout of athms/mad-lab at 0f49a452 (docs/tasks/mad.md says how to fetch it;
only mad/data/instances.py is loaded, it needs NumPy alone). For each setting, samples per CPU
second on one core (this process's CPU time, so a shared machine's load shows less):
  theirs   MAD's generate_<task>_instance in a loop, as its generate_data calls it
           (rng = default_rng(12345) after np.random.seed(12345); memorization gets the
           key-value map MADConfig builds once);
  authors  longsynth's authors' stream (generators/mad/authors.py: the same samples);
  ours     longsynth's kernel (one Numba thread), our law, into reused block buffers as the
           store's writer fills them.
Each is timed for at least ``--budget`` CPU seconds (at least 3 of MAD's samples). Training
instances (``is_training=True``) throughout. The ratios ours / theirs and authors / theirs
come from the one run.
"""
import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

from longsynth import registry
from longsynth.generators.mad import authors as mad_authors
from longsynth.crosscheck import MAD_FUNCTIONS as FUNCTIONS, MAD_OURS_ONLY as OURS_ONLY
from longsynth.rng import SPLITS
from _common import finish, machine


# MAD's baselines (configs/tasks/*.yml), then the settings where MAD's generators are slowest
SETTINGS = [
    ("mad-recall", {}), ("mad-noisy-recall", {}), ("mad-fuzzy-recall", {}), ("mad-selective-copying", {}),
    ("mad-compression", {}), ("mad-memorization", {}),
    ("mad-recall", dict(seq_len=1024)), ("mad-fuzzy-recall", dict(vocab_size=32)),
    ("mad-fuzzy-recall", dict(vocab_size=64)), ("mad-selective-copying", dict(seq_len=1024)),
    ("mad-memorization", dict(vocab_size=8192)),
]


def load_instances(mad):
    spec = importlib.util.spec_from_file_location("mad_instances", Path(mad) / "mad/data/instances.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mad_instances"] = module
    spec.loader.exec_module(module)
    return module


def timed(make_batch, budget, min_count=1):
    """Call make_batch() -> samples made, until budget CPU seconds and min_count samples; rate per CPU s."""
    made, c0 = 0, time.process_time()
    while True:
        made += make_batch()
        spent = time.process_time() - c0
        if spent >= budget and made >= min_count:
            return {"samples": made, "cpu_s": spent, "per_cpu_s": made / spent}


def theirs(instances, task, cfg, budget):
    kw = {f: getattr(cfg, f) for f in cfg.__dataclass_fields__ if f not in OURS_ONLY}
    if task == "mad-memorization":
        kw["kv_map"] = instances.generate_kv_map(vocab_size=cfg.vocab_size - 1, seed=cfg.kv_map_seed)
    fn = getattr(instances, FUNCTIONS[task])
    rng = np.random.default_rng(12345)
    np.random.seed(12345)

    def one():
        fn(rng=rng, is_training=True, **kw)
        return 1
    return timed(one, budget, min_count=3)


def authors(task, cfg, budget):
    draws = mad_authors.Draws(12345)
    step = 16
    return timed(lambda: len(mad_authors.run(task, cfg, step, draws, True)["inputs"]), budget)


def ours(task, cfg, budget):
    t = registry.get(task)
    fixed = t.fixed_draws(cfg, 0)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        t.generate(cfg, 0, SPLITS["train"], 0, 4, fixed)  # compile / load the cache
        start = [0]
        step = 20_000
        buffers = t.allocate(cfg, step)

        def block():
            t.generate(cfg, 0, SPLITS["train"], start[0], step, fixed, buffers)
            start[0] += step
            return step
        return timed(block, budget)
    finally:
        numba.set_num_threads(threads)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mad", required=True, help="checkout of athms/mad-lab at 0f49a452")
    ap.add_argument("--budget", type=float, default=3.0, help="CPU seconds per measurement (default 3)")
    ap.add_argument("--only", default=None, help="comma-separated tasks: their settings only (default: all)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    instances = load_instances(args.mad)
    results = {"machine": machine(), "budget_cpu_s": args.budget, "settings": []}
    print(f"{'setting':44s} {'theirs/s':>10s} {'authors/s':>10s} {'ours/s':>12s} {'ours/theirs':>12s} "
          f"{'authors/theirs':>15s}")
    only = set(args.only.split(",")) if args.only else {task for task, _ in SETTINGS}
    unknown = only - {task for task, _ in SETTINGS}
    if unknown:
        ap.error(f"--only: no settings for {', '.join(sorted(unknown))}")
    for task, params in [(t, p) for t, p in SETTINGS if t in only]:
        cfg = registry.get(task).make_config(**params)
        row = {"task": task, "params": params, "theirs": theirs(instances, task, cfg, args.budget),
               "authors": authors(task, cfg, args.budget), "ours": ours(task, cfg, args.budget)}
        row["ours_over_theirs"] = row["ours"]["per_cpu_s"] / row["theirs"]["per_cpu_s"]
        row["authors_over_theirs"] = row["authors"]["per_cpu_s"] / row["theirs"]["per_cpu_s"]
        results["settings"].append(row)
        name = task + (" " + " ".join(f"{k}={v}" for k, v in params.items()) if params else " (baseline)")
        print(f"{name:44s} {row['theirs']['per_cpu_s']:10.1f} {row['authors']['per_cpu_s']:10.1f} "
              f"{row['ours']['per_cpu_s']:12.0f} {row['ours_over_theirs']:11.0f}x {row['authors_over_theirs']:14.1f}x",
              flush=True)
    finish(results["machine"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
