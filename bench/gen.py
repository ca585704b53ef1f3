"""End-to-end `gen` throughput: samples/s, MB/s and the share of time spent writing HDF5.

    python bench/gen.py [--task cumsum] [--L 4096] [--num-samples 20000] [--json bench/results/gen.json]
    python bench/gen.py --task flipflop --params '{}' --num-samples 200000   # a task's own parameters

Runs longsynth.store.generate into a temporary directory with 1 and 2 workers. The
write share is HDF5 dataset writes + close, over the workers' total time (generate +
digests + HDF5 writes + file hash + fsync), summed over shards; fsync (disk, not HDF5)
is reported on its own. A plain write() of the same number of bytes into a fresh file is
timed after each run as the machine's baseline for the HDF5 write rate. "of write bound" is
the rate of generating and writing against writing alone: the time spent writing, hashing
and syncing the shards over the whole, the generation's own time taken out.
"""
import argparse
import json
import os
import shutil
import tempfile
import time

from longsynth import registry, store
from _common import finish, machine


def run(task, params, num_samples, workers, compression):
    root = tempfile.mkdtemp(prefix="longsynth-bench-")
    try:
        t0 = time.perf_counter()
        m = store.generate(root, task, params, num_samples=num_samples, workers=workers, compression=compression)
        wall = time.perf_counter() - t0
        size = sum(r["bytes"] for s in m["splits"].values() for r in s["shards"])
        t = {k: sum(x[k] for x in m["timings"]) for k in ("generate_s", "write_s", "hash_s", "sync_s")}
        busy = sum(t.values())
        raw = raw_write_mb_s(root, size)
        return {
            "hdf5_write_mb_s": size / 1e6 / t["write_s"], "raw_write_mb_s": raw,
            "task": task, "params": params, "workers": workers, "compression": compression,
            "samples": num_samples, "wall_s": wall, "samples_per_s": num_samples / wall,
            "mb_per_s": size / 1e6 / wall, "bytes": size, **t,
            "write_share": t["write_s"] / busy, "hash_share": t["hash_s"] / busy,
            "generate_share": t["generate_s"] / busy, "sync_share": t["sync_s"] / busy,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def raw_write_mb_s(root, nbytes, block=8 << 20):
    """MB/s of a plain write() of nbytes into a new file beside the shards (page cache, no fsync).

    The baseline for the HDF5 write rate: on a VM whose fresh page-cache pages are slow to
    touch, both are slow for the same reason.
    """
    buf = os.urandom(block)
    path = os.path.join(root, "raw.bin")
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(max(1, nbytes // block)):
            f.write(buf)
    dt = time.perf_counter() - t0
    os.remove(path)
    return max(1, nbytes // block) * block / 1e6 / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="cumsum")
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--params", default=None, help="the task's parameters as JSON (default: {\"L\": --L})")
    ap.add_argument("--num-samples", type=int, default=20_000)
    ap.add_argument("--compression", default="none")
    ap.add_argument("--json", default="bench/results/gen.json")
    args = ap.parse_args()
    record = machine()
    params = {"L": args.L} if args.params is None else json.loads(args.params)
    run(args.task, params, 200, 1, args.compression)  # compile / load the numba cache once
    rows = [run(args.task, params, args.num_samples, w, args.compression) for w in (1, 2)]
    print(f"{'task':10s} {'L':>6s} {'workers':>7s} {'samples/s':>10s} {'MB/s':>8s} {'write %':>8s} {'hash %':>7s} "
          f"{'gen %':>6s} {'fsync %':>7s} {'h5 MB/s':>8s} {'raw MB/s':>8s} {'of write bound':>14s}")
    for r in rows:
        cfg = registry.get(args.task).make_config(**params)
        size = getattr(cfg, "L", getattr(cfg, "T", 0))
        print(f"{r['task']:10s} {size:6d} {r['workers']:7d} {r['samples_per_s']:10,.0f} {r['mb_per_s']:8.1f} "
              f"{100 * r['write_share']:7.1f}% {100 * r['hash_share']:6.1f}% {100 * r['generate_share']:5.1f}% "
              f"{100 * r['sync_share']:6.1f}% {r['hdf5_write_mb_s']:8.0f} {r['raw_write_mb_s']:8.0f} "
              f"{100 * (1 - r['generate_share']):13.1f}%")
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"machine": finish(record), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
