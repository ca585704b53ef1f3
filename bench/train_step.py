"""Seconds per training step and peak memory of every built-in at Grazzi et al.'s parity shape.

    python bench/train_step.py [--before REV] [--models s6-signed gru ...] [--steps 2] [--json PATH]

The parity protocol at paper scale (models_ref/protocols/state.py): batch 256, two blocks of width
128, rows laid out at 255 tokens for the test lengths, training strings of 3-40 symbols. One step is
what the trainer does (training/trainer.py): forward, the loss, backward, AdamW; on one torch thread,
a real training batch of the protocol. Each (model, variant) runs in a fresh subprocess:

- ``before``: the batch whole (255 positions), and the S6 layer of git revision ``--before``
  (models_ref/layers/s6.py there, its plain scan keeping every [b, L, EH, N] tensor);
- ``after``: the batch cut after its last scored position (the harness's ``trimmed``, exact for a
  causal model), and the S6 layer of the working tree (the recomputing chunked scan).

Times: a warm-up step, then ``--steps`` timed steps (forward and backward+AdamW apart, their means).
Peak: the process's peak RSS during the steps minus its RSS before them (ru_maxrss: the allocator's
caching included), so the model, the batch and torch itself are not counted.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
import types

from _common import finish, machine, write_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("attention", "dlr", "s4d", "gru", "s6", "s6-signed", "deltanet", "deltanet-signed")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _old_s6(rev):
    """The S6 class of models_ref/layers/s6.py at git revision ``rev``."""
    source = subprocess.run(["git", "-C", REPO, "show", f"{rev}:models_ref/layers/s6.py"], capture_output=True,
                            text=True, check=True).stdout
    module = types.ModuleType("s6_before")
    exec(compile(source, f"{rev}:models_ref/layers/s6.py", "exec"), module.__dict__)
    return module.S6


def one(name, variant, rev, steps):
    import torch

    from longsynth.models_ref.evaluation.checks import build
    from longsynth.models_ref.evaluation.harness import Job, prepare
    from longsynth.models_ref.models import factories, stack
    from longsynth.models_ref.training.forward import _forward, trimmed
    from longsynth.models_ref.training.trainer import build_optimizer

    torch.set_num_threads(1)
    if variant == "before":
        stack.S6 = _old_s6(rev)
    prepared = prepare(Job(model=name, protocol="parity", task="parity", scale="paper"))
    cfg = prepared.protocol.train_config(lr=1e-3, seed=0)
    factory, _ = factories.load(name)
    torch.manual_seed(0)
    model = build(factory, factories.checked_spec(factory, prepared.spec))
    opt = build_optimizer(model, cfg)
    batches = []
    for step in range(steps + 1):
        x, y = prepared.sources[0](step)[:2]
        if variant == "after":
            x, y, _ = trimmed(x, y, {})
        batches.append((x, y))
    model.train()
    base = rss_bytes()
    fwd, bwd = [], []
    for i, (x, y) in enumerate(batches):
        t0 = time.perf_counter()
        _, loss_sum, count = _forward(model, x, y, cfg)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        (loss_sum / max(count, 1)).backward()
        opt.step()
        t2 = time.perf_counter()
        if i:  # the first is the warm-up
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    print(json.dumps({"model": name, "variant": variant, "positions": int(batches[-1][0].shape[1]),
                      "batch": int(batches[-1][0].shape[0]), "forward_s": sum(fwd) / len(fwd),
                      "backward_s": sum(bwd) / len(bwd), "step_s": (sum(fwd) + sum(bwd)) / len(fwd),
                      "peak_bytes": peak, "params": sum(p.numel() for p in model.parameters())}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="86b1619", help="git revision whose S6 layer is 'before' (default: the "
                                                        "commit before the recomputing scan)")
    ap.add_argument("--models", nargs="+", default=list(MODELS), help="built-ins to time")
    ap.add_argument("--steps", type=int, default=2, help="timed steps after the warm-up")
    ap.add_argument("--json", default=os.path.join(REPO, "bench", "results", "train_step.json"),
                    help="where the results go")
    ap.add_argument("--one", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one[0], args.one[1], args.before, args.steps)
        return
    record, results = machine(), []
    print(f"{'model':16s} {'variant':7s} {'L':>4s} {'forward':>9s} {'backward':>9s} {'step':>9s} {'peak':>10s}")
    for name in args.models:
        for variant in ("before", "after"):
            cmd = [sys.executable, __file__, "--one", name, variant, "--before", args.before, "--steps",
                   str(args.steps)]
            p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            if p.returncode == 0:
                r = json.loads(p.stdout.strip().splitlines()[-1])
                print(f"{name:16s} {variant:7s} {r['positions']:4d} {r['forward_s']:8.3f}s {r['backward_s']:8.3f}s "
                      f"{r['step_s']:8.3f}s {r['peak_bytes'] / 2**30:7.2f} GiB", flush=True)
            else:
                r = {"model": name, "variant": variant, "failed": f"exit {p.returncode}: "
                     + ((p.stderr.strip().splitlines() or ["killed (out of memory?)"])[-1][:200])}
                print(f"{name:16s} {variant:7s} {r['failed']}", flush=True)
            results.append(r)
    write_json(args.json, {"machine": finish(record), "command": " ".join(sys.argv),
                           "time": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results})


if __name__ == "__main__":
    main()
