"""seq-icl-transformer and seq-icl-lstm (models_ref/models/zoology.py ``state_mixer="mlp"``,
models_ref/models/seq_icl.py; docs/models.md "RegBench's models: seq-icl-transformer, seq-icl-lstm"):
Akyürek et al.'s Transformer and LSTM as berlino/seq_icl @ 9b9223d builds them.

Their own models' logits from tests/data/seq_icl_models.npz (bench/seq_icl_models.py ran their simple_lm.py; no
checkout needed), their parameter counts at transformer.yaml's and lstm.yaml's settings (pinned, from their code),
twins that run every position with explicit loops (attention over the prefix, the LSTM cell step by step), the
init laws, the optimizer's single group, the "timm-cosine" schedule, the built-ins' presets and refusals, and the
regbench paper and laptop rows."""
import hashlib
import math
import os

import numpy as np
import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.errors import LongsynthError
from longsynth.models_ref.models.seq_icl import SeqIclLSTM, SeqIclLSTMConfig
from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig
from longsynth.spec import ModelSpec

torch.set_num_threads(1)
FIXTURE = os.path.join(os.path.dirname(__file__), "data", "seq_icl_models.npz")  # seq_icl @ 9b9223d
# their sources that ran for the fixture (SHA-256 of the files at 9b9223d)
SOURCES = ("src/models/sequence/simple_lm.py", "src/models/sequence/rnn/lstm.py")


def _transformer(V=20, T=40, D=16, L=2, heads=2, d_inner=64):
    return ZoologyAttention(ZoologyConfig(vocab_size=V, max_position_embeddings=T, d_model=D, n_layers=L,
                                          num_heads=heads, state_mixer="mlp", d_inner=d_inner))


def _paper_transformer():  # transformer.yaml: lm_simple 128 x 8, 2 heads, d_inner 512, __l_max 4098, V 20
    return _transformer(T=4098, D=128, L=8, d_inner=512)


def _loaded(kind):
    """Ours with their weights of the fixture, float64, and (x, their logits)."""
    f = np.load(FIXTURE)
    sd = {k[len(f"{kind}/sd/"):]: torch.from_numpy(f[k]).double() for k in f.files if k.startswith(f"{kind}/sd/")}
    m = _transformer() if kind == "transformer" else SeqIclLSTM(SeqIclLSTMConfig(vocab_size=20, d_model=8))
    m = m.double().eval()
    m.load_state_dict(sd, strict=True)
    return m, torch.from_numpy(f[f"{kind}/x"]), torch.from_numpy(f[f"{kind}/y"])


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_their_models_logits(kind):
    """Their SimpleLMHeadModel (V 20, width 16, 2 blocks of 2 heads, MLP 64, 40 positions) and
    SimpleLMHeadModelNoFFN (width 8, 2 LSTMs), weights moved off their init by 0.1 N(0, 1), run in float64 by
    bench/seq_icl_models.py: ours with the same weights (every tensor, strictly) gives their logits."""
    m, x, want = _loaded(kind)
    with torch.no_grad():
        got = m(x)
    assert got.shape == want.shape == (2, 24, 20)
    assert torch.allclose(got, want, rtol=0, atol=1e-12), float((got - want).abs().max())


def test_fixture_records_their_sources():
    f = np.load(FIXTURE)
    for src in SOURCES:
        digest = str(f[f"sha256/{src}"])
        assert len(digest) == 64 and int(digest, 16) >= 0
    checkout = os.environ.get("SEQ_ICL_CHECKOUT", "/tmp/seq_icl")
    if os.path.isdir(os.path.join(checkout, "src")):  # where a checkout is at hand, it is the one that ran
        for src in SOURCES:
            with open(os.path.join(checkout, src), "rb") as fh:
                assert hashlib.sha256(fh.read()).hexdigest() == str(f[f"sha256/{src}"])


def test_parameter_counts_are_theirs():
    # their SimpleLMHeadModel at transformer.yaml's settings, built from their simple_lm.py by
    # bench/seq_icl_models.py: 2,113,536 parameters (the tied lm_head once); by module: word embeddings
    # V D (GPT2Embeddings 207), positions 4098 D (217), per Block Wqkv 3D^2 + 3D and out_proj D^2 + D (MHA 132,
    # 146), norm1 and norm2 4D, Mlp fc1 D d_inner + d_inner and fc2 d_inner D + D (248, 250); ln_f 2D (475)
    m = _paper_transformer()
    V, P, D, L, F = 20, 4098, 128, 8, 512
    per_block = 3 * D * D + 3 * D + D * D + D + 4 * D + D * F + F + F * D + D
    assert sum(p.numel() for p in m.parameters()) == V * D + P * D + L * per_block + 2 * D == 2_113_536
    # their SimpleLMHeadModelNoFFN at lstm.yaml's settings: 17,536 (E, and two nn.LSTM(32, 32) of 4D(2D) + 8D)
    lstm = SeqIclLSTM(SeqIclLSTMConfig(vocab_size=20))
    assert sum(p.numel() for p in lstm.parameters()) == 20 * 32 + 2 * (8 * 32 * 32 + 8 * 32) == 17_536


def test_names_and_shapes_at_their_settings():
    m = _paper_transformer()
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert len(shapes) == 4 + 8 * 12  # E, P, ln_f (2); per block 2 norms, Wqkv, out_proj, fc1, fc2 (weight, bias)
    assert shapes["word.weight"] == (20, 128) and shapes["position.weight"] == (4098, 128)
    assert shapes["blocks.7.mixer.Wqkv.weight"] == (384, 128) and shapes["blocks.7.mixer.out_proj.weight"] == (128, 128)
    assert shapes["blocks.7.state_mixer.fc1.weight"] == (512, 128)
    assert shapes["blocks.7.state_mixer.fc2.weight"] == (128, 512)
    assert m.blocks[0].drop1.p == 0.1 and m.blocks[1].drop1.p == 0.0 and m.blocks[3].drop2.p == 0.0
    assert m.blocks[0].mixer.p == 0.1 and m.blocks[0].mixer.heads == 2 and m.drop_f.p == 0.0
    assert all(n.eps == 1e-5 for n in m.modules() if isinstance(n, torch.nn.LayerNorm))
    lstm = SeqIclLSTM(SeqIclLSTMConfig(vocab_size=20))
    assert {n: tuple(p.shape) for n, p in lstm.named_parameters()} == {
        "word.weight": (20, 32), **{f"layers.{i}.lstm.{k}": s for i in range(2) for k, s in (
            ("weight_ih_l0", (128, 32)), ("weight_hh_l0", (128, 32)), ("bias_ih_l0", (128,)), ("bias_hh_l0", (128,)))}}


def _perturbed(m, seed=0):
    torch.manual_seed(seed)
    m = m.double().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return m


def _ln(v, w, b):  # one position's LayerNorm, eps 1e-5
    mu = v.mean()
    return (v - mu) / torch.sqrt(((v - mu) ** 2).mean() + 1e-5) * w + b


def _gelu_tanh(u):
    return 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))


def test_transformer_twin_position_by_position():
    """Each position t through explicit loops: attention over keys 0..t only (no mask), each head apart, LayerNorm
    and tanh-GELU by their formulas, the prenorm residual of simple_lm.py 314-337, ln_f and the tied head."""
    m = _perturbed(_transformer(T=12, D=8, L=2, heads=2, d_inner=12))
    x = torch.randint(0, 20, (2, 12))
    with torch.no_grad():
        want = m(x)
        for b in range(2):
            T = x.shape[1]
            h = [m.word.weight[x[b, t]] + m.position.weight[t] for t in range(T)]
            r = [torch.zeros(8, dtype=torch.float64) for _ in range(T)]
            for blk in m.blocks:
                r = [h[t] + r[t] for t in range(T)]
                u = [_ln(r[t], blk.norm1.weight, blk.norm1.bias) for t in range(T)]
                qkv = [blk.mixer.Wqkv.weight @ u[t] + blk.mixer.Wqkv.bias for t in range(T)]
                out = []
                for t in range(T):
                    heads = []
                    for hd in range(2):
                        q = qkv[t][hd * 4:(hd + 1) * 4]
                        ks = [qkv[s][8 + hd * 4:8 + (hd + 1) * 4] for s in range(t + 1)]
                        vs = [qkv[s][16 + hd * 4:16 + (hd + 1) * 4] for s in range(t + 1)]
                        scores = torch.stack([q @ k / 2.0 for k in ks])  # 1 / sqrt(head_dim 4)
                        a = torch.exp(scores - scores.max())
                        a = a / a.sum()
                        heads.append(sum(a[s] * vs[s] for s in range(t + 1)))
                    out.append(blk.mixer.out_proj.weight @ torch.cat(heads) + blk.mixer.out_proj.bias)
                r = [out[t] + r[t] for t in range(T)]
                mlp = blk.state_mixer
                h = [mlp.fc2.weight @ _gelu_tanh(mlp.fc1.weight @ _ln(r[t], blk.norm2.weight, blk.norm2.bias)
                                                 + mlp.fc1.bias) + mlp.fc2.bias for t in range(T)]
            for t in range(T):
                logits = m.word.weight @ _ln(h[t] + r[t], m.ln_f.weight, m.ln_f.bias)
                assert torch.allclose(logits, want[b, t], rtol=0, atol=1e-10)


def test_lstm_twin_step_by_step():
    """The last LSTM over the embeddings, one step at a time (torch's gate order i, f, g, o), and the tied head:
    the first LSTM's output is never read (their forward, simple_lm.py 589-590)."""
    m = _perturbed(SeqIclLSTM(SeqIclLSTMConfig(vocab_size=20, d_model=6, n_layers=2)))
    x = torch.randint(0, 20, (2, 10))
    with torch.no_grad():
        want = m(x)
        lstm = m.layers[1].lstm
        for b in range(2):
            hs, c = torch.zeros(6, dtype=torch.float64), torch.zeros(6, dtype=torch.float64)
            for t in range(10):
                g = lstm.weight_ih_l0 @ m.word.weight[x[b, t]] + lstm.bias_ih_l0 + lstm.weight_hh_l0 @ hs + \
                    lstm.bias_hh_l0
                i, f, gg, o = torch.sigmoid(g[:6]), torch.sigmoid(g[6:12]), torch.tanh(g[12:18]), torch.sigmoid(g[18:])
                c = f * c + i * gg
                hs = o * torch.tanh(c)
                assert torch.allclose(m.word.weight @ hs, want[b, t], rtol=0, atol=1e-12)
        with torch.no_grad():  # the first LSTM changes nothing
            m.layers[0].lstm.weight_ih_l0.add_(1.0)
        assert torch.equal(m(x), want)


def test_init_is_theirs():
    """_init_weights (simple_lm.py 415-444): Linear and Embedding N(0, 0.02), biases 0, out_proj.weight and
    fc2.weight N(0, 0.02 / sqrt(2 n_layers)), LayerNorms (1, 0), the head tied to E; the LSTM model: no
    _init_weights, E N(0, 1), LSTMLayer's Keras-like init (lstm.py 28-49). bench/seq_icl_models.py compares a fresh
    theirs and a fresh ours group by group at their sizes."""
    torch.manual_seed(0)
    m = _transformer(V=2000, T=512, D=128, L=8, d_inner=512)
    cat = lambda suffix: torch.cat([p.flatten() for n, p in m.named_parameters() if n.endswith(suffix)])  # noqa: E731
    for suffix, std in (("word.weight", 0.02), ("position.weight", 0.02), ("Wqkv.weight", 0.02),
                        ("fc1.weight", 0.02), ("out_proj.weight", 0.005), ("fc2.weight", 0.005)):
        assert abs(cat(suffix).std().item() - std) < 0.03 * std, suffix
    assert not cat("bias").any() and (cat("norm1.weight") == 1).all() and (cat("ln_f.weight") == 1).all()
    torch.manual_seed(0)
    lstm = SeqIclLSTM(SeqIclLSTMConfig(vocab_size=2000, d_model=32))
    assert abs(lstm.word.weight.std().item() - 1.0) < 0.03
    for layer in lstm.layers:
        w_ih, w_hh, b_ih = layer.lstm.weight_ih_l0, layer.lstm.weight_hh_l0, layer.lstm.bias_ih_l0
        assert w_ih.abs().max() <= math.sqrt(6 / (32 + 128)) and abs(w_ih.std().item() - math.sqrt(2 / 160)) < 0.01
        assert torch.allclose(w_hh.T @ w_hh, torch.eye(32), atol=1e-5)  # orthogonal columns
        assert (b_ih[32:64] == 1).all() and not b_ih[:32].any() and not b_ih[64:].any()
        assert not layer.lstm.bias_hh_l0.any()
    assert [p.requires_grad for p in lstm.layers[0].parameters()] == [False] * 4
    assert all(p.requires_grad for p in lstm.layers[1].parameters())


def test_every_trained_parameter_is_decayed_in_one_group():
    """Their AdamW(self.parameters(), lr, weight_decay=0.1) (train.py 756-786; no optimizer_param_grouping in the
    DFA configs): one group, embeddings, norms and biases decayed too."""
    from longsynth.models_ref.training.trainer import TrainConfig, build_optimizer

    cfg = TrainConfig(steps=10, lr=5e-4, weight_decay=0.1)
    for m in (_transformer(), SeqIclLSTM(SeqIclLSTMConfig(vocab_size=20))):
        opt = build_optimizer(m, cfg)
        assert [g["weight_decay"] for g in opt.param_groups] == [0.1]
        assert {id(p) for p in opt.param_groups[0]["params"]} == {id(p) for p in m.parameters() if p.requires_grad}


def test_timm_cosine_is_their_schedule():
    """timm's CosineLRScheduler (cosine_lr.py _get_lr: warmup_lr_init + t (lr - warmup_lr_init) / warmup_t below
    warmup_t, else lr_min + (lr - lr_min)(1 + cos(pi t / t_initial)) / 2, warmup_prefix False) at base.yaml's
    settings, stepped once an update from 0 as seq_icl's TimmCosineLRScheduler does."""
    from longsynth.models_ref.evaluation.protocol import resolve
    from longsynth.models_ref.training.config import lr_factor

    p = resolve("regbench", "paper")
    cfg = p.train_config(lr=p.lr, seed=0)
    assert (cfg.schedule, cfg.steps, cfg.warmup_steps) == ("timm-cosine", 31_400, 3140)

    def timm(t, lr=5e-4, init=1e-6, warmup=3140, t_initial=31_400, lr_min=5e-5):
        if t < warmup:
            return init + t * (lr - init) / warmup
        return lr_min + 0.5 * (lr - lr_min) * (1 + math.cos(math.pi * t / t_initial))

    for t in (0, 1, 1000, 3139, 3140, 3141, 15_700, 31_399):
        assert lr_factor(t, cfg) * p.lr == pytest.approx(timm(t), rel=1e-12, abs=0), t
    assert lr_factor(0, cfg) * p.lr == pytest.approx(1e-6) and lr_factor(31_399, cfg) == pytest.approx(0.1, abs=1e-8)
    assert lr_factor(3140, cfg) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi / 10)))  # 0.978: no jump to 1
    short = p.train_config(lr=p.lr, seed=0, steps=314)  # a shortened run keeps the warmup's share
    assert short.warmup_steps == 31 and lr_factor(313, short) == pytest.approx(0.1, abs=1e-4)


def _spec(**change):
    fields = dict(task="regbench", protocol="regbench", scale="paper", objective="tokens", readout="positions",
                  d_output=20, seq_len=948, target_len=948, causal=True, vocab_size=20)
    return ModelSpec(**{**fields, **change})


def test_builtins_at_their_settings():
    from longsynth.models_ref.models import factories

    factory, identity = factories.load("seq-icl-transformer")
    assert identity == {"model": "seq-icl-transformer", "sha256": None}
    cfg = factory.config(_spec())
    assert (cfg.d_model, cfg.n_layers, cfg.num_heads, cfg.d_inner, cfg.max_position_embeddings, cfg.state_mixer,
            cfg.attn_dropout, cfg.embed_dropout, cfg.resid_dropout) == (128, 8, 2, 512, 4098, "mlp", 0.1, 0.1, 0.0)
    assert factory.lr(_spec()) == 5e-4 and factory.config(_spec(scale="laptop")) == cfg
    factory, _ = factories.load("seq-icl-lstm")
    assert factory.config(_spec()) == SeqIclLSTMConfig(vocab_size=20, d_model=32, n_layers=2)
    m = factory(_spec(scale="laptop"))
    assert isinstance(m, SeqIclLSTM) and m(torch.randint(0, 20, (2, 30))).shape == (2, 30, 20)
    assert {"seq-icl-transformer", "seq-icl-lstm"} <= set(
        __import__("longsynth.models_ref.evaluation.validate", fromlist=["MODELS"]).MODELS)


@pytest.mark.parametrize("name", ["seq-icl-transformer", "seq-icl-lstm"])
@pytest.mark.parametrize("change", [dict(task="parity", protocol="parity"), dict(causal=False),
                                    dict(task="mqar", protocol="mqar-64", scale="tiny"), dict(scale="tiny")])
def test_builtins_refuse_in_one_line(name, change):
    from longsynth.models_ref.models.factories import BUILTIN

    with pytest.raises(LongsynthError) as e:
        BUILTIN[name](_spec(**change))
    assert "\n" not in str(e.value) and name in str(e.value)


@pytest.mark.parametrize("make", [lambda: _transformer(), lambda: SeqIclLSTM(SeqIclLSTMConfig(vocab_size=20))])
def test_checkpoint_rebuilds_them(tmp_path, make):
    from longsynth.models_ref.training.checkpoints import load_model

    m = make().eval()
    torch.save({"model_config": m.cfg.to_dict(), "model": m.state_dict()}, tmp_path / "c.pt")
    back, _ = load_model(str(tmp_path / "c.pt"))
    assert type(back) is type(m)
    x = torch.randint(0, 20, (2, 12))
    assert torch.equal(back.eval()(x), m(x))


def test_regbench_paper_and_laptop_rows():
    """The paper row is seq_icl's base.yaml; the laptop row the same with 300 steps; only their two models have
    presets there (our other built-ins' blocks are not theirs)."""
    from longsynth.models_ref.protocols.registry import ARCHITECTURES, PAPER_MISSING, protocol_row

    _, paper = protocol_row("regbench", "paper")
    assert {k: paper[k] for k in ("batch_size", "steps", "lr", "weight_decay", "schedule", "warmup_steps",
                                  "warmup_lr_init", "min_lr", "eval_every", "eval_batches", "train_samples")} == dict(
        batch_size=32, steps=31_400, lr=5e-4, weight_decay=0.1, schedule="timm-cosine", warmup_steps=3140,
        warmup_lr_init=1e-6, min_lr=5e-5, eval_every=157, eval_batches=8, train_samples=5000)
    assert paper["dfa_metric"] and paper["data"] == {} and "Differs:" in paper["source"]
    _, laptop = protocol_row("regbench", "laptop")
    assert (laptop["steps"], laptop["warmup_steps"], laptop["eval_every"]) == (300, 30, 30)
    assert {k for k in paper if paper[k] != laptop[k]} == {"steps", "warmup_steps", "eval_every", "source"}
    for scale in ("paper", "laptop"):
        assert sorted(m for p, s, m in ARCHITECTURES if (p, s) == ("regbench", scale)) == [
            "seq-icl-lstm", "seq-icl-transformer"]
    assert not any(m.startswith("seq-icl") for p, s, m in ARCHITECTURES if (p, s) == ("regbench", "tiny"))
    assert "not entered" in PAPER_MISSING["regbench"] and "seq-icl-transformer" in PAPER_MISSING["regbench"]
