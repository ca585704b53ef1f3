"""The DLR paper's baselines: attention, local attention, DLR-R (docs/models.md "Baselines")."""
import pytest

import torch

from longsynth.models_ref.layers.attention import Attention, local_attention, rotary
from longsynth.models_ref.layers.dlr import DLRReal
from longsynth.models_ref.models.stack import Model, ModelConfig

torch.set_num_threads(1)


def _input_gradient(layer, L, t, H=16):
    """d output[t] / d input [L, H] of a layer on one random sequence."""
    torch.manual_seed(0)
    u = torch.randn(1, L, H, requires_grad=True)
    layer(u)[0, t].sum().backward()
    return u.grad[0].abs().sum(-1)  # [L]


@pytest.mark.parametrize("chunk", [None, 8])
def test_attention_is_causal_when_asked(chunk):
    """Causal: the output at t has exactly zero gradient with respect to every input after t."""
    torch.manual_seed(1)
    layer = Attention(16, 4, causal=True, chunk=chunk)
    for t in (0, 5, 13, 30):
        g = _input_gradient(layer, 31, t)
        assert torch.all(g[t + 1:] == 0) and torch.all(g[:t + 1][max(0, t - 7):] > 0), (t, g)
    both = Attention(16, 4, causal=False, chunk=chunk)
    assert _input_gradient(both, 31, 0)[1] > 0  # not causal: the future counts


def test_local_attention_sees_exactly_its_chunk_and_its_neighbours():
    torch.manual_seed(2)
    L, c = 40, 8  # chunks [0, 8), [8, 16), ..., [32, 40)
    for causal in (True, False):
        layer = Attention(16, 4, causal=causal, chunk=c)
        for t in (3, 12, 21, 39):
            n = t // c
            lo, hi = max(0, (n - 1) * c), (t + 1 if causal else min(L, (n + 2) * c))
            g = _input_gradient(layer, L, t)
            seen = (g > 0).nonzero().flatten().tolist()
            assert seen == list(range(lo, hi)), (causal, t, seen)


@pytest.mark.parametrize("causal", [True, False])
def test_local_attention_is_full_attention_when_the_sequence_fits_one_chunk(causal):
    torch.manual_seed(3)
    q, k, v = torch.randn(3, 2, 4, 24, 8).unbind(0)  # [B, h, L, d]
    full = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    q = q * 8 ** -0.5  # local_attention takes q scaled by the layer's temperature
    assert torch.allclose(local_attention(q, k, v, 24, causal), full, atol=1e-6)
    assert torch.allclose(local_attention(q, k, v, 64, causal), full, atol=1e-6)
    layer = Attention(16, 4, causal=causal, chunk=64)
    ref = Attention(16, 4, causal=causal, chunk=None)
    ref.load_state_dict(layer.state_dict())
    u = torch.randn(2, 50, 16)
    assert torch.equal(layer(u), ref(u))


@pytest.mark.parametrize("causal", [True, False])
def test_local_attention_is_full_attention_under_its_band_mask(causal):
    """Over several chunks (the last one short), each query's output is full attention restricted to its chunk
    and its neighbours (the previous only, up to itself, when causal)."""
    torch.manual_seed(6)
    L, c = 45, 8
    q, k, v = torch.randn(3, 2, 4, L, 8).unbind(0)  # [B, h, L, d]
    i, j = torch.arange(L)[:, None] // c, torch.arange(L)[None] // c  # chunk of the query, of the key
    band = (j >= i - 1) & ((torch.arange(L)[None] <= torch.arange(L)[:, None]) if causal else (j <= i + 1))
    full = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=band, scale=1.0)
    assert torch.allclose(local_attention(q, k, v, c, causal), full, atol=1e-6)


def test_local_attention_memory_is_linear_in_length():
    """The score tensor is [B, h, L/c, c, 3c] (0.8 GB at L = 16K, chunk 1024, 4 heads): the
    forward of one layer, mask and softmax included, stays below the 4 GiB that full
    attention's 16K x 16K x 4-head score tensor alone would take (it needs twice that)."""
    import resource

    layer = Attention(16, 4, causal=True, chunk=1024)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with torch.no_grad():
        out = layer(torch.randn(1, 16384, 16))
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    assert out.shape == (1, 16384, 16) and grown < 4 * 2 ** 30, grown


def test_rotary_scores_depend_on_the_offset_only():
    torch.manual_seed(4)
    q, k = torch.randn(2, 1, 1, 1, 8).unbind(0)
    qs, ks = rotary(q.expand(1, 1, 20, 8).contiguous()), rotary(k.expand(1, 1, 20, 8).contiguous())
    s = qs[0, 0] @ ks[0, 0].T  # [20, 20]
    assert torch.allclose(s[5, 2], s[15, 12], atol=1e-5) and torch.allclose(s[3, 3], s[17, 17], atol=1e-5)
    assert not torch.allclose(s[5, 2], s[5, 3], atol=1e-3)


def test_dlr_real_keeps_lambda_real_and_in_the_unit_interval_while_it_learns():
    torch.manual_seed(5)
    layer = DLRReal(8, 16, dt_min=1e-3, dt_max=1e-1)
    assert all(not p.is_complex() for p in layer.parameters()) and layer.W.shape == (8, 16)
    opt = torch.optim.Adam(layer.parameters(), lr=0.05)
    for _ in range(20):
        opt.zero_grad()
        layer(torch.randn(2, 64, 8)).pow(2).mean().backward()
        opt.step()
    lam = torch.exp(-layer.Lambda_re_sqrt.detach() ** 2)
    assert torch.all(lam > 0) and torch.all(lam <= 1)
    K = layer.real_part_kernel(40).detach().double()  # against the power series, float64
    powers = lam.double()[:, None] ** torch.arange(40, dtype=torch.float64)[None]  # [N, L]
    assert torch.allclose(K, layer.W.detach().double() @ powers, rtol=1e-4, atol=1e-7)


def test_attention_block_has_the_papers_parameter_counts():
    """Table 1: a single ATTENTION layer 83K parameters at H = 128; Table 4: with 2 x FF 1.1M."""
    count = lambda cfg: sum(p.numel() for p in Model(cfg).parameters())  # noqa: E731
    assert round(count(ModelConfig(d_input=3, d_output=1, H=128, layer="attention")), -3) == 83_000
    assert round(count(ModelConfig(d_input=3, d_output=1, H=128, layer="attention", ff_layers=2)), -5) == 1_100_000


# Parameter counts of one layer, written from the official modules' definitions (docs/models.md
# "Block details"): ag1988/dlr dss.py (DLRKernel: Lambda_log_neg_re, Lambda_im [N], W [H, N, 2];
# DSSKernel: log_dt [H], Lambda [N, 2], W [H, N, 2]; the layer's D [H] and output Linear, GLU: 2H
# outputs); state-spaces/s4 s4.py (per channel: A real and imaginary [N/2] each, P, B, C [N/2]
# complex, one Delta; D [H]) and s4d.py (log_dt [H], A [H, N/2] complex, C [H, N/2] complex; B in
# the full S4D-LegS); attention.py (Q, K, V, O Linear(H, H), one temperature).
def _official_count(layer, H, N, glu):
    out = H * (2 * H if glu else H) + (2 * H if glu else H)
    ssm = {"dlr": 2 * N + 2 * H * N, "dss": H + 2 * N + 2 * H * N, "s4": H * (4 * N + 1),
           "s4d": H * (3 * N + 1), "attention": 4 * (H * H + H) + 1}[layer]
    return ssm + (0 if layer == "attention" else H) + out  # + D


@pytest.mark.parametrize("layer", ["dlr", "dss", "s4", "s4d", "attention"])
@pytest.mark.parametrize("glu", [False, True])
def test_layers_have_the_official_parameter_counts(layer, glu):
    from longsynth.models_ref.models.stack import make_layer

    H, N = 8, 16
    m = make_layer(ModelConfig(d_input=1, d_output=1, H=H, N=N, layer=layer, glu=glu))
    assert sum(p.numel() for p in m.parameters()) == _official_count(layer, H, N, glu)


def test_dlr_layer_has_table_1s_parameter_count():
    """Table 1: one DLR layer 1.1M parameters at H 128, N 4096; six 6.4M."""
    count = lambda n: sum(p.numel() for p in Model(ModelConfig(d_input=3, d_output=1, H=128, N=4096,  # noqa: E731
                                                               n_layers=n)).parameters())
    assert round(count(1), -5) == 1_100_000 and round(count(6), -5) == 6_400_000
