"""S4, S4D and eSSM (docs/models.md): each kernel against a naive NumPy twin that runs the
discretised recurrence step by step in float64; S4's Cauchy/Woodbury kernel against the
materialised power series C^* Abar^k Bbar; eSSM with H heads against stacked single-input SSMs;
and each model learning CumSum at its tiny preset through the harness."""

import numpy as np
import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.models_ref.layers.essm import ESSM
from longsynth.models_ref.layers.kernel import fft_conv
from longsynth.models_ref.models.stack import Model, ModelConfig
from longsynth.models_ref.layers.s4 import S4, legs_nplr
from longsynth.models_ref.layers.s4d import S4D

torch.set_num_threads(1)
TOL = 1e-9  # float64 twins: agreement to rounding


# ---------------------------------------------------------------- naive NumPy twins


def np_hippo_legs(N):
    """HiPPO-LegS from its definition (S4 paper eq. 2), entry by entry."""
    A = np.zeros((N, N))
    for n in range(N):
        for k in range(N):
            if n > k:
                A[n, k] = -np.sqrt(2 * n + 1) * np.sqrt(2 * k + 1)
            elif n == k:
                A[n, k] = -(n + 1)
    return A, np.sqrt(2 * np.arange(N) + 1.0)


def np_bilinear(A, B, dt):
    """(I - dt/2 A)^-1 (I + dt/2 A), (I - dt/2 A)^-1 dt B."""
    eye = np.eye(A.shape[0])
    inv = np.linalg.inv(eye - dt / 2 * A)
    return inv @ (eye + dt / 2 * A), inv @ (dt * B)


def np_recurrence(Abar, Bbar, C, u):
    """x_k = Abar x_{k-1} + Bbar u_k, y_k = C x_k step by step: Abar [N, N] or diagonal [N],
    Bbar [N, h], C [m, N], u [L, h] -> y [L, m] (complex where the system is)."""
    x = np.zeros(Abar.shape[0], dtype=np.result_type(Abar, Bbar, complex))
    ys = []
    for k in range(u.shape[0]):
        x = (Abar @ x if Abar.ndim == 2 else Abar * x) + Bbar @ u[k]
        ys.append(C @ x)
    return np.array(ys)


def np_backward(run, u):
    """The right-to-left branch of a bidirectional layer: y_t = sum_{j>t} K[j-t-1] u_j, from the
    recurrence ``run`` on the reversed input (its output at t+1)."""
    r = run(u[::-1])[::-1]  # r_t = sum_{j>=t} K[j-t] u_j
    return np.concatenate((r[1:], np.zeros_like(r[:1])))


def _conv_part(layer, u):
    """The layer's K * u (before residual, GELU, projection): u [B, L, H] -> [B, H, L]."""
    with torch.no_grad():
        return fft_conv(u.transpose(1, 2), layer.real_kernel(u.shape[1]), layer.bidirectional)


# ---------------------------------------------------------------- S4


def test_legs_nplr_is_hippo_legs_normal_plus_low_rank():
    N = 10
    Lam, P, B, V = (t.numpy() for t in legs_nplr(N))
    Vf, Lf, Pf = np.concatenate((V, V.conj()), 1), np.concatenate((Lam, Lam.conj())), np.concatenate((P, P.conj()))
    A, B_legs = np_hippo_legs(N)
    assert np.abs(Vf.conj().T @ Vf - np.eye(N)).max() < 1e-12  # unitary
    assert np.abs(Vf @ (np.diag(Lf) - np.outer(Pf, Pf.conj())) @ Vf.conj().T - A).max() < 1e-11
    assert np.abs(Vf @ np.concatenate((B, B.conj())) - B_legs).max() < 1e-11
    assert np.allclose(Lam.real, -0.5) and (Lam.imag > 0).all()


@pytest.mark.parametrize("bidirectional", [False, True])
def test_s4_at_init_is_the_bilinear_hippo_legs_recurrence(bidirectional):
    """The layer's conv output against x_k = Abar x_{k-1} + Bbar u_k with the real HiPPO-LegS
    (A, B) and a real C, discretised per channel, run step by step (and right to left)."""
    torch.manual_seed(0)
    H, N, L = 2, 6, 33
    m = S4(H, N, bidirectional=bidirectional, dt_min=1e-2, dt_max=3e-1).double()
    Lam, P, B_t, V = legs_nplr(N)  # float64: the parameters were initialised from their float32 rounding
    V = V.numpy()  # [N, N/2]
    A, B = np_hippo_legs(N)
    rng = np.random.default_rng(0)
    C_real = rng.standard_normal((m.C.shape[0], N))  # [H_k, N]
    with torch.no_grad():  # y = C_real^T x = (V^* C_real)^* x~ in the diagonal basis
        m.Lambda_im.copy_(Lam.imag.expand_as(m.Lambda_im))
        for p, z in ((m.P, P), (m.B, B_t)):  # B unclipped here: the exact HiPPO-LegS system
            p.copy_(torch.view_as_real(z).expand_as(p))
        m.C.copy_(torch.view_as_real(torch.from_numpy(C_real @ V.conj())))
    u = rng.standard_normal((L, H))
    got = _conv_part(m, torch.from_numpy(u)[None])[0].numpy()  # [H, L]
    dts = np.exp(m.log_dt.detach().numpy())
    for h in range(H):
        def run(x, k):
            Abar, Bbar = np_bilinear(A, B[:, None], dts[k])
            return np_recurrence(Abar, Bbar, C_real[k][None], x[:, None])[:, 0].real

        want = run(u[:, h], h)
        if bidirectional:
            want = want + np_backward(lambda x: run(x, H + h), u[:, h])
        assert np.abs(got[h] - want).max() < TOL


def np_s4_system(m):
    """Per channel (Abar [N, N], Bbar [N], C [N]) of an S4 layer, with A = Lambda - P P^* (Q tied
    to P) and C recovered from the trained Ctil: C^* = Ctil^* (I - Abar^l)^-1, l = l_kernel."""
    Lam, P, B, Ct, dt = (t.detach().numpy() for t in m.nplr())
    out = []
    for h in range(Lam.shape[0]):
        Abar, Bbar = np_bilinear(np.diag(Lam[h]) - np.outer(P[h], P[h].conj()), B[h], dt[h])
        n = int(m.l_kernel)
        C_star = Ct[h].conj()
        if n:  # Ctil^* (I - Abar^n)^-1
            C_star = C_star @ np.linalg.inv(np.eye(len(Bbar)) - np.linalg.matrix_power(Abar, n))
        out.append((Abar, Bbar, C_star))
    return out


def np_power_series(system, L):
    """K[k] = C^* Abar^k Bbar for k < L, one matrix product after another."""
    Abar, Bbar, C_star = system
    K, x = [], Bbar.copy()
    for _ in range(L):
        K.append(C_star @ x)
        x = Abar @ x
    return np.array(K)


@pytest.mark.parametrize("L,chunk", [(40, None), (37, 3), (64, 1)])
def test_s4_cauchy_woodbury_kernel_is_the_power_series(L, chunk):
    """Trained-like (perturbed) Lambda, P, B, C: the generating-function kernel equals the
    materialised C^* Abar^k Bbar, k < L, for even and odd L and any frequency chunking."""
    torch.manual_seed(1)
    H, N = 3, 8
    m = S4(H, N, dt_min=1e-2, dt_max=2e-1, chunk=chunk).double()
    with torch.no_grad():
        for p in (m.P, m.B, m.C, m.Lambda_im, m.Lambda_log_neg_re):
            p.add_(0.3 * torch.randn_like(p))
    systems = np_s4_system(m)  # before the length is set: C itself
    got = m.real_part_kernel(L).detach().numpy()  # [H, L]  sets the length: C becomes Ctil
    assert int(m.l_kernel) == L
    for h in range(H):
        K = np_power_series(systems[h], L)
        assert np.abs(np.imag(K)).max() < 1e-12  # conjugate pairs: a real kernel
        assert np.abs(got[h] - np.real(K)).max() < TOL


def test_s4_trains_ctil_and_stays_the_recurrence_after_optimiser_steps_and_doublings():
    """The official parameterisation: after Adam steps on every parameter (Ctil among them) the
    kernel is still C^* Abar^k Bbar with C^* = Ctil^* (I - Abar^l)^-1; a longer input doubles l
    (Ctil^* (I + Abar^l)) without changing that C, and a shorter one reads the first entries."""
    torch.manual_seed(11)
    H, N, L = 2, 8, 30
    m = S4(H, N, dt_min=1e-2, dt_max=2e-1).double()
    opt = torch.optim.Adam(m.parameters(), lr=0.05)
    target = torch.randn(H, L, dtype=torch.float64)
    for _ in range(3):
        opt.zero_grad()
        (m.real_part_kernel(L) - target).square().sum().backward()
        opt.step()
    assert int(m.l_kernel) == L
    systems = np_s4_system(m)
    for length in (L, 17, 3 * L):  # 3L: doubled twice, to 4L
        got = m.real_part_kernel(length).detach().numpy()
        for h in range(H):
            assert np.abs(got[h] - np.real(np_power_series(systems[h], length))).max() < TOL
    assert int(m.l_kernel) == 4 * L


def test_s4_forward_has_no_matrix_power_or_solve_once_its_length_is_set(monkeypatch):
    """After the first forward at a length, forwards and backwards at that length or shorter
    run without any N x N power, solve or inverse (the official ``_setup_C`` once per length)."""
    torch.manual_seed(12)
    m = S4(4, 16)
    u = torch.randn(2, 64, 4)
    m(u).sum().backward()

    def refuse(*args, **kwargs):
        raise AssertionError("an N x N solve or power in a forward at a set length")

    for name in ("matrix_power", "solve", "inv", "matrix_exp"):
        monkeypatch.setattr(torch.linalg, name, refuse)
    m(u).sum().backward()
    m(u[:, :40]).sum().backward()
    with pytest.raises(AssertionError, match="N x N"):
        m(torch.randn(2, 65, 4))  # a longer input must set the length again


def test_s4_float32_kernel_at_path_x_length_is_the_float64_one():
    """L = 16384 (Path-X), N = 64, Delta down to 1e-4: Abar^L by repeated squaring and the Cauchy
    sums in complex64 stay within 1e-5 of the complex128 kernel."""
    import copy

    torch.manual_seed(7)
    m = S4(2, 64, dt_min=1e-4, dt_max=1e-1)
    m64 = copy.deepcopy(m).double()
    with torch.no_grad():
        k32, k64 = m.real_part_kernel(16384), m64.real_part_kernel(16384)
    assert (k32.double() - k64).abs().max() < 1e-5 * k64.abs().max()


def test_cauchy_backward_is_the_derivative():
    from longsynth.models_ref.layers.s4 import Cauchy

    torch.manual_seed(8)
    num = torch.randn(2, 4, 5, dtype=torch.complex128, requires_grad=True)
    g = torch.complex(-torch.rand(2, 5, dtype=torch.float64), torch.randn(2, 5, dtype=torch.float64)).requires_grad_()
    w = torch.polar(torch.ones(7, dtype=torch.float64), -2 * torch.pi * torch.arange(7, dtype=torch.float64) / 12)
    assert torch.autograd.gradcheck(lambda a, b: Cauchy.apply(a, b, w, 3), (num, g))


def test_s4_kernel_grad_flows_through_chunks_and_matches_unchunked():
    torch.manual_seed(2)
    grads = []
    for chunk in (None, 5):
        torch.manual_seed(2)
        m = S4(2, 8, chunk=chunk).double()
        m.real_part_kernel(50).square().sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in (m.Lambda_im, m.P, m.B, m.C, m.log_dt)]))
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-12, rtol=1e-9)


# ---------------------------------------------------------------- S4D


@pytest.mark.parametrize("init,bidirectional", [("legs", False), ("lin", False), ("lin", True)])
def test_s4d_is_the_zoh_diagonal_recurrence(init, bidirectional):
    """The conv output against the ZOH recurrence over all N modes (the stored N/2 and their
    conjugates): Abar = exp(Delta A), Bbar = (Abar - 1)/A, y = sum_n C_n x_n (real)."""
    torch.manual_seed(3)
    H, N, L = 2, 8, 45
    m = S4D(H, N, init=init, bidirectional=bidirectional, dt_min=1e-2, dt_max=3e-1).double()
    with torch.no_grad():
        m.C.add_(0.2 * torch.randn_like(m.C))
    rng = np.random.default_rng(1)
    u = rng.standard_normal((L, H))
    got = _conv_part(m, torch.from_numpy(u)[None])[0].numpy()
    A_half = -np.exp(m.A_log_neg_re.detach().numpy()) + 1j * m.A_im.detach().numpy()  # [H_k, N/2]
    C_half = m.C.detach().numpy() @ np.array([1, 1j])  # [H_k, N/2]
    B_half = m.B.detach().numpy() @ np.array([1, 1j]) if init == "legs" else np.ones_like(C_half)  # [H_k, N/2]
    dts = np.exp(m.log_dt.detach().numpy())

    def run(x, k):
        A, C = np.concatenate((A_half[k], A_half[k].conj())), np.concatenate((C_half[k], C_half[k].conj()))
        B = np.concatenate((B_half[k], B_half[k].conj()))
        Abar = np.exp(dts[k] * A)
        return np_recurrence(Abar, ((Abar - 1) / A * B)[:, None], C[None], x[:, None])[:, 0].real

    if init == "lin":
        assert np.allclose(A_half[0], -0.5 + 1j * np.pi * np.arange(N // 2))
    for h in range(H):
        want = run(u[:, h], h)
        if bidirectional:
            want = want + np_backward(lambda x: run(x, H + h), u[:, h])
        assert np.abs(got[h] - want).max() < TOL


def test_s4d_legs_init_is_the_diagonal_of_s4s_nplr():
    m = S4D(1, 12, init="legs")
    Lam = legs_nplr(12)[0]
    assert torch.allclose(-torch.exp(m.A_log_neg_re[0]).double(), Lam.real, atol=1e-6)
    assert torch.allclose(m.A_im[0].double(), Lam.imag, atol=1e-5)


# ---------------------------------------------------------------- eSSM


def _essm_numpy(m):
    """Per head: Lambda [n] complex (clipped), Delta [n], B [n, h], C [h, n], D [h]."""
    re = np.minimum(m.Lambda_re.detach().numpy(), -1e-4)
    Lam = re + 1j * m.Lambda_im.detach().numpy()
    return Lam, np.exp(m.log_dt.detach().numpy()), m.B.detach().numpy(), m.C.detach().numpy(), m.D.detach().numpy()


@pytest.mark.parametrize("bidirectional", [False, True])
def test_essm_is_the_mimo_zoh_recurrence_per_head(bidirectional):
    """y_j = 2 C_j Re(z) + D_j u_j with z_k = exp(Delta Lambda) z_{k-1} + (exp(Delta Lambda) - 1)/Lambda B_j u_k,
    each head on its own h = H/s channels and n = N/s states; bidirectional adds the same system run
    right to left."""
    torch.manual_seed(4)
    H, N, s, L = 6, 10, 2, 30
    m = ESSM(H, N, heads=s, bidirectional=bidirectional, dt_min=1e-2, dt_max=3e-1).double()
    with torch.no_grad():
        m.Lambda_re.add_(0.2 * torch.randn_like(m.Lambda_re))
        m.D.add_(0.3 * torch.randn_like(m.D))
    rng = np.random.default_rng(2)
    u = rng.standard_normal((L, H))
    got = m.ssm(torch.from_numpy(u.T)[None])[0].detach().numpy().T  # [L, H]
    Lam, dt, B, C, D = _essm_numpy(m)
    h = H // s
    assert Lam.shape == (s, N // s)
    for j in range(s):
        Abar = np.exp(dt[j] * Lam[j])  # [n]
        Bbar = ((Abar - 1) / Lam[j])[:, None] * B[j]  # [n, h]

        def run(x):
            return 2 * np_recurrence(Abar, Bbar, np.eye(N // s), x).real @ C[j].T  # 2 C Re(z)

        uj = u[:, j * h:(j + 1) * h]
        want = run(uj) + D[j] * uj
        if bidirectional:
            want = want + np_backward(run, uj)
        assert np.abs(got[:, j * h:(j + 1) * h] - want).max() < TOL


def test_essm_with_H_heads_is_stacked_single_input_ssms():
    """s = H (eSSM paper section 4.3): channel h is the SISO SSM (Lambda_h, b_h, c_h, D_h) on
    input channel h alone: its output equals the SISO recurrence and ignores the other channels."""
    torch.manual_seed(5)
    H, N, L = 4, 12, 25
    m = ESSM(H, N, heads=H, dt_min=1e-2, dt_max=3e-1).double()
    rng = np.random.default_rng(3)
    u = rng.standard_normal((L, H))
    got = m.ssm(torch.from_numpy(u.T)[None])[0].detach().numpy().T  # [L, H]
    Lam, dt, B, C, D = _essm_numpy(m)
    for h in range(H):
        Abar = np.exp(dt[h] * Lam[h])  # [N]
        siso = np_recurrence(Abar, ((Abar - 1) / Lam[h] * B[h][:, 0])[:, None], C[h], u[:, h:h + 1])  # [L, 1]
        assert np.abs(got[:, h] - (2 * siso[:, 0].real + D[h, 0] * u[:, h])).max() < TOL
    v = u.copy()
    v[:, 1:] = rng.standard_normal((L, H - 1))  # change every channel but 0
    moved = m.ssm(torch.from_numpy(v.T)[None])[0].detach().numpy().T
    assert np.abs(moved[:, 0] - got[:, 0]).max() < TOL and np.abs(moved[:, 1] - got[:, 1]).max() > 1e-3


def test_essm_divides_its_states_over_heads_so_its_size_falls_as_heads_rise():
    """The official ``self.n = d_s // head``: at H 128, N 64 the SSM parameters (Lambda, Delta,
    B, C, D) are 2N + N + N H / s + H N / s + H = 320 + 16,384 / s, falling with the heads s as in
    the eSSM paper's parameter table."""
    counts = []
    for s in (4, 16, 64):
        m = ESSM(128, 64, heads=s)
        names = ("log_dt", "Lambda_re", "Lambda_im", "B", "C", "D")
        ssm = {n: p.numel() for n, p in m.named_parameters() if n in names}
        assert m.B.shape == (s, 64 // s, 128 // s) and m.C.shape == (s, 128 // s, 64 // s)
        assert sum(ssm.values()) == 320 + 16_384 // s
        counts.append(sum(ssm.values()))
    assert counts[0] > counts[1] > counts[2]


def test_essm_init_is_the_official_hippo_projection():
    """B = Re(V^* B0), the same for every head; C = Re(C0 V); B0, C0 with parts N(0, 1) cut at +-2,
    V the eigenvectors of a 2n-state LegS (Im Lambda > 0), whose -1/2 + i w are Lambda; D = 1."""
    torch.manual_seed(9)
    s, n, h = 4, 8, 16
    m = ESSM(h * s, n * s, heads=s).double()
    Lam, _, _, V = legs_nplr(2 * n)
    assert torch.allclose(m.Lambda_re[0], Lam.real, atol=1e-6) and torch.allclose(m.Lambda_im[1], Lam.imag, atol=1e-5)
    assert torch.equal(m.B[0], m.B[3]) and not torch.equal(m.C[0], m.C[3])
    assert m.B.abs().max() < 2 * 2 * n and m.D.eq(1).all()  # |Re(V^* B0)| <= sum |V| |B0| with |B0 parts| <= 2


# ---------------------------------------------------------------- the model stack


@pytest.mark.parametrize("layer,extra", [("s4", {}), ("s4d", {"init": "lin"}), ("essm", {"heads": 4})])
def test_model_builds_each_layer_causal_with_ssm_optimizer_groups(layer, extra):
    torch.manual_seed(6)
    cfg = ModelConfig(d_input=3, d_output=2, H=8, N=8, n_layers=2, layer=layer, ssm_lr=1e-3, **extra)
    model = Model(ModelConfig.from_dict(cfg.to_dict())).double()
    x = torch.randn(2, 40, 3, dtype=torch.float64)
    y = model(x)
    assert y.shape == (2, 40, 2)
    x2 = x.clone()
    x2[:, 30:] += 1.0
    assert torch.allclose(model(x2)[:, :30], y[:, :30], atol=1e-12)  # unidirectional: causal
    ssm = [p for p in model.parameters() if getattr(p, "_optim", None)]
    assert ssm and all(p._optim["weight_decay"] == 0.0 for p in ssm)
    assert any(p._optim.get("lr") == 1e-3 for p in ssm)


def test_config_refuses_what_the_layers_cannot_do():
    from longsynth.errors import LongsynthError

    for bad in (dict(layer="essm", H=6, heads=4), dict(layer="essm", N=6, heads=4), dict(layer="essm", glu=True),
                dict(layer="dlr", ff_layers=2), dict(layer="dlr", skip="two"), dict(layer="s4", N=7),
                dict(layer="s4d", init="foo"),
                dict(layer="s4", kernel="prod")):
        with pytest.raises(LongsynthError):
            ModelConfig(d_input=1, d_output=1, **{"H": 8, "N": 8, **bad})


def test_builtins_are_bidirectional_where_the_protocol_is_not_causal():
    from longsynth.models_ref.models.factories import BUILTIN
    from longsynth.spec import ModelSpec

    fields = dict(task="pathfinder", protocol="lra-pathfinder", scale="tiny", d_input=3, vocab_size=None,
                  d_output=2, seq_len=1024, target_len=1, objective="tokens", readout="mean")
    for name in ("s4", "s4d", "essm"):
        assert BUILTIN[name].config(ModelSpec(causal=False, **fields)).bidirectional
        assert not BUILTIN[name].config(ModelSpec(causal=True, **fields)).bidirectional
    assert not BUILTIN["dss"].config(ModelSpec(causal=False, **fields)).bidirectional


@pytest.mark.parametrize("bidirectional", [False, True])
def test_fft_conv_gradients_are_the_direct_convolutions(bidirectional):
    """fft_conv's own backward (two circular correlations) against gradcheck's finite differences and against
    autograd through a convolution written step by step: y[t] = sum_{s <= t} K[t - s] u[s], plus, bidirectional,
    sum_{s > t} K'[s - t - 1] u[s] with K' the second half of the kernels."""
    torch.manual_seed(0)
    B, H, L = 2, 3, 6
    u = torch.randn(B, H, L, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2 * H if bidirectional else H, L, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: fft_conv(a, b, bidirectional), (u, K))

    def direct(u, K):
        rows = []
        for t in range(L):
            y = sum(K[:H, t - s] * u[..., s] for s in range(t + 1))
            if bidirectional:
                y = y + sum((K[H:, s - t - 1] * u[..., s] for s in range(t + 1, L)), torch.zeros_like(y))
            rows.append(y)
        return torch.stack(rows, dim=-1)  # [B, H, L]

    g = torch.randn(B, H, L, dtype=torch.float64)
    got = torch.autograd.grad((fft_conv(u, K, bidirectional) * g).sum(), (u, K))
    want = torch.autograd.grad((direct(u, K) * g).sum(), (u, K))
    for a, b in zip(got, want):
        assert torch.allclose(a, b, atol=1e-10)
