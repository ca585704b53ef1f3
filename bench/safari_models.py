"""safari-s4d, h3 and safari-attention (H3's Table 1) against safari's own models (HazyResearch/safari @ 02220c6).

    mkdir -p /tmp/safari && git --git-dir=<mirror of HazyResearch/safari> archive 02220c6 | tar -x -C /tmp/safari
    python bench/safari_models.py /tmp/safari [--json PATH] [--fixtures tests/data/safari_models.npz]

Their code is run, never copied: the checkout's ``src`` is imported, with ``src/models/sequence/simple_lm.py``
building ``SimpleLMHeadModel`` (registry "lm_simple"), its attention (simple_lm.py's MHA) or its layer from
``src/utils/registry.py`` ("s4d": ``src/models/sequence/ssm/s4d.py`` S4D; "h3": ``src/models/sequence/h3.py`` H3
with ``ss_kernel.py``, ``ss_kernel_diag.py``, ``ss_kernel_shift.py``, ``dplr.py``, ``hippo.py``;
``src/utils/train.py``'s OptimModule; ``src/utils/config.py``'s instantiate). Stand-ins, registered in sys.modules
only where the package is not installed, for what those files import and these models never use (or use as below):

- ``torchvision.ops.StochasticDepth``: the identity (drop_path 0, simple_lm.py 248, 253);
- ``pytorch_lightning`` (``rank_zero_only``: the identity; train.py's ``import pytorch_lightning as pl``);
- ``opt_einsum``: ``contract`` is ``torch.einsum`` (s4d.py, hippo.py, vandermonde.py);
- ``hydra.utils.get_method`` (config.py 86: the registry's dotted path, imported), ``omegaconf`` and ``rich``
  (imported by config.py and train.py, unused here);
- the package ``src.models.sequence`` without its ``__init__`` (which imports every sequence model).
``einops`` and ``scipy`` must be importable. ``src.ops.fftconv`` and ``cauchy_mult`` (CUDA extensions) are absent:
their code falls back on its own torch paths (h3.py 9-12, vandermonde.py 16-19, ss_kernel_diag.py 23-34).

For each model, at the experiment configs' settings (configs/experiment/synthetics/induction_head/{s4d,h3,
transformer}.yaml, configs/model/layer/{s4d,h3}.yaml: d_model 32, 2 layers, d_inner 128, d_state 64, lr
min(1e-3, 5e-4); attention: 1 head, dropout 0.1, 32 positions) and at small ones (d_model 8, d_inner 16, d_state 8):

- their parameter count and ours, their parameter names and shapes mapped onto ours (``s4d_names``, ``h3_names``,
  seq_icl_models.py's ``transformer_names``), every tensor of each side covered once. S4D's C is [1, H, N/2, 2] and
  D [1, H] in theirs (channels 1), [H, N/2, 2] and [H] in ours: copied by reshape (``RESHAPED``);
- their weights (moved off their init by 0.1 N(0, 1), then rounded to float16's grid so that the fixture stores
  them exactly in 2 bytes) copied into ours, the logits in eval mode on random tokens [2, 31], float32 and float64:
  the max abs difference. In float64 theirs is not float64 throughout: their S4DKernel and SSKernelShift return
  ``k.float()`` (s4d.py 255, ss_kernel_shift.py 53); so float64 is also run with ``Tensor.float`` the identity on
  float64 tensors (``float64_uncast``, both sides);
- which of their parameters carry ``_optim`` and with what (OptimModule.register, train.py 142-156;
  SSKernelDiag.register, s4d.py 189-203) against ours;
- train mode with the same seed (block 0's dropout1 p 0.1, and attention's p 0.1 in each layer, draw in the same
  order on both sides: the losses agree), the gradients of
  the loss and one AdamW step: ours ``build_optimizer`` (lr 5e-4, weight decay 0.1) against their train.py 472-492
  (``AdamW`` over the parameters without ``_optim`` at the optimizer's lr 5e-4, weight_decay 0.1, plus a group per
  distinct ``_optim`` dict): max abs differences; the same with dropout off (eval mode);
- the init: a fresh theirs and a fresh ours (other seeds), std and mean of each tensor kind.

``--fixtures PATH``: their models' weights at the paper settings (as ours load them), an input, their eval-mode
float64 logits as their code gives them and with ``float64_uncast``, their ``_optim`` marks, for
tests/test_safari_models.py (npz).
"""
import argparse
import contextlib
import hashlib
import importlib
import json
import os
import sys
import types

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import finish, machine, write_fixtures, write_json  # noqa: E402
from seq_icl_models import transformer_names  # noqa: E402  (safari's simple_lm.py is seq_icl's: the same names)

V = 20  # configs/pipeline/induction_head.yaml -> dataset vocab_size 20 (H3 Table 1)
SSM_LR = 5e-4  # layer/{s4d,h3}.yaml: lr min(0.001, optimizer.lr), base.yaml optimizer.lr 5e-4
PAPER = dict(d_model=32, n_layer=2, d_inner=128, d_state=64)
SMALL = dict(d_model=8, n_layer=2, d_inner=16, d_state=8)
OURS = {"s4d": "safari-s4d", "h3": "h3", "attention": "safari-attention"}  # ours: h3-induction paper presets
POSITIONS = 32  # transformer.yaml: max_position_embeddings dataset.__l_max = input_seq_len 30 + 2
SOURCES = ("src/models/sequence/simple_lm.py", "src/models/sequence/h3.py", "src/models/sequence/ssm/s4d.py",
           "src/models/sequence/ssm/ss_kernel.py", "src/models/sequence/ssm/ss_kernel_diag.py",
           "src/models/sequence/ssm/ss_kernel_shift.py", "src/models/sequence/ssm/dplr.py",
           "src/models/sequence/ssm/hippo.py", "src/ops/vandermonde.py", "src/ops/krylov.py", "src/ops/toeplitz.py",
           "src/utils/__init__.py", "src/utils/config.py", "src/utils/train.py", "src/utils/registry.py")
T = 31  # pipeline/induction_head.yaml input_seq_len 30: __l_max 32 tokens, the inputs one shorter (the shift)


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def _missing(name):
    try:
        importlib.import_module(name)
        return False
    except ImportError:
        return True


def stand_ins():
    """The stand-ins of the docstring, for the packages that are not installed."""
    if _missing("torchvision"):
        class StochasticDepth(torch.nn.Module):
            def __init__(self, p, mode):
                super().__init__()
                if p != 0:
                    sys.exit("drop_path > 0: the stand-in is the identity only")

            def forward(self, x):
                return x
        ops = _module("torchvision.ops", StochasticDepth=StochasticDepth)
        sys.modules.update({"torchvision": _module("torchvision", ops=ops), "torchvision.ops": ops})
    if _missing("pytorch_lightning"):
        utilities = _module("pytorch_lightning.utilities", rank_zero_only=lambda f: f)
        sys.modules.update({"pytorch_lightning": _module("pytorch_lightning", utilities=utilities),
                            "pytorch_lightning.utilities": utilities})
    if _missing("opt_einsum"):
        sys.modules["opt_einsum"] = _module(
            "opt_einsum", contract=lambda eq, *ops, **kw: torch.einsum(eq, *ops),
            contract_expression=lambda eq, *shapes, **kw: (lambda *ops, **k: torch.einsum(eq, *ops)))
    if _missing("hydra"):
        def get_method(path):
            mod, attr = path.rsplit(".", 1)
            return getattr(importlib.import_module(mod), attr)
        utils = _module("hydra.utils", get_method=get_method, get_class=get_method)
        sys.modules.update({"hydra": _module("hydra", utils=utils), "hydra.utils": utils})
    if _missing("omegaconf"):
        class DictConfig(dict):
            pass

        class ListConfig(list):
            pass
        sys.modules["omegaconf"] = _module("omegaconf", DictConfig=DictConfig, ListConfig=ListConfig,
                                           OmegaConf=type("OmegaConf", (), {}))
    if _missing("rich"):
        sys.modules.update({"rich": _module("rich"), "rich.syntax": _module("rich.syntax"),
                            "rich.tree": _module("rich.tree")})


def load(checkout):
    """Their ``SimpleLMHeadModel`` from the checkout (its ``src`` imported as the package ``src``)."""
    stand_ins()
    src = os.path.join(os.path.abspath(checkout), "src")
    for name in [m for m in sys.modules if m == "src" or m.startswith("src.")]:
        del sys.modules[name]
    # namespace packages (no __init__ in the checkout) but src.models.sequence, whose __init__ is skipped
    for name, rel in (("src", ""), ("src.models", "models"), ("src.models.sequence", "models/sequence"),
                      ("src.ops", "ops")):
        sys.modules[name] = _module(name, __path__=[os.path.join(src, rel)])
    return importlib.import_module("src.models.sequence.simple_lm").SimpleLMHeadModel


def theirs_model(lm, kind, d_model, n_layer, d_inner, d_state):
    """SimpleLMHeadModel as their train.py builds it from synthetics/induction_head/{s4d,h3,transformer}.yaml."""
    if kind == "attention":
        return lm(d_model=d_model, n_layer=n_layer, d_inner=d_inner, vocab_size=V, resid_dropout=0.0,
                  embed_dropout=0.1, attn_layer_idx=list(range(n_layer)), attn_cfg={"num_heads": 1, "dropout": 0.1},
                  max_position_embeddings=POSITIONS)
    layer = {"s4d": dict(_name_="s4d", d_state=d_state, lr=SSM_LR, transposed=False, return_state=False),
             "h3": dict(_name_="h3", d_state=d_state, head_dim=1, mode="diag", measure="diag-lin", lr=SSM_LR)}[kind]
    return lm(d_model=d_model, n_layer=n_layer, d_inner=d_inner, vocab_size=V, resid_dropout=0.0, embed_dropout=0.1,
              layer=layer)


def our_arch(kind, d_model, n_layer, d_inner, d_state):
    """Our ZoologyConfig fields: the h3-induction paper preset, at these sizes."""
    from longsynth.models_ref.protocols.registry import architecture

    arch = dict(architecture("h3-induction", "paper", OURS[kind])["arch"])
    arch.update(d_model=d_model, n_layers=n_layer, d_inner=d_inner)
    if kind != "attention":
        arch["d_state"] = d_state
    return arch


def our_model(arch):
    from longsynth.models_ref.models.zoology import ZoologyAttention, ZoologyConfig

    return ZoologyAttention(ZoologyConfig(vocab_size=V, **arch))


def common_names(n_layer):
    names = {"word.weight": "backbone.embeddings.word_embeddings.weight",
             "ln_f.weight": "backbone.ln_f.weight", "ln_f.bias": "backbone.ln_f.bias"}
    for i in range(n_layer):
        for ours, theirs in (("norm1", "norm1"), ("norm2", "norm2"), ("state_mixer.fc1", "mlp.fc1"),
                             ("state_mixer.fc2", "mlp.fc2"), ("mixer.output_linear", "mixer.output_linear")):
            for kind in ("weight", "bias"):
                names[f"blocks.{i}.{ours}.{kind}"] = f"backbone.layers.{i}.{theirs}.{kind}"
    return names


def s4d_names(n_layer):
    """{our name: theirs}: S4D (s4d.py 268-325) -> SafariS4D; their lm_head.weight is E, tied."""
    names = common_names(n_layer)
    for i in range(n_layer):
        o, t = f"blocks.{i}.mixer.", f"backbone.layers.{i}.mixer."
        names.update({o + "D": t + "D", o + "C": t + "kernel.kernel.C", o + "log_dt": t + "kernel.kernel.log_dt",
                      o + "log_w_real": t + "kernel.kernel.log_w_real", o + "w_imag": t + "kernel.kernel.w_imag"})
    return names


def h3_names(n_layer):
    """{our name: theirs}: H3 (h3.py 20-71) -> zoology_mixers.H3 (ShiftSSM ``shift``, DiagSSM ``diag``)."""
    names = common_names(n_layer)
    for i in range(n_layer):
        o, t = f"blocks.{i}.mixer.", f"backbone.layers.{i}.mixer."
        for proj in ("q_proj", "k_proj", "v_proj"):
            for kind in ("weight", "bias"):
                names[f"{o}{proj}.{kind}"] = f"{t}{proj}.{kind}"
        names.update({o + "ssm_k_D": t + "ssm_k_D", o + "D": t + "D",
                      o + "shift.B": t + "ssm_k_kernel.kernel.B", o + "shift.C": t + "ssm_k_kernel.kernel.C"})
        for p in ("log_dt", "C", "B", "inv_A_real", "A_imag"):
            names[f"{o}diag.{p}"] = f"{t}kernel.kernel.{p}"
    return names


NAMES = {"s4d": s4d_names, "h3": h3_names, "attention": transformer_names}  # the last: bench/seq_icl_models.py
RESHAPED = ("mixer.C", "mixer.D")  # s4d: theirs [1, H, N/2, 2], [1, H] (channels 1); ours [H, N/2, 2], [H]


def count(model):
    return sum(p.numel() for p in model.parameters())  # a tied tensor once


def their_state(theirs, names, ours):
    """Their tensors under our names, in our shapes (S4D's C and D reshaped: the same values in the same order)."""
    tsd, osd = theirs.state_dict(), ours.state_dict()
    assert set(names.values()) | {k for k in tsd if k.endswith("lm_head.weight")} == set(tsd), \
        sorted(set(tsd) - set(names.values()))
    assert set(names) == set(osd), sorted(set(osd) ^ set(names))
    out = {}
    for o, t in names.items():
        v = tsd[t]
        if v.shape != osd[o].shape:
            assert o.endswith(RESHAPED) and v.numel() == osd[o].numel() and v.shape[0] == 1, (o, v.shape)
            v = v.reshape(osd[o].shape)
        out[o] = v.clone()
    return out


def logits_theirs(theirs, x):
    return theirs(x)[0].logits


@contextlib.contextmanager
def float64_uncast():
    """``Tensor.float()`` the identity on float64 tensors (both sides' casts to float32, see the docstring)."""
    cast = torch.Tensor.float
    torch.Tensor.float = lambda self, *a, **k: self if self.dtype == torch.float64 else cast(self, *a, **k)
    try:
        yield
    finally:
        torch.Tensor.float = cast


def compare(ours, theirs, x, dtype, uncast=False):
    ours, theirs = ours.to(dtype).eval(), theirs.to(dtype).eval()
    with torch.no_grad(), (float64_uncast() if uncast else contextlib.nullcontext()):
        return float((ours(x) - logits_theirs(theirs, x)).abs().max())


def their_optimizer(theirs):
    """train.py 472-492 at base.yaml's optimizer (adamw, lr 5e-4, weight_decay 0.1, betas (0.9, 0.999))."""
    hparams = dict(lr=5e-4, weight_decay=0.1, betas=(0.9, 0.999))
    all_params = list(theirs.parameters())
    opt = torch.optim.AdamW([p for p in all_params if not hasattr(p, "_optim")], **hparams)
    hps = [dict(s) for s in sorted(dict.fromkeys(frozenset(p._optim.items()) for p in all_params
                                                 if hasattr(p, "_optim")))]
    for hp in hps:
        opt.add_param_group({"params": [p for p in all_params if getattr(p, "_optim", None) == hp], **hparams, **hp})
    return opt


def _groups(opt):
    return sorted((len(g["params"]), g["lr"], g["weight_decay"]) for g in opt.param_groups)


def train_step(ours, theirs, names, x, y, train=True, seed=5):
    """Max abs differences of the loss's gradients (their C and D in our shapes) and of the weights after one
    AdamW step of each side's optimizer."""
    from longsynth.models_ref.training.config import TrainConfig
    from longsynth.models_ref.training.trainer import build_optimizer

    ours, theirs = ours.float().train(train), theirs.float().train(train)
    ours.zero_grad(set_to_none=True)
    theirs.zero_grad(set_to_none=True)
    opt_o = build_optimizer(ours, TrainConfig(steps=1, lr=5e-4, weight_decay=0.1))
    opt_t = their_optimizer(theirs)
    losses = []
    for model, out in ((ours, lambda: ours(x)), (theirs, lambda: logits_theirs(theirs, x))):
        torch.manual_seed(seed)
        loss = torch.nn.functional.cross_entropy(out().reshape(-1, V), y.reshape(-1), ignore_index=-100)
        loss.backward()
        losses.append(float(loss.detach()))
    tp = dict(theirs.named_parameters())
    pairs = [(n, po, tp[names[n]]) for n, po in ours.named_parameters()]
    per = {n: float((po.grad - pt.grad.reshape(po.shape)).abs().max()) for n, po, pt in pairs}
    worst = max(per, key=per.get)
    scale = max(float(pt.grad.abs().max()) for _, _, pt in pairs)
    opt_o.step()
    opt_t.step()
    with torch.no_grad():
        after = max(float((po - pt.reshape(po.shape)).abs().max()) for _, po, pt in pairs)
    return {"loss_ours": losses[0], "loss_theirs": losses[1], "max_abs_grad_diff": per[worst],
            "worst_grad": worst, "grad_scale": scale, "max_abs_weight_diff_after_step": after,
            "our_optimizer_groups": _groups(opt_o), "their_optimizer_groups": _groups(opt_t)}


def optim_marks(model, names=None):
    """{our name: _optim} of the parameters that carry one (theirs: under our names)."""
    back = {t: o for o, t in names.items()} if names else None
    return {(back[n] if back else n): dict(p._optim) for n, p in model.named_parameters() if hasattr(p, "_optim")}


def init_report(ours, theirs, names):
    """{tensor kind (our name without blocks.i.): (std ours, std theirs, mean ours, mean theirs)}."""
    tp = dict(theirs.named_parameters())
    kinds = {}
    for n, p in ours.named_parameters():
        kind = n.split(".", 2)[2] if n.startswith("blocks.") else n
        kinds.setdefault(kind, ([], []))
        kinds[kind][0].append(p.detach().flatten())
        kinds[kind][1].append(tp[names[n]].detach().flatten())
    out = {}
    for kind, (o, t) in kinds.items():
        o, t = torch.cat(o).double(), torch.cat(t).double()
        out[kind] = [float(o.std()), float(t.std()), float(o.mean()), float(t.mean())]
    return out


def run_model(kind, lm, sizes, rng, fixtures=None):
    torch.manual_seed(1)
    theirs = theirs_model(lm, kind, **sizes)
    arch = our_arch(kind, **sizes)
    torch.manual_seed(2)
    ours = our_model(arch)
    names = NAMES[kind](sizes["n_layer"])
    rec = {"sizes": sizes, "our_arch": arch, "params_theirs": count(theirs), "params_ours": count(ours),
           "names": names, "shapes_theirs": {n: list(p.shape) for n, p in theirs.named_parameters()},
           "shapes_ours": {n: list(p.shape) for n, p in ours.named_parameters()},
           "init": init_report(ours, theirs, names)}
    marks_t, marks_o = optim_marks(theirs, names), optim_marks(ours)
    rec["optim_theirs"], rec["optim_ours"] = marks_t, marks_o
    rec["optim_equal"] = marks_t == marks_o
    with torch.no_grad():  # weights off their init (zero biases, unit norms, shift B = e_0), on float16's grid
        for p in theirs.parameters():
            p.copy_((p + 0.1 * torch.randn_like(p)).half().float())
    sd = their_state(theirs, names, ours)
    ours.load_state_dict(sd, strict=True)
    x = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    y = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    y[:, ::5] = -100
    rec["T"] = T
    rec["max_abs_logit_diff_float32"] = compare(ours, theirs, x, torch.float32)
    rec["max_abs_logit_diff_float64"] = compare(ours, theirs, x, torch.float64)
    rec["max_abs_logit_diff_float64_uncast"] = compare(ours, theirs, x, torch.float64, uncast=True)
    with torch.no_grad():
        rec["logit_scale"] = float(logits_theirs(theirs.float().eval(), x).abs().max())
    if fixtures is not None:
        with torch.no_grad():
            fixtures[f"{kind}/x"] = x.numpy().astype(np.int64)
            fixtures[f"{kind}/y"] = logits_theirs(theirs.double().eval(), x).numpy()
            with float64_uncast():
                fixtures[f"{kind}/y_uncast"] = logits_theirs(theirs, x).numpy()
        for n, v in sd.items():
            assert torch.equal(v.half().float(), v)
            fixtures[f"{kind}/sd/{n}"] = v.half().numpy()  # their values, exactly
        fixtures[f"{kind}/arch"] = np.array(json.dumps(arch, sort_keys=True))
        fixtures[f"{kind}/optim_theirs"] = np.array(json.dumps(marks_t, sort_keys=True))
    rec["train"] = train_step(ours, theirs, names, x, y, train=True)
    rec["no_dropout"] = train_step(ours, theirs, names, x, y, train=False)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="a checkout of HazyResearch/safari @ 02220c6")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--fixtures", help="write their paper-size models' weights, input and logits here (npz)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lm = load(args.checkout)
    results = {"machine": machine(torch=torch.__version__),
               "sha256": {f: hashlib.sha256(open(os.path.join(args.checkout, f), "rb").read()).hexdigest()
                          for f in SOURCES}}
    rng = np.random.default_rng(0)
    fixtures = {} if args.fixtures else None
    for key, kind, sizes in (("s4d_paper", "s4d", PAPER), ("s4d_small", "s4d", SMALL), ("h3_paper", "h3", PAPER),
                             ("h3_small", "h3", SMALL), ("attention_paper", "attention", PAPER),
                             ("attention_small", "attention", SMALL)):
        rec = run_model(kind, lm, sizes, rng, fixtures if key.endswith("paper") else None)
        results[key] = rec
        tr, nd = rec["train"], rec["no_dropout"]
        print(f"{key}: params theirs {rec['params_theirs']:,} ours {rec['params_ours']:,}; max |logit diff| "
              f"float32 {rec['max_abs_logit_diff_float32']:.3g} float64 {rec['max_abs_logit_diff_float64']:.3g} "
              f"(uncast {rec['max_abs_logit_diff_float64_uncast']:.3g}) "
              f"(logits up to {rec['logit_scale']:.3g}); _optim marks equal: {rec['optim_equal']} "
              f"({len(rec['optim_theirs'])} theirs, {len(rec['optim_ours'])} ours, "
              f"{sorted({json.dumps(v, sort_keys=True) for v in rec['optim_theirs'].values()})})")
        for label, r in (("train mode", tr), ("dropout off", nd)):
            print(f"    {label}: loss {r['loss_ours']:.7f} / {r['loss_theirs']:.7f}, "
                  f"grads {r['max_abs_grad_diff']:.3g} "
                  f"({r['worst_grad']}; grads up to {r['grad_scale']:.3g}), weights after AdamW "
                  f"{r['max_abs_weight_diff_after_step']:.3g}; groups (n, lr, wd) ours {r['our_optimizer_groups']} "
                  f"theirs {r['their_optimizer_groups']}")
        for kind_, (so, st, mo, mt) in rec["init"].items():
            print(f"    init {kind_:24s} std ours {so:.5f} theirs {st:.5f}   mean ours {mo:+.5f} theirs {mt:+.5f}")
    if fixtures is not None:
        write_fixtures(args.fixtures, fixtures, results["sha256"])
    finish(results["machine"])
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
