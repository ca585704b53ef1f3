"""ListOps (generators/listops/): protocols, presets and figures.

Protocols: ``listops-subtrees`` (DLR paper Table 6 (LS): every subtree's value scored, token
accuracy, Table 3's figures) and ``lra-listops`` (LRA ListOps in S4's current setting: the
root's value, read by S4's pooled decoder over each sequence's length; DSS paper Table 1, S4
paper Table 4, eSSM paper Table 2). Readouts: "positions" (every labelled position), "pool"
(the mean over each padded sequence's own length, read at its last token: S4's decoder with
``use_lengths``).
"""
from __future__ import annotations

from longsynth.models_ref.protocols import s4_family

_LISTOPS = dict(objective="tokens", readout="positions", causal=True, weight_decay=0.01, schedule="cosine")
_LRA_LISTOPS = dict(objective="tokens", readout="pool", causal=False, schedule="cosine")
_SMALL = {"train": 2000, "val": 200, "test": 200}

# ----------------------------------------------------------------- protocols
# data: the task's parameters, and the splits generated into the cache at this scale (None: the
# task's default counts, i.e. the paper's dataset)

PROTOCOLS = {
    ("listops-subtrees", "paper"): dict(
        _LISTOPS, task="listops-subtrees", data={}, splits=None, batch_size=32, steps=300_000, lr=8e-4,
        warmup_steps=3000, eval_every=5000, eval_batches=64, source="DLR paper Table 6 (LS)"),
    ("listops-subtrees", "tiny"): dict(
        _LISTOPS, task="listops-subtrees", data={}, splits=_SMALL, batch_size=4, steps=300, lr=2e-3,
        warmup_steps=30, eval_every=100, eval_batches=4, source="Table 6 (LS) shrunk"),
    ("lra-listops", "paper"): dict(
        _LRA_LISTOPS, task="listops", data={}, splits=None, batch_size=32, steps=120_000, lr=1e-2, weight_decay=0.05,
        warmup_steps=12_000, eval_every=5000, eval_batches=64,
        source="S4's current LRA ListOps setting (state-spaces/s4 configs/experiment/lra/s4-listops.yaml: batch 32, "
               "120K steps, 12K warmup, lr 0.01, weight decay 0.05, bidirectional, pooled decoder over each "
               "sequence's length), which produced S4's updated Table 4 figure"),
    ("lra-listops", "tiny"): dict(
        _LRA_LISTOPS, task="listops", data={}, splits=_SMALL, batch_size=4, steps=300, lr=2e-3, weight_decay=0.05,
        warmup_steps=30, eval_every=100, eval_batches=4, source="S4's current LRA ListOps setting shrunk"),
}

# ----------------------------------------------------------------- built-in architectures

ARCHITECTURES = {}
for _proto in ("listops-subtrees", "lra-listops"):
    for _model in ("dlr", "dss"):
        ARCHITECTURES[(_proto, "paper", _model)] = dict(
            arch=dict(H=128, N=1024, n_layers=6, glu=True, dt_min=1e-4, dt_max=1e-1, max_kernel_length=8192),
            lr=8e-4, source="DLR paper Table 6 (LS)")
        ARCHITECTURES[(_proto, "tiny", _model)] = dict(
            arch=dict(H=64, N=64, n_layers=2, glu=True, dt_min=1e-4, dt_max=1e-1), lr=2e-3,
            source="Table 6 (LS) shrunk")
# the DLR paper's LOCALATTENTION baseline (Table 3)
ARCHITECTURES[("listops-subtrees", "paper", "local-attention")] = dict(
    arch=dict(H=128, n_layers=6, glu=True, prenorm=False, attention_heads=4, attention_chunk=1024),
    lr=1e-3,
    source="DLR paper Table 3 (LOCALATTENTION: layers and chunk 1024); lr 1e-3 as the ag1988/dlr README's "
           "LocalAttention commands; H and the norm placement of its configs")
ARCHITECTURES[("listops-subtrees", "tiny", "local-attention")] = dict(
    arch=dict(H=32, n_layers=2, glu=True, prenorm=False, attention_heads=4, attention_chunk=256), lr=2e-3,
    source="Table 3 shrunk")
# the S4 family (s4_family.py): state-spaces/s4 configs/experiment/lra/s4-listops.yaml; eSSM Table 10
ARCHITECTURES.update(s4_family.lra_presets(
    "lra-listops", s4=(dict(H=256, N=4, n_layers=6, glu=True, norm="batch", prenorm=False, ssm_lr=1e-3,
                            **s4_family.S4_DT), 1e-2),
    essm=(dict(H=256, N=256, heads=4, n_layers=6, norm="batch", prenorm=False, ssm_lr=1e-2, **s4_family.S4_DT),
          1e-2)))
ARCHITECTURES.update(s4_family.lra_tiny("lra-listops", lr=2e-3, prenorm=False))
s4_family.skew_hippo(ARCHITECTURES, "lra-listops")

# ----------------------------------------------------------------- the papers' figures

PAPER = {
    "listops-subtrees": {"dlr": {"accuracy": .857}, "dss": {"accuracy": .838}},
    "lra-listops": {"dss": {"accuracy": .597}},
}
PAPER_SOURCE = {
    "listops-subtrees": "DLR paper Table 3 (token accuracy)",
    "lra-listops": "DSS paper Table 1 (DSS_exp)",
}
PAPER_NAMES = {
    "listops-subtrees": {"dlr": "DLR", "dss": "DSS_EXP"},
    "lra-listops": {"dss": "DSSexp"},
}
PAPER_FROM = {
    "listops-subtrees": {c: "DLR paper Table 3 (test token accuracy; a table)" for c in ("dlr", "dss")},
    "lra-listops": {"dss": "DSS paper Table 1 (a table)"},
}
s4_family.add_lra_figures("lra-listops", (.5960, .6047, .6220), PAPER, PAPER_NAMES, PAPER_SOURCE, PAPER_FROM)

SUITES = {}  # each protocol is a suite member of its own
