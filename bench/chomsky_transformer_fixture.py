"""Remake tests/data/chomsky_transformer_authors.npz: the authors' Transformer encoder's outputs, for the
test that ``chomsky-transformer`` (models_ref/layers/chomsky_transformer.py) computes them.

    python bench/chomsky_transformer_fixture.py CHECKOUT [OUT]

CHECKOUT is a checkout of google-deepmind/neural_networks_chomsky_hierarchy (2b8eb4be), imported as
``neural_networks_chomsky_hierarchy`` through a link in a temporary folder (as bench/chomsky_fixtures.py
does). It needs jax, dm-haiku, chex and dm-tree (a CPU JAX is enough); the test that reads the file needs
none of them. Nothing of theirs is copied: the script runs their ``make_transformer_encoder`` (models/
transformer.py 453-501) wrapped by their ``make_model_with_empty_targets`` (experiments/utils.py 32-91) on
their ReverseString task, in float64 (``jax_enable_x64``), with dropout 0 (an evaluation without noise),
at small sizes (E 16, 2 layers, 4 heads of 4) so the file stays small; the default sizes are the test's
parameter count's.

Stored arrays: ``state/<name>``, the weights under our ChomskyModel's state_dict names (torch layout,
[out, in]), random and float32-exact (drawn by numpy, then put in place of Haiku's initial values, so the
LayerNorm offsets and the biases are not 0); ``input/<n>`` (int8 [ROWS, n]) ReverseString inputs of
length n; ``output/<n>`` (float64 [ROWS, n, 2]) their logits at the n output positions. ``meta`` (JSON):
the commit, the JAX and Haiku versions, the sizes.
"""
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "chomsky_transformer_authors.npz"
COMMIT = "2b8eb4bee872acf5b637fcc672f01c06939dc4ef"
SIZES = dict(embedding_dim=16, num_layers=2, num_heads=4, widening_factor=4)
LENGTHS = [1, 2, 5, 9]
ROWS = 3


def _ours(name):
    """Our state_dict name and whether the array is transposed, for a Haiku parameter 'module/param'."""
    module, param = name.rsplit("/", 1)
    parts = module.split("/")
    if parts == ["linear"]:
        return f"head.{'weight' if param == 'w' else 'bias'}", param == "w"
    if parts == ["transformer_encoder", "linear"]:
        return "core.embed.weight", True
    if len(parts) == 3:  # transformer_encoder/multi_head_dot_product_attention[_i]/linear[_j]: q, k, v, o
        i = int(parts[1].rsplit("_", 1)[1]) if parts[1][-1].isdigit() else 0
        j = int(parts[2].rsplit("_", 1)[1]) if parts[2][-1].isdigit() else 0
        return f"core.layers.{i}.{'qkvo'[j]}.weight", True
    kind, _, idx = parts[1].rpartition("_")
    if kind == "layer":  # "layer_norm" has no index
        kind, idx = "layer_norm", "0"
    if kind == "layer_norm":  # layer i: layer_norm_{2i} after the attention, layer_norm_{2i+1} after the MLP
        i, second = divmod(int(idx), 2)
        return f"core.layers.{i}.norm{1 + second}.{'weight' if param == 'scale' else 'bias'}", False
    i, second = divmod(int(idx) - 1, 2)  # transformer_encoder/linear_{2i+1}, linear_{2i+2}: the MLP of layer i
    return f"core.layers.{i}.ff{1 + second}.{'weight' if param == 'w' else 'bias'}", param == "w"


def main(root, out=OUT):
    import jax

    jax.config.update("jax_threefry_partitionable", False)
    jax.config.update("jax_enable_x64", True)
    import haiku as hk
    import jax.numpy as jnp

    tmp = tempfile.mkdtemp()
    os.symlink(os.path.abspath(root), os.path.join(tmp, "neural_networks_chomsky_hierarchy"))
    sys.path.insert(0, tmp)
    from neural_networks_chomsky_hierarchy.experiments import utils
    from neural_networks_chomsky_hierarchy.models import transformer
    from neural_networks_chomsky_hierarchy.tasks.dcf import reverse_string

    task = reverse_string.ReverseString()
    model = transformer.make_transformer_encoder(output_size=task.output_size, return_all_outputs=True,
                                                 dropout_prob=0.0, **SIZES)
    f = hk.transform(utils.make_model_with_empty_targets(model, task))
    one_hot = lambda ids: jax.nn.one_hot(jnp.asarray(ids), task.input_size, dtype=jnp.float64)  # noqa: E731
    rng = np.random.default_rng(0)
    ids = {n: rng.integers(0, task.input_size, (ROWS, n)).astype(np.int8) for n in LENGTHS}
    params = f.init(jax.random.PRNGKey(0), one_hot(ids[LENGTHS[0]]))
    state, new = {}, {}
    for module, leaves in params.items():
        new[module] = {}
        for param, value in leaves.items():
            shape = np.shape(value)
            if len(shape) == 2:  # weights [in, out]
                w = rng.normal(0.0, 1.0 / np.sqrt(shape[0]), shape)
            elif param == "scale":
                w = 1.0 + 0.3 * rng.normal(size=shape)
            else:  # biases and offsets
                w = 0.3 * rng.normal(size=shape)
            w = w.astype(np.float32).astype(np.float64)
            new[module][param] = jnp.asarray(w)
            name, transpose = _ours(f"{module}/{param}")
            assert name not in state, name
            state[name] = (w.T if transpose else w).astype(np.float32)
    arrays = {f"state/{k}": v for k, v in state.items()}
    for n in LENGTHS:
        y = np.asarray(f.apply(new, jax.random.PRNGKey(1), one_hot(ids[n])))  # [ROWS, n, O] float64
        assert y.dtype == np.float64 and y.shape == (ROWS, n, task.output_size), (y.dtype, y.shape)
        arrays[f"input/{n}"], arrays[f"output/{n}"] = ids[n], y
    meta = dict(commit=COMMIT, jax=jax.__version__, haiku=hk.__version__, sizes=SIZES, lengths=LENGTHS, rows=ROWS,
                task="reverse_string", dropout_prob=0.0, dtype="float64")
    np.savez_compressed(out, meta=np.array(json.dumps(meta)), **arrays)
    print(f"{out}: {len(state)} weights, lengths {LENGTHS}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *(sys.argv[2:]))
