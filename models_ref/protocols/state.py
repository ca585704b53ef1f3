"""State tracking (generators/state/): Grazzi et al.'s parity and modular arithmetic (accuracy by
length) and Merrill et al.'s word problems: protocols, presets, figures, suites and certificates'
controls.

``scale="tiny"`` shrinks a recipe to run on one CPU core in minutes; its rows say what changed.
"""
from __future__ import annotations

from longsynth.models_ref.protocols.tokens import TOKENS, two_blocks

PROTOCOLS, ARCHITECTURES, PAPER, PAPER_SOURCE, SUITES = {}, {}, {}, {}, {}
PAPER_STATISTIC = {}  # protocol -> the statistic its paper's figures are, where they are a best-of (registry.py)
PAPER_NAMES, PAPER_FROM = {}, {}  # protocol -> {column: the paper's name of the row}, {column: its source}

# ----------------------------------------------------------------- parity and modular arithmetic
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
        TOKENS, task=_task, data=_data, batch_size=256, steps=_steps, lr=1e-3, min_lr=1e-6, weight_decay=_wd,
        warmup_steps=_steps // 10, eval_every=1000, eval_batches=32, breakdown="length", source=_GRAZZI)
    PROTOCOLS[(_name, "tiny")] = dict(
        TOKENS, task=_task, data={**_data, "context_length": 64, "max_sequence_length": 16,
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
    PAPER_STATISTIC[_name] = "the best of 3 runs"
    PAPER_SOURCE[_name] = ("Grazzi et al. Table 3 (ICLR 2025 version; best of 3 runs, test lengths 40-256), its "
                           "scaled accuracy turned back into accuracy")
    PAPER_NAMES[_name] = {"s6": "Mamba [0, 1]", "s6-signed": "Mamba [-1, 1]", "deltanet [0,1]": "DeltaNet [0, 1]",
                          "deltanet [-1,1]": "DeltaNet [-1, 1]", "slstm": "sLSTM"}
    PAPER_FROM[_name] = {c: f"Grazzi et al. Table 3 (a table of scaled accuracy s; here {_chance:g} + "
                            f"{1 - _chance:g} s)" for c in _T3}
SUITES["state-tracking"] = [("parity", "parity"), ("modular-arithmetic", "modular-arithmetic"),
                            ("modular-arithmetic-brackets", "modular-arithmetic")]

# ----------------------------------------------------------------- word problems
# Merrill et al. (jopetty/word-problem src/main.py and its launch scripts): every prefix product of k
# group elements, every position scored; transformer runs at k 20 with 1M sequences (80% train),
# batch 512, lr 5e-5, weight decay 0.01, a constant rate, stopped at 0.99 validation sequence
# accuracy, at depths 1-3 (the depth grid: a row per depth). The paper's figure gives the depth each
# model needs at each k (an RNN: one layer; transformers, S4 and Mamba: more as k grows), not one accuracy.
_MERRILL = "Merrill et al. 2024 (jopetty/word-problem src/main.py, launch scripts)"
for _group in ("A5", "Z60"):
    _name = f"word-problem-{_group.lower()}"
    PROTOCOLS[(_name, "paper")] = dict(
        TOKENS, task="word-problem", data={"group": _group, "k": 20}, batch_size=512, steps=50_000, lr=5e-5,
        weight_decay=0.01, schedule="constant", eval_every=2000, eval_batches=8, train_samples=800_000,
        breakdown="position", depths=(1, 2, 3), source=f"{_MERRILL}; 50K steps in place of their stop at 0.99")
    PROTOCOLS[(_name, "tiny")] = dict(
        TOKENS, task="word-problem", data={"group": _group, "k": 8}, batch_size=64, steps=1500, lr=3e-3,
        eval_every=250, eval_batches=8, breakdown="position", depths=(1, 2),
        source=f"{_MERRILL} shrunk to k = 8, 1,500 steps, depths 1 and 2")
SUITES["word-problem"] = [("word-problem-a5", "word-problem"), ("word-problem-z60", "word-problem")]

# ----------------------------------------------------------------- the laptop scale (laptop.py)
# 2,000 steps: about 35 min of training for the slowest built-ins (s6, s6-signed, deltanet, deltanet-signed at
# 1.0-1.3 s a step) and 15-20 min of the paper's evaluations (8,192 test sequences of lengths 40-256)
LAPTOP = {name: dict(steps=2_000, why="") for name in ("parity", "modular-arithmetic", "modular-arithmetic-brackets")}

# ----------------------------------------------------------------- the built-ins on these suites
# Two prenorm blocks (tokens.py) of width 128, 64 at tiny scale.
ARCHITECTURES.update(two_blocks(PROTOCOLS, lambda name, scale, model: (64 if scale == "tiny" else 128, {})))

# deltanet(-signed): fla's DeltaNet LM as Grazzi et al. train it (automl/unlocking_state_tracking
# xlstm/experiments/parity_delta_net.yaml, parity_delta_net_2.yaml; main.py 113-121): two blocks of
# RMSNorm, DeltaNet (4 heads, short convs of 4), RMSNorm and SwiGLU MLP; width 128 (64 at tiny scale);
# sigmoid_scale 1 or 2 (docs/models.md).
for _name, _ in SUITES["state-tracking"]:
    for _scale, _H in (("paper", 128), ("tiny", 64)):
        _lr = PROTOCOLS[(_name, _scale)]["lr"]
        for _model, _signed, _column in (("deltanet", False, "deltanet [0,1]"), ("deltanet-signed", True,
                                                                                  "deltanet [-1,1]")):
            ARCHITECTURES[(_name, _scale, _model)] = dict(
                arch=dict(layer="deltanet", H=_H, n_layers=2, prenorm=True, norm="rms", mlp="swiglu", heads=4,
                          d_conv=4, chunk=64, signed=_signed), lr=_lr, column=_column,
                source=f"fla's DeltaNet as Grazzi et al. run it (parity_delta_net{'_2' if _signed else ''}.yaml: "
                       f"2 layers, 4 heads, sigmoid_scale {2 if _signed else 1}), width {_H}, lr {_lr:g}")

# ----------------------------------------------------------------- certificates (controls.py)
VALIDATE = {"parity": ("parity", "gru")}  # task -> (its protocol, the positive control there)
NO_CONTROL = {  # tasks without a certificate: none that passes on correct data (docs/validation.md)
    "modular-arithmetic": "its control, a GRU, reaches 0.56 in the tiny budget (1,500 steps) where the certificate "
                          "asks 0.9, and Grazzi et al.'s best model needs 100K steps: a certificate would fail on "
                          "correct data",
    "word-problem": "a GRU reaches 0.26 on A5 in the tiny budget (the paper trains on 1M sequences): a certificate "
                    "would fail on correct data",
}
