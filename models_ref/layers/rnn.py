"""RNN: Haiku's ``hk.VanillaRNN`` as the Chomsky-hierarchy paper runs it (Delétang, Ruoss et al., ICLR
2023; docs/models.md "Chomsky hierarchy baselines"; google-deepmind/neural_networks_chomsky_hierarchy
@ 2b8eb4be experiments/constants.py 46-47: ``rnn.make_rnn`` with ``rnn_core=hk.VanillaRNN``, hidden size
256 from experiments/example.py 68-72). Haiku's core (haiku/_src/recurrent.py, VanillaRNN.__call__):
two linear maps, both with a bias (``double_bias`` on), state h_0 = 0:

    h_t = relu(W_x x_t + b_x + W_h h_{t-1} + b_h)          the core's output y_t = h_t

``models_ref/models/chomsky.py`` wraps every core of this family as models/rnn.py 48-73 does: the one-hot
input (the I input symbols and the empty token), the core over the whole row, ReLU, one linear map to the
O output classes. Only torch is imported here.
"""
import torch
import torch.nn as nn


class VanillaRNN(nn.Module):
    """x [B, L, D] -> h [B, L, H]: the recurrence above, one step per position."""

    def __init__(self, D, H=256):
        super().__init__()
        self.H = H
        self.input_to_hidden = nn.Linear(D, H)  # W_x [H, D], b_x [H]
        self.hidden_to_hidden = nn.Linear(H, H)  # W_h [H, H], b_h [H]

    def forward(self, x):  # x [B, L, D]
        u = self.input_to_hidden(x)  # [B, L, H]  W_x x_t + b_x, every position at once
        h = x.new_zeros(x.shape[0], self.H)  # [B, H]  h_0 = 0 (hk.VanillaRNN.initial_state)
        out = []
        for t in range(x.shape[1]):
            h = torch.relu(u[:, t] + self.hidden_to_hidden(h))  # [B, H]
            out.append(h)
        return torch.stack(out, dim=1)  # [B, L, H]
