"""Wall time and peak memory of ``longsynth evaluate MODEL --suite S --scale paper --dry-run``.

    python bench/dry_run.py [--runs dlr:atomic zoology-attention:mqar ...] [--json PATH]

Each dry run is one subprocess, one after another (never two at once: each is timed alone); its
wall time is the subprocess's, its peak the child's peak RSS (``os.wait4``'s ru_maxrss), and its
estimate the line the command prints. The aim (docs/evaluate.md, "Dry run"): under 20 s and 2 GiB.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from _common import finish, machine, write_json

RUNS = ("dlr:atomic", "zoology-attention:mqar", "lstm:chomsky", "s6-signed:parity", "attention:induction-heads",
        "attention:mad", "dlr:table2")


def one(model, suite):
    """(seconds, peak GiB, the estimate's words, exit code) of one dry run."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "longsynth", "evaluate", model, "--suite", suite, "--scale", "paper",
               "--dry-run", "--out", os.path.join(tmp, "out")]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t0
    found = re.search(r"^estimate: about (.+?) on ", out, re.M)
    return seconds, usage.ru_maxrss / 2**20, found.group(1) if found else out.strip().splitlines()[-1], \
        os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", nargs="+", default=list(RUNS), help="MODEL:SUITE pairs, each dry-run at --scale paper")
    ap.add_argument("--json", default="bench/results/dry_run.json", help="where the results are written")
    args = ap.parse_args()
    results = {"machine": machine(), "runs": []}
    print("| suite | model | dry run | peak | estimate |\n|---|---|---|---|---|")
    for pair in args.runs:
        model, suite = pair.split(":")
        seconds, peak, estimate, code = one(model, suite)
        results["runs"].append(dict(model=model, suite=suite, seconds=seconds, peak_gib=peak, estimate=estimate,
                                    exit_code=code))
        print(f"| {suite} | `{model}` | {seconds:.1f} s | {peak:.2f} GiB | {estimate} |", flush=True)
    finish(results["machine"])
    write_json(args.json, results)


if __name__ == "__main__":
    main()
