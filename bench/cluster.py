"""Dask executor against the local pool: the overhead of one Dask worker over
one local worker at the default shard size, and the speed-up of two Dask workers over one.

    python bench/cluster.py [--task cumsum] [--L 4096] [--shards 8] [--repeats 3] [--json bench/results/cluster.json]

Every configuration writes the same dataset (``--shards`` shards of the default size) into
a fresh directory; each cluster runs one unmeasured warm-up dataset first (worker start,
imports, Numba's cached kernels), as the local pool's in-process worker is warm after the
first configuration. Local and Dask runs alternate, so both see the same machine (page
cache, writeback, other jobs). The local pool with 2 workers starts its processes in every
run (about 1 s here), the Dask workers once. Everything binds to 127.0.0.1.

Wall-clock rates depend on what else the machine runs, so CPU time is measured too: this
process's and every Dask worker's user + system seconds (getrusage), giving samples per
CPU-second, which another job on the machine disturbs much less. The best of
``--repeats`` runs is kept.
"""
import argparse
import json
import os
import resource
import shutil
import tempfile
import time

from longsynth import registry, store
from _common import finish, machine


def _cpu_s():
    """User + system seconds of this process and its reaped children (the local pool's
    workers, reaped when the pool closes)."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def timed(root, task, params, splits, client=None, workers=None):
    """(wall s, CPU s of this process and the Dask workers) of one generate."""
    shutil.rmtree(root, ignore_errors=True)
    cpu0 = _cpu_s() + (sum(client.run(_cpu_s).values()) if client is not None else 0.0)
    t0 = time.perf_counter()
    store.generate(root, task, params, splits=splits, workers=workers, client=client)
    wall = time.perf_counter() - t0
    cpu1 = _cpu_s() + (sum(client.run(_cpu_s).values()) if client is not None else 0.0)
    shutil.rmtree(root, ignore_errors=True)
    return wall, cpu1 - cpu0


def best(runs):
    return min(runs, key=lambda r: r[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="cumsum")
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--shards", type=int, default=8, help="shards of the default size to write")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import distributed

    params = {"L": args.L}
    t = registry.get(args.task)
    shard = store.default_shard_size(t, t.make_config(**params))
    splits = {"train": shard * args.shards}
    n = splits["train"]
    base = tempfile.mkdtemp(prefix="longsynth-cluster-")
    root = os.path.join(base, "d")
    out = {"task": args.task, "params": params, "shard_size": shard, "samples": n, "machine": machine()}
    try:
        timed(root, args.task, params, {"train": shard}, workers=1)  # warm this process
        for k in (1, 2):
            with distributed.LocalCluster(processes=True, n_workers=k, threads_per_worker=1, host="127.0.0.1",
                                          dashboard_address="127.0.0.1:0") as lc, distributed.Client(lc) as c:
                timed(root, args.task, params, {"train": shard * k}, client=c)  # warm every worker
                local, dask_ = [], []
                for _ in range(args.repeats):  # alternated, so both see the same machine
                    local.append(timed(root, args.task, params, splits, workers=k))
                    dask_.append(timed(root, args.task, params, splits, client=c))
                out[f"local_{k}"], out[f"dask_{k}"] = best(local), best(dask_)
                out[f"runs_local_{k}"], out[f"runs_dask_{k}"] = local, dask_
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = []
    for key in ("local_1", "local_2", "dask_1", "dask_2"):
        wall, cpu = out[key]
        rows.append((key, wall, cpu, n / wall, n / cpu))
        print(f"{key:8s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  {n / wall:8.0f} samples/s  {n / cpu:8.0f} samples/CPU-s")
    lw, lc_ = out["local_1"]
    dw, dc = out["dask_1"]
    d2w, d2c = out["dask_2"]
    out["overhead_wall"] = dw / lw - 1
    out["overhead_cpu"] = dc / lc_ - 1
    out["speedup_2_over_1_wall"] = dw / d2w
    out["speedup_2_over_1_cpu_rate"] = (n / d2c) / (n / dc)
    print(f"Dask 1 worker over local 1 worker: {out['overhead_wall']:+.1%} wall, {out['overhead_cpu']:+.1%} CPU "
          f"(goal <= +5%)")
    print(f"Dask 2 workers over 1: {out['speedup_2_over_1_wall']:.2f}x wall (goal >= 1.8x); samples per CPU-second "
          f"{out['speedup_2_over_1_cpu_rate']:.2f}x of 1 worker's")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({**out, "machine": finish(out["machine"])}, f, indent=1)


if __name__ == "__main__":
    main()
