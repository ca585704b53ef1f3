"""``rnn``, ``lstm``, ``stack-rnn``, ``tape-rnn`` against the Chomsky-hierarchy authors' own Haiku models: their
logits from tests/data/chomsky_rnns_authors.npz (bench/chomsky_rnn_fixtures.py ran google-deepmind/
neural_networks_chomsky_hierarchy @ 2b8eb4be: duplicate string at length 7, hidden 16, cells of 8, a stack and a
tape of 40, their init moved by 0.1 N(0, 1)) with their weights loaded into ours. This is what showed that Haiku's
``hk.VanillaRNN``, the core of three of them, is a ReLU recurrence (haiku/_src/recurrent.py), not a tanh one."""
import os

import numpy as np
import pytest
import torch  # a test dependency: its absence must fail, not skip

from longsynth.models_ref.models.chomsky import ChomskyModel, config

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "chomsky_rnns_authors.npz")
CORE = {"rnn": "", "stack-rnn": "stack_rnn_core/~/", "tape-rnn": "tape_input_length_jump_core/~/"}
ARCH = {"rnn": dict(H=16), "lstm": dict(H=16), "stack-rnn": dict(H=16, stack_size=40, cell=8),
        "tape-rnn": dict(H=16, memory_size=40, cell=8, mlp=(64, 64))}


def names(model):
    """{our parameter: their Haiku module} (their ``w`` is [in, out], ours [out, in])."""
    m = {"head": "linear"}
    if model == "lstm":
        m["core.gates"] = "lstm/linear"
    else:
        m["core.input_to_hidden"] = f"{CORE[model]}vanilla_rnn/linear"
        m["core.hidden_to_hidden"] = f"{CORE[model]}vanilla_rnn/linear_1"
    if model == "stack-rnn":
        m.update({"core.push": "stack_rnn_core/linear", "core.actions": "stack_rnn_core/linear_1"})
    if model == "tape-rnn":
        core = "tape_input_length_jump_core"
        m.update({"core.write.0": f"{core}/mlp/~/linear_0", "core.write.2": f"{core}/mlp/~/linear_1",
                  "core.write.4": f"{core}/mlp/~/linear_2", "core.actions.0": f"{core}/linear"})
    return m


@pytest.mark.parametrize("model", ["rnn", "lstm", "stack-rnn", "tape-rnn"])
def test_their_logits(model):
    f = np.load(FIXTURE)
    key = model.replace("-", "_")
    ours = ChomskyModel(config(model, "chomsky-duplicate-string", 4, ARCH[model])).double().eval()
    sd = {}
    for mine, theirs in names(model).items():
        sd[f"{mine}.weight"] = torch.from_numpy(f[f"{key}/params/{theirs}/w"].T.astype(np.float64))
        sd[f"{mine}.bias"] = torch.from_numpy(f[f"{key}/params/{theirs}/b"].astype(np.float64))
    assert {k for k in f.files if k.startswith(f"{key}/params/")} == {
        f"{key}/params/{t}/{p}" for t in names(model).values() for p in ("w", "b")}  # every tensor of theirs
    ours.load_state_dict(sd, strict=True)  # and every one of ours
    x = torch.from_numpy(f["x"]).long()  # [3, 7] input symbols
    B, n = x.shape
    row = torch.cat([x, torch.full((B, 2 * n), 2)], 1)  # our row: the input, then its 2n empty tokens (id I = 2)
    with torch.no_grad():
        got = ours(row)[:, n:, :2].numpy()  # the outputs at the empty tokens, the O = 2 classes
    want = f[f"{key}/logits"]  # float32 from their JAX run
    assert got.shape == want.shape == (B, 2 * n, 2)
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max()), np.abs(got - want).max()
