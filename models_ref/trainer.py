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

Data parallel: when a process group is initialised (torchrun), the model is wrapped in
DistributedDataParallel; ``train_batch(step)`` and the evaluation batches must then be this
rank's share (``IndexedBatches(rank=, world=)`` does it for stored data). The loss is the
global mean (sum over ranks / global count of labelled targets), so W ranks with batch B/W
follow the 1-process run with batch B; metrics are summed across ranks; rank 0 alone writes.
"""
from __future__ import annotations

import copy
import dataclasses
import errno
import functools
import math
import os
import pickle
import re
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from longsynth import safe
from longsynth.errors import LongsynthError
from longsynth.outdir import Folder
from longsynth.progress import Bar
from longsynth.models_ref import metrics as M
from longsynth.models_ref.model import Model, ModelConfig

OBJECTIVES = ("regression", "tokens", "segmentation")
READOUTS = ("rightmost", "positions", "mean", "pool")  # longsynth.spec: which outputs meet the targets
PRIMARY = {"regression": "r2", "tokens": "accuracy", "segmentation": "macro_f1"}
SCHEDULES = ("constant", "cosine", "linear")


@dataclass
class TrainConfig:
    steps: int
    lr: float
    objective: str = "regression"  # "regression" | "tokens" | "segmentation"
    readout: str = "rightmost"  # "rightmost" (last y.shape[1] outputs) | "positions" (all) | "mean" | "pool"
    num_classes: int = 3  # segmentation only
    weight_decay: float = 0.0  # matrices only (not norms, biases, embeddings); SSM parameters carry their own (0)
    schedule: str = "constant"  # "constant" | "cosine" | "linear" (linear warmup, then decay to min_lr_ratio)
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    grad_clip: float | None = None  # max global grad norm
    eval_every: int = 100
    eval_batches: int | None = None  # cap on val/test batches per evaluation
    checkpoint_every: int | None = None
    seed: int = 0
    amp: bool = False  # bf16 autocast (the SSM kernel and FFT stay float32)
    compile: bool = False  # torch.compile the model
    checkpoint_activations: bool = False  # recompute each block in the backward pass

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise LongsynthError(f"objective: must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.readout not in READOUTS:
            raise LongsynthError(f"readout: must be one of {READOUTS}, got {self.readout!r}")
        if self.schedule not in SCHEDULES:
            raise LongsynthError(f"schedule: must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.steps < 1 or self.eval_every < 1:
            raise LongsynthError("steps and eval_every: must be >= 1")


def lr_factor(step, cfg: TrainConfig):
    """Learning-rate multiplier at ``step`` (0-based): a pure function of the step."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    span = max(1, cfg.steps - cfg.warmup_steps)
    t = min(1.0, (step - cfg.warmup_steps) / span)
    if cfg.schedule == "linear":  # safari's get_linear_schedule_with_warmup
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * (1 - t)
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))


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


def dist_info():
    """(rank, world size) of the process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_sum(t):
    """Sum a tensor over ranks (in place; a no-op without a process group)."""
    if dist_info()[1] > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def _unpack(batch, device):
    x, y = batch[0], batch[1]
    extras = batch[2] if len(batch) > 2 else {}
    return x.to(device), y.to(device), {k: v.to(device) for k, v in extras.items()}


def readout(out, y, kind):
    """The outputs that meet the targets (longsynth.spec): out [B, T, d] -> [B, T', d]."""
    if kind == "rightmost":
        return out[:, out.shape[1] - y.shape[1]:]  # [B, y.shape[1], d]  the paper's rightmost positions
    if kind == "mean":
        return out.mean(dim=1, keepdim=True)  # [B, 1, d]  S4's pooled decoder
    if kind == "pool":  # position t: the mean of outputs 0..t; the label sits at a sequence's last real token
        count = torch.arange(1, out.shape[1] + 1, device=out.device, dtype=out.dtype)  # [T]
        return torch.cumsum(out, dim=1) / count[None, :, None]  # [B, T, d]
    return out  # [B, T, d]  every position; unlabelled ones carry IGNORE_INDEX


def _forward(model, x, y, cfg):
    """(out, loss sum, count of targets): the loss is the mean = sum / count."""
    out = readout(model(x), y, cfg.readout).float()  # [B, T', d_output]
    if cfg.objective == "regression":
        return out, F.mse_loss(out, y.float().reshape(out.shape), reduction="sum"), out.numel()
    y = y.reshape(-1).long()
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y, ignore_index=M.IGNORE_INDEX, reduction="sum")
    return out, loss, int((y != M.IGNORE_INDEX).sum())


def _batch_metrics(out, y, extras, cfg):
    """(the paper's metrics of this batch, exact-metric sums to add over batches)."""
    if cfg.objective == "regression":
        y = y.reshape(out.shape)
        return {"r2": M.r2(out, y)}, M.r2_sums(out, y)
    if cfg.objective == "tokens":
        m = M.token_accuracy(out, y.long(), groups=extras)
        return m, torch.tensor([m["correct"], m["count"]], dtype=torch.float64)
    cm = M.confusion(out, y.long(), cfg.num_classes)
    s = M.macro_from_confusion(cm)
    return {"macro_f1": s["macro_f1"], "macro_accuracy": s["macro_accuracy"]}, cm.flatten()


def _exact(sums, cfg):
    if cfg.objective == "regression":
        return {"r2": M.r2_from_sums(sums)}
    if cfg.objective == "tokens":
        c, n = int(sums[0]), int(sums[1])
        return {"accuracy": c / n if n else float("nan"), "correct": c, "count": n}
    cm = sums.reshape(cfg.num_classes, cfg.num_classes)
    s = M.macro_from_confusion(cm)
    return {**s, "confusion": cm.long().tolist()}


def finite(record):
    """Whether every number of an evaluation's record (its metrics, loss, exact counts and
    breakdown tables) is finite: a NaN or an infinity means the run diverged
    (docs/evaluate.md, "Diverged runs")."""
    if isinstance(record, dict):
        return all(finite(v) for v in record.values())
    if isinstance(record, (list, tuple)):
        return all(finite(v) for v in record)
    return not isinstance(record, float) or math.isfinite(record)


@torch.no_grad()
def evaluate(model, batches, cfg: TrainConfig, device="cpu"):
    """Loss and metrics of the evaluation batches (this rank's share under DDP).

    The top-level metrics (and loss) are the paper's: computed per batch, averaged over the
    batches of all ranks; ``batch_size`` is the size of those batches. ``exact`` holds the
    same metrics from counts summed over the whole set (all ranks). Breakdown tables
    (``by_*`` keys) are summed over batches and ranks and reported as accuracies.
    """
    model.eval()
    sums, tables, n, exact, batch_size = {}, {}, 0, None, None
    names = []
    for b, batch in enumerate(batches):
        if cfg.eval_batches is not None and b >= cfg.eval_batches:
            break
        x, y, extras = _unpack(batch, device)
        batch_size = batch_size or x.shape[0]
        with _autocast(device, cfg):
            out, loss, count = _forward(model, x, y, cfg)
        m, e = _batch_metrics(out, y, extras, cfg)
        exact = e.cpu() if exact is None else exact + e.cpu()
        m["loss"] = float(loss) / max(count, 1)
        for k, v in m.items():
            if k.startswith("by_"):
                tables.setdefault(k, []).append(v)
            elif k not in ("correct", "count"):
                sums[k] = sums.get(k, 0.0) + v
        n += 1
    model.train()
    rank, world = dist_info()
    names = sorted(sums)
    if world > 1:  # every rank evaluates at least one batch (validate's sources ensure it)
        packed = torch.tensor([n] + [sums[k] for k in names], dtype=torch.float64)
        if device != "cpu" and dist.get_backend() == "nccl":
            packed, exact = packed.to(device), exact.to(device)
        all_sum(packed)
        all_sum(exact)
        packed, exact = packed.cpu(), exact.cpu()
        n, sums = int(packed[0]), {k: float(v) for k, v in zip(names, packed[1:])}
        gathered = [None] * world
        dist.all_gather_object(gathered, tables)
        tables = {}
        for t in gathered:
            for k, ts in t.items():
                tables.setdefault(k, []).extend(ts)
    res = {k: v / max(n, 1) for k, v in sums.items()}
    for k, ts in tables.items():
        res[k] = {str(g): {"accuracy": c / t, "count": t} for g, (c, t) in sorted(M.merge_counts(ts).items())}
    res["batches"] = n
    res["batch_size"] = batch_size
    res["averaging"] = "paper: each metric computed per batch of batch_size, then averaged over batches"
    res["exact"] = _exact(exact, cfg) if exact is not None else None
    return res


def _autocast(device, cfg):
    dev = torch.device(device).type
    return torch.autocast(dev, dtype=torch.bfloat16, enabled=cfg.amp)


def _rng_state():
    # NumPy's state as plain data (a tensor and numbers): checkpoints load with weights_only
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"torch": torch.get_rng_state(),
             "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                       "has_gauss": int(has_gauss), "cached_gaussian": float(gauss)}}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state):
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(folder, name, model, opt, *, step, identity, train_cfg, manifest_digest, history, best):
    """The training state as ``name`` in ``folder`` (a longsynth.outdir.Folder or a path):
    written under a temporary name and renamed, never through a link (docs/format.md, "Trust")."""
    write_checkpoint(folder, name, {
        "model_config": identity, "train_config": dataclasses.asdict(train_cfg),
        "manifest_digest": manifest_digest, "step": step, "data_position": step,
        "model": model.state_dict(), "optimizer": opt.state_dict(), "rng": _rng_state(),
        "history": history, "best": best,
    }, step)


def write_checkpoint(folder, name, state, step):
    """``state`` saved by torch into memory, then written as ``name`` through the output
    folder's atomic writer (longsynth.outdir: a temporary name, fsync, rename). A full disk
    or another failed write is one line (LongsynthError, DiskFullError) naming the file,
    never torch's traceback; the previous checkpoint stays whole."""
    import io

    buf = io.BytesIO()
    torch.save(state, buf)
    folder = Folder.of(folder)
    try:
        folder.write_bytes(name, buf.getbuffer())
    except OSError as e:
        raise write_failed(folder.join(name), e, f"the checkpoint of step {step:,}") from None


RESUME = "rerun the same command (evaluate resumes each run from its last checkpoint; validate starts again)"


def write_failed(path, e, what, then=RESUME):
    """The one line for an OSError writing ``what`` to ``path``: nothing earlier is lost, and
    how to go on, ``then`` (docs/evaluate.md, "Jobs, clusters, resuming")."""
    from longsynth.errors import DiskFullError, os_reason

    if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return DiskFullError(f"{path}: the disk is full (writing {what}; the files written before are whole); "
                             f"free space and {then}")
    return LongsynthError(f"{path}: write failed ({os_reason(e)}, writing {what}); {then}")


class CheckpointError(LongsynthError):
    """A checkpoint that cannot resume this run: unreadable, another run's, or damaged or
    edited (a wrong shape, step, history, RNG or optimizer state). One line naming the file;
    ``evaluate`` then starts the run over or stops (``--edited``, docs/evaluate.md)."""


_CHECKPOINT_KEYS = ("model_config", "train_config", "manifest_digest", "step", "model", "optimizer", "rng", "history",
                    "best")


def _check_checkpoint(ck, path, identity, manifest_digest, cfg):
    """Refuse, in one line (CheckpointError), a checkpoint that is not this run's at a step
    it could have reached: every field read on resume is checked before anything is loaded."""
    def bad(why):
        return CheckpointError(f"resume: {path}: {why}")

    if not isinstance(ck, dict) or any(k not in ck for k in _CHECKPOINT_KEYS):
        missing = next((k for k in _CHECKPOINT_KEYS if k not in ck), None) if isinstance(ck, dict) else None
        raise bad(f"not a training checkpoint ({f'no {missing!r}' if missing else type(ck).__name__})")
    if ck["model_config"] != identity:
        raise bad("holds a different model config")
    if ck["manifest_digest"] != manifest_digest:
        raise bad(f"was trained on data with manifest digest {str(ck['manifest_digest'])[:80]}")
    if ck["train_config"] != dataclasses.asdict(cfg):
        raise bad("was trained with another configuration (steps, learning rate, schedule or seed)")
    step = ck["step"]
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= cfg.steps:
        raise bad(f"step {str(step)[:40]!r} is not a step of this run (0 to {cfg.steps:,})")
    history = ck["history"]
    if (not isinstance(history, dict) or not isinstance(history.get("train"), list)
            or not isinstance(history.get("val"), list) or len(history["train"]) != step):
        raise bad(f"its history does not hold one training record per step up to step {step:,}")
    if not all(isinstance(r, dict) and isinstance(r.get("loss"), float) and math.isfinite(r["loss"])
               for r in history["train"]):
        raise bad("its history holds a training record without a finite loss")
    primary = PRIMARY[cfg.objective]
    for r in history["val"] + ([] if ck["best"] is None else [ck["best"]]):
        if (not isinstance(r, dict) or not finite(r) or not isinstance(r.get(primary), float)
                or isinstance(r.get("step"), bool) or not isinstance(r.get("step"), int) or not 0 < r["step"] <= step):
            raise bad(f"its history or best record is not an evaluation of this run (with a finite {primary} at a "
                      f"step up to {step:,})")


def _restore(path, ck, model, opt):
    """The model's weights, the optimizer's state and the RNG state of the checkpoint ``ck``;
    CheckpointError (one line) for any that does not fit this model and optimizer."""
    try:
        model.load_state_dict(ck["model"])
    except Exception as e:  # a wrong shape, a missing or extra key, not a state dict
        raise CheckpointError(f"resume: {path}: its weights do not fit the model ({_first_line(e)})") from None
    fresh = [{k: v for k, v in g.items() if k not in ("params", "lr")} for g in opt.param_groups]
    try:
        opt.load_state_dict(ck["optimizer"])
        saved = [{k: v for k, v in g.items() if k not in ("params", "lr")} for g in opt.param_groups]
        if saved != fresh:
            raise ValueError("its parameter groups' settings (base lr, weight decay, betas) are not this run's")
        for group in opt.param_groups:
            for p in group["params"]:
                for k, v in opt.state.get(p, {}).items():
                    fits = isinstance(v, torch.Tensor) and (not v.ndim or v.shape == p.shape)
                    if not fits or not torch.isfinite(v).all():
                        raise ValueError(f"its {k} does not fit a parameter of shape {tuple(p.shape)}")
    except Exception as e:  # torch's own checks (group and parameter counts), and ours
        raise CheckpointError(f"resume: {path}: its optimizer state is not this run's ({_first_line(e)})") from None
    try:
        _set_rng_state(ck["rng"])
    except Exception as e:  # a state torch or NumPy refuses, or not a state at all
        raise CheckpointError(f"resume: {path}: its RNG state cannot be restored ({_first_line(e)})") from None


def _best_weights(ck, path, model, identity, manifest_digest, best):
    """best.pt's weights, checked against the model (names and shapes) and the run's record
    of its best evaluation."""
    if not isinstance(ck, dict) or not isinstance(ck.get("model"), dict):
        raise CheckpointError(f"resume: {path}: not a best-weights checkpoint")
    if ck.get("model_config") != identity or ck.get("manifest_digest") != manifest_digest or \
            ck.get("step") != best.get("step"):
        raise CheckpointError(f"resume: {path}: is not the best checkpoint of this run (its model, data or step "
                              f"differ from last.pt's record)")
    want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) if isinstance(v, torch.Tensor) else None for k, v in ck["model"].items()}
    if got != want:
        raise CheckpointError(f"resume: {path}: its weights do not fit the model")
    return ck["model"]


def _first_line(e):
    return " ".join(str(e).split())[:200] or type(e).__name__


def load_checkpoint(path, map_location="cpu"):
    """A checkpoint's dict, loaded with ``weights_only=True``: tensors and plain data only, so
    a checkpoint that travelled with a dataset folder cannot run code (docs/format.md,
    "Trust"), from a regular file opened without following a link. LongsynthError (one
    line) for one that holds anything else."""
    try:
        with os.fdopen(safe.open_regular(os.fspath(path)), "rb") as f:
            return torch.load(f, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"(?:[Uu]nsupported global:? GLOBAL|unsupported GLOBAL) ([\w.]+)", str(e))
        what = f"it holds {found.group(1)}" if found else "it holds more than tensors and plain data"
        raise CheckpointError(f"{path}: not loaded: {what}, and loading it could run code") from None
    except (OSError, RuntimeError, EOFError) as e:  # missing, truncated or not a checkpoint
        raise CheckpointError(f"{path}: not a readable checkpoint ({(str(e).splitlines() or [''])[0][:200]})") from None


def load_model(path, map_location="cpu"):
    """(Model, checkpoint dict) of a reference model, rebuilt from the config stored in its checkpoint."""
    ck = load_checkpoint(path, map_location)
    if ck["model_config"].get("layer") == "zoology-attention":  # the built-in outside the stack
        from longsynth.models_ref.zoology import ZoologyAttention, ZoologyConfig

        model = ZoologyAttention(ZoologyConfig.from_dict(ck["model_config"]))
    else:
        model = Model(ModelConfig.from_dict(ck["model_config"]))
    model.load_state_dict(ck["model"])
    return model, ck


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
        x, y, _ = _unpack(train_batch(step), device)
        with _autocast(device, cfg):
            _, loss_sum, count = _forward(model, x, y, cfg)
        opt.zero_grad(set_to_none=True)
        (loss_sum / max(count, 1)).backward()
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
        x, y, _ = _unpack(batch, device)
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
    primary = PRIMARY[train_cfg.objective]
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
        x, y, _ = _unpack(train_batch(step), device)
        f = lr_factor(step, train_cfg)
        for g in opt.param_groups:
            g["lr"] = g["base_lr"] * f
        with _autocast(device, train_cfg):
            _, loss_sum, count = _forward(fwd_model, x, y, train_cfg)
        # global mean over ranks: sum / global count; DDP averages gradients over the world
        tot = all_sum(torch.tensor([float(loss_sum.detach()), float(count)], dtype=torch.float64,
                                   device=device if world > 1 and dist.get_backend() == "nccl" else "cpu"))
        loss = float(tot[0] / max(float(tot[1]), 1.0))
        if not math.isfinite(loss):  # the same on every rank: the loss is summed over them
            diverged = {"step": step + 1, "where": "training loss"}
            end = step  # the steps that finished; the model keeps their (finite) weights
            break
        opt.zero_grad(set_to_none=True)
        (loss_sum * (world / max(float(tot[1]), 1.0))).backward()
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
