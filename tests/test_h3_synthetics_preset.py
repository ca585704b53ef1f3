"""H3 Table 1's models on its synthetics (models_ref/protocols/recall.py, "H3 Table 1's models"): ``safari-attention``,
``safari-s4d`` and ``h3`` as safari's lm_simple builds them (zoology's LanguageModel with an Mlp block, width 32, two
layers), each in its Table 1 column; safari's S4D against its recurrence run step by step; the other protocols'
refusals as before. tests/test_safari_models.py checks them against safari's own modules."""
import math

import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.errors import LongsynthError
from longsynth.models_ref.evaluation.protocol import resolve
from longsynth.models_ref.models.factories import BUILTIN
from longsynth.models_ref.models.safari_s4d import SafariS4D, s4d_inverse
from longsynth.models_ref.protocols.registry import PAPER, architecture, own_figures
from longsynth.models_ref.training.config import lr_factor
from longsynth.models_ref.training.trainer import build_optimizer
from longsynth.spec import ModelSpec

torch.set_num_threads(1)
# protocol -> (task, V, T): the generators' "h3" presets (generators/recall/safari.py 65-74) with the next-token
# input of length L + 1 (induction head) and L + 2 (recall), as the committed contrasts' report.json record
PROTOCOL = {"h3-induction": ("induction-head", 20, 31), "h3-recall": ("associative-recall", 10, 22)}
POSITIONS = {"h3-induction": 32, "h3-recall": 22}  # safari's __l_max = input_seq_len + 2
MODELS = ("safari-attention", "safari-s4d", "h3")
D, N, F = 32, 64, 128  # width, d_state, the Mlp's d_inner


def _spec(protocol, scale="tiny", T=None):
    task, V, T0 = PROTOCOL[protocol]
    T = T or T0
    return ModelSpec(task=task, protocol=protocol, scale=scale, objective="tokens", readout="positions",
                     d_output=V, seq_len=T, target_len=T, causal=True, vocab_size=V)


def _count(model, protocol):
    """Parameters from the definitions. A block: two LayerNorms 4 D, the Mlp D F + F + F D + D, and its mixer:
    attention Wqkv 3 (D^2 + D) and out_proj D^2 + D; safari's S4D log_dt D, one shared A (log_w_real, w_imag: N/2
    each), C N/2 complex a channel (D N reals), D D, output_linear D^2 + D; H3 (head_dim 1: H = D heads) q, k, v
    and output_linear 4 (D^2 + D), the shift SSM's B and C 2 D N, ssm_k_D D, per head log_dt 1, C and B N reals
    each, inv_A_real and A_imag N/2 each: H (1 + 3 N), the skip H. Two blocks, ln_f 2 D, the word table V D (the
    head is tied to it) and, for attention, the position table P D."""
    V, P = PROTOCOL[protocol][1], POSITIONS[protocol]
    mixer = {"safari-attention": 4 * (D * D + D),
             "safari-s4d": D + N + D * N + D + D * D + D,
             "h3": 4 * (D * D + D) + 2 * D * N + D + D * (1 + 3 * N) + D}[model]
    block = 4 * D + (D * F + F + F * D + D) + mixer
    return V * D + 2 * block + 2 * D + (P * D if model == "safari-attention" else 0)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", sorted(PROTOCOL))
@pytest.mark.parametrize("scale", ["tiny", "paper", "laptop"])
def test_presets_are_safaris_models(model, protocol, scale):
    spec = _spec(protocol, scale)
    cfg = BUILTIN[model].config(spec)
    assert (cfg.d_model, cfg.n_layers, cfg.state_mixer, cfg.d_inner) == (D, 2, "mlp", F)
    assert (cfg.embed_dropout, cfg.resid_dropout, cfg.vocab_size) == (0.1, 0.0, PROTOCOL[protocol][1])
    lr = {"tiny": 2e-3, "paper": 5e-4, "laptop": 5e-4}[scale]
    assert BUILTIN[model].lr(spec) == lr  # the protocol's
    m = BUILTIN[model](spec)
    assert sum(p.numel() for p in m.parameters()) == _count(model, protocol)
    if model == "safari-attention":
        assert (cfg.sequence_mixer, cfg.num_heads, cfg.attn_dropout) == ("attention", 1, 0.1)
        assert m.position.weight.shape == (POSITIONS[protocol], D)
    else:
        assert not hasattr(m, "position") and cfg.d_state == N and cfg.ssm_lr == min(1e-3, lr)
    if model == "h3":
        assert tuple(m.blocks[0].mixer.diag.A_imag.shape) == (D, N // 2)  # head_dim 1: 32 heads of N/2 modes
    if model == "safari-s4d":
        assert tuple(m.blocks[0].mixer.w_imag.shape) == (1, N // 2)  # one A for every channel (n_ssm 1)


def test_safaris_parameter_counts():
    """The counts safari's own SimpleLMHeadModel gives at the induction head's settings (bench/safari_models.py)."""
    counts = {m: sum(p.numel() for p in BUILTIN[m](_spec("h3-induction")).parameters()) for m in MODELS}
    assert counts == {"safari-attention": 27_136, "safari-s4d": 24_128, "h3": 46_784}


@pytest.mark.parametrize("model", ["safari-s4d", "h3"])
def test_ssm_kernels_take_their_own_lr_and_no_weight_decay(model):
    spec = _spec("h3-induction", "paper")
    m = BUILTIN[model](spec)
    marked = {n for n, p in m.named_parameters() if hasattr(p, "_optim")}
    suffixes = {"safari-s4d": ("log_dt", "log_w_real", "w_imag"),
                "h3": ("shift.B", "diag.log_dt", "diag.B", "diag.inv_A_real", "diag.A_imag")}[model]
    assert marked == {f"blocks.{i}.mixer.{s}" for i in range(2) for s in suffixes}
    cfg = resolve("h3-induction", "paper").train_config(lr=5e-4, seed=0)
    groups = {(g["lr"], g["weight_decay"]): len(g["params"]) for g in build_optimizer(m, cfg).param_groups}
    assert groups == {(5e-4, 0.0): len(marked), (5e-4, 0.1): len(list(m.parameters())) - len(marked)}


@pytest.mark.parametrize("model, column", [("safari-attention", "attention"), ("safari-s4d", "s4d"), ("h3", "h3")])
@pytest.mark.parametrize("protocol", sorted(PROTOCOL))
def test_table1_columns(model, column, protocol):
    at, own = own_figures(protocol, "tiny", model)
    assert (at, own) == (protocol, column)
    figure = {("h3-induction", "attention"): 1.0, ("h3-induction", "s4d"): 0.356, ("h3-induction", "h3"): 1.0,
              ("h3-recall", "attention"): 1.0, ("h3-recall", "s4d"): 0.86, ("h3-recall", "h3"): 0.998}
    assert PAPER[at][own]["accuracy"] == figure[(protocol, column)]
    assert "safari's lm_simple" in architecture(protocol, "paper", model)["source"]


def test_induction_schedule_is_safaris_timm_cosine():
    """induction_head/base.yaml: timm's cosine per step, warmup 6,280 steps from 1e-6, floor 0.1 x 5e-4."""
    cfg = resolve("h3-induction", "paper").train_config(lr=5e-4, seed=0)
    assert (cfg.schedule, cfg.warmup_steps, cfg.steps) == ("timm-cosine", 6280, 62_800)
    assert math.isclose(5e-4 * lr_factor(0, cfg), 1e-6)
    assert math.isclose(5e-4 * lr_factor(62_800, cfg), 5e-5)
    assert resolve("h3-recall", "paper").train_config(lr=5e-4, seed=0).schedule == "linear"


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", sorted(PROTOCOL))
def test_forward_at_the_protocols_length_is_causal(model, protocol):
    torch.manual_seed(0)
    _, V, T = PROTOCOL[protocol]
    m = BUILTIN[model](_spec(protocol)).eval()
    x = torch.randint(0, V, (2, T))
    y = m(x)
    assert y.shape == (2, T, V) and torch.isfinite(y).all()
    x2 = x.clone()
    x2[:, T // 2:] = (x2[:, T // 2:] + 1) % V  # change the second half only
    y2 = m(x2)
    assert torch.allclose(y[:, :T // 2], y2[:, :T // 2], atol=1e-5)
    assert not torch.allclose(y[:, T // 2:], y2[:, T // 2:], atol=1e-5)
    x3 = x.clone()  # the first token reaches the last position
    x3[:, 0] = (x3[:, 0] + 1) % V
    assert not torch.allclose(m(x3)[:, -1], y[:, -1], atol=1e-6)


@pytest.mark.parametrize("H, N, L", [(3, 4, 1), (4, 8, 7), (5, 64, 31)])
def test_safari_s4d_is_its_recurrence_step_by_step(H, N, L):
    """The layer's FFT convolution against the diagonal recurrence safari's ``step`` runs (s4d.py 166-186):
    x_l = exp(dt w) x_{l-1} + u_l, y_l = 2 Re sum_n C'_n (exp(dt w_n) - 1) / w_n x_ln + D u_l, then GELU, Linear."""
    torch.manual_seed(H + N + L)
    layer = SafariS4D(H, N).double()
    with torch.no_grad():  # trained values away from the init: channels of their own dt, A moved
        layer.log_dt.add_(0.3 * torch.randn(H, dtype=torch.float64))
        layer.log_w_real.add_(0.5 * torch.randn(1, N // 2, dtype=torch.float64))
    u = torch.randn(2, L, H, dtype=torch.float64)
    dt = torch.exp(layer.log_dt.detach())[:, None]  # [H, 1]
    w = torch.complex(-torch.exp(layer.log_w_real.detach()), layer.w_imag.detach())  # [1, N/2]
    dA = torch.exp(dt * w)  # [H, N/2]
    dC = torch.view_as_complex(layer.C.detach()) * (dA - 1) / w  # [H, N/2]
    x = torch.zeros(2, H, N // 2, dtype=torch.complex128)
    ys = []
    for t in range(L):
        x = dA * x + u[:, t, :, None]  # [2, H, N/2]
        ys.append(2 * (dC * x).sum(-1).real + layer.D.detach() * u[:, t])  # [2, H]
    want = layer.output_linear(torch.nn.functional.gelu(torch.stack(ys, 1)))  # [2, L, H]
    assert torch.allclose(layer(u), want, atol=1e-10)


def test_s4d_inverse_init():
    """S4D-Inv: Re w = -1/2, Im w_n = N/pi (N/(2n + 1) - 1); B scaled so that 2 sum |B/w|^2 = 1."""
    w, B = s4d_inverse(8)
    assert torch.allclose(w.real, torch.full((4,), -0.5))
    assert torch.allclose(w.imag, torch.tensor([8 / math.pi * (8 / (2 * n + 1) - 1) for n in range(4)]))
    assert math.isclose(float(2 * ((B / w).abs() ** 2).sum()), 1.0, rel_tol=1e-5)


def test_refusals_elsewhere_unchanged():
    parity = ModelSpec(task="parity", protocol="parity", scale="tiny", objective="tokens", readout="positions",
                       d_output=3, seq_len=64, target_len=64, causal=True, vocab_size=3)
    for model in MODELS:
        with pytest.raises(LongsynthError, match=f"{model} has no preset for parity"):
            BUILTIN[model].config(parity)
        assert architecture("induction-heads", "tiny", model) is None
    for name in ("base-conv", "hyena"):  # the other mixers gain nothing here
        with pytest.raises(LongsynthError, match=f"{name} has no preset for h3-induction"):
            BUILTIN[name].config(_spec("h3-induction"))
    with pytest.raises(LongsynthError, match="has 64 positions"):  # longer than its kernels: refused
        BUILTIN["h3"].config(_spec("h3-induction", T=65))
    with pytest.raises(LongsynthError, match="has 32 positions"):  # longer than safari's position table
        BUILTIN["safari-attention"].config(_spec("h3-induction", T=33))
    mqar = ModelSpec(task="mqar", protocol="mqar-64", scale="tiny", objective="tokens", readout="positions",
                     d_output=128, seq_len=64, target_len=64, causal=True, vocab_size=128)
    cfg = BUILTIN["h3"].config(mqar)  # MQAR's preset as before: zoology's Figure 2 H3, width 64, l_max the input
    assert (cfg.d_model, cfg.l_max, cfg.head_dim, cfg.state_mixer, cfg.ssm_lr) == (64, 64, 2, "identity", None)
