"""No compute past a batch's last scored position (docs/evaluate.md, "Padding"): a causal
protocol that scores outputs position by position cuts every batch after its last scored target
(training.forward.trimmed), which leaves a causal model's loss and metrics as they were."""
import dataclasses

import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.models_ref.evaluation.checks import build
from longsynth.models_ref.evaluation.harness import Job, prepare
from longsynth.models_ref.models.factories import BUILTIN, checked_spec, load
from longsynth.models_ref.protocols.registry import ARCHITECTURES
from longsynth.models_ref.training.eval_pass import evaluate
from longsynth.models_ref.training.forward import trimmed
from longsynth.torch import IGNORE_INDEX

torch.set_num_threads(1)

# each built-in on the first of these tiny protocols it has a preset for (all cut their batches)
PROTOCOLS = ("parity", "chomsky-even-pairs", "mqar-64", "h3-induction", "selective-copying", "listops-subtrees")


def _protocol_of(name):
    for protocol in PROTOCOLS:
        if (protocol, "tiny", name) in ARCHITECTURES:
            return protocol
    return None


def _causal_builtins():
    """(name, protocol) of every built-in with a tiny preset on a cut protocol whose module is checked causal
    there (chomsky-transformer reads whole rows: its protocol draws one length a batch instead)."""
    from longsynth.models_ref.models.chomsky import WHOLE_ROW

    out = []
    for name in sorted(BUILTIN):
        protocol = _protocol_of(name)
        if protocol is not None and protocol != "listops-subtrees" and name not in WHOLE_ROW:  # listops: stored
            out.append((name, protocol))
    return out


def test_chomsky_batches_are_one_length_each_drawn_from_the_step():
    """As the authors' UniformCurriculum: a batch's rows share one length, uniform in 1-40 over steps,
    the same for the same step (resuming is exact), with no padding left to cut."""
    prepared = prepare(Job(model="lstm", protocol="chomsky-reverse-string", task="chomsky-reverse-string",
                           batch_size=4))
    train = prepared.sources[0]
    widths = []
    for step in range(60):
        x, y = train(step)
        n = (x != x[0, -1]).sum(1)  # the row's input symbols: everything but the empty output tokens
        assert x.shape[1] == 2 * int(n[0]) and (n == n[0]).all()  # the input, then as many outputs: no padding
        assert trimmed(x, y, {})[1].shape == y.shape
        widths.append(x.shape[1])
    assert 2 <= min(widths) and max(widths) <= 80 and len(set(widths)) > 20
    assert torch.equal(train(7)[0], train(7)[0]) and train.length(7) == prepare(
        Job(model="lstm", protocol="chomsky-reverse-string", task="chomsky-reverse-string", batch_size=4)
    ).sources[0].length(7)


def test_the_cut_keeps_every_scored_position_and_drops_the_rest():
    x = torch.arange(2 * 9).reshape(2, 9)
    y = torch.full((2, 9), IGNORE_INDEX)
    y[0, 2], y[1, 5] = 1, 0
    extras = {"length": torch.arange(18).reshape(2, 9)}
    xt, yt, et = trimmed(x, y, extras)
    assert xt.shape == (2, 6) and torch.equal(xt, x[:, :6]) and torch.equal(yt, y[:, :6])
    assert torch.equal(et["length"], extras["length"][:, :6])
    assert trimmed(x, torch.full((2, 9), IGNORE_INDEX), {})[0].shape == (2, 1)  # nothing scored: one position
    y[1, 8] = 2
    assert trimmed(x, y, extras)[0] is x  # scored to the end: nothing cut
    regression = torch.zeros(2, 3, 1)
    assert trimmed(torch.zeros(2, 9, 4), regression, {})[0].shape == (2, 9, 4)  # not one target a position


@pytest.mark.parametrize("name,protocol", _causal_builtins())
def test_a_causal_builtin_scores_the_same_with_and_without_the_cut(name, protocol):
    """Loss and accuracy of the protocol's validation batches, cut and whole, with the same weights.
    Each batch's targets past two thirds of its width are unscored first, so that every protocol's cut
    removes positions (MQAR and selective copying score their last position); the Chomsky protocols'
    batches are of one length, never cut, so their models are tried on batches of mixed lengths (the
    task's own padding; tape-rnn reads the row's input length, which a scored output never precedes)."""
    job = Job(model=name, protocol=protocol, task=protocol, batch_size=8)
    prepared = prepare(job)
    assert prepared.protocol.trims
    factory, _ = load(name)
    torch.manual_seed(0)
    model = build(factory, checked_spec(factory, prepared.spec)).double()
    cfg = prepared.protocol.train_config(lr=1e-3, seed=0)
    assert cfg.trim
    batches = []
    if prepared.protocol.length_per_batch:
        from longsynth.models_ref.evaluation.protocol import OnTheFly

        mixed = OnTheFly(protocol, prepared.protocol.data, 0, 4, "val")
        batches = [b for b in map(mixed, range(30)) if trimmed(b[0], b[1], {})[1].shape[1] < b[1].shape[1]][:2]
        assert len(batches) == 2
    for x, y, *rest in ([] if batches else prepared.sources[1]()[:2]):
        y = y.clone()
        y[:, 2 * y.shape[1] // 3:] = IGNORE_INDEX
        y[0, 2 * y.shape[1] // 3 - 1] = 1  # one scored position there at least
        batches.append((x, y, *({k: v[:, :y.shape[1]] for k, v in r.items()} for r in rest)))
    assert all(trimmed(b[0], b[1], {})[1].shape[1] < b[1].shape[1] for b in batches)
    if batches[0][0].is_floating_point():
        batches = [(b[0].double(), *b[1:]) for b in batches]
    got = evaluate(model, batches, cfg, "cpu")
    want = evaluate(model, batches, dataclasses.replace(cfg, trim=False), "cpu")
    assert got["loss"] == pytest.approx(want["loss"], rel=1e-6)  # float32 rounding inside some built-ins
    assert got["accuracy"] == want["accuracy"]
