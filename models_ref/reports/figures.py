"""A report's figures: report.png (a bar per task: the model against the papers' figures, each
paper column under the name its paper gives the row, with the task's chance level) and
lengths.png (accuracy against test length).
"""
from __future__ import annotations

from longsynth.escape import drawn
from longsynth.models_ref.protocols.mad import GROUP_NAMES
from longsynth.models_ref.reports.records import METRIC_NAMES, _pct, binned
from longsynth.plot import plain_text


CHANCE_COLOR = "#d62728"
MODEL_COLOR = "#1f4e8c"
GRID_FROM = 5  # rows from which lengths.png gives each its own panel (on one axes their lines and legend tangle)
LIGHT = ("#9ecae1", "#c7c7c7", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#f4cae4", "#e6f5c9", "#d9d9d9")
MARKS = ({"marker": "D", "s": 28, "color": "#7f2704"},)
CHANCE_STYLES = ({"linestyle": "--"}, {"linestyle": ":"}, {"linestyle": "-."})  # one per chance level of a plot
CONTENT_COLOR = "#756bb1"  # the content-free level (majority or position prior) on report.png


def _series(row):
    """(kind, x, accuracy, ranged) per kind of a row's by_length cells, binned as the table bins them (ranges of
    lengths where there are many: x their middles, ranged True)."""
    for kind in dict.fromkeys(c["kind"] for c in row["by_length"]):
        cells = binned([c for c in row["by_length"] if c["kind"] == kind])
        yield (kind, [(a + z) / 2 for a, z, _, _ in cells], [acc for _, _, acc, _ in cells],
               any(a != z for a, z, _, _ in cells))


def _seed_series(row, kind):
    """(seed, x, accuracy) of each seed's cells of ``kind``, binned as the pooled ones (``_series``)."""
    for s in row.get("by_length_seeds") or []:
        cells = binned([c for c in s["cells"] if c["kind"] == kind])
        if cells:
            yield s["seed"], [(a + z) / 2 for a, z, _, _ in cells], [acc for _, _, acc, _ in cells]


def _strings(row):
    """[(test length, string accuracy)] of a row's test sets that record it (``string_metrics``), else []."""
    return [(c["at"], c["string_accuracy"]) for c in row["by_length"] if c.get("string_accuracy") is not None]


def _length_axis(ax, xs):
    """A length axis: logarithmic (base 2) where the lengths span more than a factor of 8, its ticks plain
    numbers either way (a log axis over 41-100 would show one label)."""
    if xs and max(xs) > 8 * max(min(xs), 1):
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())


def _param_help(task, name):
    """The help text of task ``task``'s parameter ``name`` (its config's field), or None."""
    import dataclasses

    from longsynth import registry

    try:
        fields = {f.name: f for f in dataclasses.fields(registry.get(task).config)}
    except Exception:  # noqa: BLE001 - a stranger's report may name a task this longsynth does not have
        return None
    return fields[name].metadata.get("help") if name in fields else None


def _x_label(rows):
    """The length axis's name; a test set's length is the value of the task parameter its sets change, named
    where the rows share one (Repeat After Me's ``max_eval_len`` counts letters, not a row's tokens)."""
    kinds = {c["kind"] for r in rows for c in r["by_length"]}
    params = {(r["task"], r.get("length_param")) for r in rows}
    names = {name for _, name in params}
    if kinds == {"test length"} and len(names) == 1 and None not in names:
        name = names.pop()
        if all(_param_help(task, "test_" + name) for task, _ in params):  # the test split's own (Chomsky's)
            name = "test_" + name
        docs = {_param_help(task, name) for task, _ in params}
        doc = docs.pop() if len(docs) == 1 else None
        return f"test length: the task's {name}" + (f" ({doc.split(' (')[0].split(';')[0]})" if doc else "")
    return {"position": "position of the scored token: the prefix length",
            "length": "sequence length n of the test sample (tokens)"}.get(
                next(iter(kinds)) if len(kinds) == 1 else None, "test length (tokens)")


class ReportFigures:
    """The figures of a ``report.Report`` (its rows and summary)."""

    def lengths_figure(self):
        """Accuracy against test length, one line per row and kind, with each row's chance level
        (None without any)."""
        rows = [r for r in self.rows() if r["by_length"]]
        if not rows:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plain_text()  # never LaTeX, whatever a matplotlibrc in the current folder asks

        if len(rows) >= GRID_FROM:
            return self._lengths_grid(rows, plt)
        fig, ax = plt.subplots(figsize=(11, 4.5), dpi=110)
        xs = []
        for r in rows:
            seeds = len(r.get("by_length_seeds") or [])
            for kind, x, y, ranged in _series(r):
                xs += x
                label = (f"{r['task']} (by {kind}{', each point a range of lengths' if ranged else ''}"
                         f"{': the share of answer tokens right' if _strings(r) else ''}"
                         f"{f'; {seeds} seeds pooled' if seeds else ''})")
                line, = ax.plot(x, y, marker="o", label=drawn(label))
                for i, (seed, sx, sy) in enumerate(_seed_series(r, kind)):  # each seed thin, the pooled curve bold
                    ax.plot(sx, sy, lw=0.9, alpha=0.6, color=line.get_color(), linestyle=":",
                            label=drawn(f"{r['task']}: each seed ({seeds})") if i == 0 else None)
            if _strings(r):  # Repeat After Me's get_score: the share of rows with every answer token right
                x, y = zip(*_strings(r))
                ax.plot(x, y, marker="s", linestyle=":", color=line.get_color(),
                        label=drawn(f"{r['task']}: the share of strings copied whole"))
        levels = {}  # the chance of one scored answer: each point is the accuracy of answers of one length
        for r in rows:
            if r["answer_chance"] is not None:
                levels.setdefault(round(r["answer_chance"], 4), (r["answer_chance"], []))[1].append(r["task"])
        for (level, tasks), style in zip(levels.values(), CHANCE_STYLES * len(levels)):
            ax.axhline(level, color=CHANCE_COLOR, linewidth=1.0, **style,
                       label=drawn(f"chance {level:.3f}" + (f" ({', '.join(tasks)})" if len(levels) > 1 else "")))
        trained = {}  # the longest training length -> the rows trained to it
        for r in rows:
            if r.get("trained_at"):
                trained.setdefault(r["trained_at"], []).append(r["task"])
        for T, tasks in sorted(trained.items()):
            ax.axvline(T, color="grey", linestyle="--", linewidth=0.8)
            ax.annotate(drawn(f"trained to {T:,}" + (f" ({', '.join(tasks)})" if len(trained) > 1 else "")), (T, 0.02),
                        xytext=(3, 0), textcoords="offset points", fontsize=8, color="grey", rotation=90,
                        va="bottom")
        _length_axis(ax, xs + list(trained))
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(drawn(_x_label(rows)))
        ax.set_ylabel("test accuracy")
        ax.set_title(drawn(self._lengths_title(rows)), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the data
        fig.tight_layout()
        return fig

    def _lengths_grid(self, rows, plt):
        """lengths_figure for many rows: one small panel per row (its lines, its chance, its longest training
        length), in the rows' order (a suite's levels), on one accuracy scale."""
        ncols = 5 if len(rows) > 12 else 4
        nrows = -(-len(rows) // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.7 * ncols, 2.1 * nrows + 0.9), dpi=110, sharey=True,
                                 squeeze=False)
        for ax, r in zip(axes.flat, rows):
            xs = []
            for kind, x, y, _ in _series(r):
                xs += x
                pooled = " (seeds pooled)" if r.get("by_length_seeds") else ""
                ax.plot(x, y, marker="o", ms=3, lw=1.2, color=MODEL_COLOR,
                        label=drawn(f"{self.name}: test accuracy{pooled}"))
                for seed, sx, sy in _seed_series(r, kind):
                    ax.plot(sx, sy, lw=0.7, alpha=0.6, color=MODEL_COLOR, linestyle=":", label="each seed")
            if r["answer_chance"] is not None:
                ax.axhline(r["answer_chance"], color=CHANCE_COLOR, linestyle=(0, (4, 3)), linewidth=1.0,
                           label="chance (a uniform guess)")
            if r.get("trained_at"):
                ax.axvline(r["trained_at"], color="grey", linestyle="--", linewidth=0.8,
                           label="the longest training length")
            _length_axis(ax, xs + ([r["trained_at"]] if r.get("trained_at") else []))
            ax.set_title(drawn(r["task"]), fontsize=8)
            ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
        for ax in axes.flat[len(rows):]:
            ax.axis("off")
        legend = {}  # label -> handle, over every panel (a row may lack a chance or a training length)
        for ax in axes.flat[:len(rows)]:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(label, handle)
        fig.legend(list(legend.values()), list(legend), loc="upper center",
                   bbox_to_anchor=(0.5, 1 - 0.45 / fig.get_figheight()), ncol=len(legend), fontsize=8, frameon=False)
        fig.supxlabel(drawn(_x_label(rows)), fontsize=9)
        fig.supylabel("test accuracy", fontsize=9)
        fig.suptitle(drawn(self._lengths_title(rows)), fontsize=10)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / fig.get_figheight()))  # room for the title and the legend
        return fig

    def _lengths_title(self, rows):
        cut = " (budget cut: not a verdict)" if any(r["budget"] is not None for r in rows) else ""
        return f"{self.name} on {self.suite}, {self.scale} scale: accuracy by test length{cut}"

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
            levels = next((run["dfa_levels"] for run in self.runs if run.get("task") == r["task"]
                           and isinstance(run.get("dfa_levels"), dict)), None)
            items.append({"label": label, "value": r["test_mean"] if r["test_mean"] is not None else 0.0,
                          "std": r["test_std"], "chance": r["chance"], "paper": [self._cell(r, h) for h in headers],
                          "marks": marks, "plateau": r["plateau"], "content": self.content_free(r), "dfa": levels})
            for c in r.get("by_set") or []:  # flip-flop's dense and sparse sets: a glitch hides in no mean
                if c["set"] != "test":
                    items.append({"label": f"{r['task']}: {c['set']} test set\n({c['count'] - c['correct']:,} "
                                           f"errors of {c['count']:,})", "value": c["accuracy"], "std": 0.0,
                                  "chance": r["chance"], "paper": [None] * len(headers), "marks": []})
        return items, headers, "test metric (R^2, accuracy, macro F1 or DFA accuracy; 1 is perfect)"

    def figure(self, path=None):
        """Horizontal bars per task: the model's test metric (with its spread), the papers' (each
        under the paper's name of the row) and the task's chance level (a dashed line); for MAD the
        task scores and their mean. Saved as ``path``, or the open Figure when ``path`` is None."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plain_text()  # never LaTeX, whatever a matplotlibrc in the current folder asks

        items, headers, xlabel = self._bars()
        n = len(items)
        series = [(drawn(f"{self.name} (this run)"), "#1f4e8c")] + [
            (drawn(f"paper: {name}"), LIGHT[i % len(LIGHT)]) for i, (_, name) in enumerate(headers)]
        per = max(0.62, 0.16 * len(series))
        fig, ax = plt.subplots(figsize=(11, 1.6 + per * n), dpi=110)
        h = 0.8 / len(series)
        lo = 0.0
        for k, (label, color) in enumerate(series):
            ys = [i + (k - (len(series) - 1) / 2) * h for i in range(n)]
            if k == 0:
                vals = [it["value"] for it in items]
                err = [[it["std"] for it in items], [min(it["std"], max(0.0, 1.0 - it["value"])) for it in items]]
                ax.barh(ys, vals, height=h, color=color, xerr=err, capsize=2, label=label)  # no bar past 1
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
                      label=drawn(f"{flat[0][1][1]} (a value of the context)"))
        free = [(i, it["content"]) for i, it in enumerate(items) if it.get("content")]
        if free:  # the higher content-free level where it lies above chance: a dash-dot line
            ax.vlines([c[0] for _, c in free], [i - 0.45 for i, _ in free], [i + 0.45 for i, _ in free],
                      colors=CONTENT_COLOR, linestyles=(0, (5, 2, 1, 2)), linewidth=1.6, zorder=4,
                      label="a content-free guess (majority or position prior)")
        dfa = [(i, it["dfa"]) for i, it in enumerate(items) if it.get("dfa")]
        for key, style, label in (("ngram", (0, (5, 2, 1, 2)), "the authors' in-context 3-gram (never trained)"),
                                  ("letter", (0, (4, 2)), "a uniformly random letter")):
            if dfa:  # RegBench: the DFA accuracy has no uniform chance; two untrained predictors' levels instead
                ax.vlines([lv[key] for _, lv in dfa], [i - 0.45 for i, _ in dfa], [i + 0.45 for i, _ in dfa],
                          colors=CONTENT_COLOR if key == "ngram" else CHANCE_COLOR, linestyles=style, linewidth=1.6,
                          zorder=4, label=label)
        y0 = -(len(series) - 1) / 2 * h  # the model's own bar
        marks = {}
        for i, it in enumerate(items):
            for x, label in it["marks"]:
                marks.setdefault(label, []).append((x, i + y0))
        for (label, points), style in zip(marks.items(), MARKS * (1 + len(marks))):
            ax.scatter([x for x, _ in points], [y for _, y in points], zorder=5, label=drawn(label), **style)
        ax.set_yticks(range(n), [drawn(it["label"]) for it in items], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(max(lo, -1.0) - 0.05, 1.05)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlabel(xlabel)
        cut = " (budget cut: not a verdict)" if any("budget cut" in it["label"] for it in items) else ""
        against = ", against the papers" if any(v is not None for it in items for v in it["paper"]) or any(
            it["marks"] for it in items) else " (no paper figure entered for these tasks)"
        ax.set_title(drawn(f"{self.name} on {self.suite}, {self.scale} scale{against}{cut}"), fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
        ax.grid(axis="x", alpha=0.3)
        fig.tight_layout()
        if path is None:
            return fig  # the caller saves and closes it
        fig.savefig(path)
        plt.close(fig)
        return None
