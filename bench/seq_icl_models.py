"""seq-icl-transformer and seq-icl-lstm against Akyürek et al.'s own models (berlino/seq_icl @ 9b9223d).

    mkdir -p /tmp/seq_icl && git --git-dir=<mirror of berlino/seq_icl> archive 9b9223d | tar -x -C /tmp/seq_icl
    python bench/seq_icl_models.py /tmp/seq_icl [--json PATH] [--fixtures tests/data/seq_icl_models.npz]

Their code is run, never copied: ``src/models/sequence/simple_lm.py`` and ``src/models/sequence/rnn/lstm.py`` are
loaded from the checkout. Stand-ins for what those two files import and these models never use:
``torchvision.ops.StochasticDepth`` (the identity at drop_path 0, simple_lm.py 262, 298), and ``src.utils``'s
``instantiate`` and ``registry`` (simple_lm.py 16-17: the LSTM layer is looked up there, as their
``src/utils/config.py`` 63-104 does: ``functools.partial(target, **config, **kwargs)``). ``einops`` must be
importable (``pip install einops``).

For each model, at transformer.yaml's and lstm.yaml's settings and at small ones:

- their parameter count and ours, their parameter names and shapes mapped onto ours (``TRANSFORMER_NAMES``,
  ``LSTM_NAMES``), every tensor of each side covered once;
- their weights copied into ours, the logits in eval mode (dropout off) on random tokens, float32 and float64: the
  max abs difference;
- train mode with the same seed (the dropouts draw in the same order), the loss's gradients of every parameter and
  one AdamW step of the harness's optimizer (``build_optimizer``, lr 5e-4, weight decay 0.1 on every parameter)
  against ``AdamW(their.parameters(), 5e-4, weight_decay=0.1)`` as their train.py 756-786 builds it: max abs
  differences of the gradients and of the weights after the step (the LSTM's first layer, which their forward
  never reads, is frozen in ours and left out of our group; without a gradient theirs is skipped by AdamW too);
- the init: a fresh theirs and a fresh ours (other seeds), the std (and mean) of every parameter group, beside the
  law's value.

``--fixtures PATH``: their small models' weights, inputs and logits for tests/test_seq_icl_models.py (npz).
"""
import argparse
import functools
import hashlib
import importlib.util
import math
import os
import sys
import types

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import finish, machine, write_fixtures, write_json  # noqa: E402

V = 20  # configs/pipeline/dfa.yaml: dataset.vocab_size
L_MAX = 4096 + 2  # configs/dataset/icl_dfa.yaml: __l_max = input_seq_len + 2
PAPER_TRANSFORMER = dict(d_model=128, n_layer=8, d_inner=512, heads=2, max_pos=L_MAX)  # transformer.yaml
SMALL_TRANSFORMER = dict(d_model=16, n_layer=2, d_inner=64, heads=2, max_pos=40)
PAPER_LSTM = dict(d_model=32, n_layer=2)  # lstm.yaml
SMALL_LSTM = dict(d_model=8, n_layer=2)
SOURCES = ("src/models/sequence/simple_lm.py", "src/models/sequence/rnn/lstm.py")


def transformer_names(n_layer):
    """{our parameter name: theirs} for SimpleLMHeadModel (their lm_head.weight is E, tied)."""
    names = {"word.weight": "backbone.embeddings.word_embeddings.weight",
             "position.weight": "backbone.embeddings.position_embeddings.weight",
             "ln_f.weight": "backbone.ln_f.weight", "ln_f.bias": "backbone.ln_f.bias"}
    for i in range(n_layer):
        for ours, theirs in (("norm1", "norm1"), ("norm2", "norm2"), ("mixer.Wqkv", "mixer.Wqkv"),
                             ("mixer.out_proj", "mixer.out_proj"), ("state_mixer.fc1", "mlp.fc1"),
                             ("state_mixer.fc2", "mlp.fc2")):
            for kind in ("weight", "bias"):
                names[f"blocks.{i}.{ours}.{kind}"] = f"backbone.layers.{i}.{theirs}.{kind}"
    return names


def lstm_names(n_layer):
    """{our parameter name: theirs} for SimpleLMHeadModelNoFFN with LSTMLayer (lm_head.weight is E, tied)."""
    names = {"word.weight": "embeddings.word_embeddings.weight"}
    for i in range(n_layer):
        for kind in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            names[f"layers.{i}.lstm.{kind}"] = f"mixer.{i}.lstm.{kind}"
    return names


def load(checkout):
    """(their simple_lm module, their LSTMLayer) from the checkout, with the stand-ins above."""
    try:
        import torchvision.ops  # noqa: F401
    except ImportError:
        ops = types.ModuleType("torchvision.ops")

        def stochastic_depth(p, mode):
            if p != 0:
                sys.exit("drop_path > 0: the stand-in is the identity only")
            return torch.nn.Identity()
        ops.StochasticDepth = stochastic_depth
        sys.modules["torchvision"], sys.modules["torchvision.ops"] = types.ModuleType("torchvision"), ops

    def from_file(name, rel):
        spec = importlib.util.spec_from_file_location(name, os.path.join(checkout, rel))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    lstm = from_file("seq_icl_lstm", SOURCES[1])
    registry = types.ModuleType("src.utils.registry")
    registry.layer = {"lstm": lstm.LSTMLayer}

    def instantiate(reg, config, *args, partial=False, **kwargs):  # src/utils/config.py 63-104, a dict config
        config = dict(config)
        obj = functools.partial(reg[config.pop("_name_")], *args, **config, **kwargs)
        return obj if partial else obj()
    utils = types.ModuleType("src.utils")
    utils.instantiate, utils.registry = instantiate, registry
    sys.modules.update({"src": types.ModuleType("src"), "src.utils": utils, "src.utils.registry": registry})
    return from_file("seq_icl_simple_lm", SOURCES[0]), lstm.LSTMLayer


def theirs_transformer(lm, d_model, n_layer, d_inner, heads, max_pos):
    """SimpleLMHeadModel as their train.py builds it from transformer.yaml (registry "lm_simple")."""
    return lm.SimpleLMHeadModel(d_model=d_model, n_layer=n_layer, d_inner=d_inner, vocab_size=V, resid_dropout=0.0,
                                embed_dropout=0.1, attn_layer_idx=list(range(n_layer)),
                                attn_cfg={"num_heads": heads, "dropout": 0.1}, max_position_embeddings=max_pos,
                                layer={"_name_": "transformer"})


def theirs_lstm(lm, d_model, n_layer):
    """SimpleLMHeadModelNoFFN as from lstm.yaml (registry "lm_simple_noffn", layer/lstm.yaml)."""
    return lm.SimpleLMHeadModelNoFFN(d_model=d_model, vocab_size=V, embed_dropout=0.1, n_layer=n_layer,
                                     layer={"_name_": "lstm", "n_layer": 1, "reinit": True})


def ours_transformer(d_model, n_layer, d_inner, heads, max_pos):
    from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig

    return ZoologyAttention(ZoologyConfig(vocab_size=V, max_position_embeddings=max_pos, d_model=d_model,
                                          n_layers=n_layer, num_heads=heads, state_mixer="mlp", d_inner=d_inner))


def ours_lstm(d_model, n_layer):
    from longsynth.models_ref.models.seq_icl import SeqIclLSTM, SeqIclLSTMConfig

    return SeqIclLSTM(SeqIclLSTMConfig(vocab_size=V, d_model=d_model, n_layers=n_layer))


def count(model):
    return sum(p.numel() for p in model.parameters())  # a tied tensor once


def copy_into(ours, theirs, names):
    """Their weights into ours by ``names``; every tensor of both sides covered (their tied head is E)."""
    tsd = theirs.state_dict()
    assert set(names.values()) | {k for k in tsd if k.endswith("lm_head.weight")} == set(tsd), \
        sorted(set(tsd) - set(names.values()))
    osd = ours.state_dict()
    assert set(names) == set(osd), sorted(set(osd) ^ set(names))
    ours.load_state_dict({k: tsd[v].clone() for k, v in names.items()}, strict=True)


def logits_theirs(theirs, x):
    return theirs(x)[0].logits


def compare(ours, theirs, x, dtype):
    ours, theirs = ours.to(dtype).eval(), theirs.to(dtype).eval()
    with torch.no_grad():
        return float((ours(x) - logits_theirs(theirs, x)).abs().max())


def train_step(ours, theirs, x, y, seed=5):
    """Train mode, the same seed: max abs differences of the loss's gradients and of the weights after one AdamW
    step (ours: the harness's build_optimizer; theirs: AdamW(parameters(), 5e-4, weight_decay=0.1))."""
    from longsynth.models_ref.training.config import TrainConfig
    from longsynth.models_ref.training.trainer import build_optimizer

    ours, theirs = ours.float().train(), theirs.float().train()
    opt_o = build_optimizer(ours, TrainConfig(steps=1, lr=5e-4, weight_decay=0.1))
    opt_t = torch.optim.AdamW(theirs.parameters(), lr=5e-4, weight_decay=0.1)
    groups = [(len(g["params"]), g["weight_decay"]) for g in opt_o.param_groups]
    losses = []
    for model, out in ((ours, lambda: ours(x)), (theirs, lambda: logits_theirs(theirs, x))):
        torch.manual_seed(seed)
        loss = torch.nn.functional.cross_entropy(out().reshape(-1, V), y.reshape(-1), ignore_index=-100)
        loss.backward()
        losses.append(float(loss.detach()))
    grad = max(float((po.grad - pt.grad).abs().max()) if po.grad is not None else
               (0.0 if pt.grad is None else float("inf"))
               for po, pt in zip(ours.parameters(), _theirs_in_our_order(ours, theirs)))
    opt_o.step()
    opt_t.step()
    with torch.no_grad():
        after = max(float((po - pt).abs().max())
                    for po, pt in zip(ours.parameters(), _theirs_in_our_order(ours, theirs)))
    return {"loss_ours": losses[0], "loss_theirs": losses[1], "max_abs_grad_diff": grad,
            "max_abs_weight_diff_after_step": after, "our_optimizer_groups": groups,
            "their_optimizer_groups": [(len(g["params"]), g["weight_decay"]) for g in opt_t.param_groups]}


_NAMES = {}


def _theirs_in_our_order(ours, theirs):
    names = _NAMES[id(ours)]
    tp = dict(theirs.named_parameters())
    return [tp[names[n]] for n, _ in ours.named_parameters()]


def init_stats(model, groups):
    """{group: (std, mean, numel)} over the parameters whose name ends with each group's suffix."""
    out = {}
    for group, suffixes in groups.items():
        ps = [p.detach().flatten() for n, p in model.named_parameters() if n.endswith(suffixes)]
        if ps:
            t = torch.cat(ps).double()
            out[group] = (float(t.std()), float(t.mean()), t.numel())
    return out


T_GROUPS = {  # (our suffixes, their suffixes): the law
    "word embeddings": (("word.weight",), ("word_embeddings.weight",), "N(0, 0.02)"),
    "positions": (("position.weight",), ("position_embeddings.weight",), "N(0, 0.02)"),
    "Wqkv.weight": (("Wqkv.weight",), ("Wqkv.weight",), "N(0, 0.02)"),
    "out_proj.weight": (("out_proj.weight",), ("out_proj.weight",), "N(0, 0.02 / sqrt(2 n_layers))"),
    "fc1.weight": (("fc1.weight",), ("fc1.weight",), "N(0, 0.02)"),
    "fc2.weight": (("fc2.weight",), ("fc2.weight",), "N(0, 0.02 / sqrt(2 n_layers))"),
    "biases": (("bias",), ("bias",), "0 (LayerNorms' too)"),
    "LayerNorm weights": (("norm1.weight", "norm2.weight", "ln_f.weight"), ("norm1.weight", "norm2.weight",
                                                                            "ln_f.weight"), "1"),
}
L_GROUPS = {
    "word embeddings": (("word.weight",), ("word_embeddings.weight",), "N(0, 1)"),
    "weight_ih": (("weight_ih_l0",), ("weight_ih_l0",), "Xavier uniform: std sqrt(2 / (D + 4D))"),
    "weight_hh": (("weight_hh_l0",), ("weight_hh_l0",), "orthogonal [4D, D]: std 1 / sqrt(4D)"),
    "bias_ih": (("bias_ih_l0",), ("bias_ih_l0",), "0, forget gate 1: mean 1/4"),
    "bias_hh": (("bias_hh_l0",), ("bias_hh_l0",), "0"),
}


def init_report(ours, theirs, groups):
    o = init_stats(ours, {g: s[0] for g, s in groups.items()})
    t = init_stats(theirs, {g: s[1] for g, s in groups.items()})
    return {g: {"law": groups[g][2], "ours_std": o[g][0], "theirs_std": t[g][0], "ours_mean": o[g][1],
                "theirs_mean": t[g][1], "numel": o[g][2], "numel_theirs": t[g][2]} for g in groups if g in o}


def run_model(kind, lm, sizes, rng, T, fixtures=None):
    make_t, make_o, names_of, groups = {
        "transformer": (lambda: theirs_transformer(lm, **sizes), lambda: ours_transformer(**sizes),
                        lambda: transformer_names(sizes["n_layer"]), T_GROUPS),
        "lstm": (lambda: theirs_lstm(lm, **sizes), lambda: ours_lstm(**sizes), lambda: lstm_names(sizes["n_layer"]),
                 L_GROUPS)}[kind]
    torch.manual_seed(1)
    theirs = make_t()
    torch.manual_seed(2)
    ours = make_o()
    rec = {"sizes": sizes, "params_theirs": count(theirs), "params_ours": count(ours),
           "init": init_report(ours, theirs, groups)}
    names = names_of()
    _NAMES[id(ours)] = names
    with torch.no_grad():  # weights off their init (zero biases, unit norms are then checked too)
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    copy_into(ours, theirs, names)
    x = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    y = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    y[:, ::5] = -100
    rec["T"] = T
    rec["max_abs_logit_diff_float32"] = compare(ours, theirs, x, torch.float32)
    rec["max_abs_logit_diff_float64"] = compare(ours, theirs, x, torch.float64)
    with torch.no_grad():
        rec["logit_scale"] = float(logits_theirs(theirs.float().eval(), x).abs().max())
    if fixtures is not None:
        with torch.no_grad():
            fixtures[f"{kind}/x"] = x.numpy().astype(np.int64)
            fixtures[f"{kind}/y"] = logits_theirs(theirs.double().eval(), x).numpy()
        for ours_name, theirs_name in names.items():
            fixtures[f"{kind}/sd/{ours_name}"] = theirs.state_dict()[theirs_name].float().numpy()  # float32 values
    rec.update(train_step(ours, theirs, x, y))
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="a checkout of berlino/seq_icl @ 9b9223d")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--fixtures", help="write their small models' weights, inputs and logits here (npz)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lm, _ = load(args.checkout)
    results = {"machine": machine(torch=torch.__version__),
               "sha256": {f: hashlib.sha256(open(os.path.join(args.checkout, f), "rb").read()).hexdigest()
                          for f in SOURCES}}
    rng = np.random.default_rng(0)
    fixtures = {} if args.fixtures else None
    for key, kind, sizes, T in (("transformer_small", "transformer", SMALL_TRANSFORMER, 24),
                                ("transformer_paper", "transformer", PAPER_TRANSFORMER, 948),
                                ("lstm_small", "lstm", SMALL_LSTM, 24), ("lstm_paper", "lstm", PAPER_LSTM, 948)):
        small = key.endswith("small")
        rec = run_model(kind, lm, sizes, rng, T, fixtures if small else None)
        results[key] = rec
        print(f"{key}: params theirs {rec['params_theirs']:,} ours {rec['params_ours']:,}; max |logit diff| "
              f"float32 {rec['max_abs_logit_diff_float32']:.3g} float64 {rec['max_abs_logit_diff_float64']:.3g} "
              f"(logits up to {rec['logit_scale']:.3g}); train step: loss {rec['loss_ours']:.6f} / "
              f"{rec['loss_theirs']:.6f}, grads {rec['max_abs_grad_diff']:.3g}, weights after AdamW "
              f"{rec['max_abs_weight_diff_after_step']:.3g}; optimizer groups ours {rec['our_optimizer_groups']} "
              f"theirs {rec['their_optimizer_groups']}")
        for g, s in rec["init"].items():
            print(f"    init {g:18s} std ours {s['ours_std']:.5f} theirs {s['theirs_std']:.5f}   mean ours "
                  f"{s['ours_mean']:+.5f} theirs {s['theirs_mean']:+.5f}   ({s['numel']:,}; {s['law']})")
    L, D = PAPER_TRANSFORMER["n_layer"], PAPER_LSTM["d_model"]
    print(f"laws at their settings: out_proj/fc2 std {0.02 / math.sqrt(2 * L):.5f}; the LSTM's weight_ih "
          f"{math.sqrt(2 / (5 * D)):.5f}, weight_hh {1 / math.sqrt(4 * D):.5f}")
    if fixtures is not None:
        write_fixtures(args.fixtures, fixtures, results["sha256"])
    finish(results["machine"])
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
