"""Learnability certificates: train a reference model on a dataset and compare with the paper.

``validate(target, model, scale, steps, device, report_dir, progress)`` trains the preset of
the target's task family (MODELS.md; ``scale="paper"``: the paper's Table 5/6 values,
``scale="tiny"``: the same recipe shrunk to run on a CPU in minutes) and writes
metrics.json, curves.png and, for Pathfinder, predictions.png to the report directory.

Targets: a stored dataset directory (its manifest digest goes into every checkpoint) or an
atomic task name (fresh batches generated on the fly, a pure function of the step).

Data parallel: under ``torchrun --nproc_per_node W`` (WORLD_SIZE > 1) every process joins
one process group (nccl on CUDA, gloo on CPU), reads its share of each batch (the preset's
batch size is the global batch; each rank takes batch/W samples), and rank 0 alone writes
the certificate, which records world_size and the global batch.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
import time

import numpy as np
import torch
import torch.distributed as dist

from longsynth import plot, registry
from longsynth.errors import LongsynthError
from longsynth.models_ref.metrics import IGNORE_INDEX
from longsynth.models_ref.model import ModelConfig
from longsynth.models_ref.trainer import PRIMARY, IndexedBatches, TrainConfig, train

MODELS = ("dlr", "dss")
SCALES = ("tiny", "paper")

# Paper figures (test sets). Table 1: single layer, L = 4096, R^2. Table 3: ListOps token
# accuracy (%), Pathfinder-Segmentation macro F1 / macro accuracy (%) by image size.
PAPER_TABLE1 = {
    "dlr": {"shift": 1.0, "cumsum": 1.0, "cummax": 0.52, "select-fixed": 0.97, "solve-fixed": 1.0,
            "reverse": 0.01, "solve": 0.0, "select": 0.0, "sort": 0.0, "context-shift": 0.0, "mips": 0.0},
    "dss": {"shift": 0.99, "cumsum": 1.0, "cummax": 0.51, "select-fixed": 0.0, "solve-fixed": 0.01,
            "reverse": 0.0, "solve": 0.0, "select": 0.0, "sort": 0.0, "context-shift": 0.0, "mips": 0.0},
}
PAPER_LISTOPS = {"dlr": 85.7, "dss": 83.8}
PAPER_LRA_PATHFINDER = {"dss": {32: 84.7, 128: 85.6}}  # DSS paper Table 1, DSS_exp: Pathfinder, Path-X
PAPER_LRA_LISTOPS = {"dss": 59.7}  # DSS paper Table 1, DSS_exp; the DLR paper reports no classic ListOps
PAPER_PATHFINDER = {"dlr": {128: (96.8, 97.7), 256: (94.0, 96.3), 512: (76.3, 92.8)},
                    "dss": {128: (94.4, 97.2), 256: (89.4, 96.2), 512: (60.4, 79.3)}}


@dataclasses.dataclass
class Preset:
    model: dict  # ModelConfig fields (d_input, d_output come from the data)
    train: dict  # TrainConfig fields
    batch_size: int
    data: dict  # task parameters for on-the-fly generation


def preset(family, model, scale, L=None):
    """The preset for a task family, model and scale (MODELS.md, paper Tables 5 and 6)."""
    if family == "atomic":
        dt = {"dlr": (1e-5, 1e-5), "dss": (1e-4, 1e-2)}[model]
        if scale == "paper":  # Table 5: one layer, L = 4096, 40K steps, constant lr
            lr = {"dlr": 1e-4, "dss": 1e-3}[model]
            return Preset(dict(H=128, N=4096, n_layers=1, dt_min=dt[0], dt_max=dt[1]),
                          dict(steps=40_000, lr=lr, eval_every=1000, eval_batches=32),
                          16, dict(L=4096))
        lr = {"dlr": 2e-3, "dss": 5e-3}[model]
        # DLR: the SSM parameters (Lambda, W) at lr 2e-4. At 2e-3 a step turns the phase
        # k * Lambda_im of lag k ~ L by ~1 rad and moves W by ~|W| ~ 1/N, so the kernel is
        # mostly noise: select-fixed reached test R^2 0.25 in 1,500 steps, 0.91 with 2e-4
        # (0.98 after 12,000 steps, against 0.53 before); shift, cumsum, solve-fixed unchanged.
        ssm = {"ssm_lr": 2e-4} if model == "dlr" else {}
        return Preset(dict(H=64, N=512, n_layers=1, dt_min=dt[0], dt_max=dt[1], **ssm),
                      dict(steps=600, lr=lr, eval_every=100, eval_batches=4), 16, dict(L=512))
    if family == "listops":  # Table 6 (LS)
        if scale == "paper":
            return Preset(dict(H=128, N=1024, n_layers=6, glu=True, dt_min=1e-4, dt_max=1e-1,
                               max_kernel_length=8192),
                          dict(steps=300_000, lr=8e-4, weight_decay=0.01, schedule="cosine",
                               warmup_steps=3000, objective="tokens", eval_every=5000, eval_batches=64),
                          32, {})
        return Preset(dict(H=64, N=64, n_layers=2, glu=True, dt_min=1e-4, dt_max=1e-1),
                      dict(steps=300, lr=2e-3, weight_decay=0.01, schedule="cosine", warmup_steps=30,
                           objective="tokens", eval_every=100, eval_batches=4), 4, {})
    if family == "pathfinder-classic":  # LRA Pathfinder / Path-X: one label per image
        side = int(round(math.sqrt(L))) if L else 32
        if scale == "paper":  # S4's 32-px setting (state-spaces/s4 configs/experiment/lra/s4-pathfinder.yaml)
            return Preset(dict(H=256, N=64, n_layers=6, bidirectional=True, glu=True, prenorm=True, pool=True,
                               norm="batch", dt_min=1e-3, dt_max=1e-1, ssm_lr=1e-3),
                          dict(steps=500_000, lr=4e-3, weight_decay=0.05, schedule="cosine", warmup_steps=50_000,
                               objective="tokens", eval_every=5000, eval_batches=64), 64, {})
        # tiny: the paper preset's head and norms at 2 layers of H 64; with batch norm it leaves chance
        # after ~2,000 steps on 32-px easy data (docs/validation.md; with layer norm it never did)
        return Preset(dict(H=64, N=64, n_layers=2, glu=True, bidirectional=True, prenorm=True, pool=True,
                           norm="batch", dt_min=1e-3, dt_max=1e-1, ssm_lr=1e-3),
                      dict(steps=3000, lr=4e-3, schedule="cosine", warmup_steps=100, objective="tokens",
                           eval_every=500, eval_batches=32), 32, {})
    if family == "pathfinder":  # Table 6 (PS), by image side
        side = int(round(math.sqrt(L))) if L else 128
        if scale == "paper":
            layers, H, N, lr, B, steps, klen = {
                128: (5, 128, 1024, 1e-4, 16, 150_000, 8192), 256: (6, 128, 1024, 5e-5, 18, 178_000, 32768),
                512: (12, 64, 2048, 1e-5, 14, 114_000, 32768)}.get(side, (5, 128, 1024, 1e-4, 16, 150_000, 8192))
            return Preset(dict(H=H, N=N, n_layers=layers, glu=True, bidirectional=True, dt_min=1e-4,
                               dt_max=1e-1, max_kernel_length=klen),
                          dict(steps=steps, lr=lr, schedule="cosine", warmup_steps=steps // 100,
                               objective="segmentation", eval_every=5000, eval_batches=64), B, {})
        return Preset(dict(H=32, N=64, n_layers=2, glu=True, bidirectional=True, dt_min=1e-4, dt_max=1e-1),
                      dict(steps=300, lr=2e-3, schedule="cosine", warmup_steps=30, objective="segmentation",
                           eval_every=100, eval_batches=4), 4, {})
    raise LongsynthError(f"family: no preset for {family!r}")


def with_positions(x):
    """Append cos(2 pi i / T), sin(2 pi i / T) to x [B, T, c] (TASKS.md positional channels)."""
    B, T, _ = x.shape
    a = 2 * math.pi * torch.arange(T, dtype=torch.float64) / T
    pos = torch.stack([torch.cos(a), torch.sin(a)], -1).to(x.dtype)  # [T, 2]
    return torch.cat([x, pos[None].expand(B, T, 2)], -1)  # [B, T, c + 2]


def _atomic_tensors(inputs, targets):
    x = torch.as_tensor(np.asarray(inputs, dtype=np.float32))
    y = torch.as_tensor(np.asarray(targets, dtype=np.float32))
    if x.dim() == 2:
        x = x[..., None]
    if y.dim() == 2:
        y = y[..., None]
    return with_positions(x), y


class OnTheFly:
    """Atomic task batches from ``longsynth.batch``: global batch ``step`` is sample indices
    step*B .. step*B+B-1; rank r of W reads its slice of B/W of them."""

    def __init__(self, task, params, seed, batch_size, split, rank=0, world=1):
        self.task, self.params, self.seed, self.B, self.split = task, params, seed, batch_size, split
        self.local = batch_size // world
        self.offset = rank * self.local

    def __call__(self, step):
        import longsynth

        threads = torch.get_num_threads()
        d = longsynth.batch(self.task, step * self.B + self.offset, self.local, seed=self.seed,
                            split=self.split, **self.params)
        torch.set_num_threads(threads)  # Numba's OpenMP pool shares (and resets) the thread count
        return _atomic_tensors(d["inputs"], d["targets"])


def _stack(items):
    """Fixed-shape samples (atomic, Pathfinder) -> (x [B, ...], y [B, ...])."""
    return torch.stack([it[0] for it in items]), torch.stack([it[1] for it in items])


def _listops_collate(items):
    """ListOps-Subtrees samples with extras -> (x [B, n], y [B, n], {"height", "operator": [B, n]}).

    The per-node annotations (one per `]`, in order) are placed at the labelled positions;
    -1 elsewhere.
    """
    from longsynth.torch import pad_collate

    x, y, _, extras = pad_collate(items)
    height = torch.full_like(y, -1)
    operator = torch.full_like(y, -1)
    for b, ex in enumerate(extras):
        pos = (y[b] != IGNORE_INDEX).nonzero().flatten()
        if pos.numel() != ex["heights"].numel():
            raise ValueError(f"sample {ex['index']}: {pos.numel()} labels but {ex['heights'].numel()} annotations")
        height[b, pos] = ex["heights"].long()
        operator[b, pos] = ex["operators"].long()
    return x, y, {"height": height, "operator": operator}


def _classic_pathfinder_collate(items):
    """Classic Pathfinder samples -> (x [B, M*M, c], y [B, 1]): one label per image, read by
    the model at its rightmost position (target_len 1) or from its pooled output."""
    x = torch.stack([it[0] for it in items])  # [B, M*M, c]
    y = torch.stack([it[1] for it in items]).long()[:, None]  # [B, 1]
    return x, y


def _classic_listops_collate(items):
    """Classic ListOps samples with extras -> (x [B, n], y [B, n], {"height", "operator": [B, n]}).

    The root value becomes the one label of each sequence, at its last token (the final `]`,
    which a causal model reads after the whole expression); -100 elsewhere. The breakdown
    groups are the root's height and operator (the last per-node annotation).
    """
    from longsynth.torch import pad_collate

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


def _sequential(dataset, batch_size, n, collate, rank=0, world=1):
    """The first n batches of ``batch_size`` samples of a split, in index order (evaluation);
    rank r of W holds its slice of batch_size/W samples of each."""
    count = min(n, len(dataset) // batch_size)
    if count < 1:
        raise LongsynthError(f"split has {len(dataset)} samples, fewer than one batch of {batch_size}")
    local = batch_size // world
    batches = [collate([dataset[i * batch_size + rank * local + j] for j in range(local)]) for i in range(count)]
    return lambda: batches


def _eval_list(source, n):
    batches = [source(i) for i in range(n)]
    return lambda: batches


def stored_sources(root, family, batch_size, eval_batches, seed=0, rank=0, world=1):
    """(train_batch, val_batches, test_batches) over a stored dataset via longsynth.torch;
    ``batch_size`` is the global batch, rank ``rank`` of ``world`` reads its share."""
    from longsynth.torch import ShardDataset

    listops = family == "listops"
    sets = {s: ShardDataset(root, s, encode=True, extras=listops) for s in ("train", "val", "test")}
    collate = _stack
    if family == "pathfinder" and sets["train"][0][1].dim() == 0:  # classic Pathfinder: one label
        collate = _classic_pathfinder_collate
    if listops:
        per_token = sets["train"][0][1].dim() == 1  # ListOps-Subtrees; classic ListOps: a root value
        collate = _listops_collate if per_token else _classic_listops_collate
    return (IndexedBatches(sets["train"], batch_size // world, collate, seed=seed, rank=rank, world=world),
            _sequential(sets["val"], batch_size, eval_batches, collate, rank, world),
            _sequential(sets["test"], batch_size, eval_batches, collate, rank, world))


def _paper_figure(family, task, model, side):
    if family == "atomic":
        v = PAPER_TABLE1[model].get(task)
        return None if v is None else {"r2": v, "source": "Table 1 (single layer, L = 4096)"}
    if family == "listops" and task != "listops-subtrees":
        v = PAPER_LRA_LISTOPS.get(model)
        return None if v is None else {"accuracy": v / 100, "source": "DSS paper Table 1 (LRA ListOps)"}
    if family == "listops":
        return {"accuracy": PAPER_LISTOPS[model] / 100, "source": "Table 3 (ListOps-Subtrees)"}
    if task == "pathfinder":
        v = PAPER_LRA_PATHFINDER.get(model, {}).get(side)
        return None if v is None else {"accuracy": v / 100, "source": "DSS paper Table 1 (LRA Pathfinder / Path-X)"}
    f1, acc = PAPER_PATHFINDER[model].get(side, (None, None))
    return None if f1 is None else {"macro_f1": f1 / 100, "macro_accuracy": acc / 100,
                                    "source": f"Table 3 (Pathfinder-Segmentation-{side})"}


def _verdict(test, paper, primary):
    """'consistent with the paper' when the test metric is within 0.1 of the paper's figure."""
    if test is None or paper is None or primary not in paper:
        return None
    gap = test[primary] - paper[primary]
    return {"metric": primary, "test": test[primary], "paper": paper[primary], "gap": gap,
            "consistent": abs(gap) <= 0.1}


MASK_PALETTE = [(0, 0, 0), (70, 130, 220), (250, 200, 40)]  # Pathfinder classes 0, 1, 2


def curves(history, primary, path, title):
    """Training loss per step, validation loss and metric per evaluation (x: evaluation steps)."""
    val = history["val"]
    every = f"at steps {val[0]['step']}..{val[-1]['step']}" if val else "none"
    train = history["train"]
    panels = [("train loss per step (y: 0.5-99.5th percentile; x: step)",
               [r["loss"] for r in train], np.arange(1, len(train) + 1))]
    if val:
        steps = [r["step"] for r in val]
        panels += [(f"val loss ({len(val)} evaluations {every}; x: step)", [r["loss"] for r in val], steps),
                   (f"val {primary} ({len(val)} evaluations {every}; x: step)", [r[primary] for r in val], steps)]
    return plot.lines(panels, path, title=title, robust=True)


def prediction_figure(labels, predictions, side, path, scale=2):
    """Pathfinder masks: gold labels in the top row, model predictions below, one column per sample."""
    gold = [plot.colorize(np.asarray(m).reshape(side, side), MASK_PALETTE) for m in labels]
    pred = [plot.colorize(np.asarray(m).reshape(side, side), MASK_PALETTE) for m in predictions]
    return plot.grid(gold + pred, path, cols=len(gold), scale=scale)


def _check_device(device):
    """One line when the device cannot be used (before anything is written)."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        why = "this PyTorch was built without CUDA" if torch.version.cuda is None else "no GPU is visible"
        raise LongsynthError(f"--device cuda: CUDA is not available ({why}, torch {torch.__version__}); use --device cpu")
    if dev.type not in ("cpu", "cuda"):
        raise LongsynthError(f"--device: must be cpu or cuda, got {device!r}")


def _join_process_group(device):
    """(device, rank, world, joined): join torchrun's process group when WORLD_SIZE > 1."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if dist.is_available() and dist.is_initialized():
        return device, dist.get_rank(), dist.get_world_size(), False
    if world <= 1:
        return device, 0, 1, False
    if torch.device(device).type == "cuda":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if local >= torch.cuda.device_count():
            raise LongsynthError(f"--device cuda: local rank {local} but {torch.cuda.device_count()} GPUs are visible")
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    dist.init_process_group("nccl" if torch.device(device).type == "cuda" else "gloo")
    return device, dist.get_rank(), dist.get_world_size(), True


def _check_counts(root, counts, B, world, scale):
    """One line when the splits cannot hold the batches: train, val and test need one global batch each."""
    if B % world:
        raise LongsynthError(f"--batch-size: the global batch {B} does not divide over {world} processes")
    have = {s: int(counts.get(s, 0)) for s in ("train", "val", "test")}
    short = [s for s, n in have.items() if n < B]
    if short:
        listing = ", ".join(f"{s} {n}" for s, n in have.items())
        raise LongsynthError(
            f"{root}: too few samples in {', '.join(short)} ({listing}); validate --scale {scale} uses batches of "
            f"{B} and needs at least {B} samples in each of train, val and test: regenerate with e.g. "
            f"--splits train={max(10 * B, 100)},val={B},test={B} (or pass a smaller --batch-size)")


def _peak_memory(dev):
    if dev.type == "cuda":
        return {"peak_gpu_bytes": int(torch.cuda.max_memory_allocated(dev))}
    import resource

    return {"peak_rss_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024}


def validate(target, model="dlr", scale="tiny", steps=None, device="cpu", report_dir=None, progress=True,
             batch_size=None, amp=None, compile=False, checkpoint_activations=False):  # noqa: A002
    """Train the preset model on ``target`` and write a certificate; returns the metrics dict.

    ``batch_size``: the global batch (default: the preset's); ``amp``: bf16 autocast
    (default: on for CUDA); ``compile``: torch.compile; ``checkpoint_activations``: recompute
    each block in the backward pass. Under torchrun every rank calls this; rank 0 writes.
    Failures before training (device, too few samples) are one-line LongsynthErrors and
    leave no report directory behind.
    """
    if model not in MODELS:
        raise LongsynthError(f"model: must be one of {MODELS}, got {model!r}")
    if scale not in SCALES:
        raise LongsynthError(f"scale: must be one of {SCALES}, got {scale!r}")
    if batch_size is not None and batch_size < 1:
        raise LongsynthError(f"--batch-size: must be >= 1, got {batch_size}")
    _check_device(device)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    is_dir = os.path.isdir(target)
    if is_dir:
        from longsynth.store import open as open_dataset

        ds = open_dataset(target)
        task, family = ds.task.name, ds.task.family
        with open(os.path.join(ds.root, "manifest.json"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        data_info = {"dataset": ds.root, "params": ds.manifest["params"], "seed": ds.seed,
                     "manifest_sha256": digest}
        default_dir = os.path.join(ds.root, "validation", f"{model}-{stamp}")
    else:
        t = registry.get(target)
        task, family, digest, ds = t.name, t.family, None, None
        default_dir = os.path.join("validation", f"{task}-{model}-{stamp}")
    if not is_dir and family != "atomic":
        raise LongsynthError(f"target: {task} is a {family} task; on-the-fly validation covers atomic tasks, "
                         "generate a dataset directory for it")
    device, rank, world, joined = _join_process_group(device)
    try:
        return _validate(target, model, scale, steps, device, report_dir or default_dir, progress, batch_size,
                         amp, compile, checkpoint_activations, stamp, is_dir, ds, task, family, digest,
                         data_info if is_dir else None, rank, world)
    finally:
        if joined:
            dist.destroy_process_group()


def _validate(target, model, scale, steps, device, report_dir, progress, batch_size, amp, compile_,
              checkpoint_activations, stamp, is_dir, ds, task, family, digest, data_info, rank, world):
    if world > 1:  # one report directory: rank 0's
        box = [report_dir]
        dist.broadcast_object_list(box, src=0)
        report_dir = box[0]
    side = None
    if family == "pathfinder" and ds.manifest["counts"].get("train", 0):  # the preset depends on the image side
        side = int(np.asarray(ds["train"].read(0, keys=["inputs"])["inputs"]).shape[-1])
    classic = family == "pathfinder" and task == "pathfinder"
    pre = preset("pathfinder-classic" if classic else family, model, scale, L=None if side is None else side * side)
    B = batch_size or pre.batch_size
    n_eval = pre.train["eval_batches"]
    if B % world:
        raise LongsynthError(f"--batch-size: the global batch {B} does not divide over {world} processes")
    if is_dir:
        _check_counts(ds.root, ds.manifest["counts"], B, world, scale)
        train_batch, val, test = stored_sources(ds.root, family, B, n_eval, rank=rank, world=world)
    else:
        fields = {f.name for f in dataclasses.fields(registry.get(task).config)}
        params = {k: v for k, v in pre.data.items() if k in fields}
        train_batch = OnTheFly(task, params, 0, B, "train", rank, world)
        val = _eval_list(OnTheFly(task, params, 0, B, "val", rank, world), n_eval)
        test = _eval_list(OnTheFly(task, params, 0, B, "test", rank, world), n_eval)
        data_info = {"task": task, "params": params, "seed": 0, "on_the_fly": True}
    data_info.update(batch_size=B, world_size=world, batch_size_per_rank=B // world)
    x0, y0 = train_batch(0)[:2]
    tkw = dict(pre.train)
    if steps is not None:
        tkw["steps"] = steps
        tkw["eval_every"] = min(tkw["eval_every"], steps)
    dev = torch.device(device)
    tkw["amp"] = dev.type == "cuda" if amp is None else bool(amp)
    tcfg = TrainConfig(seed=0, compile=compile_, checkpoint_activations=checkpoint_activations, **tkw)
    if family == "atomic":
        io = dict(d_input=x0.shape[-1], d_output=y0.shape[-1])
    elif family == "listops":
        import longsynth
        from longsynth.torch import PAD_ID

        vocab = longsynth.vocab(task, **ds.manifest["params"])
        # one embedding row more than the vocabulary: pad_collate pads with PAD_ID = len(vocab)
        io = dict(d_input=1, d_output=10, vocab_size=max(len(vocab), PAD_ID) + 1)
    elif classic:
        io = dict(d_input=x0.shape[-1], d_output=2)
    else:
        io = dict(d_input=x0.shape[-1], d_output=tcfg.num_classes)
    mcfg = ModelConfig(layer=model, **io, **pre.model)
    created = []
    if rank == 0:
        for d in (os.path.dirname(os.path.abspath(report_dir)), os.path.abspath(report_dir)):
            if not os.path.isdir(d):
                created.append(d)
        os.makedirs(report_dir, exist_ok=True)
    try:
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.time()
        res = train(mcfg, tcfg, train_batch, val, test, device=device, manifest_digest=digest,
                    checkpoint_dir=os.path.join(report_dir, "checkpoints"), progress=progress)
        wall = time.time() - t0
    except BaseException:
        for d in reversed(created):  # no empty report directory is left behind (checkpoints are kept)
            _remove_empty_dirs(d)
        raise
    primary = PRIMARY[tcfg.objective]
    paper = _paper_figure(family, task, model, side)
    L = int(x0.shape[1])
    out = {
        "task": task, "family": family, "target": os.path.abspath(target) if is_dir else target,
        "model": model, "scale": scale, "model_config": mcfg.to_dict(), "train_config": dataclasses.asdict(tcfg),
        "data": data_info, "steps": res["steps"], "wall_time_s": round(wall, 2),
        "world_size": world, "global_batch_size": B,
        "backend": dist.get_backend() if world > 1 else None,
        "device": str(dev), "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor() or platform.machine(),
        "torch_threads": torch.get_num_threads(), "torch_version": torch.__version__,
        "train_tokens_per_s": round(res["steps"] * B * L / wall, 1),  # wall includes evaluations
        **_peak_memory(dev),  # rank 0's
        "metrics_note": "top-level metrics are the paper's (per batch of batch_size, averaged over batches); "
                        "'exact' holds the same metrics from counts over the whole evaluation set",
        "primary_metric": primary, "final": res["final_val"], "best": res["val"], "best_step": res["best_step"],
        "test": res["test"], "paper": paper, "verdict": _verdict(res["test"], paper, primary),
        "created": stamp, "rank": rank,
    }
    if rank != 0:
        return out
    with open(os.path.join(report_dir, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)
    with open(os.path.join(report_dir, "history.json"), "w", encoding="utf-8") as f:
        json.dump(res["history"], f)
    curves(res["history"], primary, os.path.join(report_dir, "curves.png"), f"{task} / {model} / {scale}")
    if family == "pathfinder" and not classic:
        xv, yv = val()[0][:2]
        with torch.no_grad():
            res["model"].eval()
            pred = res["model"](xv[:4].to(dev)).argmax(-1).cpu()
        prediction_figure(list(yv[:4].numpy()), list(pred.numpy()), side, os.path.join(report_dir, "predictions.png"))
    out["report_dir"] = report_dir
    return out


def _remove_empty_dirs(root):
    """Remove ``root`` and the directories under it that hold no files."""
    for d, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        try:
            os.rmdir(d)
        except OSError:
            pass
