"""Export rate of `--format hf` against the read rate of `longsynth.open`, on the same data.

    python bench/export_hf.py [--data DIR] [--json bench/results/export_hf.json] [--rounds 3] [--workers 1,2]

Three datasets (generated into --data when absent): cumsum L=4096 (4,000 samples),
listops-subtrees (1,000) and pathfinder-seg 256 (1,000). For each, in one process:

- read: every sample of every split through `longsynth.open(DIR)[split][i]` (checked
  reads), after one untimed pass so both sides read from the page cache;
- blocks: the same through `Split.iter_blocks` (what the export reads);
- export: `longsynth.exports.export(DIR, "hf", OUT, workers=W)` into a fresh directory on
  the same disk, fsyncs included (the export's files are durable when it returns), for
  each W of --workers (1, the default: threads of this process; more: that many spawned
  writer processes, their start-up included).

Each figure is the best of --rounds runs, in samples/s of wall time and per CPU second
(all threads); the ratio is export over read, wall time. The disk's fsynced write rate is
measured too: it bounds any export.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import longsynth
from longsynth import exports, store
from longsynth.task import Ragged
from _common import finish, machine

DATASETS = [
    ("cumsum-4096", ["cumsum", "--L", "4096", "-n", "4000"]),
    ("listops-subtrees", ["listops-subtrees", "-n", "1000"]),
    ("pathfinder-seg-256", ["pathfinder-seg", "--size", "256", "-n", "1000"]),
]


def ensure(data, name, args):
    root = os.path.join(data, name)
    if not os.path.exists(os.path.join(root, "manifest.json")):
        subprocess.run([sys.executable, "-m", "longsynth", "gen", *args, "--out", root], check=True)
    return root


def read_rate(root):
    ds = longsynth.open(root)
    n = 0
    t, c = time.perf_counter(), time.process_time()
    for sp in ds.splits.values():
        for i in range(len(sp)):
            sp[i]
            n += 1
    dt, dc = time.perf_counter() - t, time.process_time() - c
    ds.close()
    return n / dt, n / dc


def block_rate(root):
    ds = longsynth.open(root)
    n = 0
    t = time.perf_counter()
    for sp in ds.splits.values():
        for _, block in sp.iter_blocks():
            col = next(iter(block.values()))
            n += len(col.offsets) - 1 if isinstance(col, Ragged) else len(col)
    dt = time.perf_counter() - t
    ds.close()
    return n / dt


def export_rate(root, scratch, workers):
    out = os.path.join(scratch, "hf")
    shutil.rmtree(out, ignore_errors=True)
    n = sum(m["count"] for m in store.read_manifest(root)["splits"].values())
    t, c = time.perf_counter(), time.process_time()
    exports.export(root, "hf", out, workers=workers)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    shutil.rmtree(out)
    return n / dt, n / dc, size


def disk_rate(scratch, size=256 << 20):
    """Bytes/s of one fsynced sequential write of ``size`` bytes (what the export ends with)."""
    path = os.path.join(scratch, "disk.bin")
    block = os.urandom(8 << 20)
    t = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    dt = time.perf_counter() - t
    os.remove(path)
    return size / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="data/bench-export", help="where the three datasets are (made when absent)")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "export_hf.json"))
    ap.add_argument("--rounds", type=int, default=3, help="runs per figure; the best is kept")
    ap.add_argument("--workers", default="1,2", help="export --workers values to time")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    os.makedirs(args.data, exist_ok=True)
    results = {"machine": machine(), "longsynth_path": longsynth.__file__, "datasets": {}}
    with tempfile.TemporaryDirectory(dir=args.data) as scratch:
        results["machine"]["disk_fsync_MB_s"] = max(disk_rate(scratch) for _ in range(args.rounds)) / 1e6
        print(f"disk: {results['machine']['disk_fsync_MB_s']:.0f} MB/s fsynced sequential write")
        for name, gen_args in DATASETS:
            root = ensure(args.data, name, gen_args)
            stored = sum(r["bytes"] for s in store.read_manifest(root)["splits"].values() for r in s["shards"])
            read_rate(root)  # warm: page cache, Numba's compiled checksums
            exports.export(root, "hf", os.path.join(scratch, "warm"))  # warm: imports
            shutil.rmtree(os.path.join(scratch, "warm"))
            reads = [read_rate(root) for _ in range(args.rounds)]
            read, read_cpu = max(r[0] for r in reads), max(r[1] for r in reads)
            blocks = max(block_rate(root) for _ in range(args.rounds))
            row = {"stored_bytes": stored, "read_samples_s": read, "read_samples_per_cpu_s": read_cpu,
                   "blocks_samples_s": blocks, "workers": {}}
            print(f"{name:20s} read {read:8,.0f}/s ({read_cpu:8,.0f}/CPU s)  blocks {blocks:8,.0f}/s  "
                  f"({stored / 1e6:.0f} MB stored)")
            for w in counts:
                runs = [export_rate(root, scratch, w) for _ in range(args.rounds)]
                export, export_cpu, size = max(r[0] for r in runs), max(r[1] for r in runs), runs[0][2]
                row["export_bytes"] = size
                row["workers"][w] = {"export_samples_s": export, "export_samples_per_main_cpu_s": export_cpu,
                                     "export_over_read": export / read}
                print(f"{'':20s} export hf --workers {w}: {export:7,.0f}/s "
                      f"({export_cpu:7,.0f} per CPU s of this process)  export/read {export / read:5.2f}  "
                      f"({size / 1e6:.0f} MB exported)")
            results["datasets"][name] = row
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    finish(results["machine"])
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
