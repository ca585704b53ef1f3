"""What DLR and DSS_exp share (docs/models.md): parameter registration, kernel length, the real
cast, the FFT convolution and the layer around it.

A layer subclasses :class:`SSMLayer` and defines ``complex_kernel(L) -> [H_k, L]``; the
rest is here, as the official layer (ag1988/dlr src/models/sequence/ss/standalone/dss.py
``DSS.forward``, lines 731-749; docs/models.md "Block details"):

    u [B, L, H] -> y = K * u + D u (FFT of size n = 2L) -> GELU -> output Linear

``D`` [H] is learned, drawn from N(0, 1) (``skip="learned"``, dss.py line 658); ``skip="one"``
fixes it at 1, the DLR paper's prose (section 2). The output Linear is Linear(H, H), or with
``glu`` Linear(H, 2H) followed by a GLU (the official ``postact: glu``, which replaces the
Linear rather than following it).

``register(name, tensor, lr)`` makes an SSM parameter: weight decay 0 and its own learning
rate (``lr=None``: the model's), read by the optimizer builder from ``p._optim``;
``lr=0`` freezes it (a buffer: saved in the state dict, never updated).
Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CASTS = ("real", "prod")
SKIPS = ("learned", "one")  # D: learned from N(0, 1) (the official code) | fixed at 1 (the DLR paper's prose)


def complex_dtype(dtype):
    return torch.complex128 if dtype == torch.float64 else torch.complex64


# Powers smaller than exp(CUT) are set to 0: their products in the kernel matmuls would be
# subnormal floats, which the CPU handles 10x slower (measured: a DLR kernel at H=128,
# N=1024, L=16K took 4.3 s with them, 0.65 s without). Two kept factors multiply to at least
# exp(2 CUT), still a normal number (float32: exp(-87.3), float64: exp(-708)); what is
# dropped is below 1e-18 of a |W| <= 1 term, far under float32's resolution of K.
CUT = {torch.float32: -43.0, torch.float64: -350.0}


def exp_times(re, im, k):
    """exp(k (re + i im)) for rates re, im [...] and positions k [K] -> [..., K].

    The exponent is formed in float64 with the phase k*im reduced mod 2 pi, so no error
    accumulates with k even when the result is complex64. Magnitudes below exp(CUT) are 0.
    """
    k = k.to(torch.float64)  # [K]
    mag = re.to(torch.float64)[..., None] * k  # [..., K]
    phase = torch.remainder(im.to(torch.float64)[..., None] * k, 2 * math.pi)  # [..., K]
    mag = torch.where(mag < CUT.get(re.dtype, -43.0), -math.inf, mag)  # [..., K]  exp(-inf) = 0
    out = torch.polar(torch.exp(mag), phase)  # [..., K] complex128
    return out.to(complex_dtype(re.dtype))  # [..., K]


def exp_range(re, im, n, step=1):
    """exp(k (re + i im)) for k = 0, step, ..., (n - 1) step -> [..., n]: ``exp_times`` of that range,
    from two of its tables of about sqrt(n) powers each. With k = (q S + r) step, the power is the
    q-th of the coarse table [..., Q] times the r-th of the fine one [..., S]; both are exact, so the
    product is off by a rounding or two and never drifts with k, and the float64 exponentials, sines
    and cosines are taken of 2 sqrt(n) values instead of n (most of DLR's kernel at N = L = 4096).
    Powers below exp(CUT) are 0, as in ``exp_times``."""
    S = max(1, math.isqrt(max(n - 1, 0)) + 1)  # S * S >= n
    Q = -(-n // S)
    dev = re.device
    fine = exp_times(re, im, torch.arange(S, device=dev) * step)  # [..., S]
    coarse = exp_times(re, im, torch.arange(Q, device=dev) * (S * step))  # [..., Q]
    out = (coarse[..., :, None] * fine[..., None, :]).flatten(-2)[..., :n]  # [..., n]
    k = torch.arange(n, device=dev, dtype=torch.float64) * step  # [n]
    under = re.detach().to(torch.float64)[..., None] * k < CUT.get(re.dtype, -43.0)  # [..., n]  a product of kept
    return out.masked_fill(under, 0)  # [..., n]  factors can be smaller than either: cut it as exp_times would


def cast_real(K, cast="real"):
    """Complex kernel K [H_k, L] -> real: Re K ("real") or Re K * Im K ("prod")."""
    if cast == "prod":
        return K.real * K.imag  # [H_k, L]
    return K.real  # [H_k, L]


def fft_conv(u, K, bidirectional=False):
    """y = K * u along the last axis by FFT of size n = 2L: u [B, H, L], K [H, L] or [2H, L] -> [B, H, L].

    Unidirectional: causal, y_k = sum_{j<=k} K[k-j] u_j. Bidirectional: the second H
    kernels run right to left, as the circulant [K_fwd_0..K_fwd_{L-1}, K_bwd_{L-1}..K_bwd_0]
    of size 2L (DLR paper eq. 6, appendix A.1).
    """
    B, H, L = u.shape
    if bidirectional:
        K = torch.cat((K[:H], K[H:].flip(-1)), dim=-1)  # [H, 2L]
    return _FFTConv.apply(u, K, L)  # [B, H, L]


class _FFTConv(torch.autograd.Function):
    """y = irfft(rfft(u, 2L) rfft(K, 2L), 2L)[..., :L], and its gradients as the same kind of product: for
    the circular convolution y = u (*) K of size n, dL/du = g (x) K and dL/dK = g (x) u (circular
    correlations, FFT rfft(g) conj(rfft(K)) and rfft(g) conj(rfft(u))) cut to u's and K's lengths. One rfft
    and two irffts, where autograd's own backward of the three FFTs and the slice took a full complex FFT
    of size 2L and zero-filled copies: a CPU training step of DLR, S4 or eSSM is 10-20% faster. The forward
    is the same three calls; the gradients agree with autograd's to float rounding."""

    @staticmethod
    def forward(ctx, u, K, L):
        n = 2 * L
        K_f = torch.fft.rfft(K, n=n)  # [H, L+1]
        u_f = torch.fft.rfft(u, n=n)  # [B, H, L+1]
        ctx.save_for_backward(u_f, K_f)
        ctx.shapes = (u.shape, K.shape, L)
        return torch.fft.irfft(u_f * K_f, n=n)[..., :L]  # [B, H, L]

    @staticmethod
    def backward(ctx, g):  # g [B, H, L]
        u_f, K_f = ctx.saved_tensors
        u_shape, K_shape, L = ctx.shapes
        G = torch.fft.rfft(g, n=2 * L)  # [B, H, L+1]
        du = dK = None
        if ctx.needs_input_grad[0]:
            du = torch.fft.irfft(G * K_f.conj(), n=2 * L)[..., :u_shape[-1]].sum_to_size(u_shape)  # [B, H, L]
        if ctx.needs_input_grad[1]:
            P = (G * u_f.conj()).sum_to_size(*K_shape[:-1], G.shape[-1])  # [H, L+1]  summed over the batch
            dK = torch.fft.irfft(P, n=2 * L)[..., :K_shape[-1]]  # [H, L] or [H, 2L]
        return du, dK, None


def register(module, name, tensor, lr=None):
    """An SSM tensor of ``module``: trainable with weight decay 0 and learning rate lr (None: the
    model's); lr == 0: frozen, a buffer. Shared by every SSM layer (s6.py too)."""
    if lr == 0.0:
        module.register_buffer(name, tensor)
        return
    module.register_parameter(name, nn.Parameter(tensor))
    optim = {"weight_decay": 0.0}
    if lr is not None:
        optim["lr"] = lr
    getattr(module, name)._optim = optim


class SSMLayer(nn.Module):
    """Base of one convolutional SSM layer on u [B, L, H] -> [B, L, H]."""

    def __init__(self, H, *, cast="real", bidirectional=False, max_kernel_length=None, skip="learned", glu=False):
        super().__init__()
        if cast not in CASTS:
            raise ValueError(f"kernel: must be one of {CASTS}, got {cast!r}")
        if skip is not None and skip not in SKIPS:  # None: the subclass keeps its own skip term
            raise ValueError(f"skip: must be one of {SKIPS}, got {skip!r}")
        self.H, self.cast, self.bidirectional = H, cast, bidirectional
        self.max_kernel_length = max_kernel_length
        if skip == "learned":
            self.D = nn.Parameter(torch.randn(H))  # [H]
        elif skip == "one":
            self.register_buffer("D", torch.ones(H))  # [H]
        self.out = OutputLinear(H, glu)

    def register(self, name, tensor, lr=None):
        register(self, name, tensor, lr)

    def kernel_length(self, L):
        return L if self.max_kernel_length is None else min(L, self.max_kernel_length)

    def complex_kernel(self, L):  # [H_k, L] complex
        raise NotImplementedError

    def real_part_kernel(self, L):  # [H_k, L]: Re K; a layer may compute it without Im K
        return self.complex_kernel(L).real

    def real_kernel(self, L):
        """K [H_k, L] real, zero beyond max_kernel_length."""
        L_k = self.kernel_length(L)
        if self.cast == "real":
            K = self.real_part_kernel(L_k)  # [H_k, L_k]
        else:
            K = cast_real(self.complex_kernel(L_k), self.cast)  # [H_k, L_k]
        return F.pad(K, (0, L - K.shape[-1]))  # [H_k, L]

    def forward(self, u):
        B, L, H = u.shape
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = u.to(self.D.dtype).transpose(1, 2)  # [B, H, L]
            y = fft_conv(x, self.real_kernel(L), self.bidirectional)  # [B, H, L]
            y = y + self.D.to(y.dtype)[:, None] * x  # [B, H, L]  the skip term D u
        # contiguous: GELU's backward on the transposed view took a slow path (on a CPU 10x its own forward)
        y = F.gelu(y.transpose(1, 2).to(u.dtype).contiguous())  # [B, L, H]
        return self.out(y)  # [B, L, H]


class OutputLinear(nn.Module):
    """The position-wise output of a layer: Linear(H, H), or Linear(H, 2H) then GLU (``glu``)."""

    def __init__(self, H, glu=False):
        super().__init__()
        self.glu = glu
        self.linear = nn.Linear(H, 2 * H if glu else H)

    def forward(self, y):  # y [B, L, H]
        y = self.linear(y)  # [B, L, H] or [B, L, 2H]
        return F.glu(y, dim=-1) if self.glu else y  # [B, L, H]


def short_conv(conv, x):
    """A causal depthwise ``conv`` (nn.Conv1d(C, C, K, groups=C, padding=K - 1): Mamba's and fla's
    short convolution) over x [b, L, C]: y_t = bias + sum_k w_k x_{t-K+1+k}, the first L outputs of
    the padded convolution, as K shifted multiply-adds in x's own layout (the same numbers: a CPU's
    depthwise convolution backward costs tens of times more)."""
    K, L = conv.weight.shape[-1], x.shape[1]
    w = conv.weight[:, 0]  # [C, K]
    xp = F.pad(x, (0, 0, K - 1, 0))  # [b, L + K - 1, C]  K - 1 zeros before the start
    y = xp[:, K - 1:] * w[:, K - 1] if conv.bias is None else torch.addcmul(conv.bias, xp[:, K - 1:], w[:, K - 1])
    for k in range(K - 1):
        y = torch.addcmul(y, xp[:, k:k + L], w[:, k])  # [b, L, C]  tap k reads x_{t-K+1+k}
    return y  # [b, L, C]
