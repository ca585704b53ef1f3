"""Rebuild committed reports from the certificates their report.json keeps, after a change to how
reports read them (the statistics, the wording, the figures): report.md, report.png, lengths.png and
report.json are written again in place; no run is trained. A run recorded before certificates held
their content-free levels gets them here, from its protocol's data (models_ref/evaluation/baselines.py).

    python bench/rerender_reports.py docs/validation [DIR ...]
"""
import os
import sys

from longsynth.certificate import read_report
from longsynth.models_ref.evaluation.baselines import dfa_levels_of_run, of_run
from longsynth.models_ref.reports.report import Report


def rerender(folder):
    data = read_report(folder)
    known = {}  # (protocol, scale, task, batch) -> levels: the seeds and learning rates of a row share their data
    for run in data["runs"]:
        if "baselines" not in run:
            key = (run["protocol"], run["scale"], run["task"], run.get("global_batch_size"))
            if key not in known:
                known[key] = of_run(run)
            run["baselines"] = known[key]
        if run.get("primary_metric") == "dfa_accuracy" and "dfa_levels" not in run:  # runs made before they were kept
            run["dfa_levels"] = dfa_levels_of_run(run)
    report = Report(identity=data["model"], suite=data["suite"], scale=data["scale"],
                    settings=data.get("settings") or {}, runs=data["runs"])
    report.write(folder)
    return len(data["runs"])


def main(roots):
    for root in roots:
        for folder, _, files in sorted(os.walk(root)):
            if "report.json" in files:
                print(f"{folder}: {rerender(folder)} runs", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["docs/validation"])
