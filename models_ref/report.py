"""The report of an evaluate sweep: one row per task, the model beside the papers' figures.

``Report(runs=[certificate, ...])`` groups the runs by task and learning rate, keeps the
learning rate with the best mean validation metric (as zoology and MAD-lab do), and gives
the test metric's mean and spread over seeds at that rate. ``write(out)`` saves
report.json (every run), report.md (the table) and report.png (a bar per task: the model
against the papers' DLR, DSS and attention).
"""
from __future__ import annotations

import dataclasses
import math
import os
import statistics

from longsynth.models_ref.presets import (COLUMNS, EXTRA_COLUMNS, PAPER_SOURCE, TOLERANCE, own_figures, paper_figures,
                                         paper_split)
from longsynth.models_ref.field import GROUP_PAPER, GROUP_SOURCE, GROUPS
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
    def columns(self):
        """The papers' columns: for the DLR-paper protocols COLUMNS, then each of EXTRA_COLUMNS
        that has a figure in one of the runs' protocols; for the field's token suites every
        column their figures have (models_ref/field.py), in order."""
        if any(r.get("family") == "tokens" for r in self.runs):
            return tuple(dict.fromkeys(c for r in self.runs for c in (r.get("paper_columns") or {})))
        extra = [c for c in EXTRA_COLUMNS if any(c in (r.get("paper_columns") or {}) for r in self.runs)]
        return (*COLUMNS, *extra)

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
        figures = runs[0].get("paper_columns") or {}
        paper = {c: (_column(figures, c) or {}).get(metric) for c in self.columns}
        row = {"task": task, "protocol": runs[0]["protocol"], "metric": metric, "best_lr": best_lr,
               "best_weight_decay": best_wd, "lrs": sorted({lr for lr, _ in by_lr}),
               "val": val[best] if math.isfinite(val[best]) else None,
               "test_mean": statistics.fmean(tests) if tests else None,
               "test_std": statistics.stdev(tests) if len(tests) > 1 else 0.0, "seeds": len(tests),
               "paper": paper, "paper_source": PAPER_SOURCE.get(runs[0]["protocol"]),
               "own": self._own(runs[0]),
               "wall_time_s": sum(r["wall_time_s"] for r in runs),
               "tokens_per_s": statistics.fmean(r["train_tokens_per_s"] for r in runs),
               "diverged": sum(1 for r in runs if r.get("diverged"))}
        row["length"] = (runs[0].get("spec") or {}).get("seq_len")
        row["steps"] = max(r.get("steps") or 0 for r in runs)
        row["verdict"] = self._verdict(row)
        row["by_length"] = by_length(by_lr[best])
        row["trained_at"] = _trained_at(runs[0])
        return row

    def _own(self, run):
        """The paper's figure of this model itself (built-ins), from the column its preset matches."""
        at, column = own_figures(run["protocol"], run["scale"], self.model)
        figure = paper_figures(at, run["task"]).get(column)
        return None if figure is None else {**figure, "source": PAPER_SOURCE.get(at), "protocol": at,
                                            "column": column}

    def _own_shown(self, row):
        """(column, figure, shown) of the paper figure a built-in's verdict reads: its column,
        its value, and whether the row's paper columns show it; None for a model without one."""
        paper = row["own"] or {}
        own = paper.get(row["metric"])
        if own is None:
            return None
        column = paper.get("column", self.model)
        shown = row["paper"].get(column)
        return column, own, shown is not None and abs(shown - own) < 5e-3

    def _verdict(self, row):
        """The verdict, from the numbers the row shows: the model's own paper figure when it
        is a reference model (said where it comes from when the table has no column for
        it), else the best paper column of the table."""
        if row["test_mean"] is None:
            return "diverged: every learning rate" if row["diverged"] else "no test result"
        on_val = paper_split(row["protocol"]) == "val" and row["val"] is not None  # Tables 1, 2: validation
        test = row["val"] if on_val else row["test_mean"]
        said = f"validation {test:.3f}: " if on_val else ""  # the number the verdict reads, when not the test shown
        found = self._own_shown(row)
        if found is not None:  # a reference model: does it reproduce its own column?
            column, own, shown = found
            ok = abs(test - own) <= TOLERANCE
            where = (", the table's paper column" if shown
                     else f", from the paper's {row['own']['protocol']} table, not a column here")
            return f"{said}{'consistent with' if ok else 'differs from'} the paper's {column} ({own:.2f}{where})"
        known = {c: v for c, v in row["paper"].items() if v is not None}
        if not known and GROUPS.get(row["protocol"]) is not None:
            return "the paper scores tasks, not settings: see Task scores"
        if not known:
            return "no paper figure"
        col = max(known, key=known.get)
        gap = test - known[col]
        return f"{said}{gap:+.2f} against the paper's best ({col} {known[col]:.2f})"

    # ------------------------------------------------------------- renderings

    def table(self):
        """Plain-text table of the rows (what the CLI prints)."""
        name = os.path.basename(self.model)  # path/to/mygru.py:build -> mygru.py:build
        name = name if len(name) <= 28 else name[:25] + "..."
        head = ["task", "metric", name, "lr", *self.columns, "verdict"]
        lines = [head]
        for r in self.rows():
            mine = _mine(r) if r["test_mean"] is None else \
                f"{r['test_mean']:.3f} ± {r['test_std']:.3f} (n={r['seeds']})"
            lines.append([r["task"], METRIC_NAMES.get(r["metric"], r["metric"]), mine, _lr(r["best_lr"]),
                          *("-" if r["paper"][c] is None else f"{r['paper'][c]:.2f}" for c in self.columns),
                          r["verdict"]])
        widths = [max(len(str(row[i])) for row in lines) for i in range(len(head))]
        text = "\n".join("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in lines)
        for r in self.summary():  # MAD: the task scores beside the paper's (report.md's "Task scores")
            best = max(r["paper"], key=r["paper"].get) if r["paper"] else None
            beside = f" (the paper's best: {best} {r['paper'][best]:.3f})" if best else ""
            what = (f"task score {r['group']}: mean over {r['settings']} setting(s)" if r["group"] != "mean"
                    else f"MAD score: mean over the {r['tasks']} task(s) here")
            text += f"\n{what} {r['score']:.3f}{beside}"
        for run in self.diverged():
            text += f"\n{_run_name(run)}: {diverged_text(run)}"
        return text

    def diverged(self):
        """The runs that met a NaN or an infinity, in the order they were planned."""
        return [r for r in self.runs if r.get("diverged")]

    def to_markdown(self):
        s = self.settings
        rows = self.rows()
        on_val = any(paper_split(r["protocol"]) == "val" for r in rows)
        out = [f"# `{self.model}` on `{self.suite}` ({self.scale} scale)", "",
               f"Test metric at the best learning rate by validation (tried: "
               f"{', '.join(f'{lr:g}' for lr in sorted({r['lr'] for r in self.runs}))}), mean ± standard "
               f"deviation over {s.get('seeds', 1)} seed(s); the papers' figures beside it"
               + (" (the DLR paper's Tables 1 and 2 are validation averages: their verdicts read our validation "
                  "metric)." if on_val else "."), ""]
        if self.scale == "tiny":
            here = "; ".join(f"{r['task']} at L = {r['length']:,}, {r['steps']:,} steps" for r in rows
                             if r.get("length"))
            recipes = sorted({run["protocol_source"] for run in self.runs if run.get("protocol_source")})
            out += [f"The tiny scale shrinks the papers' recipes (here: {here}; docs/evaluate.md), so the papers' "
                    "figures are a reference, not a target." + (f" Recipes: {'; '.join(recipes)}." if recipes
                                                                 else ""), ""]
        head = ["task", "metric", self.model, "best lr", *(f"paper {c}" for c in self.columns), "verdict"]
        out += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for r in self.rows():
            mine = _mine(r) if r["test_mean"] is None else f"{r['test_mean']:.3f} ± {r['test_std']:.3f}"
            paper = ["-" if r["paper"][c] is None else f"{r['paper'][c]:.2f}" for c in self.columns]
            cells = [r["task"], METRIC_NAMES.get(r["metric"], r["metric"]), mine, _lr(r["best_lr"]), *paper,
                     r["verdict"]]
            out.append("| " + " | ".join(cells) + " |")
        out += self._summary_markdown() + self._diverged_markdown() + self._lengths_markdown()
        sources = sorted({r["paper_source"] for r in self.rows() if r["paper_source"]})
        out += ["", "Sources: " + "; ".join(sources) + "." if sources else "",
                f"Runs: {len(self.runs)}, each with its certificate under runs/ (curves, history, metrics)."]
        return "\n".join(out) + "\n"

    def summary(self):
        """Scores of the suites that average settings into a task score (MAD: the mean over a
        task's settings of the test accuracy; then the mean over tasks), beside the papers'
        scores; [] for other suites."""
        scores = {}
        for r in self.rows():
            group = GROUPS.get(r["protocol"])
            if group is not None and r["test_mean"] is not None:
                scores.setdefault(group, []).append(r["test_mean"])
        if not scores:
            return []
        out = [{"group": g, "score": statistics.fmean(v), "settings": len(v), "paper": GROUP_PAPER.get(g, {})}
               for g, v in scores.items()]
        out.append({"group": "mean", "score": statistics.fmean(x["score"] for x in out),
                    "settings": sum(x["settings"] for x in out), "paper": GROUP_PAPER["mean"], "tasks": len(out)})
        return out

    def _summary_markdown(self):
        rows = self.summary()
        if not rows:
            return []
        cols = list(dict.fromkeys(c for r in rows for c in r["paper"]))
        out = ["", "## Task scores", "",
               f"Each task's score is the mean over its settings here of the test accuracy; the mean is over the "
               f"{rows[-1]['tasks']} task(s) here (the papers' mean is over all six). Papers: {GROUP_SOURCE}.", "",
               f"| task | settings | {self.model} | " + " | ".join(cols) + " |", "|---" * (3 + len(cols)) + "|"]
        for r in rows:
            out.append(f"| {r['group']} | {r['settings']} | {r['score']:.3f} | "
                       + " | ".join("-" if r["paper"].get(c) is None else f"{r['paper'][c]:.3f}" for c in cols) + " |")
        return out

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
        """Accuracy against test length, one line per row and kind (None without any)."""
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
        ax.set_title(f"{os.path.basename(self.model)} on {self.suite}, {self.scale} scale: accuracy by test length",
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
        fig.tight_layout()
        return fig

    def to_json(self):
        return {"model": self.identity, "suite": self.suite, "scale": self.scale, "settings": self.settings,
                "rows": self.rows(), "summary": self.summary(), "runs": self.runs}

    def figure(self, path=None):
        """Horizontal bars per task: the model's test metric (with its spread) and the papers';
        saved as ``path``, or the open Figure when ``path`` is None."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = self.rows()
        n = len(rows)
        name = os.path.basename(self.model)
        fig, ax = plt.subplots(figsize=(10, 1.4 + 0.62 * n), dpi=110)
        light = ("#9ecae1", "#c7c7c7", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#f4cae4", "#e6f5c9", "#d9d9d9")
        series = [(f"{name} (this run)", "#1f4e8c")] + [
            (f"paper {c}", light[i % len(light)]) for i, c in enumerate(self.columns)]
        h = 0.8 / len(series)
        lo = 0.0
        for k, (label, color) in enumerate(series):
            ys = [i + (k - (len(series) - 1) / 2) * h for i in range(n)]
            if k == 0:
                vals = [r["test_mean"] if r["test_mean"] is not None else 0.0 for r in rows]
                errs = [r["test_std"] for r in rows]
                ax.barh(ys, vals, height=h, color=color, xerr=errs, capsize=2, label=label)
            else:
                vals = [r["paper"][self.columns[k - 1]] for r in rows]
                ax.barh([y for y, v in zip(ys, vals) if v is not None], [v for v in vals if v is not None],
                        height=h, color=color, label=label)
            lo = min([lo] + [v for v in vals if v is not None])
        y0 = -(len(series) - 1) / 2 * h  # the model's own bar, against its own figure where no column shows it
        elsewhere = {}
        for i, r in enumerate(rows):
            found = self._own_shown(r)
            if found is not None and not found[2]:
                column, own, _ = found
                elsewhere.setdefault(f"paper {column}, {r['own']['protocol']}\n(the verdict's figure)", []).append(
                    (own, i + y0))
        for label, points in elsewhere.items():
            ax.scatter([x for x, _ in points], [y for _, y in points], marker="D", s=28, color="#d62728",
                       zorder=3, label=label)
        ax.set_yticks(range(n), [f"{r['task']} ({METRIC_NAMES.get(r['metric'], r['metric'])})" for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(max(lo, -1.0) - 0.05, 1.05)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlabel("test metric (R^2, accuracy or macro F1; 1 is perfect)")
        ax.set_title(f"{name} on {self.suite}, {self.scale} scale, against the papers", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
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
    lines = [f"{cert['model']} on {cert['target']} ({cert['protocol']}, {cert['scale']}): {how}"]
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
        lines.append(f"test {name} {test:.3f}{on}, paper {v['paper']:.2f}{f' ({src})' if src else ''}, "
                     f"gap {v['gap']:+.3f} (tolerance {TOLERANCE}): "
                     f"{'consistent' if v['consistent'] else 'NOT consistent'} with the paper")
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

