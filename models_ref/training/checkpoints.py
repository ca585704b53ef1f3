"""Checkpoints of a training run: saved (last.pt with the optimizer and RNG state, best.pt the
best validation weights), checked field by field before a resume loads anything, restored, and
loaded as tensors and plain data only (docs/format.md, "Trust").
"""
from __future__ import annotations

import dataclasses
import math
import os
import pickle
import re
from typing import Any, Optional

import numpy as np
import torch
from pydantic import ConfigDict, Field, JsonValue, model_validator

from longsynth import fields, safe
from longsynth.errors import LongsynthError
from longsynth.outdir import Folder
from longsynth.models_ref.models.stack import Model, ModelConfig
from longsynth.models_ref.training.config import primary_metric
from longsynth.models_ref.training.eval_pass import finite
from longsynth.models_ref.training.write_errors import write_failed


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


class CheckpointError(LongsynthError):
    """A checkpoint that cannot resume this run: unreadable, another run's, or damaged or
    edited (a wrong shape, step, history, RNG or optimizer state). One line naming the file;
    ``evaluate`` then starts the run over or stops (``--edited``, docs/evaluate.md)."""


Plain = JsonValue  # numbers, text, booleans, null, and lists and str-keyed objects of them: what a report reads


class History(fields.Record):
    """A run's records so far: one a training step, one a validation."""

    train: list[dict[str, Plain]]
    val: list[dict[str, Plain]]


class Checkpoint(fields.Record):
    """last.pt (save_checkpoint): what a resume reads, each field checked before anything is loaded.
    Validated with the run's own ``identity``, ``manifest_digest`` and ``cfg`` as context, against
    which ``_this_run`` checks it."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, protected_namespaces=())
    config: dict[str, Any] = Field(alias="model_config")  # compared with the run's own (a config keeps tuples)
    train_config: dict[str, Any]  # compared with the run's own
    manifest_digest: Any  # compared with the run's own
    step: fields.Int(0)
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    rng: Any
    history: History
    best: Optional[dict[str, Plain]]

    @model_validator(mode="after")
    def _this_run(self, info):
        run = info.context
        cfg = run["cfg"]
        if self.config != run["identity"]:
            raise fields.Bad("model_config", "holds a different model config")
        if self.manifest_digest != run["manifest_digest"]:
            raise fields.Bad("manifest_digest", f"was trained on data with manifest digest "
                                                f"{str(self.manifest_digest)[:80]}")
        if self.train_config != dataclasses.asdict(cfg):
            raise fields.Bad("train_config", "was trained with another configuration (steps, learning rate, "
                                             "schedule or seed)")
        if self.step > cfg.steps:
            raise fields.Bad("step", f"{self.step:,} is not a step of this run (0 to {cfg.steps:,})")
        if len(self.history.train) != self.step:
            raise fields.Bad("history.train", f"{len(self.history.train):,} records, where a run at step "
                                              f"{self.step:,} has one training record per step")
        for i, r in enumerate(self.history.train):
            if not isinstance(r.get("loss"), float) or not math.isfinite(r["loss"]):
                raise fields.Bad(f"history.train[{i}].loss", "not a finite number")
        primary = primary_metric(cfg)
        evals = [(f"history.val[{i}]", r) for i, r in enumerate(self.history.val)]
        for where, r in evals + ([] if self.best is None else [("best", self.best)]):
            step = r.get("step")
            if (not finite(r) or not isinstance(r.get(primary), float) or isinstance(step, bool)
                    or not isinstance(step, int) or not 0 < step <= self.step):
                raise fields.Bad(where, f"is not an evaluation of this run (with a finite {primary} at a step up to "
                                        f"{self.step:,})")
        return self


class Weights(fields.Record):
    """What load_model reads of any checkpoint: the model's config (plain data) and its named tensors."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, protected_namespaces=())
    config: dict[str, Any] = Field(alias="model_config")  # read by the config's own from_dict (a tuple, a tape's
    # mlp sizes, is not JSON but is what torch.load gives back)
    model: dict[str, torch.Tensor]


def _check_checkpoint(ck, path, identity, manifest_digest, cfg):
    """Refuse, in one line (CheckpointError), a checkpoint that is not this run's at a step
    it could have reached (``Checkpoint``): every field read on resume is checked before anything is loaded."""
    context = {"identity": identity, "manifest_digest": manifest_digest, "cfg": cfg}
    fields.parse(Checkpoint, ck, f"resume: {path}", "checkpoint", error=CheckpointError, context=context)


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
    fields.parse(Weights, ck, f"resume: {path}: not a best-weights checkpoint", "checkpoint", error=CheckpointError)
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


def _check_records(f, path):
    """torch.save writes a zip archive of stored (uncompressed) records: each record's size on disk is its
    size in memory. A compressed record could inflate a small file to gigabytes before any check, so it is
    refused, as is a file that is no such archive."""
    import zipfile

    try:
        records = zipfile.ZipFile(f).infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        raise CheckpointError(f"{path}: not a readable checkpoint (torch's checkpoints are zip archives)") from None
    for r in records:
        if r.compress_type != zipfile.ZIP_STORED or r.file_size != r.compress_size:
            raise CheckpointError(f"{path}: not loaded: its record {r.filename[:80]!r} is compressed "
                                  f"({r.compress_size:,} bytes that inflate to {r.file_size:,}); torch stores them "
                                  f"as they are")


def load_checkpoint(path, map_location="cpu"):
    """A checkpoint's dict, loaded with ``weights_only=True``: tensors and plain data only, so
    a checkpoint that travelled with a dataset folder cannot run code (docs/format.md,
    "Trust"), from a regular file opened without following a link. LongsynthError (one
    line) for one that holds anything else."""
    try:
        with os.fdopen(safe.open_regular(os.fspath(path)), "rb") as f:
            _check_records(f, path)
            f.seek(0)
            return torch.load(f, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"(?:[Uu]nsupported global:? GLOBAL|unsupported GLOBAL) ([\w.]+)", str(e))
        what = f"it holds {found.group(1)}" if found else "it holds more than tensors and plain data"
        raise CheckpointError(f"{path}: not loaded: {what}, and loading it could run code") from None
    except (OSError, RuntimeError, EOFError) as e:  # missing, truncated or not a checkpoint
        raise CheckpointError(f"{path}: not a readable checkpoint ({(str(e).splitlines() or [''])[0][:200]})") from None


LAYER_COUNTS = ("n_layers", "num_layers", "ff_layers", "n_tapes")  # config fields that count modules built one by
# one (stack, zoology, seq-icl, Chomsky's transformer under arch, the tape RNN's heads, the stack's feed-forwards)


def _layer_counts(config):
    """(dotted field, count) of every LAYER_COUNTS field in a config, at any depth (Chomsky's sit under arch);
    walked with a stack, not recursion, so a deeply nested config is no RecursionError."""
    todo = [("", config)]
    while todo:
        where, node = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            field = f"{where}.{key}" if where else str(key)
            if key in LAYER_COUNTS and isinstance(value, int) and not isinstance(value, bool):
                yield field[:200], value
            elif isinstance(value, (dict, list)):
                todo.append((field[:200], value))


def _stored_numbers(weights, path):
    """The numbers a checkpoint's weights hold in what it stores: each storage counted once. A tensor whose storage
    is smaller than its shape needs (an expanded, stride-0 view of one number; overlapping strides) is refused:
    its numel() counts numbers the file does not hold."""
    storages = {}
    for key, v in weights.items():
        if v.layout != torch.strided:  # a sparse (COO, CSR, ...) tensor has no one storage to count: no weight of ours
            raise CheckpointError(f"{path}: its weight {key[:80]!r} is {str(v.layout).removeprefix('torch.')}, "
                                  f"not a dense tensor")
        size, st = v.element_size(), v.untyped_storage()
        room = st.nbytes() - v.storage_offset() * size
        if v.numel() * size > room:
            raise CheckpointError(f"{path}: its weight {key[:80]!r} has shape {tuple(v.shape)} ({v.numel():,} "
                                  f"numbers) but stores {max(room, 0) // size:,} (an expanded or overlapping view)")
        ident = (str(st.device), st.data_ptr(), st.nbytes())
        storages[ident] = min(storages.get(ident, size), size)
    return sum(nbytes // size for (_, _, nbytes), size in storages.items())


def _model_of(config):
    """The model a checkpoint's ``model_config`` (plain data) rebuilds: the reference stack or a built-in outside it."""
    kind = config.get("layer")
    if kind == "zoology-attention":  # the built-ins outside the stack
        from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig

        return ZoologyAttention(ZoologyConfig.from_dict(config))
    if kind == "seq-icl-lstm":
        from longsynth.models_ref.models.seq_icl import SeqIclLSTM, SeqIclLSTMConfig

        return SeqIclLSTM(SeqIclLSTMConfig.from_dict(config))
    if kind == "chomsky":
        from longsynth.models_ref.models.chomsky import ChomskyConfig, ChomskyModel

        return ChomskyModel(ChomskyConfig.from_dict(config))
    return Model(ModelConfig.from_dict(config))


def load_model(path, map_location="cpu"):
    """(Model, checkpoint dict) of a reference model, rebuilt from the config stored in its checkpoint.
    The checkpoint is untrusted (docs/format.md, "Trust"): its structure is checked, and the model its config
    implies is built without memory first (on torch's meta device) and refused where it would hold more
    numbers than the weights stored beside it, before anything is allocated; one line otherwise."""
    ck = load_checkpoint(path, map_location)
    parsed = fields.parse(Weights, ck, f"{path}: not a model checkpoint", "checkpoint", error=CheckpointError)
    config, weights = parsed.config, parsed.model
    stored = sum(v.numel() for v in weights.values())
    held = _stored_numbers(weights, path)
    for name, layers in _layer_counts(config):  # a layer holds a tensor at least: the build's time is bounded first
        if layers > len(weights):
            raise CheckpointError(f"{path}: its model_config has {name} {layers:,}, more than its {len(weights):,} "
                                  f"weight tensors")
    try:
        with torch.device("meta"):
            shape = _model_of(config)
        implied = sum(v.numel() for v in shape.state_dict().values())
        own = sum({id(v): v.numel() for v in shape.state_dict(keep_vars=True).values()}.values())  # tied: once
    except (LongsynthError, TypeError, ValueError, KeyError, AttributeError) as e:
        raise CheckpointError(f"{path}: its model_config does not build a model ({_first_line(e)})") from None
    except (RuntimeError, NotImplementedError):  # an init the meta device cannot run: the bound above holds
        implied = own = None
    if implied is not None and implied != stored:
        raise CheckpointError(f"{path}: its model_config implies {implied:,} numbers, its weights hold {stored:,}")
    if implied is not None and own > held:
        raise CheckpointError(f"{path}: its model_config implies {own:,} numbers, its weights store {held:,} (views "
                              f"sharing their storage)")
    model = _model_of(config)
    try:
        model.load_state_dict(weights)
    except Exception as e:  # a wrong shape, a missing or extra key
        raise CheckpointError(f"{path}: its weights do not fit its model_config ({_first_line(e)})") from None
    return model, ck
