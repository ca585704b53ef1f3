"""MAD (Poli et al. 2024; generators/mad/): its six tasks at their settings, presets, the
published task scores, suites and certificates' controls.

A setting's score is its best test accuracy, a task's the mean over its settings (``GROUPS``:
the task score each setting's protocol counts towards; ``GROUP_PAPER``: the published scores).
``scale="tiny"`` runs each task's baseline setting shrunk to minutes on one CPU core.
"""
from __future__ import annotations

from longsynth.models_ref.protocols.tokens import TOKENS, two_blocks

PROTOCOLS, ARCHITECTURES, PAPER, PAPER_SOURCE, SUITES = {}, {}, {}, {}, {}
PAPER_NAMES, PAPER_FROM = {}, {}  # MAD's figures are task scores (GROUP_PAPER), not a setting's

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
            TOKENS, task=_task, data=_data, batch_size=MAD_BATCH, steps=MAD_EPOCHS * max(1, _n // MAD_BATCH), lr=1e-3,
            eval_every=10 * max(1, _n // MAD_BATCH), eval_batches=MAD_TEST // MAD_BATCH, train_samples=_n,
            lrs=MAD_LRS, weight_decays=MAD_WEIGHT_DECAYS, min_lr=1e-6, source=_MAD)
    # tiny: the baseline only, batch 64 for 1,200 steps (6 epochs of 12,800; memorization 300 epochs)
    PROTOCOLS[(_task, "tiny")] = dict(
        TOKENS, task=_task, data={}, batch_size=64, steps=1200, lr=1e-3, eval_every=200, eval_batches=4,
        train_samples=MAD_TRAIN[_task], source=f"{_MAD}, baseline setting, shrunk to 1,200 steps of batch 64")
# a setting's score is the best run of MAD's sweep: the report reads our best run beside it (registry.py)
PAPER_STATISTIC = {name: "the best run of a sweep (MAD: a setting's best test accuracy over 3 learning rates x 2 "
                         "weight decays)" for name in (*GROUPS, *MAD_TRAIN)}
SUITES["mad"] = [(name, task) for task in MAD_TRAIN for name, _, _ in mad_settings(task)]
SUITES["mad-baselines"] = [(task, task) for task in MAD_TRAIN]

# ----------------------------------------------------------------- the published task scores
# Poli et al.'s, as the DeltaNet paper's MAD table (Yang et al. 2024, its Figure 3: "results other than
# DeltaNet are directly borrowed from Poli et al.") prints them, with its row names; fractions
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
# Two prenorm blocks (tokens.py) of MAD's width 128, its attention with 16 heads and an MLP after it;
# at tiny scale width 64, the attention's heads and MLP scaled to it.


def _shape(name, scale, model):
    """(width, changes to the block) of a model on a MAD protocol."""
    change = dict(attention_heads=16, ff_layers=1, ff_width=512) if model == "attention" else {}
    if scale != "tiny":
        return 128, change
    return 64, {**change, **({"attention_heads": 4, "ff_width": 4 * 64} if change else {})}


ARCHITECTURES.update(two_blocks(PROTOCOLS, _shape))

# ----------------------------------------------------------------- certificates (controls.py)
VALIDATE = {  # task -> (its protocol, the positive control there)
    "mad-recall": ("mad-recall", "attention"), "mad-noisy-recall": ("mad-noisy-recall", "attention"),
    "mad-memorization": ("mad-memorization", "attention"),
}
NO_CONTROL = {  # tasks without a certificate: none that passes on correct data (docs/validation.md)
    "mad-fuzzy-recall": "the best published MAD score is the Transformer's 29.8%",
    "mad-compression": "the best published MAD score is Mamba's 52.7%",
    "mad-selective-copying": "attention reaches 0.42 in MAD's tiny budget (1,200 steps) where the certificate asks "
                             "0.9: a certificate would fail on correct data",
}
