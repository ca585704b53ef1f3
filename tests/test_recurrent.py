"""The recurrent built-ins (docs/models.md "S6" and "GRU"): s6 (Mamba's selective SSM block),
s6-signed (its transition in (-1, 1]) and gru. Each layer against a twin that runs its
recurrence position by position with the module's own weights (outputs and gradients), the
chunked, recomputing selective scan against the plain recurrence, causality, the official parameter counts, the signed
transition's range, and what each learns of parity."""
import math

import pytest
import torch  # a test dependency: its absence must fail, not skip
import torch.nn.functional as F

from longsynth.errors import LongsynthError
from longsynth.models_ref.layers.gru import GRU
from longsynth.models_ref.layers.torch_lstm import TorchLSTM
from longsynth.models_ref.layers.s6 import S6
from longsynth.models_ref.layers.selective_scan import SelectiveScan, chunk_length
from longsynth.models_ref.models.stack import Model, ModelConfig
from model_data import parity_accuracy as _parity_accuracy

torch.set_num_threads(1)


# ---------------------------------------------------------------- twins, position by position


def s6_twin(m, u):
    """Mamba's recurrent step (state-spaces/mamba mamba_simple.py ``Mamba.step``) at every position:
    the last d_conv inputs of the convolution and the state h [b, EH, N] carried from t - 1."""
    b, L, H = u.shape
    W = m.conv1d.weight[:, 0]  # [EH, d_conv]
    EH, K = W.shape
    window = u.new_zeros(b, EH, K)  # [b, EH, d_conv]
    h = u.new_zeros(b, EH, m.N)  # [b, EH, N]
    A = -torch.exp(m.A_log)  # [EH, N]
    out = []
    for t in range(L):
        x, z = (u[:, t] @ m.in_proj.weight.T).split(EH, dim=-1)  # [b, EH], [b, EH]
        window = torch.cat((window[:, :, 1:], x[:, :, None]), -1)  # [b, EH, d_conv]
        x = F.silu((window * W).sum(-1) + m.conv1d.bias)  # [b, EH]
        dt, B, C = (x @ m.x_proj.weight.T).split([m.R, m.N, m.N], dim=-1)  # [b, R], [b, N], [b, N]
        Delta = F.softplus(dt @ m.dt_proj.weight.T + m.dt_proj.bias)  # [b, EH]
        Abar = torch.exp(Delta[:, :, None] * A)  # [b, EH, N]
        if m.signed:
            Abar = 2 * Abar - 1
        h = Abar * h + (Delta * x)[:, :, None] * B[:, None, :]  # [b, EH, N]
        y = (h * C[:, None, :]).sum(-1) + m.D * x  # [b, EH]
        out.append((y * F.silu(z)) @ m.out_proj.weight.T)  # [b, H]
    return torch.stack(out, 1)  # [b, L, H]


def gru_twin(m, u):
    """The GRU equations (torch.nn.GRU's documentation) at every position, with the module's weights."""
    rnn = m.rnn
    W_i, W_h = rnn.weight_ih_l0.chunk(3), rnn.weight_hh_l0.chunk(3)  # (W_ir, W_iz, W_in), (W_hr, W_hz, W_hn)
    b_i, b_h = rnn.bias_ih_l0.chunk(3), rnn.bias_hh_l0.chunk(3)
    h = u.new_zeros(u.shape[0], u.shape[2])  # [b, H]
    out = []
    for t in range(u.shape[1]):
        x = u[:, t]  # [b, H]
        r = torch.sigmoid(x @ W_i[0].T + b_i[0] + h @ W_h[0].T + b_h[0])
        z = torch.sigmoid(x @ W_i[1].T + b_i[1] + h @ W_h[1].T + b_h[1])
        n = torch.tanh(x @ W_i[2].T + b_i[2] + r * (h @ W_h[2].T + b_h[2]))
        h = (1 - z) * n + z * h
        out.append(h)
    return torch.stack(out, 1)  # [b, L, H]


def lstm_twin(m, u):
    """The LSTM equations (torch.nn.LSTM's documentation) at every position, with the module's weights."""
    rnn = m.rnn
    W_i, W_h = rnn.weight_ih_l0.chunk(4), rnn.weight_hh_l0.chunk(4)  # (W_ii, W_if, W_ig, W_io), (W_hi, ...)
    b = [bi + bh for bi, bh in zip(rnn.bias_ih_l0.chunk(4), rnn.bias_hh_l0.chunk(4))]
    h = u.new_zeros(u.shape[0], u.shape[2])  # [b, H]
    c = u.new_zeros(u.shape[0], u.shape[2])  # [b, H]
    out = []
    for t in range(u.shape[1]):
        x = u[:, t]  # [b, H]
        i, f, g, o = (x @ W_i[k].T + h @ W_h[k].T + b[k] for k in range(4))
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        out.append(h)
    return torch.stack(out, 1)  # [b, L, H]


def _grads(m, u, f):
    """f(m, u) and the gradients of a fixed random projection of it w.r.t. u and every parameter."""
    u = u.detach().requires_grad_()
    y = f(m, u)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(y.dtype)
    params = [u] + list(m.parameters())
    return [y] + list(torch.autograd.grad((y * w).sum(), params))


def _agree(got, want, tol):
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert (g - w).abs().max() <= tol * (1 + w.abs().max()), (g - w).abs().max()


# (H, N, L, chunk, expand, d_conv): L below, at and above d_conv; chunks dividing L and not, 1, > L
S6_SHAPES = [(8, 4, 1, None, 2, 4), (8, 4, 37, None, 2, 4), (16, 16, 64, 5, 2, 4), (4, 2, 33, 1, 1, 2),
             (8, 3, 20, 64, 2, 3), (32, 8, 50, 7, 2, 4)]


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("H,N,L,chunk,expand,d_conv", S6_SHAPES)
def test_s6_is_the_selective_recurrence_step_by_step(H, N, L, chunk, expand, d_conv, signed):
    """Outputs and gradients (input and every parameter) of the chunked layer against Mamba's
    step run position by position, float64; Delta up to 3 so that signed transitions go negative."""
    torch.manual_seed(H + N + L)
    m = S6(H, N, expand=expand, d_conv=d_conv, dt_min=1e-2, dt_max=3.0, signed=signed, chunk=chunk).double()
    u = torch.randn(2, L, H, dtype=torch.float64)
    _agree(_grads(m, u, S6.__call__), _grads(m, u, s6_twin), 1e-10)


def test_s6_float32_is_the_float64_twin():
    torch.manual_seed(3)
    m = S6(16, 16, signed=True, dt_min=1e-3, dt_max=1.0)
    u = torch.randn(2, 300, 16)
    got = _grads(m, u, S6.__call__)
    want = _grads(m.double(), u.double(), s6_twin)
    _agree(got, [w.float() for w in want], 1e-5)


def _plain_selective(Delta, x, B, C, A, signed):
    """The selective scan with every [b, L, EH, N] tensor kept, as autograd differentiates it."""
    Abar = torch.exp(Delta[..., None] * A)  # [b, L, EH, N]
    Abar = 2 * Abar - 1 if signed else Abar
    h, out = torch.zeros_like(Abar[:, 0]), []
    for t in range(x.shape[1]):
        h = Abar[:, t] * h + (Delta[:, t] * x[:, t])[..., None] * B[:, t, None, :]  # [b, EH, N]
        out.append((h * C[:, t, None, :]).sum(-1))  # [b, EH]
    return torch.stack(out, 1)  # [b, L, EH]


def _selective_inputs(L, seed=0, b=2, EH=3, N=4):
    g = torch.Generator().manual_seed(seed)
    Delta = (torch.rand(b, L, EH, generator=g, dtype=torch.float64) * 3).requires_grad_()  # up to 3: Abar < 0 signed
    x, B, C = (torch.randn(b, L, n, generator=g, dtype=torch.float64).requires_grad_() for n in (EH, N, N))
    A = (-torch.rand(EH, N, generator=g, dtype=torch.float64) - 0.1).requires_grad_()
    return Delta, x, B, C, A


@pytest.mark.parametrize("L,chunk", [(1, None), (13, None), (13, 1), (13, 4), (13, 13), (40, 7), (9, 64)])
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("keep", [True, False])
def test_selective_scan_is_the_plain_recurrence(L, chunk, signed, keep, monkeypatch):
    """Outputs and the gradients of Delta, x, B, C and A of the chunked scan against the plain
    recurrence differentiated by autograd, float64, chunks dividing L and not; its states kept by the
    forward, and recomputed chunk by chunk (a budget of no numbers kept)."""
    from longsynth.models_ref.layers import selective_scan

    if not keep:
        monkeypatch.setattr(selective_scan, "KEEP_NUMBERS", 0)
    inputs = _selective_inputs(L, seed=L)
    w = torch.randn(2, L, 3, dtype=torch.float64)
    got = SelectiveScan.apply(*inputs, signed, chunk)
    want = _plain_selective(*inputs, signed)
    assert (got - want).abs().max() < 1e-12
    g_got = torch.autograd.grad((got * w).sum(), inputs)
    g_want = torch.autograd.grad((want * w).sum(), inputs)
    for a, b in zip(g_got, g_want):
        assert (a - b).abs().max() <= 1e-10 * (1 + b.abs().max())


def test_selective_scan_gradient_is_the_derivative():
    inputs = _selective_inputs(11, seed=5, b=1, EH=2, N=3)
    for chunk in (None, 1, 4, 11):
        assert torch.autograd.gradcheck(lambda *t: SelectiveScan.apply(*t, True, chunk), inputs)


def test_selective_scan_chunks_bound_the_memory():
    """The default chunk holds about 16M numbers whatever L: at the parity paper shape (b 256, EH 256,
    N 16) 16 positions, one position when a single one is bigger; never more than L."""
    assert chunk_length(256, 40, 256, 16) == 16
    assert chunk_length(256, 100_000, 256, 16) == 16
    assert chunk_length(4096, 40, 1024, 16) == 1
    assert chunk_length(1, 7, 8, 4) == 7


@pytest.mark.parametrize("layer,twin,gates", [(GRU, gru_twin, 3), (TorchLSTM, lstm_twin, 4)])
@pytest.mark.parametrize("L", [1, 29])
def test_gru_and_lstm_are_their_equations_step_by_step(layer, twin, gates, L):
    """Outputs and gradients against the equations of torch's documentation, run a position at a time with the
    module's weights; parameters 2 gates (H^2 + H): 6 H^2 + 6 H for the GRU, 8 H^2 + 8 H for the LSTM."""
    torch.manual_seed(L)
    m = layer(12).double()
    u = torch.randn(3, L, 12, dtype=torch.float64)
    _agree(_grads(m, u, layer.__call__), _grads(m, u, twin), 1e-10)
    assert sum(p.numel() for p in m.parameters()) == 2 * gates * (12 * 12 + 12)


# ---------------------------------------------------------------- the model stack


@pytest.mark.parametrize("layer,extra", [("s6", {}), ("s6", {"signed": True}), ("gru", {}), ("lstm", {})])
def test_recurrent_models_are_causal(layer, extra):
    """Changing the inputs from position 30 leaves every output before it bit for bit, and the
    harness's own check (longsynth evaluate refuses a non-causal model on a causal protocol) passes."""
    from longsynth.models_ref.evaluation.harness import Job, check_model, prepare

    torch.manual_seed(6)
    cfg = ModelConfig(d_input=3, d_output=2, H=16, N=8, n_layers=2, layer=layer, chunk=6, **extra)
    model = Model(ModelConfig.from_dict(cfg.to_dict())).double()
    x = torch.randn(2, 47, 3, dtype=torch.float64)
    y = model(x)
    x2 = x.clone()
    x2[:, 30:] += 1.0
    y2 = model(x2)
    assert torch.equal(y2[:, :30], y[:, :30]) and not torch.allclose(y2[:, 30:], y[:, 30:])
    p = prepare(Job(model="dlr", protocol="atomic", task="shift"))
    spec = p.spec
    check_model(Model(ModelConfig(d_input=spec.d_input, d_output=spec.d_output, H=16, N=8, layer=layer, **extra)),
                spec, p.sources[0](0)[0][:2])


@pytest.mark.parametrize("layer", ["s6", "gru"])
def test_recurrent_layers_train_with_checkpoints_and_bf16_autocast(layer):
    """Through the trainer: checkpointed blocks give the same loss curve; bf16 autocast (CPU) trains
    close to float32 (s6 scans in float32 inside it)."""
    from trainruns import check_checkpoints_and_bf16

    def data(step):  # a cumulative sum of noise: y_t = sum_{s <= t} x_s / 8
        x = torch.randn(4, 32, 3, generator=torch.Generator().manual_seed(step))
        return x, x.cumsum(1) / 8

    cfg = ModelConfig(d_input=3, d_output=3, H=16, N=8, n_layers=2, layer=layer, dt_min=1e-3, dt_max=1e-1)
    check_checkpoints_and_bf16(cfg, data)


def test_s6_parameters_are_the_official_count():
    """Mamba's block (mamba_simple.py ``Mamba.__init__``): in_proj 2EH*H, conv EH*d_conv + EH,
    x_proj EH*(R + 2N), dt_proj R*EH + EH, A_log EH*N, D EH, out_proj EH*H, no other biases."""
    for H, N, expand, d_conv in ((64, 16, 2, 4), (768, 16, 2, 4), (40, 8, 3, 2)):
        m = S6(H, N, expand=expand, d_conv=d_conv)
        EH, R = expand * H, math.ceil(H / 16)
        want = {"in_proj.weight": 2 * EH * H, "conv1d.weight": EH * d_conv, "conv1d.bias": EH,
                "x_proj.weight": EH * (R + 2 * N), "dt_proj.weight": R * EH, "dt_proj.bias": EH,
                "A_log": EH * N, "D": EH, "out_proj.weight": EH * H}
        assert {n: p.numel() for n, p in m.named_parameters()} == want
    assert sum(p.numel() for p in S6(768, 16).parameters()) == 3_770_880  # one block of the 24 of Mamba-130M
    assert sum(p.numel() for p in S6(64, 16).parameters()) == 32_640


def test_s6_init_is_the_official_one():
    """Delta's bias is softplus^-1 of dt log-uniform in [dt_min, dt_max]; A_n = -n; D = 1; the SSM
    tensors take no weight decay and ssm_lr; lr 0 freezes them."""
    torch.manual_seed(0)
    m = S6(64, 16, dt_min=1e-3, dt_max=1e-1, lr=1e-3)
    dt = F.softplus(m.dt_proj.bias)  # [EH]
    assert dt.min() >= 1e-3 * (1 - 1e-5) and dt.max() <= 1e-1 * (1 + 1e-5)
    assert dt.log().std() > 0.5 * (math.log(100) / math.sqrt(12))  # spread over the log range, not constant
    assert torch.allclose(-torch.exp(m.A_log), -torch.arange(1, 17.0).expand(128, 16))
    assert torch.equal(m.D, torch.ones(128))
    assert m.A_log._optim == {"weight_decay": 0.0, "lr": 1e-3} and m.D._optim == m.A_log._optim
    frozen = S6(8, 4, lr=0.0)
    assert {n for n, _ in frozen.named_buffers()} == {"A_log", "D"}


def test_gru_parameters_are_six_h_squared_plus_six_h():
    for H in (16, 64):
        assert sum(p.numel() for p in GRU(H).parameters()) == 6 * H * H + 6 * H


def test_signed_transitions_reach_below_zero_and_unsigned_do_not():
    """Over the same Delta (0 to 50, underflow included): s6's Abar = exp(Delta A) stays in
    [0, 1]; s6-signed's 2 exp(Delta A) - 1 covers [-1, 1], -1 exactly where exp underflows."""
    torch.manual_seed(0)
    Delta = torch.linspace(0, 50, 2001)[None, :, None].expand(1, -1, 16)  # [b, L, EH]
    for signed in (False, True):
        Abar = S6(8, 16, signed=signed).transition(Delta)  # [1, 2001, EH, N]
        assert Abar.max() <= 1.0
        if signed:
            assert Abar.min() == -1.0 and (Abar < -0.5).float().mean() > 0.5
        else:
            assert Abar.min() >= 0.0


def test_config_refuses_what_the_recurrent_layers_cannot_do():
    for bad, word in ((dict(layer="s6", bidirectional=True), "causal only"),
                      (dict(layer="gru", bidirectional=True), "causal only"),
                      (dict(layer="lstm", bidirectional=True), "causal only"), (dict(layer="lstm", glu=True), "glu"),
                      (dict(layer="s6", glu=True), "glu"), (dict(layer="gru", skip="one"), "skip"),
                      (dict(layer="dlr", signed=True), "signed"), (dict(layer="s6", dt_rank=0), "dt_rank"),
                      (dict(layer="s6", expand=0), "expand")):
        with pytest.raises(LongsynthError, match=word):
            ModelConfig(d_input=1, d_output=1, **{"H": 8, "N": 8, **bad})


def test_builtin_lstm_is_the_chomsky_model_on_chomsky_tasks_and_torch_lstm_blocks_elsewhere():
    """``lstm`` on flip-flop and Repeat After Me: two prenorm blocks of torch's LSTM (the token protocols'
    preset); on a Chomsky task: the paper's one-core model with Haiku's LSTM, as before."""
    from longsynth.models_ref.evaluation.protocol import on_the_fly_sources, resolve
    from longsynth.models_ref.evaluation.harness import _spec
    from longsynth.models_ref.models.chomsky import ChomskyModel
    from longsynth.models_ref.models.factories import BUILTIN
    from longsynth import registry

    for task, scale in (("flipflop", "tiny"), ("repeat-copy", "tiny"), ("chomsky-even-pairs", "tiny")):
        proto = resolve(task, scale, task=task)
        *sources, params = on_the_fly_sources(proto, 2)
        x, y = sources[0](0)[:2]
        t = registry.get(task)
        model = BUILTIN["lstm"](_spec(proto, x, y, vocab_size=int(t.vocab_size(t.make_config(**params)))))
        if task.startswith("chomsky"):
            assert isinstance(model, ChomskyModel)
        else:
            assert isinstance(model, Model) and model.cfg.layer == "lstm" and model.cfg.n_layers == 2
            assert sum(isinstance(m, TorchLSTM) for m in model.modules()) == 2
        assert model(x).shape[:2] == x.shape[:2]


def test_builtins_s6_s6_signed_gru_run_causal_with_a_preset(monkeypatch):
    """The built-ins resolve through protocols.registry.architecture: s6-signed is s6's row with signed=True;
    all three are causal even where the protocol is not (no bidirectional form)."""
    from longsynth.models_ref.protocols import registry as presets
    from longsynth.models_ref.models.factories import BUILTIN, load
    from longsynth.spec import ModelSpec

    row = {"arch": {"H": 16, "N": 8, "dt_min": 1e-3, "dt_max": 1e-1}, "lr": 1e-3, "source": "test"}
    for name in ("s6", "gru"):
        monkeypatch.setitem(presets.ARCHITECTURES, ("lra-pathfinder", "tiny", name), row)
    fields = dict(task="pathfinder", protocol="lra-pathfinder", scale="tiny", d_input=3, vocab_size=None,
                  d_output=2, seq_len=1024, target_len=1, objective="tokens", readout="mean")
    for name, layer, signed in (("s6", "s6", False), ("s6-signed", "s6", True), ("gru", "gru", False)):
        assert load(name)[0] is BUILTIN[name]
        cfg = BUILTIN[name].config(ModelSpec(causal=False, **fields))
        assert (cfg.layer, cfg.signed, cfg.bidirectional) == (layer, signed, False)
        assert BUILTIN[name](ModelSpec(causal=True, **fields))(torch.randn(2, 9, 3)).shape == (2, 9, 2)


# ---------------------------------------------------------------- parity: what each layer can learn


def test_gru_learns_parity_and_a_time_invariant_layer_does_not():
    """The positive control of the state-tracking suites: one GRU layer (H 32) learns the parity of
    32 bits in 200 steps (1.00 for seeds 0-4, 1.5 s each); one S4D layer, a linear time-invariant
    convolution, stays at chance (0.48-0.52 for seeds 0-2, as DLR N 64: 0.49-0.52)."""
    assert _parity_accuracy("gru", 200) >= 0.99
    assert _parity_accuracy("s4d", 200, N=64, dt_min=1e-3, dt_max=1e-1) <= 0.7


def test_s6_signed_learns_parity_and_s6_does_not():
    """Grazzi et al.'s finding at a small scale: with Abar in (-1, 1] one Mamba layer (H 16, N 16)
    learns the parity of 16 bits in 250 steps (0.97-1.00 for seeds 0-5, 3 s each); with Abar in
    (0, 1] it stays at chance (0.48-0.56), their Theorem 1 (positive transitions cannot)."""
    kw = dict(L=16, H=16, batch=32, N=16, dt_min=1e-3, dt_max=1e-1)
    assert _parity_accuracy("s6", 250, signed=True, **kw) >= 0.9
    assert _parity_accuracy("s6", 250, **kw) <= 0.7
