"""The S4 family's presets (docs/models.md "S4", "S4D", "eSSM"): the pieces atomic.py (tiny
only: no paper runs them on the atomic tasks), listops.py and pathfinder.py (the LRA protocols)
share, and the papers' LRA figures.

Sources:
  S4:   S4 paper Table 11 (ListOps: 6 layers, H 128, N 64, batch norm, post-norm, lr 0.01, wd 0.01;
        Pathfinder: 6 layers, H 256, batch norm, prenorm, lr 0.004; Path-X: as Pathfinder at lr 0.0005
        and Delta in [1e-4, 1e-1]); SSM parameters at lr 1e-3 without weight decay (its appendix D.2).
  S4D:  the same settings (S4D reuses S4's LRA configurations; its own table is not among the papers).
  eSSM: eSSM paper Table 10 (ListOps: 6 layers, 4 heads, H 256, N 256, LR_SSM = LR_other = 0.01,
        post-norm; Pathfinder: 8 heads, H 192, N 256, LR_SSM 1e-3, LR_other 5e-3, dropout 0.05,
        prenorm; Path-X: as Pathfinder at LR_SSM 5e-4, LR_other 1e-3, dropout 0, Delta in [1e-4, 0.1],
        appendix E.2.6), batch norm (appendix E.1), its own gated activation instead of a GLU.
The protocols (batch, steps, schedule) are the harness's (each family's PROTOCOLS), not each paper's.
"""
from __future__ import annotations

MODELS = ("s4", "s4d", "essm")  # shown after the DLR paper's columns in a report whose protocols have their figures
S4_DT = dict(dt_min=1e-3, dt_max=1e-1)
SOURCES = {"s4": "state-spaces/s4 configs/experiment/lra (the current configs behind S4's updated Table 4)",
           "s4d": "S4's current LRA configs (S4D reuses S4's LRA settings)",
           "essm": "eSSM paper Table 10 and appendix E.2"}
# tiny: the paper presets' norms and heads at 2 layers of H 64 (atomic: 1 layer, as DLR's tiny preset).
# S4 at N 32: its N x N setup (Abar^L by repeated squaring) makes N 64 three times slower on a CPU.
TINY_SIZES = {"s4": dict(N=32), "s4d": dict(N=64), "essm": dict(N=128, heads=4)}  # eSSM: 32 states per head


def lra_presets(protocol, s4, essm):
    """The paper-scale rows of s4, s4d (S4's arch and lr ``s4``) and essm (``essm``) on an LRA protocol."""
    return {(protocol, "paper", model): dict(arch=dict(arch), lr=lr, source=SOURCES[model])
            for model, (arch, lr) in (("s4", s4), ("s4d", s4), ("essm", essm))}


def lra_tiny(protocol, lr, prenorm):
    """The tiny rows of the S4 family on an LRA protocol: the paper presets' norms and heads at 2
    layers of H 64."""
    return {(protocol, "tiny", model): dict(
        arch=dict(H=64, n_layers=2, glu=model != "essm", norm="batch", **({"prenorm": True} if prenorm else {}),
                  ssm_lr=1e-3, **S4_DT, **size), lr=lr, source=f"{SOURCES[model]} shrunk to 2 layers of H 64")
        for model, size in TINY_SIZES.items()}


def add_lra_figures(protocol, figures, paper, names, sources, paper_from):
    """The papers' LRA test accuracies of s4, s4d and essm (``figures``, in that order) added to a
    family's tables: S4 paper Table 4 (updated results); S4D and eSSM as the eSSM paper's Table 2
    lists them."""
    for model, v in zip(MODELS, figures):
        paper[protocol][model] = {"accuracy": v}
    names[protocol].update({"s4": "S4", "s4d": "S4D", "essm": "eSSM"})
    paper_from[protocol].update({"s4": "S4 paper Table 4 (updated results; a table)",
                                 "s4d": "eSSM paper Table 2 (its S4D row, citing the S4D paper; a table)",
                                 "essm": "eSSM paper Table 2 (a table)"})
    sources[protocol] += "; S4 paper Table 4 (S4, updated results); eSSM paper Table 2 (S4D, eSSM)"


def skew_hippo(architectures, protocol):
    """DSS_exp's rows on an LRA protocol with its default Skew-HiPPO init: its LRA figures (DSS paper
    Table 1) came from it (ag1988/dss configs/model/layer/dss.yaml ``Lambda_init:
    hippo_skew_pos_imag``); the atomic and DLR-paper protocols keep the DLR repository's Lin init,
    with which Table 1 was made."""
    for scale in ("paper", "tiny"):
        row = architectures[(protocol, scale, "dss")]
        architectures[(protocol, scale, "dss")] = dict(row, arch=dict(row["arch"], init="skew-hippo"),
                                                       source=row["source"] + "; DSS_exp with the Skew-HiPPO init")
