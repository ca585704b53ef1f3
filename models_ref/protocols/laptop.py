"""The ``laptop`` scale: a paper's protocol at its own lengths, test lengths, widths and batch, with
as many steps as fit about an hour a run on one core of a laptop-class CPU (docs/evaluate.md,
"Scales"). A family module lists its protocols' laptop steps in ``LAPTOP`` (protocol ->
``dict(steps=..., why=..., **changes)``); ``derive`` makes each row from the paper's, its source
saying what was cut, and gives the built-ins the paper's presets there.
"""
from __future__ import annotations

EVALUATIONS = 10  # validations in a laptop run (a paper's 100 at test lengths would cost more than its training)
HOUR = "about an hour a run on one core of the development machine, measured with evaluate --dry-run"


def derive(protocols, architectures, name, steps, why, **change):
    """PROTOCOLS[(name, "laptop")] and its ARCHITECTURES rows from the paper's: ``steps`` in place of
    the paper's (warmup keeps its share; ``EVALUATIONS`` validations at most, the paper's count where
    fewer), ``change`` to the row's other fields (``why`` says why, in the row's source)."""
    paper = protocols[(name, "paper")]
    row = dict(paper, **change)
    evaluations = min(EVALUATIONS, max(1, paper["steps"] // paper["eval_every"]))
    row.update(steps=steps, warmup_steps=round(paper.get("warmup_steps", 0) * steps / paper["steps"]),
               eval_every=max(1, steps // evaluations))
    cut = f"{steps:,} of the paper's {paper['steps']:,} steps ({HOUR})"
    row["source"] = f"{paper['source']}; laptop scale: {cut}" + (f"; {why}" if why else "")
    protocols[(name, "laptop")] = row
    for (protocol, scale, model), arch in list(architectures.items()):
        if protocol == name and scale == "paper":  # a laptop lr of the protocol's own replaces the presets'
            architectures[(name, "laptop", model)] = dict(arch, lr=change["lr"]) if "lr" in change else arch
