"""PyTorch loader throughput: samples/s and MB/s from a warm page cache.

    python bench/loader.py [--json bench/results/loader.json] [--workers 0,1,2]

For each stored task the installed longsynth has (shift/cumsum at L=4096, pathfinder-seg
512 and 256, listops-subtrees; a task that is not registered is skipped with a note), a
small dataset is generated under --data, read once to warm the page cache, then iterated
with DataLoader(batch_size=--batch-size) for each worker count, both encoded (encode=True:
what the model sees) and raw (encode=False: the bytes a GPU-side encode_batch would take).
Without a registered Pathfinder task, a 512x512 uint8 stand-in written by the same shard
writer (same HDF5 layout: one chunk per sample and key) takes its place, and says so.
The on-the-fly atomic stream is timed with 0 workers (all Numba threads in the main
process) and with forkserver workers (one Numba thread each).

MB/s counts the stored bytes read per second ("raw MB/s") and the bytes of the tensors
delivered ("out MB/s"). Worker start-up is excluded (each worker's first batch). Each batch
also carries the CPU time of the process that made it, so the CPU us per sample in a
worker (and 1e6 / that: a worker's uncontended rate) holds even on a busy machine.
"""
import argparse
import gc
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

import longsynth
from longsynth import registry
from longsynth.store import generate
from longsynth.task import KeySpec, Task, param
from _common import finish, machine

# (label, task, params, samples stored, batch size): the stored configurations
STORED = [
    ("shift-4096", "shift", {"L": 4096}, 2048, 16),
    ("cumsum-4096", "cumsum", {"L": 4096}, 2048, 16),
    ("pathfinder-seg-512", "pathfinder-seg", {"size": 512}, 1024, 8),
    ("pathfinder-seg-256", "pathfinder-seg", {"size": 256}, 1024, 8),
    ("listops-subtrees", "listops-subtrees", {}, 1024, 32),
]
ONTHEFLY = [("cumsum-4096", "cumsum", {"L": 4096}, 16), ("shift-4096", "shift", {"L": 4096}, 16)]


@dataclass(frozen=True)
class StandInConfig:
    M: int = param(512, "image side", lo=2)


def _standin_keys(cfg):
    return {"inputs": KeySpec("uint8", (cfg.M, cfg.M)), "targets": KeySpec("uint8", (cfg.M, cfg.M))}


def _standin_fill(cfg, seed, split, start, out, fixed):
    for b in range(out["inputs"].shape[0]):
        rng = np.random.default_rng([seed, split, start + b])
        out["inputs"][b] = rng.integers(0, 256, (cfg.M, cfg.M), dtype=np.uint8)
        out["targets"][b] = rng.integers(0, 3, (cfg.M, cfg.M), dtype=np.uint8)


STANDIN = Task(name="pathfinder-standin", config=StandInConfig, summary="uint8 M x M stand-in for pathfinder-seg",
               keys=_standin_keys, fill=_standin_fill, family="pathfinder")


def warm(root):
    for name in os.listdir(root):
        if name.endswith(".h5"):
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 24):
                    pass


def tensor_bytes(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(tensor_bytes(o) for o in obj.values())
    return 0


class StampedCollate:
    """Wraps a collate function: each batch also carries (worker id, that process's CPU s)."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, items):
        import torch
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        stamp = torch.tensor([-1 if info is None else info.id, time.process_time()], dtype=torch.float64)
        return self.inner(items), stamp


def time_loader(loader, count_of, max_batches):
    """(samples/s, delivered bytes/s, CPU us per sample in workers, in the main process).

    Times the batches after each worker's first (start-up excluded). CPU time is read in
    the process that made each batch, so contention on a shared machine inflates the wall
    figures but not the CPU ones; 1e6 / worker CPU us is a worker's uncontended rate.
    """
    it = iter(loader)
    first, stamp = next(it)
    n = nbytes = batches = 0
    spans = {int(stamp[0]): [float(stamp[1]), float(stamp[1]), 0]}  # worker -> [first, last, samples]
    t0, c0 = time.perf_counter(), time.process_time()
    for batch, stamp in it:
        k = count_of(batch)
        n += k
        nbytes += tensor_bytes(batch)
        span = spans.setdefault(int(stamp[0]), [float(stamp[1]), float(stamp[1]), 0])
        if span[0] != float(stamp[1]):
            span[1] = float(stamp[1])
            span[2] += k
        batches += 1
        if batches >= max_batches:
            break
    dt, main_cpu = time.perf_counter() - t0, time.process_time() - c0
    del it
    gc.collect()
    worker_n = sum(s[2] for s in spans.values())
    worker_us = sum(s[1] - s[0] for s in spans.values()) / max(worker_n, 1) * 1e6
    if -1 in spans:  # no workers: the main process did everything
        worker_us = main_cpu / n * 1e6
    return n / dt, nbytes / dt, worker_us, main_cpu / n * 1e6


def bench_stored(label, task, params, num, bs, data, workers, max_batches):
    from torch.utils.data import DataLoader, default_collate

    from longsynth.torch import ShardDataset, pad_collate

    root = os.path.join(data, label)
    generate(root, task, params, splits={"train": num}, workers=1)
    warm(root)
    manifest = longsynth.open(root).manifest
    stored = sum(os.path.getsize(os.path.join(root, r["file"])) for r in manifest["splits"]["train"]["shards"])
    raw_per_sample = stored / num
    rows = []
    for encode in (True, False):
        ds = ShardDataset(root, encode=encode)
        collate = pad_collate if ds.family == "listops" else None
        for w in workers:
            loader = DataLoader(ds, batch_size=bs, shuffle=True, num_workers=w,
                                collate_fn=StampedCollate(collate or default_collate), generator=_generator(0))
            sps, out_bps, worker_us, main_us = time_loader(loader, lambda b: int(b[0].shape[0]), max_batches)
            row = {"dataset": label, "task": task, "params": params, "encode": encode, "workers": w,
                   "batch_size": bs, "samples_per_s": round(sps, 1),
                   "samples_per_s_per_worker": round(sps / max(w, 1), 1),
                   "raw_MB_per_s": round(sps * raw_per_sample / 1e6, 1), "out_MB_per_s": round(out_bps / 1e6, 1),
                   "worker_cpu_us_per_sample": round(worker_us, 1), "main_cpu_us_per_sample": round(main_us, 1),
                   "cpu_bound_samples_per_s_per_worker": round(1e6 / worker_us, 1)}
            rows.append(row)
            print(f"  {label:22s} encode={str(encode):5s} workers={w}: {sps:8.0f} samples/s "
                  f"({row['samples_per_s_per_worker']:.0f}/worker)  raw {row['raw_MB_per_s']:7.1f} MB/s  "
                  f"out {row['out_MB_per_s']:7.1f} MB/s  cpu {worker_us:5.0f} us/sample/worker "
                  f"(={1e6 / worker_us:5.0f}/s) + main {main_us:4.0f} us", flush=True)
    return rows


def _generator(seed):
    import torch

    return torch.Generator().manual_seed(seed)


def bench_onthefly(label, task, params, bs, workers, max_batches):
    from torch.utils.data import DataLoader, default_convert

    from longsynth.torch import OnTheFlyDataset

    rows = []
    for w in workers:
        ds = OnTheFlyDataset(task, batch_size=bs, **params)
        ctx = None
        if w:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["longsynth.torch"])
        loader = DataLoader(ds, batch_size=None, num_workers=w, multiprocessing_context=ctx,
                            collate_fn=StampedCollate(default_convert))
        sps, out_bps, worker_us, main_us = time_loader(loader, lambda b: int(b[0].shape[0]), max_batches)
        rows.append({"dataset": label, "task": task, "params": params, "onthefly": True, "workers": w,
                     "batch_size": bs, "samples_per_s": round(sps, 1), "out_MB_per_s": round(out_bps / 1e6, 1),
                     "worker_cpu_us_per_sample": round(worker_us, 1), "main_cpu_us_per_sample": round(main_us, 1)})
        print(f"  {label:22s} on the fly   workers={w}: {sps:8.0f} samples/s  out {out_bps / 1e6:7.1f} MB/s  "
              f"cpu {worker_us:5.0f} us/sample/worker + main {main_us:4.0f} us", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "loader.json"))
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "results", "loader-data"))
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--max-batches", type=int, default=120, help="timed batches per configuration")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="intra-op threads of the main process (collation with 0 workers)")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    import torch

    torch.set_num_threads(args.torch_threads)
    os.makedirs(args.data, exist_ok=True)
    tasks = registry.all_tasks()
    results = {"machine": machine(torch=torch.__version__, torch_threads=args.torch_threads), "stored": [],
               "onthefly": [], "notes": []}
    print(f"longsynth {longsynth.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    for label, task, params, num, bs in STORED:
        if task not in tasks:
            note = f"{label}: task {task!r} is not registered in this longsynth; skipped"
            if label == "pathfinder-seg-512":
                tasks[STANDIN.name] = STANDIN
                note += "; measured a 512x512 uint8 stand-in in the same shard layout instead"
                label, task, params = "pathfinder-standin-512", STANDIN.name, {"M": 512}
                print(note)
                results["notes"].append(note)
            else:
                print(note)
                results["notes"].append(note)
                continue
        results["stored"] += bench_stored(label, task, params, num, bs, args.data, workers, args.max_batches)
    for label, task, params, bs in ONTHEFLY:
        if task not in tasks:
            note = f"{label} on the fly: task {task!r} is not registered; skipped"
            print(note)
            results["notes"].append(note)
            continue
        results["onthefly"] += bench_onthefly(label, task, params, bs, workers, args.max_batches)
    finish(results["machine"])
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
