"""Tape-RNN: the Chomsky-hierarchy paper's RNN with a differentiable tape (Delétang, Ruoss et al., ICLR
2023, section 4 and appendix B; docs/models.md "Chomsky hierarchy baselines";
google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be models/tape_rnn.py 33-182,
``TapeInputLengthJumpCore`` with one tape, inner core ``hk.VanillaRNN`` (experiments/constants.py 67-71),
H 256, cells of k = 8 (experiments/example.py 68-72), a tape of m = 256 cells (the paper's appendix A.2, where
example.py's demo has 40) that grows to the row's length L on a longer row (A.2: "manually increase their sizes
when testing on longer sequences"), the write MLP 64-64 (tape_rnn.py 41).
Per step, with M_{t-1} [m, k] (row 0 under the head, M_0 = 0), h_0 = 0 and n the input length (the row's
symbols before the first empty token; tape_rnn.py 115-116 reads it per batch, here per row):

    h_t = relu(W_x [x_t; M_{t-1}[0]] + b_x + W_h h_{t-1} + b_h)            the head's cell is read (96-101)
    w_t = MLP(h_t)                   Linear 64, ReLU, Linear 64, ReLU, Linear k (hk.nets.MLP, 102-106)
    a_t = softmax(W_a h_t + b_a)     5 actions: stay, left, right, jump left n, jump right n (108-113, 172-182)
    M' = [w_t; M_{t-1}[1:]]          write under the head (146-147)
    M_t[j] = a_0 M'[j] + a_1 M'[j+1] + a_2 M'[j-1] + a_3 M'[j+n] + a_4 M'[j-n]   indices mod m (149-153)

(jnp.roll(eye, -1, axis=0) maps row j to cell j + 1: a "left" action brings cell 1 under the head.) With
``n_tapes`` > 1 (the paper's sweep: 1 or 4 tapes, its appendix A.5) each tape has its own head: the cells under
the heads are read side by side, the MLP writes n_tapes x k values, and each tape takes its own actions (one
Linear of 5 per tape, tape_rnn.py 112-116) and is updated as above (the vmap over tapes, 118-121). The core's
output y_t = h_t. Only torch is imported here.
"""
import torch
import torch.nn as nn


def roll_index(shift, m, k):
    """shift [B] long -> index [B, m, k] for ``M.gather(1, index)`` = R with R[b, j] = M[b, (j - shift[b]) mod m]
    (torch.roll per row). Made once a forward: the shifts (1 and the input length) do not change over steps."""
    j = torch.arange(m, device=shift.device)  # [m]
    index = (j[None, :] - shift[:, None]) % m  # [B, m]
    return index[:, :, None].expand(shift.shape[0], m, k)  # [B, m, k]


class TapeRNN(nn.Module):
    """(x [B, L, D], n [B] long) -> h [B, L, H]: the recurrence above, one step per position."""

    def __init__(self, D, H=256, memory_size=256, cell=8, mlp=(64, 64), n_tapes=1):
        super().__init__()
        self.H, self.m, self.k, self.n = H, memory_size, cell, n_tapes
        self.input_to_hidden = nn.Linear(D + n_tapes * cell, H)  # W_x [H, D + n k], b_x [H]
        self.hidden_to_hidden = nn.Linear(H, H)  # W_h [H, H], b_h [H]
        widths = (H, *mlp, n_tapes * cell)
        layers = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.write = nn.Sequential(*layers[:-1])  # H -> 64 -> 64 -> n k, no activation at the end
        self.actions = nn.ModuleList(nn.Linear(H, 5) for _ in range(n_tapes))  # W_a [5, H], b_a [5] per tape

    def forward(self, x, n):  # x [B, L, D], n [B] long
        B = x.shape[0]
        h = x.new_zeros(B, self.H)  # [B, H]
        m = max(self.m, x.shape[1])  # the paper's size, enlarged to a longer row's length
        M = x.new_zeros(B * self.n, m, self.k)  # [B n, m, k]  tape j of row b at b n + j
        jump = n.repeat_interleave(self.n)  # [B n]  every tape of a row jumps by the row's input length
        one = torch.ones_like(jump)  # [B n]
        left, right, jump_left, jump_right = (roll_index(s, m, self.k) for s in (-one, one, -jump, jump))  # [B n, m, k]
        out = []
        W, b = self.input_to_hidden.weight, self.input_to_hidden.bias  # W [H, D + k]: x's columns, then the read's
        D = x.shape[-1]
        ux = torch.nn.functional.linear(x, W[:, :D], b)  # [B, L, H]  x's part of W_x [x; read] + b_x, all steps
        for t in range(x.shape[1]):
            u = ux[:, t] + M[:, 0].reshape(B, self.n * self.k) @ W[:, D:].T  # [B, H]  the heads' cells side by side
            h = torch.relu(u + self.hidden_to_hidden(h))  # [B, H]
            w = self.write(h).reshape(B * self.n, self.k)  # [B n, k]
            a = torch.stack([torch.softmax(act(h), dim=-1) for act in self.actions], 1)  # [B, n, 5]
            a = a.reshape(B * self.n, 5)[:, :, None, None]  # [B n, 5, 1, 1]
            Mw = torch.cat([w[:, None], M[:, 1:]], dim=1)  # [B n, m, k]
            M = (a[:, 0] * Mw + a[:, 1] * Mw.gather(1, left) + a[:, 2] * Mw.gather(1, right)
                 + a[:, 3] * Mw.gather(1, jump_left) + a[:, 4] * Mw.gather(1, jump_right))  # [B n, m, k]
            out.append(h)
        return torch.stack(out, dim=1)  # [B, L, H]
