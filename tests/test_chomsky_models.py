"""The Chomsky-hierarchy paper's built-ins (models_ref/models/chomsky.py, models_ref/layers/{rnn,lstm,stack_rnn,
tape_rnn}.py; docs/models.md "Chomsky hierarchy baselines"): each layer against a plain float64 loop of its
recurrence written from the authors' code (google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be),
causality and shapes, parameter counts, and one short evaluate."""
import math

import numpy as np
import pytest

import torch  # a test dependency: its absence must fail, not skip

from longsynth.models_ref.models.chomsky import ChomskyModel, config  # noqa: E402
from longsynth.models_ref.layers.lstm import LSTM  # noqa: E402
from longsynth.models_ref.layers.rnn import VanillaRNN  # noqa: E402
from longsynth.models_ref.layers.stack_rnn import StackRNN  # noqa: E402
from longsynth.models_ref.layers.tape_rnn import TapeRNN  # noqa: E402

torch.set_num_threads(1)
B, L, D, H = 2, 7, 3, 5


def _w(lin):
    return lin.weight.detach().numpy(), lin.bias.detach().numpy()


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _layer(cls, **kw):
    torch.manual_seed(0)
    layer = cls(D, H, **kw).double()
    for p in layer.parameters():  # larger than torch's init, so every nonlinearity is exercised
        torch.nn.init.uniform_(p, -1.0, 1.0)
    return layer


def _x():
    return torch.randn(B, L, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))


def twin_rnn(layer, x):
    (Wx, bx), (Wh, bh) = _w(layer.input_to_hidden), _w(layer.hidden_to_hidden)
    out = np.zeros((B, L, H))
    for b in range(B):
        h = np.zeros(H)
        for t in range(L):
            h = np.maximum(0.0, Wx @ x[b, t] + bx + Wh @ h + bh)  # hk.VanillaRNN
            out[b, t] = h
    return out


def twin_lstm(layer, x):
    W, bias = _w(layer.gates)
    out = np.zeros((B, L, H))
    for b in range(B):
        h, c = np.zeros(H), np.zeros(H)
        for t in range(L):
            z = W @ np.concatenate([x[b, t], h]) + bias
            i, g, f, o = z[:H], z[H:2 * H], z[2 * H:3 * H], z[3 * H:]  # hk.LSTM's split order
            c = _sig(f + 1.0) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
            out[b, t] = h
    return out


def twin_stack(layer, x, s, k):
    (Wx, bx), (Wh, bh) = _w(layer.input_to_hidden), _w(layer.hidden_to_hidden)
    (Wv, bv), (Wa, ba) = _w(layer.push), _w(layer.actions)
    out = np.zeros((B, L, H))
    for b in range(B):
        h, S = np.zeros(H), np.zeros((s, k))
        for t in range(L):
            h = np.maximum(0.0, Wx @ np.concatenate([x[b, t], S[0]]) + bx + Wh @ h + bh)
            v, a = Wv @ h + bv, _softmax(Wa @ h + ba)
            new = np.zeros((s, k))
            for i in range(s):  # stack_rnn.py _update_stack, cell by cell
                above = v if i == 0 else S[i - 1]
                below = S[i + 1] if i + 1 < s else np.zeros(k)
                new[i] = a[0] * above + a[1] * below + a[2] * S[i]
            S = new
            out[b, t] = h
    return out


def twin_tape(layer, x, n, m, k, tapes=1):
    (Wx, bx), (Wh, bh) = _w(layer.input_to_hidden), _w(layer.hidden_to_hidden)
    acts = [_w(lin) for lin in layer.actions]  # one Linear of 5 actions per tape (tape_rnn.py 112-116)
    mlp = [_w(lin) for lin in layer.write if isinstance(lin, torch.nn.Linear)]
    out = np.zeros((B, L, H))
    for b in range(B):
        h, M = np.zeros(H), np.zeros((tapes, m, k))
        for t in range(L):
            h = np.maximum(0.0, Wx @ np.concatenate([x[b, t], *(M[j, 0] for j in range(tapes))]) + bx + Wh @ h + bh)
            w = h
            for i, (W, bias) in enumerate(mlp):
                w = W @ w + bias
                w = np.maximum(w, 0) if i < len(mlp) - 1 else w
            eye = np.eye(m)
            ops = [eye, np.roll(eye, -1, axis=0), np.roll(eye, 1, axis=0), np.roll(eye, -n[b], axis=0),
                   np.roll(eye, n[b], axis=0)]  # tape_rnn.py 175-181, applied as their einsum 'mM,bMc->bmc'
            for j in range(tapes):  # each tape: its slice of the write, its own actions
                Wa, ba = acts[j]
                a = _softmax(Wa @ h + ba)
                Mw = M[j].copy()
                Mw[0] = w[j * k:(j + 1) * k]
                M[j] = sum(a[i] * ops[i] @ Mw for i in range(5))
            out[b, t] = h
    return out


@pytest.mark.parametrize("name,size,tapes", [("rnn", None, 1), ("lstm", None, 1), ("stack-rnn", 4, 1),
                                             ("stack-rnn", 12, 1), ("tape-rnn", 6, 1), ("tape-rnn", 9, 1),
                                             ("tape-rnn", 9, 4)])
def test_twin(name, size, tapes):
    """Each layer against its loop; a memory smaller than the row (L = 7) is the row's length (the paper's A.2:
    sizes increased for longer sequences), a larger one its own."""
    x = _x()
    grown = None if size is None else max(size, L)
    if name == "rnn":
        layer = _layer(VanillaRNN)
        got, want = layer(x), twin_rnn(layer, x.numpy())
    elif name == "lstm":
        layer = _layer(LSTM)
        got, want = layer(x), twin_lstm(layer, x.numpy())
    elif name == "stack-rnn":
        layer = _layer(StackRNN, stack_size=size, cell=3)
        got, want = layer(x), twin_stack(layer, x.numpy(), grown, 3)
    else:
        layer = _layer(TapeRNN, memory_size=size, cell=3, mlp=(4,), n_tapes=tapes)
        n = torch.tensor([2, 5])
        got, want = layer(x, n), twin_tape(layer, x.numpy(), n.numpy(), grown, 3, tapes)
    assert got.shape == (B, L, H)
    assert np.abs(got.detach().numpy() - want).max() < 1e-10
    assert np.abs(want).max() > 0.05  # the twin compares non-trivial states


def test_stack_is_read():
    """The stack changes the state: zeroing the push values changes later outputs."""
    layer = _layer(StackRNN, stack_size=4, cell=3)
    x = _x()
    y = layer(x)
    with torch.no_grad():
        layer.push.weight.zero_()
        layer.push.bias.zero_()
    assert (layer(x) - y)[:, 1:].abs().max() > 1e-3


def _model(name, task="chomsky-reverse-string"):
    arch = {"rnn": {"H": 256}, "lstm": {"H": 256}, "stack-rnn": {"H": 256, "stack_size": 128, "cell": 8},
            "tape-rnn": {"H": 256, "memory_size": 256, "cell": 8, "mlp": (64, 64)}}[name]
    torch.manual_seed(0)
    return ChomskyModel(config(name, task, 4, arch))


# the authors' Haiku modules at the paper's sizes on a task of I = 2 inputs (+ the empty token) and O = 2
# outputs: hk.VanillaRNN 3*256+256 + 256*256+256; hk.LSTM (3+256)*1024+1024; the stack's inner RNN reads
# 3 + 8 inputs, its push 256*8+8, actions 256*3+3; the tape's MLP 256*64+64 + 64*64+64 + 64*8+8, actions
# 256*5+5; the head hk.Linear(2) 256*2+2
COUNTS = {
    "rnn": (3 * 256 + 256) + (256 * 256 + 256) + (256 * 2 + 2),
    "lstm": (3 + 256 + 1) * 4 * 256 + (256 * 2 + 2),
    "stack-rnn": (11 * 256 + 256) + (256 * 256 + 256) + (256 * 8 + 8) + (256 * 3 + 3) + (256 * 2 + 2),
    "tape-rnn": ((11 * 256 + 256) + (256 * 256 + 256) + (256 * 64 + 64) + (64 * 64 + 64) + (64 * 8 + 8)
                 + (256 * 5 + 5) + (256 * 2 + 2)),
}


@pytest.mark.parametrize("name", list(COUNTS))
def test_parameter_count(name):
    assert sum(p.numel() for p in _model(name).parameters()) == COUNTS[name]


@pytest.mark.parametrize("name", list(COUNTS))
def test_causal_and_shape(name):
    """Reverse string, n = 3: inputs 0 1 1, three empty tokens (2), padding (3). Outputs at t do not move
    when a later input changes; the padding's logits never reach the O = 2 classes."""
    model = _model(name).eval()
    x = torch.tensor([[0, 1, 1, 2, 2, 2, 3, 3], [1, 0, 0, 2, 2, 2, 3, 3]])
    with torch.no_grad():
        y = model(x)
        assert y.shape == (2, 8, 4) and torch.isfinite(y).all()
        assert (y[..., 2:] == -1e4).all() and not math.isclose(float(y[..., :2].abs().max()), 0.0)
        z = x.clone()
        z[:, 2] = 1 - z[:, 2]
        y2 = model(z)
    assert torch.equal(y[:, :2], y2[:, :2])
    assert (y[:, 2:] - y2[:, 2:]).abs().max() > 0


def test_refuses_other_tasks():
    from longsynth.errors import LongsynthError

    with pytest.raises(LongsynthError):
        config("lstm", "parity", 4, {"H": 8})
    with pytest.raises(LongsynthError):
        config("lstm", "chomsky-reverse-string", 7, {"H": 8})  # a vocab_size other than the defaults'


def test_protocol_tables():
    from longsynth.models_ref.evaluation.protocol import resolve
    from longsynth.models_ref.protocols.registry import SUITES, architecture

    assert len(SUITES["chomsky"]) == 15 and sum(len(SUITES[f"chomsky-{lv}"]) for lv in ("regular", "dcf", "cs")) == 15
    p = resolve("chomsky-reverse-string", "paper")
    assert (p.data, p.batch_size, p.grad_clip, p.lrs) == ({"min_length": 1, "max_length": 40, "test_min_length": 1,
                                                           "test_max_length": 40}, 128, 1.0,
                                                          (1e-4, 3e-4, 5e-4))
    assert min(map(int, p.test_sets)) == 41 and max(map(int, p.test_sets)) == 500 and p.score_test_sets
    # their loss, example.py 100-102: summed over a row's outputs, averaged over rows, at every scale
    assert all(resolve("chomsky-reverse-string", s).train_config(lr=1e-3, seed=0).loss_per_row
               for s in ("tiny", "laptop", "paper"))
    assert not resolve("parity", "tiny").loss_per_row  # the others keep the mean over scored positions
    assert architecture("chomsky-parity-check", "tiny", "stack-rnn")["arch"]["stack_size"] == 128
    assert architecture("parity", "tiny", "stack-rnn") is None


def test_the_memories_are_the_papers_and_grow_with_the_row():
    """Appendix A.2: a stack of 128 and a tape of 256, "manually increased" on longer sequences (the code's 30 and
    example.py's 40 capped reverse string near 40 symbols); a stack as long as the row holds every push, so a
    deeper one changes nothing; reverse string's certificate runs the paper's Stack-RNN."""
    from longsynth.models_ref.protocols.controls import NO_CONTROL, VALIDATE
    from longsynth.models_ref.protocols.registry import architecture

    for scale in ("tiny", "laptop", "paper"):
        assert architecture("chomsky-reverse-string", scale, "stack-rnn")["arch"]["stack_size"] == 128
        assert architecture("chomsky-reverse-string", scale, "tape-rnn")["arch"]["memory_size"] == 256
        assert architecture("chomsky-reverse-string", scale, "stack-rnn-deep") is None
    x = torch.randn(1, 20, D, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    short = _layer(StackRNN, stack_size=8, cell=3)  # grows to 20 cells on this row
    deep = _layer(StackRNN, stack_size=64, cell=3)  # the same weights (seed 0), 64 cells
    assert torch.equal(short(x), deep(x))
    assert VALIDATE["chomsky-reverse-string"] == ("chomsky-reverse-string", "stack-rnn")
    assert "chomsky-reverse-string" not in NO_CONTROL


@pytest.mark.parametrize("name", ["lstm", "tape-rnn", "chomsky-transformer"])
def test_computation_steps_are_the_authors_row(name):
    """computation_steps_mult c (the paper's Tape-RNN sweep, {0, l, 2l}; experiments/utils.py 33-88): the core reads
    the n inputs, c n computation tokens (one-hot index I), the output's empty tokens (I + 1); our positions take the
    outputs of the core's last o(n) positions. Written row by row here, against the model's tensor form."""
    from longsynth.models_ref.protocols.registry import architecture

    arch = dict(architecture("chomsky-reverse-string", "tiny", name)["arch"], computation_steps_mult=2)
    if name == "tape-rnn":
        arch.update(memory_size=16, n_tapes=4)
    torch.manual_seed(0)
    model = ChomskyModel(config(name, "chomsky-reverse-string", 4, arch)).double().eval()
    assert model.cfg.computation_steps_mult == 2 and "computation_steps_mult" not in model.cfg.arch
    I = 2  # reverse string: inputs 0, 1; empty 2; padding 3  # noqa: E741
    rows = [[0, 1, 1, 2, 2, 2, 3, 3], [1, 0, 1, 0, 2, 2, 2, 2]]  # n = 3 (padded), n = 4
    x = torch.tensor(rows)
    got = model(x)[..., :2]  # [B, T, O]
    for b, row in enumerate(rows):
        n = row.index(I)
        o = sum(1 for v in row if v == I)
        theirs = row[:n] + [I] * (2 * n) + [I + 1] * o  # their tape: input, computation, output tokens
        u = torch.nn.functional.one_hot(torch.tensor([theirs]), I + 2).double()  # [1, T', I + 2]
        if name == "tape-rnn":
            h = model.core(u, torch.tensor([n]))
        elif name == "chomsky-transformer":
            h = model.core(u, torch.ones(1, len(theirs), dtype=torch.bool))
        else:
            h = model.core(u)
        logits = model.head(h if name == "chomsky-transformer" else torch.relu(h))[0, -o:]  # their last o outputs
        assert torch.allclose(got[b, n:n + o], logits, atol=1e-12), name


def test_the_linear_maps_start_as_haikus():
    """hk.Linear: weights N(0, 1/fan_in) cut at two standard deviations, zero biases (torch's default is uniform
    in +-1/sqrt(fan_in) with a drawn bias)."""
    torch.manual_seed(0)
    for name in ("rnn", "lstm", "stack-rnn", "tape-rnn"):
        m = _model(name)
        linears = [lin for lin in m.modules() if isinstance(lin, torch.nn.Linear)]
        assert linears
        for lin in linears:
            std = 1 / math.sqrt(lin.in_features)
            w = lin.weight.detach()
            assert float(w.abs().max()) <= 2 * std + 1e-7 and float(lin.bias.detach().abs().max()) == 0.0
            if w.numel() >= 2000:  # the truncated normal's spread: 0.88 std, where torch's uniform gives 0.58
                assert 0.8 * std < float(w.std()) < 0.95 * std, (name, lin)


def test_evaluate_end_to_end(tmp_path):
    import json

    from click.testing import CliRunner

    from longsynth.cli.main import cli

    r = CliRunner().invoke(cli, ["evaluate", "lstm", "--suite", "chomsky-parity-check", "--scale", "tiny",
                                 "--steps", "3", "--out", str(tmp_path / "out")])
    torch.set_num_threads(1)
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    row = rep["rows"][0]
    lengths = [c for c in row["by_length"] if c["kind"] == "test length"]
    assert {c["at"] for c in lengths} == {*range(41, 100, 6), 100}
    # the headline is the paper's score, the mean over the test lengths, not the split of training lengths
    assert row["test_mean"] == pytest.approx(sum(c["accuracy"] for c in lengths) / len(lengths))
    assert "the test metric is the mean over the protocol's test sets" in (tmp_path / "out" / "report.md").read_text()


def test_certificate_curves_draw_accuracy_by_test_length():
    """curves.png of a run whose protocol scores test lengths gets a panel of them (the paper's question)."""
    from longsynth.models_ref.reports.curves import curves

    history = {"train": [{"loss": 0.7}, {"loss": 0.6}], "val": [{"step": 2, "loss": 0.6, "accuracy": 0.5}]}
    plain = curves(history, "accuracy", None, "t")
    by_length = curves(history, "accuracy", None, "t", {"41": {"accuracy": 1.0}, "100": {"accuracy": 0.6}})
    assert len(by_length.axes) == len(plain.axes) + 1  # one panel more
    assert "by test length" in by_length.axes[-1].get_title(loc="left")
    assert len(curves(history, "accuracy", None, "t", {"train": {"accuracy": 1.0}}).axes) == len(plain.axes)


def test_certificate_curves_do_not_clip_a_lone_validation_reading():
    """Only the training loss is clipped to its percentiles: a first validation accuracy of 0.90 before 99 readings
    of 1.000 is drawn at 0.90, inside the frame."""
    from longsynth.models_ref.reports.curves import curves

    history = {"train": [{"loss": 0.5}] * 100,
               "val": [{"step": 100 * (i + 1), "loss": 0.1, "accuracy": 0.9 if i == 0 else 1.0} for i in range(100)]}
    ax = curves(history, "accuracy", None, "t").axes[2]
    assert ax.lines[0].get_ydata()[0] == 0.9 and ax.get_ylim()[0] < 0.9


def _chomsky_run(task, acc):
    return {"task": task, "family": "tokens", "protocol": task, "model": "lstm",
            "scale": "tiny", "lr": 1e-3, "weight_decay": None, "width": None, "seed": 0, "primary_metric": "accuracy",
            "best": {"accuracy": acc}, "test": {"accuracy": acc, "exact": {"accuracy": acc, "count": 512}},
            "paper_columns": {}, "wall_time_s": 1.0, "train_tokens_per_s": 1.0, "spec": {"seq_len": 80},
            "steps": 1000, "data": {"params": {"min_length": 1, "max_length": 40}},
            "schedule": {"steps": 1000, "protocol": {"steps": 1000}}}


def test_table_2_figures_are_entered_from_their_sources_and_the_rest_says_what_is_known():
    """Table 2 has a figure for every task: where a source gives it (DeltaFormer's reprint, the paper's text) it is
    a column with that source named; elsewhere the report says it is not entered, with what the paper's text says,
    never "no paper figure"."""
    from longsynth.models_ref.reports.report import Report

    rep = Report(identity={"model": "lstm", "sha256": None}, suite="chomsky", scale="tiny", settings={},
                 runs=[_chomsky_run("chomsky-parity-check", 0.9), _chomsky_run("chomsky-bucket-sort", 0.5)])
    parity, bucket = rep.rows()
    assert parity["paper"]["lstm"] == 1.0 and parity["paper"]["chomsky-transformer"] == 0.52
    assert parity["verdict"].startswith("tiny setting: near the paper's LSTM: 1.00")
    assert bucket["verdict"].endswith("paper figure not entered (below)") and "no paper figure" not in bucket["verdict"]
    md = rep.to_markdown()
    assert "as reprinted by Xu et al. (DeltaFormer), Appendix D Table 5" in md
    assert "Paper figures not entered: Delétang et al.'s Table 2" in md and "LSTMs solve it" in md
    cycle = Report(identity={"model": "mine", "sha256": None}, suite="chomsky", scale="tiny", settings={},
                   runs=[_chomsky_run("chomsky-cycle-navigation", 0.9)]).rows()[0]  # one column entered of five
    assert "against the paper's best entered (Transformer: 0.62)" in cycle["verdict"]


def test_lengths_figure_marks_the_longest_training_length():
    """A protocol that trains on a range of lengths (1-40) and tests single lengths is marked at its longest
    training length, not its shortest."""
    from longsynth.models_ref.reports.records import _trained_at

    run = {"test_set_params": {"41": {"min_length": 41, "max_length": 41}},
           "data": {"params": {"min_length": 1, "max_length": 40}}}
    assert _trained_at(run) == 40
    one = {"test_set_params": {"x": {"input_seq_len": 128}}, "data": {"params": {"input_seq_len": 64}}}
    assert _trained_at(one) == 64


@pytest.mark.parametrize("name", ["stack-rnn", "chomsky-transformer"])
def test_checkpoint_rebuilds_the_model(tmp_path, name):
    """trainer_checkpoints.load_model rebuilds a Chomsky built-in from its checkpoint: same outputs."""
    from longsynth.models_ref.models.factories import BUILTIN
    from longsynth.models_ref.evaluation.harness import Job, prepare
    from longsynth.models_ref.training.checkpoints import load_model

    p = prepare(Job(model=name, protocol="chomsky-reverse-string", task="chomsky-reverse-string", scale="tiny"))
    model = BUILTIN[name](p.spec).eval()
    cfg = BUILTIN[name].config(p.spec)
    torch.save({"model_config": cfg.to_dict(), "model": model.state_dict()}, tmp_path / "c.pt")
    back, _ = load_model(str(tmp_path / "c.pt"))
    x = p.sources[0](0)[0][:3]
    with torch.no_grad():
        assert torch.equal(back.eval()(x), model(x))
