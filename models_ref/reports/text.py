"""A report in words: the plain-text table the CLI prints, report.md (the table, the chance
levels, the papers' sources, MAD's task scores, caveats, diverged runs, accuracy by length), and
a validate certificate in a few lines (``summary``).

Every string a report reads from a run's certificate (its task, protocol, metric and source, a paper
column's name, a test set's label, an option, where it diverged) is a stranger's where the run folder
is: report.md holds it through ``escape.markdown`` (``_md``: each item of a list apart), the terminal
through ``escape.visible``.
"""
from __future__ import annotations

import math
import os
import re

from longsynth.models_ref.protocols.mad import GROUP_NAMES, GROUP_SOURCE, GROUPS
from longsynth.models_ref.protocols.registry import (PROTOCOLS, TOLERANCE, column_source, default_lrs,
                                                     paper_split)
from longsynth.escape import markdown, visible
from longsynth.models_ref.reports.records import (METRIC_NAMES, _level_text, _lr, _mine, _pct, _run_name, binned,
                                                  display_name, diverged_text, member, score_of,
                                                  train_lengths)


_NAME = re.compile(r"[\w.,+=:/-]+", re.ASCII)  # a suite's name (a comma list of them) as a code span holds it


_SAYS_LR = re.compile(r"\blr\b|learning rate")  # a laptop cut that already names its learning rate


def _md(items):
    """Items (strings or numbers) as report.md holds them: each ``escape.markdown``, joined by ", "."""
    return ", ".join(markdown(v) for v in items)


def _seeds_text(row):
    """The model's cell: the mean and standard deviation over seeds, or the one run's figure; where the paper's
    figure is a best-of and there are several runs, our best run beside it."""
    best = f"; best of {row['best_of_runs']} runs {row['best_of']:.3f}" if row.get("reads_best_of") else ""
    if row["seeds"] == 1:
        return f"{row['test_mean']:.3f} (n = 1, no spread{best})"
    return f"{row['test_mean']:.3f} ± {row['test_std']:.3f} (n = {row['seeds']}{best})"


_STEPS = re.compile(r"(?<![\w.])\d[\d,]* steps( at lr [0-9.eE+-]+)?")  # a recipe's budget (and rate) in its prose


def _recipes(runs):
    """The recipes of a report's protocols, each once: their budget (and rate) said per task instead."""
    return list(dict.fromkeys(_STEPS.sub("the steps above", run["protocol_source"]) for run in runs
                              if run.get("protocol_source")))


def _setting(row, run):
    """What a tiny row trained: its training lengths (or its row length) and its steps."""
    lengths = train_lengths(run)
    at = (f"train lengths {lengths[0]:,}-{lengths[1]:,}" if lengths else
          f"L = {row['length']:,}" if row.get("length") else None)
    return ", ".join(v for v in (at, f"{row['steps']:,} steps") if v)


class ReportText:
    """The renderings in words of a ``report.Report`` (its rows, headers and summary)."""


    def table(self):
        """Plain-text table of the rows (what the CLI prints)."""
        name = visible(self.name)
        name = name if len(name) <= 40 else name[:37] + "..."
        rows = self.rows()
        headers = self.headers(rows)
        head = ["task", "metric", name, "chance", "lr", *(n for _, n in headers), "verdict"]
        lines = [head]
        for r in rows:
            mine = _mine(r) if r["test_mean"] is None else _seeds_text(r)
            lines.append([r["task"], METRIC_NAMES.get(r["metric"], r["metric"]), mine, _level_text(r["chance"]),
                          _lr(r["best_lr"]),
                          *("-" if self._cell(r, h) is None else f"{self._cell(r, h):.2f}" for h in headers),
                          r["verdict"]])
        lines = [[visible(v) for v in row] for row in lines]  # a certificate's strings: one line each
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
            text += f"\n{visible(what)} {r['score']:.3f}{visible(beside)}{note}"
        for run in self.diverged():
            text += f"\n{visible(_run_name(run))}: {visible(diverged_text(run))}"
        return text

    def _laptop_cuts(self):
        """At the laptop scale, a paragraph saying what each protocol cut from the paper's recipe (its certificate's
        source) and the learning rate where it is not the paper's: the papers' figures are the whole recipe's."""
        if self.scale != "laptop":
            return []
        cuts = {}  # what was cut -> the tasks
        for v in self.runs:
            source = str(v.get("protocol_source") or "")
            cut = source.split("laptop scale: ", 1)[1] if "laptop scale: " in source else "fewer steps"
            paper = PROTOCOLS.get((v.get("protocol"), "paper")) or {}
            lr, theirs = v.get("lr"), None if paper.get("lrs") else paper.get("lr")  # the paper's one lr, if one
            if lr is not None and theirs is not None and not math.isclose(lr, theirs) and not _SAYS_LR.search(cut):
                cut += f"; lr {lr:g} where the paper's recipe has {theirs:g}"
            planned = ((v.get("schedule") or {}).get("protocol") or {}).get("steps")
            if planned is not None and v.get("steps") is not None and v["steps"] != planned:
                cut += f"; this run trained {v['steps']:,} steps (--steps)"
            cuts.setdefault(cut, set()).add(v["task"])
        said = "; ".join(f"{_md(sorted(tasks))}: {markdown(cut)}" for cut, tasks in sorted(cuts.items()))
        return [f"**Laptop scale**: the paper's protocol at about an hour a run on one CPU core, what it cuts from "
                f"the recipe named ({said}; "
                "docs/evaluate.md, \"Scales\"). The papers' figures are their whole recipe's: a verdict here reads "
                "this budget's result beside them, not a reproduction.", ""]

    def _lrs_given(self):
        """A paragraph where --lr set the learning rates: what the runs would have taken without it."""
        given = self.settings.get("lrs")
        if not given:
            return []
        defaults = {}  # the lrs a run takes without --lr -> its tasks
        for r in self.runs:
            try:
                lrs = default_lrs(r["protocol"], r["scale"], r["model"], r["task"],
                                  (r.get("model_identity") or {}).get("sha256") is None)
            except KeyError:  # a protocol or scale this version does not know
                continue
            defaults.setdefault(lrs, set()).add(r["task"])
        if set(defaults) == {tuple(given)}:  # --lr gave what every run takes without it
            return []
        said = "; ".join(f"{', '.join(f'{lr:g}' for lr in lrs)} on {_md(sorted(tasks))}"
                         for lrs, tasks in sorted(defaults.items()))
        return [f"**Learning rate set by `--lr`**: {', '.join(f'{lr:g}' for lr in given)}"
                + (f", in place of what this model takes at this protocol and scale: {said}" if said else "")
                + ". The protocol's recipe is otherwise unchanged.", ""]

    def to_markdown(self):
        s = self.settings
        rows = self.rows()
        headers = self.headers(rows)
        on_val = any(paper_split(r["protocol"]) == "val" for r in rows)
        # a suite's name in a code span, where no escape applies: any other text escaped outside one
        suite = f"`{self.suite}`" if _NAME.fullmatch(str(self.suite)) else markdown(self.suite)
        out = [f"# {markdown(self.name)} on {suite} ({markdown(self.scale)} scale)", "",
               f"Test metric at the best learning rate by validation (tried: "
               f"{', '.join(f'{lr:g}' for lr in sorted({r['lr'] for r in self.runs}))}), mean ± standard "
               f"deviation over {s.get('seeds', 1)} seed(s)"
               + ("; the papers' figures beside it, each column named as its paper names the row" if headers else
                  "; no paper figure is entered for these tasks (below)")
               + (" (the DLR paper's Tables 1 and 2 are validation averages: their verdicts read our validation "
                  "metric)." if on_val else "."), ""]
        by_sets = sorted({r["task"] for r in self.runs if r.get("scored_on") == "test sets"})
        if by_sets:
            out += [f"On {_md(by_sets)} the test metric is the mean over the protocol's test sets (its test "
                    "lengths, each beyond the training ones: the paper's score); the table under \"Accuracy by test "
                    "length\" gives each.", ""]
        cut = [r for r in rows if r["budget"] is not None]
        if cut:
            budgets = {}
            for r in cut:
                trained = round(r["protocol_steps"] * r["budget"])
                budgets.setdefault((trained, r["protocol_steps"]), []).append(r["task"])
            out += ["**Budget cut**: " + "; ".join(
                f"{_md(tasks)} trained {steps:,} of {'its' if len(tasks) == 1 else 'their'} protocol's "
                f"{total:,} steps ({_pct(steps / total)})" for (steps, total), tasks in budgets.items())
                + " (`--steps`). A run cut short says what the model reached in those steps, not whether it "
                  "reproduces the paper: its verdict is not a verdict.", ""]
        out += self._lrs_given()
        if self.scale == "tiny":
            settings = {}  # what a row trained -> the rows
            for r in rows:
                run = next((v for v in self.runs if v["protocol"] == r["protocol"] and member(v) == r["task"]), None)
                if run is not None:
                    settings.setdefault(_setting(r, run), []).append(r["task"])
            here = "; ".join(f"{_md(tasks)}{' at' if what.startswith('L = ') else ':'} {markdown(what)}"
                             for what, tasks in settings.items())
            recipes = [markdown(r) for r in _recipes(self.runs)]
            out += [f"The tiny scale shrinks the papers' recipes (here: {here}; docs/evaluate.md), so the papers' "
                    "figures are a reference, not a target." + (f" Recipes: {'; '.join(recipes)}." if recipes
                                                                 else ""), ""]
        out += self._laptop_cuts()
        in_dist = any(r.get("in_distribution") is not None for r in rows)
        free = any(r.get("position_prior") is not None for r in rows)
        head = ["task", "metric", markdown(self.name), *(["in-distribution"] if in_dist else []), "chance",
                *(["majority", "position prior"] if free else []), "best lr",
                *(f"paper: {markdown(n)}" for _, n in headers), "verdict"]
        out += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for r in rows:
            mine = _mine(r) if r["test_mean"] is None else _seeds_text(r)
            paper = ["-" if self._cell(r, h) is None else f"{self._cell(r, h):.2f}" for h in headers]
            cells = [markdown(r["task"]), markdown(METRIC_NAMES.get(r["metric"], r["metric"])), mine, *([_level_text(
                r.get("in_distribution"))] if in_dist else []), _level_text(r["chance"]),
                *([_level_text(r.get("majority")), _level_text(r.get("position_prior"))] if free else []),
                _lr(r["best_lr"]), *paper,
                markdown(r["verdict"])]
            out.append("| " + " | ".join(cells) + " |")
        out += ["", self._chance_line(rows)] + self._dfa_markdown()
        if free:
            out += ["", "Majority and position prior: what two predictors that never read a row's content score on "
                        "the same test rows: the most frequent answer, and the most frequent answer at each position "
                        "of each row length (each fitted on half of the rows and scored on the other half). A model "
                        "may score well above uniform chance from the length and the position alone; a result "
                        "that is not above the higher of them is said to be \"no better than a content-free guess\"."]
        statistic = {r["paper_statistic"] for r in rows if r.get("reads_best_of")}
        if statistic:
            out += ["", "The papers' figures here are best-ofs (" + "; ".join(map(markdown, sorted(statistic)))
                    + "): a verdict reads our best run over every learning rate and seed tried (\"best of N runs\"), "
                      "beside them, and the mean ± sd at the best learning rate stays in the table."]
        if in_dist:
            out += ["", "In-distribution: the test split at the training lengths, beside the score beyond them; a "
                        "model that did not learn is low on both, one that did not generalise only beyond."]
        if any(r["seeds"] > 1 for r in rows):
            out += ["", "Seeds: " + "; ".join(f"{markdown(r['task'])} " + ", ".join(f"{v:.3f}" for v in r["per_seed"])
                                              + f" (best run {r['best_run']:.3f})" for r in rows if r["seeds"] > 1)
                    + ". \"At chance\" means every seed is, each within two standard errors over the rows it "
                      "scored."]
        out += self._model_notes(rows)
        sources = self._sources(rows)
        if sources:
            out += ["", "Paper columns, each named as its paper names the row, and where its figures come from: "
                    + "; ".join(f"{_md(names)}: {markdown(src)}" for src, names in sources.items()) + "."]
        tables = sorted({r["paper_source"] for r in rows if r["paper_source"]})
        if tables:
            out += ["", "Sources: " + "; ".join(map(markdown, tables)) + "."]
        missing = sorted({r["paper_missing"] for r in rows if r["paper_missing"]})
        if missing:
            out += ["", "Paper figures not entered: " + "; ".join(map(markdown, missing)) + "."]
        out += self._summary_markdown() + self._caveats_markdown(rows) + self._diverged_markdown() \
            + self._lengths_markdown() + self._sets_markdown()
        out += ["", f"Runs: {len(self.runs)}, each with its certificate under runs/ beside the report where it was "
                       "written (curves, history, metrics; the copies kept in docs/validation/ leave them out)."]
        return "\n".join(out) + "\n"

    def _model_notes(self, rows):
        """What the model did that a reader should know: it read whole rows where a protocol allows it; it
        ignored a grid's width or depth (the same parameters at every point)."""
        out = []
        whole = [r["task"] for r in rows if r.get("causal") is False]
        if whole:
            out += ["", f"Direction: {markdown(self.name)} read the whole row (the causality check saw outputs move "
                        f"with later inputs) on {_md(whole)}: these protocols allow it, their rows holding no "
                        "target among the inputs (the Chomsky hierarchy's Transformer is such an encoder; its "
                        "recurrent models read left to right)."]
        for r in rows:
            if r.get("options_tried", 1) > 1 and r.get("best_options"):
                best = _md(f"{k} {v}" for k, v in sorted(r["best_options"].items()))
                out += ["", f"Options: {markdown(r['task'])}: {r['options_tried']} configurations of "
                            f"{markdown(self.name)} tried (the protocol's grid: the paper's column is the best of "
                            f"them); the best by validation: {best}."]
        grids = {}
        for r in rows:
            for axis in ("width", "depth"):
                if r.get(axis) is not None:
                    grids.setdefault((r["protocol"], axis), []).append(r)
        for (protocol, axis), members in grids.items():
            counts = {r.get("parameters") for r in members}
            if len(members) > 1 and len(counts) == 1 and None not in counts:
                field = "d_model" if axis == "width" else "n_layers"
                out += ["", f"Grid: {_md(r['task'] for r in members)} are one model: {counts.pop():,} "
                            f"parameters at every {axis}, so it ignores spec.{field} (docs/evaluate.md, \"The model "
                            "contract\")."]
        return out

    def _dfa_markdown(self):
        """RegBench: what two predictors that are never trained score on the same test rows, as the runs' certificates
        record them (the DFA accuracy has no uniform chance: a guess is right as often as the row's DFA allows
        letters)."""
        levels = next((r["dfa_levels"] for r in self.runs if isinstance(r.get("dfa_levels"), dict)), None)
        if levels is None:
            return []
        return ["", f"Reference levels of the DFA accuracy, from predictors never trained, on the same test rows "
                    f"({levels['positions']:,} scored positions): the authors' in-context 3-gram (their ngram.py: "
                    f"counts of the row's own earlier text) **{levels['ngram']:.3f}**, a uniformly random letter "
                    f"{levels['letter']:.3f} (its expectation). A model below the 3-gram does less with its context "
                    f"than counting it (docs/tasks/regbench.md)."]

    @staticmethod
    def _chance_line(rows):
        levels = {}
        for r in rows:
            if r["chance"] is not None:
                levels.setdefault((f"{r['chance']:.3f}", r["chance_why"]), []).append(r["task"])
        why = [f"{_md(tasks)} {level} ({markdown(text)})" for (level, text), tasks in levels.items()]
        none = [markdown(r["task"]) for r in rows if r["chance"] is None]
        return ("Chance: what a model that learned nothing scores (a uniform guess among the task's candidate "
                "answers; R^2 0 for a regression), drawn as a dashed line on report.png"
                + (f": {'; '.join(why)}" if why else "")
                + (f"; none defined for {', '.join(none)}" if none else "") + ". A result is said to be at "
                "chance when every seed's is, each within two standard errors over the rows it scored (at least 0.02).")

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
            which = _md(f"{r['group']} {r['settings']} of {r['of']}" for r in partial)
            out[-1] += (f" This report has fewer settings than MAD averages for {len(partial)} task(s) ({which}): "
                        "those scores are not MAD's task scores.")
        if mean is not None:
            six = _md(f"{GROUP_NAMES.get(c, c)} {v:.3f}" for c, v in mean["paper_mad_score"].items())
            out[-1] += (f" The mean is over the {mean['tasks']} comparable task(s) here"
                        + (f", {_md(mean['excluded'])} kept apart (not comparable: see Caveats)"
                           if mean["excluded"] else "")
                        + f", beside the papers' mean over the same tasks (their own MAD score, over all six tasks "
                          f"compression included: {six}).")
        cut = [r for r in rows if r["budget"] is not None and r["group"] != "mean"]
        if cut:
            out[-1] += (" Budget cut (`--steps`) for " + _md(r["group"] for r in cut)
                        + ": those scores are not verdicts.")
        out += ["", f"Papers: {markdown(GROUP_SOURCE)}.", "",
                f"| task | settings | chance | {markdown(self.name)} | "
                + " | ".join(f"paper: {markdown(GROUP_NAMES.get(c, c))}" for c in cols) + " |",
                "|---" * (4 + len(cols)) + "|"]
        for r in rows:
            name = (f"mean of {r['tasks']} task(s)" + (f" ({_md(r['excluded'])} apart)" if r["excluded"] else "")
                    if r["group"] == "mean" else markdown(r["group"]) + (" (not comparable: see Caveats; not in the "
                                                                         "mean)" if r["caveat"] else ""))
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
        return ["", "## Caveats", "",
                *(f"- {markdown(task)}: {markdown(text)} (docs/evaluate.md, \"Where we differ from the authors\")."
                  for task, text in why)]

    def _diverged_markdown(self):
        """The runs that diverged: where, and their last finite validation figure."""
        runs = self.diverged()
        if not runs:
            return []
        return ["", "## Diverged runs", "",
                "A loss or metric became NaN or infinite; the run stopped there, has no test result, and its "
                "learning rate is not chosen (docs/evaluate.md, \"Diverged runs\").", "",
                *(f"- {markdown(_run_name(r))}: {markdown(diverged_text(r))}" for r in runs)]

    def _lengths_markdown(self):
        """The accuracy-by-length section (lengths.png draws it), for rows that have one."""
        rows = [r for r in self.rows() if r["by_length"]]
        if not rows:
            return []
        out = ["", "## Accuracy by test length", "",
               "Test accuracy of the best learning rate's runs, by the length of the test sequences (the "
               "protocol's test sets, or its test split grouped by each sequence's length, or by the position of "
               "each scored token); ranges of lengths where there are many. lengths.png draws it."
               + (" String accuracy: the share of test rows whose every scored target is right (Repeat After Me's "
                  "get_score: the answer's letters, given the true prefix)."
                  if any("string_accuracy" in c for r in rows for c in r["by_length"]) else ""), ""]
        if any(r.get("by_length_seeds") for r in rows):
            out += ["With several seeds, the first line pools their test rows (the accuracy over every seed's answers) "
                    "and a line per seed follows: a pooled curve that falls may be one seed that failed among "
                    "seeds that hold.", ""]
        for r in rows:
            seeds = r.get("by_length_seeds") or []
            for kind in dict.fromkeys(c["kind"] for c in r["by_length"]):
                cells = binned([c for c in r["by_length"] if c["kind"] == kind])
                at = [f"{a:,}" if a == z else f"{a:,}-{z:,}" for a, z, _, _ in cells]
                pooled = f"accuracy, {len(seeds)} seeds pooled" if seeds else "accuracy"
                out += [f"{markdown(r['task'])}, by {kind}:", "", "| " + kind + " | " + " | ".join(at) + " |",
                        "|---" * (len(at) + 1) + "|",
                        f"| {pooled} | " + " | ".join(f"{acc:.3f}" for _, _, acc, _ in cells) + " |"]
                for s in seeds:
                    own = binned([c for c in s["cells"] if c["kind"] == kind])
                    if [(a, z) for a, z, _, _ in own] == [(a, z) for a, z, _, _ in cells]:  # the same bins
                        out += [f"| seed {s['seed']} | " + " | ".join(f"{acc:.3f}" for _, _, acc, _ in own) + " |"]
                strings = [c.get("string_accuracy") for c in r["by_length"] if c["kind"] == kind]
                if len(strings) == len(cells) and None not in strings:  # unbinned, each with its strings' share
                    out += ["| string accuracy | " + " | ".join(f"{v:.3f}" for v in strings) + " |"]
                out += [""]
        return out

    def _sets_markdown(self):
        """The accuracy-by-test-set section, for rows tested on sets named otherwise than by a length (flip-flop's
        dense and sparse splits): the accuracy, and the errors with their 95% upper bound where there are none
        (the rule of three: fewer than 3/n errors a target)."""
        rows = [r for r in self.rows() if r.get("by_set")]
        if not rows:
            return []
        out = ["", "## Accuracy by test set", "",
               "Test accuracy of the best learning rate's runs on the task's own test split (test: the training "
               "parameters) and on each of the protocol's test sets (their parameters are in its source above), "
               "and the errors: where a set has none, the error rate is below 3/n with 95% confidence (n scored "
               "targets), not 0.", ""]
        for r in rows:
            sets = r["by_set"]
            errors = [f"{c['count'] - c['correct']:,} of {c['count']:,}" + (
                f" (< {3 / c['count']:.2g} a target, 95%)" if c["correct"] == c["count"] else "") for c in sets]
            out += [f"{markdown(r['task'])}, by test set:", "",
                    "| test set | " + " | ".join(markdown(c["set"]) for c in sets) + " |",
                    "|---" * (len(sets) + 1) + "|",
                    "| accuracy | " + " | ".join(f"{c['accuracy']:.4f}" for c in sets) + " |",
                    "| errors | " + " | ".join(errors) + " |", ""]
        return out


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
    who = visible(display_name(cert.get("model_identity") or {"model": cert["model"]}))  # a file's name, no path
    lines = [f"{who} on {cert['target']} ({cert['protocol']}, {cert['scale']}): {how}"]
    primary = cert.get("primary_metric")
    name = METRIC_NAMES.get(primary, primary)
    test = (score_of(cert) or {}).get(primary)
    if cert.get("scored_on") == "test sets":
        name = f"{name} (the mean over the test sets)"
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
    return "\n".join(visible(line) for line in lines)  # a certificate's strings and a user's path: one line each
