"""The newer baselines (docs/models.md "DeltaNet", "No gate", "zoology's mixers"): deltanet and
deltanet-signed (fla's DeltaNet as Grazzi et al. run it), s6-nogate and s4d-nogate (Mamba Table 1's
"No gate" block), base-conv, hyena and h3 (zoology's Figure 2 mixers in zoology's LanguageModel).

Each kernel against a twin that runs its recurrence (or its convolution sum) position by position in
float64; the chunked delta rule against the recurrent one; zoology's mixers against zoology's own
modules through tests/data/zoology_mixers.npz (bench/zoology_mixer_fixtures.py, no checkout needed);
the parameter counts; the built-ins' presets; what deltanet and deltanet-signed learn of parity."""
import math
import os

import numpy as np
import pytest
import torch  # a test dependency: its absence must fail, not skip
import torch.nn.functional as F

from longsynth.errors import LongsynthError
from longsynth.models_ref.layers.deltanet import DeltaNet, SwiGLU, chunked, recurrent
from longsynth.models_ref.layers.nogate import S4DNoGate
from longsynth.models_ref.layers.s6 import S6
from longsynth.models_ref.models.stack import Model, ModelConfig
from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig
from longsynth.models_ref.models.zoology_mixers import H3, BaseConv, Hyena
from longsynth.spec import ModelSpec
from model_data import parity_accuracy

torch.set_num_threads(1)
FIXTURE = os.path.join(os.path.dirname(__file__), "data", "zoology_mixers.npz")


def _grads(m, u, f):
    """f(m, u) and the gradients of a fixed random projection of it w.r.t. u (if float) and every parameter."""
    u = u.detach().requires_grad_() if u.is_floating_point() else u
    y = f(m, u)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(y.dtype)
    params = ([u] if u.is_floating_point() else []) + [p for p in m.parameters() if p.requires_grad]
    return [y] + list(torch.autograd.grad((y * w).sum(), params))


def _max_diff(got, want):
    return max((g - w).abs().max().item() for g, w in zip(got, want))


def _perturb(m, scale=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            if p.requires_grad:
                p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return m


# ---------------------------------------------------------------- DeltaNet


def deltanet_twin(m, x):
    """The layer position by position in the paper's symbols: each projection's last K inputs through
    its depthwise conv and SiLU; per head S_t = S_{t-1} (I - beta k k^T) + beta v k^T (S [d_v, d_k], a
    dense product, not the layer's rank-one update); o = RMSNorm(S q / sqrt(d)); concat; W_o."""
    b, L, H = x.shape
    h = m.heads
    d = H // h
    projs = (m.q_proj.weight, m.k_proj.weight, m.v_proj.weight)
    taps = [c.weight[:, 0] for c in (m.q_conv1d, m.k_conv1d, m.v_conv1d)]  # [H, K] each
    windows = [x.new_zeros(b, H, taps[0].shape[1]) for _ in range(3)]
    S = x.new_zeros(b, h, d, d)
    eye = torch.eye(d, dtype=x.dtype)
    out = []
    for t in range(L):
        feats = []
        for j in range(3):
            windows[j] = torch.cat((windows[j][:, :, 1:], (x[:, t] @ projs[j].T)[:, :, None]), -1)
            feats.append(F.silu((windows[j] * taps[j]).sum(-1)).view(b, h, d))
        q, k, v = feats
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        beta = (m.scale * torch.sigmoid(x[:, t] @ m.b_proj.weight.T))[..., None, None]  # [b, h, 1, 1]
        kk = k[..., :, None] * k[..., None, :]  # [b, h, d, d]
        S = S @ (eye - beta * kk) + beta * (v[..., :, None] * k[..., None, :])
        o = (S @ q[..., None])[..., 0] / math.sqrt(d)  # [b, h, d]
        o = o / torch.sqrt((o * o).mean(-1, keepdim=True) + m.eps) * m.o_norm
        out.append(o.reshape(b, H) @ m.o_proj.weight.T)
    return torch.stack(out, 1)


@pytest.mark.parametrize("L", [1, 15, 16, 17, 64, 100, 130])
@pytest.mark.parametrize("C", [16, 64])
def test_chunked_delta_rule_equals_the_recurrence(L, C):
    """The WY / UT form over chunks of C against the step-by-step recurrence, float64, beta in [0, 2],
    lengths below, at and off multiples of C: outputs and gradients to 1e-10."""
    g = torch.Generator().manual_seed(L * 100 + C)
    b, h, d = 2, 3, 8
    q, k, v = (torch.randn(b, h, L, d, generator=g, dtype=torch.float64) for _ in range(3))
    k = F.normalize(k, dim=-1)
    beta = 2 * torch.rand(b, h, L, generator=g, dtype=torch.float64)
    ins = [t.requires_grad_() for t in (q, k, v, beta)]
    w = torch.randn(b, h, L, d, generator=g, dtype=torch.float64)
    want, got = recurrent(*ins), chunked(*ins, C=C)
    assert (got - want).abs().max().item() < 1e-10
    g_want = torch.autograd.grad((want * w).sum(), ins)
    g_got = torch.autograd.grad((got * w).sum(), ins)
    assert _max_diff(g_got, g_want) < 1e-10


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("form, L, chunk", [("chunk", 37, 16), ("chunk", 64, 16), ("chunk", 5, 64),
                                             ("recurrent", 23, 64)])
def test_deltanet_layer_against_its_twin(signed, form, L, chunk):
    torch.manual_seed(0)
    m = DeltaNet(16, heads=4, d_conv=4, signed=signed, chunk=chunk, form=form).double()
    with torch.no_grad():
        m.o_norm.add_(0.2 * torch.randn_like(m.o_norm))
        m.b_proj.weight.mul_(20)  # beta across its whole range
    x = torch.randn(2, L, 16, dtype=torch.float64)
    diff = _max_diff(_grads(m, x, lambda m, u: m(u)), _grads(m, x, deltanet_twin))
    assert diff < 1e-10, diff
    with torch.no_grad():  # the float32 layer against the float64 twin
        assert (m.float()(x.float()).double() - deltanet_twin(m.double(), x)).abs().max() < 1e-5


def test_beta_range_and_transition_eigenvalues():
    """beta = s sigmoid: in [0, 1] (deltanet), [0, 2] (signed); I - beta k k^T has eigenvalues 1 and
    1 - beta, so the signed layer reaches -1 (Grazzi et al.'s point), the unsigned one stays >= 0."""
    for signed, lo, hi in ((False, 0.0, 1.0), (True, -1.0, 1.0)):
        torch.manual_seed(0)
        m = DeltaNet(8, heads=2, signed=signed)
        with torch.no_grad():
            m.b_proj.weight.mul_(100)
        beta = m.scale * torch.sigmoid(m.b_proj(torch.randn(4000, 8)))
        assert beta.min() < 1e-3 and beta.max() > m.scale - 1e-3 and beta.max() <= m.scale
        k = F.normalize(torch.randn(8, dtype=torch.float64), dim=0)
        for bt in (beta.min().item(), beta.max().item()):
            eig = torch.linalg.eigvalsh(torch.eye(8, dtype=torch.float64) - bt * torch.outer(k, k))
            assert eig.min() >= lo - 1e-9 and eig.max() <= hi + 1e-9
        assert (1 - beta.max().item() < -0.99) == signed


def test_deltanet_is_causal():
    torch.manual_seed(0)
    m = Model(ModelConfig(d_input=1, d_output=3, vocab_size=5, H=16, heads=2, layer="deltanet", n_layers=2,
                          prenorm=True, norm="rms", mlp="swiglu", chunk=8))
    x = torch.randint(0, 5, (2, 40))
    out = m(x)
    y = x.clone()
    y[:, 30:] = (y[:, 30:] + 1) % 5
    assert torch.equal(m(y)[:, :30], out[:, :30]) and not torch.equal(m(y)[:, 30:], out[:, 30:])


def _fla_count(H, heads, V, n_layers, K=4):
    """fla's DeltaNetForCausalLM at Grazzi et al.'s settings (configuration_delta_net.py 13-47; layers/delta_net.py
    115-138: q, k, v, o H x H, b_proj H x heads, three bias-free depthwise convs H K, o_norm H / heads;
    modeling_delta_net.py 28-65: gate_proj H x 2I, down_proj I x H; 74-98: two RMSNorm H per block; 191-193:
    embedding V H and final RMSNorm H; lm_head H V without bias)."""
    inner = 256 * ((int(H * 4 * 2 / 3) + 255) // 256)
    layer = 4 * H * H + H * heads + 3 * H * K + H // heads
    return V * H + n_layers * (2 * H + layer + 3 * H * inner) + H + H * V


def test_parameter_counts_are_flas():
    assert sum(p.numel() for p in DeltaNet(128, heads=4).parameters()) == 4 * 128 ** 2 + 512 + 3 * 512 + 32
    assert sum(p.numel() for p in SwiGLU(128).parameters()) == 128 * 1024 + 512 * 128  # I = 512 at H 128
    assert sum(p.numel() for p in SwiGLU(64).parameters()) == 64 * 512 + 256 * 64  # I = 256 at H 64
    for H, heads, V in ((128, 4, 3), (64, 4, 10)):  # parity (V 3) and modular arithmetic (V 10), 2 layers
        m = Model(ModelConfig(d_input=1, d_output=V, vocab_size=V, H=H, heads=heads, layer="deltanet", n_layers=2,
                              prenorm=True, norm="rms", mlp="swiglu"))
        # ours has the decoder's bias [V] beside fla's bias-free lm_head: the one difference
        assert sum(p.numel() for p in m.parameters()) == _fla_count(H, heads, V, 2) + V
    assert _fla_count(128, 4, 3, 2) == 529_856  # by hand: 384 + 2 (256 + 67,616 + 196,608) + 128 + 384


def test_deltanet_init_is_flas():
    torch.manual_seed(0)
    m = DeltaNet(128, heads=4)
    bound = 2 ** -2.5 * math.sqrt(6 / (128 + 128))  # xavier_uniform_(gain=2^-2.5) (delta_net.py 142-149)
    for lin in (m.q_proj, m.k_proj, m.v_proj, m.o_proj):
        assert lin.weight.abs().max() <= bound and lin.weight.abs().max() > 0.9 * bound
    assert torch.equal(m.o_norm, torch.ones(32))
    mlp = SwiGLU(128, n_layers=2)
    assert abs(mlp.gate_proj.weight.std().item() - 0.02) < 1e-3
    assert abs(mlp.down_proj.weight.std().item() - 0.01) < 1e-3  # 0.02 / sqrt(2 n_layers)


def _parity_accuracy(steps, signed, seed=0):
    """One deltanet layer (one head, chunk 16, H 16) on the running parity of 16 bits, Adam at lr 0.01
    (model_data.parity_accuracy): its accuracy at the last position on 512 fresh sequences."""
    return parity_accuracy("deltanet", steps, L=16, H=16, batch=32, seed=seed, heads=1, signed=signed, chunk=16)


def test_deltanet_signed_learns_parity_and_deltanet_does_not():
    """Grazzi et al. Table 3 at a small scale: beta in [0, 2] lets one DeltaNet layer (H 16, one head) learn
    the parity of 16 bits in 400 steps (0.996-1.00 for seeds 0-2, 3 s each; at 250 steps 0.87-0.98, which
    moved with the machine's torch build); beta in [0, 1] stays at chance (0.49-0.54)."""
    assert _parity_accuracy(400, signed=True) >= 0.9
    assert _parity_accuracy(400, signed=False) <= 0.7


# ---------------------------------------------------------------- Mamba Table 1's "No gate"


def s6_nogate_twin(m, u):
    """Mamba's decoding step (mamba_simple.py ``Mamba.step``) without z: out = y W_out."""
    b, L, H = u.shape
    W = m.conv1d.weight[:, 0]
    EH, K = W.shape
    window, h = u.new_zeros(b, EH, K), u.new_zeros(b, EH, m.N)
    A = -torch.exp(m.A_log)
    out = []
    for t in range(L):
        window = torch.cat((window[:, :, 1:], (u[:, t] @ m.in_proj.weight.T)[:, :, None]), -1)
        x = F.silu((window * W).sum(-1) + m.conv1d.bias)
        dt, B, C = (x @ m.x_proj.weight.T).split([m.R, m.N, m.N], dim=-1)
        Delta = F.softplus(dt @ m.dt_proj.weight.T + m.dt_proj.bias)
        h = torch.exp(Delta[:, :, None] * A) * h + (Delta * x)[:, :, None] * B[:, None, :]
        out.append(((h * C[:, None, :]).sum(-1) + m.D * x) @ m.out_proj.weight.T)
    return torch.stack(out, 1)


def s4d_nogate_twin(m, u):
    """The block position by position: the conv window, SiLU, then S4D's zero-order-hold recurrence
    over its N/2 complex modes per channel, x_t = exp(dt A) x_{t-1} + (exp(dt A) - 1) / A B u_t,
    y_t = 2 Re(C x_t) + D u_t (complex128), then W_out."""
    b, L, H = u.shape
    W = m.conv1d.weight[:, 0]
    EH, K = W.shape
    s = m.ssm
    dtA = torch.exp(s.log_dt)[:, None] * torch.complex(-torch.exp(s.A_log_neg_re), s.A_im)  # [EH, N/2]
    A = dtA / torch.exp(s.log_dt)[:, None]
    B = torch.view_as_complex(s.B.contiguous()) if s.B is not None else torch.ones_like(dtA)
    Bbar = (torch.exp(dtA) - 1) / A * B
    C = torch.view_as_complex(s.C.contiguous())
    window, state = u.new_zeros(b, EH, K), torch.zeros(b, EH, dtA.shape[1], dtype=torch.complex128)
    out = []
    for t in range(L):
        window = torch.cat((window[:, :, 1:], (u[:, t] @ m.in_proj.weight.T)[:, :, None]), -1)
        x = F.silu((window * W).sum(-1) + m.conv1d.bias)  # [b, EH]
        state = torch.exp(dtA) * state + Bbar * x[:, :, None]
        y = 2 * (C * state).sum(-1).real + s.D * x
        out.append(y @ m.out_proj.weight.T)
    return torch.stack(out, 1)


@pytest.mark.parametrize("L", [1, 9, 33])
def test_s6_nogate_against_its_twin(L):
    torch.manual_seed(L)
    m = _perturb(S6(8, N=4, expand=2, d_conv=3, gate=False, chunk=4).double())
    u = torch.randn(2, L, 8, dtype=torch.float64)
    assert _max_diff(_grads(m, u, lambda m, u: m(u)), _grads(m, u, s6_nogate_twin)) < 1e-10
    assert m.in_proj.weight.shape == (16, 8)  # x only: no z half


@pytest.mark.parametrize("init, L", [("legs", 1), ("legs", 21), ("lin", 32)])
def test_s4d_nogate_against_its_twin(init, L):
    torch.manual_seed(L)
    m = _perturb(S4DNoGate(8, N=8, expand=2, d_conv=4, init=init, chunk=4).double(), scale=0.05)
    u = torch.randn(2, L, 8, dtype=torch.float64)
    assert _max_diff(_grads(m, u, lambda m, u: m(u)), _grads(m, u, s4d_nogate_twin)) < 1e-10
    assert not hasattr(m.ssm, "out")  # S4D's output Linear is not part of the block


def test_nogate_parameter_counts():
    """in_proj E H^2 (no z half), conv E H (K + 1), out_proj E H^2 around the SSM: s6 as Mamba's own
    (x_proj, dt_proj, A_log, D: docs/models.md "S6"), 2 E H^2 + E H (K + 2R + 3N + 3) in all (24,448
    at H 64); S4D's over E H channels (log_dt, A, C, and B for LegS: E H (1 + 3N/2 or 2N) + D E H)."""
    H, E, N, K, R = 64, 2, 16, 4, 4
    EH = E * H
    assert sum(p.numel() for p in S6(H, N, gate=False).parameters()) == 2 * E * H * H + EH * (K + 2 * R + 3 * N + 3)
    assert sum(p.numel() for p in S6(H, N, gate=False).parameters()) == 24_448
    gated = sum(p.numel() for p in S6(H, N).parameters())
    assert gated - sum(p.numel() for p in S6(H, N, gate=False).parameters()) == EH * H  # the z half of W_in
    for init, per in (("legs", 2 + 3 * 64), ("lin", 2 + 2 * 64)):  # log_dt, A (N), C (N), B (N, LegS), D per channel
        count = sum(p.numel() for p in S4DNoGate(H, 64, init=init).parameters())
        assert count == 2 * EH * H + EH * (K + 1) + EH * per


def test_nogate_config_refusals():
    with pytest.raises(LongsynthError, match="no_gate"):
        ModelConfig(d_input=1, d_output=2, layer="dlr", no_gate=True)
    with pytest.raises(LongsynthError, match="no_gate"):
        ModelConfig(d_input=1, d_output=2, layer="s4d", no_gate=True, glu=True)
    with pytest.raises(LongsynthError, match="signed"):
        ModelConfig(d_input=1, d_output=2, layer="s4d", signed=True)
    with pytest.raises(LongsynthError, match="glu"):
        ModelConfig(d_input=1, d_output=2, layer="deltanet", heads=2, H=8, glu=True)
    with pytest.raises(LongsynthError, match="mlp"):
        ModelConfig(d_input=1, d_output=2, mlp="gelu")


# ---------------------------------------------------------------- zoology's mixers


def _causal_conv(u, k):
    """y_t = sum_{s <= t} k[t - s] u_s by direct sums: u [b, D, L], k [D, L]."""
    L = u.shape[-1]
    return torch.stack([sum(k[:, t - s] * u[..., s] for s in range(t + 1)) for t in range(L)], -1)


def base_conv_twin(m, u):
    x = u.transpose(1, 2)
    if hasattr(m.conv, "mlp"):  # the implicit long convolution: k * u + u
        conv = _causal_conv(x, m.conv.filter(u.shape[1])) + x
    else:  # 3 taps with bias
        w = m.conv.conv.weight[:, 0]
        conv = _causal_conv(x, F.pad(w.flip(-1), (0, u.shape[1] - w.shape[1]))) + m.conv.conv.bias[:, None]
    return conv.transpose(1, 2) * m.projection(u) + u


def hyena_twin(m, u):
    L = u.shape[1]
    uc = m.in_proj(u).transpose(1, 2)
    w = m.short_filter.weight[:, 0]
    uc = _causal_conv(uc, F.pad(w.flip(-1), (0, L - w.shape[1]))) + m.short_filter.bias[:, None]
    x1, x2, v = uc.split(m.D, dim=1)
    v = v * x1
    v = _causal_conv(v, m.filter_fn.filter(L)) + v * m.filter_fn.bias[:, None]
    return m.out_proj((v * x2).transpose(1, 2))


def h3_twin(m, u):
    """H3's two SSMs as recurrences (ss_kernel_shift.py ``step``: a shift register s_t = shift(s_{t-1}) +
    B k_t, out C . s_t; the bilinear S4D-Lin state x_t = Abar x_{t-1} + Bbar kv_t, out 2 Re C x_t),
    position by position, complex128."""
    b, L, D = u.shape
    hd, H = m.head_dim, m.H
    q, k, v = m.q_proj(u), m.k_proj(u), m.v_proj(u)  # [b, L, D]
    dt = torch.exp(m.diag.log_dt)[:, None]
    A = torch.complex(-torch.exp(m.diag.inv_A_real), m.diag.A_imag)
    Abar = (1 + dt * A / 2) / (1 - dt * A / 2)  # [H, N/2]
    Bbar = torch.view_as_complex(m.diag.B.contiguous()) * dt / (1 - dt * A / 2)
    C = torch.view_as_complex(m.diag.C[0].contiguous())
    s = u.new_zeros(b, D, m.shift.B.shape[1])
    x = torch.zeros(b, H, hd, hd, A.shape[1], dtype=torch.complex128)
    out = []
    for t in range(L):
        s = F.pad(s, (1, -1)) + m.shift.B * k[:, t, :, None]
        kt = (m.shift.C[0] * s).sum(-1) + m.ssm_k_D * k[:, t]  # [b, D]
        kv = kt.view(b, H, hd, 1) * v[:, t].view(b, H, 1, hd)  # [b, H, d1, d2]
        x = Abar[:, None, None] * x + Bbar[:, None, None] * kv[..., None]
        y = 2 * (C[:, None, None] * x).sum(-1).real + kv * m.D[:, None, None]  # [b, H, d1, d2]
        y = (y * q[:, t].view(b, H, hd, 1)).sum(2)  # [b, H, d2]
        out.append(m.output_linear(y.transpose(1, 2).reshape(b, D)))  # channel d2 H + h
    return torch.stack(out, 1)


@pytest.mark.parametrize("name, make, twin", [
    ("base-conv short", lambda: BaseConv(8, 16, kernel_size=3), base_conv_twin),
    ("base-conv long", lambda: BaseConv(8, 16, kernel_size=-1), base_conv_twin),
    ("hyena", lambda: Hyena(8, 16, filter_order=8), hyena_twin),
    ("h3", lambda: H3(8, 16, d_state=16, head_dim=2), h3_twin)])
@pytest.mark.parametrize("L", [16, 11])
def test_zoology_mixer_against_its_twin(name, make, twin, L):
    torch.manual_seed(0)
    m = _perturb(make().double())
    u = torch.randn(2, L, 8, dtype=torch.float64)
    assert _max_diff(_grads(m, u, lambda m, u: m(u)), _grads(m, u, twin)) < 1e-10


def _ours(mixer, V=32, D=16, L=32):
    return ZoologyAttention(ZoologyConfig(vocab_size=V, max_position_embeddings=0, d_model=D, sequence_mixer=mixer,
                                          l_max=L))


def _from_zoology(name):
    """zoology's state_dict name -> ours (models_ref/models/zoology.py, zoology_mixers.py)."""
    for theirs, ours in (("backbone.embeddings.word_embeddings.", "word."), ("backbone.layers.", "blocks."),
                         (".sequence_mixer.", ".mixer."), ("backbone.ln_f.", "ln_f."),
                         ("ssm_k_kernel.kernel.", "shift."), ("kernel.kernel.", "diag.")):
        name = name.replace(theirs, ours)
    return name


@pytest.mark.parametrize("mixer", ["base-conv", "hyena", "h3"])
def test_equal_to_zoologys_language_model(mixer):
    """zoology's LanguageModel with Figure 2's mixer (bench/zoology_mixer_fixtures.py ran it at d88d6f5, two
    TransformerBlocks of width 16, V 32, l_max 32, perturbed weights): its weights loaded into ours give its
    logits to 1e-6 at T = 32 and 20 (measured: 0 at 32, the FFT size a power of two, and < 1e-6 at 20)."""
    z = np.load(FIXTURE)
    ran = {f"sha256/zoology/{f}" for f in ("model.py", "mixers/base_conv.py", "mixers/hyena.py", "mixers/h3/h3.py")}
    assert ran <= set(z.files)  # what the fixture script ran, by hash
    sd = {_from_zoology(k[len(mixer) + 4:]): torch.from_numpy(z[k]) for k in z.files if k.startswith(f"{mixer}/sd/")}
    m = _ours(mixer).eval()
    m.load_state_dict(sd, strict=True)  # every tensor of ours is one of zoology's, and the converse
    with torch.no_grad():
        for T in (32, 20):
            x = torch.from_numpy(z[f"{mixer}/x{T}"].astype(np.int64))
            want = torch.from_numpy(z[f"{mixer}/y{T}"])
            assert want.shape == (2, T, 32)
            assert (m(x) - want).abs().max().item() < 1e-6


def test_parameter_counts_are_zoologys():
    """zoology's own parameter counts over Figure 2's grid (L and d_model in 64..512, V 8192), from the fixture."""
    z = np.load(FIXTURE)
    names = list(z["mixers"])
    assert len(z["counts"]) == 48
    for i, L, D, count in z["counts"].tolist():
        with torch.device("meta"):
            m = _ours(names[i], V=8192, D=D, L=L)
        assert sum(p.numel() for p in m.parameters()) == count, (names[i], L, D)
    # H3 at d_model 64, l_max 64 re-derived: V D + per layer 4 (D^2 + D) q/k/v/output_linear, shift B and C
    # 2 D N, ssm_k_D D, per SSM of H = D / 2: log_dt 1, C and B N each (N/2 complex), A N; D_h H; 2 LayerNorms
    V, D, N, H = 8192, 64, 64, 32
    h3 = 4 * (D * D + D) + 2 * D * N + D + H * (1 + 3 * N) + H + 4 * D
    assert sum(p.numel() for p in _ours("h3", V=V, D=D, L=N).parameters()) == V * D + 2 * h3 + 2 * D


def test_zoology_mixer_init_and_layout():
    torch.manual_seed(0)
    m = _ours("hyena", V=512, D=128, L=64)
    assert not hasattr(m, "position")  # configs.py 142: no position table but for attention
    assert abs(m.blocks[0].mixer.in_proj.weight.std().item() - 0.02) < 2e-3
    assert abs(m.blocks[0].mixer.out_proj.weight.std().item() - 0.01) < 1e-3  # 0.02 / sqrt(2 n_layers)
    assert not m.blocks[0].mixer.in_proj.bias.any()
    assert abs(m.blocks[0].mixer.filter_fn.implicit_filter[2].weight.std().item() - 0.02) < 2e-3  # model.py 144-147
    bc = _ours("base-conv", D=16)
    assert isinstance(bc.blocks[0].mixer.conv.conv, torch.nn.Conv1d) and hasattr(bc.blocks[1].mixer.conv, "mlp")
    assert not bc.blocks[1].mixer.conv.pos_emb.z.requires_grad  # convolution.py 130: a frozen parameter
    with pytest.raises(ValueError, match="positions"):
        bc(torch.zeros(1, 33, dtype=torch.long))


# ---------------------------------------------------------------- the built-ins


def _spec(**change):
    fields = dict(task="parity", protocol="parity", scale="tiny", objective="tokens", readout="positions",
                  d_output=3, seq_len=64, target_len=64, causal=True, vocab_size=3)
    return ModelSpec(**{**fields, **change})


def test_builtins_are_reachable_with_their_presets():
    from longsynth.models_ref.models.factories import BUILTIN
    from longsynth.models_ref.protocols.registry import own_figures

    for name, signed in (("deltanet", False), ("deltanet-signed", True)):
        cfg = BUILTIN[name].config(_spec())
        assert (cfg.layer, cfg.signed, cfg.heads, cfg.norm, cfg.mlp, cfg.d_conv) == ("deltanet", signed, 4, "rms",
                                                                                       "swiglu", 4)
        assert BUILTIN[name](_spec())(torch.randint(0, 3, (2, 64))).shape == (2, 64, 3)
    assert own_figures("parity", "tiny", "deltanet-signed")[1] == "deltanet [-1,1]"
    copy = dict(task="selective-copying", protocol="selective-copying", d_output=16, vocab_size=16)
    for name, layer in (("s6-nogate", "s6"), ("s4d-nogate", "s4d")):
        cfg = BUILTIN[name].config(_spec(**copy))
        assert (cfg.layer, cfg.no_gate, cfg.glu, cfg.bidirectional) == (layer, True, False, False)
        assert BUILTIN[name](_spec(**copy))(torch.randint(0, 16, (2, 64))).shape == (2, 64, 16)
    assert own_figures("selective-copying", "tiny", "s4d-nogate")[1] == "s4 no gate"
    mqar = dict(task="mqar", protocol="mqar-64", d_output=128, vocab_size=128)
    for name in ("base-conv", "hyena", "h3"):
        cfg = BUILTIN[name].config(_spec(**mqar))
        assert (cfg.sequence_mixer, cfg.l_max, cfg.max_position_embeddings, cfg.d_model) == (name, 64, 0, 64)
        assert BUILTIN[name](_spec(**mqar))(torch.randint(0, 128, (2, 64))).shape == (2, 64, 128)
        with pytest.raises(LongsynthError, match=name):
            BUILTIN[name].config(_spec())  # parity: no preset


def test_zoology_mixer_checkpoint_rebuilds_it(tmp_path):
    from longsynth.models_ref.training.checkpoints import load_model

    m = _perturb(_ours("h3", V=20, D=8, L=16)).eval()
    torch.save({"model_config": m.cfg.to_dict(), "model": m.state_dict()}, tmp_path / "c.pt")
    back, _ = load_model(str(tmp_path / "c.pt"))
    x = torch.randint(0, 20, (2, 16))
    assert torch.equal(back.eval()(x), m(x))
