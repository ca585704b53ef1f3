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
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from longsynth.models_ref import metrics as M
from longsynth.models_ref.model import Model, ModelConfig

OBJECTIVES = ("regression", "tokens", "segmentation")
PRIMARY = {"regression": "r2", "tokens": "accuracy", "segmentation": "macro_f1"}
SCHEDULES = ("constant", "cosine")


@dataclass
class TrainConfig:
    steps: int
    lr: float
    objective: str = "regression"  # "regression" | "tokens" | "segmentation"
    num_classes: int = 3  # segmentation only
    weight_decay: float = 0.0  # matrices only (not norms, biases, embeddings); SSM parameters carry their own (0)
    schedule: str = "constant"  # "constant" | "cosine" (linear warmup, cosine decay to min_lr_ratio)
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    grad_clip: float | None = None  # max global grad norm
    eval_every: int = 100
    eval_batches: int | None = None  # cap on val/test batches per evaluation
    checkpoint_every: int | None = None
    seed: int = 0
    amp: bool = False  # bf16 autocast, CUDA only
    compile: bool = False  # torch.compile, CUDA only

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective: must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule: must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.steps < 1 or self.eval_every < 1:
            raise ValueError("steps and eval_every: must be >= 1")


def lr_factor(step, cfg: TrainConfig):
    """Learning-rate multiplier at ``step`` (0-based): a pure function of the step."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    span = max(1, cfg.steps - cfg.warmup_steps)
    t = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))


def decays(module, p):
    """Whether parameter ``p`` of ``module`` takes weight decay: matrices only (Linear
    weights), never LayerNorm, biases or embeddings."""
    return p.ndim >= 2 and not isinstance(module, torch.nn.Embedding)


def build_optimizer(model, cfg: TrainConfig):
    """AdamW. Weight decay ``cfg.weight_decay`` on matrices only (``decays``); parameters with
    an ``_optim`` dict (the SSM parameters, kernel.register) take their own lr and weight decay."""
    groups = {}
    for module in model.modules():
        for p in module.parameters(recurse=False):
            if not p.requires_grad:
                continue
            hp = getattr(p, "_optim", {})
            wd = cfg.weight_decay if decays(module, p) else 0.0
            key = (hp.get("lr", cfg.lr), hp.get("weight_decay", wd))
            groups.setdefault(key, []).append(p)
    param_groups = [{"params": ps, "lr": lr, "base_lr": lr, "weight_decay": wd}
                    for (lr, wd), ps in groups.items()]
    return torch.optim.AdamW(param_groups, lr=cfg.lr)


class IndexedBatches:
    """``batch(step)`` over a map-style dataset: epoch e uses a permutation seeded by (seed, e).

    ``collate(list of items) -> batch``; the last incomplete batch of an epoch is dropped.
    """

    def __init__(self, dataset, batch_size, collate, seed=0):
        self.dataset, self.batch_size, self.collate, self.seed = dataset, batch_size, collate, seed
        self.per_epoch = len(dataset) // batch_size
        if self.per_epoch < 1:
            raise ValueError(f"batch_size: {batch_size} exceeds the dataset size {len(dataset)}")
        self._perm = (None, None)

    def __call__(self, step):
        epoch, i = divmod(step, self.per_epoch)
        if self._perm[0] != epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perm = (epoch, torch.randperm(len(self.dataset), generator=g))
        idx = self._perm[1][i * self.batch_size:(i + 1) * self.batch_size]
        return self.collate([self.dataset[int(j)] for j in idx])


def _unpack(batch, device):
    x, y = batch[0], batch[1]
    extras = batch[2] if len(batch) > 2 else {}
    return x.to(device), y.to(device), {k: v.to(device) for k, v in extras.items()}


def _forward(model, x, y, cfg):
    if cfg.objective == "regression":
        target_len = y.shape[1] if y.shape[1] != x.shape[1] else None
        out = model(x, target_len=target_len).float()
        return out, F.mse_loss(out, y.float().reshape(out.shape))
    out = model(x).float()
    return out, F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1).long(),
                                ignore_index=M.IGNORE_INDEX)


def _batch_metrics(out, y, extras, cfg):
    if cfg.objective == "regression":
        return {"r2": M.r2(out, y.reshape(out.shape))}
    if cfg.objective == "tokens":
        return M.token_accuracy(out, y.long(), groups=extras)
    s = M.macro_scores(out, y.long(), cfg.num_classes)
    return {"macro_f1": s["macro_f1"], "macro_accuracy": s["macro_accuracy"]}


@torch.no_grad()
def evaluate(model, batches, cfg: TrainConfig, device="cpu"):
    """Loss and metrics averaged over batches (the paper's per-batch averaging).

    Breakdown tables (``by_*`` keys) are summed over batches and reported as accuracies.
    """
    model.eval()
    sums, tables, n = {}, {}, 0
    for b, batch in enumerate(batches):
        if cfg.eval_batches is not None and b >= cfg.eval_batches:
            break
        x, y, extras = _unpack(batch, device)
        with _autocast(device, cfg):
            out, loss = _forward(model, x, y, cfg)
        m = _batch_metrics(out, y, extras, cfg)
        m["loss"] = float(loss)
        for k, v in m.items():
            if k.startswith("by_"):
                tables.setdefault(k, []).append(v)
            elif k not in ("correct", "count"):
                sums[k] = sums.get(k, 0.0) + v
        n += 1
    model.train()
    res = {k: v / max(n, 1) for k, v in sums.items()}
    for k, ts in tables.items():
        res[k] = {str(g): {"accuracy": c / t, "count": t} for g, (c, t) in sorted(M.merge_counts(ts).items())}
    res["batches"] = n
    return res


def _autocast(device, cfg):
    dev = torch.device(device).type
    return torch.autocast(dev, dtype=torch.bfloat16, enabled=cfg.amp and dev == "cuda")


def _rng_state():
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state):
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path, model, opt, step, model_cfg, train_cfg, manifest_digest, history, best):
    tmp = path + ".tmp"
    torch.save({
        "model_config": model_cfg.to_dict(), "train_config": dataclasses.asdict(train_cfg),
        "manifest_digest": manifest_digest, "step": step, "data_position": step,
        "model": model.state_dict(), "optimizer": opt.state_dict(), "rng": _rng_state(),
        "history": history, "best": best,
    }, tmp)
    os.replace(tmp, path)


def load_model(path, map_location="cpu"):
    """(Model, checkpoint dict) rebuilt from the config stored in a checkpoint."""
    ck = torch.load(path, map_location=map_location, weights_only=False)
    model = Model(ModelConfig.from_dict(ck["model_config"]))
    model.load_state_dict(ck["model"])
    return model, ck


class Progress:
    """One carriage-return status line on stderr."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.t0 = total, enabled, time.time()

    def update(self, step, loss, metric_name, metric):
        if not self.enabled:
            return
        rate = step / max(time.time() - self.t0, 1e-9)
        m = "" if metric is None else f" val {metric_name} {metric:.4f}"
        sys.stderr.write(f"\rstep {step}/{self.total} loss {loss:.4f}{m} ({rate:.1f} it/s)   ")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")


def train(model_cfg: ModelConfig, train_cfg: TrainConfig, train_batch, val_batches=None,
          test_batches=None, *, device="cpu", checkpoint_dir=None, resume=None,
          manifest_digest=None, stop_at_step=None, progress=False):
    """Train; returns {"history", "val" (best), "best_step", "test", "final_val", "steps"}.

    ``checkpoint_dir``: writes last.pt (every checkpoint_every steps and at the end) and
    best.pt (best validation metric). ``resume``: a checkpoint path to continue from; its
    model config and manifest digest must match. ``stop_at_step``: stop (with a checkpoint)
    after this many steps, as an interrupted run would; the schedule still spans ``steps``.
    """
    torch.manual_seed(train_cfg.seed)
    model = Model(model_cfg).to(device)
    opt = build_optimizer(model, train_cfg)
    history, best, start = {"train": [], "val": []}, None, 0
    if resume is not None:
        ck = torch.load(resume, map_location=device, weights_only=False)
        if ck["model_config"] != model_cfg.to_dict():
            raise ValueError(f"resume: {resume} holds a different model config")
        if ck["manifest_digest"] != manifest_digest:
            raise ValueError(f"resume: {resume} was trained on data with manifest digest {ck['manifest_digest']}")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        _set_rng_state(ck["rng"])
        history, best, start = ck["history"], ck["best"], ck["step"]
    fwd_model = torch.compile(model) if train_cfg.compile and torch.device(device).type == "cuda" else model
    primary = PRIMARY[train_cfg.objective]
    best_state = None
    if best is not None:  # resumed after a validation: the best weights live in best.pt beside it
        best_file = os.path.join(os.path.dirname(os.path.abspath(resume)), "best.pt")
        if not os.path.exists(best_file):
            raise ValueError(f"resume: {best_file} (the best-validation weights) is missing")
        best_state = torch.load(best_file, map_location=device, weights_only=False)["model"]
    if checkpoint_dir is not None:
        os.makedirs(checkpoint_dir, exist_ok=True)
        best_path = os.path.join(checkpoint_dir, "best.pt")
    end = train_cfg.steps if stop_at_step is None else min(stop_at_step, train_cfg.steps)
    bar = Progress(train_cfg.steps, progress)
    last_val = history["val"][-1][primary] if history["val"] else None
    model.train()

    def checkpoint(name, step):
        if checkpoint_dir is not None:
            save_checkpoint(os.path.join(checkpoint_dir, name), model, opt, step, model_cfg,
                            train_cfg, manifest_digest, history, best)

    for step in range(start, end):
        x, y, _ = _unpack(train_batch(step), device)
        f = lr_factor(step, train_cfg)
        for g in opt.param_groups:
            g["lr"] = g["base_lr"] * f
        with _autocast(device, train_cfg):
            _, loss = _forward(fwd_model, x, y, train_cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip)
        opt.step()
        done = step + 1
        history["train"].append({"step": done, "loss": float(loss.detach()), "lr": train_cfg.lr * f})
        if val_batches is not None and (done % train_cfg.eval_every == 0 or done == train_cfg.steps):
            res = evaluate(model, val_batches(), train_cfg, device)
            res["step"] = done
            history["val"].append(res)
            last_val = res[primary]
            if best is None or res[primary] > best[primary]:
                best = res
                best_state = copy.deepcopy(model.state_dict())
                if checkpoint_dir is not None:
                    torch.save({"model_config": model_cfg.to_dict(), "manifest_digest": manifest_digest,
                                "step": done, "model": best_state}, best_path)
        if train_cfg.checkpoint_every and done % train_cfg.checkpoint_every == 0:
            checkpoint("last.pt", done)
        bar.update(done, history["train"][-1]["loss"], primary, last_val)
    bar.close()
    checkpoint("last.pt", end)
    result = {"history": history, "val": best, "best_step": best["step"] if best else None,
              "final_val": history["val"][-1] if history["val"] else None, "steps": end, "test": None,
              "model": model}
    if test_batches is not None and end == train_cfg.steps:
        if best_state is not None:
            model.load_state_dict(best_state)
        result["test"] = evaluate(model, test_batches(), train_cfg, device)
    return result
