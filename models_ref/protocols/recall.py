"""Recall and copying (generators/recall/): zoology's MQAR, H3's synthetics, Mamba's selective
copying and induction heads: protocols, presets, figures, suites and certificates' controls.

- MQAR: Figure 2's grid of (length, pairs), its learning-rate sweep and width grid;
- H3's synthetics (Table 1): induction head and associative recall;
- Mamba's selective copying (Table 1) and induction heads (Table 11: trained at one length,
  tested at longer ones).

``scale="tiny"`` shrinks a recipe to run on one CPU core in minutes; its rows say what changed.
"""
from __future__ import annotations

import math

from longsynth.models_ref.protocols.tokens import TOKENS, two_blocks

ZOOLOGY_LRS = tuple(float(10 ** (-4 + 2 * i / 3)) for i in range(4))  # numpy.logspace(-4, -2, 4)

PROTOCOLS, ARCHITECTURES, PAPER, PAPER_SOURCE, SUITES = {}, {}, {}, {}, {}
PAPER_NAMES, PAPER_FROM = {}, {}  # protocol -> {column: the paper's name of the row}, {column: its source}
PAPER_STATISTIC = {}  # protocol -> the statistic its paper's figures are, where they are a best-of (registry.py)

# ----------------------------------------------------------------- zoology's MQAR (Figure 2)
# zoology/experiments/paper_configs/iclr24_zoology_figure2/configs.py: 100K train and 3K test
# sequences per (L, pairs), V 8192, random_non_queries off, batch 512 / 512 / 256 / 128 at
# L 64 / 128 / 256 / 512, 64 epochs, lr in logspace(-4, -2, 4), d_model in {64, 128, 256, 512},
# two layers; zoology/train.py: AdamW, weight decay 0.1, cosine annealing over the run.
MQAR_GRID = ((64, 4, 512), (128, 8, 512), (256, 16, 256), (512, 64, 128))
_ZOO = "zoology Figure 2 (zoology/experiments/paper_configs/iclr24_zoology_figure2/configs.py; zoology/train.py)"
for _L, _kv, _B in MQAR_GRID:
    _name = f"mqar-{_L}"
    PROTOCOLS[(_name, "paper")] = dict(
        TOKENS, task="mqar", data={"input_seq_len": _L, "num_kv_pairs": _kv}, batch_size=_B,
        steps=64 * 100_000 // _B, lr=1e-3, weight_decay=0.1, eval_every=100_000 // _B,
        eval_batches=math.ceil(3000 / _B), train_samples=100_000, lrs=ZOOLOGY_LRS, widths=(64, 128, 256, 512),
        source=_ZOO)
# tiny: Figure 2's first cell alone, V 128 (MQAR needs V > L), 20K training sequences, batch 64 at lr 3e-3, one
# width (attention leaves 0.25, copying a value of the context, after ~900 steps: docs/validation.md)
PROTOCOLS[("mqar-64", "tiny")] = dict(
    TOKENS, task="mqar", data={"input_seq_len": 64, "num_kv_pairs": 4, "vocab_size": 128}, batch_size=64,
    steps=3000, lr=3e-3, weight_decay=0.1, eval_every=500, eval_batches=4, train_samples=20_000, widths=(64,),
    source=f"{_ZOO}, its (64, 4) cell shrunk: V 128, 20K sequences, 3,000 steps of 64 at lr 3e-3, width 64")
# tiny, Figure 2's question (does a gated convolution need width where attention does not?): its (128, 8) cell at
# two widths, V 256, 20K sequences, 3,000 steps of 64 at lr 3e-3 (docs/validation.md, "Findings": zoology Figure 2)
PROTOCOLS[("mqar-128", "tiny")] = dict(
    TOKENS, task="mqar", data={"input_seq_len": 128, "num_kv_pairs": 8, "vocab_size": 256}, batch_size=64,
    steps=3000, lr=3e-3, weight_decay=0.1, eval_every=500, eval_batches=4, train_samples=20_000, widths=(64, 256),
    source=f"{_ZOO}, its (128, 8) cell shrunk: V 256, 20K sequences, 3,000 steps of 64 at lr 3e-3, widths 64 and 256")
SUITES["mqar"] = [(f"mqar-{L}", "mqar") for L, _, _ in MQAR_GRID]
# Figure 2's accuracies read off the plot (assets/figure2.png, +-0.03): attention 0.97-1.0 in every
# cell (0.98 here); gated convolutions at the widths where a value could be read.
_MQAR_FIG = {
    "mqar-64": {"attention": .98, "h3 (d 64)": .90, "rwkv (d 64)": .74, "base_conv (d 64)": .69, "hyena (d 64)": .51},
    "mqar-128": {"attention": .98},
    "mqar-256": {"attention": .98, "base_conv (d 512)": .91, "rwkv (d 512)": .78, "hyena (d 512)": .68,
                 "h3 (d 512)": .65},
    "mqar-512": {"attention": .98, "base_conv (d 512)": .70, "rwkv (d 512)": .37, "hyena (d 512)": .18,
                 "h3 (d 512)": .10, "hyena (d 64)": .02},
}
_MQAR_NAMES = {"attention": "Attention", "h3": "H3", "rwkv": "RWKV", "base_conv": "BaseConv", "hyena": "Hyena"}
for _name, _figs in _MQAR_FIG.items():
    PAPER[_name] = {c: {"accuracy": v} for c, v in _figs.items()}
    PAPER_SOURCE[_name] = "zoology Figure 2, read off the plot (+-0.03)"
    PAPER_STATISTIC[_name] = "the best run of a learning-rate sweep (zoology Figure 2: one seed, the best of 4 rates)"
    PAPER_NAMES[_name] = {c: "Attention (every width)" if c == "attention" else
                          f"{_MQAR_NAMES[c.split(' (')[0]]}, d_model {c.split('(d ')[1].rstrip(')')}" for c in _figs}
    PAPER_FROM[_name] = {c: f"zoology Figure 2 (MQAR, {_name.split('-')[1]} tokens), read off the plot (+-0.03)"
                         for c in _figs}

# ----------------------------------------------------------------- H3's synthetics (Table 1)
# safari configs/experiment/synthetics/{induction_head,associative_recall}/*.yaml (the V 10 recall runs:
# *-vs10.yaml) and src/dataloaders/synthetics.py: 5,000 training and 500 test sequences, batch 32,
# AdamW lr 5e-4, weight decay 0.1; induction head 400 epochs (62,800 steps) with a cosine schedule
# after 6,280 warmup steps, recall 200 epochs (31,400 steps) with a linear one after 3,140; the
# test scores the last token only; models of width 32, two layers. The induction head's schedule is timm's cosine
# stepped per update (induction_head/base.yaml 4, 18-23: warmup from 1e-6, floor 0.1 x lr), the recall's
# transformers' linear warmup and decay to 0 (associative_recall/base.yaml 2-4, 19-21).
_H3 = "H3 paper Table 1 (safari configs/experiment/synthetics, src/dataloaders/synthetics.py)"
_H3_SCHEDULES = {"h3-induction": dict(schedule="timm-cosine", warmup_lr_init=1e-6, min_lr=5e-5),
                 "h3-recall": dict(schedule="linear")}
for _name, _task, _figs, _steps, _sched in (
        ("h3-induction", "induction-head", (.05, .356, .068, 1.0, 1.0), 62_800, "cosine"),
        ("h3-recall", "associative-recall", (.25, .86, .78, .998, 1.0), 31_400, "linear")):
    PROTOCOLS[(_name, "paper")] = dict(
        TOKENS, task=_task, data={"preset": "h3"}, batch_size=32, steps=_steps, lr=5e-4, weight_decay=0.1,
        **_H3_SCHEDULES[_name], warmup_steps=_steps // 10, eval_every=_steps // 40, eval_batches=16,
        train_samples=5000, source=_H3)
    PROTOCOLS[(_name, "tiny")] = dict(
        TOKENS, task=_task, data={"preset": "h3"}, batch_size=32, steps=1500, lr=2e-3, weight_decay=0.1,
        schedule=_sched, warmup_steps=150, eval_every=250, eval_batches=16, train_samples=5000,
        source=f"{_H3}, shrunk to 1,500 steps at lr 2e-3")
    PAPER[_name] = {c: {"accuracy": v} for c, v in zip(("random", "s4d", "gss", "h3", "attention"), _figs)}
    PAPER_SOURCE[_name] = "H3 paper Table 1 (test accuracy, last token)"
    PAPER_NAMES[_name] = {"random": "Random", "s4d": "S4D", "gss": "Gated State Spaces", "h3": "H3",
                          "attention": "Attention"}
    PAPER_FROM[_name] = {c: "H3 paper Table 1 (a table)" for c in PAPER[_name]}
SUITES["h3-synthetics"] = [("h3-induction", "induction-head"), ("h3-recall", "associative-recall")]

# ----------------------------------------------------------------- Mamba's selective copying (Table 1)
# Mamba appendix E.1: selective copying at length 4096, vocabulary 16, 16 data tokens, 2 layers of
# D 64, 400K steps of batch 64 at a constant lr 1e-4; induction heads trained at length 256 with
# vocabulary 16, batch 8, fresh data every step, 204,800 steps (Mamba, attention with absolute
# positions) with Adam at a constant lr (1e-3 for Mamba, 2e-4 for the others), no weight decay,
# tested at 2^6 .. 2^20 (Table 11).
_MAMBA = "Mamba paper appendix E.1"
PROTOCOLS[("selective-copying", "paper")] = dict(
    TOKENS, task="selective-copying", data={}, batch_size=64, steps=400_000, lr=1e-4, schedule="constant",
    eval_every=10_000, eval_batches=16, source=f"{_MAMBA} (selective copying)")
PROTOCOLS[("selective-copying", "tiny")] = dict(
    TOKENS, task="selective-copying", data={"L": 48, "M": 8, "A": 16}, batch_size=32, steps=2000, lr=3e-3,
    eval_every=250, eval_batches=8, source=f"{_MAMBA}, shrunk to length 64 (48 noise + 2 x 8 tokens to copy), "
                                          "2,000 steps at lr 3e-3 with a cosine schedule")
# Table 1's rows, named by its columns Model, Arch. and Layer; the built-in s6 is the Mamba block with S6
_T1_MAMBA = (("s4 no gate", "S4", "No gate", "S4", .183), ("s6 no gate", None, "No gate", "S6", .970),
             ("h3 s4", "H3", "H3", "S4", .570), ("hyena", "Hyena", "H3", "Hyena", .301),
             ("h3 s6", None, "H3", "S6", .997), ("mamba s4", None, "Mamba", "S4", .564),
             ("mamba hyena", None, "Mamba", "Hyena", .284), ("s6", "Mamba", "Mamba", "S6", .998))
PAPER["selective-copying"] = {c: {"accuracy": v} for c, _, _, _, v in _T1_MAMBA}
PAPER_SOURCE["selective-copying"] = "Mamba paper Table 1 (selective copying accuracy)"
PAPER_NAMES["selective-copying"] = {c: f"{m} ({a} arch., {lay} layer)" if m else f"{a} arch., {lay} layer"
                                    for c, m, a, lay, _ in _T1_MAMBA}
PAPER_FROM["selective-copying"] = {c: "Mamba paper Table 1 (a table)" for c in PAPER["selective-copying"]}
SUITES["selective-copying"] = [("selective-copying", "selective-copying")]

PROTOCOLS[("induction-heads", "paper")] = dict(
    TOKENS, task="induction-head", data={"preset": "mamba"}, batch_size=8, steps=204_800, lr=2e-4,
    schedule="constant", eval_every=8192, eval_batches=16, source=f"{_MAMBA} (induction heads) and Table 11",
    test_sets={str(2 ** k): {"input_seq_len": 2 ** k} for k in range(6, 21)})
PROTOCOLS[("induction-heads", "tiny")] = dict(
    TOKENS, task="induction-head", data={"preset": "mamba", "input_seq_len": 64}, batch_size=16, steps=1500,
    lr=1e-3, eval_every=250, eval_batches=8, source=f"{_MAMBA} shrunk: trained at length 64 for 1,500 steps "
                                                   "(cosine), tested to 1,024",
    test_sets={str(2 ** k): {"input_seq_len": 2 ** k} for k in range(5, 11)})
PAPER["induction-heads"] = {"s6": {"accuracy": 1.0}, "attention (abs)": {"accuracy": 1.0},
                            "h3": {"accuracy": 1.0}, "hyena": {"accuracy": 1.0}}
PAPER_SOURCE["induction-heads"] = ("Mamba paper Table 11 at the training length 256 (Mamba 100% to 2^20; MHA-Abs "
                                   "58.6% at 2^9, 26.6% at 2^10; H3 80.9% / 39.5%; Hyena 100% at 2^9, 44.1% at "
                                   "2^10)")
PAPER_NAMES["induction-heads"] = {"s6": "Mamba", "attention (abs)": "MHA-Abs", "h3": "H3", "hyena": "Hyena"}
PAPER_FROM["induction-heads"] = {c: "Mamba paper Table 11, at the training length 2^8 (a table)"
                                 for c in PAPER["induction-heads"]}
SUITES["induction-heads"] = [("induction-heads", "induction-head")]

# ----------------------------------------------------------------- the laptop scale (laptop.py)
# Steps of about an hour a run for the slowest built-in of each suite by evaluate --dry-run on the development
# machine: zoology's models at width 512 take 20-33 s a step at Figure 2's batch (so a few hundred steps: a laptop
# cannot train Figure 2's grid, and the row says so); H3's synthetics fit whole (h3: 0.04 s a step); s6 at selective
# copying's length 256, 1.3 s; at induction heads' 256, 0.2 s
LAPTOP = {
    **{f"mqar-{_L}": dict(steps=_steps, why="zoology trains 64 epochs; here a few hundred steps, an hour at width 512")
       for _L, _steps in ((64, 200), (128, 100), (256, 120), (512, 120))},
    "h3-induction": dict(steps=62_800, why="10 validations where the paper has 40"),
    "h3-recall": dict(steps=31_400, why="10 validations where the paper has 40"),
    "selective-copying": dict(steps=2_500, why="length 256 (224 noise tokens and 16 to copy, then 16 markers) "
                                               "where the paper's is 4096; lr 3e-3 (the tiny scale's), constant, "
                                               "where the paper's 1e-4 is for 400,000 steps: at 1e-4 s4d-nogate "
                                               "was still at chance after 400 steps, at 3e-3 at 0.18 after 250",
                              data={"L": 224, "M": 16, "A": 16}, lr=3e-3),
    "induction-heads": dict(steps=15_000, why="tested to 2,048 (8 times the training length) where the paper tests "
                                              "to 2^20", test_sets={str(2 ** k): {"input_seq_len": 2 ** k}
                                                                    for k in range(6, 12)}),
}

# ----------------------------------------------------------------- the built-ins on these suites
# Two prenorm blocks (tokens.py) of the width and heads of each paper's runs: H3 width 32 with an MLP of
# 128; Mamba D 64 and 8 heads; zoology 128; 64 at tiny scale but for H3's 32. Mamba's induction heads
# trained its Mamba at lr 1e-3 and the others at the protocol's 2e-4.


def _shape(name, scale, model):
    """(width, changes to the block) of a model on a protocol."""
    if name.startswith("h3-"):
        H, change = 32, dict(attention_heads=1, ff_layers=1, ff_width=128) if model == "attention" else {}
    elif name in ("selective-copying", "induction-heads"):
        H, change = 64, dict(attention_heads=8) if model == "attention" else {}
    else:
        H, change = 128, {}
    return (min(H, 64) if scale == "tiny" else H), change


ARCHITECTURES.update(two_blocks(PROTOCOLS, _shape, lrs={("induction-heads", "paper", "s6"): 1e-3}))

# zoology-attention (models_ref/models/zoology.py) on MQAR alone: zoology's Figure 2 attention model, two one-head
# blocks (configs.py 54-61, 138-146), its position table as long as the input (configs.py 142), width 64 at tiny
# scale and zoology's default 128 (config.py 99) at paper scale where no grid point is given; the protocol's lr.
for (_name, _scale), _row in list(PROTOCOLS.items()):
    if _row["task"] == "mqar":
        _H = 64 if _scale == "tiny" else 128
        ARCHITECTURES[(_name, _scale, "zoology-attention")] = dict(
            arch=dict(d_model=_H, n_layers=2, num_heads=1, max_position_embeddings=_row["data"]["input_seq_len"]),
            lr=_row["lr"], column="attention",  # Figure 2's attention line is this model's own figure
            source=f"zoology's Figure 2 attention model, two one-head blocks of width {_H} unless the "
                   f"grid sets it (models_ref/models/zoology.py), lr {_row['lr']:g} ({_row['source']})")

# s6-nogate, s4d-nogate: Mamba Table 1's "No gate" rows, the s6 and s4d presets of selective copying with the
# block's gate dropped
for _scale in ("paper", "tiny"):
    for _model, _base, _column in (("s6-nogate", "s6", "s6 no gate"), ("s4d-nogate", "s4d", "s4 no gate")):
        _row = ARCHITECTURES[("selective-copying", _scale, _base)]
        ARCHITECTURES[("selective-copying", _scale, _model)] = dict(
            _row, arch=dict(_row["arch"], layer=_base, no_gate=True, glu=False), column=_column,
            source=f"{_row['source']}; Mamba Table 1's \"No gate\" block around {_base}")
# base-conv, hyena, h3: zoology's Figure 2 LanguageModel with its mixer (configs.py 62-89, 138-146), as
# zoology-attention's rows
for (_name, _scale), _row in list(PROTOCOLS.items()):
    if _row["task"] == "mqar":
        _H, _L = (64 if _scale == "tiny" else 128), _row["data"]["input_seq_len"]
        for _model, _key in (("base-conv", "base_conv"), ("hyena", "hyena"), ("h3", "h3")):
            ARCHITECTURES[(_name, _scale, _model)] = dict(
                arch=dict(d_model=_H, n_layers=2, max_position_embeddings=0, sequence_mixer=_model, l_max=_L),
                lr=_row["lr"], **({"column": f"{_key} (d 64)"} if _scale == "tiny" else {}),
                source=f"zoology's Figure 2 {_key} model (configs.py 62-89, 138-146; "
                       f"models_ref/models/zoology_mixers.py), "
                       f"two blocks of width {_H} unless the grid sets it, lr {_row['lr']:g} ({_row['source']})")
# H3 Table 1's models on its synthetics: safari's lm_simple (configs/experiment/synthetics/{induction_head,
# associative_recall}/{transformer,s4d,h3}.yaml 1-17; src/models/sequence/simple_lm.py), which is zoology's
# LanguageModel with seq_icl's MLP block (models_ref/models/zoology.py, ``state_mixer="mlp"``): two blocks of width
# 32 with an Mlp of 4 x 32 = 128 (d_inner), embed dropout 0.1 and none elsewhere, tied head, N(0, .02) init, AdamW
# weight decay on every parameter but those with safari's ``_optim`` hint (src/train.py 467-491). The mixers:
# - attention (transformer.yaml): one head, dropout 0.1 on its weights, a learned position table of
#   max_position_embeddings = the dataset's __l_max = input_seq_len + 2 (configs/dataset/icl_synthetics.yaml 9:
#   32 for the induction head's 30, 22 for the recall's 20, pipeline/induction_head.yaml 11, vocab_size_10.yaml 8);
# - s4d (layer/s4d.yaml 1-3): safari's S4D (models_ref/models/safari_s4d.py), d_state 64, no position table;
# - h3 (layer/h3.yaml 1-6): d_state 64, head_dim 1, S4D-Lin diagonal kernel, no position table.
# The SSM kernels' parameters take lr min(1e-3, lr) and no weight decay (the yamls' ``lr``; ss_kernel_diag.py
# 83-86, ss_kernel_shift.py 33, s4d.py 127-132). l_max 64 (>= the input) is the port's bound on the kernels'
# length, which span the whole input as safari's (l_max None) do.
_SAFARI_LM = ("safari's lm_simple (configs/experiment/synthetics/{induction_head,associative_recall}/*.yaml 1-17, "
              "src/models/sequence/simple_lm.py) as zoology's LanguageModel with the Mlp block "
              "(models_ref/models/zoology.py): two blocks of width 32, Mlp 32-128-32, embed dropout 0.1, tied head")
_SAFARI_MIXERS = {
    "safari-attention": ("attention", dict(num_heads=1), "one-head attention (dropout 0.1 on its weights) with a "
                         "learned position table of {P} (transformer.yaml 13-17, icl_synthetics.yaml 9)"),
    "safari-s4d": ("s4d", dict(sequence_mixer="s4d", l_max=64, d_state=64), "safari's S4D "
                   "(models_ref/models/safari_s4d.py; layer/s4d.yaml 1-3): d_state 64, S4D-Inv, one A for every "
                   "channel, GELU then Linear, no gate; its log_dt and A at lr {S} without weight decay"),
    "h3": ("h3", dict(sequence_mixer="h3", l_max=64, d_state=64, head_dim=1), "H3 (layer/h3.yaml 1-6; "
           "src/models/sequence/h3.py; models_ref/models/zoology_mixers.py): d_state 64, head_dim 1, the S4D-Lin "
           "diagonal and shift kernels; their log_dt, A and B at lr {S} without weight decay"),
}
_SAFARI_POSITIONS = {"h3-induction": 32, "h3-recall": 22}  # __l_max = input_seq_len + 2
for (_name, _scale), _row in list(PROTOCOLS.items()):
    if _name in _SAFARI_POSITIONS:
        _ssm_lr = min(1e-3, _row["lr"])  # the yamls' lr: min(0.001, optimizer.lr)
        for _model, (_column, _mixer, _what) in _SAFARI_MIXERS.items():
            _arch = dict(d_model=32, n_layers=2, state_mixer="mlp", d_inner=128, **_mixer)
            if _column == "attention":
                _arch["max_position_embeddings"] = _SAFARI_POSITIONS[_name]
            else:
                _arch.update(max_position_embeddings=0, ssm_lr=_ssm_lr)
            ARCHITECTURES[(_name, _scale, _model)] = dict(
                arch=_arch, lr=_row["lr"], column=_column,  # Table 1's row of this model
                source=f"H3 Table 1's {_column} model: {_SAFARI_LM}, its mixer "
                       f"{_what.format(P=_SAFARI_POSITIONS[_name], S=f'{_ssm_lr:g}')}; lr {_row['lr']:g} "
                       f"({_row['source']})")

# ----------------------------------------------------------------- certificates (controls.py)
VALIDATE = {  # task -> (its protocol, the positive control there)
    "mqar": ("mqar-64", "attention"), "associative-recall": ("h3-recall", "attention"),
    "induction-head": ("h3-induction", "attention"), "selective-copying": ("selective-copying", "s6"),
}
NO_CONTROL = {}  # every recall task has a certificate
