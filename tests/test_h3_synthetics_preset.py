"""The built-in ``h3`` on H3's synthetics (models_ref/protocols/recall.py, "h3 on H3's synthetics"): zoology's
LanguageModel with its H3 mixer at safari's width 32, two layers and d_state 64, in Table 1's H3 column; the
other protocols' refusals as before."""
import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.errors import LongsynthError
from longsynth.models_ref.models.factories import BUILTIN
from longsynth.models_ref.protocols.registry import PAPER, architecture, own_figures
from longsynth.spec import ModelSpec

torch.set_num_threads(1)
# protocol -> (task, V, T): the generators' "h3" presets (generators/recall/safari.py 65-74) with the next-token
# input of length L + 1 (induction head) and L + 2 (recall), as the committed contrasts' report.json record
PROTOCOL = {"h3-induction": ("induction-head", 20, 31), "h3-recall": ("associative-recall", 10, 22)}


def _spec(protocol, scale="tiny", T=None):
    task, V, T0 = PROTOCOL[protocol]
    T = T or T0
    return ModelSpec(task=task, protocol=protocol, scale=scale, objective="tokens", readout="positions",
                     d_output=V, seq_len=T, target_len=T, causal=True, vocab_size=V)


def _count(V):
    """Parameters of the preset at vocabulary V. Width D 32, state N = l_max = 64, H = D / head_dim 2 = 16 diagonal
    SSMs a layer. Per layer: q, k, v and output_linear 4 (D^2 + D) = 4,224; the shift SSM's B and C 2 D N = 4,096;
    ssm_k_D D = 32; per diagonal SSM log_dt 1, C and B N/2 complex = N reals each, inv_A_real and A_imag N/2 each:
    H (1 + 3 N) = 3,088; the skip D_h H = 16; two LayerNorms 4 D = 128: 11,584. Two layers, ln_f 2 D, and the
    word table V D (the head is tied to it): 23,232 + 32 V (23,872 at V 20, 23,552 at V 10). safari's model
    would have 46,784 / 46,464: an Mlp 2 D 4D + 5 D = 8,352 a layer, head_dim 1 (H 32: 6,176 + 32)."""
    D, N, H = 32, 64, 16
    layer = 4 * (D * D + D) + 2 * D * N + D + H * (1 + 3 * N) + H + 4 * D
    return V * D + 2 * layer + 2 * D


@pytest.mark.parametrize("protocol", sorted(PROTOCOL))
@pytest.mark.parametrize("scale", ["tiny", "paper"])
def test_preset_builds_with_safaris_shape(protocol, scale):
    spec = _spec(protocol, scale)
    cfg = BUILTIN["h3"].config(spec)
    assert (cfg.sequence_mixer, cfg.d_model, cfg.n_layers, cfg.l_max, cfg.max_position_embeddings) == (
        "h3", 32, 2, 64, 0)
    assert (cfg.embed_dropout, cfg.resid_dropout, cfg.vocab_size) == (0.1, 0.0, PROTOCOL[protocol][1])
    assert BUILTIN["h3"].lr(spec) == {"tiny": 2e-3, "paper": 5e-4}[scale]  # the protocol's
    m = BUILTIN["h3"](spec)
    mixer = m.blocks[0].mixer
    assert tuple(mixer.shift.B.shape) == (32, 64)  # d_state 64 as safari's configs/model/layer/h3.yaml 2
    assert tuple(mixer.diag.A_imag.shape) == (16, 32)  # N/2 = 32 modes of 16 heads (head_dim 2)
    assert not hasattr(m, "position")
    V = PROTOCOL[protocol][1]
    assert sum(p.numel() for p in m.parameters()) == _count(V) == {20: 23_872, 10: 23_552}[V]


@pytest.mark.parametrize("protocol", sorted(PROTOCOL))
def test_table1_h3_column(protocol):
    at, column = own_figures(protocol, "tiny", "h3")
    assert (at, column) == (protocol, "h3")
    assert PAPER[at][column]["accuracy"] == {"h3-induction": 1.0, "h3-recall": 0.998}[protocol]
    assert "no MLP" in architecture(protocol, "paper", "h3")["source"]


@pytest.mark.parametrize("protocol", sorted(PROTOCOL))
def test_forward_at_the_protocols_length_is_causal(protocol):
    torch.manual_seed(0)
    _, V, T = PROTOCOL[protocol]
    m = BUILTIN["h3"](_spec(protocol)).eval()
    x = torch.randint(0, V, (2, T))
    y = m(x)
    assert y.shape == (2, T, V) and torch.isfinite(y).all()
    x2 = x.clone()
    x2[:, T // 2:] = (x2[:, T // 2:] + 1) % V  # change the second half only
    y2 = m(x2)
    assert torch.allclose(y[:, :T // 2], y2[:, :T // 2], atol=1e-5)
    assert not torch.allclose(y[:, T // 2:], y2[:, T // 2:], atol=1e-5)
    # the first token reaches the last position through the kernels (they span the input as safari's, l_max None)
    x3 = x.clone()
    x3[:, 0] = (x3[:, 0] + 1) % V
    assert not torch.allclose(m(x3)[:, -1], y[:, -1], atol=1e-6)


def test_refusals_elsewhere_unchanged():
    parity = ModelSpec(task="parity", protocol="parity", scale="tiny", objective="tokens", readout="positions",
                       d_output=3, seq_len=64, target_len=64, causal=True, vocab_size=3)
    with pytest.raises(LongsynthError, match="h3 has no preset for parity"):
        BUILTIN["h3"].config(parity)
    assert architecture("selective-copying", "tiny", "h3") is None
    assert architecture("induction-heads", "tiny", "h3") is None
    for name in ("base-conv", "hyena"):  # the other mixers gain nothing here
        with pytest.raises(LongsynthError, match=f"{name} has no preset for h3-induction"):
            BUILTIN[name].config(_spec("h3-induction"))
    with pytest.raises(LongsynthError, match="has 64 positions"):  # longer than its kernels: refused
        BUILTIN["h3"].config(_spec("h3-induction", T=65))
    mqar = ModelSpec(task="mqar", protocol="mqar-64", scale="tiny", objective="tokens", readout="positions",
                     d_output=128, seq_len=64, target_len=64, causal=True, vocab_size=128)
    cfg = BUILTIN["h3"].config(mqar)  # MQAR's preset as before: width 64, l_max the input
    assert (cfg.d_model, cfg.l_max) == (64, 64)
