"""Every family's tables merged into the ones the harness reads, and what it asks of them.

``PROTOCOLS``, ``ARCHITECTURES``, ``PAPER``, ``PAPER_SOURCE``, ``PAPER_NAMES``, ``PAPER_FROM`` and
``SUITES`` (the package's docstring says what each holds) are the union of the family modules'
(atomic.py, listops.py, pathfinder.py, recall.py, state.py, mad.py, chomsky.py, repeat.py, regbench.py); a new family
adds its module to ``FAMILIES``. The lookups: a built-in's preset (``architecture``, with ``VARIANTS``), the
papers' figures of a run (``paper_figures``, ``own_figures``, ``paper_split``) and the names
and sources of their columns (``column_name``, ``column_source``), and the names ``--suite``
accepts (``task_of``, ``protocol_of``, ``suite_members``).
"""
from __future__ import annotations

from longsynth.errors import LongsynthError
from longsynth.models_ref.protocols import (atomic, chomsky, listops, mad, pathfinder, recall, regbench, repeat,
                                            s4_family, state)
from longsynth.models_ref.protocols.laptop import derive

FAMILIES = (atomic, listops, pathfinder, recall, state, mad, chomsky, repeat, regbench)
ATOMIC_TASKS = atomic.ATOMIC_TASKS


def _merged(table):
    out = {}
    for family in FAMILIES:
        out.update(getattr(family, table, {}))  # a table a family has no entries for it may leave out
    return out


# `longsynth validate --help` lists the protocols in this table's order: the DLR paper's as they were first
# listed (atomic, the ListOps and LRA suites, then Table 1 at L = 512, Table 2's lengths and
# Pathfinder-Segmentation), then the field's by family
_LISTED = ("atomic", "listops-subtrees", "lra-listops", "lra-pathfinder", "path-x", "atomic-512",
           *atomic.SHIFT_LENGTHS, *pathfinder.SEGMENTATION)
PROTOCOLS = dict(sorted(_merged("PROTOCOLS").items(),
                        key=lambda item: _LISTED.index(item[0][0]) if item[0][0] in _LISTED else len(_LISTED)))
ARCHITECTURES = _merged("ARCHITECTURES")
PAPER = _merged("PAPER")
PAPER_SOURCE = _merged("PAPER_SOURCE")
PAPER_NAMES = _merged("PAPER_NAMES")
PAPER_FROM = _merged("PAPER_FROM")
PAPER_STATISTIC = _merged("PAPER_STATISTIC")  # protocol -> "the best of 3 runs": its figures are a best-of, read
# beside our best run; a protocol without an entry has figures of one run (or of a statistic its paper does not state)
PAPER_MISSING = _merged("PAPER_MISSING")  # protocol -> why its paper's figures are not here (the paper has some)
SUITES = _merged("SUITES")  # a group: [(protocol, task)]
for _family in FAMILIES:  # the laptop scale: the papers' rows with fewer steps (laptop.py)
    for _name, _laptop in getattr(_family, "LAPTOP", {}).items():
        derive(PROTOCOLS, ARCHITECTURES, _name, **_laptop)

TOLERANCE = 0.1  # how far a verdict's metric may lie from the paper's figure and be consistent with it
COLUMNS = ("dlr", "dss", "attention")  # the paper columns a report shows beside the user's model
EXTRA_COLUMNS = s4_family.MODELS  # shown after COLUMNS in a report whose protocols have their figures
DEFAULT_NAMES = {"dlr": "DLR", "dss": "DSS_EXP", "attention": "ATTENTION"}  # a column no protocol here has

# ----------------------------------------------------------------- built-in presets

# Built-ins defined as another built-in's preset with fields changed
VARIANTS = {
    "dlr-prod": ("dlr", {"kernel": "prod"}, "DLR paper section 2.1 and Table 2 (DLR-prod: kernel Re K * Im K)"),
    "dlr-real": ("dlr", {"layer": "dlr-real"}, "DLR paper section 3.3 and Table 2 (DLR-R: real Lambda and w)"),
    "dlr-6": ("dlr", {"n_layers": 6}, "DLR paper Table 1 (six DLR layers)"),
    "dlr-d1": ("dlr", {"skip": "one"}, "DLR paper section 2's prose: D = 1 (the official code learns D)"),
    "attention-ff": ("attention", {"ff_layers": 2, "ff_width": 2048}, "DLR paper Table 4 (ATTENTION + 2 x FF)"),
    "s6-signed": ("s6", {"signed": True}, "Grazzi et al. 2025 (Mamba with Abar = 2 exp(Delta A) - 1, eigenvalues in "
                                          "(-1, 1]; automl/unlocking_state_tracking mamba_mod.py)"),
}


def architecture(protocol, scale, model):
    """A built-in's preset {arch, lr, source} at a protocol and scale (None: it has none)."""
    if (protocol, scale, model) in ARCHITECTURES:
        return ARCHITECTURES[(protocol, scale, model)]
    if model not in VARIANTS or (protocol, scale, VARIANTS[model][0]) not in ARCHITECTURES:
        return None
    base, change, source = VARIANTS[model]
    row = ARCHITECTURES[(protocol, scale, base)]
    return {**row, "arch": {**row["arch"], **change}, "source": f"{row['source']}; {source}"}


def preset_lr(row, task):
    """A preset's learning rate for a task: its ``task_lr`` entry, else its ``lr``."""
    return row.get("task_lr", {}).get(task, row["lr"])


def default_lrs(protocol, scale, model, task, built_in=True):
    """The learning rates a run on ``task`` sweeps when --lr does not set them: the protocol's grid, else the
    built-in's preset lr, else the protocol's (a model of the user's takes the protocol's)."""
    proto = PROTOCOLS[(protocol, scale)]
    if proto.get("lrs"):
        return tuple(proto["lrs"])
    row = architecture(protocol, scale, model) if built_in else None
    return (proto["lr"] if row is None else preset_lr(row, task),)


# ----------------------------------------------------------------- the papers' figures


def column_name(protocol, column):
    """The paper's name of a column of a protocol's figures (the attention column of a protocol
    without one: its LOCALATTENTION), else a generic one."""
    names = PAPER_NAMES.get(protocol, {})
    if column == "attention" and "attention" not in PAPER.get(protocol, {}) and "local-attention" in names:
        column = "local-attention"
    return names.get(column) or DEFAULT_NAMES.get(column, column)


def column_source(protocol, column):
    """Where a column's figure of a protocol comes from: paper, table or figure, and whether it
    was read off a plot (None where the protocol has no figure there)."""
    if column == "attention" and "attention" not in PAPER.get(protocol, {}):
        column = "local-attention"
    if column not in PAPER.get(protocol, {}):
        return None
    return PAPER_FROM.get(protocol, {}).get(column) or PAPER_SOURCE.get(protocol)


def paper_split(protocol):
    """The split the paper's figures of a protocol were measured on: "val" for the DLR paper's
    Tables 1, 2 and 4 ("average validation R^2 across batches"), "test" for the others (Table 3's
    test metrics at the best validation checkpoint; the LRA tables)."""
    return "val" if protocol in atomic.ON_VALIDATION else "test"


def paper_figures(protocol, task):
    """{column: {metric: value}} of the papers for one task of a protocol."""
    table = PAPER.get(protocol, {})
    if protocol in ("atomic", "atomic-512"):
        return {col: figs[task] for col, figs in table.items() if task in figs}
    return dict(table)


def own_figures(protocol, scale, model):
    """(protocol, column) of the paper figures a built-in model's preset reproduces: the
    preset's ``figures`` (the tiny two-layer attention is Table 1's L = 512 column), else the
    protocol; its ``column`` (zoology-attention is Figure 2's "attention"), else the model's name."""
    row = architecture(protocol, scale, model) or {}
    return row.get("figures", protocol), row.get("column", model)


# ----------------------------------------------------------------- suite members


def task_of(protocol):
    """The task a named protocol trains on (mqar-128 -> mqar), None for no such protocol or one of
    several tasks (atomic)."""
    return next((row["task"] for (p, _), row in PROTOCOLS.items() if p == protocol), None)


def protocol_of(task_or_protocol):
    """The protocol a suite member runs under: an atomic task name -> "atomic"."""
    return "atomic" if task_or_protocol in ATOMIC_TASKS else task_or_protocol


SCALES = ("tiny", "laptop", "paper")  # minutes on a CPU; the papers' lengths at an hour a run; the papers' own


def protocol_row(name, scale, task=None):
    """The table's row of protocol ``name`` (or of atomic task ``task``) at ``scale``, with the
    task's own changes at that scale applied (``per_task``): plain data, what ``Protocol`` is
    made of (models_ref/evaluation/protocol.py ``resolve``)."""
    if scale not in SCALES:
        raise LongsynthError(f"scale: must be one of {', '.join(SCALES)}, got {scale!r}")
    key = protocol_of(name)
    if (key, scale) not in PROTOCOLS:
        scales = [s for s in SCALES if (key, s) in PROTOCOLS]
        if scales:
            hint = (" (the laptop scale is for the recall, state-tracking, selective-copying, induction-heads, "
                    "Chomsky and RegBench suites)") if scale == "laptop" else ""
            raise LongsynthError(f"--scale: {name} has no {scale} scale; it has {' and '.join(scales)}{hint}")
        raise LongsynthError(f"suite: no protocol {name!r}")
    row = dict(PROTOCOLS[(key, scale)])
    row["task"] = row["task"] or task or name
    change = row.pop("per_task", {}).get(row["task"], {})  # a task's own length or budget at this scale
    row.update(change, data={**row["data"], **change.get("data", {})})
    return key, row


def suite_members():
    """Every name ``--suite`` accepts: groups, atomic task names and the protocols of their own."""
    own = sorted({p for p, _ in PROTOCOLS if p not in ("atomic", "atomic-512") and p not in SUITES
                  and mad.GROUPS.get(p, p) == p})  # MAD's settings other than each task's baseline: via "mad"
    return list(SUITES) + list(ATOMIC_TASKS) + own
