"""Peak memory and time of ``gen TASK --authors-stream`` at two counts: the authors' stream is
written shard by shard, so the peak must not grow with the split beyond the side arrays its
draws keep (O(count x kv) for mqar: zoology draws every row's keys, then every row's values).

    python bench/authors_memory.py [--counts 100000 400000] [--tasks mqar associative-recall]
                                   [--before DIR] [--json bench/results/authors_memory.json]

Each run is a fresh ``python -m longsynth gen`` subprocess (Numba's cache warmed by a first
tiny run); its peak RSS is the kernel's ru_maxrss of that child alone (os.wait4), its time the
wall clock. ``--before DIR`` also runs an earlier longsynth, laid out as an installed package
under DIR (DIR/longsynth with its generators/, cli/ and models_ref/ inside), alternating with
this checkout's, so both versions' times are taken side by side and their split digests
compared byte for byte; make DIR from a commit with

    git archive COMMIT longsynth generators cli models_ref | tar -x -C /tmp/src
    mkdir -p DIR && cp -r /tmp/src/longsynth DIR/ && for d in generators cli models_ref; do
        cp -r /tmp/src/$d DIR/longsynth/$d; done

docs/benchmarks.md, "gen --authors-stream: memory, shared machine, 2026-11-27".
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from _common import finish, machine

PARAMS = {"mqar": ["--input-seq-len", "64"], "associative-recall": [], "parity": [], "mad-recall": [],
          "selective-copying": [], "word-problem": []}


def gen(task, count, root, shard_size=None, code=None):
    """(peak RSS bytes, seconds, split digest, shards) of one gen --authors-stream run; ``code``:
    a folder holding the longsynth package to run instead of the installed one."""
    out = os.path.join(root, f"{task}-{count}")
    cmd = [sys.executable, "-m", "longsynth", "gen", task, "--authors-stream", *PARAMS.get(task, []), "--seed", "0",
           "--splits", f"train={count}", "--out", out, "--workers", "1"]
    if shard_size:
        cmd += ["--shard-size", str(shard_size)]
    t = time.perf_counter()
    env = dict(os.environ, **({"PYTHONPATH": code} if code else {}))
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=root, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-2000:]}")
    with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
    shutil.rmtree(out)
    return usage.ru_maxrss * 1024, dt, m["splits"]["train"]["digest"], len(m["splits"]["train"]["shards"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[100_000, 400_000])
    ap.add_argument("--tasks", nargs="+", default=["mqar", "associative-recall"])
    ap.add_argument("--shard-size", type=int, default=None, help="default: the store's (128 MB shards)")
    ap.add_argument("--before", default=None, help="an earlier longsynth (see above), run alternately with this one")
    ap.add_argument("--json", default="bench/results/authors_memory.json")
    a = ap.parse_args()
    results = {"machine": machine(), "counts": a.counts, "before": a.before, "runs": []}
    root = tempfile.mkdtemp(prefix="authors-memory-")
    codes = {"this": None, **({"before": os.path.abspath(a.before)} if a.before else {})}
    try:
        for task in a.tasks:
            for version, code in codes.items():
                gen(task, 100, root, code=code)  # compiles and caches the kernels: the runs below load them
                rss, dt, digest, shards = gen(task, 100, root, code=code)
                print(f"{task} [{version}]: 100 rows (the process's own footprint): {rss / 1e6:.0f} MB, {dt:.1f} s")
                results["runs"].append({"task": task, "version": version, "count": 100, "peak_rss_bytes": rss,
                                        "seconds": dt, "digest": digest, "shards": shards})
            for count in a.counts:
                got = {}
                for version, code in codes.items():
                    rss, dt, digest, shards = gen(task, count, root, a.shard_size, code)
                    got[version] = (rss, dt, digest)
                    print(f"{task} [{version}]: {count:,} rows in {shards} shard(s): peak RSS {rss / 1e6:.0f} MB, "
                          f"{dt:.1f} s ({count / dt:,.0f} rows/s), digest {digest[:16]}")
                    results["runs"].append({"task": task, "version": version, "count": count, "peak_rss_bytes": rss,
                                            "seconds": dt, "digest": digest, "shards": shards})
                if "before" in got:
                    (r0, t0, d0), (r1, t1, d1) = got["before"], got["this"]
                    print(f"  this / before: peak {r1 / r0:.2f}x, time {t1 / t0:.2f}x, "
                          f"digests {'equal' if d0 == d1 else 'DIFFER'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    finish(results["machine"])
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(results, f, indent=1)
    print(f"written {a.json}")


if __name__ == "__main__":
    main()
