"""S6's selective scan in memory that does not grow with L x N (docs/models.md "S6"):

    h_t = Abar_t h_{t-1} + Delta_t x_t B_t,   y_t = C_t . h_t,   h_{-1} = 0
    Abar_t = exp(Delta_t A)   (signed: 2 exp(Delta_t A) - 1, in (-1, 1])

Shapes: b batch, L positions, EH channels, N states; Delta, x [b, L, EH], B, C [b, L, N], A [EH, N].
The plain form keeps Abar, Delta x B, h and, backward, the adjoint g and d Abar: five or six
[b, L, EH, N] tensors. ``SelectiveScan`` runs the recurrence a position at a time, touching each
[b, EH, N] number a few times a step, keeps only the state entering each chunk of Q positions
([b, L/Q, EH, N]) and recomputes a chunk's states from it when the gradient needs them: the
recomputation Mamba's own kernel makes (section 3.3.2 of the paper: the states are never stored),
done here in torch on the CPU. Q defaults to ``chunk_length``: a chunk's recomputed states hold about
16M numbers. Only torch is imported here.
"""
import torch

CHUNK_NUMBERS = 1 << 24  # numbers in one [b, Q, EH, N] chunk tensor by default (64 MiB in float32)
KEEP_NUMBERS = 1 << 26  # up to this many numbers in [b, L, EH, N], the forward keeps its states (256 MiB in float32)


def chunk_length(b, L, EH, N):
    """The default Q: as many positions as keep one chunk tensor near ``CHUNK_NUMBERS`` numbers."""
    return max(1, min(L, CHUNK_NUMBERS // max(1, b * EH * N)))


def _chunks(L, Q):
    return [range(t, min(t + Q, L)) for t in range(0, L, Q)]


def transition(Delta, A, signed):
    """Abar [..., EH, N] of Delta [..., EH] (one position's in the scan): exp(Delta A), or 2 exp(Delta A) - 1."""
    Abar = torch.mul(Delta[..., None], A).exp_()  # [..., EH, N]
    return Abar.mul_(2).sub_(1) if signed else Abar  # in place: no copy


class SelectiveScan(torch.autograd.Function):
    """y [b, L, EH] = C . h of ``SelectiveScan.apply(Delta, x, B, C, A, signed, chunk)``, one position
    at a time ([b, EH, N] tensors, each touched a few times a step); the gradient of Delta, x, B, C and
    A by the adjoint g_t = C_t dy_t + Abar_{t+1} g_{t+1}, chunk by chunk from the right, each chunk's
    states recomputed from the one saved where it starts, or, where all of them hold at most
    ``KEEP_NUMBERS`` numbers, the forward's own states kept. d Abar / d(Delta A) is Abar, or Abar + 1 when
    signed (2 exp(Delta A)), so the backward keeps Abar alone."""

    @staticmethod
    def forward(ctx, Delta, x, B, C, A, signed=False, chunk=None):
        b, L, EH = x.shape
        Q = chunk or chunk_length(b, L, EH, A.shape[1])
        D, Dx, Bt, Ct = (t.transpose(0, 1).contiguous() for t in (Delta, Delta * x, B, C))  # [L, b, .]: time-major
        y = x.new_empty(L, b, EH)  # [L, b, EH]
        h = x.new_zeros(b, EH, A.shape[1])  # [b, EH, N]  h_{-1}
        keep = any(ctx.needs_input_grad) and b * L * EH * A.shape[1] <= KEEP_NUMBERS
        starts, ctx.kept = [], ([h], []) if keep else None  # kept: (h_{t-1} for every t and h_{L-1}, Abar_t)
        for t in range(L):
            if t % Q == 0:
                starts.append(h.clone())  # [b, EH, N]  the state entering the chunk
            Abar = transition(D[t], A, signed)  # [b, EH, N]
            h = torch.mul(h, Abar).addcmul_(Dx[t, :, :, None], Bt[t, :, None, :])  # [b, EH, N]  h_t
            torch.bmm(h, Ct[t, :, :, None], out=y[t, :, :, None])  # [b, EH, 1]  C_t . h_t
            if keep:
                ctx.kept[0].append(h)
                ctx.kept[1].append(Abar)
        ctx.save_for_backward(Delta, x, B, C, A, torch.stack(starts, 1))  # starts [b, L/Q, EH, N]
        ctx.signed, ctx.Q = signed, Q
        return y.transpose(0, 1)  # [b, L, EH]

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        Delta, x, B, C, A, starts = ctx.saved_tensors
        L, signed = x.shape[1], ctx.signed
        D, X, Dx, Bt, Ct, dY = (t.transpose(0, 1).contiguous() for t in (Delta, x, Delta * x, B, C, dy))  # [L, b, .]
        dD, dX, dB, dC = (torch.empty_like(t) for t in (D, X, Bt, Ct))  # [L, b, .]
        dA_b = torch.zeros_like(starts[:, 0])  # [b, EH, N]  sum over t of d(Delta A) Delta, summed over b at the end
        carry = torch.zeros_like(starts[:, 0])  # [b, EH, N]  Abar_{t+1} g_{t+1}, from the right
        for k, chunk in reversed(list(enumerate(_chunks(L, ctx.Q)))):
            if ctx.kept is not None:  # the forward's own states
                states, Abars = ctx.kept[0][chunk.start:chunk.stop + 1], ctx.kept[1][chunk.start:chunk.stop]
            else:  # the chunk's states again, from the one saved
                states, Abars = [starts[:, k]], []  # h_{t-1} first; Abar_t per position of the chunk
                for t in chunk:
                    Abars.append(transition(D[t], A, signed))
                    states.append(torch.mul(states[-1], Abars[-1]).addcmul_(Dx[t, :, :, None], Bt[t, :, None, :]))
            for j in range(len(chunk) - 1, -1, -1):
                t = chunk[j]
                g = torch.addcmul(carry, dY[t, :, :, None], Ct[t, :, None, :])  # [b, EH, N]  d L / d h_t
                torch.bmm(dY[t, :, None, :], states[j + 1], out=dC[t, :, None, :])  # [b, 1, N]  sum_EH dy h_t
                gh = torch.mul(g, states[j])  # [b, EH, N]  g_t h_{t-1} = d L / d Abar_t
                dz = torch.addcmul(gh, gh, Abars[j]) if signed else gh.mul_(Abars[j])  # [b, EH, N]  d L / d(Delta A)
                dDx = torch.bmm(g, Bt[t, :, :, None])[..., 0]  # [b, EH]  d L / d(Delta x) = sum_N g B
                torch.bmm(Dx[t, :, None, :], g, out=dB[t, :, None, :])  # [b, 1, N]  sum_EH Delta x g
                dD[t] = torch.einsum("ben,en->be", dz, A).addcmul_(dDx, X[t])  # [b, EH]
                torch.mul(dDx, D[t], out=dX[t])  # [b, EH]
                dA_b.addcmul_(dz, D[t, :, :, None])  # [b, EH, N]
                carry = g.mul_(Abars[j])  # [b, EH, N]  Abar_t g_t
        ctx.kept = None
        return (dD.transpose(0, 1), dX.transpose(0, 1), dB.transpose(0, 1), dC.transpose(0, 1), dA_b.sum(0),
                None, None)
