"""Benchmark classic Pathfinder (`pathfinder`, hard sets) end to end, beside the original generator.

    .venv/bin/python bench/lra_pathfinder.py [--sizes 32,128] [--scale 1.0]
        [--original "PYTHON DRIVER"] [--original-images 3] [--json PATH]

Per size: ``longsynth.store.generate`` into a temporary directory with one worker process
(16 shards, no compression): images/s of wall time (the worker's start-up included) and the
marginal rate per core: the median over shards of images / (generate + hash + write seconds),
which leaves out the worker's one-off start-up. With ``--original``, the original generator
(drewlinsley/pathfinder, driven by PYTHON DRIVER SIZE hard N BATCH OUTROOT, e.g.
``/tmp/orig-venv/bin/python /tmp/lra-orig/run_lra.py``) makes ``--original-images`` images
of the same set in the same run, timed by wall clock per image. JSON: bench/results/lra_pathfinder.json.
"""
import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import time

import numpy as np

import longsynth
from longsynth import store

TASK = "pathfinder"
COUNTS = {32: 32_000, 64: 2_000, 128: 8_000, 256: 4_000}  # images per run at --scale 1


def end_to_end(size, n):
    n = 16 * max(1, n // 16)
    root = tempfile.mkdtemp(prefix="lra-pf-bench-")
    try:
        t0 = time.perf_counter()
        m = store.generate(os.path.join(root, "ds"), TASK, {"size": size, "difficulty": "hard"}, seed=3,
                           splits={"train": n}, shard_size=n // 16, workers=1)
        wall = time.perf_counter() - t0
        per = n // 16
        rates = [per / (tm["generate_s"] + tm["write_s"] + tm["hash_s"]) for tm in m["timings"]]
        gen = [per / tm["generate_s"] for tm in m["timings"]]
        nbytes = sum(r["bytes"] for s in m["splits"].values() for r in s["shards"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"images": n, "wall_img_s": n / wall, "marginal_per_core_img_s": float(np.median(rates)),
            "generate_only_img_s": float(np.median(gen)), "bytes_per_image": nbytes / n}


def original(cmd, size, k):
    out = tempfile.mkdtemp(prefix="lra-pf-orig-")
    try:
        t0 = time.perf_counter()
        subprocess.run(shlex.split(cmd) + [str(size), "hard", str(k), "999", out], check=True,
                       stdout=subprocess.DEVNULL)
        return (time.perf_counter() - t0) / k
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="32,128")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--original", default=None, help="command that runs the original generator's driver")
    ap.add_argument("--original-images", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "lra_pathfinder.json"))
    args = ap.parse_args()
    res = {"task": TASK, "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "loadavg": os.getloadavg(), "longsynth": longsynth.__version__, "sizes": {}}
    for size in [int(s) for s in args.sizes.split(",")]:
        r = end_to_end(size, max(16, int(COUNTS[size] * args.scale)))
        line = (f"{size:4d} px hard: {r['images']} images, {r['wall_img_s']:8.1f} img/s wall (1 worker), "
                f"{r['marginal_per_core_img_s']:8.1f} img/s marginal per core, {r['bytes_per_image']:.0f} B/image")
        if args.original:
            s = original(args.original, size, args.original_images)
            r["original_s_per_image"] = s
            r["speedup_vs_original"] = r["marginal_per_core_img_s"] * s
            line += f"; original {s:.2f} s/image ({args.original_images} images): {r['speedup_vs_original']:,.0f}x"
        print(line, flush=True)
        res["sizes"][size] = r
    res["loadavg_end"] = os.getloadavg()
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
