"""The report of an evaluate sweep: one row per task, the model beside the papers' figures.

``Report(runs=[certificate, ...])`` groups the runs by task and learning rate, keeps the
learning rate with the best mean validation metric (as zoology and MAD-lab do), and gives
the test metric's mean and spread over seeds at that rate. ``write(out)`` saves
report.json (every run), report.md (the table) and report.png (a bar per task: the model
against the papers' figures, each paper column under the name its paper gives the row).

A report is read by people who never open the docs (docs/evaluate.md, "Reading a report"):
each row carries the task's chance level (drawn as a line), a run cut short with ``--steps``
is "not a verdict", a result at chance or on a known plateau says so, a task whose score is
not comparable with the paper's says why beside the number and stays out of the means, and
every paper figure names its source (a table, or a plot read to +-0.03).
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import statistics

from longsynth.errors import LongsynthError
from longsynth.models_ref.presets import (COLUMNS, EXTRA_COLUMNS, PAPER, PAPER_SOURCE, PROTOCOLS, TOLERANCE,
                                         column_name, column_source, own_figures, paper_figures, paper_split)
from longsynth.models_ref.field import (GROUP_NAMES, GROUP_PAPER, GROUP_SOURCE, GROUPS, INCOMPARABLE, MAD_TRAIN,
                                        mad_settings)
from longsynth.models_ref.metrics import answer_chance, chance, plateau
from longsynth.outdir import Folder
from longsynth.certificate import check_report

METRIC_NAMES = {"r2": "R^2", "accuracy": "accuracy", "macro_f1": "macro F1"}


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
    the runs' seeds. [] for runs without either."""
    cells = {}  # (kind, at) -> [correct, count]
    for r in runs:
        test = r.get("test") or {}
        for kind in ("length", "position"):
            for group, cell in (test.get("by_" + kind) or {}).items():
                c = cells.setdefault((kind, int(group)), [0.0, 0])
                c[0] += cell["accuracy"] * cell["count"]
                c[1] += cell["count"]
        for label, res in (r.get("test_sets") or {}).items():
            n = ((res.get("exact") or {}).get("count") or 1) if res else 0
            if n and res.get("accuracy") is not None:
                c = cells.setdefault(("test length", int(label)), [0.0, 0])
                c[0] += res["accuracy"] * n
                c[1] += n
    return [{"kind": k, "at": at, "accuracy": a / n, "count": n} for (k, at), (a, n) in sorted(cells.items()) if n]


def _trained_at(run):
    """The training value of the parameter a run's test sets change (its training length), or None."""
    changes = run.get("test_set_params")
    if not isinstance(changes, dict) or not changes:
        return None
    first = next(iter(changes.values()))
    key = next(iter(first), None) if isinstance(first, dict) else None
    value = ((run.get("data") or {}).get("params") or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    """{column: {metric: value}} of the papers for a run: the current tables (models_ref/presets.py,
    field.py), so that a report rebuilt from finished runs carries the corrected figures; the
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
        from longsynth.models_ref.protocol import resolve

        try:
            steps = resolve(run["protocol"], run["scale"], task=run["task"]).steps
        except (LongsynthError, TypeError, ValueError, KeyError):
            return None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else None


@dataclasses.dataclass
class Report:
    identity: dict  # {"model": name, "sha256": of its source file or None}
    suite: str
    scale: str
    settings: dict
    runs: list  # the certificates (harness.run) of every run

    @property
    def model(self):
        return self.identity["model"]

    @property
    def name(self):
        """The model's name in titles and headers (``display_name``: no path)."""
        return display_name(self.identity)

    @property
    def columns(self):
        """The papers' columns (internal keys, a built-in's name where the built-in is that paper's
        model): for the DLR-paper protocols COLUMNS, then each of EXTRA_COLUMNS that has a figure
        in one of the runs' protocols; for the field's token suites every column their figures
        have (models_ref/field.py), in order. ``headers`` names them as the papers do."""
        if any(r.get("family") == "tokens" for r in self.runs):
            return tuple(dict.fromkeys(c for r in self.runs for c in _figures(r)))
        extra = [c for c in EXTRA_COLUMNS if any(c in _figures(r) for r in self.runs)]
        return (*COLUMNS, *extra)

    def headers(self, rows=None):
        """[(column, the paper's name of it)], one per name a column takes among the rows'
        protocols: a suite's "s6" is Grazzi et al.'s "Mamba [0, 1]" on parity and Mamba Table 1's
        "Mamba (Mamba arch., S6 layer)" on selective copying, two columns of a report holding both."""
        rows = self.rows() if rows is None else rows
        out = []
        for c in self.columns:
            names = [r["paper_names"][c] for r in rows if c in r["paper_names"]]
            names = names or [column_name(rows[0]["protocol"] if rows else None, c)]
            out += [(c, n) for n in dict.fromkeys(names)]
        return out

    @staticmethod
    def _cell(row, header):
        """A row's figure under a header: its value where the column has that name at the row's
        protocol, else None."""
        c, name = header
        return row["paper"].get(c) if row["paper_names"].get(c) == name else None

    def rows(self):
        """One dict per suite member (a task; a token suite's protocol and width), in the order
        the runs were planned."""
        members = list(dict.fromkeys(member(r) for r in self.runs))
        return [self._row(m, [r for r in self.runs if member(r) == m]) for m in members]

    def _row(self, task, runs):
        metric = runs[0]["primary_metric"]
        by_lr = {}  # (lr, weight decay) -> runs over seeds
        for r in runs:
            by_lr.setdefault((r["lr"], r.get("weight_decay")), []).append(r)
        # a learning rate where a seed diverged is never the best (docs/evaluate.md, "Diverged runs")
        val = {lr: statistics.fmean(float("-inf") if r.get("diverged") else (r["best"] or {}).get(metric, float("-inf"))
                                    for r in rs)
               for lr, rs in by_lr.items()}
        best = max(val, key=val.get)
        best_lr, best_wd = best if math.isfinite(val[best]) else (None, None)
        tests = [r["test"][metric] for r in by_lr[best] if r.get("test")]
        figures = _figures(runs[0])
        protocol = runs[0]["protocol"]
        paper = {c: (_column(figures, c) or {}).get(metric) for c in self.columns}
        known = [c for c, v in paper.items() if v is not None]
        level = _level(chance, runs[0])
        row = {"task": task, "protocol": protocol, "metric": metric, "best_lr": best_lr,
               "best_weight_decay": best_wd, "lrs": sorted({lr for lr, _ in by_lr}),
               "val": val[best] if math.isfinite(val[best]) else None,
               "test_mean": statistics.fmean(tests) if tests else None,
               "test_std": statistics.stdev(tests) if len(tests) > 1 else 0.0, "seeds": len(tests),
               "paper": paper, "paper_source": PAPER_SOURCE.get(protocol),
               "paper_names": {c: column_name(protocol, c) for c in known},
               "paper_sources": {c: column_source(protocol, c) or PAPER_SOURCE.get(protocol) for c in known},
               "chance": None if level is None else level[0], "chance_why": None if level is None else level[1],
               "plateau": _level(plateau, runs[0]), "answer_chance": _level(answer_chance, runs[0]),
               "caveat": INCOMPARABLE.get(GROUPS.get(protocol, runs[0]["task"])),
               "own": self._own(runs[0]),
               "wall_time_s": sum(r["wall_time_s"] for r in runs),
               "tokens_per_s": statistics.fmean(r["train_tokens_per_s"] for r in runs),
               "diverged": sum(1 for r in runs if r.get("diverged"))}
        row["length"] = (runs[0].get("spec") or {}).get("seq_len")
        row["steps"] = max(r.get("steps") or 0 for r in runs)
        trained = [r.get("steps") or 0 for r in by_lr[best] if r.get("test")] or [row["steps"]]
        row["protocol_steps"] = _protocol_steps(runs[0])
        row["budget"] = (min(trained) / row["protocol_steps"]
                         if row["protocol_steps"] and min(trained) < row["protocol_steps"] else None)
        row["noise"] = self._noise(row, by_lr[best])
        row["verdict"] = self._verdict(row)
        row["by_length"] = by_length(by_lr[best])
        row["trained_at"] = _trained_at(runs[0])
        return row

    @staticmethod
    def _noise(row, runs):
        """How far from a level a result may lie and still be at it: two standard errors of
        the test accuracy over its scored tokens (binomial at the level), two standard deviations
        over seeds, and 0.02 at least."""
        counts = [((r.get("test") or {}).get("exact") or {}).get("count") for r in runs if r.get("test")]
        n = sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c > 0)
        p = row["chance"] if row["chance"] is not None else 0.5
        se = math.sqrt(p * (1 - p) / n) if n and row["metric"] == "accuracy" and 0 < p < 1 else 0.0
        return max(0.02, 2 * se, 2 * (row["test_std"] or 0.0))

    def _own(self, run):
        """The paper's figure of this model itself (built-ins), from the column its preset matches."""
        at, column = own_figures(run["protocol"], run["scale"], self.model)
        figure = paper_figures(at, run["task"]).get(column)
        return None if figure is None else {**figure, "source": PAPER_SOURCE.get(at), "protocol": at,
                                            "column": column, "name": column_name(at, column)}

    def _own_shown(self, row):
        """(column, figure, shown) of the paper figure a built-in's verdict reads: its column,
        its value, and whether the row's paper columns show it (the same figure of the same table:
        Table 1's tiny attention reads the L = 512 table, whatever the L = 4096 column shows); None
        for a model without one."""
        paper = row["own"] or {}
        own = paper.get(row["metric"])
        if own is None:
            return None
        column = paper.get("column", self.model)
        shown = row["paper"].get(column)
        same = paper.get("protocol") == row["protocol"]
        return column, own, same and shown is not None and abs(shown - own) < 5e-3

    def _verdict(self, row):
        """The verdict, from the numbers the row shows: a run cut short is not a verdict; a result
        at chance or on a known plateau says so; else the model's own paper figure when it is a
        reference model (said where it comes from when the table has no column for it), or the
        best paper column of the table. Never "differs" of a run cut short."""
        if row["test_mean"] is None:
            return "diverged: every learning rate" if row["diverged"] else "no test result"
        on_val = paper_split(row["protocol"]) == "val" and row["val"] is not None  # Tables 1, 2: validation
        test = row["val"] if on_val else row["test_mean"]
        said = f"validation {test:.3f}: " if on_val else ""  # the number the verdict reads, when not the test shown
        state = None  # where the result sits: at chance, on a plateau
        if row["chance"] is not None and abs(test - row["chance"]) <= row["noise"]:
            state = f"at chance ({row['chance']:.2f})"
        elif row["plateau"] is not None and abs(test - row["plateau"][0]) <= row["noise"]:
            state = f"on {row['plateau'][1]} ({row['plateau'][0]:.2f}: a value of the context, not its key's)"
        caveat = " (not comparable with the paper's: see Caveats)" if row["caveat"] else ""
        if row["budget"] is not None:
            return (f"{said}budget cut to {_pct(row['budget'])} of the protocol's {row['protocol_steps']:,} steps: "
                    f"not a verdict" + (f"; {state}" if state else "") + caveat)
        found = self._own_shown(row)
        known = {c: v for c, v in row["paper"].items() if v is not None}
        if found is not None:  # a reference model: does it reproduce its own column?
            column, own, shown = found
            ok = abs(test - own) <= TOLERANCE
            figure = f"{row['own']['name']}: {own:.2f}" + ("" if shown else " (not a column of this table)")
            if self.scale == "tiny":  # a shrunk recipe: what it showed, beside a figure of a larger setting
                rel = "near" if ok else ("below" if test < own else "above")
                return (f"{said}{state + '; ' if state else ''}tiny setting: {rel} the paper's {figure} "
                        f"(at the paper's own setting)" + caveat)
            if state:
                return f"{said}{state}; " + (f"consistent with the paper's {figure}" if ok
                                             else f"the paper's {figure}") + caveat
            return f"{said}{'consistent with' if ok else 'differs from'} the paper's {figure}{caveat}"
        if not known and GROUPS.get(row["protocol"]) is not None:
            return (f"{said}{state + '; ' if state else ''}the paper scores tasks, not settings: see Task scores"
                    + caveat)
        if not known:
            return f"{said}{state + '; ' if state else ''}no paper figure{caveat}"
        col = max(known, key=known.get)
        best = f"the paper's best ({row['paper_names'][col]}: {known[col]:.2f})"
        if state:
            return f"{said}{state}; {best}{caveat}"
        return f"{said}{test - known[col]:+.2f} against {best}{caveat}"

    # ------------------------------------------------------------- renderings

    def table(self):
        """Plain-text table of the rows (what the CLI prints)."""
        name = self.name if len(self.name) <= 40 else self.name[:37] + "..."
        rows = self.rows()
        headers = self.headers(rows)
        head = ["task", "metric", name, "chance", "lr", *(n for _, n in headers), "verdict"]
        lines = [head]
        for r in rows:
            mine = _mine(r) if r["test_mean"] is None else \
                f"{r['test_mean']:.3f} ± {r['test_std']:.3f} (n={r['seeds']})"
            lines.append([r["task"], METRIC_NAMES.get(r["metric"], r["metric"]), mine, _level_text(r["chance"]),
                          _lr(r["best_lr"]),
                          *("-" if self._cell(r, h) is None else f"{self._cell(r, h):.2f}" for h in headers),
                          r["verdict"]])
        widths = [max(len(str(row[i])) for row in lines) for i in range(len(head))]
        text = "\n".join("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in lines)
        for r in self.summary():  # MAD: the task scores beside the paper's (report.md's "Task scores")
            best = max(r["paper"], key=r["paper"].get) if r["paper"] else None
            beside = f" (the paper's best: {GROUP_NAMES.get(best, best)} {r['paper'][best]:.3f})" if best else ""
            what = (f"task score {r['group']}: mean over {r['settings']} of MAD's {r['of']} setting(s)"
                    if r["group"] != "mean" else
                    f"MAD score: mean over the {r['tasks']} comparable task(s) here"
                    + (f" ({', '.join(r['excluded'])} apart: not comparable)" if r["excluded"] else ""))
            note = " [not comparable with the paper's: see report.md, Caveats]" if r.get("caveat") else ""
            text += f"\n{what} {r['score']:.3f}{beside}{note}"
        for run in self.diverged():
            text += f"\n{_run_name(run)}: {diverged_text(run)}"
        return text

    def diverged(self):
        """The runs that met a NaN or an infinity, in the order they were planned."""
        return [r for r in self.runs if r.get("diverged")]

    def to_markdown(self):
        s = self.settings
        rows = self.rows()
        headers = self.headers(rows)
        on_val = any(paper_split(r["protocol"]) == "val" for r in rows)
        out = [f"# `{self.name}` on `{self.suite}` ({self.scale} scale)", "",
               f"Test metric at the best learning rate by validation (tried: "
               f"{', '.join(f'{lr:g}' for lr in sorted({r['lr'] for r in self.runs}))}), mean ± standard "
               f"deviation over {s.get('seeds', 1)} seed(s); the papers' figures beside it, each column named as "
               f"its paper names the row"
               + (" (the DLR paper's Tables 1 and 2 are validation averages: their verdicts read our validation "
                  "metric)." if on_val else "."), ""]
        cut = [r for r in rows if r["budget"] is not None]
        if cut:
            budgets = {}
            for r in cut:
                trained = round(r["protocol_steps"] * r["budget"])
                budgets.setdefault((trained, r["protocol_steps"]), []).append(r["task"])
            out += ["**Budget cut**: " + "; ".join(
                f"{', '.join(tasks)} trained {steps:,} of {'its' if len(tasks) == 1 else 'their'} protocol's "
                f"{total:,} steps ({_pct(steps / total)})" for (steps, total), tasks in budgets.items())
                + " (`--steps`). A run cut short says what the model reached in those steps, not whether it "
                  "reproduces the paper: its verdict is not a verdict.", ""]
        if self.scale == "tiny":
            here = "; ".join(f"{r['task']} at L = {r['length']:,}, {r['steps']:,} steps" for r in rows
                             if r.get("length"))
            recipes = sorted({run["protocol_source"] for run in self.runs if run.get("protocol_source")})
            out += [f"The tiny scale shrinks the papers' recipes (here: {here}; docs/evaluate.md), so the papers' "
                    "figures are a reference, not a target." + (f" Recipes: {'; '.join(recipes)}." if recipes
                                                                 else ""), ""]
        head = ["task", "metric", self.name, "chance", "best lr", *(f"paper: {n}" for _, n in headers), "verdict"]
        out += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for r in rows:
            mine = _mine(r) if r["test_mean"] is None else f"{r['test_mean']:.3f} ± {r['test_std']:.3f}"
            paper = ["-" if self._cell(r, h) is None else f"{self._cell(r, h):.2f}" for h in headers]
            cells = [r["task"], METRIC_NAMES.get(r["metric"], r["metric"]), mine, _level_text(r["chance"]),
                     _lr(r["best_lr"]), *paper, r["verdict"]]
            out.append("| " + " | ".join(cells) + " |")
        out += ["", self._chance_line(rows)]
        sources = self._sources(rows)
        if sources:
            out += ["", "Paper columns, each named as its paper names the row, and where its figures come from: "
                    + "; ".join(f"{', '.join(names)}: {src}" for src, names in sources.items()) + "."]
        tables = sorted({r["paper_source"] for r in rows if r["paper_source"]})
        if tables:
            out += ["", "Sources: " + "; ".join(tables) + "."]
        out += self._summary_markdown() + self._caveats_markdown(rows) + self._diverged_markdown() \
            + self._lengths_markdown()
        out += ["", f"Runs: {len(self.runs)}, each with its certificate under runs/ (curves, history, metrics)."]
        return "\n".join(out) + "\n"

    @staticmethod
    def _chance_line(rows):
        levels = {}
        for r in rows:
            if r["chance"] is not None:
                levels.setdefault((f"{r['chance']:.3f}", r["chance_why"]), []).append(r["task"])
        why = [f"{', '.join(tasks)} {level} ({text})" for (level, text), tasks in levels.items()]
        none = [r["task"] for r in rows if r["chance"] is None]
        return ("Chance: what a model that learned nothing scores (a uniform guess among the task's candidate "
                "answers; R^2 0 for a regression), drawn as a dashed line on report.png"
                + (f": {'; '.join(why)}" if why else "")
                + (f"; none defined for {', '.join(none)}" if none else "") + ". A result within noise of it "
                "(two standard errors, at least 0.02) is said to be at chance.")

    @staticmethod
    def _sources(rows):
        """{where figures come from: [the papers' names of the columns that take them from there]}."""
        out = {}
        for r in rows:
            named = [(r["paper_sources"].get(c), n) for c, n in r["paper_names"].items()]
            own = r["own"] or {}
            if own.get("protocol") and own.get("protocol") != r["protocol"]:  # the verdict's figure, not a column
                named.append((column_source(own["protocol"], own["column"]) or own.get("source"), own["name"]))
            for src, n in named:
                names = out.setdefault(src, [])
                if n not in names:
                    names.append(n)
        return out

    def summary(self):
        """Scores of the suites that average settings into a task score (MAD: the mean over a
        task's settings of the test accuracy), beside the papers' scores; then the mean over the
        comparable tasks (``INCOMPARABLE`` ones apart), beside the papers' mean over the same
        tasks; [] for other suites."""
        scores, levels, cut = {}, {}, {}
        for r in self.rows():
            group = GROUPS.get(r["protocol"])
            if group is not None and r["test_mean"] is not None:
                scores.setdefault(group, []).append(r["test_mean"])
                levels.setdefault(group, []).append(r["chance"])
                if r["budget"] is not None:
                    cut[group] = min(cut.get(group, 1.0), r["budget"])
        if not scores:
            return []
        out = [{"group": g, "score": statistics.fmean(v), "settings": len(v),
                "of": len(mad_settings(g)) if g in MAD_TRAIN else len(v),
                "chance": statistics.fmean(levels[g]) if None not in levels[g] else None,
                "budget": cut.get(g), "caveat": INCOMPARABLE.get(g), "paper": GROUP_PAPER.get(g, {}),
                "paper_names": {c: GROUP_NAMES.get(c, c) for c in GROUP_PAPER.get(g, {})}}
               for g, v in scores.items()]
        fair = [x for x in out if not x["caveat"]]
        if not fair:
            return out
        cols = [c for c in GROUP_NAMES if all(c in x["paper"] for x in fair)]
        out.append({"group": "mean", "score": statistics.fmean(x["score"] for x in fair),
                    "settings": sum(x["settings"] for x in fair), "of": sum(x["of"] for x in fair),
                    "tasks": len(fair), "excluded": [x["group"] for x in out if x["caveat"]],
                    "chance": (statistics.fmean(x["chance"] for x in fair)
                               if all(x["chance"] is not None for x in fair) else None),
                    "budget": min((x["budget"] for x in fair if x["budget"] is not None), default=None),
                    "caveat": None,
                    "paper": {c: statistics.fmean(x["paper"][c] for x in fair) for c in cols},
                    "paper_names": {c: GROUP_NAMES[c] for c in cols},
                    "paper_mad_score": GROUP_PAPER["mean"]})
        return out

    def _summary_markdown(self):
        rows = self.summary()
        if not rows:
            return []
        cols = list(dict.fromkeys(c for r in rows for c in r["paper"]))
        mean = rows[-1] if rows[-1]["group"] == "mean" else None
        partial = [r for r in rows if r["group"] != "mean" and r["settings"] < r["of"]]
        out = ["", "## Task scores", "",
               "MAD scores a task as the mean over its settings (11 to 14; memorization 6) of the best test accuracy "
               "of each, and its MAD score as the mean of the six task scores. Here a task score is the mean over the "
               "settings this report has (column \"settings\": here / MAD's) of the test accuracy at the best "
               "learning rate by validation."]
        if partial:
            which = ", ".join(f"{r['group']} {r['settings']} of {r['of']}" for r in partial)
            out[-1] += (f" This report has fewer settings than MAD averages for {len(partial)} task(s) ({which}): "
                        "those scores are not MAD's task scores.")
        if mean is not None:
            six = ", ".join(f"{GROUP_NAMES.get(c, c)} {v:.3f}" for c, v in mean["paper_mad_score"].items())
            out[-1] += (f" The mean is over the {mean['tasks']} comparable task(s) here"
                        + (f", {', '.join(mean['excluded'])} kept apart (not comparable: see Caveats)"
                           if mean["excluded"] else "")
                        + f", beside the papers' mean over the same tasks (their own MAD score, over all six tasks "
                          f"compression included: {six}).")
        cut = [r for r in rows if r["budget"] is not None and r["group"] != "mean"]
        if cut:
            out[-1] += (" Budget cut (`--steps`) for " + ", ".join(r["group"] for r in cut)
                        + ": those scores are not verdicts.")
        out += ["", f"Papers: {GROUP_SOURCE}.", "",
                f"| task | settings | chance | {self.name} | " + " | ".join(f"paper: {GROUP_NAMES.get(c, c)}"
                                                                       for c in cols) + " |",
                "|---" * (4 + len(cols)) + "|"]
        for r in rows:
            name = (f"mean of {r['tasks']} task(s)" + (f" ({', '.join(r['excluded'])} apart)" if r["excluded"] else "")
                    if r["group"] == "mean" else r["group"] + (" (not comparable: see Caveats; not in the mean)"
                                                               if r["caveat"] else ""))
            name += " (budget cut: not a verdict)" if r["budget"] is not None else ""
            out.append(f"| {name} | {r['settings']} of {r['of']} | {_level_text(r['chance'])} | {r['score']:.3f} | "
                       + " | ".join("-" if r["paper"].get(c) is None else f"{r['paper'][c]:.3f}" for c in cols) + " |")
        return out

    def _caveats_markdown(self, rows):
        """The tasks whose scores are not comparable with the papers', and why."""
        why = dict.fromkeys((GROUPS.get(r["protocol"], r["task"].split(" ")[0]), r["caveat"]) for r in rows
                            if r["caveat"])
        if not why:
            return []
        return ["", "## Caveats", "", *(f"- {task}: {text} (docs/evaluate.md, \"Where we differ from the authors\")."
                                        for task, text in why)]

    def _diverged_markdown(self):
        """The runs that diverged: where, and their last finite validation figure."""
        runs = self.diverged()
        if not runs:
            return []
        return ["", "## Diverged runs", "",
                "A loss or metric became NaN or infinite; the run stopped there, has no test result, and its "
                "learning rate is not chosen (docs/evaluate.md, \"Diverged runs\").", "",
                *(f"- {_run_name(r)}: {diverged_text(r)}" for r in runs)]

    def _lengths_markdown(self):
        """The accuracy-by-length section (lengths.png draws it), for rows that have one."""
        rows = [r for r in self.rows() if r["by_length"]]
        if not rows:
            return []
        out = ["", "## Accuracy by test length", "",
               "Test accuracy of the best learning rate's runs, by the length of the test sequences (the "
               "protocol's test sets, or its test split grouped by each sequence's length, or by the position of "
               "each scored token); ranges of lengths where there are many. lengths.png draws it.", ""]
        for r in rows:
            for kind in dict.fromkeys(c["kind"] for c in r["by_length"]):
                cells = binned([c for c in r["by_length"] if c["kind"] == kind])
                at = [f"{a:,}" if a == z else f"{a:,}-{z:,}" for a, z, _, _ in cells]
                out += [f"{r['task']}, by {kind}:", "", "| " + kind + " | " + " | ".join(at) + " |",
                        "|---" * (len(at) + 1) + "|",
                        "| accuracy | " + " | ".join(f"{acc:.3f}" for _, _, acc, _ in cells) + " |", ""]
        return out

    def lengths_figure(self):
        """Accuracy against test length, one line per row and kind, with each row's chance level
        (None without any)."""
        rows = [r for r in self.rows() if r["by_length"]]
        if not rows:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
        for r in rows:
            for kind in dict.fromkeys(c["kind"] for c in r["by_length"]):
                cells = binned([c for c in r["by_length"] if c["kind"] == kind])  # as the table: ranges of lengths
                ranged = any(a != z for a, z, _, _ in cells)
                ax.plot([(a + z) / 2 for a, z, _, _ in cells], [acc for _, _, acc, _ in cells], marker="o",
                        label=f"{r['task']} (by {kind}{', each point a range of lengths' if ranged else ''})")
        levels = {}  # the chance of one scored answer: each point is the accuracy of answers of one length
        for r in rows:
            if r["answer_chance"] is not None:
                levels.setdefault(round(r["answer_chance"], 4), (r["answer_chance"], []))[1].append(r["task"])
        for level, tasks in levels.values():
            ax.axhline(level, color=CHANCE_COLOR, linestyle=(0, (4, 3)), linewidth=1.0,
                       label=f"chance {level:.3f}" + (f" ({', '.join(tasks)})" if len(levels) > 1 else ""))
        if any(c["kind"] == "test length" for r in rows for c in r["by_length"]):
            ax.set_xscale("log", base=2)
            for T in sorted({r["trained_at"] for r in rows if r.get("trained_at")}):
                ax.axvline(T, color="grey", linestyle="--", linewidth=0.8)
                ax.annotate(f"trained at {T:,}", (T, 0.02), xytext=(3, 0), textcoords="offset points", fontsize=8,
                            color="grey")
        ax.set_ylim(-0.03, 1.03)
        kinds = {c["kind"] for r in rows for c in r["by_length"]}
        ax.set_xlabel({"position": "position of the scored token: the prefix length",
                       "length": "sequence length n of the test sample (tokens)"}.get(
                           next(iter(kinds)) if len(kinds) == 1 else None, "test length (tokens)"))
        ax.set_ylabel("test accuracy")
        cut = " (budget cut: not a verdict)" if any(r["budget"] is not None for r in rows) else ""
        ax.set_title(f"{self.name} on {self.suite}, {self.scale} scale: accuracy by test length{cut}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
        fig.tight_layout()
        return fig

    def to_json(self):
        rows = self.rows()
        return {"model": {**self.identity, "model": display_name({"model": self.identity.get("model")})},
                "name": self.name, "suite": self.suite, "scale": self.scale,
                "settings": self.settings, "rows": rows, "summary": self.summary(),
                "paper_columns": [{"column": c, "name": n, "source": next(
                    (r["paper_sources"][c] for r in rows if r["paper_names"].get(c) == n), None)}
                    for c, n in self.headers(rows)],
                "runs": [_shared(r) for r in self.runs]}

    def _bars(self):
        """(items, headers) the figure draws: one item per row, or for a suite scored by task
        (MAD) one per task score and their mean, each {"label", "value", "std", "chance",
        "paper": [value per header], "marks": [(x, label)]}."""
        summary = self.summary()
        if summary:
            cols = list(dict.fromkeys(c for r in summary for c in r["paper"]))
            headers = [(c, GROUP_NAMES.get(c, c)) for c in cols]
            items = []
            for r in summary:
                if r["group"] == "mean":
                    label = f"mean of {r['tasks']} task(s)" + (f"\n({', '.join(r['excluded'])} apart)"
                                                               if r["excluded"] else "")
                else:
                    label = f"{r['group']}\n({r['settings']} of MAD's {r['of']} settings)"
                    if r["caveat"]:
                        label += "\nnot comparable: see report.md"
                if r["budget"] is not None:
                    label += f"\nbudget cut to {_pct(r['budget'])}: not a verdict"
                items.append({"label": label, "value": r["score"], "std": 0.0, "chance": r["chance"],
                              "paper": [r["paper"].get(c) for c in cols], "marks": []})
            return items, headers, "task score (mean accuracy over settings)"
        rows = self.rows()
        headers = self.headers(rows)
        items = []
        for r in rows:
            label = f"{r['task']} ({METRIC_NAMES.get(r['metric'], r['metric'])})"
            if r["budget"] is not None:
                label += f"\nbudget cut to {_pct(r['budget'])}: not a verdict"
            if r["caveat"]:
                label += "\nnot comparable: see report.md"
            marks = []
            found = self._own_shown(r)
            if found is not None and not found[2]:
                marks.append((found[1], f"paper: {r['own']['name']}\n(the verdict's figure)"))
            items.append({"label": label, "value": r["test_mean"] if r["test_mean"] is not None else 0.0,
                          "std": r["test_std"], "chance": r["chance"], "paper": [self._cell(r, h) for h in headers],
                          "marks": marks, "plateau": r["plateau"]})
        return items, headers, "test metric (R^2, accuracy or macro F1; 1 is perfect)"

    def figure(self, path=None):
        """Horizontal bars per task: the model's test metric (with its spread), the papers' (each
        under the paper's name of the row) and the task's chance level (a dashed line); for MAD the
        task scores and their mean. Saved as ``path``, or the open Figure when ``path`` is None."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        items, headers, xlabel = self._bars()
        n = len(items)
        series = [(f"{self.name} (this run)", "#1f4e8c")] + [
            (f"paper: {name}", LIGHT[i % len(LIGHT)]) for i, (_, name) in enumerate(headers)]
        per = max(0.62, 0.16 * len(series))
        fig, ax = plt.subplots(figsize=(11, 1.6 + per * n), dpi=110)
        h = 0.8 / len(series)
        lo = 0.0
        for k, (label, color) in enumerate(series):
            ys = [i + (k - (len(series) - 1) / 2) * h for i in range(n)]
            if k == 0:
                vals = [it["value"] for it in items]
                ax.barh(ys, vals, height=h, color=color, xerr=[it["std"] for it in items], capsize=2, label=label)
            else:
                vals = [it["paper"][k - 1] for it in items]
                ax.barh([y for y, v in zip(ys, vals) if v is not None], [v for v in vals if v is not None],
                        height=h, color=color, label=label)
            lo = min([lo] + [v for v in vals if v is not None])
        at = [(i, it["chance"]) for i, it in enumerate(items) if it["chance"] is not None]
        if at:  # the chance level of each task: a dashed line across its group of bars
            ax.vlines([c for _, c in at], [i - 0.45 for i, _ in at], [i + 0.45 for i, _ in at], colors=CHANCE_COLOR,
                      linestyles=(0, (4, 2)), linewidth=1.6, zorder=4, label="chance (a uniform guess; R^2 0)")
        flat = [(i, it["plateau"]) for i, it in enumerate(items) if it.get("plateau")]
        if flat:  # a known plateau (MQAR's copy plateau): a dotted line
            ax.vlines([p[0] for _, p in flat], [i - 0.45 for i, _ in flat], [i + 0.45 for i, _ in flat],
                      colors="#636363", linestyles=(0, (1, 1.5)), linewidth=1.6, zorder=4,
                      label=f"{flat[0][1][1]} (a value of the context)")
        y0 = -(len(series) - 1) / 2 * h  # the model's own bar
        marks = {}
        for i, it in enumerate(items):
            for x, label in it["marks"]:
                marks.setdefault(label, []).append((x, i + y0))
        for (label, points), style in zip(marks.items(), MARKS * (1 + len(marks))):
            ax.scatter([x for x, _ in points], [y for _, y in points], zorder=5, label=label, **style)
        ax.set_yticks(range(n), [it["label"] for it in items], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(max(lo, -1.0) - 0.05, 1.05)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlabel(xlabel)
        cut = " (budget cut: not a verdict)" if any("budget cut" in it["label"] for it in items) else ""
        ax.set_title(f"{self.name} on {self.suite}, {self.scale} scale, against the papers{cut}", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
        ax.grid(axis="x", alpha=0.3)
        fig.tight_layout()
        if path is None:
            return fig  # the caller saves and closes it
        fig.savefig(path)
        plt.close(fig)
        return None

    def write(self, out):
        """report.json, report.md and report.png in ``out`` (a longsynth.outdir.Folder or a
        path): each under a temporary name, renamed, never written through a link."""
        out = Folder.of(out)
        try:
            self._write(out)
        except OSError as e:
            from longsynth.models_ref.trainer import write_failed

            raise write_failed(out.path, e, "the report", "rerun the same command (the finished runs keep their "
                                                          "certificates: the report is rebuilt from them)") from None

    def _write(self, out):
        out.write_json("report.json", check_report(self.to_json(), out.join("report.json")))
        out.write_text("report.md", self.to_markdown())
        import matplotlib.pyplot as plt

        for name, fig in (("report.png", self.figure()), ("lengths.png", self.lengths_figure())):
            if fig is None:
                continue
            try:
                out.save_png(name, fig)
            finally:
                plt.close(fig)


CHANCE_COLOR = "#d62728"
LIGHT = ("#9ecae1", "#c7c7c7", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#f4cae4", "#e6f5c9", "#d9d9d9")
MARKS = ({"marker": "D", "s": 28, "color": "#7f2704"},)


def _level_text(level):
    return "-" if level is None else f"{level:.3f}"


def summary(cert):
    """A certificate (harness.run, as validate returns it) in a few lines a person reads:
    what ran, the metric beside the paper's figure, the gap, the verdict, where it is."""
    sched = cert.get("schedule") or {}
    proto = sched.get("protocol") or {}
    scaled = sched.get("steps") != proto.get("steps")
    how = (f"{sched.get('steps', cert.get('steps')):,} steps"
           + (f" (the protocol's {proto['steps']:,} scaled: warmup {sched['warmup_steps']:,}, an evaluation every "
              f"{sched['eval_every']:,})" if scaled and proto else "")
           + f", {cert.get('wall_time_s', 0):.0f} s on {cert.get('device', '?')}")
    who = display_name(cert.get("model_identity") or {"model": cert["model"]})  # a file's name and hash, no path
    lines = [f"{who} on {cert['target']} ({cert['protocol']}, {cert['scale']}): {how}"]
    primary = cert.get("primary_metric")
    name = METRIC_NAMES.get(primary, primary)
    test = (cert.get("test") or {}).get(primary)
    v = cert.get("verdict")
    if test is None and cert.get("diverged"):
        lines.append(f"test {name}: none: {diverged_text(cert)}")
    elif test is None:
        lines.append(f"test {name}: not reached (the run stopped before its last step)")
    elif v is None and (cert.get("certificate") or {}).get("threshold") is not None:
        lines.append(f"test {name} {test:.3f} against the {cert['certificate']['threshold']:.2f} its positive "
                     f"control must reach (docs/evaluate.md, the field's suites)")
    elif v is None:
        lines.append(f"test {name} {test:.3f}; the papers give no figure for this model here")
    else:
        src = (cert.get("paper") or {}).get("source", "").split(" (")[0]
        on = "" if v.get("split", "test") == "test" else f"; validation {name} {v['value']:.3f} (the paper's split)"
        cut = (f" (budget cut to {_pct(sched['steps'] / proto['steps'])} of the protocol's {proto['steps']:,} steps: "
               f"not a verdict)" if isinstance(sched.get("steps"), int) and isinstance(proto.get("steps"), int)
               and 0 < sched["steps"] < proto["steps"] else "")
        lines.append(f"test {name} {test:.3f}{on}, paper {v['paper']:.2f}{f' ({src})' if src else ''}, "
                     f"gap {v['gap']:+.3f} (tolerance {TOLERANCE}): "
                     f"{'consistent' if v['consistent'] else 'NOT consistent'} with the paper{cut}")
    control = cert.get("positive_control")
    if control:
        if control.get("model") is None:
            lines.append(f"positive control: none ({control.get('note', '')})")
        else:
            reached = "no test result" if control["test"] is None else f"R^2 {control['test']:.3f}"
            lines.append(f"positive control {control['model']}: {reached} "
                         f"against {control['threshold']:.2f} "
                         f"needed: {'learned' if control['learned'] else 'did NOT learn'}")
    c = cert.get("certificate")
    if c is not None:
        verdict = {True: "PASSED", False: "FAILED", None: "no verdict"}[c.get("passed")]
        why = f": {'; '.join(c['reasons'])}" if c.get("reasons") else ""
        lines.append(f"certificate {verdict}{why}" + ("" if c.get("can_fail") else " (this certificate cannot fail)"))
    if cert.get("report_dir"):
        lines.append(f"report: {os.path.join(cert['report_dir'], 'metrics.json')} (curves.png beside it)")
    return "\n".join(lines)

