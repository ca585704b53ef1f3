"""Repeat After Me's string tasks and the flip-flop language (generators/repeat/, generators/flipflop/):
protocols at the tiny scale, their built-ins and suites.

- ``repeat-copy``, ``repeat-prefix-ngram``, ``repeat-suffix-ngram``: trained on packed rows of the
  authors' lengths (5-20 letters in 220 characters), tested on one example a row at 10-20 letters
  (the task's test split) and at 20, 30 and 40 letters: the longest trained, 1.5 and 2 times it;
- ``flipflop``: trained on FFL(0.8) at T 256 (the Hub's train split), tested on FFL(0.8), FFL(0.1)
  (val_dense) and FFL(0.98) (val_sparse), the reads' accuracy and errors by set in the report.

The strings' metrics are Jelassi et al.'s ``get_score`` (``string_metrics``): the answer's letters,
its '.' left out; accuracy over them, and per row the string accuracy (every letter right) and the
character accuracy (the share right), teacher-forced as theirs. Not here yet: the papers' recipes
(the paper scale) and figures.
"""
from __future__ import annotations

from longsynth.generators.repeat.strings import markers
from longsynth.generators.repeat.tasks import CopyConfig
from longsynth.models_ref.protocols.tokens import TOKENS, two_blocks

PROTOCOLS, ARCHITECTURES, SUITES, PAPER_MISSING = {}, {}, {}, {}

_JELASSI = "Jelassi et al., Repeat After Me (sjelassi/transformers_ssm_copy main.py's lengths and context)"
for _task in ("repeat-copy", "repeat-prefix-ngram", "repeat-suffix-ngram"):
    PROTOCOLS[(_task, "tiny")] = dict(
        TOKENS, task=_task, data={}, batch_size=32, steps=1500, lr=3e-3, eval_every=250, eval_batches=4,
        source=f"{_JELASSI}: trained on 5-20 letters packed into 220 characters, tested on 10-20 and at 20, 30 and 40; "
               f"ours: 1,500 steps of 32 at lr 3e-3 (cosine), two blocks of width 64",
        test_sets={str(n): {"min_eval_len": n, "max_eval_len": n} for n in (20, 30, 40)},
        string_metrics=(markers(CopyConfig().vocab_size)[2],))  # their get_score: the letters, the '.' left out
    PAPER_MISSING[_task] = ("Jelassi et al.'s figures and recipe are not entered: the copies of the paper at hand "
                            "hold its abstract, not its experiments (arXiv 2402.01032), whose finding is that "
                            "\"transformers outperform GSSMs in terms of efficiency and generalization on synthetic "
                            "tasks that require copying the context\"; their code's defaults (synthetic_exps/main.py: "
                            "12 layers of width 1,024, lr 1e-5, 2,000 steps of 8) are a demo's, not known to be the "
                            "paper's runs")
SUITES["repeat"] = [(t, t) for t in ("repeat-copy", "repeat-prefix-ngram", "repeat-suffix-ngram")]

_LIU = "Liu et al., Flip-Flop Language Modeling (the synthseq/flipflop data card's splits)"
PROTOCOLS[("flipflop", "tiny")] = dict(  # 32 batches a set: the sparse set's ~1,700 reads bound a clean run's
    # error rate below 0.2% (4 batches: 219 reads, below 1.4%)
    TOKENS, task="flipflop", data={}, batch_size=16, steps=1500, lr=3e-3, eval_every=250, eval_batches=32,
    source=f"{_LIU}: FFL(0.8) at T 256, tested on FFL(0.8), FFL(0.1) (dense) and FFL(0.98) (sparse); ours: 1,500 "
           f"steps of 16 at lr 3e-3 (cosine), two blocks of width 64",
    test_sets={"dense": {"p_ignore": 0.1}, "sparse": {"p_ignore": 0.98}})
PAPER_MISSING["flipflop"] = ("no readable copy of Liu et al.'s paper was at hand: neither their figures nor their "
                             "recipe is entered yet")
SUITES["flipflop"] = [("flipflop", "flipflop")]

ARCHITECTURES.update(two_blocks(PROTOCOLS, lambda name, scale, model: (64, {})))
