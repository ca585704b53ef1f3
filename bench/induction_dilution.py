"""Why the built-in attention does not learn H3's induction head at the tiny budget (docs/validation.md,
"Findings"): the protocol scores every position of a row, as safari's training does
(src/dataloaders/synthetics.py), and only the last one is predictable (the token after the
earlier "=>"); the other positions are uniform tokens, so their loss sits at ln V whatever the
model does and the one useful target is a thirty-first of the gradient. The same preset model,
data, optimiser and schedule, trained once with the protocol's loss and once with the loss on the
last position alone; the validation accuracy of the last position every ``--every`` steps.

    python bench/induction_dilution.py [--steps 1500] [--every 250] [--out bench/results/induction_dilution.json]
"""
import argparse
import time

import torch

from _common import finish, machine, write_json
from longsynth.models_ref.evaluation.harness import Job, prepare
from longsynth.models_ref.models.factories import BUILTIN
from longsynth.models_ref.training.config import lr_factor
from longsynth.models_ref.training.forward import _forward, _unpack
from longsynth.models_ref.training.metrics import IGNORE_INDEX
from longsynth.models_ref.training.trainer import build_optimizer


def last_accuracy(model, batches):
    """Accuracy at each row's last scored position (the protocol's test target)."""
    right = total = 0
    model.eval()
    with torch.no_grad():
        for batch in batches:
            x, y = batch[0], batch[1]  # [B, T], [B, T]
            last = (y != IGNORE_INDEX).long().cumsum(1).argmax(1)  # [B]  the last scored position
            rows = torch.arange(len(x))  # [B]
            right += int((model(x)[rows, last].argmax(-1) == y[rows, last]).sum())
            total += len(x)
    model.train()
    return right / total


def train(prepared, steps, every, last_only):
    """Validation accuracy of the last position every ``every`` steps: [(step, accuracy, mean loss)]."""
    factory = BUILTIN["attention"]
    cfg = prepared.protocol.train_config(lr=factory.lr(prepared.spec), seed=0, steps=steps, amp=False, compile=False,
                                         checkpoint_activations=False, checkpoint_every=None, weight_decay=None)
    torch.manual_seed(0)
    model = factory(prepared.spec)
    opt = build_optimizer(model, cfg)
    out, losses = [], []
    for step in range(steps):
        x, y, _ = _unpack(prepared.sources[0](step), "cpu", cfg.trim)
        if last_only:
            y = y.clone()
            y[:, :-1] = IGNORE_INDEX  # the last position alone: the one target a model can predict
        for group in opt.param_groups:
            group["lr"] = group["base_lr"] * lr_factor(step, cfg)
        _, total, count = _forward(model, x, y, cfg)
        loss = total / count
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if (step + 1) % every == 0:
            acc = last_accuracy(model, prepared.sources[1]())
            out.append((step + 1, acc, sum(losses[-every:]) / every))
            print(f"{'last position' if last_only else 'every position'}: step {step + 1}: validation accuracy "
                  f"{acc:.3f}, training loss {out[-1][2]:.3f}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--out", default="bench/results/induction_dilution.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    results = {"machine": machine(torch=torch.__version__), "protocol": "h3-induction", "scale": "tiny",
               "model": "attention", "steps": args.steps}
    prepared = prepare(Job(model="attention", protocol="h3-induction", task="induction-head", scale="tiny"))
    for last_only in (False, True):
        t0 = time.time()
        results["last_only" if last_only else "protocol"] = {
            "curve": train(prepared, args.steps, args.every, last_only), "seconds": round(time.time() - t0, 1)}
    finish(results["machine"])
    write_json(args.out, results)


if __name__ == "__main__":
    main()
