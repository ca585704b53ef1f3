"""The Chomsky-hierarchy paper's models as built-ins (Delétang, Ruoss et al., ICLR 2023; docs/models.md
"Chomsky hierarchy baselines"): ``rnn``, ``lstm``, ``stack-rnn``, ``tape-rnn``, ``chomsky-transformer`` on
the ``chomsky-*`` token tasks (docs/tasks/chomsky.md), each a core of models_ref/layers/ wrapped as
google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be models/rnn.py 48-73 wraps it:

    x_t = one_hot(id_t) over the I input symbols and the empty token I    (experiments/utils.py 54-79)
    h = core(x)                                                           every position, causal
    logits_t = W relu(h_t) + b                                            O output classes (rnn.py 72-73)

``chomsky-transformer`` is their ``transformer_encoder`` (models_ref/layers/chomsky_transformer.py): the
encoder reads the whole row (no causal mask; the padding masked out of its keys) and the head is
``hk.Linear(O)`` on its output without the ReLU (models/transformer.py 496-499).

Our rows already hold the empty tokens the authors' wrapper appends (docs/tasks/chomsky.md, "Row
layout"); the padding after them (id I + 1) is read as a zero vector and never scored. The harness
asks for ``vocab_size`` = I + 2 logits per position: the O = ``output_size`` of the task come from the
head, the rest are a constant -1e4 (no probability), so the parameters are the authors'. Every linear map
starts as Haiku's ``hk.Linear`` does (weights N(0, 1/fan_in) cut at two standard deviations, biases zero:
haiku basic.py, Linear.__call__; hk.VanillaRNN, hk.LSTM and hk.nets.MLP are built of it), not as torch's
``nn.Linear`` (uniform in +-1/sqrt(fan_in), and a bias drawn likewise).
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.errors import LongsynthError
from longsynth.models_ref.layers.chomsky_transformer import TransformerEncoder, haiku_init_
from longsynth.models_ref.layers.lstm import LSTM
from longsynth.models_ref.layers.rnn import VanillaRNN
from longsynth.models_ref.layers.stack_rnn import StackRNN
from longsynth.models_ref.layers.tape_rnn import TapeRNN

# (I, O) of each task at its default parameters (docs/tasks/chomsky.md, the table's I and O columns)
SIZES = {
    "chomsky-even-pairs": (2, 2), "chomsky-parity-check": (2, 2), "chomsky-cycle-navigation": (3, 5),
    "chomsky-modular-arithmetic": (9, 5), "chomsky-modular-arithmetic-brackets": (11, 5),
    "chomsky-reverse-string": (2, 2), "chomsky-solve-equation": (11, 5), "chomsky-stack-manipulation": (5, 3),
    "chomsky-binary-addition": (3, 3), "chomsky-binary-multiplication": (3, 3), "chomsky-compute-sqrt": (2, 2),
    "chomsky-duplicate-string": (2, 2), "chomsky-missing-duplicate-string": (4, 2), "chomsky-odds-first": (2, 2),
    "chomsky-bucket-sort": (5, 5),
}
CORES = {"rnn": VanillaRNN, "lstm": LSTM, "stack-rnn": StackRNN, "tape-rnn": TapeRNN,
         "chomsky-transformer": TransformerEncoder}
VARIANTS = {}  # built-in -> its core, where they differ by sizes only (the presets')
WHOLE_ROW = ("chomsky-transformer",)  # the cores that see every position of the row (not causal)
READS_LENGTH = ("tape-rnn",)  # reads the row's input length (where its empty tokens start) from the first step: its
# jumps move the head by it (tape_rnn.py 41-60); causal given the row's layout, where every scored output follows it
NO_LOGIT = -1e4  # the logits of ids outside the O output classes (finite: fp16 holds it)


@dataclasses.dataclass(frozen=True)
class ChomskyConfig:
    core: str  # a key of CORES
    I: int  # input symbols; the empty token is I, padding I + 1  # noqa: E741
    O: int  # output classes  # noqa: E741
    vocab_size: int  # the logits the harness reads (I + 2)
    arch: dict  # the core's sizes (H, stack_size, cell, memory_size, mlp, n_tapes)
    layer: str = "chomsky"  # what trainer_checkpoints.load_model rebuilds: a ChomskyModel
    computation_steps_mult: int = 0  # c: c n computation tokens between the input and the outputs (utils.py 33-88)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        if d.get("core") not in CORES or d.get("layer", "chomsky") != "chomsky":
            raise LongsynthError(f"model_config: not a Chomsky model ({d.get('core')!r})")
        if "mlp" in d.get("arch", {}):
            d["arch"] = {**d["arch"], "mlp": tuple(d["arch"]["mlp"])}  # JSON and pickles may give a list
        return cls(**d)


class ChomskyModel(nn.Module):
    """x [B, T] int64 -> logits [B, T, vocab_size]: one-hot, core, ReLU (not after the encoder), linear."""

    def __init__(self, cfg: ChomskyConfig):
        super().__init__()
        self.cfg = cfg
        self.core = CORES[cfg.core](cfg.I + 1 + (cfg.computation_steps_mult > 0), **cfg.arch)  # one-hot width
        self.head = nn.Linear(self.core.H, cfg.O)  # W [O, H], b [O]  (hk.Linear(output_size))
        for linear in (m for m in self.modules() if isinstance(m, nn.Linear)):  # the core's and the head's
            if cfg.core not in WHOLE_ROW or linear is self.head:  # the encoder inits its own (chomsky_transformer.py)
                haiku_init_(linear)  # hk.Linear's init, as every module of the authors' models starts

    def forward(self, x):  # x [B, T] int64
        I, c = self.cfg.I, self.cfg.computation_steps_mult  # noqa: E741
        dtype = self.head.weight.dtype
        x = x.long()
        empty = x == I  # [B, T]
        n = torch.where(empty.any(1), empty.long().argmax(1), torch.full_like(x[:, 0], x.shape[1]))  # [B] input length
        if c:
            x, back = with_computation(x, n, c, I)  # [B, T + c max n]: the authors' row, ids shifted by one from I
        pad = I + 1 + (c > 0)  # the padding's id
        u = F.one_hot(x.clamp(0, pad), pad + 1)[..., :pad].to(dtype)  # [B, T', pad]  padding -> 0
        if self.cfg.core == "tape-rnn":
            h = self.core(u, n)  # [B, T', H]
        elif self.cfg.core in WHOLE_ROW:
            h = self.core(u, x != pad)  # [B, T', H]  the padding masked out of the keys
        else:
            h = self.core(u)  # [B, T', H]
        if c:
            h = h.gather(1, back[:, :, None].expand(-1, -1, h.shape[-1]))  # [B, T, H]  back at our positions
        logits = self.head(h if self.cfg.core in WHOLE_ROW else F.relu(h))  # [B, T, O]  (transformer.py 499)
        rest = logits.new_full((*logits.shape[:2], self.cfg.vocab_size - self.cfg.O), NO_LOGIT)  # [B, T, V - O]
        return torch.cat([logits, rest], dim=-1)  # [B, T, vocab_size]


def with_computation(x, n, c, I):  # noqa: E741
    """(x' [B, T + c max n], back [B, T]): the authors' row with computation tokens (experiments/utils.py 55-80,
    ``make_model_with_empty_targets`` with ``computation_steps_mult`` c > 0): a row's n inputs, c n computation
    tokens (id I, their input_size + 0), then its empty tokens (id I + 1, their input_size + 1) and padding (I + 2);
    ``back[b, t]`` is the position of x' whose output our position t takes (t + c n past the input)."""
    B, T = x.shape
    cn = c * n[:, None]  # [B, 1]
    j = torch.arange(T + int(cn.max()), device=x.device)[None, :]  # [1, T']
    shifted = torch.where(x >= I, x + 1, x)  # [B, T]  empty I -> I + 1, padding I + 1 -> I + 2
    src = torch.where(j < n[:, None], j, j - cn)  # [B, T']  the position of x a position of x' copies
    out = shifted.gather(1, src.clamp(0, T - 1))  # [B, T']
    out = torch.where((j >= n[:, None]) & (j < n[:, None] + cn), torch.full_like(out, I), out)  # computation tokens
    out = torch.where(src >= T, torch.full_like(out, I + 2), out)  # past the row's end: padding
    t = torch.arange(T, device=x.device)[None, :]  # [1, T]
    return out, torch.where(t < n[:, None], t, t + cn)  # [B, T'], [B, T]


def config(name, task, vocab_size, arch):
    """The ChomskyConfig of built-in ``name`` on a chomsky task (refused, in one line, elsewhere)."""
    if task not in SIZES:
        raise LongsynthError(f"model: {name} runs on the chomsky-* tasks only, not {task}")
    I, O = SIZES[task]  # noqa: E741
    if vocab_size != I + 2:
        raise LongsynthError(f"model: {name} reads {task} at its default parameters (vocab_size {I + 2}), "
                             f"this run has vocab_size {vocab_size}")
    arch = dict(arch)
    steps = arch.pop("computation_steps_mult", 0)  # the wrapper's, not the core's (experiments/utils.py 33-88)
    return ChomskyConfig(core=VARIANTS.get(name, name), I=I, O=O, vocab_size=vocab_size, arch=arch,
                         computation_steps_mult=int(steps))
