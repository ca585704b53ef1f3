"""Remake tests/data/chomsky_rnns_authors.npz by running the Chomsky-hierarchy authors' own recurrent models.

    /tmp/jaxenv/bin/python bench/chomsky_rnn_fixtures.py CHECKOUT [--out tests/data/chomsky_rnns_authors.npz]

CHECKOUT is google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be in a folder named
``neural_networks_chomsky_hierarchy``; run it with a Python that has jax, dm-haiku, chex, dm-tree and einshape. Their
code is run, never copied: ``experiments/constants.py``'s MODEL_BUILDERS for ``rnn``, ``lstm``, ``stack_rnn`` and
``tape_rnn``, wrapped by ``experiments/utils.py``'s ``make_model_with_empty_targets`` as their training does, on
duplicate string (2 input symbols, 2 output classes) at length 7 (rows of 7 inputs and 14 empty tokens), 3 rows, at
small sizes (hidden 16, cells of 8, a stack and a tape of 40 cells: longer than the row, so none wraps), their
Haiku init moved by 0.1 N(0, 1) so that every term counts. Stored per model: every parameter (Haiku's name,
``w`` as [in, out]), the input symbols and their logits at the 14 output positions; and ``sha256/FILE`` of the
checkout's files that built them (as bench/_common.write_fixtures stores, which the JAX venv cannot import: it
needs numba and longsynth). tests/test_chomsky_rnns_authors.py loads them into ours.
"""
import argparse
import hashlib
import os
import sys

import numpy as np

SIZES = {"rnn": {}, "lstm": {}, "stack_rnn": {"stack_size": 40}, "tape_rnn": {"memory_size": 40}}
SOURCES = ["experiments/constants.py", "experiments/utils.py", "models/rnn.py", "models/stack_rnn.py",
           "models/tape_rnn.py", "tasks/cs/duplicate_string.py"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="neural_networks_chomsky_hierarchy @ 2b8eb4be (the folder of that name)")
    ap.add_argument("--out", default="tests/data/chomsky_rnns_authors.npz")
    a = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.checkout)))
    import haiku as hk
    import jax

    from neural_networks_chomsky_hierarchy.experiments import constants, utils

    task = constants.TASK_BUILDERS["duplicate_string"]()
    batch = task.sample_batch(jax.random.PRNGKey(1), length=7, batch_size=3)
    out = {"x": np.asarray(batch["input"]).argmax(-1)}
    for arch, sizes in SIZES.items():
        kwargs = dict(hidden_size=16, **sizes)
        if arch != "rnn" and arch != "lstm":
            kwargs["stack_cell_size" if arch == "stack_rnn" else "memory_cell_size"] = 8

        def build(x, arch=arch, kwargs=kwargs):
            model = constants.MODEL_BUILDERS[arch](output_size=task.output_size, return_all_outputs=True, **kwargs)
            return utils.make_model_with_empty_targets(model, task, 0, False)(x)
        model = hk.transform(build)
        params = model.init(jax.random.PRNGKey(0), batch["input"])
        keys = iter(jax.random.split(jax.random.PRNGKey(3), 64))
        params = jax.tree_util.tree_map(lambda p: p + 0.1 * jax.random.normal(next(keys), p.shape), params)
        out[f"{arch}/logits"] = np.asarray(model.apply(params, None, batch["input"]))
        for module, d in params.items():
            for name, value in d.items():
                out[f"{arch}/params/{module}/{name}"] = np.asarray(value)
    for f in SOURCES:
        with open(os.path.join(a.checkout, f), "rb") as src:
            out[f"sha256/{f}"] = np.array(hashlib.sha256(src.read()).hexdigest())
    np.savez_compressed(a.out, **out)
    stored = sorted(k for k in out if "/params/" in k or k.startswith("sha256/"))
    print(f"wrote {a.out} ({os.path.getsize(a.out):,} bytes): " + ", ".join(stored))


if __name__ == "__main__":
    main()
