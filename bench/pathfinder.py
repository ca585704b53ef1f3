"""Benchmark pathfinder-seg: kernel and end-to-end (HDF5 shards) throughput per size.

    .venv/bin/python bench/pathfinder.py [--sizes 128,256,512] [--scale 1.0] [--json PATH]

Per size it reports
  kernel img/s      ``render_batch`` on one thread (Numba threads = 1), a batch at once
  per-image times   median, p99 and max of single-image kernel calls (one thread; wall
                    and CPU time; includes the ~10-20 us Python dispatch of one call)
  kernel 2 threads  the same batch with 2 Numba threads
  end to end        ``longsynth.store.generate`` into a temporary directory with 1 and 2
                    worker processes (16 shards, no compression): images/s of wall time
                    (including the workers' start-up) and per core: the median over shards
                    of images / (generate + hash + write seconds) of the shard, which
                    leaves out each worker's one-off Numba cache load (about 1.5 s), and
                    images per CPU second of all processes (start-up included): the
                    figure least disturbed by other jobs on a shared machine
Writes all figures as JSON (default bench/results/pathfinder.json).
"""
import argparse
import os
import resource
import shutil
import tempfile
import time

import numba
import numpy as np

from longsynth import registry, store
from _common import finish, machine, write_json

TASK = "pathfinder-seg"
COUNTS = {128: 4000, 256: 1500, 512: 400}  # images per end-to-end run at --scale 1


def _cpu():
    """CPU seconds of this process and its finished children (the pool's workers)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def kernel(size, n, threads):
    t = registry.get(TASK)
    cfg = t.make_config(size=size)
    out = t.allocate(cfg, n)
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        t.fill(cfg, 1, 1, 0, t.allocate(cfg, 2), {})  # compile / load the cache
        t0 = time.perf_counter()
        c0 = _cpu()
        t.fill(cfg, 1, 1, 0, out, {})
        dt = time.perf_counter() - t0
        cpu = _cpu() - c0
    finally:
        numba.set_num_threads(old)
    return n / dt, n / cpu


def per_image(size, n):
    t = registry.get(TASK)
    cfg = t.make_config(size=size)
    one = t.allocate(cfg, 1)
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    times = np.empty(n)
    cpu = np.empty(n)
    try:
        for i in range(n):
            t0 = time.perf_counter()
            c0 = time.process_time()
            t.fill(cfg, 2, 1, i, one, {})
            cpu[i] = time.process_time() - c0
            times[i] = time.perf_counter() - t0
    finally:
        numba.set_num_threads(old)
    q = lambda a: (float(np.median(a)) * 1e3, float(np.quantile(a, 0.99)) * 1e3, float(a.max()) * 1e3)  # noqa: E731
    return q(times), q(cpu)


def end_to_end(size, n, workers):
    n = 16 * max(1, n // 16)  # 16 equal shards
    root = tempfile.mkdtemp(prefix="pf-bench-")
    try:
        t0 = time.perf_counter()
        c0 = _cpu()
        m = store.generate(os.path.join(root, "ds"), TASK, {"size": size}, seed=3, splits={"train": n},
                           shard_size=max(1, n // 16), workers=workers)
        wall = time.perf_counter() - t0
        cpu = _cpu() - c0
        counts = [r["count"] for s in m["splits"].values() for r in s["shards"]]
        size = counts[0]
        rates = [size / (tm["generate_s"] + tm["write_s"] + tm["hash_s"]) for tm in m["timings"]]
        gen = [size / tm["generate_s"] for tm in m["timings"]]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"wall_img_s": n / wall, "per_core_img_s": float(np.median(rates)), "per_cpu_second_img_s": n / cpu,
            "generate_only_img_s": float(np.median(gen)), "images": n, "shards": len(counts)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="128,256,512")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the image counts")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "pathfinder.json"))
    args = ap.parse_args()
    results = {"task": TASK, "machine": machine(), "sizes": {}}
    for size in [int(s) for s in args.sizes.split(",")]:
        n = max(8, int(COUNTS[size] * args.scale))
        k1, k1cpu = kernel(size, n, 1)
        k2, k2cpu = kernel(size, n, 2)
        r = {"kernel_1_thread_img_s": k1, "kernel_1_thread_per_cpu_second_img_s": k1cpu,
             "kernel_2_threads_img_s": k2, "kernel_2_threads_per_cpu_second_img_s": k2cpu}
        (med, p99, worst), (cmed, cp99, cworst) = per_image(size, max(50, n // 4))
        r.update(median_ms=med, p99_ms=p99, max_ms=worst, cpu_median_ms=cmed, cpu_p99_ms=cp99, cpu_max_ms=cworst)
        r["end_to_end_1_worker"] = end_to_end(size, n, 1)
        r["end_to_end_2_workers"] = end_to_end(size, n, 2)
        results["sizes"][size] = r
        e1, e2 = r["end_to_end_1_worker"], r["end_to_end_2_workers"]
        print(f"{size:4d} px  kernel {k1:7.1f} img/s 1 thread ({k1cpu:.1f} per CPU s), {k2:7.1f} 2 threads "
              f"({k2cpu:.1f} per CPU s)")
        print(f"          per image: wall median {med:.2f} ms p99 {p99:.2f} ms max {worst:.2f} ms; "
              f"CPU median {cmed:.2f} ms p99 {cp99:.2f} ms max {cworst:.2f} ms")
        for w, e in (("1 worker ", e1), ("2 workers", e2)):
            print(f"          end to end, {w}: {e['wall_img_s']:7.1f} img/s wall, {e['per_core_img_s']:7.1f} per core "
                  f"(median shard), {e['per_cpu_second_img_s']:7.1f} per CPU second (all processes, start-up included)")
    finish(results["machine"])
    write_json(args.json, results)


if __name__ == "__main__":
    main()
