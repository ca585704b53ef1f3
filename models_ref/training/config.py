"""A training run's configuration (``TrainConfig``) and its learning-rate schedule (``lr_factor``).

Objectives: "regression" (MSE on the rightmost y.shape[1] positions, metric R^2), "tokens"
(cross-entropy ignoring -100, token accuracy), "segmentation" (cross-entropy over classes,
macro F1 and macro accuracy); ``PRIMARY`` is each one's metric, and ``primary_metric`` a run's: the DFA
accuracy (RegBench's, docs/tasks/regbench.md) where ``dfa_metric`` is set. Readouts
(trainer_forward.readout): which outputs meet the targets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from longsynth.errors import LongsynthError


OBJECTIVES = ("regression", "tokens", "segmentation")
READOUTS = ("rightmost", "positions", "mean", "pool")  # longsynth.spec: which outputs meet the targets
PRIMARY = {"regression": "r2", "tokens": "accuracy", "segmentation": "macro_f1"}
SCHEDULES = ("constant", "cosine", "linear", "timm-cosine")


@dataclass
class TrainConfig:
    steps: int
    lr: float
    objective: str = "regression"  # "regression" | "tokens" | "segmentation"
    readout: str = "rightmost"  # "rightmost" (last y.shape[1] outputs) | "positions" (all) | "mean" | "pool"
    num_classes: int = 3  # segmentation only
    weight_decay: float = 0.0  # matrices only (not norms, biases, embeddings); SSM parameters carry their own (0)
    schedule: str = "constant"  # "constant" | "cosine" | "linear" (linear warmup, then decay to min_lr_ratio) |
    # "timm-cosine" (timm's CosineLRScheduler stepped per update, as seq_icl runs it: ``lr_factor``)
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    warmup_init_ratio: float = 0.0  # timm-cosine: the factor the warmup starts from (timm's warmup_lr_init / lr)
    grad_clip: float | None = None  # max global grad norm
    # the loss the gradient is of: the mean over scored positions (False), or each row's sum over its scored positions
    # averaged over rows (True: the Chomsky hierarchy's loss, experiments/example.py 100-102); the logged training
    # loss is the mean over positions either way
    loss_per_row: bool = False
    eval_every: int = 100
    eval_batches: int | None = None  # cap on val/test batches per evaluation
    checkpoint_every: int | None = None
    seed: int = 0
    amp: bool = False  # bf16 autocast (the SSM kernel and FFT stay float32)
    compile: bool = False  # torch.compile the model
    checkpoint_activations: bool = False  # recompute each block in the backward pass
    trim: bool = False  # cut every batch after its last scored position (forward.trimmed): exact for a causal model
    # tokens: ids whose targets the metrics leave out (the loss keeps them), and per-row string and character accuracy
    # reported beside (eval_pass._strings); None: neither
    string_metrics: tuple | None = None
    # tokens: the evaluation batches carry {"allowed": [B, T]} (the letters a row's DFA allows next, a bit mask) and
    # the run's primary metric is the DFA accuracy (eval_pass._dfa), RegBench's
    dfa_metric: bool = False

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise LongsynthError(f"objective: must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.readout not in READOUTS:
            raise LongsynthError(f"readout: must be one of {READOUTS}, got {self.readout!r}")
        if self.schedule not in SCHEDULES:
            raise LongsynthError(f"schedule: must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.steps < 1 or self.eval_every < 1:
            raise LongsynthError("steps and eval_every: must be >= 1")


def primary_metric(cfg: TrainConfig):
    """The metric a run is selected and reported by: its objective's, or the DFA accuracy."""
    return "dfa_accuracy" if cfg.dfa_metric else PRIMARY[cfg.objective]


def lr_factor(step, cfg: TrainConfig):
    """Learning-rate multiplier at ``step`` (0-based): a pure function of the step.

    "timm-cosine" is timm's ``CosineLRScheduler`` (timm/scheduler/cosine_lr.py ``_get_lr``) with ``t_in_epochs``
    False, ``warmup_prefix`` False and one cycle of ``t_initial`` = ``steps``, as seq_icl's
    ``TimmCosineLRScheduler`` (src/utils/optim/schedulers.py 65-87) steps it once an update from 0: the warmup
    rises linearly from ``warmup_init_ratio`` (step 0) towards 1 (step ``warmup_steps``, never reached), then the
    cosine runs from step 0, not from the warmup's end, so it starts below 1 (0.978 at seq_icl's 3,140 of 31,400,
    floor 0.1) and ends at ``min_lr_ratio``."""
    if cfg.schedule == "timm-cosine":
        if step < cfg.warmup_steps:
            return cfg.warmup_init_ratio + step * (1 - cfg.warmup_init_ratio) / cfg.warmup_steps
        t = min(1.0, step / cfg.steps)
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    span = max(1, cfg.steps - cfg.warmup_steps)
    t = min(1.0, (step - cfg.warmup_steps) / span)
    if cfg.schedule == "linear":  # safari's get_linear_schedule_with_warmup
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * (1 - t)
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))
