"""Manifest parsing: the time to validate a dataset's manifest.json of many shards (every
`longsynth.open`, `info` and `verify` reads one), beside `json.loads` of the same text.

    python bench/manifest.py --shards 1000 [--against REV]

It writes a cumsum dataset of --shards shards of one sample under a temporary folder, then
times `longsynth.store.schema.parse_manifest` on its manifest (median of 50). `--against REV`
also times the parser of that git revision's longsynth/store/schema.py, loaded beside ours
in the same process, on the same manifest, and checks both return the same dict.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import longsynth
from longsynth.store import schema


def median_ms(fn, repeat=50):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def parser_at(rev):
    """parse_manifest of longsynth/store/schema.py at git revision ``rev``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = subprocess.run(["git", "show", f"{rev}:longsynth/store/schema.py"], cwd=here, check=True,
                          capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(), "schema_at_rev.py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location("schema_at_rev", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.parse_manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=1000, help="shards of the dataset (one sample each)")
    ap.add_argument("--against", default=None, help="a git revision whose parser to time beside ours")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "d")
        longsynth.generate(root, "cumsum", {"L": 8}, seed=0, splits={"train": args.shards},
                           shard_size=1, workers=1)
        text = open(os.path.join(root, "manifest.json")).read()
    where = "manifest.json"
    rows = [("json.loads", median_ms(lambda: json.loads(text)))]
    ours = schema.parse_manifest(json.loads(text), where)
    rows.append(("parse_manifest (this tree)", median_ms(lambda: schema.parse_manifest(json.loads(text), where))))
    if args.against:
        old = parser_at(args.against)
        same = old(json.loads(text), where) == ours
        rows.append((f"parse_manifest ({args.against})", median_ms(lambda: old(json.loads(text), where))))
        print(f"same dict from both parsers: {same}")
    print(f"manifest of {args.shards:,} shards, {len(text):,} bytes; python {sys.version.split()[0]}")
    for name, ms in rows:
        print(f"{name:34s} {ms:8.2f} ms")


if __name__ == "__main__":
    main()
