"""seq-icl-lstm: the LSTM row of Akyürek et al.'s RegBench (berlino/seq_icl @ 9b9223d), their model as it is built.

``configs/experiment/dfa/lstm.yaml``: ``lm_simple_noffn`` (src/models/sequence/simple_lm.py 548-596,
``SimpleLMHeadModelNoFFN``) of d_model 32, n_layer 2, embed_dropout 0.1, vocab_size 20, each layer their
``LSTMLayer`` (src/models/sequence/rnn/lstm.py 5-53; configs/model/layer/lstm.yaml; n_layer 1, reinit True, its
dropout 0.1 unused by a one-layer ``nn.LSTM``). No position table (``max_position_embeddings`` -1, 561, 568), no
norm, no residual, the head ``Linear(D, V, bias=False)`` tied to E (575-579). Token ids x [B, T] -> logits [B, T, V]:

    e = E[x]                                                          GPT2Embeddings (simple_lm.py 226)
    logits = LSTM_{n_layers-1}(e) E^T                                 simple_lm.py 582-594

Their forward (589-590) hands every layer the embeddings, ``hidden_states = mixer(embeddings)``, not the
previous layer's output, and keeps the last: the first LSTM's output is discarded, so "2 layers" is one LSTM over
the embeddings whose parameters are counted and never trained (no gradient reaches them, and torch's AdamW leaves a
parameter without a gradient alone, weight decay included). The embedding dropout's output (583) is overwritten
there too, so no dropout acts. Kept as they are: the unused layers' parameters are here (the count and the
state_dict are theirs) with ``requires_grad`` off (the same training, and DistributedDataParallel does not wait for
their gradients), and their output is not computed (it changes nothing).

Init, theirs: no ``_init_weights`` (the class applies none), so E is ``nn.Embedding``'s N(0, 1) and is the head; each
LSTM (lstm.py 28-49) ``weight_ih`` Xavier-uniform, ``weight_hh`` orthogonal, ``bias_ih`` 0 but the forget gate's
quarter (torch's gate order i, f, g, o) 1, ``bias_hh`` 0. Their optimizer is ``AdamW(self.parameters(),
weight_decay=0.1)`` whole (train.py 756-786; no ``optimizer_param_grouping`` in the DFA configs): every parameter
decayed, as the harness does for a model that declares ``decays_every_parameter``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch.nn as nn
import torch.nn.functional as F

from longsynth.errors import LongsynthError


@dataclass
class SeqIclLSTMConfig:
    vocab_size: int  # V (the head is tied to E: the logits' width)
    d_model: int = 32  # lstm.yaml
    n_layers: int = 2  # lstm.yaml's n_layer: LSTMs built; only the last one's output is used (simple_lm.py 589-590)
    layer: str = "seq-icl-lstm"  # what trainer.load_model rebuilds

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers"):
            if getattr(self, name) < 1:
                raise LongsynthError(f"{name}: must be >= 1, got {getattr(self, name)}")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


class LSTMLayer(nn.Module):
    """Their ``LSTMLayer`` (lstm.py 5-53): one ``nn.LSTM(D, D, batch_first=True)``, re-initialised as Keras does."""

    def __init__(self, D):
        super().__init__()
        self.lstm = nn.LSTM(input_size=D, hidden_size=D, num_layers=1, batch_first=True)  # lstm.py 22
        for name, p in self.lstm.named_parameters():  # lstm.py 28-49 (_reinitialize)
            if "weight_ih" in name:
                nn.init.xavier_uniform_(p.data)
            elif "weight_hh" in name:
                nn.init.orthogonal_(p.data)
            elif "bias_ih" in name:
                p.data.zero_()
                p.data[D:2 * D].fill_(1.0)  # the forget gate (i, f, g, o): lstm.py 40-43
            elif "bias_hh" in name:
                p.data.zero_()

    def forward(self, u):  # u [B, T, D]
        return self.lstm(u)[0]  # [B, T, D]  lstm.py 51-53


class SeqIclLSTM(nn.Module):
    """``SimpleLMHeadModelNoFFN`` with their LSTM layers (simple_lm.py 548-596): x [B, T] -> [B, T, V]."""

    decays_every_parameter = True  # train.py 756-786: AdamW over every parameter, weight decay 0.1

    def __init__(self, cfg: SeqIclLSTMConfig):
        super().__init__()
        self.cfg = cfg
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model)  # E [V, D], N(0, 1)  simple_lm.py 207, 568
        self.layers = nn.ModuleList(LSTMLayer(cfg.d_model) for _ in range(cfg.n_layers))  # simple_lm.py 571-573
        for layer in self.layers[:-1]:  # their forward never reads these (589-590): no gradient, never updated
            layer.requires_grad_(False)

    def forward(self, x):  # x [B, T] int64
        e = self.word(x)  # [B, T, D]  simple_lm.py 582 (no positions; the dropped copy of 583 is never read)
        h = self.layers[-1](e)  # [B, T, D]  589-590: each layer reads e, the last one's output is kept
        return F.linear(h, self.word.weight)  # [B, T, V]  594, lm_head tied to E (575-579)

