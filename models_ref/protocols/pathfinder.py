"""Pathfinder (generators/pathfinder/): protocols, presets and figures.

Protocols: ``pathfinder-seg-128`` / ``-256`` / ``-512`` (Pathfinder-Segmentation, DLR paper
Table 6 (PS), every pixel labelled, Table 3's macro F1 and accuracy), ``lra-pathfinder`` (32 px)
and ``path-x`` (128 px): classic Pathfinder in S4's LRA settings (DSS paper Table 1, S4 paper
Table 4, eSSM paper Table 2). Readouts: "positions" (every pixel), "mean" (the mean over
positions, S4's pooled decoder).
"""
from __future__ import annotations

from longsynth.models_ref.protocols import s4_family

_SEG = dict(objective="segmentation", readout="positions", causal=False, weight_decay=0.0, schedule="cosine")
_CLASSIC_PF = dict(objective="tokens", readout="mean", causal=False, schedule="cosine")
SEGMENTATION = ("pathfinder-seg-128", "pathfinder-seg-256", "pathfinder-seg-512")

# ----------------------------------------------------------------- protocols

PROTOCOLS = {
    ("lra-pathfinder", "paper"): dict(
        _CLASSIC_PF, task="pathfinder", data={"size": 32, "difficulty": "hard"}, splits=None, batch_size=64,
        steps=500_000, lr=4e-3, weight_decay=0.05, warmup_steps=50_000, eval_every=5000, eval_batches=64,
        source="S4's LRA Pathfinder setting (state-spaces/s4 configs/experiment/lra/s4-pathfinder.yaml)"),
    ("lra-pathfinder", "tiny"): dict(
        _CLASSIC_PF, task="pathfinder", data={"size": 32, "difficulty": "easy"},
        splits={"train": 100_000, "val": 1024, "test": 1024}, batch_size=32, steps=3000, lr=4e-3,
        weight_decay=0.0, warmup_steps=100, eval_every=500, eval_batches=32,
        source="the tiny classic preset: 32-px easy images, where it leaves chance in ~2,000 steps "
               "(docs/validation.md)"),
    ("path-x", "paper"): dict(
        _CLASSIC_PF, task="pathfinder", data={"size": 128, "difficulty": "hard"}, splits=None, batch_size=16,
        steps=500_000, lr=1e-3, weight_decay=0.05, warmup_steps=50_000, eval_every=5000, eval_batches=64,
        source="S4's current Path-X setting (state-spaces/s4 configs/experiment/lra/s4-pathx.yaml: batch 16, "
               "500K steps, 50K warmup, lr 1e-3, weight decay 0.05)"),
    ("path-x", "tiny"): dict(
        _CLASSIC_PF, task="pathfinder", data={"size": 128, "difficulty": "hard"},
        splits={"train": 2000, "val": 256, "test": 256}, batch_size=32, steps=3000, lr=4e-3, weight_decay=0.0,
        warmup_steps=100, eval_every=500, eval_batches=32, source="the tiny classic preset at 128 px"),
}
for _side, (_B, _steps, _lr) in {128: (16, 150_000, 1e-4), 256: (18, 178_000, 5e-5),
                                 512: (14, 114_000, 1e-5)}.items():
    PROTOCOLS[(f"pathfinder-seg-{_side}", "paper")] = dict(
        _SEG, task="pathfinder-seg", data={"size": _side}, splits=None, batch_size=_B, steps=_steps, lr=_lr,
        warmup_steps=_steps // 100, eval_every=5000, eval_batches=64, source="DLR paper Table 6 (PS)")
    PROTOCOLS[(f"pathfinder-seg-{_side}", "tiny")] = dict(
        _SEG, task="pathfinder-seg", data={"size": _side}, splits={"train": 1600, "val": 64, "test": 64},
        batch_size=4, steps=300, lr=2e-3, warmup_steps=30, eval_every=100, eval_batches=4,
        source="Table 6 (PS) shrunk")

# ----------------------------------------------------------------- built-in architectures

ARCHITECTURES = {}
for _side, (_layers, _H, _N, _lr, _klen) in {128: (5, 128, 1024, 1e-4, 8192), 256: (6, 128, 1024, 5e-5, 32768),
                                             512: (12, 64, 2048, 1e-5, 32768)}.items():
    for _model in ("dlr", "dss"):
        ARCHITECTURES[(f"pathfinder-seg-{_side}", "paper", _model)] = dict(
            arch=dict(H=_H, N=_N, n_layers=_layers, glu=True, prenorm=True, dt_min=1e-4, dt_max=1e-1,
                      max_kernel_length=_klen),
            lr=_lr, source="DLR paper Table 6 (PS); prenorm as ag1988/dlr configs/experiment/"
                           "dss-pathfinder-segmentation*.yaml")
        ARCHITECTURES[(f"pathfinder-seg-{_side}", "tiny", _model)] = dict(
            arch=dict(H=32, N=64, n_layers=2, glu=True, prenorm=True, dt_min=1e-4, dt_max=1e-1), lr=2e-3,
            source="Table 6 (PS) shrunk, prenorm as the official config")
for _proto, (_dt_min, _lr, _yaml) in {"lra-pathfinder": (1e-3, 4e-3, "s4-pathfinder"),
                                      "path-x": (1e-4, 1e-3, "s4-pathx")}.items():
    for _model in ("dlr", "dss"):
        ARCHITECTURES[(_proto, "paper", _model)] = dict(
            arch=dict(H=256, N=64, n_layers=6, glu=True, prenorm=True, norm="batch", dt_min=_dt_min, dt_max=1e-1,
                      ssm_lr=1e-3),
            lr=_lr, source=f"S4's {_yaml}.yaml: 6 layers of H 256, N 64, batch norm, prenorm, pooled head")
        # the paper preset's head and norms at 2 layers of H 64; with batch norm it leaves chance after
        # ~2,000 steps on 32-px easy data (docs/validation.md; with layer norm it never did)
        ARCHITECTURES[(_proto, "tiny", _model)] = dict(
            arch=dict(H=64, N=64, n_layers=2, glu=True, prenorm=True, norm="batch", dt_min=1e-3, dt_max=1e-1,
                      ssm_lr=1e-3),
            lr=4e-3, source="the paper preset at 2 layers of H 64 (docs/validation.md)")
# the DLR paper's LOCALATTENTION baseline (Table 3)
ARCHITECTURES[("pathfinder-seg-128", "paper", "local-attention")] = dict(
    arch=dict(H=128, n_layers=5, glu=True, prenorm=True, attention_heads=4, attention_chunk=1024),
    lr=1e-3,
    source="DLR paper Table 3 (LOCALATTENTION: layers and chunk 1024); lr 1e-3 as the ag1988/dlr README's "
           "LocalAttention commands; H and the norm placement of its configs")
ARCHITECTURES[("pathfinder-seg-128", "tiny", "local-attention")] = dict(
    arch=dict(H=32, n_layers=2, glu=True, prenorm=True, attention_heads=4, attention_chunk=256), lr=2e-3,
    source="Table 3 shrunk")
# the S4 family (s4_family.py): state-spaces/s4 configs/experiment/lra/s4-{pathfinder,pathx}.yaml; eSSM Table 10
ARCHITECTURES.update(s4_family.lra_presets(
    "lra-pathfinder", s4=(dict(H=256, N=64, n_layers=6, glu=True, norm="batch", prenorm=True, ssm_lr=1e-3,
                               **s4_family.S4_DT), 4e-3),
    essm=(dict(H=192, N=256, heads=8, n_layers=6, norm="batch", prenorm=True, dropout=0.05, ssm_lr=1e-3,
               **s4_family.S4_DT), 5e-3)))
ARCHITECTURES.update(s4_family.lra_presets(
    "path-x", s4=(dict(H=256, N=64, n_layers=6, glu=True, norm="batch", prenorm=True, ssm_lr=1e-3, dt_min=1e-4,
                       dt_max=1e-1), 1e-3),
    essm=(dict(H=192, N=256, heads=8, n_layers=6, norm="batch", prenorm=True, ssm_lr=5e-4, dt_min=1e-4,
               dt_max=1e-1), 1e-3)))
for _proto in ("lra-pathfinder", "path-x"):
    ARCHITECTURES.update(s4_family.lra_tiny(_proto, lr=4e-3, prenorm=True))
    s4_family.skew_hippo(ARCHITECTURES, _proto)

# ----------------------------------------------------------------- the papers' figures

PAPER = {
    "lra-pathfinder": {"dss": {"accuracy": .847}},
    "path-x": {"dss": {"accuracy": .856}},
    "pathfinder-seg-128": {"dlr": {"macro_f1": .968, "macro_accuracy": .977},
                           "dss": {"macro_f1": .944, "macro_accuracy": .972},
                           "local-attention": {"macro_f1": .840, "macro_accuracy": .904}},
    "pathfinder-seg-256": {"dlr": {"macro_f1": .940, "macro_accuracy": .963},
                           "dss": {"macro_f1": .894, "macro_accuracy": .962}},
    "pathfinder-seg-512": {"dlr": {"macro_f1": .763, "macro_accuracy": .928},
                           "dss": {"macro_f1": .604, "macro_accuracy": .793}},
}
PAPER_SOURCE = {
    "lra-pathfinder": "DSS paper Table 1 (DSS_exp)",
    "path-x": "DSS paper Table 1 (DSS_exp)",
    **{name: "DLR paper Table 3 (macro F1 / macro accuracy)" for name in SEGMENTATION},
}
PAPER_NAMES = {
    **{name: {"dlr": "DLR", "dss": "DSS_EXP", "local-attention": "LOCALATTENTION"} for name in SEGMENTATION},
    **{name: {"dss": "DSSexp"} for name in ("lra-pathfinder", "path-x")},
}
PAPER_FROM = {
    **{name: {c: "DLR paper Table 3 (test macro F1 / macro accuracy; a table)"
              for c in ("dlr", "dss", "local-attention")} for name in SEGMENTATION},
    **{name: {"dss": "DSS paper Table 1 (a table)"} for name in ("lra-pathfinder", "path-x")},
}
for _proto, _figs in {"lra-pathfinder": (.9420, .9306, .9387), "path-x": (.9635, .9195, .9276)}.items():
    s4_family.add_lra_figures(_proto, _figs, PAPER, PAPER_NAMES, PAPER_SOURCE, PAPER_FROM)

SUITES = {}  # each protocol is a suite member of its own
