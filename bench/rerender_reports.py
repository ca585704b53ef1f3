"""Rebuild committed reports from the certificates their report.json keeps, after a change to how
reports read them (the statistics, the wording, the figures): report.md, report.png, lengths.png and
report.json are written again in place; no run is trained.

    python bench/rerender_reports.py docs/validation [DIR ...]
"""
import os
import sys

from longsynth.certificate import read_report
from longsynth.models_ref.reports.report import Report


def rerender(folder):
    data = read_report(folder)
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
