"""S4: the structured state space layer (Gu, Goel, Re 2022; docs/models.md "S4").

Per channel h, an SSM of state size N with A in normal plus low-rank (NPLR) form,
written in the basis that diagonalises its normal part (S4 paper Theorem 1):

    A = Lambda - P Q^*,   Lambda = diag(Lambda_n), Re Lambda_n < 0,   x' = A x + B u,  y = C^* x.

HiPPO-LegS is A_nk = -(2n+1)^1/2 (2k+1)^1/2 (n > k), -(n+1) (n = k), 0 (n < k), B_n = (2n+1)^1/2;
adding P P^T with P_n = (n + 1/2)^1/2 leaves -1/2 I + S with S skew-symmetric, so
Lambda = -1/2 + i eig(S) and (P, B) -> V^* (P, B) for the unitary eigenvectors V (``legs_nplr``).
The N modes come in conjugate pairs: N/2 of each vector are stored, the rest is their conjugate.

Bilinear discretisation with step Delta: Abar = (I - Delta/2 A)^-1 (I + Delta/2 A),
Bbar = (I - Delta/2 A)^-1 Delta B; the kernel K[k] = C^* Abar^k Bbar (k < L) comes from its
truncated generating function at the roots of unity w_l = exp(-2 pi i l / L) (Algorithm 1):

    Ctil^* = C^* (I - Abar^L)   (the trained parameter, set once per length: ``S4.set_length``),
    Khat(w) = Ctil^* (I - Abar w)^-1 Bbar = Delta Ctil^* [(1 - w) - (1 + w) Delta/2 A]^-1 B,

the paper's 2/(1+w) [k00 - k01 (1 + k11)^-1 k10] multiplied through by (1 + w) so that w = -1
is not a pole. With d_n(w) = (1 - w) - (1 + w) Delta/2 Lambda_n and c(w) = (1 + w) Delta/2,
the Woodbury identity gives

    Khat(w) = Delta [r_CB - c r_CP (1 + c r_QP)^-1 r_QB],   r_ab(w) = sum_n conj(a_n) b_n / d_n(w),

four Cauchy sums over the N modes, evaluated at the L/2 + 1 frequencies of a real kernel in
chunks of frequencies by ``Cauchy``, whose backward pass recomputes each chunk instead of
storing it (memory O(H N chunk)), then K = irfft(Khat, L). The FFT convolution, kernel length
and layer around it are in kernel.py. Only torch is imported here.
"""
import math

import torch

from longsynth.models_ref.layers.kernel import SSMLayer

B_CLIP = 2.0  # |Im B| at initialisation, as the official nplr(..., B_clip=2.0)
CAUCHY_ELEMENTS = 1 << 21  # H_k * N * chunk complex entries per Cauchy chunk (16 MiB in complex64)


def hippo_legs(N):
    """HiPPO-LegS (A [N, N], B [N]) in float64 (S4 paper eq. 2)."""
    q = torch.sqrt(2 * torch.arange(N, dtype=torch.float64) + 1)  # [N]
    A = -torch.tril(q[:, None] * q[None, :], diagonal=-1)  # [N, N]  n > k
    A = A - torch.diag(torch.arange(N, dtype=torch.float64) + 1)  # [N, N]  n = k
    return A, q  # [N, N], [N]


def legs_nplr(N):
    """HiPPO-LegS in NPLR form, the half with Im Lambda > 0: (Lambda, P, B, V), complex128.

    Lambda [N/2], P [N/2] = V^* P_legs, B [N/2] = V^* B_legs, V [N, N/2]; with the conjugate
    half, A_legs = Vfull (diag(Lambda) - P P^*) Vfull^*.
    """
    if N < 2 or N % 2:
        raise ValueError(f"N: S4 keeps N/2 conjugate pairs, N must be even and >= 2, got {N}")
    A, B = hippo_legs(N)  # [N, N], [N]
    P = torch.sqrt(torch.arange(N, dtype=torch.float64) + 0.5)  # [N]
    S = A + P[:, None] * P[None, :] + 0.5 * torch.eye(N, dtype=torch.float64)  # [N, N]  skew-symmetric
    w, V = torch.linalg.eigh(1j * S.to(torch.complex128))  # [N], [N, N]  i S V = V w, so S V = -i w V
    keep = torch.argsort(w)[: N // 2]  # w < 0: Im Lambda = -w > 0
    V = V[:, keep]  # [N, N/2]
    Lam = torch.complex(torch.full((N // 2,), -0.5, dtype=torch.float64), -w[keep])  # [N/2]
    Vh = V.conj().transpose(0, 1)  # [N/2, N]
    return Lam, Vh @ P.to(V.dtype), Vh @ B.to(V.dtype), V  # [N/2], [N/2], [N/2], [N, N/2]


def _pairs(x):
    """Half of the conjugate-pair modes [..., N/2] -> all N modes [..., N]."""
    return torch.cat((x, x.conj()), dim=-1)  # [..., N]


def _inverse_d(g, w):
    """1 / d [H_k, N, F] with d_n(w) = (1 - w) - (1 + w) g_n, g = Delta/2 Lambda [H_k, N]."""
    return 1 / ((1 - w)[None, None, :] - (1 + w)[None, None, :] * g[..., None])  # [H_k, N, F]


class Cauchy(torch.autograd.Function):
    """r [H_k, V, F] = sum_n num[h, v, n] / d_n(w_f), chunked over frequencies in both passes.

    Forward and backward each hold one [H_k, N, chunk] block at a time (memory O(H N chunk),
    never [H, N, L]); the backward recomputes 1/d per chunk instead of storing it. Gradients
    (conjugate Wirtinger, torch's convention for complex inputs):
    dr/dnum = 1/d, dr/dg = num (1 + w) / d^2.
    """

    @staticmethod
    def forward(ctx, num, g, w, chunk):
        ctx.save_for_backward(num, g, w)
        ctx.chunk = chunk
        return torch.cat([torch.einsum("hvn,hnf->hvf", num, _inverse_d(g, w[s:s + chunk]))
                          for s in range(0, w.shape[0], chunk)], dim=-1)  # [H_k, V, F]

    @staticmethod
    def backward(ctx, grad):  # grad [H_k, V, F]
        num, g, w = ctx.saved_tensors
        d_num, d_g = torch.zeros_like(num), torch.zeros_like(g)  # [H_k, V, N], [H_k, N]
        for s in range(0, w.shape[0], ctx.chunk):
            inv = _inverse_d(g, w[s:s + ctx.chunk]).conj()  # [H_k, N, f]
            gc = grad[..., s:s + ctx.chunk]  # [H_k, V, f]
            d_num += torch.einsum("hvf,hnf->hvn", gc, inv)  # [H_k, V, N]
            dd = inv * inv * (1 + w[s:s + ctx.chunk]).conj()  # [H_k, N, f]  conj(dr/dg / num)
            d_g += torch.einsum("hvf,hvn,hnf->hn", gc, num.conj(), dd)  # [H_k, N]
        return d_num, d_g, None, None


class S4(SSMLayer):
    """One S4 layer on u [B, L, H] -> [B, L, H]: conv, skip D u, GELU, output Linear (kernel.py).

    The official parameterisation (state-spaces/s4 models/s4/s4.py ``SSMKernelDPLR``, lines
    1214-1246, 1323, 1331-1341; docs/models.md "S4"): the trained output vector is Ctil, not C.
    At the first forward, C holds C ~ CN(0, 1) and is turned once, without gradient, into
    Ctil^* = C^* (I - Abar^L) for that length L (``l_kernel``); a longer input doubles the length,
    Ctil^* <- Ctil^* (I + Abar^l), until it fits, and a shorter one takes the first L entries of
    the kernel of length ``l_kernel``. So once the length is set a forward is Cauchy sums and an
    FFT: no N x N power or solve. Q is tied to P (A = Lambda - P P^*, line 1323) and Im B is
    clipped to [-B_CLIP, B_CLIP] at initialisation (``nplr(..., B_clip=2.0)``, lines 445-446).

    ``N``: the state size (N/2 conjugate pairs are stored). ``lr``: learning rate of Lambda,
    P, B, Ctil and Delta (S4 paper appendix: at most 1e-3, no weight decay; None: the model's).
    """

    def __init__(self, H, N, *, bidirectional=False, max_kernel_length=None, dt_min=1e-3, dt_max=1e-1, lr=None,
                 chunk=None, skip="learned", glu=False):
        super().__init__(H, bidirectional=bidirectional, max_kernel_length=max_kernel_length, skip=skip, glu=glu)
        self.N, self.chunk = N, chunk
        H_k = 2 * H if bidirectional else H  # a second kernel runs right to left
        Lam, P, B, _ = legs_nplr(N)  # [N/2] each
        B = torch.complex(B.real, B.imag.clamp(-B_CLIP, B_CLIP))  # [N/2]

        def per_channel(z):  # [N/2] complex -> [H_k, N/2, 2] real
            return torch.view_as_real(z.to(torch.complex64)).expand(H_k, -1, -1).clone()

        log_dt = torch.rand(H_k) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # [H_k]
        self.register("log_dt", log_dt, lr)  # [H_k]
        self.register("Lambda_log_neg_re", torch.log(-Lam.real).float().expand(H_k, -1).clone(), lr)  # [H_k, N/2]
        self.register("Lambda_im", Lam.imag.float().expand(H_k, -1).clone(), lr)  # [H_k, N/2]
        self.register("P", per_channel(P), lr)  # [H_k, N/2, 2]  Q = P
        self.register("B", per_channel(B), lr)  # [H_k, N/2, 2]
        self.register("C", torch.randn(H_k, N // 2, 2) * math.sqrt(0.5), lr)  # [H_k, N/2, 2]  C, then Ctil
        self.register_buffer("l_kernel", torch.zeros((), dtype=torch.long))  # [] 0: C not yet turned into Ctil

    def nplr(self):
        """(Lambda, P, B, C) [H_k, N] complex over all N modes (C: Ctil once the length is set), Delta [H_k]."""
        Lam = torch.complex(-torch.exp(self.Lambda_log_neg_re), self.Lambda_im)  # [H_k, N/2]
        P, B, C = (torch.view_as_complex(t.contiguous()) for t in (self.P, self.B, self.C))  # [H_k, N/2]
        return (*(_pairs(t) for t in (Lam, P, B, C)), torch.exp(self.log_dt))  # 4 x [H_k, N], [H_k]

    def discrete(self):
        """Dense bilinear (Abar [H_k, N, N], Bbar [H_k, N]) in the diagonal basis (setup and tests)."""
        Lam, P, B, _, dt = self.nplr()  # [H_k, N] x 4, [H_k]
        A = torch.diag_embed(Lam) - P[..., :, None] * P.conj()[..., None, :]  # [H_k, N, N]
        eye = torch.eye(self.N, dtype=A.dtype, device=A.device)  # [N, N]
        h = (dt / 2).to(A.dtype)[:, None, None]  # [H_k, 1, 1]
        Abar = torch.linalg.solve(eye - h * A, eye + h * A)  # [H_k, N, N]
        Bbar = torch.linalg.solve(eye - h * A, 2 * h[..., 0] * B)  # [H_k, N]
        return Abar, Bbar

    @torch.no_grad()
    def set_length(self, L):
        """Make the kernel length at least L: C -> Ctil at the first call, doublings after (no gradient)."""
        l_now = int(self.l_kernel)
        if l_now >= L:
            return
        Abar, _ = self.discrete()  # [H_k, N, N]
        Ct = _pairs(torch.view_as_complex(self.C.contiguous())).conj()  # [H_k, N]  C^* (or Ctil^*)
        if l_now == 0:  # Ctil^* = C^* (I - Abar^L)
            Ct = Ct - (Ct[:, None, :] @ torch.linalg.matrix_power(Abar, L))[:, 0]  # [H_k, N]
            l_now = L
        while l_now < L:  # I - Abar^{2l} = (I - Abar^l)(I + Abar^l)
            Ct = Ct + (Ct[:, None, :] @ torch.linalg.matrix_power(Abar, l_now))[:, 0]  # [H_k, N]
            l_now *= 2
        half = Ct[:, : self.N // 2].conj().resolve_conj()  # [H_k, N/2]  the first of each conjugate pair
        self.C.copy_(torch.view_as_real(half))
        self.l_kernel.fill_(l_now)

    def real_part_kernel(self, L):
        """K [H_k, L] = C^* Abar^k Bbar for k < L, through the generating function at the roots of unity
        of the length ``l_kernel`` >= L (the first L entries)."""
        self.set_length(L)
        n = int(self.l_kernel)
        Lam, P, B, C, dt = self.nplr()  # [H_k, N] x 4, [H_k]
        Ct = C.conj()  # [H_k, N]  Ctil^*
        Pc = P.conj()  # [H_k, N]  Q^* = P^*
        num = torch.stack((Ct * B, Ct * P, Pc * B, Pc * P), dim=1)  # [H_k, 4, N]
        F = n // 2 + 1
        k = torch.arange(F, dtype=torch.float64, device=dt.device)  # [F]
        w = torch.polar(torch.ones_like(k), -2 * math.pi * k / n).to(Lam.dtype)  # [F]  roots of unity
        step = self.chunk or max(1, CAUCHY_ELEMENTS // (Lam.shape[0] * self.N))
        dtc = dt.to(Lam.dtype)  # [H_k]
        r = Cauchy.apply(num, dtc[:, None] / 2 * Lam, w, step)  # [H_k, 4, F]
        c = (1 + w)[None, :] * (dtc / 2)[:, None]  # [H_k, F]
        K_hat = dtc[:, None] * (r[:, 0] - c * r[:, 1] * r[:, 2] / (1 + c * r[:, 3]))  # [H_k, F]  Woodbury
        return torch.fft.irfft(K_hat, n=n)[:, :L]  # [H_k, L]
