"""The model contract of ``longsynth evaluate`` (docs/evaluate.md): what a factory is told.

A model is a factory ``factory(spec: ModelSpec) -> torch.nn.Module``. The module maps
``x`` float [B, T, d_input] (or int64 token ids [B, T] when ``vocab_size`` is set) to
[B, T, d_output]; the harness applies the protocol's readout to that output:

- ``"rightmost"``: the last ``target_len`` positions (atomic tasks, the DLR paper's rule);
- ``"positions"``: every labelled position (tagging: ListOps, Pathfinder-Segmentation);
- ``"mean"``: the mean over positions (LRA classification, S4's pooled decoder);
- ``"pool"``: at each labelled position t, the mean of the outputs 0..t: S4's pooled decoder over
  each padded sequence's own length (its ``use_lengths``), the label sitting at the last real token.

Plain data, no torch: the spec is saved in reports and checkpoints as a dict.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    task: str  # registry task name, e.g. "select" or "pathfinder-seg"
    protocol: str  # the protocol it runs under: "atomic", "listops-subtrees", "pathfinder-seg-128", ...
    scale: str  # "tiny" | "paper"
    objective: str  # "regression" (MSE) | "tokens" (cross-entropy per label) | "segmentation"
    readout: str  # "rightmost" | "positions" | "mean" | "pool"
    d_output: int  # output channels per position (classes for classification)
    seq_len: int  # T, the input length in training (the longest, for variable-length ListOps)
    target_len: int  # labelled outputs per sample: T' <= T for atomic tasks, T for tagging, 1 for "mean"
    causal: bool  # True where the paper's protocol is unidirectional: output t may not see inputs after t
    d_input: int | None = None  # float input channels, the two positional channels included
    vocab_size: int | None = None  # token inputs: ids in [0, vocab_size) (padding included)
    d_model: int | None = None  # the width a protocol's grid asks for (zoology's d_model); None: the model's own
    n_layers: int | None = None  # the depth a protocol's grid asks for (word problems' layers); None: the model's own
    # the longest input the protocol ever gives the model, its length-generalisation test sets included
    # (induction heads: trained at 64, tested to 1,024 at tiny scale, 2^20 at paper scale); size learned
    # positions by it. The harness runs the model at this length before training.
    max_seq_len: int | None = None

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    @property
    def longest(self):
        """The longest input the model will see: ``max_seq_len``, else ``seq_len``."""
        return self.max_seq_len or self.seq_len
