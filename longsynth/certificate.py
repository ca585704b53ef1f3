"""A run's certificate (``metrics.json``, written by ``evaluate`` and ``validate``) and an
evaluate report (``report.json``) read back as untrusted input (docs/format.md, "Trust").

A certificate that ``evaluate`` finds in its ``runs/`` on a rerun, or that ``info`` finds
in a dataset's ``validation/``, may have been edited: every field a reader uses is checked
here against one schema (pydantic) before anything is computed from it - types, finite
numbers, known task, protocol, scale and metric names - after ``safe.read_json`` has bounded
its size and depth. A bad one is one line naming the field (``CertificateError``); the
caller redoes the run or reports it, never a traceback. Fields no reader uses are kept
as they are.

``report.json`` is checked by the same rules (``Report``: its rows, its task scores and each
of its runs as a certificate) when ``read_report`` reads one, e.g. a report downloaded with
a dataset, and by the report writer before it writes one, so what it writes always reads.
"""
from __future__ import annotations

import os
from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from longsynth import fields
from longsynth.errors import LongsynthError

MAX_BYTES = 4 << 20  # a certificate holds configs and a few metric tables; its history is beside it
METRICS = ("r2", "accuracy", "macro_f1", "dfa_accuracy")  # the primary metrics a protocol reports
# (training/config.py primary_metric)

Metric = Literal["r2", "accuracy", "macro_f1", "dfa_accuracy"]  # METRICS
Finite = Annotated[float, Strict(), Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0)]
Name = Annotated[str, Strict(), Field(min_length=1, max_length=200)]


class CertificateError(LongsynthError):
    """A certificate that does not follow the schema: one line naming the field."""


Count = Annotated[int, Strict(), Field(ge=0)]
Group = Annotated[str, Strict(), Field(pattern=r"^-?[0-9]{1,9}$")]  # a breakdown group or test length
# a test set: its length, or a short lowercase name (flip-flop's dense and sparse splits): nothing a report misreads
SetLabel = Annotated[str, Strict(), Field(pattern=r"^([0-9]{1,9}|[a-z][a-z0-9_-]{0,31})$")]


class Cell(BaseModel):
    """One group of a breakdown table (trainer.evaluate's ``by_*``)."""

    model_config = ConfigDict(extra="allow")
    accuracy: Finite
    count: Count


Fraction = Annotated[float, Strict(), Field(allow_inf_nan=False, ge=0, le=1)]


class Exact(BaseModel):
    model_config = ConfigDict(extra="allow")
    count: Optional[Count] = None
    correct: Optional[Count] = None
    top_share: Optional[Fraction] = None  # the share of the scored positions given the most frequent answer
    rows: Optional[Count] = None  # where the protocol has string_metrics: the rows scored, and their get_score
    string_accuracy: Optional[Fraction] = None
    char_accuracy: Optional[Fraction] = None
    dfa_correct: Optional[Count] = None  # RegBench: predictions the row's DFA allows, of dfa_count scored positions
    dfa_count: Optional[Count] = None
    dfa_accuracy: Optional[Fraction] = None


class Evaluation(BaseModel):
    """One evaluation's record (trainer.evaluate): the metrics a reader uses are finite."""

    model_config = ConfigDict(extra="allow")
    by_length: Optional[dict[Group, Cell]] = None
    by_position: Optional[dict[Group, Cell]] = None
    exact: Optional[Exact] = None
    loss: Optional[Finite] = None
    r2: Optional[Finite] = None
    accuracy: Optional[Finite] = None
    macro_f1: Optional[Finite] = None
    dfa_accuracy: Optional[Finite] = None
    step: Optional[Annotated[int, Strict(), Field(ge=0)]] = None


class SpecRecord(BaseModel):
    """The ModelSpec a run recorded (the report reads its sequence length)."""

    model_config = ConfigDict(extra="allow")
    seq_len: Optional[Annotated[int, Strict(), Field(ge=1)]] = None


class Diverged(BaseModel):
    """Where a run met a NaN or an infinity and stopped (docs/evaluate.md, "Diverged runs")."""

    model_config = ConfigDict(extra="allow")
    step: Annotated[int, Strict(), Field(ge=0)]
    where: Name


class Baselines(BaseModel):
    """The levels of predictors that never read a row's content, on the rows a run was scored on
    (models_ref/training/metrics.py ``content_free``)."""

    model_config = ConfigDict(extra="allow")
    majority: Fraction
    position: Fraction


class DfaLevels(BaseModel):
    """What two never-trained predictors score on a DFA-accuracy run's test rows (RegBench:
    models_ref/evaluation/baselines.py ``dfa_levels``)."""

    model_config = ConfigDict(extra="allow")
    ngram: Fraction
    letter: Fraction
    positions: Count


class Certificate(BaseModel):
    """The fields of metrics.json that evaluate's report and validate's summary read."""

    model_config = ConfigDict(extra="allow")
    task: Name
    protocol: Name
    scale: Literal["tiny", "laptop", "paper"]
    model: Annotated[str, Strict(), Field(min_length=1, max_length=4000)]
    lr: Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0)]
    seed: Annotated[int, Strict(), Field(ge=0)]
    primary_metric: Metric
    test: Optional[Evaluation]
    best: Optional[Evaluation]
    final: Optional[Evaluation] = None
    wall_time_s: NonNegative
    train_tokens_per_s: NonNegative
    paper_columns: Optional[dict[Name, dict[Name, Finite]]] = None
    weight_decay: Optional[NonNegative] = None
    dfa_levels: Optional[DfaLevels] = None
    width: Optional[Annotated[int, Strict(), Field(ge=1)]] = None
    depth: Optional[Annotated[int, Strict(), Field(ge=1)]] = None
    test_sets: Optional[dict[SetLabel, Evaluation]] = None  # keyed by test length, or by the set's name
    diverged: Optional[Diverged] = None  # a run that met a NaN or an infinity: no test result
    steps: Optional[Count] = None
    spec: Optional[SpecRecord] = None
    family: Optional[Name] = None
    protocol_source: Optional[Annotated[str, Strict(), Field(max_length=4000)]] = None
    baselines: Optional[Baselines] = None
    options: Optional[dict[Name, Union[Annotated[int, Strict()], Name]]] = None  # a point of a built-in's grid

    @field_validator("task")
    @classmethod
    def _known_task(cls, task):
        from longsynth import registry

        if task not in registry.all_tasks():
            raise ValueError(f"{task[:60]!r} is not a longsynth task")
        return task

    @model_validator(mode="after")
    def _primary_present(self):
        for where in ("test", "best"):
            record = getattr(self, where)
            if record is not None and getattr(record, self.primary_metric) is None:
                raise ValueError(f"{where} has no {self.primary_metric}, the run's primary metric")
        if self.diverged is not None and (self.test is not None or self.test_sets is not None):
            raise ValueError("a diverged run has no test result")
        return self


Positive = Annotated[float, Strict(), Field(allow_inf_nan=False, gt=0)]
Paper = dict[Name, Optional[Finite]]  # a paper's figure per model column; None where it has none


class Row(BaseModel):
    """One task (protocol, width, depth) of a report: the best learning rate's figures.
    ``task`` is the row's name (``mqar-64 d64``, ``word-problem-a5, 1 layer``); each run
    below names its registered task."""

    model_config = ConfigDict(extra="allow")
    task: Name
    protocol: Name
    metric: Metric
    best_lr: Optional[Positive]
    lrs: list[Positive]
    val: Optional[Finite]
    test_mean: Optional[Finite]
    test_std: Optional[NonNegative]
    seeds: Count
    paper: Paper
    wall_time_s: NonNegative
    tokens_per_s: NonNegative
    diverged: Optional[Count] = None  # how many of the row's runs diverged


class Score(BaseModel):
    """A task score (the mean over its settings) or the mean of the task scores."""

    model_config = ConfigDict(extra="allow")
    group: Name
    score: Finite
    settings: Count
    paper: Paper


class Report(BaseModel):
    """The fields of report.json a reader uses: rows, task scores, and every run a certificate."""

    model_config = ConfigDict(extra="allow")
    suite: Annotated[str, Strict(), Field(min_length=1, max_length=4000)]
    scale: Literal["tiny", "laptop", "paper"]
    rows: list[Row]
    summary: list[Score] = []
    runs: list[Certificate]


def _checked(schema, raw, what, whole):
    fields.parse(schema, raw, what, whole, error=CertificateError)
    return raw


def check(raw, what):
    """``raw`` (parsed JSON) as a certificate dict, checked against the schema;
    CertificateError naming ``what`` and the first bad field otherwise."""
    return _checked(Certificate, raw, what, "certificate")


def check_report(raw, what):
    """``raw`` (parsed JSON) as a report dict (``Report``); CertificateError otherwise."""
    return _checked(Report, raw, what, "report")


def read(folder, name="metrics.json", what=None):
    """The certificate ``name`` in ``folder`` (a longsynth.outdir.Folder or a path), read
    without following a link, bounded and checked. FileNotFoundError when there is none."""
    from longsynth.outdir import Folder

    folder = Folder.of(folder)
    what = what or folder.join(name)
    try:
        raw = folder.read_json(name, what, limit=MAX_BYTES)
    except CertificateError:
        raise
    except LongsynthError as e:  # too large, too deep, not JSON, a link, not a regular file
        raise CertificateError(str(e)) from None
    return check(raw, what)


REPORT_BYTES = 64 << 20  # a report holds every run's certificate: a paper-scale MAD sweep is some 1,000


def read_report(path):
    """An evaluate report, checked: ``path`` is its folder or its ``report.json``. Read
    without following a link inside the folder, bounded in size and depth; a report that
    does not follow ``Report`` is one line (CertificateError). Returns the parsed dict."""
    from longsynth.outdir import Folder

    path = os.fspath(path)
    folder, name = (path, "report.json") if os.path.isdir(path) else os.path.split(path)
    folder = Folder.of(folder or ".")
    what = folder.join(name)
    try:
        raw = folder.read_json(name, what, limit=REPORT_BYTES)
    except FileNotFoundError:
        raise CertificateError(f"{what}: no such report") from None
    except CertificateError:
        raise
    except LongsynthError as e:
        raise CertificateError(str(e)) from None
    return check_report(raw, what)


__all__ = ["Certificate", "CertificateError", "Diverged", "Evaluation", "METRICS", "Report", "check", "check_report",
           "read", "read_report"]
