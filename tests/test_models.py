"""Reference DLR / DSS_exp layers, model stack, metrics and trainer (issue 7). CPU only."""
import math

import pytest

torch = pytest.importorskip("torch")

from longsynth.models_ref.dlr import DLR  # noqa: E402
from longsynth.models_ref.dss import DSSExp  # noqa: E402
from longsynth.models_ref.model import Model, ModelConfig  # noqa: E402

torch.set_num_threads(2)


def _lam(m):
    return torch.exp(torch.complex(-m.Lambda_re_sqrt ** 2, m.Lambda_im))  # [N]


def _conv_part(layer, u):
    """The layer's y = K * u (before residual, GELU, projection): u [B, L, H] -> [B, H, L]."""
    from longsynth.models_ref.dlr import fft_conv

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
    from longsynth.models_ref.dss import fft_conv

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
    assert not hasattr(m.out.weight, "_optim")
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
    assert m(x, target_len=7).shape == (2, 7, 5)
    tok = Model(ModelConfig(d_input=1, d_output=10, H=8, N=4, vocab_size=16, prenorm=True))
    assert tok(torch.randint(0, 16, (2, 20))).shape == (2, 20, 10)
    with pytest.raises(ValueError):
        ModelConfig(d_input=1, d_output=1, layer="s4")
    with pytest.raises(ValueError):
        ModelConfig(d_input=1, d_output=1, kernel="imag")


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
