"""Repeat After Me's string tasks (generators/repeat/): protocols at the tiny scale, their built-ins
and suite.

- ``repeat-copy``, ``repeat-prefix-ngram``, ``repeat-suffix-ngram``: trained on packed rows of the
  authors' lengths (5-20 letters in 220 characters), tested on one example a row at 10-20 letters
  (the task's test split) and at 30 and 40 letters, 1.5 and 2 times the longest trained.

The metrics are Jelassi et al.'s ``get_score`` (``string_metrics``): the answer's letters, its '.'
left out; accuracy over them, and per row the string accuracy (every letter right) and the
character accuracy (the share right), teacher-forced as theirs. Not here yet: the paper's recipe
(the paper scale), the paper's figures, and flip-flop's protocol (its test sets are splits of other
p, which the reports do not show by name yet).
"""
from __future__ import annotations

from longsynth.generators.repeat.strings import markers
from longsynth.models_ref.protocols.tokens import TOKENS, two_blocks

PROTOCOLS, ARCHITECTURES, SUITES, PAPER_MISSING = {}, {}, {}, {}

_JELASSI = "Jelassi et al., Repeat After Me (sjelassi/transformers_ssm_copy main.py's lengths and context)"
for _task in ("repeat-copy", "repeat-prefix-ngram", "repeat-suffix-ngram"):
    PROTOCOLS[(_task, "tiny")] = dict(
        TOKENS, task=_task, data={}, batch_size=32, steps=1500, lr=3e-3, eval_every=250, eval_batches=4,
        source=f"{_JELASSI}: trained on 5-20 letters packed into 220 characters, tested on 10-20 and at 30 and 40; "
               f"ours: 1,500 steps of 32 at lr 3e-3 (cosine), two blocks of width 64",
        test_sets={str(n): {"min_eval_len": n, "max_eval_len": n} for n in (30, 40)},
        string_metrics=(markers(26)[2],))  # their get_score: the answer's letters, its '.' left out
    PAPER_MISSING[_task] = ("Jelassi et al. plot their accuracies (Figures 2-5) and give no table; their recipe is not "
                            "entered here yet")
SUITES["repeat"] = [(t, t) for t in ("repeat-copy", "repeat-prefix-ngram", "repeat-suffix-ngram")]

ARCHITECTURES.update(two_blocks(PROTOCOLS, lambda name, scale, model: (64, {})))
