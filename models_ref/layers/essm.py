"""eSSM: the efficient MIMO state space layer (Liang, Li 2024, sections 3-4; docs/models.md "eSSM").

The input's H channels are split into s heads of h = H/s channels (block diagonalisation,
eq. 14), and the layer's N states into n = N/s per head; head j is a multi-input
multi-output SSM with diagonal state matrix (Lemma 1, eq. 8), its n complex states standing
for n conjugate pairs (the official ``conj_sym``):

    z' = Lambda_j z + B_j u_j,   y_j = 2 C_j Re(z) + D_j u_j,
    Lambda_j [n] complex, Re Lambda < 0;  B_j [n, h], C_j [h, n] real;  D_j = diag [h];  Delta_j [n].

Zero-order hold (eq. 4) per state: Lambdabar = exp(Delta Lambda), Bbar = (Lambdabar - 1)/Lambda B.
As B u is real, Re(z) = V * (B u) with the real system kernel (eqs. 7, 9-12)

    V_n[k] = Re(beta_n Lambdabar_n^k),   beta_n = (exp(Delta_n Lambda_n) - 1) / Lambda_n,

one univariate sequence per state, so the tensor convolution is n FFT convolutions of size 2L
per head (fast tensor convolution, eq. 13): O(L n max(h, log L)) per head (Proposition 2).
Bidirectional (eq. 16): the backward kernel is the forward one reversed, no new parameters.
With several heads they are concatenated and mixed by W [H, H] + b (eq. 15), then the gated
activation GELU(y) * sigmoid(W_g GELU(y)) (the official ``acttivation_post: half_glu1``).

Initialisation as the official code with its LRA configs (leonty1/essm
src/models/sequence/ss/standalone/ldnn_multihead_A_complex.py ``ssm_initializer``, lines
186-256, ``keep_d_state: true``; docs/models.md "eSSM"): Lambda the eigenvalues with Im > 0
of the normal part of a 2n-state HiPPO-LegS (models_ref/layers/s4.py ``legs_nplr``), its real part
kept <= -1e-4 by clipping (``max_real_Lambda``; the paper's f_+ says 1e-3); B = Re(V^* B0)
and C = Re(C0 V) with B0, C0 complex, both parts N(0, 1) truncated at +-2, V the LegS
eigenvectors; D = 1; log Delta ~ U[log dt_min, log dt_max] per state. Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import SSMLayer, exp_range, fft_conv

RE_MAX = -1e-4  # Re Lambda is clipped to at most this: the official max_real_Lambda (the paper's f_+ says 1e-3)


class ESSM(SSMLayer):
    """One multi-head eSSM layer on u [B, L, H] -> [B, L, H].

    ``N``: the state size of the layer, divided over the heads: n = N / s complex states per
    head (the official ``self.n = d_s // head``, ldnn_multihead_A_complex.py line 459).
    ``heads``: s, dividing H and N. ``lr``: learning rate of Lambda, Delta and B (the paper's
    LR_SSM); C and D train at the model's (LR_other), all without weight decay.
    """

    def __init__(self, H, N, *, heads=1, bidirectional=False, max_kernel_length=None, dt_min=1e-3, dt_max=1e-1,
                 lr=None):
        super().__init__(H, bidirectional=bidirectional, max_kernel_length=max_kernel_length, skip=None)
        if heads < 1 or H % heads or N % heads:
            raise ValueError(f"heads: must divide H = {H} and N = {N}, got {heads}")
        from longsynth.models_ref.layers.s4 import legs_nplr

        self.N, self.heads, h, n = N, heads, H // heads, N // heads
        Lam, _, _, V = legs_nplr(2 * n)  # [n], V [2n, n]: the Im > 0 half of a 2n-state LegS
        V = V.to(torch.complex64)  # [2n, n]
        log_dt = torch.rand(heads, n) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # [s, n]
        self.register("log_dt", log_dt, lr)  # [s, n]
        self.register("Lambda_re", Lam.real.float().expand(heads, -1).clone(), lr)  # [s, n]  clipped to <= RE_MAX
        self.register("Lambda_im", Lam.imag.float().expand(heads, -1).clone(), lr)  # [s, n]
        B0 = torch.complex(nn.init.trunc_normal_(torch.empty(2 * n, h)), nn.init.trunc_normal_(torch.empty(2 * n, h)))
        B = (V.conj().transpose(0, 1) @ B0).real  # [n, h]  Re(V^* B0), the same for every head
        self.register("B", B.expand(heads, -1, -1).clone(), lr)  # [s, n, h]
        C0 = torch.complex(nn.init.trunc_normal_(torch.empty(heads, h, 2 * n)),
                           nn.init.trunc_normal_(torch.empty(heads, h, 2 * n)))  # [s, h, 2n]
        self.register("C", (C0 @ V).real, None)  # [s, h, n]  Re(C0 V)
        self.register("D", torch.ones(heads, h), None)  # [s, h]
        if heads == 1:  # the official head mixer exists only for several heads
            self.out = nn.Identity()
        self.gate = nn.Linear(H, H)  # W_g of the activation GELU(y) * sigmoid(W_g GELU(y))

    def system_kernel(self, L):
        """V [s, n, L] real: V_n[k] = Re(beta_n exp(Delta_n Lambda_n k)), zero beyond max_kernel_length."""
        L_k = self.kernel_length(L)
        dt = torch.exp(self.log_dt)  # [s, n]
        re = torch.clamp(self.Lambda_re, max=RE_MAX)  # [s, n]  f_+: Re Lambda <= RE_MAX
        P = exp_range(dt * re, dt * self.Lambda_im, L_k)  # [s, n, L_k]  Lambdabar^k
        Lam = torch.complex(re, self.Lambda_im).to(P.dtype)  # [s, n]
        beta = torch.expm1(torch.complex(dt * re, dt * self.Lambda_im).to(P.dtype)) / Lam  # [s, n]  ZOH
        V = (beta[..., None] * P).real  # [s, n, L_k]
        return F.pad(V, (0, L - L_k))  # [s, n, L]

    def ssm(self, u):
        """y = 2 C (V * B u) + D u per head: u [B, H, L] -> [B, H, L] (before mixing and activation)."""
        Bsz, H, L = u.shape
        s, n = self.heads, self.N // self.heads
        uh = u.reshape(Bsz, s, H // s, L)  # [B, s, h, L]
        Bu = torch.einsum("snh,bshl->bsnl", self.B, uh)  # [B, s, n, L]
        V = self.system_kernel(L).reshape(s * n, L)  # [s n, L]
        if self.bidirectional:  # eq. 16: the same kernel, reversed, for the future
            V = torch.cat((V, V), dim=0)  # [2 s n, L]
        x = fft_conv(Bu.reshape(Bsz, s * n, L), V, self.bidirectional).reshape(Bsz, s, n, L)  # [B, s, n, L]
        y = 2 * torch.einsum("shn,bsnl->bshl", self.C, x) + self.D[..., None] * uh  # [B, s, h, L]  conjugate pairs
        return y.reshape(Bsz, H, L)  # [B, H, L]

    def forward(self, u):
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = u.to(self.B.dtype).transpose(1, 2)  # [B, H, L]
            y = self.ssm(x).transpose(1, 2).to(u.dtype).contiguous()  # [B, L, H]  (GELU's backward on a view: slow)
        y = self.out(y)  # [B, L, H]  eq. 15: W Concat(heads) + b (several heads)
        g = F.gelu(y)  # [B, L, H]
        return g * torch.sigmoid(self.gate(g))  # [B, L, H]
