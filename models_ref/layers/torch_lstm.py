"""LSTM as a block's layer (Hochreiter and Schmidhuber 1997; docs/models.md "LSTM block"), torch's
``nn.LSTM(H, H, batch_first=True)``, one layer, unidirectional, state (h_0, c_0) = (0, 0), in the
equations of torch's documentation:

    i_t = sigma(W_ii u_t + b_ii + W_hi h_{t-1} + b_hi)
    f_t = sigma(W_if u_t + b_if + W_hf h_{t-1} + b_hf)
    g_t = tanh(W_ig u_t + b_ig + W_hg h_{t-1} + b_hg)
    o_t = sigma(W_io u_t + b_io + W_ho h_{t-1} + b_ho)
    c_t = f_t * c_{t-1} + i_t * g_t
    h_t = o_t * tanh(c_t)                                   the layer's output y_t = h_t

The fixed-size state that the copying (Jelassi et al.) and flip-flop (Liu et al.) papers set against
attention, as the built-in ``lstm`` on the field's token protocols (the Chomsky paper's own core, with
Haiku's gate layout, stays models_ref/layers/lstm.py, its ``lstm`` on the ``chomsky-*`` protocols).
torch's fused kernel, not a loop: a position at a time in Python cost 3.7 s a training step at the
flip-flop protocol's 511 positions. Parameters 8 H^2 + 8 H (torch's init, U(-1/sqrt(H), 1/sqrt(H))).
Only torch is imported here.
"""
import torch.nn as nn


class TorchLSTM(nn.Module):
    """u [B, L, H] -> h [B, L, H]: torch's fused LSTM (cuDNN on CUDA)."""

    def __init__(self, H):
        super().__init__()
        self.rnn = nn.LSTM(H, H, batch_first=True)  # weight_ih_l0 [4H, H] = W_ii, W_if, W_ig, W_io; weight_hh_l0

    def forward(self, u):
        return self.rnn(u)[0]  # [B, L, H]
