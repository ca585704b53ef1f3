"""``longsynth import-hf synthseq/flipflop`` at the Hub's string length: time and peak memory of the
import (both passes) and of ``verify --deep`` (every row against the definition), on files made in
the Hub's layout (docs/tasks/flipflop.md, "The Hub's data") from our generator, since the Hub's own
files cannot be downloaded here.

    python bench/import_hf.py --rows 200000 --out bench/results/import_hf
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from _common import finish, machine, write_json

import longsynth


def hub_files(folder, rows, T):
    """data/train-00000-of-00001-*.parquet of ``rows`` FFL(0.8) strings and a val file of 4,000."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    chars = np.frombuffer(b"wri01", dtype=np.uint8)
    for name, n, split in (("train-00000-of-00001-0a.parquet", rows, "train"), ("val-00000-of-00001-0b.parquet", 4000,
                                                                                "val")):
        b = longsynth.batch("flipflop", 0, n, seed=0, split=split, T=T, p_ignore=0.8)
        tok = np.concatenate([b["inputs"], b["targets"][:, -1:]], axis=1).astype(np.uint8)
        strings = [r.tobytes().decode() for r in chars[tok]]
        pq.write_table(pa.table({"text": strings}), os.path.join(folder, "data", name))


def timed(cmd):
    """(seconds, peak resident kB) of a command, from GNU time."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr[-2000:])
    seconds, kb = r.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000, help="training strings in the made files")
    ap.add_argument("--T", type=int, default=256, help="instructions a string (the Hub's: 256)")
    ap.add_argument("--out", default="bench/results/import_hf", help="folder for the files, datasets and JSON")
    args = ap.parse_args()
    results = {"machine": machine(), "rows": args.rows, "T": args.T}
    src, dst = os.path.join(args.out, "src"), os.path.join(args.out, "datasets")
    for d in (src, dst):
        shutil.rmtree(d, ignore_errors=True)
    t = time.perf_counter()
    hub_files(src, args.rows, args.T)
    results["make_files_s"] = time.perf_counter() - t
    results["parquet_mb"] = sum(os.path.getsize(os.path.join(src, "data", f)) for f in os.listdir(
        os.path.join(src, "data"))) / 1e6
    cli = [sys.executable, "-m", "longsynth"]
    results["import_s"], results["import_peak_kb"] = timed([*cli, "import-hf", "synthseq/flipflop", src, "--out", dst])
    results["verify_deep_s"], results["verify_peak_kb"] = timed([*cli, "verify", os.path.join(dst, "ffl-0.8"),
                                                                 "--deep"])
    n = args.rows + 4000
    results["import_rows_per_s"] = n / results["import_s"]
    finish(results["machine"])
    write_json(os.path.join(args.out, "import_hf.json"), results)
    print(f"{n:,} strings of T {args.T} ({results['parquet_mb']:.0f} MB of parquet): import-hf "
          f"{results['import_s']:.1f} s ({results['import_rows_per_s']:,.0f} strings/s, peak "
          f"{results['import_peak_kb'] / 1e6:.2f} GB), verify --deep {results['verify_deep_s']:.1f} s (peak "
          f"{results['verify_peak_kb'] / 1e6:.2f} GB)")


if __name__ == "__main__":
    main()
