"""S6's selective scan in memory that does not grow with L x N (docs/models.md "S6"):

    h_t = Abar_t h_{t-1} + Delta_t x_t B_t,   y_t = C_t . h_t,   h_{-1} = 0
    Abar_t = exp(Delta_t A)   (signed: 2 exp(Delta_t A) - 1, in (-1, 1])

Shapes: b batch, L positions, EH channels, N states; Delta, x [b, L, EH], B, C [b, L, N], A [EH, N].
The plain form keeps Abar, Delta x B, h and, backward, the adjoint g and d Abar: five or six
[b, L, EH, N] tensors. ``SelectiveScan`` keeps only the state entering each chunk of Q positions
([b, L/Q, EH, N]) and recomputes a chunk's Abar, Delta x B and h from it when the gradient needs them,
the recomputation Mamba's own kernel makes (section 3.3.2 of the paper: the states are never stored),
done here in torch on the CPU. Q defaults to ``chunk_length``: a chunk's tensors hold about 16M numbers.
Only torch is imported here.
"""
import math

import torch

CHUNK_NUMBERS = 1 << 24  # numbers in one [b, Q, EH, N] chunk tensor by default (64 MiB in float32)


def scan(a, bx, reverse=False, chunk=None):
    """h_t = a_t h_{t-1} + bx_t from h = 0 (``reverse``: h_t = a_t h_{t+1} + bx_t) on [b, L, ...].

    Two levels over n chunks of Q positions (no autograd): every chunk at once from 0 -> its end
    state e and the product p of its a; a loop over the chunks -> the state s entering each; every
    chunk at once again from s; then the L - nQ positions left over one by one. 2Q + n + (L - nQ)
    steps, no padding copy.
    """
    L = a.shape[1]
    Q = min(chunk or math.ceil(math.sqrt(L)), L)
    n = L // Q
    body = slice(L - n * Q, L) if reverse else slice(0, n * Q)  # the chunks; the rest (< Q) after them
    ac, xc = a[:, body].unflatten(1, (n, Q)), bx[:, body].unflatten(1, (n, Q))  # [b, n, Q, ...] views
    h = torch.empty_like(bx)  # [b, L, ...]
    hc = h[:, body].unflatten(1, (n, Q))  # [b, n, Q, ...] view of h
    steps = range(Q - 1, -1, -1) if reverse else range(Q)
    e, p = xc[:, :, steps[0]].clone(), ac[:, :, steps[0]].clone()  # [b, n, ...], [b, n, ...]
    for j in steps[1:]:
        torch.addcmul(xc[:, :, j], ac[:, :, j], e, out=e)  # [b, n, ...]  local state from 0
        p.mul_(ac[:, :, j])  # [b, n, ...]  prod of the chunk's a
    s, state = torch.empty_like(e), torch.zeros_like(e[:, 0])  # [b, n, ...], [b, ...]
    for c in (range(n - 1, -1, -1) if reverse else range(n)):
        s[:, c] = state  # [b, ...]  the state entering chunk c
        state = torch.addcmul(e[:, c], p[:, c], state)  # [b, ...]
    for j in steps:
        s = torch.addcmul(xc[:, :, j], ac[:, :, j], s, out=hc[:, :, j])  # [b, n, ...]
    for t in (range(L - n * Q - 1, -1, -1) if reverse else range(n * Q, L)):
        state = torch.addcmul(bx[:, t], a[:, t], state, out=h[:, t])  # [b, ...]
    return h  # [b, L, ...]


def chunk_length(b, L, EH, N):
    """The default Q: as many positions as keep one chunk tensor near ``CHUNK_NUMBERS`` numbers."""
    return max(1, min(L, CHUNK_NUMBERS // max(1, b * EH * N)))


def _chunk(Delta, x, B, A, signed, s):
    """(exp(Delta A), Abar, h) of one chunk [b, Q, EH, N] from the state s [b, EH, N] entering it."""
    e = torch.exp(Delta[..., None] * A)  # [b, Q, EH, N]
    Abar = 2 * e - 1 if signed else e  # [b, Q, EH, N]
    bx = (Delta * x)[..., None] * B[:, :, None, :]  # [b, Q, EH, N]  Bbar x = Delta B x (outer)
    bx[:, 0].addcmul_(Abar[:, 0], s)  # [b, EH, N]  h_0 = Abar_0 s + Bbar_0 x_0
    return e, Abar, scan(Abar, bx)  # ..., [b, Q, EH, N]


def _chunks(L, Q):
    return [slice(t, min(t + Q, L)) for t in range(0, L, Q)]


class SelectiveScan(torch.autograd.Function):
    """y [b, L, EH] = C . h of ``SelectiveScan.apply(Delta, x, B, C, A, signed, chunk)``; the
    gradient of Delta, x, B, C and A by the adjoint g_t = C_t dy_t + Abar_{t+1} g_{t+1}, chunk by
    chunk from the right, each chunk recomputed from its saved entering state."""

    @staticmethod
    def forward(ctx, Delta, x, B, C, A, signed=False, chunk=None):
        b, L, EH = x.shape
        Q = chunk or chunk_length(b, L, EH, A.shape[1])
        y = x.new_empty(b, L, EH)  # [b, L, EH]
        s = x.new_zeros(b, EH, A.shape[1])  # [b, EH, N]  h_{-1}
        starts = []
        for sl in _chunks(L, Q):
            starts.append(s)
            _, _, h = _chunk(Delta[:, sl], x[:, sl], B[:, sl], A, signed, s)  # [b, Q, EH, N]
            y[:, sl] = torch.matmul(h, C[:, sl, :, None])[..., 0]  # [b, Q, EH]  C . h
            s = h[:, -1].clone()  # [b, EH, N]  (a copy: a view would keep the chunk's h alive)
        ctx.save_for_backward(Delta, x, B, C, A, torch.stack(starts, 1))  # starts [b, L/Q, EH, N]
        ctx.signed, ctx.Q = signed, Q
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        Delta, x, B, C, A, starts = ctx.saved_tensors
        L = x.shape[1]
        dDelta, dx, dB, dC, dA = (torch.zeros_like(t) for t in (Delta, x, B, C, A))
        carry = torch.zeros_like(starts[:, 0])  # [b, EH, N]  Abar_{t+1} g_{t+1} from the chunk to the right
        for k, sl in reversed(list(enumerate(_chunks(L, ctx.Q)))):
            Dk, xk, Bk, s = Delta[:, sl], x[:, sl], B[:, sl], starts[:, k]  # [b, Q, EH], .., [b, Q, N], [b, EH, N]
            e, Abar, h = _chunk(Dk, xk, Bk, A, ctx.signed, s)  # [b, Q, EH, N] each
            dh = dy[:, sl, :, None] * C[:, sl, None, :]  # [b, Q, EH, N]  d y / d h
            dh[:, -1] += carry
            a_next = torch.cat((Abar[:, 1:], torch.ones_like(Abar[:, :1])), 1)  # [b, Q, EH, N]  Abar_{t+1}
            g = scan(a_next, dh, reverse=True)  # [b, Q, EH, N]  d L / d h_t
            carry = Abar[:, 0] * g[:, 0]  # [b, EH, N]  for the chunk to the left
            dC[:, sl] = torch.matmul(dy[:, sl, None, :], h)[:, :, 0]  # [b, Q, N]  sum_EH dy h
            h_prev = torch.cat((s[:, None], h[:, :-1]), 1)  # [b, Q, EH, N]  h_{t-1}
            dz = g * h_prev * e  # [b, Q, EH, N]  d L / d(Delta A) = g h_{t-1} dAbar/d(Delta A)
            if ctx.signed:
                dz *= 2
            dDx = torch.matmul(g, Bk[..., None])[..., 0]  # [b, Q, EH]  d L / d(Delta x) = sum_N g B
            dB[:, sl] = torch.matmul((Dk * xk)[:, :, None, :], g)[:, :, 0]  # [b, Q, N]  sum_EH Delta x g
            dDelta[:, sl] = dDx * xk + (dz * A).sum(-1)  # [b, Q, EH]
            dx[:, sl] = dDx * Dk  # [b, Q, EH]
            dA += torch.einsum("bqen,bqe->en", dz, Dk)  # [EH, N]
        return dDelta, dx, dB, dC, dA, None, None
