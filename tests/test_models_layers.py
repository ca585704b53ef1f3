"""Reference DLR / DSS_exp layers and the model stack: kernels against the recurrence and
the direct formulas, shapes, readouts, batch norm, causality. CPU only."""
import math
import os

import pytest

import torch  # a test dependency: its absence must fail, not skip

from longsynth.errors import LongsynthError
from longsynth.models_ref.layers.dlr import DLR
from longsynth.models_ref.layers.dss import DSSExp
from longsynth.models_ref.models.stack import Model, ModelConfig

torch.set_num_threads(1)


def _lam(m):
    return torch.exp(torch.complex(-m.Lambda_re_sqrt ** 2, m.Lambda_im))  # [N]


def _conv_part(layer, u):
    """The layer's y = K * u (before residual, GELU, projection): u [B, L, H] -> [B, H, L]."""
    from longsynth.models_ref.layers.dlr import fft_conv

    x = u.transpose(1, 2)
    return fft_conv(x, layer.real_kernel(u.shape[1]), layer.bidirectional)


def _recurrence(lam, W, u):
    """x_k = Lambda x_{k-1} + u_k per coordinate; y_k = <W_h, x_k>: u [B, L, H] -> complex [B, H, L]."""
    B, L, H = u.shape
    x = torch.zeros(B, H, lam.shape[0], dtype=torch.complex128)
    ys = []
    for k in range(L):
        x = lam * x + u[:, k, :, None]
        ys.append((W * x).sum(-1))
    return torch.stack(ys, -1)


@pytest.mark.parametrize("kernel", ["real", "prod"])
def test_dlr_fft_matches_recurrence_unidirectional(kernel):
    torch.manual_seed(0)
    m = DLR(3, 8, kernel=kernel, dt_min=1e-3, dt_max=1e-1).double()
    u = torch.randn(2, 50, 3, dtype=torch.float64)
    W = torch.view_as_complex(m.W)
    y_rec = _recurrence(_lam(m), W, u)
    if kernel == "real":
        want = y_rec.real
    else:  # Re K * Im K is a different kernel: check it by the direct convolution instead
        K = m.complex_kernel(50)
        Kp = K.real * K.imag
        want = torch.stack([sum(Kp[:, j] * u[:, k - j, :] for j in range(k + 1)) for k in range(50)], -1)
    got = _conv_part(m, u)
    assert torch.allclose(got, want, atol=1e-10, rtol=0), (got - want).abs().max()


def test_dlr_fft_matches_recurrence_bidirectional():
    torch.manual_seed(1)
    H, N, L = 2, 6, 40
    m = DLR(H, N, bidirectional=True, dt_min=1e-3, dt_max=1e-1).double()
    u = torch.randn(2, L, H, dtype=torch.float64)
    W = torch.view_as_complex(m.W)
    lam = _lam(m)
    fwd = _recurrence(lam, W[:H], u).real  # [B, H, L]  <w1, x_fwd_k>
    bwd = _recurrence(lam, W[H:], u.flip(1)).real  # [B, H, L]  <w2, x_bwd_k>, x_bwd over u reversed
    want = fwd.clone()
    for k in range(L):  # y_k = <w1, x_fwd_k> + <w2, x_bwd_{L-1-(k+1)}> (eq. 5), x_bwd_{-1} = 0
        j = L - 1 - (k + 1)
        if j >= 0:
            want[..., k] += bwd[..., j]
    got = _conv_part(m, u)
    assert torch.allclose(got, want, atol=1e-10, rtol=0), (got - want).abs().max()


def test_dlr_bidirectional_truncated_kernel_is_the_toeplitz_of_eq6():
    """y_k = sum_{j<=k} K_fwd[k-j] u_j + sum_{j>k} K_bwd[j-k-1] u_j with K zero beyond max_kernel_length."""
    torch.manual_seed(11)
    H, L = 2, 20
    m = DLR(H, 6, bidirectional=True, max_kernel_length=5, dt_min=1e-3, dt_max=1e-1).double()
    u = torch.randn(1, L, H, dtype=torch.float64)
    K = m.real_kernel(L)  # [2H, L]
    T = torch.zeros(H, L, L, dtype=torch.float64)
    for k in range(L):
        for j in range(L):
            T[:, k, j] = K[:H, k - j] if j <= k else K[H:, j - k - 1]
    want = torch.einsum("hkj,bjh->bhk", T, u)
    assert torch.allclose(_conv_part(m, u), want, atol=1e-12)
    assert torch.all(K[:, 5:] == 0)


@pytest.mark.parametrize("chunk", [1, 7, 64, 300, 1024])
def test_dlr_chunked_kernel_matches_direct_formula(chunk):
    torch.manual_seed(2)
    L = 300
    m = DLR(4, 32, dt_min=1e-4, dt_max=1e-1, chunk=chunk).double()
    K = m.complex_kernel(L)
    k = torch.arange(L, dtype=torch.float64)
    log_lam = torch.complex(-m.Lambda_re_sqrt ** 2, m.Lambda_im)
    P = torch.exp(log_lam[:, None] * k)  # [N, L] direct, materialised
    want = torch.view_as_complex(m.W) @ P
    assert K.shape == (4, L)
    assert torch.allclose(K, want, atol=1e-11, rtol=0), (K - want).abs().max()


def test_dlr_kernel_float32_stays_exact_at_long_positions():
    """Phases k * Lambda_im are reduced in float64: a float32 kernel at k ~ 2^18 is still right."""
    torch.manual_seed(3)
    m = DLR(2, 16, dt_min=1e-7, dt_max=1e-6)
    L = 1 << 18
    K32 = m.complex_kernel(L)[:, -5:]
    m64 = DLR(2, 16).double()
    m64.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    K64 = m64.complex_kernel(L)[:, -5:]
    assert torch.allclose(K32.to(torch.complex128), K64, atol=1e-5, rtol=0), (K32 - K64).abs().max()


@pytest.mark.parametrize("chunk", [5, 16, 200])
def test_dss_chunked_kernel_matches_direct_formula(chunk):
    torch.manual_seed(4)
    L = 200
    m = DSSExp(3, 12, chunk=chunk).double()
    dt = torch.exp(m.log_dt)
    lam = torch.complex(-torch.exp(m.Lambda_log_neg_re), m.Lambda_im)
    dl = dt[:, None] * lam[None]
    W = torch.view_as_complex(m.W)
    k = torch.arange(L, dtype=torch.float64)
    want = ((W * (torch.exp(dl) - 1) / lam)[..., None] * torch.exp(dl[..., None] * k)).sum(1)
    got = m.complex_kernel(L)
    assert torch.allclose(got, want, atol=1e-11, rtol=0), (got - want).abs().max()


def test_dss_fft_matches_recurrence():
    torch.manual_seed(5)
    H, N, L = 2, 5, 40
    m = DSSExp(H, N).double()
    u = torch.randn(2, L, H, dtype=torch.float64)
    dt = torch.exp(m.log_dt)
    lam = torch.complex(-torch.exp(m.Lambda_log_neg_re), m.Lambda_im)
    lam_bar = torch.exp(dt[:, None] * lam[None])  # [H, N]
    Wb = torch.view_as_complex(m.W) * (lam_bar - 1) / lam  # [H, N]
    x = torch.zeros(2, H, N, dtype=torch.complex128)
    ys = []
    for k in range(L):
        x = lam_bar * x + u[:, k, :, None]
        ys.append((Wb * x).sum(-1).real)
    want = torch.stack(ys, -1)
    from longsynth.models_ref.layers.dss import fft_conv

    got = fft_conv(u.transpose(1, 2), m.real_kernel(L))
    assert torch.allclose(got, want, atol=1e-10, rtol=0)


def test_max_kernel_length_truncates():
    torch.manual_seed(6)
    m = DLR(2, 8, max_kernel_length=10, dt_min=1e-3, dt_max=1e-2).double()
    K = m.real_kernel(30)
    assert K.shape == (2, 30)
    assert torch.all(K[:, 10:] == 0) and torch.any(K[:, :10] != 0)
    m.max_kernel_length = None
    assert torch.allclose(m.real_kernel(30)[:, :10], K[:, :10], atol=1e-14)
    d = DSSExp(2, 8, max_kernel_length=7).double()
    Kd = d.real_kernel(20)
    assert torch.all(Kd[:, 7:] == 0) and torch.any(Kd[:, :7] != 0)


def test_layer_init_and_optim_attributes():
    torch.manual_seed(7)
    m = DLR(4, 64, dt_min=1e-3, dt_max=1e-1, lr=1e-3)
    assert torch.allclose(m.Lambda_im, 2 * math.pi * torch.arange(64) / 64)
    dt = 2 * m.Lambda_re_sqrt.detach() ** 2
    assert dt.min() >= 1e-3 * (1 - 1e-5) and dt.max() <= 1e-1 * (1 + 1e-5)
    assert m.W.shape == (4, 64, 2)
    assert abs(m.W.std().item() - 1 / 64) < 0.2 / 64
    for p in (m.Lambda_re_sqrt, m.Lambda_im, m.W):
        assert p._optim == {"weight_decay": 0.0, "lr": 1e-3}
    assert not hasattr(m.out.linear.weight, "_optim") and not hasattr(m.D, "_optim")  # D: a model parameter
    d = DSSExp(3, 4)
    assert torch.allclose(torch.complex(-torch.exp(d.Lambda_log_neg_re), d.Lambda_im),
                          torch.complex(torch.full((4,), -0.5), math.pi * torch.arange(4.0)))


@pytest.mark.parametrize("layer,bidirectional", [("dlr", False), ("dlr", True), ("dss", False)])
def test_model_shapes(layer, bidirectional):
    torch.manual_seed(8)
    cfg = ModelConfig(d_input=3, d_output=5, H=8, N=4, n_layers=2, layer=layer,
                      bidirectional=bidirectional, glu=True)
    m = Model(cfg)
    x = torch.randn(2, 33, 3)
    assert m(x).shape == (2, 33, 5)
    tok = Model(ModelConfig(d_input=1, d_output=10, H=8, N=4, vocab_size=16, prenorm=True))
    assert tok(torch.randint(0, 16, (2, 20))).shape == (2, 20, 10)
    with pytest.raises(ValueError):
        ModelConfig(d_input=1, d_output=1, layer="s5")  # not a built-in layer
    with pytest.raises(ValueError):
        ModelConfig(d_input=1, d_output=1, kernel="imag")


def test_readouts_rightmost_positions_and_mean_are_s4s_pooled_decoder():
    from longsynth.models_ref.training.forward import readout

    torch.manual_seed(9)
    m = Model(ModelConfig(d_input=3, d_output=2, H=8, N=4, n_layers=2))
    x = torch.randn(4, 25, 3)
    out = m(x)
    h = m.encoder(x)
    for block in m.blocks:
        h = block(h)
    pooled = readout(out, torch.zeros(4, 1), "mean")
    assert pooled.shape == (4, 1, 2)
    assert torch.allclose(pooled[:, 0], m.decoder(h.mean(dim=1)), atol=1e-6)  # the decoder is affine
    right = readout(out, torch.zeros(4, 7, 1), "rightmost")
    assert torch.equal(right, out[:, 18:]) and torch.equal(readout(out, None, "positions"), out)
    # "pool": at a padded sequence's last real token, the mean over that sequence's own positions
    pool = readout(out, None, "pool")
    for b, n in enumerate((25, 9, 1, 17)):
        assert torch.allclose(pool[b, n - 1], out[b, :n].mean(dim=0), atol=1e-6)


def test_batch_norm_is_torchs_batch_norm_over_batch_and_positions():
    """ChannelBatchNorm on [B, L, H] = nn.BatchNorm1d on [B, H, L]: outputs, input and affine
    gradients, running statistics after three training steps, and the evaluation output."""
    from longsynth.models_ref.models.stack import ChannelBatchNorm

    torch.manual_seed(4)
    ours, ref = ChannelBatchNorm(6), torch.nn.BatchNorm1d(6)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(6))
        ours.bias.copy_(torch.randn(6))
        ref.weight.copy_(ours.weight)
        ref.bias.copy_(ours.bias)
    for _ in range(3):
        x = torch.randn(3, 40, 6) * torch.linspace(0.5, 4, 6) + torch.linspace(-2, 2, 6)  # [B, L, H]
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = ours(xa), ref(xb.transpose(1, 2)).transpose(1, 2)
        assert torch.allclose(ya, yb, atol=1e-5)
        g = torch.randn_like(ya)
        ya.backward(g)
        yb.backward(g)
        assert torch.allclose(xa.grad, xb.grad, atol=1e-5)
        assert torch.allclose(ours.weight.grad, ref.weight.grad, atol=1e-4)
        assert torch.allclose(ours.bias.grad, ref.bias.grad, atol=1e-4)
    assert torch.allclose(ours.running_mean, ref.running_mean, atol=1e-6)
    assert torch.allclose(ours.running_var, ref.running_var, rtol=1e-5)
    ours.eval()
    ref.eval()
    x = torch.randn(2, 7, 6)
    assert torch.allclose(ours(x), ref(x.transpose(1, 2)).transpose(1, 2), atol=1e-6)
    m = Model(ModelConfig(d_input=1, d_output=2, H=8, N=4, n_layers=2, prenorm=True, norm="batch"))
    assert isinstance(m.blocks[0].norm, ChannelBatchNorm) and isinstance(m.final_norm, ChannelBatchNorm)
    with pytest.raises(LongsynthError, match="norm"):
        ModelConfig(d_input=1, d_output=1, norm="group")


def _bn_rank(rank, world, port, x, g, out):
    import torch.distributed as dist

    from longsynth.models_ref.models.stack import ChannelBatchNorm

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    bn = ChannelBatchNorm(x.shape[-1])
    part = x.chunk(world)[rank].clone().requires_grad_()  # this rank's share of the global batch
    y = bn(part)
    y.backward(g.chunk(world)[rank])
    grads = [torch.zeros_like(bn.weight.grad) for _ in range(world)]
    dist.all_gather(grads, bn.weight.grad)
    out[rank] = (y.detach(), part.grad, sum(grads), bn.running_var.clone())
    dist.destroy_process_group()


def test_batch_norm_under_two_processes_is_one_process_on_the_global_batch():
    """Two gloo processes, each with half the batch: the normalised outputs, the input
    gradients, the summed (DDP) weight gradients and the running variance are those of one
    process on the whole batch, so a torchrun run follows a one-process run."""
    import socket

    import torch.multiprocessing as mp

    from longsynth.models_ref.models.stack import ChannelBatchNorm

    torch.manual_seed(5)
    x = torch.randn(4, 30, 5) * 3 + 1  # [B, L, H]
    g = torch.randn(4, 30, 5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(_bn_rank, args=(2, port, x, g, out), nprocs=2)
    one = ChannelBatchNorm(5)
    xa = x.clone().requires_grad_()
    y = one(xa)
    y.backward(g)
    assert torch.allclose(torch.cat([out[0][0], out[1][0]]), y.detach(), atol=1e-5)
    assert torch.allclose(torch.cat([out[0][1], out[1][1]]), xa.grad, atol=1e-5)
    assert torch.allclose(out[0][2], one.weight.grad, atol=1e-4)
    assert torch.allclose(out[0][3], one.running_var) and torch.allclose(out[1][3], one.running_var)
    alone = ChannelBatchNorm(5)(x[:2])  # a rank normalising by its own half differs
    assert not torch.allclose(alone, y[:2], atol=1e-3)


def test_causality_unidirectional():
    torch.manual_seed(9)
    m = Model(ModelConfig(d_input=2, d_output=2, H=8, N=8, n_layers=2))
    x = torch.randn(1, 40, 2)
    y = m(x)
    x2 = x.clone()
    x2[:, 30:] += 1.0
    y2 = m(x2)
    assert torch.allclose(y[:, :30], y2[:, :30], atol=1e-5)
    assert not torch.allclose(y[:, 30:], y2[:, 30:], atol=1e-3)


@pytest.mark.parametrize("make", [lambda: DLR(8, 64, dt_min=1e-2, dt_max=0.5), lambda: DLR(8, 64, bidirectional=True),
                                  lambda: DSSExp(8, 64)])
def test_real_part_kernel_is_the_real_part_and_never_subnormal(make):
    """The real matmul (half the work) gives Re K; powers that would make subnormal floats
    (10x slower arithmetic on the CPU) are exact zeros instead."""
    from longsynth.models_ref.layers.kernel import exp_times

    torch.manual_seed(1)
    m = make()
    L = 3000
    a, b = m.real_part_kernel(L), m.complex_kernel(L).real  # [H_k, L]
    assert a.shape == b.shape and torch.allclose(a, b, atol=1e-6, rtol=1e-5)
    assert torch.equal(m.real_kernel(L), a)  # the "real" cast takes this path
    T = exp_times(torch.tensor([-0.3]), torch.tensor([1.0]), torch.arange(600))  # [1, 600]
    tiny = T.abs()
    assert (tiny[0, 200:] == 0).all() and (tiny[0, :140] > 0).all()  # exp(-0.3 k) < exp(-43) from k = 144
    assert not ((tiny > 0) & (tiny < torch.finfo(torch.float32).tiny)).any()
    m.real_kernel(L).square().sum().backward()  # zeros pass gradients, not NaNs
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n,step", [(1, 1), (2, 1), (7, 3), (64, 1), (3000, 1), (4097, 1), (17, 64)])
def test_exp_range_is_exp_times_of_the_range(dtype, n, step):
    """The powers of a range from two tables of about sqrt(n) each equal the powers taken one by one, to a
    rounding or two at any k (no drift), with the same exact zeros below exp(CUT)."""
    from longsynth.models_ref.layers.kernel import exp_range, exp_times

    g = torch.Generator().manual_seed(n)
    re = -torch.rand(5, 6, generator=g, dtype=dtype) * 0.1  # [5, 6]: decays reaching float32's cut in the range
    im = torch.rand(5, 6, generator=g, dtype=dtype) * 6  # [5, 6]
    want = exp_times(re, im, torch.arange(n) * step)  # [5, 6, n]
    got = exp_range(re, im, n, step)  # [5, 6, n]
    assert got.shape == want.shape and got.dtype == want.dtype
    assert torch.equal(got == 0, want == 0)
    if dtype == torch.float32 and n * step >= 1000:
        assert (want == 0).any()  # the cut is met, so its zeros are compared
    eps = torch.finfo(dtype).eps
    phase = float(im.abs().max()) * (n - 1) * step  # the float64 phase's own rounding grows with it
    assert (got - want).abs().max() <= 4 * eps + 4 * phase * torch.finfo(torch.float64).eps
