"""LSTM: Haiku's ``hk.LSTM`` as the Chomsky-hierarchy paper runs it (Delétang, Ruoss et al., ICLR 2023;
docs/models.md "Chomsky hierarchy baselines"; google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be
experiments/constants.py 48-49: ``rnn.make_rnn`` with ``rnn_core=hk.LSTM``, hidden size 256 from
experiments/example.py 68-72). Haiku's core (haiku/_src/recurrent.py, LSTM.__call__): ONE linear map of
[x_t, h_{t-1}] to 4H, split in the order i, g, f, o, and a forget bias of +1 added inside the sigmoid;
state (h_0, c_0) = (0, 0):

    [i, g, f, o] = W [x_t; h_{t-1}] + b                  W [4H, D + H], b [4H]
    c_t = sigmoid(f + 1) * c_{t-1} + sigmoid(i) * tanh(g)
    h_t = sigmoid(o) * tanh(c_t)                           the core's output y_t = h_t

Parameters (D + H + 1) 4H. A torch ``nn.LSTM`` is not this layer (two biases, gate order i, f, g, o and
no forget bias), hence the loop. Only torch is imported here.
"""
import torch
import torch.nn as nn


class LSTM(nn.Module):
    """x [B, L, D] -> h [B, L, H]: the recurrence above, one step per position."""

    def __init__(self, D, H=256):
        super().__init__()
        self.H = H
        self.D = D
        self.gates = nn.Linear(D + H, 4 * H)  # W [4H, D + H] (rows i, g, f, o), b [4H]

    def forward(self, x):  # x [B, L, D]
        H = self.H
        Wx, Wh = self.gates.weight[:, :self.D], self.gates.weight[:, self.D:]  # [4H, D], [4H, H]
        u = x @ Wx.T + self.gates.bias  # [B, L, 4H]  W [x_t; .] + b, every position at once
        h = x.new_zeros(x.shape[0], H)  # [B, H]  h_0 = 0
        c = x.new_zeros(x.shape[0], H)  # [B, H]  c_0 = 0
        out = []
        for t in range(x.shape[1]):
            i, g, f, o = (u[:, t] + h @ Wh.T).split(H, dim=-1)  # 4 x [B, H]
            c = torch.sigmoid(f + 1.0) * c + torch.sigmoid(i) * torch.tanh(g)  # [B, H]
            h = torch.sigmoid(o) * torch.tanh(c)  # [B, H]
            out.append(h)
        return torch.stack(out, dim=1)  # [B, L, H]
