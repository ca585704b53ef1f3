"""The task protocol: what a generator module provides to longsynth.

A task module in ``generators/`` defines a frozen config dataclass whose fields are
exactly the generator's parameters (each declared with :func:`param`), Numba kernels,
and one :class:`Task` instance that ties them together. The API (``longsynth.sample``,
``batch``), the shard writer, the CLI and the loaders only talk to :class:`Task`.

A sample is a dict ``{key: np.ndarray}`` with at least ``inputs`` and ``targets``.
Each key has a :class:`KeySpec`: fixed per-sample shape, or ragged (a variable-length
leading axis; the block form is :class:`Ragged`).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np

from longsynth.errors import LongsynthError


def param(default, help, *, lo=None, hi=None, choices=None, sets=()):  # noqa: A002 (the option's --help text)
    """A config field with its CLI help and its allowed range (inclusive); ``sets``: the fields it sets
    to its own value when given (a Chomsky task's length sets min_length and max_length), which
    ``make_config`` refuses beside it unless they agree."""
    return field(default=default, metadata={"help": help, "lo": lo, "hi": hi, "choices": choices, "sets": sets})


def _allowed(f):
    m = f.metadata
    if m.get("choices"):
        return "one of " + ", ".join(str(c) for c in m["choices"])
    lo, hi = m.get("lo"), m.get("hi")
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return f"of type {f.type}"


def field_kind(f):
    """'int', 'float', 'bool' or 'str' for a config field; ' | None' kept when optional.

    Fields are annotated ``int``, ``float``, ``bool``, ``str`` or ``X | None`` (None means
    "derived", e.g. from a preset, by the task's ``resolve``).
    """
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", None) or str(f.type)
    base = next((k for k in ("bool", "float", "int", "str") if k in kind), "str")
    return base + (" | None" if "None" in kind else "")


_KIND_TEXT = {"int": "an integer", "float": "a finite number", "bool": "true or false", "str": "a string"}


def _value_text(v):
    """A value as a type error names it: the string '64', the float 64.5, the bool True."""
    shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
    if isinstance(v, str):
        return f"the string {shown}"
    if isinstance(v, (bool, np.bool_)):
        return f"the bool {v}"
    if isinstance(v, (float, np.floating)):
        return f"the float {shown}"
    if v is None:
        return "None"
    return f"{shown} of type {type(v).__name__}"


def check_fields(cfg):
    """Type and range checks from the field metadata; LongsynthError naming the field. A value
    of the wrong type says so ("must be an integer in [4, 1048576], got the string '64'"),
    apart from one of the right type outside the range ("must be in [4, 1048576], got 2")."""
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        kind = field_kind(f)
        if v is None and "None" in kind:
            continue
        if kind.startswith("int"):
            ok = isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        elif kind.startswith("float"):
            ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            ok = ok and np.isfinite(v)
        elif kind.startswith("bool"):
            ok = isinstance(v, (bool, np.bool_))
        else:
            ok = isinstance(v, str)
        m = f.metadata
        if not ok:
            base = kind.split(" ")[0]
            allowed = _allowed(f)
            within = ("" if allowed.startswith("of type") else f", {allowed}" if allowed.startswith("one of")
                      else f" {allowed}")
            if base == "float" and isinstance(v, (float, np.floating)):  # a float, but NaN or infinite
                raise LongsynthError(f"{f.name}: must be a finite number{within}, got {v!r}")
            raise LongsynthError(f"{f.name}: must be {_KIND_TEXT[base]}{within}, got {_value_text(v)}")
        if m.get("choices") is not None:
            ok = v in m["choices"]
        if ok and m.get("lo") is not None:
            ok = v >= m["lo"]
        if ok and m.get("hi") is not None:
            ok = v <= m["hi"]
        if not ok:
            raise LongsynthError(f"{f.name}: must be {_allowed(f)}, got {v!r}")


class Ragged(NamedTuple):
    """Variable-length values of ``count`` samples: sample i is values[offsets[i]:offsets[i+1]]."""

    values: np.ndarray
    offsets: np.ndarray  # int64 [count + 1], offsets[0] == 0


@dataclass(frozen=True)
class KeySpec:
    dtype: str  # numpy dtype name
    shape: tuple  # per-sample shape; for ragged keys the shape after the variable axis
    ragged: bool = False
    doc: str = ""
    bounds: tuple | None = None  # (lo, hi): every value lies in lo..hi (class labels, token ids; longsynth.values)
    ignore: int | None = None  # a value allowed beside the bounds (token targets: -100, not scored)


@dataclass
class Task:
    """Everything longsynth needs to know about one task.

    ``fill(cfg, seed, split, start, out, fixed)`` writes samples start..start+n-1 into the
    preallocated arrays ``out[key][:n]`` (fixed-shape tasks; Numba-parallel over samples).
    ``block(cfg, seed, split, start, count, fixed)`` returns ``{key: array | Ragged}``
    for tasks with ragged keys. Exactly one of the two is given. ``split`` is the integer
    code from :data:`longsynth.rng.SPLITS`.
    """

    name: str
    config: type
    summary: str
    keys: Callable[[Any], dict]  # cfg -> {key: KeySpec}
    fill: Callable | None = None
    block: Callable | None = None
    fixed: Callable[[Any, int], dict] | None = None  # (cfg, seed) -> {name: ndarray}, drawn once
    check: Callable[[Any], None] | None = None  # cross-field validation beyond param ranges
    resolve: Callable[[Any], Any] | None = None  # fill derived fields (presets) after checks
    family: str = "atomic"  # "atomic" | "listops" | "pathfinder" | "tokens": picks the loader's encoding
    card: str = ""  # markdown definition for the dataset card
    default_num_samples: int = 10_000
    split_percent: tuple = (96, 2, 2)  # train / val / test shares of --num-samples (val, test round down)
    vocab: Callable[[Any], list] | None = None
    show: Callable | None = None  # (samples, cfg, path) -> None: PNG preview of samples
    show_dataset: Callable | None = None  # (dataset, split, path) -> None: dataset-level figure
    audit: Callable | None = None  # (dataset) -> dict: dataset-wide check after generation, kept in the manifest
    revision: int = 1  # draw-order revision: raised whenever the samples of a (config, seed) change
    # token tasks (family "tokens", docs/adding-a-task.md "Token tasks"): ids lie in [0, vocab_size(cfg))
    vocab_size: Callable[[Any], int] | None = None
    # the authors' own stream: (cfg, count, seed, split name) -> {"inputs", "targets": int64 [count, L]};
    # an Authors (generators/_authors.py) also opens it as a Stream, made block by block
    authors: Callable | None = None
    # where the authors' function returns arrays that are not rows of ours (the Chomsky tasks: the argmax of
    # sample_batch's one-hot input and output, apart): (cfg, count, seed, split name) -> {"inputs", "targets"}
    # int64 shaped as theirs; longsynth.authors_stream returns these, and ``authors`` lays them out as rows
    authors_arrays: Callable | None = None
    # where the authors' data sets draw every split from one generator (MAD's generate_data):
    # (cfg, seed, counts {split: count}, split name) -> that split's rows (an Authors too); what
    # gen --authors-stream writes
    authors_pipeline: Callable | None = None
    # config fields only the authors' stream reads (RegBench's hash_seed): set, they are refused for this task's own
    # rows (``own_rows_problem``), which do not depend on them
    authors_params: tuple = ()
    # tasks whose rows hold sequences of varying length (parity, modular arithmetic): cfg -> the offset k
    # of a row's length n from its last scored target's index t (n = t + k), read back by info, show
    # --stats and the harness's accuracy by length; the text says what n is
    row_length_offset: Callable[[Any], int] | None = None
    row_length_definition: str = ""
    # which scored target the offset counts from: "last" (parity, modular arithmetic: the answer ends the row) or
    # "first" (the Chomsky tasks: the first output follows the n inputs, n = its index)
    row_length_anchor: str = "last"
    citation: str = ""  # BibTeX of the paper that defines the task (dataset cards); empty: the DLR paper
    # (cfg, block {key: array [n, ...]}) -> text of the first row that breaks the task's definition, or None:
    # what verify --deep checks of imported rows, which no seed regenerates (longsynth.hubimport)
    law: Callable | None = None
    # allocate's key specs of the configs it last saw (a config is frozen, so its specs never change): a training
    # loop that draws a batch per step pays keys(cfg) once, not every step
    _specs: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.family == "tokens":
            if self.vocab_size is None:
                raise TypeError(f"task {self.name}: a token task needs vocab_size(cfg)")
            if self.show is None:
                self.show = self._show_tokens
            if self.show_dataset is None:
                self.show_dataset = self._show_token_dataset
            self.keys = functools.partial(_token_bounds, self.keys, self.vocab_size)

    def own_rows_problem(self, cfg):
        """One line refusing ``cfg`` for this task's own rows (not the authors' stream), or None."""
        for name in self.authors_params:
            if getattr(cfg, name) is not None:
                return (f"{name}: read by the authors' stream only (--authors-stream, longsynth.authors_dataset); "
                        f"{self.name}'s own rows do not depend on it, got {getattr(cfg, name)!r}")
        return None

    def _show_tokens(self, samples, cfg, path):
        from longsynth.generators._tokens import preview

        spec = self.keys(cfg)["inputs"]  # a fixed shape: the rows' length, known before any row is drawn
        return preview(samples, cfg, path, self.vocab_size(cfg), None if spec.ragged else spec.shape[0])

    def _show_token_dataset(self, dataset, split, path, progress=None):
        from longsynth.generators._tokens import show_dataset

        return show_dataset(dataset, split, path, progress=progress)

    def __repr__(self):
        return f"<longsynth.Task {self.name} ({self.family}): {self.summary}>"

    @property
    def batchable(self):
        return self.fill is not None

    def make_config(self, **params):
        """Validated, resolved config; ValueError for unknown or out-of-range parameters."""
        names = [f.name for f in dataclasses.fields(self.config)]
        for k in params:
            if k not in names:
                raise LongsynthError(
                    f"{k}: not a parameter of {self.name}; parameters: {', '.join(names) or 'none'}"
                )
        for f in dataclasses.fields(self.config):  # a field that sets others (param's ``sets``): given both, equal
            fixed = f.metadata.get("sets", ())
            for other in fixed if params.get(f.name) is not None else ():
                if other in params and params[other] != params[f.name]:
                    names = f"{', '.join(fixed[:-1])} and {fixed[-1]}" if len(fixed) > 1 else fixed[0]
                    raise LongsynthError(f"{f.name}: {params[f.name]} sets {names} to it, but {other} "
                                         f"is {params[other]}; give {f.name} alone, or equal values")
        cfg = self.config(**params)
        check_fields(cfg)
        if self.check is not None:
            self.check(cfg)
        if self.resolve is not None:
            cfg = self.resolve(cfg)
        return cfg

    def fixed_draws(self, cfg, seed):
        return self.fixed(cfg, seed) if self.fixed is not None else {}

    def allocate(self, cfg, count):
        try:
            specs = self._specs.get(cfg)
        except TypeError:  # a config that cannot be a key (not frozen)
            specs = None
        if specs is None:
            specs = self.keys(cfg)
            if len(self._specs) >= 64:
                self._specs.clear()
            try:
                self._specs[cfg] = specs
            except TypeError:
                pass
        return {k: np.zeros((count,) + tuple(spec.shape), dtype=spec.dtype) for k, spec in specs.items()}

    def generate(self, cfg, seed, split, start, count, fixed, buffers=None):
        """Block of samples as ``{key: array[count, ...] | Ragged}``.

        ``buffers``: an ``allocate(cfg, m)`` result with m >= count, reused by a caller that
        generates block after block (fill tasks only; others ignore it). The block is then
        views of it, overwritten, valid until the next call with the same buffers.
        Reuse matters where fresh arrays are expensive: under Dask's nanny, which sets
        MALLOC_TRIM_THRESHOLD_ and so turns off glibc's adaptive mmap threshold, every
        fresh multi-MB array is a new mapping whose pages fault in one by one.
        """
        if self.fill is not None:
            if buffers is None:
                out = self.allocate(cfg, count)
            else:
                out = {k: v[:count] for k, v in buffers.items()}  # fill kernels write every element
            self.fill(cfg, seed, split, start, out, fixed)
            return out
        return self.block(cfg, seed, split, start, count, fixed)


def _token_bounds(keys, vocab_size, cfg):
    """A token task's key specs with their value range (longsynth.values): ids in [0, V), and
    targets -100 where not scored (docs/adding-a-task.md "Token tasks")."""
    from longsynth.generators._tokens import IGNORE

    V = int(vocab_size(cfg))
    out = dict(keys(cfg))
    for name, ignore in (("inputs", None), ("targets", IGNORE)):
        if name in out:
            out[name] = dataclasses.replace(out[name], bounds=(0, V - 1), ignore=ignore)
    return out


def unpack(block, i):
    """Sample i of a block as ``{key: ndarray}`` (copies)."""
    sample = {}
    for k, col in block.items():
        if isinstance(col, Ragged):
            sample[k] = np.array(col.values[col.offsets[i] : col.offsets[i + 1]])
        else:
            sample[k] = np.array(col[i])
    return sample
