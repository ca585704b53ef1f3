"""What a report reads from the runs' certificates: a run's row (``member``), its test accuracy by
length, the papers' current figures and the task parameters it trained on, its chance level, the
steps of its protocol, a diverged run's line, and the model's name without the user's paths
(``display_name``).
"""
from __future__ import annotations

import re

from longsynth.errors import LongsynthError
from longsynth.models_ref.protocols.registry import PAPER, PROTOCOLS, paper_figures, protocol_row


METRIC_NAMES = {"r2": "R^2", "accuracy": "accuracy", "macro_f1": "macro F1", "dfa_accuracy": "DFA accuracy"}


def member_name(protocol, task, family):
    """A suite member's name in runs/ and the report: the task, or for the field's token suites,
    whose protocols share a task (mqar-64 .. mqar-512), the protocol."""
    return protocol if family == "tokens" else task


def member(run):
    """A run's row: its member name, with the width and depth where the protocol has those grids."""
    name = member_name(run["protocol"], run["task"], run.get("family"))
    name = name if run.get("width") is None else f"{name} d{run['width']}"
    return name if run.get("depth") is None else f"{name}, {run['depth']} layer{'s' if run['depth'] > 1 else ''}"


def by_length(runs):
    """The test accuracy by length of a row's runs: [{"kind", "at", "accuracy", "count"}] sorted,
    from the test breakdown (kind "length" or "position", protocol ``breakdown``) and the test
    sets (kind "test length": the set's label, an input length); correct answers are summed over
    the runs' seeds. A test set's cell adds "string_accuracy" (rows whose every scored target is
    right) where its protocol records it (Repeat After Me's ``string_metrics``). [] for runs without
    either."""
    cells, strings = {}, {}  # (kind, at) -> [correct, count]; test length -> [strings right, rows]
    for r in runs:
        test = r.get("test") or {}
        for kind in ("length", "position"):
            for group, cell in (test.get("by_" + kind) or {}).items():
                c = cells.setdefault((kind, int(group)), [0.0, 0])
                c[0] += cell["accuracy"] * cell["count"]
                c[1] += cell["count"]
        for label, res in (r.get("test_sets") or {}).items():
            n = ((res.get("exact") or {}).get("count") or 1) if res else 0
            if n and res.get("accuracy") is not None and str(label).isdigit():  # named sets: ``by_set``
                c = cells.setdefault(("test length", int(label)), [0.0, 0])
                c[0] += res["accuracy"] * n
                c[1] += n
                rows = (res.get("exact") or {}).get("rows")  # both checked by the certificate's schema
                if rows and (res.get("exact") or {}).get("string_accuracy") is not None:  # Repeat After Me's get_score
                    strings.setdefault(int(label), [0.0, 0])
                    strings[int(label)][0] += res["exact"]["string_accuracy"] * rows
                    strings[int(label)][1] += rows
    out = [{"kind": k, "at": at, "accuracy": a / n, "count": n} for (k, at), (a, n) in sorted(cells.items()) if n]
    for c in out:
        if c["kind"] == "test length" and c["at"] in strings:
            right, rows = strings[c["at"]]
            c["string_accuracy"] = right / rows
    return out


def by_set(runs):
    """The test accuracy of a row's runs on each test set named otherwise than by a length (flip-flop's dense
    and sparse splits), after the task's own test split ("test", where its exact counts are recorded):
    [{"set", "accuracy", "correct", "count"}] in the protocol's order, the scored targets summed over the runs'
    seeds. [] for runs without such sets."""
    cells = {}  # label -> [correct, count]
    for r in runs:
        named = {str(k): v for k, v in (r.get("test_sets") or {}).items() if not str(k).isdigit()}
        if not named:
            continue
        for label, res in {"test": r.get("test"), **named}.items():
            exact = (res or {}).get("exact") or {}
            if isinstance(exact.get("count"), int) and isinstance(exact.get("correct"), int) and exact["count"]:
                c = cells.setdefault(label, [0, 0])
                c[0] += exact["correct"]
                c[1] += exact["count"]
    return [{"set": k, "accuracy": c / n, "correct": c, "count": n} for k, (c, n) in cells.items()]


_LENGTH_PAIRS = (("min_length", "max_length"), ("min_sequence_length", "max_sequence_length"))  # (lo, hi) names


def train_lengths(run):
    """(shortest, longest) training length of a run whose task draws lengths from a range (the Chomsky
    hierarchy's min_length-max_length, the state-tracking tasks' sequence lengths), else None."""
    params = _params(run)
    for lo, hi in _LENGTH_PAIRS:
        a, z = params.get(lo, 1 if hi in params else None), params.get(hi)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (a, z)):
            return a, z
    return None


def length_param(run):
    """The task parameter a run's test sets change to a length (the longest of a range: ``max_length``, the
    Chomsky hierarchy's, ``max_eval_len``, Repeat After Me's), read from the sets that change integers only;
    None where none does."""
    changes = run.get("test_set_params")
    lengths = [v for v in changes.values() if isinstance(v, dict) and v and all(
        isinstance(x, int) and not isinstance(x, bool) for x in v.values())] if isinstance(changes, dict) else []
    if not lengths:  # no set that changes lengths (flip-flop's dense and sparse change p_ignore, a probability)
        return None
    keys = [k for k in lengths[0] if isinstance(k, str)]
    return next((k for k in keys if k.startswith("max_")), keys[0] if keys else None)


def _trained_at(run):
    """The longest training length of a run tested beyond it: the training value of the parameter its test sets
    change, or the longest of its training lengths (``train_lengths``); None for neither."""
    key = length_param(run)
    if key is None:
        lengths = train_lengths(run)
        return None if lengths is None else lengths[1]
    value = ((run.get("data") or {}).get("params") or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def top_share(run):
    """The share of the scored positions given the run's most frequent answer (the mean over the sets its score
    averages), or None where the certificate has none (an older one, a regression or classification)."""
    sets = list((run.get("test_sets") or {}).values()) if run.get("scored_on") == "test sets" else [run.get("test")]
    shares = [((s or {}).get("exact") or {}).get("top_share") for s in sets]
    return sum(shares) / len(shares) if shares and all(isinstance(v, float) for v in shares) else None


def _column(figures, name):
    """The paper's figure of a column; the attention column falls back to local attention."""
    if name == "attention" and "attention" not in figures:
        name = "local-attention"
    return figures.get(name)


def binned(cells, bins=8):
    """Cells of one kind in at most ``bins`` ranges of equal width: [(lo, hi, accuracy, count)]."""
    if len(cells) <= 12 or len(cells) <= bins:  # a dozen lengths read fine one by one
        return [(c["at"], c["at"], c["accuracy"], c["count"]) for c in cells]
    lo, hi = cells[0]["at"], cells[-1]["at"]
    width = (hi - lo + 1) / bins
    out = []
    for b in range(bins):
        a, z = lo + round(b * width), lo + round((b + 1) * width) - 1
        inside = [c for c in cells if a <= c["at"] <= z]
        n = sum(c["count"] for c in inside)
        if n:
            out.append((a, z, sum(c["accuracy"] * c["count"] for c in inside) / n, n))
    return out


def diverged_text(run):
    """'diverged at step N (training loss; last finite validation R^2 0.512 at step M)' of a
    run whose certificate says it diverged; its last finite figure, or none."""
    d = run["diverged"]
    metric = run.get("primary_metric")
    last = run.get("final") or {}
    figure = (f"last finite validation {METRIC_NAMES.get(metric, metric)} {last[metric]:.3f} at step {last['step']}"
              if last.get(metric) is not None and last.get("step") is not None else "no finite validation figure")
    return f"diverged at step {d['step']:,} ({d['where']}; {figure})"


def _run_name(run):
    """A run as the report names it: its row, learning rate, weight decay and seed."""
    wd = "" if run.get("weight_decay") is None else f" wd {run['weight_decay']:g}"
    return f"{member(run)} lr {run['lr']:g}{wd} seed {run['seed']}"


def _mine(row):
    """The model's cell of a row without a test result."""
    return "diverged" if row.get("diverged") else "-"


def _lr(lr):
    return "-" if lr is None else f"{lr:g}"


_SEPARATOR = re.compile(r"[/\\]")  # a path's separators, POSIX and Windows


def display_name(identity):
    """The model as a report names it: a built-in or module by its name, a file by its base
    name and function, with the first 8 hex digits of its SHA-256 ("tinytf.py:build (sha256
    1a2b3c4d)"): never the path of the user's machine."""
    model, sha = identity.get("model") or "?", identity.get("sha256")
    where, sep, attr = model.rpartition(":")
    if sep and where and (_SEPARATOR.search(where) or where.endswith(".py")):
        model = _SEPARATOR.split(where)[-1] + ":" + attr
    return f"{model} (sha256 {sha[:8]})" if isinstance(sha, str) and sha else model


def _shared(run):
    """A run's record as a shared report holds it: the model by ``display_name``, never the path
    of the user's machine (the run folder's own metrics.json keeps it)."""
    ident = run.get("model_identity") if isinstance(run.get("model_identity"), dict) else {"model": run.get("model")}
    name = display_name({"model": ident.get("model") or run.get("model"), "sha256": None})
    out = {**run, "model": name, "model_identity": {**ident, "model": name}}
    if isinstance(run.get("model_config"), dict) and "model" in run["model_config"]:  # a user's model's config
        out["model_config"] = {**run["model_config"], "model": name}
    return out


def _figures(run):
    """{column: {metric: value}} of the papers for a run: the current tables (models_ref/protocols/),
    so that a report rebuilt from finished runs carries the corrected figures; the
    run's own copy only for a protocol the tables do not know."""
    if run.get("protocol") in PAPER:
        return paper_figures(run["protocol"], run["task"])
    return run.get("paper_columns") or {}


def _params(run):
    """The task parameters a run trained on: its certificate's, else its protocol's."""
    params = (run.get("data") or {}).get("params")
    if isinstance(params, dict):
        return params
    row = PROTOCOLS.get((run.get("protocol"), run.get("scale"))) or {}
    return dict(row.get("data") or {})


def _level(fn, run):
    """chance() or plateau() of a run's task, None where it cannot be computed (a run from
    an older or edited certificate)."""
    try:
        return fn(run["task"], _params(run))
    except (LongsynthError, TypeError, ValueError, KeyError):
        return None


def _pct(fraction):
    pct = 100 * fraction
    return f"{pct:.0f}%" if pct >= 1 else f"{pct:.2g}%"


def _protocol_steps(run):
    """The steps the run's protocol trains at its scale: its certificate's schedule records them;
    a certificate from before it did is read against the protocol's table (None: no such
    protocol)."""
    steps = ((run.get("schedule") or {}).get("protocol") or {}).get("steps")
    if run.get("schedule") is None:
        try:
            steps = protocol_row(run["protocol"], run["scale"], task=run["task"])[1]["steps"]
        except (LongsynthError, TypeError, ValueError, KeyError):
            return None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else None


def _level_text(level):
    return "-" if level is None else f"{level:.3f}"


def score_of(cert):
    """The metrics a certificate is scored by: its ``score`` (the test split's, or on a protocol that scores its
    test sets their mean: models_ref/evaluation/harness.py), the test split's in certificates made before it had one."""
    return cert.get("score", cert.get("test"))

