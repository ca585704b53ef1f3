"""A compact, exactly resumable trainer for the reference models.

Data protocol (both on-the-fly atomic batches and loaders over stored shards plug in):
- ``train_batch(step) -> batch``: the training batch of a step, a pure function of the
  step (so the data position of a checkpoint is its step, and resuming is exact);
  :class:`IndexedBatches` turns any map-style dataset into one (seeded epoch shuffles).
- ``val_batches()`` / ``test_batches()`` -> an iterable of batches (finite).
- A batch is ``(x, y)`` or ``(x, y, extras)``; extras is a dict of tensors (e.g. ListOps
  "height" and "operator" per position, aligned with y).

Objectives: "regression" (MSE on the rightmost y.shape[1] positions, metric R^2),
"tokens" (cross-entropy ignoring -100, token accuracy with breakdown by every extras key),
"segmentation" (cross-entropy over classes, macro F1 and macro accuracy).
Every evaluation reports each metric twice: the paper's (computed per batch, averaged over
batches, so it depends on the batch size) and ``exact`` (from counts summed over the whole
evaluation set: one confusion matrix, one correct/count pair, one set of R^2 sums).

Here the loop (``train``), the optimizer and the timing of a step (``step_seconds``); beside it
config.py (``TrainConfig``, the schedule), forward.py (a batch through the model),
eval_pass.py (the evaluation pass) and checkpoints.py (saving, checking, loading).

Data parallel: when a process group is initialised (torchrun), the model is wrapped in
DistributedDataParallel; ``train_batch(step)`` and the evaluation batches must then be this
rank's share (``IndexedBatches(rank=, world=)`` does it for stored data). The loss is the
global mean (sum over ranks / global count of labelled targets), so W ranks with batch B/W
follow the 1-process run with batch B; metrics are summed across ranks; rank 0 alone writes.
"""
from __future__ import annotations

import copy
import functools
import math
import os

import torch
import torch.distributed as dist

from longsynth.errors import LongsynthError
from longsynth.outdir import Folder
from longsynth.progress import Bar
from longsynth.models_ref.models.stack import Model, ModelConfig
from longsynth.models_ref.training.checkpoints import (CheckpointError, _best_weights, _check_checkpoint, _restore,
                                                       load_checkpoint, save_checkpoint, write_checkpoint)
from longsynth.models_ref.training.config import TrainConfig, lr_factor, primary_metric
from longsynth.models_ref.training.eval_pass import evaluate, finite
from longsynth.models_ref.training.forward import _autocast, _forward, _unpack, all_sum, dist_info


def decays(module, p):
    """Whether parameter ``p`` of ``module`` takes weight decay: matrices only (Linear
    weights), never LayerNorm, biases or embeddings."""
    return p.ndim >= 2 and not isinstance(module, torch.nn.Embedding)


def build_optimizer(model, cfg: TrainConfig):
    """AdamW. Weight decay ``cfg.weight_decay`` on matrices only (``decays``), or on every
    parameter when the model says its authors trained it so (``model.decays_every_parameter``,
    as ``AdamW(model.parameters(), weight_decay=...)`` does); parameters with an ``_optim`` dict
    (the SSM parameters, kernel.register) take their own lr and weight decay."""
    every = getattr(model, "decays_every_parameter", False) is True
    groups = {}
    for module in model.modules():
        for p in module.parameters(recurse=False):
            if not p.requires_grad:
                continue
            hp = getattr(p, "_optim", {})
            wd = cfg.weight_decay if every or decays(module, p) else 0.0
            key = (hp.get("lr", cfg.lr), hp.get("weight_decay", wd))
            groups.setdefault(key, []).append(p)
    param_groups = [{"params": ps, "lr": lr, "base_lr": lr, "weight_decay": wd}
                    for (lr, wd), ps in groups.items()]
    return torch.optim.AdamW(param_groups, lr=cfg.lr)


class IndexedBatches:
    """``batch(step)`` over a map-style dataset: epoch e uses a permutation seeded by (seed, e).

    ``collate(list of items) -> batch``; the last incomplete batch of an epoch is dropped.
    Data parallel: ``rank`` of ``world`` reads its DistributedSampler share of the epoch's
    permutation (the same on every rank), ``batch_size`` samples per rank; the union over
    ranks of step s is the 1-process batch s of ``world * batch_size`` samples.
    """

    def __init__(self, dataset, batch_size, collate, seed=0, rank=0, world=1):
        from torch.utils.data import DistributedSampler

        self.dataset, self.batch_size, self.collate, self.seed = dataset, batch_size, collate, seed
        self.sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True,
                                          seed=seed * 1_000_003, drop_last=True)
        self.per_epoch = len(self.sampler) // batch_size
        if self.per_epoch < 1:
            raise LongsynthError(f"batch_size: {batch_size * world} exceeds the dataset size {len(dataset)}")
        self._perm = (None, None)

    def __call__(self, step):
        epoch, i = divmod(step, self.per_epoch)
        if self._perm[0] != epoch:
            self.sampler.set_epoch(epoch)
            self._perm = (epoch, list(self.sampler))
        idx = self._perm[1][i * self.batch_size:(i + 1) * self.batch_size]
        return self.collate([self.dataset[int(j)] for j in idx])


def step_seconds(build, cfg: TrainConfig, train_batch, val_batches=None, *, device="cpu", steps=3, budget_s=5.0):
    """(seconds per training step, seconds per evaluation batch or 0.0 without ``val_batches``)
    of a throwaway model ``build()``: one warm-up step (allocation, first kernels), then up to
    ``steps`` timed steps as ``train`` takes them (its batch source, loss, backward, AdamW
    step; the batch's generation counts), fewer once ``budget_s`` seconds have passed (at
    least one; none when the warm-up step alone took longer, which is then the estimate: a
    paper-scale step on a CPU takes seconds), and a forward pass over the first evaluation
    batch (the model is warm by then). ``evaluate --dry-run`` multiplies them out
    (docs/evaluate.md, "Dry run")."""
    import time

    torch.manual_seed(cfg.seed)
    model = build().to(device)
    opt = build_optimizer(model, cfg)
    model.train()
    dev = torch.device(device)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def one(step):
        x, y, _ = _unpack(train_batch(step), device, cfg.trim)
        with _autocast(device, cfg):
            _, loss_sum, count = _forward(model, x, y, cfg)
        opt.zero_grad(set_to_none=True)
        (loss_sum / max(y.shape[0] if cfg.loss_per_row else count, 1)).backward()
        opt.step()

    t0 = time.perf_counter()
    one(0)
    sync()
    per_step = time.perf_counter() - t0
    if per_step < budget_s:  # a warm-up past the budget is the estimate: its one-time costs are small beside it
        t0 = time.perf_counter()
        done = 0
        while done < steps and (done == 0 or time.perf_counter() - t0 < budget_s):
            done += 1
            one(done)
            sync()
        per_step = (time.perf_counter() - t0) / done
    per_batch = 0.0
    batch = next(iter(val_batches()), None) if val_batches is not None else None
    if batch is not None:
        x, y, _ = _unpack(batch, device, cfg.trim)
        model.eval()
        with torch.no_grad(), _autocast(device, cfg):
            t0 = time.perf_counter()
            _forward(model, x, y, cfg)
            sync()
        per_batch = time.perf_counter() - t0
    return per_step, per_batch


class Progress:
    """Training progress on the shared bar: steps, steps/s, ETA, the last loss and the
    last validation metric (longsynth.progress: a bar on a terminal, lines in a log)."""

    def __init__(self, total, enabled, start=0):
        desc = enabled if isinstance(enabled, str) else "train"  # progress="select dlr": the run's name
        self.bar = Bar(total=total, desc=desc, unit="steps", initial=start) if enabled else None

    def update(self, step, loss, metric_name, metric):
        if self.bar is None:
            return
        post = f"loss {loss:.4f}" + ("" if metric is None else f", val {metric_name} {metric:.4f}")
        self.bar.set_postfix_str(post, refresh=False)
        self.bar.update(step - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def train(model, train_cfg: TrainConfig, train_batch, val_batches=None,
          test_batches=None, *, device="cpu", checkpoint_dir=None, resume=None,
          manifest_digest=None, stop_at_step=None, progress=False, identity=None, notify=None):
    """Train; returns {"history", "val" (best), "best_step", "test", "final_val", "steps", "model",
    "diverged"}. A training loss, validation or test record with a NaN or an infinity stops
    the run there: "diverged" is then {"step", "where"} ("training loss", "validation",
    "test"), "steps" the steps that finished, "test" None, and the history keeps only finite
    records (docs/evaluate.md, "Diverged runs"); else "diverged" is None.

    ``model``: a reference ``ModelConfig``, or a function of no arguments that builds the
    ``nn.Module`` (called after seeding torch with ``train_cfg.seed``); ``identity``: the plain
    data a checkpoint records for it (a ModelConfig's dict by default), which a resumed run
    must match. Under a process group (torchrun) the model is wrapped in
    DistributedDataParallel and only rank 0 writes checkpoints and shows progress;
    ``train_batch`` gives this rank's share. ``checkpoint_dir``: writes last.pt (every
    checkpoint_every steps, after every evaluation and at the end) and best.pt (best validation
    metric). ``resume``: a checkpoint path to continue from; its identity and manifest digest
    must match (``notify(line)`` hears that the run resumed, and at which step).
    ``stop_at_step``: stop (with a checkpoint) after this many steps, as an interrupted run
    would; the schedule still spans ``steps``.
    """
    if isinstance(model, ModelConfig):
        identity = model.to_dict() if identity is None else identity
        build = functools.partial(Model, model)
    else:
        build = model
    torch.manual_seed(train_cfg.seed)
    model = build().to(device)
    opt = build_optimizer(model, train_cfg)
    history, best, start = {"train": [], "val": []}, None, 0
    if resume is not None:
        ck = load_checkpoint(resume, device)
        _check_checkpoint(ck, resume, identity, manifest_digest, train_cfg)
        _restore(resume, ck, model, opt)
        history, best, start = ck["history"], ck["best"], ck["step"]
        if notify is not None:
            notify(f"resuming {resume} at step {start:,} of {train_cfg.steps:,}")
    rank, world = dist_info()
    if hasattr(model, "checkpoint_activations"):  # the reference Model's option (a user module may lack it)
        model.checkpoint_activations = train_cfg.checkpoint_activations
    fwd_model = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        dev = torch.device(device)
        fwd_model = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    if train_cfg.compile:
        fwd_model = torch.compile(fwd_model)
    if rank != 0:
        checkpoint_dir, progress = None, False
    primary = primary_metric(train_cfg)
    best_state = None
    if best is not None:  # resumed after a validation: the best weights live in best.pt beside it
        best_file = os.path.join(os.path.dirname(os.path.abspath(resume)), "best.pt")
        if not os.path.exists(best_file):
            raise CheckpointError(f"resume: {best_file} (the best-validation weights) is missing")
        best_state = _best_weights(load_checkpoint(best_file, device), best_file, model, identity, manifest_digest,
                                   best)
    if checkpoint_dir is not None:  # made with its first checkpoint: a run that fails before leaves none
        checkpoint_dir = Folder.of(checkpoint_dir)
    end = train_cfg.steps if stop_at_step is None else min(stop_at_step, train_cfg.steps)
    bar = Progress(train_cfg.steps, progress, start)
    diverged = None  # {"step", "where"} once a loss or metric is NaN or infinite: the run stops there
    last_val = history["val"][-1][primary] if history["val"] else None
    model.train()

    def checkpoint(name, step):
        if checkpoint_dir is not None:
            save_checkpoint(checkpoint_dir, name, model, opt, step=step, identity=identity, train_cfg=train_cfg,
                            manifest_digest=manifest_digest, history=history, best=best)

    for step in range(start, end):
        x, y, _ = _unpack(train_batch(step), device, train_cfg.trim)
        f = lr_factor(step, train_cfg)
        for g in opt.param_groups:
            g["lr"] = g["base_lr"] * f
        with _autocast(device, train_cfg):
            _, loss_sum, count = _forward(fwd_model, x, y, train_cfg)
        # global mean over ranks: sum / global count; DDP averages gradients over the world
        tot = all_sum(torch.tensor([float(loss_sum.detach()), float(count), float(y.shape[0])], dtype=torch.float64,
                                   device=device if world > 1 and dist.get_backend() == "nccl" else "cpu"))
        loss = float(tot[0] / max(float(tot[1]), 1.0))
        per = float(tot[2] if train_cfg.loss_per_row else tot[1])  # rows, or scored positions, over the ranks
        if not math.isfinite(loss):  # the same on every rank: the loss is summed over them
            diverged = {"step": step + 1, "where": "training loss"}
            end = step  # the steps that finished; the model keeps their (finite) weights
            break
        opt.zero_grad(set_to_none=True)
        (loss_sum * (world / max(per, 1.0))).backward()
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip)
        opt.step()
        done = step + 1
        history["train"].append({"step": done, "loss": loss, "lr": train_cfg.lr * f})
        if val_batches is not None and (done % train_cfg.eval_every == 0 or done == train_cfg.steps):
            res = evaluate(model, val_batches(), train_cfg, device)
            res["step"] = done
            if not finite(res):
                diverged = {"step": done, "where": "validation"}
                end = done
                break
            history["val"].append(res)
            last_val = res[primary]
            if best is None or res[primary] > best[primary]:
                best = res
                best_state = copy.deepcopy(model.state_dict())
                if checkpoint_dir is not None:
                    write_checkpoint(checkpoint_dir, "best.pt", {"model_config": identity,
                                                                 "manifest_digest": manifest_digest,
                                                                 "step": done, "model": best_state}, done)
        evaluated = val_batches is not None and history["val"] and history["val"][-1].get("step") == done
        if evaluated or (train_cfg.checkpoint_every and done % train_cfg.checkpoint_every == 0):
            checkpoint("last.pt", done)  # at every evaluation (docs/evaluate.md), and every checkpoint_every
        bar.update(done, history["train"][-1]["loss"], primary, last_val)
    bar.close()
    if diverged is None:  # a diverged run's last checkpoint stays the last finite one: a resume replays it
        checkpoint("last.pt", end)
    result = {"history": history, "val": best, "best_step": best["step"] if best else None,
              "final_val": history["val"][-1] if history["val"] else None, "steps": end, "test": None,
              "model": model, "diverged": diverged}
    if test_batches is not None and end == train_cfg.steps and diverged is None:
        if best_state is not None:
            model.load_state_dict(best_state)
        test = evaluate(model, test_batches(), train_cfg, device)
        if finite(test):
            result["test"] = test
        else:
            result["diverged"] = {"step": end, "where": "test"}
    return result
