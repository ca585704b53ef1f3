"""RegBench, the in-context language learning of Akyürek et al. (generators/regbench/): its protocol at the
tiny, paper and laptop scales, its built-ins and suite.

``regbench``: trained on a fixed set of 5,000 rows (the authors' ``num_examples``: their data module draws
its DFAs once and trains on them for every epoch), scored by the DFA accuracy (their ``_get_dfa_accuracy``:
a prediction counts when the row's DFA allows it after the current string; eval_pass._dfa), on the rows of
the validation and test splits. The paper scale is their recipe (berlino/seq_icl @ 9b9223d
configs/experiment/dfa/base.yaml) with their transformer and LSTM as they build them (the built-ins
``seq-icl-transformer``, ``seq-icl-lstm``); the laptop scale the same with fewer steps. Not here: the paper's
figures (no copy of the paper was at hand) and their other rows' models.
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
# paper: seq_icl configs/experiment/dfa/base.yaml (200 epochs of the 5,000 rows, batch 32: 157 steps an epoch,
# 31,400 steps; AdamW lr 5e-4, weight decay 0.1; timm's cosine, warmup 3,140 steps from 1e-6, floor 0.1 x lr:
# training.config "timm-cosine"), configs/pipeline/dfa.yaml and configs/dataset/icl_dfa.yaml (num_test_examples
# 500: 250 test and 250 validation rows, src/dataloaders/dfa.py 348-357), validated every epoch (Lightning's
# default) and tested at the end (train.py 967-968)
_SEQ_ICL = ("berlino/seq_icl configs/experiment/dfa/base.yaml, configs/pipeline/dfa.yaml, "
            "configs/dataset/icl_dfa.yaml: 200 epochs of 5,000 training DFAs in batches of 32 (31,400 steps), "
            "AdamW lr 5e-4 and weight decay 0.1 on every parameter, timm's cosine per step (warmup 3,140 steps "
            "from 1e-6, the cosine counted from step 0, floor 5e-5), validated every epoch, tested at the end. "
            "Differs: each of our epochs is 156 batches of 32 in a seeded shuffle (their DataLoader keeps a last "
            "batch of 8: 157 a epoch); 256 validation and 256 test rows (8 batches of 32, the first of each split) "
            "where theirs are 250 each; the test is of the weights of the best validation DFA accuracy where theirs "
            "is of the best validation loss (ckpt_path='best', monitor val/loss); the rows are this task's stream "
            "(their law; their own rows depend on Python's hash seed: docs/tasks/regbench.md)")
PROTOCOLS[("regbench", "paper")] = dict(
    TOKENS, task="regbench", data={}, train_samples=5000, batch_size=32, steps=31_400, lr=5e-4, weight_decay=0.1,
    schedule="timm-cosine", warmup_steps=3140, warmup_lr_init=1e-6, min_lr=5e-5, eval_every=157, eval_batches=8,
    dfa_metric=True, source=_SEQ_ICL)
PAPER_MISSING["regbench"] = ("Akyürek et al.'s figures are not entered: the copies of the paper at hand hold its "
                             "abstract, not its results (arXiv 2401.12973), whose finding is \"Transformers "
                             "significantly outperform neural sequence models with recurrent or convolutional "
                             "representations on ICLL tasks\"; each of their rows is the best of a search over "
                             "width, depth, heads, epochs, learning rate and weight decay (their Table 3), where the "
                             "paper scale runs one setting, their repository's (berlino/seq_icl "
                             "configs/experiment/dfa/base.yaml), with their Transformer and LSTM as their code builds "
                             "them (seq-icl-transformer, seq-icl-lstm); their other rows' models (S4D, Mamba, H3, "
                             "Hyena, RWKV, RetNet, GLA, LRU, linear transformer, ...) are not built in, so no built-in "
                             "runs there in their place")
SUITES["regbench"] = [("regbench", "regbench")]

ARCHITECTURES.update(two_blocks({k: v for k, v in PROTOCOLS.items() if k[1] == "tiny"},
                                lambda name, scale, model: (64, {})))

# their models (seq_icl configs/experiment/dfa/transformer.yaml, lstm.yaml) at their sizes, at the paper and laptop
# scales (the transformer's step at batch 32 takes seconds on a core: tiny's minutes would not hold); our other
# built-ins' blocks are not theirs (seq_icl's s4d row, for one, is lm_simple's MLP block around their S4D), so they
# have no paper or laptop row
_T_ARCH = dict(d_model=128, n_layers=8, num_heads=2, attn_dropout=0.1, embed_dropout=0.1, resid_dropout=0.0,
               max_position_embeddings=4096 + 2, state_mixer="mlp", d_inner=512)
_T_SOURCE = ("seq_icl's Transformer (configs/experiment/dfa/transformer.yaml: lm_simple, 8 blocks of width 128, 2 "
             "heads, MLP 512, attention and embedding dropout 0.1, 4,098 learned positions, tied head; "
             "models_ref/models/zoology.py, state_mixer mlp)")
_L_SOURCE = ("seq_icl's LSTM (configs/experiment/dfa/lstm.yaml: lm_simple_noffn of width 32, 2 LSTM layers of which "
             "their forward uses the last alone, tied head; models_ref/models/seq_icl.py)")
_row = PROTOCOLS[("regbench", "paper")]  # the laptop rows follow (laptop.derive)
for _model, _arch, _source in (("seq-icl-transformer", _T_ARCH, _T_SOURCE),
                               ("seq-icl-lstm", dict(d_model=32, n_layers=2), _L_SOURCE)):
    ARCHITECTURES[("regbench", "paper", _model)] = dict(arch=_arch, lr=_row["lr"],
                                                        source=f"{_source}, lr {_row['lr']:g} ({_row['source']})")

# ----------------------------------------------------------------- the laptop scale (laptop.py)
# seq-icl-transformer is the slowest: evaluate --dry-run says 6.2-7.6 s a step at batch 32 (45-54 min for 400
# steps), but it times batches of 1 and 3 rows, each cut after its own last scored position (~300-400), where a
# batch of 32 is cut after its widest row's (~500-580): the first real batches of 32 took 13-22 s a step here
# (a shared machine, load 4-4.6 on 2 cores). 300 steps: 35-40 min by the dry run, about 80 min at those rates.
# seq-icl-lstm: 0.05-0.07 s a step (the paper's 31,400 steps: 24 min by the dry run)
LAPTOP = {"regbench": dict(steps=300, why="10 validations where the paper has 200 (one an epoch)")}
