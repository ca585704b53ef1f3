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

Here the rows, their verdicts and MAD's task scores; text.py renders them in words
(the table, report.md), figures.py as figures, and records.py reads the runs'
certificates.
"""
from __future__ import annotations

import dataclasses
import math
import statistics

from longsynth.models_ref.training.metrics import answer_chance, chance, plateau
from longsynth.models_ref.protocols.mad import GROUP_NAMES, GROUP_PAPER, GROUPS, INCOMPARABLE, MAD_TRAIN, mad_settings
from longsynth.models_ref.protocols.registry import (COLUMNS, EXTRA_COLUMNS, PAPER_MISSING, PAPER_SOURCE,
                                                     PAPER_STATISTIC, TOLERANCE, column_name, column_source,
                                                     own_figures, paper_figures, paper_split)
from longsynth.models_ref.reports.figures import ReportFigures
from longsynth.models_ref.reports.records import (_column, _figures, _level, _pct, _protocol_steps, _shared,
                                                  _trained_at, by_length, by_set, display_name, length_param, member,
                                                  score_of, top_share)
from longsynth.models_ref.reports.text import ReportText
from longsynth.models_ref.reports.text import summary  # noqa: F401 - validate's lines, importable from here (the CLI)
from longsynth.outdir import Folder
from longsynth.certificate import check_report


ONE_ANSWER = 0.9  # a model that gives one answer at this share of the scored positions (every seed) is flagged


@dataclasses.dataclass
class Report(ReportText, ReportFigures):
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
        have (models_ref/protocols/), in order. ``headers`` names them as the papers do."""
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
        by_lr = {}  # (lr, weight decay, the built-in's options) -> runs over seeds
        for r in runs:
            options = r.get("options") if isinstance(r.get("options"), dict) else {}
            by_lr.setdefault((r["lr"], r.get("weight_decay"), tuple(sorted(options.items()))), []).append(r)
        # a learning rate where a seed diverged is never the best (docs/evaluate.md, "Diverged runs")
        val = {lr: statistics.fmean(float("-inf") if r.get("diverged") else (r["best"] or {}).get(metric, float("-inf"))
                                    for r in rs)
               for lr, rs in by_lr.items()}
        best = max(val, key=val.get)
        best_lr, best_wd, best_options = best if math.isfinite(val[best]) else (None, None, ())
        tests = [score_of(r)[metric] for r in by_lr[best] if score_of(r)]
        in_dist = [r["test"].get(metric) for r in by_lr[best] if r.get("scored_on") == "test sets" and r.get("test")]
        figures = _figures(runs[0])
        protocol = runs[0]["protocol"]
        paper = {c: (_column(figures, c) or {}).get(metric) for c in self.columns}
        known = [c for c, v in paper.items() if v is not None]
        level = _level(chance, runs[0])
        row = {"task": task, "protocol": protocol, "metric": metric, "best_lr": best_lr,
               "best_weight_decay": best_wd, "best_options": dict(best_options) or None,
               "options_tried": len({o for _, _, o in by_lr}), "lrs": sorted({lr for lr, _, _ in by_lr}),
               "val": val[best] if math.isfinite(val[best]) else None,
               "test_mean": statistics.fmean(tests) if tests else None,
               "test_std": statistics.stdev(tests) if len(tests) > 1 else 0.0, "seeds": len(tests),
               "per_seed": tests, "best_run": max(tests) if tests else None,
               "in_distribution": statistics.fmean(in_dist) if in_dist and None not in in_dist else None,
               "paper": paper, "paper_source": PAPER_SOURCE.get(protocol), "paper_missing": PAPER_MISSING.get(protocol),
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
        scored = [score_of(r)[metric] for r in runs if score_of(r) and score_of(r).get(metric) is not None]
        row["best_of"] = max(scored) if scored else None  # the best run of every learning rate and seed
        row["best_of_runs"] = len(scored)
        row["paper_statistic"] = PAPER_STATISTIC.get(protocol)  # the paper's figures are that best-of
        # a best-of paper figure is read beside our best run (the verdict, the model's cell)
        row["reads_best_of"] = bool(row["paper_statistic"]) and row["best_of_runs"] > 1 and (
            any(v is not None for v in row["paper"].values()) or (row["own"] or {}).get(metric) is not None)
        levels = next((r["baselines"] for r in by_lr[best] if isinstance(r.get("baselines"), dict)), None) or {}
        row["majority"], row["position_prior"] = levels.get("majority"), levels.get("position")
        shares = [top_share(r) for r in by_lr[best] if score_of(r)]
        row["top_share"] = min(shares) if shares and None not in shares else None  # one answer everywhere: near 1
        row["seed_noise"] = [self._noise(row, r) for r in by_lr[best] if score_of(r)]
        row["noise"] = max(row["seed_noise"], default=0.02)
        row["verdict"] = self._verdict(row)
        if row["top_share"] is not None and row["top_share"] >= ONE_ANSWER:
            row["verdict"] += f" [one answer at {row['top_share']:.0%} of the scored positions]"
        row["by_length"] = by_length(by_lr[best])
        seeds = sorted((r for r in by_lr[best] if r.get("seed") is not None), key=lambda r: r["seed"])
        row["by_length_seeds"] = [{"seed": r["seed"], "cells": by_length([r])} for r in seeds] \
            if len(seeds) > 1 and row["by_length"] else []  # a pooled curve hides a seed that failed
        row["by_set"] = by_set(by_lr[best])
        row["trained_at"] = _trained_at(runs[0])
        row["length_param"] = length_param(runs[0])
        row["causal"] = False if any(r.get("causal") is False for r in runs) else runs[0].get("causal")
        row["parameters"] = runs[0].get("parameters")
        row["width"], row["depth"] = runs[0].get("width"), runs[0].get("depth")
        return row

    @staticmethod
    def _noise(row, run):
        """How far from a level one run's result may lie and still be at it: two standard errors of
        an accuracy over the rows it scored (binomial at the level; a row's tokens are not independent,
        so rows are counted, not tokens: every test set's rows where the protocol scores its test sets),
        and 0.02 at least."""
        sets = list((run.get("test_sets") or {}).values()) if run.get("scored_on") == "test sets" else \
            [run.get("test") or {}]
        n = 0
        for record in sets:
            batches, size = record.get("batches"), record.get("batch_size")
            if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (batches, size)):
                n += batches * size
        p = row["chance"] if row["chance"] is not None else 0.5
        se = math.sqrt(p * (1 - p) / n) if n and row["metric"] == "accuracy" and 0 < p < 1 else 0.0
        return max(0.02, 2 * se)

    @staticmethod
    def _at(level, scores, noise):
        """Whether every result is at ``level`` (each within its own noise): a claim about every seed, so one
        seed far from it is enough to deny it, whatever the mean."""
        return bool(scores) and all(abs(v - level) <= n for v, n in zip(scores, noise))

    @staticmethod
    def content_free(row):
        """(level, what) of the higher content-free level of a row (``majority``, ``position_prior``) where it lies
        above uniform chance by more than a run's noise, else None: the level a result must pass to show that
        the model read the rows' content."""
        levels = [(row.get("majority"), "the most frequent answer"),
                  (row.get("position_prior"), "the most frequent answer at each position of each length")]
        levels = [(v, what) for v, what in levels if v is not None]
        if not levels:
            return None
        level, what = max(levels, key=lambda lv: lv[0])
        floor = row["chance"] if row["chance"] is not None else 0.0
        return (level, what) if level > floor + max(row["seed_noise"], default=0.02) else None

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
        scores, noise = ([test] * len(row["seed_noise"]), row["seed_noise"]) if on_val else \
            (row["per_seed"], row["seed_noise"])  # a claim about every seed at the best learning rate
        if not on_val and row["reads_best_of"]:  # a best-of beside a best-of
            test = row["best_of"]
            said = f"best of {row['best_of_runs']} run{'s' if row['best_of_runs'] > 1 else ''} {test:.3f}: "
            scores, noise = [test], [row["noise"]]  # a claim about the best run, so about every run
        state = None  # where the result sits: at chance, no better than a content-free guess, on a plateau
        content = self.content_free(row)
        if row["chance"] is not None and self._at(row["chance"], scores, noise):
            state = f"at chance ({row['chance']:.2f})"
        elif content is not None and scores and all(v <= content[0] + n for v, n in zip(scores, noise)):
            state = f"no better than a content-free guess ({content[0]:.2f}: {content[1]})"
        elif row["plateau"] is not None and self._at(row["plateau"][0], scores, noise):
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
            none = "paper figure not entered (below)" if row["paper_missing"] else "no paper figure"
            return f"{said}{state + '; ' if state else ''}{none}{caveat}"
        col = max(known, key=known.get)
        best = (f"the paper's best {'entered ' if row['paper_missing'] else ''}"  # its other columns not entered
                f"({row['paper_names'][col]}: {known[col]:.2f})")
        if state:
            return f"{said}{state}; {best}{caveat}"
        return f"{said}{test - known[col]:+.2f} against {best}{caveat}"

    def diverged(self):
        """The runs that met a NaN or an infinity, in the order they were planned."""
        return [r for r in self.runs if r.get("diverged")]

    def summary(self):
        """Scores of the suites that average settings into a task score (MAD: the mean over a
        task's settings of the test accuracy), beside the papers' scores; then the mean over the
        comparable tasks (``INCOMPARABLE`` ones apart), beside the papers' mean over the same
        tasks; [] for other suites."""
        scores, levels, cut = {}, {}, {}
        for r in self.rows():
            group = GROUPS.get(r["protocol"])
            if group is not None and r["test_mean"] is not None:  # a setting's score: the paper's statistic
                scores.setdefault(group, []).append(r["best_of"] if r["paper_statistic"] else r["test_mean"])
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

    def to_json(self):
        rows = self.rows()
        return {"model": {**self.identity, "model": display_name({"model": self.identity.get("model")})},
                "name": self.name, "suite": self.suite, "scale": self.scale,
                "settings": self.settings, "rows": rows, "summary": self.summary(),
                "paper_columns": [{"column": c, "name": n, "source": next(
                    (r["paper_sources"][c] for r in rows if r["paper_names"].get(c) == n), None)}
                    for c, n in self.headers(rows)],
                "runs": [_shared(r) for r in self.runs]}

    def write(self, out):
        """report.json, report.md and report.png in ``out`` (a longsynth.outdir.Folder or a
        path): each under a temporary name, renamed, never written through a link."""
        out = Folder.of(out)
        try:
            self._write(out)
        except OSError as e:
            from longsynth.models_ref.training.write_errors import write_failed

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
