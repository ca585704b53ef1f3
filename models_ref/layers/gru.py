"""GRU: the gated recurrent unit as a layer (Cho et al. 2014; docs/models.md "GRU"), torch's
``nn.GRU(H, H, batch_first=True)``, one layer, unidirectional, state h_0 = 0:

    r_t = sigma(W_ir u_t + b_ir + W_hr h_{t-1} + b_hr)
    z_t = sigma(W_iz u_t + b_iz + W_hz h_{t-1} + b_hz)
    n_t = tanh(W_in u_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}                      the layer's output y_t = h_t

A non-linear RNN: the positive control for state tracking (parity), which the linear layers
with transitions in [0, 1] cannot learn. Parameters 6 H^2 + 6 H (torch's init, U(-1/sqrt(H),
1/sqrt(H))). Only torch is imported here.
"""
import torch.nn as nn


class GRU(nn.Module):
    """u [B, L, H] -> h [B, L, H]: torch's fused GRU (cuDNN on CUDA)."""

    def __init__(self, H):
        super().__init__()
        self.rnn = nn.GRU(H, H, batch_first=True)  # weight_ih_l0 [3H, H] = W_ir, W_iz, W_in; weight_hh_l0 [3H, H]

    def forward(self, u):
        return self.rnn(u)[0]  # [B, L, H]
