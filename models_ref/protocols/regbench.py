"""RegBench, the in-context language learning of Akyürek et al. (generators/regbench/): its protocol at the
tiny scale, its built-ins and suite.

``regbench``: trained on a fixed set of 5,000 rows (the authors' ``num_examples``: their data module draws
its DFAs once and trains on them for every epoch), scored by the DFA accuracy (their ``_get_dfa_accuracy``:
a prediction counts when the row's DFA allows it after the current string; eval_pass._dfa), on the rows of
the validation and test splits. Not here yet: the paper's recipe (its scale) and figures.
"""
from __future__ import annotations

from longsynth.models_ref.protocols.tokens import TOKENS, two_blocks

PROTOCOLS, ARCHITECTURES, SUITES, PAPER_MISSING = {}, {}, {}, {}

_AKYUREK = "Akyürek et al., In-Context Language Learning (berlino/seq_icl icl_dfa.yaml's data, 5,000 training DFAs)"
PROTOCOLS[("regbench", "tiny")] = dict(
    TOKENS, task="regbench", data={}, train_samples=5000, batch_size=16, steps=1500, lr=1e-3, weight_decay=0.1,
    warmup_steps=75, eval_every=250, eval_batches=8, dfa_metric=True,
    source=f"{_AKYUREK}, scored by their DFA accuracy; ours: 1,500 steps of 16 rows at lr 1e-3 (AdamW, weight decay "
           f"0.1, 75 warmup steps, cosine), two blocks of width 64")
PAPER_MISSING["regbench"] = ("no readable copy of Akyürek et al.'s paper was at hand, so its figures are not entered; "
                             "their recipe (berlino/seq_icl configs/experiment/dfa/base.yaml: 200 epochs of the 5,000 "
                             "rows in batches of 32, 31,400 steps, AdamW lr 5e-4 and weight decay 0.1, cosine after 20 "
                             "epochs of warmup) and models (transformer.yaml: 8 layers of width 128) are not a paper "
                             "scale here yet: this protocol trains on 2.4% of their rows")
SUITES["regbench"] = [("regbench", "regbench")]

ARCHITECTURES.update(two_blocks(PROTOCOLS, lambda name, scale, model: (64, {})))
