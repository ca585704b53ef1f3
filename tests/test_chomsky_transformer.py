"""``chomsky-transformer`` (models_ref/layers/chomsky_transformer.py, models_ref/models/chomsky.py; docs/models.md
"Chomsky hierarchy baselines"): the encoder against a plain float64 loop over rows, positions and heads, and
against the authors' Haiku model's outputs (tests/data/chomsky_transformer_authors.npz, made by
bench/chomsky_transformer_fixture.py); the parameter count of their model; bidirectional attention and
padding that changes nothing; the harness's causality check left out for it alone; one short evaluate. The
five ``positional_encodings`` (none, sin/cos, rotary, ALiBi, Transformer-XL relative; positional_encodings.py)
each against the loop written from its definition, padded, counted and rebuilt from a checkpoint's config."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

import torch  # a test dependency: its absence must fail, not skip

from longsynth.errors import LongsynthError  # noqa: E402
from longsynth.models_ref.models.chomsky import ChomskyModel, config  # noqa: E402
from longsynth.models_ref.layers.chomsky_transformer import ENCODINGS, TransformerEncoder, alibi_slopes  # noqa: E402

torch.set_num_threads(1)
FIXTURE = Path(__file__).parent / "data" / "chomsky_transformer_authors.npz"


def _w(lin):
    return lin.weight.detach().numpy(), None if lin.bias is None else lin.bias.detach().numpy()


def _norm(z, ln):
    g, b = _w(ln)
    mu = sum(z) / len(z)
    var = sum((zi - mu) ** 2 for zi in z) / len(z)
    return (z - mu) / math.sqrt(var + 1e-5) * g + b


def _sin_cos(p, n):
    """[sin(p w_j) for j < n / 2] + [cos(p w_j) ...], w_j = 10000^(-2j / n) (positional_encodings.py 99-116)."""
    return np.array([math.sin(p * 10000 ** (-2 * j / n)) for j in range(n // 2)] +
                    [math.cos(p * 10000 ** (-2 * j / n)) for j in range(n // 2)])


def _turn(z, p):
    """RoPE of one head's vector z at position p: the pair (z_2j, z_2j+1) turned by p 10000^(-j / (d / 2))."""
    out = np.array(z, dtype=float)
    for j in range(len(z) // 2):
        a = p * 10000 ** (-j / (len(z) // 2))
        out[2 * j] = z[2 * j] * math.cos(a) - z[2 * j + 1] * math.sin(a)
        out[2 * j + 1] = z[2 * j + 1] * math.cos(a) + z[2 * j] * math.sin(a)
    return out


def _slope(i, n):
    """ALiBi's slope of head i of n: 2^(-8 (i + 1) / c) for the first c = 2^floor(log2 n), then 2^(-4 (2k + 1) / c)
    for the k-th of the rest (the odd steps of 2c's sequence; the official ALiBi code)."""
    c = 2 ** int(math.floor(math.log2(n)))
    return 2.0 ** (-8 * (i + 1) / c) if i < c else 2.0 ** (-4 * (2 * (i - c) + 1) / c)


def twin(enc, x, keys):
    """The encoder by hand: per row, per position, per head, per key, in float64 (transformer.py 245-318,
    positional_encodings.py 99-116), the keys limited to the row's own positions; enc.pe picks the positions:
    sin/cos added at L - t, rotary turning q_t by t and k_s by s, ALiBi's m_i (-|t - s| + 1/2 [s < t]) after the
    scaling, Transformer-XL's (q_t + u) k_s + (q_t + v) W_r P(t - s), nothing (and no dropout) for none."""
    B, T, _ = x.shape
    E = enc.H
    out = np.zeros((B, T, E))
    for b in range(B):
        L = int(keys[b].sum())
        emb = _w(enc.embed)[0]
        h = np.zeros((T, E))
        for t in range(T):
            p = L - t  # positions count down from L
            h[t] = math.sqrt(E) * (emb @ x[b, t]) + (_sin_cos(p, E) if enc.pe == "sin_cos" else 0.0)
        for layer in enc.layers:
            nh, d = layer.heads, layer.d
            (Wq, _), (Wk, _), (Wv, _), (Wo, _) = _w(layer.q), _w(layer.k), _w(layer.v), _w(layer.o)
            (W1, b1), (W2, b2) = _w(layer.ff1), _w(layer.ff2)
            new = np.zeros((T, E))
            for t in range(T):
                heads = []
                for i in range(nh):
                    rows = slice(i * d, (i + 1) * d)
                    q = Wq[rows] @ h[t]
                    seen = [s for s in range(T) if keys[b, s]]
                    score = []
                    for s in seen:
                        k = Wk[rows] @ h[s]
                        if enc.pe == "rotary":
                            c = float(_turn(q, t) @ _turn(k, s))
                        elif enc.pe == "relative":
                            u, v = (layer.content_bias[i].detach().numpy(), layer.relative_bias[i].detach().numpy())
                            r = (_w(layer.rel)[0] @ _sin_cos(t - s, nh * d))[rows]
                            c = float((q + u) @ k + (q + v) @ r)
                        else:
                            c = float(q @ k)
                        c /= math.sqrt(d)
                        if enc.pe == "alibi":
                            c += _slope(i, nh) * (-abs(t - s) + (0.5 if s < t else 0.0))
                        score.append(c)
                    top = max(score)
                    e = [math.exp(c - top) for c in score]
                    heads.append(sum(e[j] / sum(e) * (Wv[rows] @ h[s]) for j, s in enumerate(seen)))
                a = _norm(h[t] + Wo @ np.concatenate(heads), layer.norm1)
                new[t] = _norm(a + W2 @ np.maximum(W1 @ a + b1, 0.0) + b2, layer.norm2)
            h = new
        out[b] = h
    return out


@pytest.mark.parametrize("heads,E", [(2, 8), (3, 6)])  # 3 heads: ALiBi's slopes off a power of 2
@pytest.mark.parametrize("pe", ENCODINGS)
def test_twin_encodings(pe, heads, E):
    torch.manual_seed(0)
    enc = TransformerEncoder(3, embedding_dim=E, num_layers=2, num_heads=heads, widening_factor=2,
                             positional_encodings=pe).double().eval()
    with torch.no_grad():
        for name, p in enc.named_parameters():  # u and v of Transformer-XL far off their N(0, 0.02) too
            scale = ".norm" in name and name.endswith("weight")
            p.copy_(torch.empty_like(p).uniform_(-1.0, 1.0) + (1.0 if scale else 0.0))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, 3, dtype=torch.float64, generator=g)
    keys = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])  # row 1: 4 positions, then padding
    got = enc(x, keys).detach().numpy()
    want = twin(enc, x.numpy(), keys.numpy())
    assert got.shape == (2, 7, E)
    assert np.abs(got - want).max() < 1e-10
    assert np.abs(want).max() > 0.5
    others = {}  # the same weights read under another encoding: each one's positions change the outputs
    for other in ("none", "sin_cos", "alibi", "rotary"):
        if other != pe:
            enc.pe = other
            for layer in enc.layers:
                layer.pe = other
            others[other] = np.abs(enc(x, keys).detach().numpy() - got).max()
    assert min(others.values()) > 1e-3, others


def test_alibi_slopes():
    """The ALiBi paper's (section 3): 8 heads 1/2, 1/4, ..., 1/256; 16 heads 1/2^0.5, 1/2^1, ..., 1/2^8."""
    assert alibi_slopes(8) == [2.0 ** -i for i in range(1, 9)]
    assert np.allclose(alibi_slopes(16), [2.0 ** (-i / 2) for i in range(1, 17)], rtol=1e-15, atol=0)
    assert alibi_slopes(6) == alibi_slopes(4) + [2.0 ** -1, 2.0 ** -3]  # the odd steps of 8 heads' 1/2 .. 1/256
    assert all(alibi_slopes(n) == [_slope(i, n) for i in range(n)] for n in range(1, 20))


def test_default_unchanged():
    """No positional_encodings and "sin_cos" build the same module from the same seed and give the same bits;
    only "relative" adds parameters; a name outside the five is refused."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 9, 4, generator=g)
    keys = torch.tensor([[True] * 9, [True] * 5 + [False] * 4, [True] + [False] * 8])
    built = {}
    for pe in (None, *ENCODINGS):
        torch.manual_seed(0)
        built[pe] = TransformerEncoder(4, **({} if pe is None else {"positional_encodings": pe})).eval()
    a, b = built[None].state_dict(), built["sin_cos"].state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    with torch.no_grad():
        assert torch.equal(built[None](x, keys), built["sin_cos"](x, keys))
        torch.manual_seed(3)
        y = built[None].train()(x, keys)
        torch.manual_seed(3)
        assert torch.equal(y, built["sin_cos"].train()(x, keys))
    for pe in ("none", "alibi", "rotary"):
        assert built[pe].state_dict().keys() == a.keys()
    extra = set(built["relative"].state_dict()) - set(a)
    assert extra == {f"layers.{i}.{n}" for i in range(5) for n in ("content_bias", "relative_bias", "rel.weight")}
    with pytest.raises(ValueError, match="positional_encodings"):
        TransformerEncoder(4, positional_encodings="SIN_COS")


@pytest.mark.parametrize("pe", ENCODINGS)
def test_embedding_dropout(pe):
    """Dropout on the embedding only with sin/cos (transformer.py 280-283): with no layer, training changes the
    output for "sin_cos" alone, and the others give sqrt(E) W_emb x bare."""
    torch.manual_seed(0)
    enc = TransformerEncoder(3, num_layers=0, dropout_prob=0.5, positional_encodings=pe).double().train()
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    keys = torch.ones(2, 5, dtype=torch.bool)
    with torch.no_grad():
        y = enc(x, keys)
        bare = enc.embed(x) * 8.0
    assert (pe == "sin_cos") == (not torch.equal(y, enc.eval()(x, keys)))
    assert (pe == "sin_cos") == (not torch.equal(y, bare))


# make_transformer_encoder's defaults (models/transformer.py 453-467) on I input symbols + the empty token and O
# outputs: the embedding (I + 1) * 64 without bias; per layer q, k, v, o 4 * 64 * 64 without bias, two
# LayerNorms 2 * (64 + 64), the MLP 64 * 256 + 256 + 256 * 64 + 64; 5 layers = 5 * 49,728 = 248,640; the head
# hk.Linear(O) 64 * O + O. Haiku's counts of their module (bench: hk.transform of constants.py's
# transformer_encoder wrapped by make_model_with_empty_targets): 248,962 (reverse string, I 2, O 2),
# 249,221 (cycle navigation, I 3, O 5), 249,733 (solve equation, I 11, O 5).
LAYER = 4 * 64 * 64 + 2 * (64 + 64) + (64 * 256 + 256) + (256 * 64 + 64)
COUNTS = {
    "chomsky-reverse-string": (2 + 1) * 64 + 5 * LAYER + 64 * 2 + 2,
    "chomsky-cycle-navigation": (3 + 1) * 64 + 5 * LAYER + 64 * 5 + 5,
    "chomsky-solve-equation": (11 + 1) * 64 + 5 * LAYER + 64 * 5 + 5,
}


def _model(task="chomsky-reverse-string", pe=None):
    from longsynth.models_ref.protocols.registry import architecture

    from longsynth.models_ref.models.chomsky import SIZES

    torch.manual_seed(0)
    arch = architecture(task, "tiny", "chomsky-transformer")["arch"]
    arch = arch if pe is None else {**arch, "positional_encodings": pe}
    return ChomskyModel(config("chomsky-transformer", task, SIZES[task][0] + 2, arch))


@pytest.mark.parametrize("task", list(COUNTS))
def test_parameter_count(task):
    assert COUNTS == {"chomsky-reverse-string": 248_962, "chomsky-cycle-navigation": 249_221,
                      "chomsky-solve-equation": 249_733}
    model = _model(task)
    assert sum(p.numel() for p in model.parameters()) == COUNTS[task]
    drops = [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert len(model.core.layers) == 5 and model.core.layers[0].heads == 8 and drops == [0.1] * 6
    w = model.core.embed.weight.detach()
    assert float(w.abs().max()) <= 0.04 and 0.01 < float(w.std()) < 0.03  # hk TruncatedNormal(0.02), 2 sigma



# Transformer-XL's per layer (positional_encodings.py 269-294): relpos_contentbias and relpos_relativebias [8, 8], the
# bias-free hk.Linear of the 64 sin/cos features to h d = 64; the other four encodings have no parameter.
RELATIVE = 5 * (2 * 8 * 8 + 64 * 64)


@pytest.mark.parametrize("pe", ENCODINGS)
@pytest.mark.parametrize("task", list(COUNTS))
def test_parameter_count_encodings(task, pe):
    assert RELATIVE == 21_120
    model = _model(task, pe)
    assert sum(p.numel() for p in model.parameters()) == COUNTS[task] + (RELATIVE if pe == "relative" else 0)
    if pe == "relative":
        layer = model.core.layers[0]
        u, v, w = layer.content_bias.detach(), layer.relative_bias.detach(), layer.rel.weight.detach()
        assert u.shape == v.shape == (8, 8) and w.shape == (64, 64)
        assert 0.01 < float(torch.cat([u, v]).std()) < 0.03 and float(torch.cat([u, v]).abs().max()) > 0.04  # not cut
        assert float(w.abs().max()) <= 0.25 and 0.09 < float(w.std()) < 0.13  # hk.Linear: 1 / sqrt(64), cut at 2 sigma


@pytest.mark.parametrize("pe", ENCODINGS)
def test_config_rebuilds(pe):
    """The encoding travels in ChomskyConfig.arch: a checkpoint's model_config (through JSON) rebuilds it, and
    its weights load strictly and give the same outputs; a model of another encoding gives others."""
    from longsynth.models_ref.training.checkpoints import _model_of

    model = _model("chomsky-reverse-string", pe).double().eval()
    assert model.core.pe == pe and all(layer.pe == pe for layer in model.core.layers)
    again = _model_of(json.loads(json.dumps(model.cfg.to_dict())))
    assert again.cfg == model.cfg and again.core.pe == pe
    again.load_state_dict(model.state_dict())  # strict
    x = torch.tensor([[0, 1, 1, 2, 2, 2, 3, 3], [1, 0, 0, 1, 2, 2, 2, 2]])
    with torch.no_grad():
        assert torch.equal(again.double().eval()(x), model(x))
        other = _model("chomsky-reverse-string", "alibi" if pe == "sin_cos" else "sin_cos").double().eval()
        state = {k: v for k, v in model.state_dict().items() if k in other.state_dict()}
        other.load_state_dict(state)  # the shared weights
        assert (other(x) - model(x)).abs().max() > 1e-6


def test_authors_forward():
    """Their make_transformer_encoder + make_model_with_empty_targets (Haiku, float64, dropout 0) on
    ReverseString rows of lengths 1, 2, 5, 9, one length per call; ours on one padded batch of all of them
    (docs/tasks/chomsky.md "Row layout": input, n empty tokens 2, padding 3), read at the n output positions."""
    z = np.load(FIXTURE)
    meta = json.loads(str(z["meta"]))
    model = ChomskyModel(config("chomsky-transformer", "chomsky-reverse-string", 4, dict(meta["sizes"])))
    state = {k[len("state/"):]: torch.from_numpy(z[k]) for k in z.files if k.startswith("state/")}
    model.load_state_dict(state)  # strict: every weight of ours is one of theirs and back
    model = model.double().eval()
    width = 2 * max(meta["lengths"]) + 1
    rows, want, ns = [], [], []
    for n in meta["lengths"]:
        for r in range(meta["rows"]):
            rows.append(list(z[f"input/{n}"][r]) + [2] * n + [3] * (width - 2 * n))
            want.append(z[f"output/{n}"][r])
            ns.append(n)
    with torch.no_grad():
        y = model(torch.tensor(rows)).numpy()
    err = max(np.abs(y[i, n:2 * n, :2] - w).max() for i, (n, w) in enumerate(zip(ns, want)))
    assert err < 1e-12
    assert min(np.abs(w).max() for w in want) > 0.1 and (y[..., 2:] == -1e4).all()


@pytest.mark.parametrize("pe", [None, *ENCODINGS])
def test_bidirectional_and_padding(pe):
    """Reverse string, n = 3: the output at position 3 (the first empty token) moves when the last input
    (position 2) changes, and the input's first position's output moves too: every position sees every other.
    More padding, or a longer row beside it, changes none of a row's outputs; a padding id read as a token does.
    Each of the five encodings (None: the default)."""
    model = _model(pe=pe).double().eval()
    x = torch.tensor([[0, 1, 1, 2, 2, 2, 3, 3]])
    with torch.no_grad():
        y = model(x)
        z = x.clone()
        z[0, 2] = 0
        y2 = model(z)
        assert (y[0, 0] - y2[0, 0]).abs().max() > 1e-6 and (y[0, 3:6] - y2[0, 3:6]).abs().max() > 1e-6
        bare = model(x[:, :6])
        wide = model(torch.tensor([[0, 1, 1, 2, 2, 2] + [3] * 10, [1] * 8 + [2] * 8]))
        assert (bare[0] - y[0, :6]).abs().max() < 1e-12 and (wide[0, :6] - bare[0]).abs().max() < 1e-12
        w = x.clone()
        w[0, 6] = 2  # one more empty token: one key more (and, with sin/cos, positions that count from 7)
        assert (model(w)[0, :6] - bare[0]).abs().max() > 1e-6


def test_harness_check():
    """The chomsky protocols are causal for the recurrent models and ``whole_row``: the check refuses the encoder
    on a protocol without that flag, and on these records it (returns False) instead; a user's encoder likewise,
    the LSTM is seen causal."""
    from longsynth.models_ref.models import factories
    from longsynth.models_ref.evaluation.harness import Job, check_model, prepare

    p = prepare(Job(model="chomsky-transformer", protocol="chomsky-reverse-string", task="chomsky-reverse-string",
                    scale="tiny"))
    assert p.spec.causal and p.protocol.whole_row
    factory = factories.BUILTIN["chomsky-transformer"]
    module, x = factory(p.spec), p.sources[0](0)[0][:2]  # at init: the check's scale ignores the -1e4 channels
    with pytest.raises(LongsynthError, match="not causal"):
        check_model(module, p.spec, x)
    assert check_model(module, factories.checked_spec(factory, p.spec), x, whole_row=True) is False
    assert check_model(module, factories.checked_spec(lambda spec: module, p.spec), x, whole_row=True) is False
    lstm = factories.BUILTIN["lstm"]
    assert check_model(lstm(p.spec), factories.checked_spec(lstm, p.spec), x, whole_row=True) is True
    tape = factories.BUILTIN["tape-rnn"]  # reads the row's length: not checked (None), never refused
    assert check_model(tape(p.spec), factories.checked_spec(tape, p.spec), x, whole_row=True) is None


def test_refuses_other_tasks():
    with pytest.raises(LongsynthError):
        config("chomsky-transformer", "parity", 4, {})


def test_evaluate_end_to_end(tmp_path):
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    from longsynth.models_ref.evaluation.protocol import resolve

    r = CliRunner().invoke(cli, ["evaluate", "chomsky-transformer", "--suite", "chomsky-parity-check", "--scale",
                                 "tiny", "--steps", "3", "--out", str(tmp_path / "out")])
    torch.set_num_threads(1)
    assert r.exit_code == 0, r.output
    row = json.loads((tmp_path / "out" / "report.json").read_text())["rows"][0]
    lengths = {int(n) for n in resolve("chomsky-parity-check", "tiny").test_sets}
    assert {c["at"] for c in row["by_length"] if c["kind"] == "test length"} == lengths
    assert 0.0 <= row["test_mean"] <= 1.0
