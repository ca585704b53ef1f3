"""One run of the harness: a model factory trained and tested under one protocol.

``run(job, out_dir)`` is what ``longsynth evaluate`` executes for every (task, lr, seed) and
what ``longsynth validate`` executes once with the task's reference model. Its steps:

1. ``prepare``: the protocol, its data (on the fly, or a stored dataset), the ModelSpec;
2. ``check_model`` (checks.py): the factory's module before training - output shape,
   finite values, causality where the protocol is causal - each refusal one line;
3. ``trainer.train`` (resuming from ``out_dir/checkpoints/last.pt`` when it exists);
4. ``certificate``: metrics.json (the run's record), history.json, curves.png and, for
   Pathfinder-Segmentation, predictions.png in ``out_dir`` (models_ref/reports/curves.py), and files.json,
   the record of the run's files (files.py).

A job is plain data (``Job``), so it crosses process and Dask boundaries unchanged.
"""
from __future__ import annotations

import dataclasses
import os
import platform
import time

import numpy as np
import torch
import torch.distributed as dist

from longsynth import plot, registry
from longsynth.errors import LongsynthError
from longsynth.escape import visible
from longsynth.outdir import Folder
from longsynth.models_ref.models import factories
from longsynth.models_ref.evaluation.checks import build, check_model, graph_bytes
from longsynth.models_ref.reports.curves import curves, prediction_figure
from longsynth.models_ref.evaluation.baselines import dfa_levels
from longsynth.models_ref.evaluation.baselines import levels as content_free_levels
from longsynth.models_ref.evaluation.files import record_files
from longsynth.models_ref.evaluation.protocol import (data_bytes, manifest_digest, on_the_fly_sources,
                                                      protocol_for_dataset, resolve, longest_test_input,
                                                      stored_sources, test_set_sources)
from longsynth.models_ref.protocols.registry import (PAPER_SOURCE, TOLERANCE, own_figures, paper_figures, paper_split)
from longsynth.models_ref.reports.records import display_name
from longsynth.models_ref.training.trainer import train
from longsynth.models_ref.training.config import primary_metric
from longsynth.models_ref.training.eval_pass import finite
from longsynth.models_ref.training.write_errors import write_failed
from longsynth.spec import ModelSpec


@dataclasses.dataclass(frozen=True)
class Job:
    model: str  # a built-in name, path/to/file.py:function or package.module:function
    protocol: str  # "atomic", "listops-subtrees", ...
    task: str
    scale: str = "tiny"
    lr: float | None = None  # None: the model's preset lr, else the protocol's
    seed: int = 0  # model initialisation and data order
    steps: int | None = None  # None: the protocol's
    data: str | None = None  # stored dataset directory (stored protocols)
    device: str = "cpu"
    batch_size: int | None = None  # the global batch (None: the protocol's)
    amp: bool | None = None  # bf16 autocast (None: on for CUDA)
    compile: bool = False
    checkpoint_activations: bool = False
    checkpoint_every: int | None = None
    permute_targets: bool = False  # a negative control: targets shuffled across the samples of each batch
    weight_decay: float | None = None  # None: the protocol's
    width: int | None = None  # a point of the protocol's width grid (spec.d_model); None: the model's own
    depth: int | None = None  # a point of its depth grid (spec.n_layers); None: the model's own
    options: dict | None = None  # a point of the protocol's grid of a built-in's options (its arch); None: its preset

    def to_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Prepared:
    """What a run trains on: the protocol, the batch sources, the spec and the data's record."""

    protocol: object
    batch_size: int
    sources: tuple  # (train_batch, val_batches, test_batches)
    spec: ModelSpec
    data_info: dict
    digest: str | None
    side: int | None  # Pathfinder image side


def _spec(protocol, x, y, vocab_size=None, width=None, depth=None):
    """The ModelSpec of a protocol from its first batch (token tasks: one output per token id)."""
    T = int(x.shape[1])
    classes = vocab_size if registry.get(protocol.task).family == "tokens" else \
        10 if protocol.task.startswith("listops") else 2
    d_output = {"regression": int(y.shape[-1]), "segmentation": 3, "tokens": classes}[protocol.objective]
    target_len = int(y.shape[1]) if protocol.readout == "rightmost" else (1 if protocol.readout == "mean" else T)
    tokens = vocab_size is not None
    return ModelSpec(task=protocol.task, protocol=protocol.name, scale=protocol.scale, objective=protocol.objective,
                     readout=protocol.readout, d_output=d_output, seq_len=T, target_len=target_len,
                     causal=protocol.causal, d_input=None if tokens else int(x.shape[-1]), vocab_size=vocab_size,
                     d_model=width, n_layers=depth)


def _check_counts(root, counts, B, world, scale):
    """One line when the splits cannot hold the batches: train, val and test need one global batch each."""
    have = {s: int(counts.get(s, 0)) for s in ("train", "val", "test")}
    short = [s for s, n in have.items() if n < B]
    if short:
        listing = ", ".join(f"{s} {n}" for s, n in have.items())
        raise LongsynthError(
            f"{root}: too few samples in {', '.join(short)} ({listing}); --scale {scale} uses batches of "
            f"{B} and needs at least {B} samples in each of train, val and test: regenerate with e.g. "
            f"--splits train={max(10 * B, 100)},val={B},test={B} (or pass a smaller --batch-size)")


def _check_data_memory(proto, B, rank, world):
    """One line, before any batch is drawn, when the batches a run of global batch ``B`` holds at once
    (protocol.data_bytes) exceed the memory available now (longsynth.api.memory_available), naming the
    largest batch that fits."""
    from longsynth.api import memory_available
    from longsynth.store.manifest import human

    avail = memory_available()
    if avail is None:
        return
    per_sample, per_batch, fixed = data_bytes(proto, B, rank, world)
    held = B // world * per_batch + fixed
    if per_sample * held <= avail:
        return
    fits = max(0, avail // per_sample - fixed) // per_batch * world  # the largest global batch that fits
    hint = f"the data of a --batch-size of at most {fits:,} fits (training needs more)" if fits else "no batch fits"
    raise LongsynthError(f"--batch-size: batches of {B:,} samples of {proto.task} need about "
                         f"{human(per_sample * held)} of memory for the data alone ({held:,} samples of "
                         f"{human(per_sample)} held at once: the validation and test batches, the training batch and "
                         f"its source arrays), {human(avail)} available now; {hint}")


GRAPH_FACTOR = 2  # a training step's peak over its saved tensors: measured 1.9 for DLR on cumsum, 0.8 for S6


def _check_graph_memory(module, x, B, world, task, model, checkpointed=False):
    """One line, before training, when a training step on batches of global batch ``B`` would hold more than
    the memory available now: GRAPH_FACTOR times the tensors the module's autograd graph saves, measured on
    one sample, and on two only where one sample's graph times the batch (its fixed part counted per sample)
    would not fit (checks.graph_bytes: a forward and backward of 16,384 positions of local attention took
    5.4 s for the two). Measured, validate cumsum (DLR) peaked at 4.0 GB for a batch of 2,048 and 23.9 GB for
    16,384; the data check (``_check_data_memory``) does not see them. ``checkpointed``: training recomputes each
    block (--checkpoint-activations; the module's own flag set as training sets it, which graph_bytes measures)."""
    from longsynth.api import memory_available
    from longsynth.store.manifest import human

    avail = memory_available()
    if avail is None:
        return
    try:
        per_sample, fixed = graph_bytes(module, x, settled=lambda one: GRAPH_FACTOR * one * (B // world) <= avail)
    except Exception:  # a model whose training forward fails on one sample: training itself says how, in one line
        return
    need = GRAPH_FACTOR * (per_sample * (B // world) + fixed)
    if need <= avail:
        return
    fits = max(0, avail // GRAPH_FACTOR - fixed) // max(1, per_sample) * world
    hint = f"a --batch-size of at most {fits:,} fits" if fits else "no batch fits"
    raise LongsynthError(f"--batch-size: training {os.path.basename(model)} on batches of {B:,} samples of {task} "
                         f"needs about {human(need)} of memory (its autograd graph keeps {human(per_sample)} a sample; "
                         f"a step holds about {GRAPH_FACTOR}x that{', blocks recomputed' if checkpointed else ''}), "
                         f"{human(avail)} available now; {hint}"
                         f"{'' if checkpointed else ', or --checkpoint-activations keeps less'}")


def prepare(job, rank=0, world=1, fresh=False):
    """The protocol, data and spec of a job (one line for data that cannot serve it); ``fresh``:
    fresh training samples where the protocol has a fixed training set (the dry run's timing)."""
    from longsynth.store import open as open_dataset

    side = None
    if job.data is not None:
        ds = open_dataset(job.data)
        proto = resolve(protocol_for_dataset(ds), job.scale, task=ds.task.name)
        if ds.task.name != proto.task:
            raise LongsynthError(f"{job.data}: a {ds.task.name} dataset, but {job.protocol} needs {proto.task}")
        if ds.task.family == "pathfinder" and ds.manifest["counts"].get("train", 0):
            side = int(np.asarray(ds["train"].read(0, keys=["inputs"])["inputs"]).shape[-1])
    else:
        proto = resolve(job.protocol, job.scale, task=job.task)
        if proto.stored:
            raise LongsynthError(f"suite: {job.protocol} trains on a stored dataset; give its directory")
    B = job.batch_size or proto.batch_size
    if B % world:
        raise LongsynthError(f"--batch-size: the global batch {B} does not divide over {world} processes")
    vocab_size, digest = None, None
    if job.data is not None:
        _check_counts(ds.root, ds.manifest["counts"], B, world, job.scale)
        sources = stored_sources(ds.root, B, proto.eval_batches, seed=job.seed, rank=rank, world=world)
        digest = manifest_digest(ds.root)
        data_info = {"dataset": ds.root, "params": ds.manifest["params"], "seed": ds.seed, "manifest_sha256": digest}
        if ds.task.family == "listops":
            from longsynth.api import vocab
            from longsynth.torch import PAD_ID

            # one embedding row more than the vocabulary: pad_collate pads with PAD_ID = len(vocab)
            vocab_size = max(len(vocab(ds.task.name, **ds.manifest["params"])), PAD_ID) + 1
    else:
        if not fresh:  # the dry run draws one batch at a time
            _check_data_memory(proto, B, rank, world)
        *sources, params = on_the_fly_sources(proto, B, rank=rank, world=world, fresh=fresh)
        data_info = {"task": proto.task, "params": params, "seed": 0, "on_the_fly": True,
                     "train_samples": proto.train_samples}
        task = registry.get(proto.task)
        if task.family == "tokens":
            cfg = task.make_config(**params)
            vocab_size = int(task.vocab_size(cfg))
            data_info["params"] = dataclasses.asdict(cfg)  # resolved: a preset's length spelled out
    data_info.update(batch_size=B, world_size=world, batch_size_per_rank=B // world)
    if job.permute_targets:
        sources = permuted(sources)
        data_info["permuted_targets"] = True
    x0, y0 = sources[0](0)[:2]
    spec = _spec(proto, x0, y0, vocab_size, job.width, job.depth)
    longest = longest_test_input(proto) if job.data is None else None
    spec = dataclasses.replace(spec, max_seq_len=max(spec.seq_len, longest or 0))
    return Prepared(proto, B, tuple(sources), spec, data_info, digest, side)


def _permute(batch, seed):
    """The batch with its targets moved to other samples (a seeded shuffle of the batch)."""
    x, y, *rest = batch
    perm = torch.randperm(y.shape[0], generator=torch.Generator().manual_seed(seed))  # [B]
    return (x, y[perm], *rest)


def permuted(sources):
    """(train, val, test) whose targets are permuted across the samples of each batch: no
    input predicts its target any more, so a certificate trained on them must fail."""
    train_batch, val, test = sources
    val_p = [_permute(b, 1_000_000 + i) for i, b in enumerate(val())]
    test_p = [_permute(b, 2_000_000 + i) for i, b in enumerate(test())]
    return (lambda step: _permute(train_batch(step), step)), (lambda: val_p), (lambda: test_p)


def _peak_memory(dev):
    if dev.type == "cuda":
        return {"peak_gpu_bytes": int(torch.cuda.max_memory_allocated(dev))}
    import resource

    return {"peak_rss_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024}


def resolve_lr(job, factory, spec, protocol):
    """The job's lr, else the built-in model's preset lr, else the protocol's default."""
    if job.lr is not None:
        return job.lr
    return factory.lr(spec) if isinstance(factory, factories.Reference) else protocol.lr


def verdict(res, paper, primary, split):
    """'consistent with the paper' when our metric on the paper's split (registry.paper_split: the
    best validation evaluation, or the test set) is within TOLERANCE of the paper's figure."""
    ours = res["val" if split == "val" else "test"]
    if ours is None or paper is None or primary not in paper or res["test"] is None:
        return None
    gap = ours[primary] - paper[primary]
    return {"metric": primary, "split": split, "value": ours[primary], "paper": paper[primary], "gap": gap,
            "consistent": abs(gap) <= TOLERANCE}


def run(job, out_dir, *, factory=None, progress=False, resume=False, rank=0, world=1, notify=None):
    """Train and test ``job``; returns the certificate dict (written as out_dir/metrics.json by rank 0).

    ``factory``: the model factory when the caller holds it (the Python API); by default
    ``factories.load(job.model)``. ``resume``: continue from out_dir/checkpoints/last.pt
    when it exists.
    """
    if factory is None:
        factory, identity = factories.load(job.model)
    else:
        identity = {"model": job.model, "sha256": None}
    if job.options:
        factory = factories.with_options(factory, job.options)
    p = prepare(job, rank, world)
    proto, spec = p.protocol, p.spec
    lr = resolve_lr(job, factory, spec, proto)
    dev = torch.device(job.device)
    tcfg = proto.train_config(lr=lr, seed=job.seed, steps=job.steps, amp=dev.type == "cuda" if job.amp is None
                              else bool(job.amp), compile=job.compile,
                              checkpoint_activations=job.checkpoint_activations, checkpoint_every=job.checkpoint_every,
                              weight_decay=job.weight_decay)
    torch.manual_seed(tcfg.seed)
    module, x2 = build(factory, spec), p.sources[0](0)[0][:2].to(dev)
    causal = check_model(module, factories.checked_spec(factory, spec), x2, whole_row=proto.whole_row)
    if dev.type == "cpu":  # the graph lives in this process's memory; measured as training will run it
        if hasattr(module, "checkpoint_activations"):  # the reference Model's option, as the trainer sets it
            module.checkpoint_activations = tcfg.checkpoint_activations
        _check_graph_memory(module, x2, p.batch_size, world, proto.task, job.model, tcfg.checkpoint_activations)
    del module
    if isinstance(factory, factories.Reference):
        model_config = factory.config(spec).to_dict()  # the reference model's config, as validate always recorded
    else:
        model_config = {**identity, "spec": spec.to_dict()}
    out_dir = Folder.of(out_dir)  # every file of the run is written inside it, never through a link
    ckdir = out_dir.sub("checkpoints")
    resume = ckdir.join("last.pt") if resume and ckdir.exists("last.pt") else None
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.time()
    # the run's name on its progress bar (apart under --jobs): a file's name spelled out, never a terminal escape
    desc = f"train {visible(os.path.basename(job.model))} on {proto.task} lr {lr:g} seed {job.seed}"
    res = train(lambda: factory(spec), tcfg, *p.sources, device=job.device, manifest_digest=p.digest,
                checkpoint_dir=ckdir, resume=resume, progress=progress and desc,
                identity=model_config, notify=notify if rank == 0 else None)
    wall = time.time() - t0
    test_sets, set_batches = _test_sets(res, proto, p.batch_size, tcfg, job.device, rank, world)
    if test_sets is not None and not finite(test_sets):  # a test length the model overflows on
        label = next(k for k, v in test_sets.items() if not finite(v))
        res = {**res, "test": None, "diverged": {"step": res["steps"], "where": f"test at length {label}"}}
        test_sets = None
    primary = primary_metric(tcfg)
    # what the report, the progress line and a certificate read: the test split's metrics, or on a protocol that
    # scores its test sets (the Chomsky hierarchy's lengths beyond training) their mean
    score = mean_of(test_sets) if proto.score_test_sets and test_sets else res["test"]
    baselines = content_free_levels(set_batches if score is not res["test"] else {"test": p.sources[2]()}) \
        if primary == "accuracy" and res["test"] is not None else None
    figures = paper_figures(proto.name, proto.task)
    own, column = own_figures(proto.name, proto.scale, job.model)  # the paper's column a built-in's preset matches
    paper = paper_figures(own, proto.task).get(column)
    if paper is not None:
        paper = {**paper, "source": PAPER_SOURCE[own]}
    out = {
        "task": proto.task, "family": registry.get(proto.task).family, "protocol": proto.name,
        "protocol_source": proto.source,
        "target": os.path.basename(os.path.normpath(job.data)) if job.data else proto.task,
        "model": identity["model"], "model_identity": identity, "scale": job.scale,
        "causal": causal,  # whether the check saw the model causal (False: it read the whole row, as allowed)
        "parameters": sum(t.numel() for t in res["model"].parameters()),
        "lr": lr, "weight_decay": job.weight_decay, "width": job.width, "depth": job.depth, "options": job.options,
        "seed": job.seed, "spec": spec.to_dict(),
        "model_config": model_config, "train_config": dataclasses.asdict(tcfg),
        "schedule": {"steps": tcfg.steps, "warmup_steps": tcfg.warmup_steps, "eval_every": tcfg.eval_every,
                     "schedule": tcfg.schedule, "protocol": {"steps": proto.steps, "warmup_steps": proto.warmup_steps,
                                                             "eval_every": proto.eval_every}},
        "data": p.data_info, "steps": res["steps"], "wall_time_s": round(wall, 2),
        "world_size": world, "global_batch_size": p.batch_size,
        "backend": dist.get_backend() if world > 1 else None, "device": str(dev),
        "device_name": (torch.cuda.get_device_name(dev) if dev.type == "cuda"
                        else platform.processor() or platform.machine()),
        "torch_threads": torch.get_num_threads(), "torch_version": torch.__version__,
        "train_tokens_per_s": round(res["steps"] * p.batch_size * spec.seq_len / wall, 1),  # wall includes evaluations
        **_peak_memory(dev),  # rank 0's
        "metrics_note": "top-level metrics are the paper's (per batch of batch_size, averaged over batches); "
                        "'exact' holds the same metrics from counts over the whole evaluation set",
        "primary_metric": primary, "final": res["final_val"], "best": res["val"], "best_step": res["best_step"],
        "diverged": res["diverged"],  # {"step", "where"} of a NaN or infinity: the run stopped there
        "test": res["test"], "test_sets": test_sets, "test_set_params": proto.test_sets, "breakdown": proto.breakdown,
        "score": score, "scored_on": "test sets" if score is not res["test"] else "test",
        "baselines": baselines,  # what predictors that never read a row's content score on the same rows
        # RegBench: what two never-trained predictors (the authors' in-context 3-gram, a random letter) score there
        "dfa_levels": dfa_levels(p.sources[2](), spec.vocab_size)
        if primary == "dfa_accuracy" and res["test"] is not None else None,
        "paper": paper, "paper_columns": figures,
        "verdict": verdict({**res, "test": score}, paper, primary, paper_split(own)),
        "created": time.strftime("%Y%m%d-%H%M%S"), "rank": rank,
    }
    if rank == 0:
        _write_certificate(out, res, p, out_dir)
    return out


def mean_of(test_sets):
    """{metric: the mean over the test sets} of the metrics every set has (the Chomsky hierarchy's score:
    the mean accuracy over the test lengths, experiments/example.py 133-135 of the authors' code)."""
    sets = list(test_sets.values())
    keys = [k for k, v in sets[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            and all(isinstance(s.get(k), (int, float)) for s in sets)]
    return {k: sum(s[k] for s in sets) / len(sets) for k in keys}


def _test_sets(res, proto, batch_size, tcfg, device, rank, world):
    """(the best model on each of the protocol's test sets, {label: their batches}); (None, None) without any,
    or before the last step."""
    if not proto.test_sets or res["test"] is None:
        return None, None
    from longsynth.models_ref.training.eval_pass import evaluate

    sources = test_set_sources(proto, batch_size, rank, world)
    return ({label: evaluate(res["model"], batches(), tcfg, device) for label, batches in sources.items()},
            {label: batches() for label, batches in sources.items()})


def _write_certificate(out, res, p, out_dir):
    """metrics.json, history.json, curves.png (and predictions.png) into the Folder ``out_dir``;
    a failed write (a full disk) is one line that says how to go on."""
    try:
        _write_files(out, res, p, out_dir)
    except OSError as e:
        raise write_failed(out_dir.path, e, "the run's certificate") from None


def _write_files(out, res, p, out_dir):
    out_dir.write_json("history.json", res["history"], indent=None)
    out_dir.save_png("curves.png", curves(res["history"], out["primary_metric"], None,
                                          f"{out['task']} / {display_name(out['model_identity'])} / {out['scale']}",
                                          out.get("test_sets")),
                      plot.DPI)
    if out["task"] == "pathfinder-seg":
        xv, yv = p.sources[1]()[0][:2]
        model = res["model"]
        with torch.no_grad():
            model.eval()
            pred = model(xv[:4].to(next(model.parameters()).device)).argmax(-1).cpu()
        images = list(xv[:4, :, 0].float().numpy())  # channel 0: the pixels (positional channels follow)
        out_dir.save_png("predictions.png", prediction_figure(
            images, list(yv[:4].numpy()), list(pred.numpy()), p.side, None,
            title=f"{out['task']} {p.side} px: {out['model']} on validation images"), plot.DPI)
    out_dir.write_json("metrics.json", out, indent=2)  # a run is finished once its certificate is there,
    record_files(out_dir)  # and the record of its files beside it
