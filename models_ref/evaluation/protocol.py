"""A protocol resolved for one task and scale, and the batches it trains and evaluates on.

``Protocol`` is one row of ``protocols.registry.PROTOCOLS`` made concrete: what ``longsynth evaluate``
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
from longsynth.models_ref.protocols.registry import SCALES, protocol_row
from longsynth.models_ref.training.trainer import IndexedBatches
from longsynth.models_ref.training.config import TrainConfig
from longsynth.torch import IGNORE_INDEX, OnTheFlyDataset, ShardDataset, pad_collate

__all__ = ["SCALES", "Protocol", "resolve"]  # SCALES: the table's, named here for the harness


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
    # token suites (models_ref/protocols/recall.py, state.py, mad.py); the DLR paper's protocols leave them unset
    train_samples: int | None = None  # a fixed training set of this many samples (None: fresh samples every step)
    test_sets: dict | None = None  # {label: task parameters changed}: tested after training (length generalisation)
    breakdown: str | None = None  # "length" | "position": test accuracy grouped by (BREAKDOWNS)
    lrs: tuple | None = None  # the protocol's own learning-rate sweep (zoology, MAD), tried whatever the model
    weight_decays: tuple | None = None  # its weight-decay sweep (MAD)
    widths: tuple | None = None  # its model-width grid (zoology's d_model), told to the model as spec.d_model
    depths: tuple | None = None  # its depth grid (Merrill et al.'s layers), told to the model as spec.n_layers
    min_lr: float | None = None  # where the schedule ends (MAD, Grazzi et al.: 1e-6); None: 0
    warmup_lr_init: float | None = None  # the "timm-cosine" warmup's first lr (seq_icl's 1e-6); None: 0
    grad_clip: float | None = None  # max global gradient norm (the Chomsky hierarchy's 1.0); None: no clipping
    loss_per_row: bool = False  # the gradient of each row's summed loss averaged over rows (the Chomsky hierarchy's,
    # experiments/example.py 100-102), not of the mean over scored positions (TrainConfig.loss_per_row)
    score_test_sets: bool = False  # the verdict reads the mean over the test sets (the Chomsky hierarchy's score)
    length_per_batch: bool = False  # every batch one length, uniform in data's min_length..max_length (``ByLength``)
    model_options: dict | None = None  # {built-in: ({arch option: value}, ...)}: the configurations of a built-in
    # the paper's column is the best of (the Chomsky Tape-RNN's tapes x computation tokens), each point a run
    whole_row: bool = False  # no target sits among a row's inputs: a model that reads the whole row is run, not
    # refused (the Chomsky hierarchy's rows: the input, then empty tokens; the paper's Transformer is an encoder)
    string_metrics: tuple | None = None  # token ids left out of the metrics (not the loss), and each row's string and
    # character accuracy reported (Repeat After Me's get_score: the answer's letters without its '.')
    dfa_metric: bool = False  # RegBench: scored by the DFA accuracy, its evaluation batches carrying the rows' DFAs'
    # allowed letters (``_with_allowed``)

    @property
    def trims(self):
        """True where every batch is cut after its last scored position (training.forward.trimmed):
        a causal protocol scoring outputs position by position, where that is exact."""
        return self.causal and self.readout == "positions"

    @property
    def stored(self):
        """True where the data is a stored dataset; atomic and token tasks are generated on the fly."""
        return registry.get(self.task).family not in ("atomic", "tokens")

    def train_config(self, *, lr, seed, steps=None, amp=False, compile=False,  # noqa: A002 (torch.compile)
                     checkpoint_activations=False, checkpoint_every=None, weight_decay=None):
        """The TrainConfig of a run. ``steps`` replaces the protocol's and scales its schedule
        with it: warmup keeps its share of the run and evaluations keep their number (the
        protocol's 600 steps with warmup 30 and an evaluation every 100 become, at 60 steps,
        warmup 3 and an evaluation every 10), so a short run still reaches the peak rate."""
        n = self.steps if steps is None else steps
        warmup = round(self.warmup_steps * n / self.steps)
        warmup = max(warmup, 1) if self.warmup_steps else 0
        every = max(1, min(n, round(self.eval_every * n / self.steps)))
        return TrainConfig(steps=n, lr=lr, objective=self.objective, readout=self.readout,
                           weight_decay=self.weight_decay if weight_decay is None else weight_decay,
                           schedule=self.schedule, warmup_steps=min(warmup, n - 1),
                           eval_every=every, eval_batches=self.eval_batches, seed=seed, amp=amp,
                           min_lr_ratio=0.0 if self.min_lr is None else min(1.0, self.min_lr / lr),
                           warmup_init_ratio=0.0 if self.warmup_lr_init is None else min(1.0, self.warmup_lr_init / lr),
                           compile=compile, checkpoint_activations=checkpoint_activations,
                           checkpoint_every=checkpoint_every, grad_clip=self.grad_clip,
                           loss_per_row=self.loss_per_row, trim=self.trims,
                           string_metrics=self.string_metrics, dfa_metric=self.dfa_metric)


def resolve(name, scale, task=None):
    """The protocol ``name`` (or the one of atomic task ``task``) at ``scale``."""
    key, row = protocol_row(name, scale, task)
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
    """Atomic task batches for ``trainer.train``: ``batch(step)`` -> (x [B/W, T, c+2], y), or (x, y, {key: ...})
    of the task's other keys ``keep``."""

    def __init__(self, task, params, seed, batch_size, split, rank=0, world=1, keep=()):
        self.keep = tuple(keep)
        self.stream = OnTheFlyDataset(task, seed=seed, split=split, batch_size=batch_size // world, rank=rank,
                                      world_size=world, extras=bool(self.keep), **params)

    def __call__(self, step):
        threads = torch.get_num_threads()
        batch = self.stream.batch(step)
        torch.set_num_threads(threads)  # Numba's OpenMP pool shares (and resets) the thread count
        if self.keep:
            return batch[0], batch[1], {k: batch[2][k] for k in self.keep}
        return batch


class ByLength:
    """Batches of one length each, as the Chomsky hierarchy's authors train (their
    ``UniformCurriculum``: one ``sample_batch(key, batch, length)`` a step): the length of step s is
    uniform in ``min_length``..``max_length``, drawn from (seed, split, s) alone, and its batch is
    ``OnTheFly``'s step s of the task at that one length, so no row is padded and every batch is a
    pure function of its step."""

    def __init__(self, task, params, seed, batch_size, split, rank=0, world=1):
        self.task, self.params, self.seed, self.split = task, params, seed, split
        self.batch_size, self.rank, self.world = batch_size, rank, world
        self.lo, self.hi = int(params["min_length"]), int(params["max_length"])
        self.streams = {}  # length -> OnTheFly, made on first use

    def length(self, step):
        """The length of step ``step``'s batch (the same on every rank)."""
        import numpy as np

        split = ("train", "val", "test").index(self.split)
        return self.lo + int(np.random.default_rng([self.seed, split, step]).integers(self.hi - self.lo + 1))

    def __call__(self, step):
        return self.at(step, self.length(step))

    def at(self, step, n):
        """Step ``step``'s batch at length ``n`` (the dry run times chosen lengths)."""
        if n not in self.streams:
            params = {**self.params, "min_length": n, "max_length": n}
            params.update({k: n for k in ("test_min_length", "test_max_length") if k in self.params})
            self.streams[n] = OnTheFly(self.task, params, self.seed, self.batch_size, self.split, self.rank,
                                       self.world)
        return self.streams[n](step)


def _eval_list(source, n, lazy=False):
    """The evaluation batches 0..n-1 of ``source``, drawn once and kept; ``lazy``: drawn as they are
    read, each time (the dry run, which reads one)."""
    if lazy:
        return lambda: (source(i) for i in range(n))
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


def _task_params(protocol, change=None):
    fields = {f.name for f in dataclasses.fields(registry.get(protocol.task).config)}
    return {k: v for k, v in {**protocol.data, **(change or {})}.items() if k in fields}


def on_the_fly_sources(protocol, batch_size, seed=0, rank=0, world=1, fresh=False):
    """(train_batch, val_batches, test_batches, params) of an atomic or token task, generated
    on the fly; a protocol with ``train_samples`` trains on that fixed set (``fixed_train``)
    unless ``fresh`` (fresh samples of the same shape: the dry run's timing, which must not
    generate 100K sequences, and whose evaluation batches are drawn only when read), and its
    evaluation batches carry the ``breakdown`` groups."""
    params = _task_params(protocol)
    n = protocol.eval_batches
    kind = ByLength if protocol.length_per_batch else OnTheFly
    make = lambda split: kind(protocol.task, params, seed, batch_size, split, rank, world)  # noqa: E731
    if protocol.train_samples is None or fresh:
        train = make("train")
    else:
        train = fixed_train(protocol.task, params, protocol.train_samples, batch_size, seed, rank, world)
    val, test = (_eval_list(_scored(protocol, params, seed, batch_size, s, rank, world, kind), n, lazy=fresh)
                 for s in ("val", "test"))
    return train, val, test, params


def _batch_bytes(batch):
    """Bytes of the tensors of a batch (x, y and its extras' tensors)."""
    x, y, *rest = batch
    tensors = [x, y] + [v for extra in rest for v in (extra.values() if isinstance(extra, dict) else [extra])]
    return sum(t.nelement() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def data_bytes(protocol, batch_size, rank=0, world=1):
    """(bytes a sample of the longest rows takes, samples held per sample of a rank's batch, samples held
    whatever the batch) of an on-the-fly run of ``protocol``, measured on batches of one sample a rank, so that
    a batch that cannot fit is refused before any is drawn: a rank holds about
    ``per_sample * (batch_size / world * per_batch + fixed)`` bytes of data. Held together (measured:
    ``validate cumsum --batch-size 1048576`` failed allocating its first validation batch, [1048576, 512, 3]
    float32, 6 GiB): the validation and test batches (``eval_batches`` each, kept for the whole run), the
    training batch and the generator's arrays it is encoded from, ``eval_batches`` more per
    length-generalisation test set (drawn at the end, beside the others), and a fixed training set
    (``train_samples``). Rows are sized at the longest length the protocol draws (its task's key width, its
    test sets'); the model's activations come on top."""
    params = _task_params(protocol)
    train, val, test, _ = on_the_fly_sources(protocol, world, rank=rank, world=world, fresh=True)
    probes = [train(0), next(iter(val())), next(iter(test()))]
    task = registry.get(protocol.task)
    longest = max([b[0].shape[1] for b in probes] + [longest_test_input(protocol) or 0]
                  + [task.keys(task.make_config(**params))["inputs"].shape[0]])
    per_sample = int(max(_batch_bytes(b) / b[0].shape[0] / b[0].shape[1] for b in probes) * longest)
    per_batch = protocol.eval_batches * (2 + len(protocol.test_sets or {})) + 2
    return per_sample, per_batch, protocol.train_samples or 0


def _scored(protocol, params, seed, batch_size, split, rank, world, kind=OnTheFly):
    """An evaluation source of ``kind`` as the protocol scores it: its batches carry the breakdown groups, or
    (RegBench) the letters each row's DFA allows next."""
    if protocol.dfa_metric:
        return _with_allowed(OnTheFly(protocol.task, params, seed, batch_size, split, rank, world, keep=("dfa",)))
    return _grouped(kind(protocol.task, params, seed, batch_size, split, rank, world), protocol.breakdown,
                    length_offset(protocol))


def _with_allowed(source):
    """Batches (x, y, {"allowed": [B, T]}): the letters the row's DFA allows after each input, a bit mask
    (generators/regbench/scoring.py ``allowed_letters``), for eval_pass's DFA accuracy."""
    from longsynth.generators.regbench.scoring import allowed_letters

    def batch(step):
        x, y, extras = source(step)
        return x, y, {"allowed": torch.from_numpy(allowed_letters(x.numpy(), extras["dfa"].numpy()))}
    return batch


def longest_test_input(protocol):
    """The longest input length of the protocol's ``test_sets`` (None without any), from the
    tasks' key shapes: nothing is generated."""
    task = registry.get(protocol.task)
    lengths = [task.keys(task.make_config(**_task_params(protocol, change)))["inputs"].shape[0]
               for change in (protocol.test_sets or {}).values()]
    return max(lengths) if lengths else None


def test_set_sources(protocol, batch_size, rank=0, world=1):
    """{label: test_batches} of a protocol's ``test_sets``: its test split drawn with each set's
    parameters changed (longer inputs, other lengths), for the length-generalisation report."""
    out = {}
    for label, change in (protocol.test_sets or {}).items():
        out[label] = _eval_list(_scored(protocol, _task_params(protocol, change), 0, batch_size, "test", rank, world),
                                protocol.eval_batches)
    return out


# ----------------------------------------------------------------- token suites


BREAKDOWNS = {  # how a token suite's test accuracy is grouped (models_ref/metrics.token_accuracy groups)
    "length": "the length n of a sample's sequence, counted as the authors count it (the word and its answer): "
              "its one scored target sits at index n - 2 (parity, modular arithmetic: targets are inputs shifted "
              "by one), n - 3 with brackets (their n also counts the [PAD] after the answer: "
              "docs/tasks/state-tracking.md, 'Lengths from stored rows')",
    "position": "the index of each scored target, the number of elements in its prefix (word problems: BOS at 0, "
                "the prefix product of elements 1..t at t)",
}


def length_offset(protocol):
    """n minus the scored target's index for the "length" breakdown: the task's
    ``row_length_offset`` for the protocol's data (2 for parity, 3 with brackets)."""
    task = registry.get(protocol.task)
    if task.row_length_offset is None:
        return 2
    return int(task.row_length_offset(task.make_config(**_task_params(protocol))))


def groups(y, kind, offset=2):
    """The breakdown groups of labels y [B, T] (``BREAKDOWNS``): long [B, T], -1 where unscored.
    ``offset``: ``length_offset`` of the protocol."""
    scored = y != IGNORE_INDEX  # [B, T]
    index = torch.arange(y.shape[1], device=y.device).expand_as(y)  # [B, T]  0-based target positions
    if kind == "length":
        last = torch.where(scored, index, torch.full_like(index, -2)).amax(dim=1, keepdim=True)  # [B, 1]
        index = (last + offset).expand_as(y)  # [B, T]  n: the word and its answer
    return torch.where(scored, index, torch.full_like(index, -1))  # [B, T]


def _grouped(source, kind, offset=2):
    """A batch source whose batches carry {kind: groups} extras (unchanged when kind is None)."""
    if kind is None:
        return source

    def batch(step):
        x, y = source(step)[:2]
        return x, y, {kind: groups(y, kind, offset)}
    return batch


class _Samples:
    """A generated block as a map-style dataset of (x, y) int64 tensors (token tasks)."""

    def __init__(self, block):
        self.x = torch.from_numpy(block["inputs"].astype("int64"))  # [n, T]
        self.y = torch.from_numpy(block["targets"].astype("int64"))  # [n, T]

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def fixed_train(task, params, count, batch_size, seed=0, rank=0, world=1):
    """``batch(step)`` over a fixed training set: samples 0..count-1 of the train split,
    generated once into memory (zoology's 100K MQAR sequences, MAD's 12,800 instances) and
    read in seeded epoch shuffles (trainer.IndexedBatches), so epochs repeat the same samples."""
    from longsynth.api import batch

    threads = torch.get_num_threads()
    block = batch(task, 0, count, seed=0, split="train", **params)
    torch.set_num_threads(threads)  # Numba's OpenMP pool shares (and resets) the thread count
    return IndexedBatches(_Samples(block), batch_size // world, _stack, seed=seed, rank=rank, world=world)
