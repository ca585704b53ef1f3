"""Throughput of the 11 atomic generators: samples/s at L = 4096, batches of 16.

    python bench/atomic.py [--json bench/results/atomic.json] [--seconds 0.5] [--rounds 5]
                           [--threading-layer default|omp|workqueue|tbb]

For 1 and 2 Numba threads, each task generates batches of 16 with ``longsynth.batch``
(into a reused ``out``) for ``rounds`` timed rounds of about ``seconds`` each; the best
round is reported (the machine may be shared). With 1 thread it also reports samples per
CPU-second of this process (less sensitive to other load on a shared machine), and the
ratios use the wall-clock figure unless ``--per-cpu-second`` is given. In the same run it measures NumPy's
``standard_normal`` rate (single thread), prints the ratios to the authors' reference
figures (measured once here) and, for the noise-bound tasks, normal draws/s against NumPy's rate.

On an oversubscribed machine the OpenMP layer's active waiting can make 2 threads far
slower than 1 (each batch ends at a barrier); ``--threading-layer workqueue`` shows the
figures without that effect. The layer used is recorded in the JSON.
"""
import argparse
import os
import time

import numba
import numpy as np

import longsynth
from _common import finish, machine, write_json

L = 4096
BATCH = 16
# the authors' torch generator, one thread, batches of 16, L = 4096, measured once on this machine, samples/s
REFERENCE = {"shift": 6475, "cumsum": 18840, "cummax": 19197, "reverse": 12906, "sort": 3479,
             "select": 11015, "select-fixed": 14728, "mips": 14.1, "context-shift": 9939,
             "solve": 2623, "solve-fixed": 2781}
TARGET = {t: 5.0 if t in ("sort", "solve", "solve-fixed", "mips") else 1.5 for t in REFERENCE}
# normal draws per sample of the noise-bound tasks (target: >= half NumPy's rate per core)
NORMALS = {"shift": L, "cumsum": L, "cummax": L, "reverse": L, "select": L + 32, "context-shift": L - 2}


def best_rate(step, per_call, seconds, rounds):
    """Best (wall-clock rate, CPU-time rate) over rounds; CPU time is this process's."""
    step()
    best = best_cpu = 0.0
    for _ in range(rounds):
        n = 0
        t0, c0 = time.perf_counter(), time.process_time()
        while True:
            step()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        dc = time.process_time() - c0
        best = max(best, n * per_call / dt)
        best_cpu = max(best_cpu, n * per_call / max(dc, 1e-9))
    return best, best_cpu


def numpy_normals(seconds, rounds):
    g = np.random.default_rng(0)
    buf = np.empty(1 << 20)
    return best_rate(lambda: g.standard_normal(out=buf), buf.size, seconds, rounds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "atomic.json"))
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tasks", default=",".join(REFERENCE))
    ap.add_argument("--per-cpu-second", action="store_true",
                    help="ratios from samples per CPU-second (and NumPy's draws per CPU-second)")
    ap.add_argument("--threading-layer", default="default", choices=["default", "omp", "workqueue", "tbb"])
    args = ap.parse_args()
    record = machine()
    numba.config.THREADING_LAYER = args.threading_layer
    tasks = args.tasks.split(",")
    np_wall, np_cpu = numpy_normals(args.seconds, args.rounds)
    np_rate = np_cpu if args.per_cpu_second else np_wall
    rows = []
    for task in tasks:
        out = longsynth.batch(task, 0, BATCH, L=L)
        rates = {}
        for threads in (1, 2):
            numba.set_num_threads(threads)
            start = [0]

            def step():
                longsynth.batch(task, start[0], BATCH, L=L, out=out)
                start[0] += BATCH

            sec = args.seconds if task != "mips" else max(args.seconds, 1.0)
            rates[threads] = best_rate(step, BATCH, sec, args.rounds if task != "mips" else 2)
        one = rates[1][1] if args.per_cpu_second else rates[1][0]
        row = {"task": task, "samples_per_s_1": rates[1][0], "samples_per_cpu_s_1": rates[1][1],
               "samples_per_s_2": rates[2][0], "reference": REFERENCE[task],
               "ratio_1": one / REFERENCE[task], "target_ratio": TARGET[task]}
        if task in NORMALS:
            row["normals_per_s_1"] = one * NORMALS[task]
            row["vs_numpy_1"] = row["normals_per_s_1"] / np_rate
        row["meets_target"] = row["ratio_1"] >= TARGET[task] and row.get("vs_numpy_1", 1.0) >= 0.5
        rows.append(row)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    head = (f"{'task':14s} {'1 thread':>10s} {'1 th/cpu-s':>10s} {'2 threads':>10s} {'reference':>10s} "
            f"{'x ref':>7s} {'target':>7s} {'normals/s':>10s} {'x numpy':>8s}  ok")
    layer = numba.threading_layer()
    print(f"numpy standard_normal, 1 thread: {np_wall / 1e6:.1f} M/s ({np_cpu / 1e6:.1f} M per CPU-s); "
          f"L = {L}, batches of {BATCH}, samples/s; numba threading layer {layer}; ratios from "
          f"{'CPU-seconds' if args.per_cpu_second else 'wall-clock'}")
    print(head)
    for r in rows:
        nrm = f"{r['normals_per_s_1'] / 1e6:9.1f}M" if "normals_per_s_1" in r else f"{'':10s}"
        vs = f"{r['vs_numpy_1']:8.2f}" if "vs_numpy_1" in r else f"{'':8s}"
        print(f"{r['task']:14s} {r['samples_per_s_1']:10.1f} {r['samples_per_cpu_s_1']:10.1f} "
              f"{r['samples_per_s_2']:10.1f} {r['reference']:10.1f} "
              f"{r['ratio_1']:7.2f} {r['target_ratio']:6.1f}x {nrm} {vs}  {'yes' if r['meets_target'] else 'NO'}")
    result = {"L": L, "batch": BATCH, "numpy_normals_per_s": np_wall, "numpy_normals_per_cpu_s": np_cpu,
              "ratios_from": "cpu_seconds" if args.per_cpu_second else "wall_clock",
              "rows": rows, "threading_layer": layer,
              "machine": finish(record),
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_json(args.json, result)


if __name__ == "__main__":
    main()
