"""The field's token suites as data: protocols, built-in presets and published figures.

``presets`` merges these tables into its own (docs/evaluate.md, "The field's suites"):

- ``PROTOCOLS[(name, scale)]``: zoology's MQAR (Figure 2's grid of (length, pairs), its
  learning-rate sweep and width grid), H3's synthetics (Table 1), Mamba's selective copying
  (Table 1) and induction heads (Table 11: trained at one length, tested at longer ones),
  Merrill et al.'s word problems and Grazzi et al.'s parity and modular arithmetic (accuracy
  by length), MAD's six tasks at their settings (mad.py: ``MAD_SETTINGS``);
- ``ARCHITECTURES[(name, scale, model)]``: the built-ins' presets on them;
- ``PAPER[name][column]``: the papers' test accuracies as fractions, with ``PAPER_SOURCE``; a column's key
  is a built-in's name where the built-in is that paper's model (its verdict reads it), and
  ``PAPER_NAMES[name][column]`` is the row as the paper names it, ``PAPER_FROM[name][column]`` where
  the figure comes from (a table, or a plot read to +-0.03);
- ``SUITES``: the groups ``--suite`` accepts.

Every protocol trains on token ids with cross-entropy at the scored positions (the -100 ignore
index elsewhere) and reports accuracy over them. ``scale="tiny"`` shrinks a recipe to run on one
CPU core in minutes; its rows say what changed.
"""
from __future__ import annotations

import math

_TOKENS = dict(objective="tokens", readout="positions", causal=True, schedule="cosine", warmup_steps=0,
               weight_decay=0.0, splits=None)
ZOOLOGY_LRS = tuple(float(10 ** (-4 + 2 * i / 3)) for i in range(4))  # numpy.logspace(-4, -2, 4)

PROTOCOLS, ARCHITECTURES, PAPER, PAPER_SOURCE, SUITES = {}, {}, {}, {}, {}
PAPER_NAMES, PAPER_FROM = {}, {}  # protocol -> {column: the paper's name of the row}, {column: its source}

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
        _TOKENS, task="mqar", data={"input_seq_len": _L, "num_kv_pairs": _kv}, batch_size=_B,
        steps=64 * 100_000 // _B, lr=1e-3, weight_decay=0.1, eval_every=100_000 // _B,
        eval_batches=math.ceil(3000 / _B), train_samples=100_000, lrs=ZOOLOGY_LRS, widths=(64, 128, 256, 512),
        source=_ZOO)
# tiny: Figure 2's first cell alone, V 128 (MQAR needs V > L), 20K training sequences, batch 64 at lr 3e-3, one
# width (attention leaves 0.25, copying a value of the context, after ~900 steps: docs/validation.md)
PROTOCOLS[("mqar-64", "tiny")] = dict(
    _TOKENS, task="mqar", data={"input_seq_len": 64, "num_kv_pairs": 4, "vocab_size": 128}, batch_size=64,
    steps=3000, lr=3e-3, weight_decay=0.1, eval_every=500, eval_batches=4, train_samples=20_000, widths=(64,),
    source=f"{_ZOO}, its (64, 4) cell shrunk: V 128, 20K sequences, 3,000 steps of 64 at lr 3e-3, width 64")
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
    PAPER_NAMES[_name] = {c: "Attention (every width)" if c == "attention" else
                          f"{_MQAR_NAMES[c.split(' (')[0]]}, d_model {c.split('(d ')[1].rstrip(')')}" for c in _figs}
    PAPER_FROM[_name] = {c: f"zoology Figure 2 (MQAR, {_name.split('-')[1]} tokens), read off the plot (+-0.03)"
                         for c in _figs}

# ----------------------------------------------------------------- H3's synthetics (Table 1)
# safari configs/experiment/synthetics/{induction_head,associative_recall}/*.yaml (the V 10 recall runs:
# *-vs10.yaml) and src/dataloaders/synthetics.py: 5,000 training and 500 test sequences, batch 32,
# AdamW lr 5e-4, weight decay 0.1; induction head 400 epochs (62,800 steps) with a cosine schedule
# after 6,280 warmup steps, recall 200 epochs (31,400 steps) with a linear one after 3,140; the
# test scores the last token only; models of width 32, two layers.
_H3 = "H3 paper Table 1 (safari configs/experiment/synthetics, src/dataloaders/synthetics.py)"
for _name, _task, _figs, _steps, _sched in (
        ("h3-induction", "induction-head", (.05, .356, .068, 1.0, 1.0), 62_800, "cosine"),
        ("h3-recall", "associative-recall", (.25, .86, .78, .998, 1.0), 31_400, "linear")):
    PROTOCOLS[(_name, "paper")] = dict(
        _TOKENS, task=_task, data={"preset": "h3"}, batch_size=32, steps=_steps, lr=5e-4, weight_decay=0.1,
        schedule=_sched, warmup_steps=_steps // 10, eval_every=_steps // 40, eval_batches=16, train_samples=5000,
        source=_H3)
    PROTOCOLS[(_name, "tiny")] = dict(
        _TOKENS, task=_task, data={"preset": "h3"}, batch_size=32, steps=1500, lr=2e-3, weight_decay=0.1,
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
    _TOKENS, task="selective-copying", data={}, batch_size=64, steps=400_000, lr=1e-4, schedule="constant",
    eval_every=10_000, eval_batches=16, source=f"{_MAMBA} (selective copying)")
PROTOCOLS[("selective-copying", "tiny")] = dict(
    _TOKENS, task="selective-copying", data={"L": 48, "M": 8, "A": 16}, batch_size=32, steps=2000, lr=3e-3,
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
    _TOKENS, task="induction-head", data={"preset": "mamba"}, batch_size=8, steps=204_800, lr=2e-4,
    schedule="constant", eval_every=8192, eval_batches=16, source=f"{_MAMBA} (induction heads) and Table 11",
    test_sets={str(2 ** k): {"input_seq_len": 2 ** k} for k in range(6, 21)})
PROTOCOLS[("induction-heads", "tiny")] = dict(
    _TOKENS, task="induction-head", data={"preset": "mamba", "input_seq_len": 64}, batch_size=16, steps=1500,
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

# ----------------------------------------------------------------- state tracking
# Grazzi et al. (automl/unlocking_state_tracking xlstm/experiments/*.yaml): train lengths 3-40, test
# 40-256 (8,192 sequences), batch 256, lr 1e-3 to 1e-6 (linear warmup, cosine), 2 layers of width 128;
# parity 20K steps (2K warmup, weight decay 0), modular arithmetic 100K (10K warmup, weight decay 0.1);
# fresh data every step; the answer token alone is scored.
_GRAZZI = "Grazzi et al. 2025 (automl/unlocking_state_tracking xlstm/experiments/*.yaml)"
for _name, _task, _data, _steps, _wd in (("parity", "parity", {}, 20_000, 0.0),
                                         ("modular-arithmetic", "modular-arithmetic", {}, 100_000, 0.1),
                                         ("modular-arithmetic-brackets", "modular-arithmetic", {"brackets": True},
                                          100_000, 0.1)):
    PROTOCOLS[(_name, "paper")] = dict(
        _TOKENS, task=_task, data=_data, batch_size=256, steps=_steps, lr=1e-3, min_lr=1e-6, weight_decay=_wd,
        warmup_steps=_steps // 10, eval_every=1000, eval_batches=32, breakdown="length", source=_GRAZZI)
    PROTOCOLS[(_name, "tiny")] = dict(
        _TOKENS, task=_task, data={**_data, "context_length": 64, "max_sequence_length": 16,
                                   "test_min_sequence_length": 16, "test_max_sequence_length": 64},
        batch_size=64, steps=1500, lr=3e-3, weight_decay=_wd, warmup_steps=150, eval_every=250, eval_batches=8,
        breakdown="length", source=f"{_GRAZZI} shrunk: train lengths 3-16, test 16-64, 1,500 steps")
# their Table 3 (best of 3 runs) gives scaled accuracies, (acc - 0.5) / 0.5 for parity and (acc - 0.2) / 0.8
# for modular arithmetic (5 classes); stored here as accuracies: s6 is Mamba with A in [0, 1], s6-signed
# the same with [-1, 1]
_T3 = {"s6": (0.0, .095, .123), "s6-signed": (1.0, .241, .116), "deltanet [0,1]": (.017, .314, .194),
       "deltanet [-1,1]": (1.0, .971, .260), "slstm": (1.0, .787, .178)}
for _i, (_name, _chance) in enumerate((("parity", .5), ("modular-arithmetic", .2),
                                       ("modular-arithmetic-brackets", .2))):
    PAPER[_name] = {c: {"accuracy": round(_chance + (1 - _chance) * v[_i], 4)} for c, v in _T3.items()}
    PAPER_SOURCE[_name] = ("Grazzi et al. Table 3 (ICLR 2025 version; best of 3 runs, test lengths 40-256), its "
                           "scaled accuracy turned back into accuracy")
    PAPER_NAMES[_name] = {"s6": "Mamba [0, 1]", "s6-signed": "Mamba [-1, 1]", "deltanet [0,1]": "DeltaNet [0, 1]",
                          "deltanet [-1,1]": "DeltaNet [-1, 1]", "slstm": "sLSTM"}
    PAPER_FROM[_name] = {c: f"Grazzi et al. Table 3 (a table of scaled accuracy s; here {_chance:g} + "
                            f"{1 - _chance:g} s)" for c in _T3}
SUITES["state-tracking"] = [("parity", "parity"), ("modular-arithmetic", "modular-arithmetic"),
                            ("modular-arithmetic-brackets", "modular-arithmetic")]

# Merrill et al. (jopetty/word-problem src/main.py and its launch scripts): every prefix product of k
# group elements, every position scored; transformer runs at k 20 with 1M sequences (80% train),
# batch 512, lr 5e-5, weight decay 0.01, a constant rate, stopped at 0.99 validation sequence
# accuracy, at depths 1-3 (the depth grid: a row per depth). The paper's figure gives the depth each
# model needs at each k (an RNN: one layer; transformers, S4 and Mamba: more as k grows), not one accuracy.
_MERRILL = "Merrill et al. 2024 (jopetty/word-problem src/main.py, launch scripts)"
for _group in ("A5", "Z60"):
    _name = f"word-problem-{_group.lower()}"
    PROTOCOLS[(_name, "paper")] = dict(
        _TOKENS, task="word-problem", data={"group": _group, "k": 20}, batch_size=512, steps=50_000, lr=5e-5,
        weight_decay=0.01, schedule="constant", eval_every=2000, eval_batches=8, train_samples=800_000,
        breakdown="position", depths=(1, 2, 3), source=f"{_MERRILL}; 50K steps in place of their stop at 0.99")
    PROTOCOLS[(_name, "tiny")] = dict(
        _TOKENS, task="word-problem", data={"group": _group, "k": 8}, batch_size=64, steps=1500, lr=3e-3,
        eval_every=250, eval_batches=8, breakdown="position", depths=(1, 2),
        source=f"{_MERRILL} shrunk to k = 8, 1,500 steps, depths 1 and 2")
SUITES["word-problem"] = [("word-problem-a5", "word-problem"), ("word-problem-z60", "word-problem")]

# ----------------------------------------------------------------- MAD (Poli et al. 2024)
# athms/mad-lab configs/tasks/*.yml (docs/tasks/mad.md "MAD's benchmark grid"): each task's baseline
# and the settings that change one factor; 12,800 training instances (memorization 256), 1,280 test,
# batch 128, 200 epochs, AdamW with a cosine schedule, lr {1e-4, 5e-4, 1e-3} x weight decay {0, 0.1},
# width 128, a schedule ending at 1e-6. A setting's score is its best test accuracy, a task's the mean
# over its settings.
MAD_TRAIN = {"mad-recall": 12_800, "mad-noisy-recall": 12_800, "mad-fuzzy-recall": 12_800,
             "mad-selective-copying": 12_800, "mad-compression": 12_800, "mad-memorization": 256}
_SIZES = {"num_train_examples": (6400, 3200, 1600, 800)}
MAD_CHANGES = {  # task -> {parameter: values tried, one at a time, against the baseline}
    "mad-recall": {"vocab_size": (32, 64, 128), "seq_len": (256, 512, 1024), **_SIZES},
    "mad-noisy-recall": {"vocab_size": (48, 80, 144), "seq_len": (256, 512, 1024), **_SIZES,
                         "frac_noise": (0.4, 0.6, 0.8)},
    "mad-fuzzy-recall": {"vocab_size": (32, 64, 128), "seq_len": (256, 512, 1024), **_SIZES},
    "mad-selective-copying": {"vocab_size": (32, 64, 128), "seq_len": (512, 1024), **_SIZES,
                              "num_tokens_to_copy": (32, 64, 96)},
    "mad-compression": {"vocab_size": (32, 64, 128), "seq_len": (64, 128, 256), **_SIZES},
    "mad-memorization": {"vocab_size": (512, 1024, 2048, 4096, 8192)},
}
MAD_LRS, MAD_WEIGHT_DECAYS = (1e-4, 5e-4, 1e-3), (0.0, 0.1)
MAD_TEST, MAD_BATCH, MAD_EPOCHS = 1280, 128, 200
_MAD = "MAD (athms/mad-lab configs/tasks/*.yml, train.py; Poli et al. 2024)"
_SHORT = {"vocab_size": "v", "seq_len": "l", "num_train_examples": "n", "frac_noise": "noise",
          "num_tokens_to_copy": "copy"}


def mad_settings(task):
    """[(protocol name, task parameters, training instances)] of a MAD task: its baseline, then
    each setting that changes one factor (66 in all)."""
    out = [(task, {}, MAD_TRAIN[task])]
    for param, values in MAD_CHANGES[task].items():
        for v in values:
            data = {} if param == "num_train_examples" else {param: v}
            n = v if param == "num_train_examples" else MAD_TRAIN[task]
            out.append((f"{task}-{_SHORT[param]}{v:g}", data, n))
    return out


GROUPS = {}  # protocol -> the task score it counts towards (the report's summary)
for _task in MAD_TRAIN:
    for _name, _data, _n in mad_settings(_task):
        GROUPS[_name] = _task
        PROTOCOLS[(_name, "paper")] = dict(
            _TOKENS, task=_task, data=_data, batch_size=MAD_BATCH, steps=MAD_EPOCHS * max(1, _n // MAD_BATCH), lr=1e-3,
            eval_every=10 * max(1, _n // MAD_BATCH), eval_batches=MAD_TEST // MAD_BATCH, train_samples=_n,
            lrs=MAD_LRS, weight_decays=MAD_WEIGHT_DECAYS, min_lr=1e-6, source=_MAD)
    # tiny: the baseline only, batch 64 for 1,200 steps (6 epochs of 12,800; memorization 300 epochs)
    PROTOCOLS[(_task, "tiny")] = dict(
        _TOKENS, task=_task, data={}, batch_size=64, steps=1200, lr=1e-3, eval_every=200, eval_batches=4,
        train_samples=MAD_TRAIN[_task], source=f"{_MAD}, baseline setting, shrunk to 1,200 steps of batch 64")
SUITES["mad"] = [(name, task) for task in MAD_TRAIN for name, _, _ in mad_settings(task)]
SUITES["mad-baselines"] = [(task, task) for task in MAD_TRAIN]
# the published task scores, fractions: Poli et al.'s, as the DeltaNet paper's MAD table (Yang et al. 2024, its
# Figure 3: "results other than DeltaNet are directly borrowed from Poli et al.") prints them, with its row names
_MAD_COLUMNS = ("transformer", "hyena", "mh-hyena", "mamba", "gla")
_MAD_SCORES = {
    "mad-compression": (.516, .452, .448, .527, .388), "mad-fuzzy-recall": (.298, .079, .144, .067, .069),
    "mad-recall": (.941, .817, .990, .904, .808), "mad-memorization": (.852, .895, .894, .895, .633),
    "mad-noisy-recall": (.868, .788, .986, .901, .816), "mad-selective-copying": (.996, .931, .930, .863, .886),
}
GROUP_PAPER = {task: {c: v for c, v in zip(_MAD_COLUMNS, vals)} for task, vals in _MAD_SCORES.items()}
GROUP_PAPER["mean"] = {"transformer": .745, "hyena": .660, "mh-hyena": .732, "mamba": .693, "gla": .600}
GROUP_NAMES = {"transformer": "Transformer", "hyena": "Hyena", "mh-hyena": "Multihead Hyena", "mamba": "Mamba",
               "gla": "GLA"}
GROUP_SOURCE = ("MAD's task scores (Poli et al. 2024: the mean over a task's settings of the best test accuracy), "
                "copied from the DeltaNet paper's MAD table (Yang et al. 2024, Figure 3), which takes them from "
                "Poli et al.; a table")
# A task whose score here is not comparable with the paper's (docs/evaluate.md, "Where we differ from the
# authors"): a report keeps it out of its means and prints this beside it
INCOMPARABLE = {
    "mad-compression": "MAD trains compression through an AutoEncoder backbone that squeezes the sequence through "
                       "one vector; this harness trains the model on the task as stored (targets equal inputs), which "
                       "a position-wise copy solves: the score is not comparable with MAD's compression column",
}

# ----------------------------------------------------------------- the built-ins on these suites
# Two prenorm residual blocks, as every paper here compares; the width and heads of each paper's
# runs (H3: width 32 with an MLP of 128; Mamba: D 64 and 8 heads; MAD: width 128, 16 heads, an MLP
# after each attention; the others 128), 64 at tiny scale but for H3's 32; the protocol's width grid
# (zoology) replaces it through spec.d_model. Mamba's induction heads trained its Mamba at lr 1e-3
# and the others at the protocol's 2e-4.
_BLOCKS = {
    "attention": dict(attention_heads=4),
    "dlr": dict(N=64, glu=True),
    "s4d": dict(N=64, glu=True, dt_min=1e-3, dt_max=1e-1),
    "s6": dict(N=16, dt_min=1e-3, dt_max=1e-1),  # mamba_simple.py: d_state 16, dt in [1e-3, 1e-1]
    "gru": dict(),
}


def _paper_arch(name, model):
    """(width, changes to the block) of a model on a protocol at paper scale."""
    if name.startswith("h3-"):
        return 32, dict(attention_heads=1, ff_layers=1, ff_width=128) if model == "attention" else {}
    if name in ("selective-copying", "induction-heads"):
        return 64, dict(attention_heads=8) if model == "attention" else {}
    if name in GROUPS:
        return 128, dict(attention_heads=16, ff_layers=1, ff_width=512) if model == "attention" else {}
    return 128, {}


for (_name, _scale), _row in list(PROTOCOLS.items()):
    for _model, _arch in _BLOCKS.items():
        _H, _change = _paper_arch(_name, _model)
        if _scale == "tiny":  # width 64 at most; MAD's attention with its heads and MLP scaled to it
            _H = min(_H, 64)
            _change = {**_change, **({"attention_heads": 4, "ff_width": 4 * _H} if _name in GROUPS and _change else {})}
        _lr = 1e-3 if (_name, _scale, _model) == ("induction-heads", "paper", "s6") else _row["lr"]
        ARCHITECTURES[(_name, _scale, _model)] = dict(
            arch=dict(H=_H, n_layers=2, prenorm=True, **{**_arch, **_change}), lr=_lr,
            source=f"two prenorm blocks of width {_H} (models_ref/field.py), lr {_lr:g} ({_row['source']})")

# zoology-attention (models_ref/zoology.py) on MQAR alone: zoology's Figure 2 attention model, two one-head
# blocks (configs.py 54-61, 138-146), its position table as long as the input (configs.py 142), width 64 at tiny
# scale and zoology's default 128 (config.py 99) at paper scale where no grid point is given; the protocol's lr.
for (_name, _scale), _row in list(PROTOCOLS.items()):
    if _row["task"] == "mqar":
        _H = 64 if _scale == "tiny" else 128
        ARCHITECTURES[(_name, _scale, "zoology-attention")] = dict(
            arch=dict(d_model=_H, n_layers=2, num_heads=1, max_position_embeddings=_row["data"]["input_seq_len"]),
            lr=_row["lr"], column="attention",  # Figure 2's attention line is this model's own figure
            source=f"zoology's Figure 2 attention model, two one-head blocks of width {_H} unless the "
                   f"grid sets it (models_ref/zoology.py), lr {_row['lr']:g} ({_row['source']})")

# ----------------------------------------------------------------- certificates (longsynth validate)
# ``longsynth validate TASK`` on a token task trains the positive control of the task's protocol
# (VALIDATE), and the certificate passes when its test accuracy reaches the threshold: at tiny
# scale CONTROL_TINY (0.9); at paper scale the control's paper figure less presets.TOLERANCE.
# Targets permuted across samples (--permute-targets) leave it at chance: the certificate fails.
VALIDATE = {  # task -> (its protocol, the positive control there)
    "mqar": ("mqar-64", "attention"), "associative-recall": ("h3-recall", "attention"),
    "induction-head": ("h3-induction", "attention"), "selective-copying": ("selective-copying", "s6"),
    "parity": ("parity", "gru"),
    "mad-recall": ("mad-recall", "attention"), "mad-noisy-recall": ("mad-noisy-recall", "attention"),
    "mad-memorization": ("mad-memorization", "attention"),
}
CONTROL_TINY = 0.9
NO_CONTROL = {  # tasks without a certificate: none that passes on correct data (docs/validation.md)
    "mad-fuzzy-recall": "the best published MAD score is the Transformer's 29.8%",
    "mad-compression": "the best published MAD score is Mamba's 52.7%",
    "modular-arithmetic": "its control, a GRU, reaches 0.56 in the tiny budget (1,500 steps) where the certificate "
                          "asks 0.9, and Grazzi et al.'s best model needs 100K steps: a certificate would fail on "
                          "correct data",
    "word-problem": "a GRU reaches 0.26 on A5 in the tiny budget (the paper trains on 1M sequences): a certificate "
                    "would fail on correct data",
    "mad-selective-copying": "attention reaches 0.42 in MAD's tiny budget (1,200 steps) where the certificate asks "
                             "0.9: a certificate would fail on correct data",
}
