"""``chomsky-transformer`` (models_ref/layers/chomsky_transformer.py, models_ref/models/chomsky.py; docs/models.md
"Chomsky hierarchy baselines"): the encoder against a plain float64 loop over rows, positions and heads, and
against the authors' Haiku model's outputs (tests/data/chomsky_transformer_authors.npz, made by
bench/chomsky_transformer_fixture.py); the parameter count of their model; bidirectional attention and
padding that changes nothing; the harness's causality check left out for it alone; one short evaluate."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

import torch  # a test dependency: its absence must fail, not skip

from longsynth.errors import LongsynthError  # noqa: E402
from longsynth.models_ref.models.chomsky import ChomskyModel, config  # noqa: E402
from longsynth.models_ref.layers.chomsky_transformer import TransformerEncoder  # noqa: E402

torch.set_num_threads(1)
FIXTURE = Path(__file__).parent / "data" / "chomsky_transformer_authors.npz"


def _w(lin):
    return lin.weight.detach().numpy(), None if lin.bias is None else lin.bias.detach().numpy()


def _norm(z, ln):
    g, b = _w(ln)
    mu = sum(z) / len(z)
    var = sum((zi - mu) ** 2 for zi in z) / len(z)
    return (z - mu) / math.sqrt(var + 1e-5) * g + b


def twin(enc, x, keys):
    """The encoder by hand: per row, per position, per head, per key, in float64 (transformer.py 245-318,
    positional_encodings.py 99-116), the keys limited to the row's own positions."""
    B, T, _ = x.shape
    E = enc.H
    out = np.zeros((B, T, E))
    for b in range(B):
        L = int(keys[b].sum())
        emb = _w(enc.embed)[0]
        h = np.zeros((T, E))
        for t in range(T):
            p = L - t  # positions count down from L
            pe = [math.sin(p * 10000 ** (-2 * j / E)) for j in range(E // 2)] + \
                 [math.cos(p * 10000 ** (-2 * j / E)) for j in range(E // 2)]
            h[t] = math.sqrt(E) * (emb @ x[b, t]) + np.array(pe)
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
                    score = [float(q @ (Wk[rows] @ h[s])) / math.sqrt(d) for s in seen]
                    top = max(score)
                    e = [math.exp(c - top) for c in score]
                    heads.append(sum(e[j] / sum(e) * (Wv[rows] @ h[s]) for j, s in enumerate(seen)))
                a = _norm(h[t] + Wo @ np.concatenate(heads), layer.norm1)
                new[t] = _norm(a + W2 @ np.maximum(W1 @ a + b1, 0.0) + b2, layer.norm2)
            h = new
        out[b] = h
    return out


def test_twin():
    torch.manual_seed(0)
    enc = TransformerEncoder(3, embedding_dim=8, num_layers=2, num_heads=2, widening_factor=2).double().eval()
    with torch.no_grad():
        for name, p in enc.named_parameters():  # LayerNorm's scale and offset off 1 and 0 too
            scale = ".norm" in name and name.endswith("weight")
            p.copy_(torch.empty_like(p).uniform_(-1.0, 1.0) + (1.0 if scale else 0.0))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, 3, dtype=torch.float64, generator=g)
    keys = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])  # row 1: 4 positions, then padding
    got = enc(x, keys).detach().numpy()
    want = twin(enc, x.numpy(), keys.numpy())
    assert got.shape == (2, 7, 8)
    assert np.abs(got - want).max() < 1e-10
    assert np.abs(want).max() > 0.5


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


def _model(task="chomsky-reverse-string"):
    from longsynth.models_ref.protocols.registry import architecture

    from longsynth.models_ref.models.chomsky import SIZES

    torch.manual_seed(0)
    arch = architecture(task, "tiny", "chomsky-transformer")["arch"]
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


def test_bidirectional_and_padding():
    """Reverse string, n = 3: the output at position 3 (the first empty token) moves when the last input
    (position 2) changes, and the input's first position's output moves too: every position sees every other.
    More padding, or a longer row beside it, changes none of a row's outputs; a padding id read as a token does."""
    model = _model().double().eval()
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
        w[0, 6] = 2  # one more empty token: the row is longer, its positions count from 7
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
