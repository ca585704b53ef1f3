"""A protocol resolved for one task and scale, and the batches it trains and evaluates on.

``Protocol`` is one row of ``presets.PROTOCOLS`` made concrete: what ``longsynth evaluate``
fixes whatever the model (data, loss, readout, causality, batch, steps, schedule,
evaluation). ``sources(...)`` builds its data:

- atomic tasks on the fly: global batch ``step`` of split s holds sample indices
  ``step*B .. step*B+B-1`` (``longsynth.torch.OnTheFlyDataset``'s index rule), a pure
  function of the step; rank r of W takes its B/W of them;
- stored datasets through ``longsynth.torch.ShardDataset`` (positional channels, the -100
  ignore index), shuffled per epoch by ``trainer.IndexedBatches``; the first
  ``eval_batches`` batches of val and test in index order.
"""
from __future__ import annotations

import dataclasses
import os

import torch

from longsynth import registry
from longsynth.errors import LongsynthError
from longsynth.models_ref.presets import PROTOCOLS, protocol_of
from longsynth.models_ref.trainer import IndexedBatches, TrainConfig
from longsynth.torch import IGNORE_INDEX, OnTheFlyDataset, ShardDataset, pad_collate

SCALES = ("tiny", "paper")


@dataclasses.dataclass(frozen=True)
class Protocol:
    name: str  # "atomic", "listops-subtrees", "pathfinder-seg-128", ...
    scale: str
    task: str
    objective: str
    readout: str
    causal: bool
    batch_size: int
    steps: int
    lr: float  # for models without a preset of their own
    schedule: str
    warmup_steps: int
    weight_decay: float
    eval_every: int
    eval_batches: int
    data: dict  # task parameters
    splits: dict | None  # generated into the cache at this scale (None: the task's defaults)
    source: str

    @property
    def stored(self):
        """True where the data is a stored dataset; atomic tasks are generated on the fly."""
        return registry.get(self.task).family != "atomic"

    def train_config(self, *, lr, seed, steps=None, amp=False, compile=False,  # noqa: A002 (torch.compile)
                     checkpoint_activations=False, checkpoint_every=None):
        """The TrainConfig of a run. ``steps`` replaces the protocol's and scales its schedule
        with it: warmup keeps its share of the run and evaluations keep their number (the
        protocol's 600 steps with warmup 30 and an evaluation every 100 become, at 60 steps,
        warmup 3 and an evaluation every 10), so a short run still reaches the peak rate."""
        n = self.steps if steps is None else steps
        warmup = round(self.warmup_steps * n / self.steps)
        warmup = max(warmup, 1) if self.warmup_steps else 0
        every = max(1, min(n, round(self.eval_every * n / self.steps)))
        return TrainConfig(steps=n, lr=lr, objective=self.objective, readout=self.readout,
                           weight_decay=self.weight_decay, schedule=self.schedule, warmup_steps=min(warmup, n - 1),
                           eval_every=every, eval_batches=self.eval_batches, seed=seed, amp=amp,
                           compile=compile, checkpoint_activations=checkpoint_activations,
                           checkpoint_every=checkpoint_every)


def resolve(name, scale, task=None):
    """The protocol ``name`` (or the one of atomic task ``task``) at ``scale``."""
    if scale not in SCALES:
        raise LongsynthError(f"scale: must be one of {', '.join(SCALES)}, got {scale!r}")
    key = protocol_of(name)
    if (key, scale) not in PROTOCOLS:
        raise LongsynthError(f"suite: no protocol {name!r}")
    row = dict(PROTOCOLS[(key, scale)])
    row["task"] = row["task"] or task or name
    change = row.pop("per_task", {}).get(row["task"], {})  # a task's own length or budget at this scale
    row.update(change, data={**row["data"], **change.get("data", {})})
    return Protocol(name=key, scale=scale, **row)


def protocol_for_dataset(ds):
    """The protocol name of a stored dataset: by its task and, for Pathfinder, image side."""
    task = ds.task.name
    if ds.task.family == "atomic":
        return "atomic"
    if task == "listops-subtrees":
        return "listops-subtrees"
    if task == "listops":
        return "lra-listops"
    side = int(ds.manifest["params"].get("size", 128))
    if task == "pathfinder":
        return "path-x" if side == 128 else "lra-pathfinder"
    return f"pathfinder-seg-{side}" if side in (128, 256, 512) else "pathfinder-seg-128"


# ----------------------------------------------------------------- on-the-fly batches


class OnTheFly:
    """Atomic task batches for ``trainer.train``: ``batch(step)`` -> (x [B/W, T, c+2], y)."""

    def __init__(self, task, params, seed, batch_size, split, rank=0, world=1):
        self.stream = OnTheFlyDataset(task, seed=seed, split=split, batch_size=batch_size // world, rank=rank,
                                      world_size=world, **params)

    def __call__(self, step):
        threads = torch.get_num_threads()
        x, y = self.stream.batch(step)
        torch.set_num_threads(threads)  # Numba's OpenMP pool shares (and resets) the thread count
        return x, y


def _eval_list(source, n):
    batches = [source(i) for i in range(n)]
    return lambda: batches


# ----------------------------------------------------------------- stored batches


def _stack(items):
    """Fixed-shape samples (atomic, Pathfinder) -> (x [B, ...], y [B, ...])."""
    return torch.stack([it[0] for it in items]), torch.stack([it[1] for it in items])


def _listops_collate(items):
    """ListOps-Subtrees samples with extras -> (x [B, n], y [B, n], {"height", "operator": [B, n]}).

    The per-node annotations (one per `]`, in order) are placed at the labelled positions;
    -1 elsewhere.
    """
    x, y, _, extras = pad_collate(items)
    height = torch.full_like(y, -1)
    operator = torch.full_like(y, -1)
    for b, ex in enumerate(extras):
        pos = (y[b] != IGNORE_INDEX).nonzero().flatten()
        if pos.numel() != ex["heights"].numel():
            raise LongsynthError(f"sample {ex['index']}: {pos.numel()} labels but {ex['heights'].numel()} annotations")
        height[b, pos] = ex["heights"].long()
        operator[b, pos] = ex["operators"].long()
    return x, y, {"height": height, "operator": operator}


def _classic_pathfinder_collate(items):
    """Classic Pathfinder samples -> (x [B, M*M, c], y [B, 1]): one label per image, read from
    the mean of the model's outputs over positions (the "mean" readout)."""
    x = torch.stack([it[0] for it in items])  # [B, M*M, c]
    y = torch.stack([it[1] for it in items]).long()[:, None]  # [B, 1]
    return x, y


def _classic_listops_collate(items):
    """Classic ListOps samples with extras -> (x [B, n], y [B, n], {"height", "operator": [B, n]}).

    The root value becomes the one label of each sequence, at its last token (the final `]`,
    which a causal model reads after the whole expression); -100 elsewhere. The breakdown
    groups are the root's height and operator (the last per-node annotation).
    """
    x, root, lengths, extras = pad_collate(items)
    y = torch.full(x.shape, IGNORE_INDEX, dtype=torch.long)
    height = torch.full_like(y, -1)
    operator = torch.full_like(y, -1)
    last = lengths - 1  # [B]
    rows = torch.arange(x.shape[0])  # [B]
    y[rows, last] = root.long()
    height[rows, last] = torch.stack([ex["heights"][-1].long() for ex in extras])
    operator[rows, last] = torch.stack([ex["operators"][-1].long() for ex in extras])
    return x, y, {"height": height, "operator": operator}


COLLATES = {"listops-subtrees": _listops_collate, "listops": _classic_listops_collate,
            "pathfinder": _classic_pathfinder_collate}


def _sequential(dataset, batch_size, n, collate, rank=0, world=1):
    """The first n batches of ``batch_size`` samples of a split, in index order (evaluation);
    rank r of W holds its slice of batch_size/W samples of each."""
    count = min(n, len(dataset) // batch_size)
    if count < 1:
        raise LongsynthError(f"split has {len(dataset)} samples, fewer than one batch of {batch_size}")
    local = batch_size // world
    batches = [collate([dataset[i * batch_size + rank * local + j] for j in range(local)]) for i in range(count)]
    return lambda: batches


def stored_sources(root, batch_size, eval_batches, seed=0, rank=0, world=1):
    """(train_batch, val_batches, test_batches) over a stored dataset via longsynth.torch;
    ``batch_size`` is the global batch, rank ``rank`` of ``world`` reads its share."""
    probe = ShardDataset(root, "train")
    listops = probe.family == "listops"
    sets = {s: ShardDataset(root, s, encode=True, extras=listops) for s in ("train", "val", "test")}
    collate = COLLATES.get(probe.task, _stack)
    return (IndexedBatches(sets["train"], batch_size // world, collate, seed=seed, rank=rank, world=world),
            _sequential(sets["val"], batch_size, eval_batches, collate, rank, world),
            _sequential(sets["test"], batch_size, eval_batches, collate, rank, world))


def manifest_digest(root):
    """SHA-256 of a dataset's manifest.json: what a checkpoint trained on it records."""
    from longsynth.files import file_sha256

    return file_sha256(os.path.join(root, "manifest.json"))  # the store's hash: never follows a link


def on_the_fly_sources(protocol, batch_size, seed=0, rank=0, world=1):
    """(train_batch, val_batches, test_batches, params) of an atomic task, generated on the fly."""
    fields = {f.name for f in dataclasses.fields(registry.get(protocol.task).config)}
    params = {k: v for k, v in protocol.data.items() if k in fields}
    n = protocol.eval_batches
    make = lambda split: OnTheFly(protocol.task, params, seed, batch_size, split, rank, world)  # noqa: E731
    return make("train"), _eval_list(make("val"), n), _eval_list(make("test"), n), params
