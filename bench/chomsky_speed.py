"""Benchmark: the data of the Chomsky hierarchy paper's training and evaluation, ours beside the
authors' code, one run, one core.

    python bench/chomsky_speed.py CHECKOUT                # the full run, about 8 minutes of CPU
    python bench/chomsky_speed.py CHECKOUT --quick        # a smoke run, about 3.5 minutes of CPU

(on a shared machine: ``flock /tmp/longsynth-heavy.lock python bench/chomsky_speed.py ...``).
CHECKOUT is google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be; their side runs in
``--jax-python`` (default /tmp/jaxenv/bin/python: jax, chex, numpy, dm-tree), ours in this
interpreter. Both are subprocesses pinned to one core (``taskset -c --core``) with one thread
(XLA_FLAGS, NUMBA_NUM_THREADS, OMP_NUM_THREADS); times are CPU seconds of that process.
Per task, each in its own processes (a training run trains one task):

- curriculum: the data of their training loop (experiments/training.py 207-231: one model-init
  batch at length 10, then per step a length drawn by UniformCurriculum(1..40), curriculum.py
  59-62, and ``sample_batch(key, 128, length)``). Theirs = the compile of every length called
  (jitted tasks compile per length, a static argument; the Python tasks compile ``one_hot`` per
  shape) + calls x steady time. Each is measured at a sample of lengths (every ``--train-stride``th,
  with 1 and 40; length 10 first, the model-init batch, so any first-trace cost of the process
  lands on it alone) and linearly interpolated in between. Ours = calls x our steady time
  (measured at all 40 lengths) of ``longsynth.batch(task, start, 128, length=n)``; our Numba
  warm-up is reported apart: compiled from scratch (empty NUMBA_CACHE_DIR) and loaded from the
  disk cache that run wrote (``cache=True``). Composed for ``--steps`` steps (lengths drawn with
  ``random.Random(0)``); ours is also timed directly on the first ``check_steps`` of that draw.
- evaluation: their range_evaluation.py 75-85 at lengths 41..500, 512 // 64 = 8 batches of 64 per
  length. Theirs = compile at each length + 8 x steady, measured every ``--eval-stride``th length
  (with 41 and 500), interpolated; ours timed directly at every length.
- sample_batch (their six Python tasks): steady time of one batch of 128 at lengths 40 and 500.

"ours in blocks": the same rows when one call makes many batches (64 training batches at one
length; a length's 8 evaluation batches), as a loader that groups steps by length would; the
per-call cost of ``longsynth.batch`` (the wrapper, the launch of a parallel kernel) is then paid
once a block instead of once a batch.

Ratio = theirs / ours. Output: a table and ``--json`` (default bench/results/chomsky_speed.json).
"""
import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = ["even-pairs", "parity-check", "cycle-navigation", "modular-arithmetic", "modular-arithmetic-brackets",
         "reverse-string", "solve-equation", "stack-manipulation", "binary-addition", "binary-multiplication",
         "compute-sqrt", "duplicate-string", "missing-duplicate-string", "odds-first", "bucket-sort"]
PYTHON_TASKS = ["modular-arithmetic-brackets", "solve-equation", "stack-manipulation", "binary-addition",
                "binary-multiplication", "compute-sqrt"]  # their sample_batch builds lists; the rest are jitted
TRAIN_LENGTHS = tuple(range(1, 41))  # UniformCurriculum(range(1, 41))
TRAIN_BATCH = 128
INIT_LENGTH = 10  # training.py 207-208: the batch that initialises the model
EVAL_LENGTHS = tuple(range(41, 501))
EVAL_BATCH = 64  # range_test_sub_batch_size (training.py 64, example.py 126)
EVAL_BATCHES = 512 // 64  # range_test_total_batch_size // sub_batch_size (range_evaluation.py 83)
SAMPLE_BATCH_LENGTHS = (40, 500)
BLOCK = 64  # our block figures: one call makes the batches of 64 training steps at one length
ONE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
              "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"}
PLANS = {  # lengths sampled for theirs, CPU seconds per steady figure, steps of our direct check
    "full": {"train_stride": 3, "eval_stride": 23, "budget": 0.05, "min_reps": 5, "check_steps": 10_000},
    "quick": {"train_stride": 13, "eval_stride": 92, "budget": 0.01, "min_reps": 3, "check_steps": 2_000},
}


# ---------------------------------------------------------------- composition (no timing)


def sampled(lo, hi, stride):
    """lo, lo + stride, ... up to hi, and hi itself."""
    out = list(range(lo, hi + 1, stride))
    return out if out[-1] == hi else out + [hi]


def interpolate(points, at):
    """The value at length ``at`` of the piecewise-linear curve through ``points`` ({length:
    value}); constant beyond the first and last point."""
    xs = sorted(points)
    if at <= xs[0]:
        return points[xs[0]]
    if at >= xs[-1]:
        return points[xs[-1]]
    for a, b in zip(xs, xs[1:]):
        if a <= at <= b:
            return points[a] + (points[b] - points[a]) * (at - a) / (b - a)
    raise AssertionError("unreachable")


def curriculum_lengths(steps, seed=0):
    """The lengths of ``steps`` training steps, drawn as UniformCurriculum does (random.choice)."""
    rng = random.Random(seed)
    return [rng.choice(TRAIN_LENGTHS) for _ in range(steps)]


def curriculum_calls(steps, seed=0):
    """{length: sample_batch calls} of a training run of ``steps`` steps: the model-init batch at
    length 10 and one batch per step."""
    calls = {INIT_LENGTH: 1}
    for n in curriculum_lengths(steps, seed):
        calls[n] = calls.get(n, 0) + 1
    return calls


def evaluation_calls():
    """{length: sample_batch calls} of one range evaluation at lengths 41..500."""
    return {n: EVAL_BATCHES for n in EVAL_LENGTHS}


def compose(calls, compile_points, steady_points, exact=()):
    """Seconds of a loop making ``calls`` ({length: count}): one compile per length called, from
    ``compile_points`` ({length: s}; empty: nothing compiles per length), and count x the steady
    time from ``steady_points``. A length in ``exact`` takes its own measured compile and is left
    out of the curve the other lengths are read from (its compile holds the process's first trace)."""
    curve = {n: s for n, s in compile_points.items() if n not in exact}
    compile_s = steady_s = 0.0
    for n, count in calls.items():
        if count <= 0:
            continue
        if compile_points:
            compile_s += compile_points[n] if n in exact and n in compile_points else interpolate(curve, n)
        steady_s += count * interpolate(steady_points, n)
    return {"compile_s": compile_s, "steady_s": steady_s, "total_s": compile_s + steady_s,
            "lengths_called": sum(1 for c in calls.values() if c > 0), "calls": sum(calls.values())}


def ratio(theirs, ours):
    return theirs / ours if ours > 0 else float("inf")


# ---------------------------------------------------------------- timing, both sides


def steady(call, budget, min_reps):
    """Mean CPU seconds of call() over at least min_reps calls and ``budget`` CPU seconds."""
    reps, c0 = 0, time.process_time()
    while True:
        call()
        reps += 1
        spent = time.process_time() - c0
        if reps >= min_reps and spent >= budget:
            return spent / reps


def cold_then_steady(call, budget, min_reps):
    """The first call's CPU seconds, the steady mean after it, and their difference (the compile)."""
    c0 = time.process_time()
    call()
    cold = time.process_time() - c0
    s = steady(call, budget, min_reps)
    return {"cold_s": cold, "steady_s": s, "compile_s": max(cold - s, 0.0)}


def their_side(checkout, task, plan):
    """Their task's sample_batch at the plan's lengths, in this (JAX) interpreter."""
    import jax

    jax.config.update("jax_threefry_partitionable", False)
    sys.path.insert(0, str(HERE))
    from chomsky_fixtures import _tasks  # their classes, built as experiments/constants.py 81-113

    build = _tasks(checkout)[task]
    keys = itertools.cycle(list(jax.random.split(jax.random.PRNGKey(0), 64)))  # starts the backend
    one = build()
    # modular-arithmetic keeps its operators in a generator that the first trace uses up
    # (tasks/regular/modular_arithmetic.py 150, 177): a new instance per length, as our fixtures do
    fresh = task == "modular-arithmetic"

    def at(batch, n):
        t = build() if fresh else one
        return cold_then_steady(lambda: jax.block_until_ready(t.sample_batch(next(keys), batch, n)),
                                plan["budget"], plan["min_reps"])

    out = {"jax": jax.__version__, "train": {}, "eval": {}, "sample_batch": {}}
    for n in [INIT_LENGTH] + [n for n in plan["train"] if n != INIT_LENGTH]:
        out["train"][n] = at(TRAIN_BATCH, n)
    for n in plan["eval"]:
        out["eval"][n] = at(EVAL_BATCH, n)
    if task in PYTHON_TASKS:
        for n in SAMPLE_BATCH_LENGTHS:
            out["sample_batch"][n] = out["train"][n] if n in out["train"] else at(TRAIN_BATCH, n)
    return out


def our_warmup(task):
    """CPU seconds of our first batch in this process (Numba compiles or loads its cache)."""
    import longsynth

    c0 = time.process_time()
    longsynth.batch("chomsky-" + task, 0, TRAIN_BATCH, seed=0, length=INIT_LENGTH)
    return time.process_time() - c0


def our_side(task, plan):
    """Our warm-up, our steady time at every training length, our evaluation loop timed at
    every length, and the direct check of the composed curriculum."""
    import longsynth

    name = "chomsky-" + task
    out = {"warmup_cached_s": our_warmup(task), "train": {}, "eval": {}, "sample_batch": {}, "train_block": {},
           "eval_block": {}}
    start = itertools.count(0, TRAIN_BATCH)
    for n in TRAIN_LENGTHS:
        out["train"][n] = steady(lambda: longsynth.batch(name, next(start), TRAIN_BATCH, seed=0, length=n),
                                 plan["budget"], plan["min_reps"])
        out["train_block"][n] = steady(lambda: longsynth.batch(name, 0, BLOCK * TRAIN_BATCH, seed=0, length=n),
                                       plan["budget"], plan["min_reps"]) / BLOCK
    for n in EVAL_LENGTHS:
        c0 = time.process_time()
        for b in range(EVAL_BATCHES):
            longsynth.batch(name, b * EVAL_BATCH, EVAL_BATCH, seed=0, split="test", length=n)
        c1 = time.process_time()
        longsynth.batch(name, 0, EVAL_BATCHES * EVAL_BATCH, seed=0, split="test", length=n)
        out["eval"][n] = (c1 - c0) / EVAL_BATCHES
        out["eval_block"][n] = (time.process_time() - c1) / EVAL_BATCHES
    if task in PYTHON_TASKS:
        for n in SAMPLE_BATCH_LENGTHS:
            out["sample_batch"][n] = steady(lambda: longsynth.batch(name, 0, TRAIN_BATCH, seed=0, length=n),
                                            plan["budget"], plan["min_reps"])
    lengths = curriculum_lengths(plan["check_steps"])
    c0 = time.process_time()
    for i, n in enumerate([INIT_LENGTH] + lengths):
        longsynth.batch(name, i * TRAIN_BATCH, TRAIN_BATCH, seed=0, length=n)
    out["check"] = {"steps": plan["check_steps"], "direct_s": time.process_time() - c0}
    return out


def worker(args):
    plan = json.loads(args.plan)
    if args.side == "theirs":
        result = their_side(args.checkout, args.task, plan)
    elif args.side == "ours-scratch":
        result = {"warmup_scratch_s": our_warmup(args.task)}
    else:
        result = our_side(args.task, plan)
    Path(args.result).write_text(json.dumps(result))


# ---------------------------------------------------------------- the driver


def run_side(args, side, task, plan, cache_dir):
    """One worker process on one core with one thread; its JSON result."""
    python = args.jax_python if side == "theirs" else sys.executable
    env = dict(os.environ, **ONE_THREAD, NUMBA_CACHE_DIR=cache_dir)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = ["taskset", "-c", str(args.core), python, str(Path(__file__).resolve()), args.checkout,
               "--side", side, "--task", task, "--plan", json.dumps(plan), "--result", f.name]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{side} {task} failed:\n{r.stderr[-3000:]}")
        return json.loads(Path(f.name).read_text())


def points(measured, key=None):
    """{length: seconds} from a worker's JSON ({"length": figure or {key: figure}})."""
    return {int(n): m if key is None else m[key] for n, m in measured.items()}


def task_rows(task, theirs, ours, calls_by_steps):
    """The composed figures of one task: a list of rows (measure, theirs_s, ours_s, ...)."""
    rows = []
    warm = {"ours_warmup_scratch_s": ours["warmup_scratch_s"], "ours_warmup_cached_s": ours["warmup_cached_s"]}
    for steps, calls in calls_by_steps.items():
        t = compose(calls, points(theirs["train"], "compile_s"), points(theirs["train"], "steady_s"),
                    exact=(INIT_LENGTH,))
        rows.append({"measure": f"curriculum, {steps:,} steps", "theirs_s": t["total_s"],
                     "ours_s": compose(calls, {}, points(ours["train"]))["total_s"],
                     "ours_blocks_s": compose(calls, {}, points(ours["train_block"]))["total_s"],
                     "theirs_compile_s": t["compile_s"], "theirs_steady_s": t["steady_s"],
                     "lengths_compiled": t["lengths_called"], "calls": t["calls"], **warm})
    calls = evaluation_calls()
    t = compose(calls, points(theirs["eval"], "compile_s"), points(theirs["eval"], "steady_s"))
    rows.append({"measure": "evaluation, lengths 41-500", "theirs_s": t["total_s"],
                 "ours_s": compose(calls, {}, points(ours["eval"]))["total_s"],
                 "ours_blocks_s": compose(calls, {}, points(ours["eval_block"]))["total_s"],
                 "theirs_compile_s": t["compile_s"], "theirs_steady_s": t["steady_s"],
                 "lengths_compiled": t["lengths_called"], "calls": t["calls"], **warm})
    for n in SAMPLE_BATCH_LENGTHS if task in PYTHON_TASKS else ():
        rows.append({"measure": f"sample_batch 128 x {n}", "theirs_s": theirs["sample_batch"][str(n)]["steady_s"],
                     "ours_s": ours["sample_batch"][str(n)]})
    for r in rows:
        r["task"] = task
        r["ratio"] = ratio(r["theirs_s"], r["ours_s"])
        if "ours_blocks_s" in r:
            r["ratio_blocks"] = ratio(r["theirs_s"], r["ours_blocks_s"])
            r["ratio_with_our_scratch_warmup"] = ratio(r["theirs_s"], r["ours_s"] + r["ours_warmup_scratch_s"])
    return rows


def composition(plan):
    """The composition of the totals, in words, for the output and the JSON."""
    return (
        "Curriculum: the model-init batch at length 10 plus one batch of 128 per step, lengths drawn with "
        "random.Random(0).choice(1..40). Theirs = one compile per length called + calls x steady, both measured "
        f"at lengths {plan['train']} (10 first: its compile, holding the process's first trace, counts for "
        "length 10 alone) and linearly interpolated between them. Ours = calls x our steady, measured at every "
        f"length, our warm-up apart (ours in blocks: {BLOCK} batches a call). Evaluation: 8 batches of 64 at each "
        f"length 41..500; theirs = compile + 8 x steady per length, measured at {plan['eval']} and linearly "
        "interpolated; ours timed at every length (ours in blocks: a length's 8 batches in one call). Times: CPU "
        "seconds of a process pinned to one core with one thread.")


def fmt_s(s):
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def print_table(rows):
    print("\n| task | measure | theirs | ours | ratio | our warm-up scratch / cached | ratio with it "
          "| ours in blocks | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        flag = "" if r["ratio"] >= 100 else " (below 100x)"
        line = (f"| {r['task']} | {r['measure']} | {fmt_s(r['theirs_s'])} | {fmt_s(r['ours_s'])} | "
                f"{r['ratio']:,.0f}x{flag} |")
        if "ours_blocks_s" in r:
            line += (f" {fmt_s(r['ours_warmup_scratch_s'])} / {fmt_s(r['ours_warmup_cached_s'])} | "
                     f"{r['ratio_with_our_scratch_warmup']:,.0f}x | {fmt_s(r['ours_blocks_s'])} | "
                     f"{r['ratio_blocks']:,.0f}x |")
        else:
            line += " | | | |"
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", help="google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be")
    ap.add_argument("--quick", action="store_true", help="fewer lengths of theirs, shorter steady timings")
    ap.add_argument("--only", help="comma-separated tasks (without 'chomsky-')")
    ap.add_argument("--steps", default="10000,1000000", help="training steps to compose, comma-separated")
    ap.add_argument("--train-stride", type=int, help="their training lengths measured: every Nth of 1..40")
    ap.add_argument("--eval-stride", type=int, help="their evaluation lengths measured: every Nth of 41..500")
    ap.add_argument("--jax-python", default="/tmp/jaxenv/bin/python")
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--json", default=str(HERE / "results" / "chomsky_speed.json"))
    ap.add_argument("--side", choices=["theirs", "ours-scratch", "ours"], help=argparse.SUPPRESS)
    ap.add_argument("--task", help=argparse.SUPPRESS)
    ap.add_argument("--plan", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        return worker(args)

    sys.path.insert(0, str(HERE))
    from _common import finish, machine, write_json

    if shutil.which("taskset") is None:
        raise SystemExit("taskset (util-linux) is needed to pin both sides to one core")
    plan = dict(PLANS["quick" if args.quick else "full"])
    plan["train_stride"] = args.train_stride or plan["train_stride"]
    plan["eval_stride"] = args.eval_stride or plan["eval_stride"]
    plan["train"] = sampled(TRAIN_LENGTHS[0], TRAIN_LENGTHS[-1], plan["train_stride"])
    plan["eval"] = sampled(EVAL_LENGTHS[0], EVAL_LENGTHS[-1], plan["eval_stride"])
    tasks = args.only.split(",") if args.only else TASKS
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise SystemExit(f"--only: unknown tasks {unknown}; tasks: {', '.join(TASKS)}")
    calls_by_steps = {int(s): curriculum_calls(int(s)) for s in args.steps.split(",")}
    results = {
        "machine": machine(numba_threads=1, core=args.core, jax_python=args.jax_python),
        "plan": plan, "tasks": {}, "rows": [],
        "composition": composition(plan),
    }
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            theirs = run_side(args, "theirs", task, plan, cache)
            ours = run_side(args, "ours-scratch", task, plan, cache)
            ours.update(run_side(args, "ours", task, plan, cache))
        results["machine"]["jax"] = theirs["jax"]
        rows = task_rows(task, theirs, ours, calls_by_steps)
        composed = compose(curriculum_calls(ours["check"]["steps"]), {}, points(ours["train"]))
        ours["check"]["composed_s"] = composed["total_s"]
        results["tasks"][task] = {"theirs": theirs, "ours": ours}
        results["rows"] += rows
        for r in rows:
            print(f"{task:28s} {r['measure']:28s} theirs {fmt_s(r['theirs_s']):>10s}  ours {fmt_s(r['ours_s']):>10s}"
                  f"  {r['ratio']:8,.0f}x", flush=True)
        print(f"{task:28s} our curriculum, {ours['check']['steps']:,} steps: direct {fmt_s(ours['check']['direct_s'])}"
              f", composed {fmt_s(composed['total_s'])}", flush=True)
    finish(results["machine"])
    print_table(results["rows"])
    print("\n" + results["composition"])
    write_json(args.json, results)


if __name__ == "__main__":
    main()
