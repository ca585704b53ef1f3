"""Benchmark: ListOps-Subtrees (paper setting) and classic ListOps (LRA setting).

    python bench/listops.py [--paper N] [--lra N] [--json PATH]

For each setting: kernel-only samples/s (one thread), the acceptance rate (measured and
exact from the DP length law), and end-to-end ``longsynth.store.generate`` into a
temporary directory with 1 and 2 workers. Rates are given per wall second and per CPU
second (the CPU time of this process and its pool workers), because the benchmark
machine is shared: per-CPU-second figures are what one uncontended core would do.
The paper's 100K dataset time is extrapolated from the 2-worker run (wall, as measured
on the shared machine) and from the 1-worker per-CPU-second rate on 2 cores plus the
measured pool start-up. Peak RSS comes from
resource.getrusage (this process, and the largest pool worker).
"""
import argparse
import json
import os
import resource
import tempfile
import time

import numba

from longsynth import registry, store
from longsynth.generators.listops import tasks as lo
from longsynth.generators.listops.tree import generate_padded
from _common import finish, machine

SETTINGS = {"paper": ("listops-subtrees", {}), "lra": ("listops", {})}


def cpu_seconds():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def kernel(task, params, n):
    cfg = registry.get(task).make_config(**params)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        generate_padded(cfg, 0, 1, 0, 2)
        t0, c0 = time.perf_counter(), time.process_time()
        out = generate_padded(cfg, 0, 1, 10, n)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        numba.set_num_threads(threads)
    return {
        "samples": n,
        "per_wall_s": n / wall,
        "per_cpu_s": n / cpu,
        "acceptance_measured": n / float(out["attempts"].sum()),
        "acceptance_exact": lo.acceptance(cfg),
        "mean_length": float(out["lengths"].mean()),
    }


def end_to_end(task, params, n, workers):
    with tempfile.TemporaryDirectory() as d:
        shard = max(1, n // 8)
        store.generate(os.path.join(d, "warm"), task, params, splits={"train": 2}, workers=1)
        c0, t0 = cpu_seconds(), time.perf_counter()
        m = store.generate(os.path.join(d, "ds"), task, params, splits={"train": n}, shard_size=shard,
                           workers=workers)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        size = sum(r["bytes"] for r in m["splits"]["train"]["shards"])
    return {
        "samples": n,
        "workers": workers,
        "wall_s": wall,
        "cpu_s": cpu,
        "per_wall_s": n / wall,
        "per_core_wall_s": n / wall / workers,
        "per_cpu_s": n / cpu,
        "bytes_per_sample": size / n,
        "audit": m.get("audit", {}).get("clashes"),
    }


def pool_startup(task, params):
    """Wall and CPU seconds of a 2-worker generate of 2 one-sample shards: process spawn,
    imports and loading the cached kernels, paid once per generate call."""
    with tempfile.TemporaryDirectory() as d:
        c0, t0 = cpu_seconds(), time.perf_counter()
        store.generate(os.path.join(d, "ds"), task, params, splits={"train": 2}, shard_size=1, workers=2)
        return {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_seconds() - c0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", type=int, default=4000, help="samples at the paper setting")
    ap.add_argument("--lra", type=int, default=40000, help="samples at the LRA setting")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "listops.json"))
    args = ap.parse_args()
    counts = {"paper": args.paper, "lra": args.lra}
    results = {"machine": machine()}
    for name, (task, params) in SETTINGS.items():
        n = counts[name]
        r = {"task": task, "params": params, "kernel": kernel(task, params, n)}
        for w in (1, 2):
            r[f"end_to_end_{w}w"] = end_to_end(task, params, n, w)
        r["pool_startup"] = pool_startup(task, params)
        results[name] = r
        k, e1, e2 = r["kernel"], r["end_to_end_1w"], r["end_to_end_2w"]
        print(f"{name} ({task}): acceptance {k['acceptance_measured']:.5f} (exact {k['acceptance_exact']:.5f}), "
              f"mean length {k['mean_length']:.0f}")
        print(f"  kernel, 1 thread:   {k['per_wall_s']:9.0f} samples/s wall, {k['per_cpu_s']:9.0f} per CPU-s")
        for e in (e1, e2):
            print(f"  end to end, {e['workers']} worker(s): {e['per_wall_s']:9.0f} samples/s wall "
                  f"({e['per_core_wall_s']:.0f} per core), {e['per_cpu_s']:9.0f} per CPU-s; "
                  f"{e['bytes_per_sample']:.0f} B/sample")
        print(f"  2-worker pool start-up (spawn, imports, cached kernels; once per generate): "
              f"{r['pool_startup']['wall_s']:.1f} s wall, {r['pool_startup']['cpu_s']:.1f} CPU-s")
    paper2 = results["paper"]["end_to_end_2w"]
    results["paper_100k_2_workers_s_extrapolated"] = 100_000 / paper2["per_wall_s"]
    results["paper_100k_2_cores_s_from_cpu_rate"] = (
        results["paper"]["pool_startup"]["wall_s"] + 100_000 / (2 * results["paper"]["end_to_end_1w"]["per_cpu_s"]))
    results["peak_rss_mb_self"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["peak_rss_mb_worker"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    finish(results["machine"])
    print(f"paper 100K on 2 workers: {results['paper_100k_2_workers_s_extrapolated']:.0f} s extrapolated from wall "
          f"time, {results['paper_100k_2_cores_s_from_cpu_rate']:.0f} s for 2 uncontended cores "
          f"(pool start-up + 100K at twice the 1-worker per-CPU-second rate)")
    print(f"peak RSS: {results['peak_rss_mb_self']:.0f} MB (this process), "
          f"{results['peak_rss_mb_worker']:.0f} MB (largest worker); load {results['machine']['load_avg_start']} -> "
          f"{results['machine']['load_avg_end']}")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
