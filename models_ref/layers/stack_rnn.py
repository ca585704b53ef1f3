"""Stack-RNN: Joulin & Mikolov's (2015) RNN with a differentiable stack, as the Chomsky-hierarchy paper
writes it (Delétang, Ruoss et al., ICLR 2023; docs/models.md "Chomsky hierarchy baselines";
google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be models/stack_rnn.py 114-194, one stack
(``n_stacks`` 1), inner core ``hk.VanillaRNN`` of H 256 (experiments/constants.py 50-54), cells of k = 8
(``stack_cell_size``, the paper's memory cell size, experiments/example.py 70), a stack of s = 128 cells (the
paper's appendix A.2, where the code's default is 30, stack_rnn.py 120) that grows to the row's length L on a
longer row (A.2: "manually increase their sizes when testing on longer sequences"; a stack of L cells holds
every push of the row, so no deeper one changes an output). Per step, with S_{t-1} [s, k] (row 0 the top,
S_0 = 0) and h_0 = 0:

    h_t = relu(W_x [x_t; S_{t-1}[0]] + b_x + W_h h_{t-1} + b_h)     the top is read (stack_rnn.py 166-172)
    v_t = W_v h_t + b_v                                              the value to push [k] (173-176)
    (a_push, a_pop, a_noop) = softmax(W_a h_t + b_a)                 the soft actions [3] (178-182)
    S_t[0] = a_push v_t       + a_pop S_{t-1}[1]   + a_noop S_{t-1}[0]             (_update_stack 87-91)
    S_t[i] = a_push S_{t-1}[i-1] + a_pop S_{t-1}[i+1] + a_noop S_{t-1}[i]   i >= 1, S_{t-1}[s] = 0  (94-108)

The core's output y_t = h_t (stack_rnn.py 187). Only torch is imported here.
"""
import torch
import torch.nn as nn


class StackRNN(nn.Module):
    """x [B, L, D] -> h [B, L, H]: the recurrence above, one step per position."""

    def __init__(self, D, H=256, stack_size=128, cell=8):
        super().__init__()
        self.H, self.s, self.k = H, stack_size, cell
        self.input_to_hidden = nn.Linear(D + cell, H)  # W_x [H, D + k], b_x [H]  (hk.VanillaRNN)
        self.hidden_to_hidden = nn.Linear(H, H)  # W_h [H, H], b_h [H]
        self.push = nn.Linear(H, cell)  # W_v [k, H], b_v [k]
        self.actions = nn.Linear(H, 3)  # W_a [3, H], b_a [3]  (push, pop, no-op: stack_rnn.py 81-84)

    def forward(self, x):  # x [B, L, D]
        B = x.shape[0]
        h = x.new_zeros(B, self.H)  # [B, H]
        s = max(self.s, x.shape[1])  # the paper's size, enlarged to a longer row's length
        S = x.new_zeros(B, s, self.k)  # [B, s, k]  the empty stack (initial_state, 189-194)
        zero = x.new_zeros(B, 1, self.k)  # [B, 1, k]  what a pop brings up from below the bottom
        out = []
        W, b = self.input_to_hidden.weight, self.input_to_hidden.bias  # W [H, D + k]: x's columns, then the read's
        D = x.shape[-1]
        ux = torch.nn.functional.linear(x, W[:, :D], b)  # [B, L, H]  x's part of W_x [x; read] + b_x, all steps
        for t in range(x.shape[1]):
            u = ux[:, t] + S[:, 0] @ W[:, D:].T  # [B, H]
            h = torch.relu(u + self.hidden_to_hidden(h))  # [B, H]
            v = self.push(h)  # [B, k]
            a = torch.softmax(self.actions(h), dim=-1)[:, :, None, None]  # [B, 3, 1, 1]
            down = torch.cat([v[:, None], S[:, :-1]], dim=1)  # [B, s, k]  after a push
            up = torch.cat([S[:, 1:], zero], dim=1)  # [B, s, k]  after a pop
            S = a[:, 0] * down + a[:, 1] * up + a[:, 2] * S  # [B, s, k]
            out.append(h)
        return torch.stack(out, dim=1)  # [B, L, H]
