"""The content-free levels of a run (training/metrics.py ``content_free``): what predictors that never
read a row's content score on the rows the run was scored on, the same mean as its score (over the
test sets where the protocol scores those, else the test split). The harness records them in each
certificate (``baselines``); ``of_run`` recomputes them from a certificate made before it did, from
the protocol's own data (a pure function of its parameters), for reports rebuilt from finished runs.
"""
from __future__ import annotations

from longsynth.models_ref.evaluation.protocol import on_the_fly_sources, resolve, test_set_sources
from longsynth.models_ref.training.metrics import content_free


def levels(sets):
    """{"majority", "position", "rows", "sets"} over {label: batches} (the mean of each set's level, as the
    score is the mean of each set's accuracy); None where a set has no token targets."""
    found = []
    for batches in sets.values():
        level = content_free(list(batches))
        if level is None:
            return None
        found.append(level)
    if not found:
        return None
    return {"majority": sum(v["majority"] for v in found) / len(found),
            "position": sum(v["position"] for v in found) / len(found),
            "rows": sum(v["rows"] for v in found), "sets": len(found)}


def of_run(run):
    """The levels of a finished run's certificate, from its protocol's data at its batch size (None for a run
    on a stored dataset, without token targets, or of a protocol no longer known)."""
    if run.get("primary_metric") != "accuracy" or (run.get("data") or {}).get("dataset") or run.get("test") is None:
        return None
    proto = resolve(run["protocol"], run["scale"], task=run["task"])
    size = run.get("global_batch_size") or proto.batch_size
    if run.get("scored_on") == "test sets" and proto.test_sets:
        return levels({label: batches() for label, batches in test_set_sources(proto, size).items()})
    return levels({"test": on_the_fly_sources(proto, size)[2]()})


def dfa_levels(batches, vocab_size):
    """{"ngram", "letter", "positions"} over RegBench's evaluation batches (x, y, {"allowed"}) (docs/tasks/regbench.md):
    the DFA accuracy of the authors' in-context 3-gram (generators/regbench/scoring.py) and the expected DFA
    accuracy of a uniformly random letter, two predictors that are never trained; None without a scored position."""
    import numpy as np

    from longsynth.generators.regbench.scoring import ngram_predictions

    letters = vocab_size - 2
    right = expected = positions = 0
    for x, y, extras in batches:
        allowed, scored = extras["allowed"].numpy(), y.numpy() != -100
        pred = ngram_predictions(x.numpy(), vocab_size) - 1  # the predicted letter's bit; -1: none
        ok = (pred >= 0) & (((allowed >> np.clip(pred, 0, 62)) & 1) == 1)
        count = sum((allowed >> a) & 1 for a in range(letters))  # the letters allowed at each position
        right += int((ok & scored).sum())
        expected += float((count[scored] / letters).sum())
        positions += int(scored.sum())
    return {"ngram": right / positions, "letter": expected / positions, "positions": positions} if positions else None


def dfa_levels_of_run(run):
    """``dfa_levels`` of a finished DFA-accuracy run, from its protocol's test rows at its batch size (None for a
    run of another metric): for reports rebuilt from runs made before certificates recorded them."""
    if run.get("primary_metric") != "dfa_accuracy" or run.get("test") is None:
        return None
    from longsynth import registry

    proto = resolve(run["protocol"], run["scale"], task=run["task"])
    _, _, test, params = on_the_fly_sources(proto, run.get("global_batch_size") or proto.batch_size)
    task = registry.get(proto.task)
    return dfa_levels(test(), task.vocab_size(task.make_config(**params)))
