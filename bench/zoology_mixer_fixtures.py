"""Remake tests/data/zoology_mixers.npz by running zoology's own LanguageModel with Figure 2's mixers.

    git -C <mirror of HazyResearch/zoology> archive d88d6f54 | tar -x -C /tmp/ref/zoology
    python bench/zoology_mixer_fixtures.py /tmp/ref/zoology [--out tests/data/zoology_mixers.npz]

zoology's code is run, never copied: its checkout is put on sys.path. Stand-ins where a package is
absent: ``torchvision.ops.StochasticDepth`` (model.py 6; at drop_path 0, config.py 108, it is the
identity), ``wandb`` and ``pandas`` (zoology/utils.py's logging helpers); ``opt_einsum`` (h3/ss_kernel.py 15)
and ``einops`` (mixers/attention.py 4) must be importable (``pip install --target DIR opt_einsum einops`` and
put DIR on PYTHONPATH); zoology/config.py needs ``pydantic`` (a dependency of the project).
TokenEmbeddings' device default "cuda" (model.py 21) is set to "cpu".

Per mixer m of MIXERS (configs.py 62-89, Figure 2's TransformerBlock with the Identity state mixer,
``max_position_embeddings=0``, configs.py 138-146) at V 32, d_model 16, two layers, l_max 32, built with
torch.manual_seed(0) and every trainable tensor then moved by 0.1 N(0, 1) (so that zero biases and unit
norms are checked too): ``m/sd/<zoology's name>`` its state_dict (float32; the tied lm_head left out),
``m/x<T>`` token ids [2, T] and ``m/y<T>`` zoology's logits [2, T, V] (``return_embeddings=False``) at
T = 32 and 20. ``counts``: rows (mixer index, input_seq_len, d_model, zoology's parameter count) at V 8192
over Figure 2's grid (configs.py 15-51). ``sha256/<file>``: the zoology sources that ran.

Figure 2's attention model (configs.py 54-61: MHA, dropout 0.1, one head; configs.py 142: a learned position
table of input_seq_len rows) the same way, after the mixers (their arrays do not depend on it), with
``max_position_embeddings = l_max`` = 32: ``attention/sd/<name>`` (the position table included),
``attention/x<T>``, ``attention/y<T>``; ``attention/heads2/y<T>``: zoology's logits for the same weights and
inputs with ``num_heads`` 2 (not a Figure 2 run: the head split and the 1/sqrt(head_dim) scale, which one
head cannot tell from 1/sqrt(d_model)); ``attention/counts``: rows (input_seq_len, d_model, zoology's
parameter count) at V 8192 over the grid.
"""
import argparse
import hashlib
import os
import sys
import types

import numpy as np

MIXERS = {  # ours: (zoology's class, its kwargs but l_max) as configs.py 62-89 name them
    "base-conv": ("zoology.mixers.base_conv.BaseConv", {"kernel_size": [3, -1, 3, -1]}),
    "hyena": ("zoology.mixers.hyena.Hyena", {}),
    "h3": ("zoology.mixers.h3.H3", {"head_dim": 2}),  # d_state = l_max below (configs.py 86)
}
ATTENTION = ("zoology.mixers.attention.MHA", {"dropout": 0.1, "num_heads": 1})  # configs.py 54-61
V, D, L_MAX, LENGTHS = 32, 16, 32, (32, 20)
GRID_L, GRID_D = (64, 128, 256, 512), (64, 128, 256, 512)
SOURCES = ("zoology/model.py", "zoology/mixers/base_conv.py", "zoology/mixers/convolution.py",
           "zoology/mixers/hyena.py", "zoology/mixers/h3/h3.py", "zoology/mixers/h3/ss_kernel.py",
           "zoology/mixers/h3/ss_kernel_diag.py", "zoology/mixers/h3/ss_kernel_shift.py", "zoology/mixers/h3/dplr.py",
           "zoology/mixers/attention.py")


def load(path):
    import torch

    try:
        import torchvision.ops  # noqa: F401
    except ImportError:
        ops = types.ModuleType("torchvision.ops")
        ops.StochasticDepth = lambda p, mode: torch.nn.Identity() if p == 0 else sys.exit("drop_path > 0")
        sys.modules["torchvision"], sys.modules["torchvision.ops"] = types.ModuleType("torchvision"), ops
    for name in ("wandb", "pandas"):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    sys.path.insert(0, path)
    from zoology.config import ModelConfig, ModuleConfig
    from zoology.model import LanguageModel, TokenEmbeddings

    defaults = TokenEmbeddings.__init__.__defaults__
    TokenEmbeddings.__init__.__defaults__ = tuple("cpu" if d == "cuda" else d for d in defaults)

    def build(mixer, L, d_model, vocab, heads=1):
        if mixer == "attention":  # configs.py 142: positions up to the input length, for attention only
            name, kwargs, positions = ATTENTION[0], {**ATTENTION[1], "num_heads": heads}, L
        else:
            name, kwargs = MIXERS[mixer]
            kwargs, positions = {**kwargs, "l_max": L, **({"d_state": L} if mixer == "h3" else {})}, 0
        cfg = ModelConfig(d_model=d_model, n_layers=2, block_type="TransformerBlock",
                          max_position_embeddings=positions, vocab_size=vocab,
                          sequence_mixer=ModuleConfig(name=name, kwargs=kwargs),
                          state_mixer=ModuleConfig(name="torch.nn.Identity", kwargs={}))
        return LanguageModel(cfg)

    return build


def record(build, mixer, arrays):
    """Build zoology's model at V, D, L_MAX (seed 0), move every trainable tensor by 0.1 N(0, 1), and store its
    state_dict, two inputs and its logits under ``mixer/``; returns the model."""
    import torch

    torch.manual_seed(0)
    model = build(mixer, L_MAX, D, V).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.1 * torch.randn(p.shape, generator=g))
        for name, t in model.state_dict().items():
            if name != "lm_head.weight":  # tied to the word embedding (model.py 312-313)
                arrays[f"{mixer}/sd/{name}"] = t.numpy().copy()
        for T in LENGTHS:
            x = torch.randint(0, V, (2, T), generator=g)
            y = model(x, return_embeddings=False)
            arrays[f"{mixer}/x{T}"], arrays[f"{mixer}/y{T}"] = x.numpy().astype(np.int16), y.numpy()
    print(f"{mixer}: {sum(p.numel() for p in model.parameters())} parameters at V {V}, d_model {D}, l_max {L_MAX}")
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("zoology", help="path of a zoology checkout (HazyResearch/zoology @ d88d6f54)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                  "zoology_mixers.npz"))
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    build = load(args.zoology)
    arrays = {}
    for rel in SOURCES:
        with open(os.path.join(args.zoology, rel), "rb") as f:
            arrays[f"sha256/{rel}"] = np.array(hashlib.sha256(f.read()).hexdigest())
    for mixer in MIXERS:
        record(build, mixer, arrays)
    counts = []
    for i, mixer in enumerate(MIXERS):
        for L in GRID_L:
            for d_model in GRID_D:
                m = build(mixer, L, d_model, 8192)
                counts.append((i, L, d_model, sum(p.numel() for p in m.parameters())))
    arrays["counts"] = np.array(counts, dtype=np.int64)
    arrays["mixers"] = np.array(list(MIXERS))
    model = record(build, "attention", arrays)
    two = build("attention", L_MAX, D, V, heads=2).eval()
    two.load_state_dict(model.state_dict())  # the same tensors: num_heads changes no shape
    with torch.no_grad():
        for T in LENGTHS:
            x = torch.from_numpy(arrays[f"attention/x{T}"].astype(np.int64))
            arrays[f"attention/heads2/y{T}"] = two(x, return_embeddings=False).numpy()
    rows = [(L, d_model, sum(p.numel() for p in build("attention", L, d_model, 8192).parameters()))
            for L in GRID_L for d_model in GRID_D]
    arrays["attention/counts"] = np.array(rows, dtype=np.int64)
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {args.out}: {os.path.getsize(args.out)} bytes, {len(counts)} + {len(rows)} parameter counts")


if __name__ == "__main__":
    main()
