"""Byte-identity guard: SHA-256 digests of a few samples of every registered task.

A refactor must leave every sample byte for byte as it was; a change of law is made on
purpose, with the task's revision raised and its entries here regenerated in the same
commit. Regenerate with ``python tests/test_digests.py --write`` (every entry) or
``--write --only TASK`` (one task's entries), and say why in the commit.
"""
import hashlib
import json
import os
import sys

import numpy as np
import pytest

from longsynth import api, registry

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "data", "digests.json")
SEED, SPLIT, COUNT = 7, "val", 4

# beyond each task's defaults: the other sizes and options whose kernels differ
EXTRA = {
    "pathfinder-seg": [dict(size=256), dict(distractor_tries=0), dict(exact_restarts=False)],
    "pathfinder": [dict(size=64, difficulty="easy"), dict(size=128), dict(exact_restarts=False),
                   dict(distractor_tries=0, difficulty="medium")],
    "word-problem": [dict(group="S5", k=16), dict(group="A4xZ5", k=3)],
    "modular-arithmetic": [dict(brackets=True), dict(brackets=True, mult=True, vocab_size=20)],
}


def cases():
    """(task, params) pairs: every registered task at its defaults, then EXTRA."""
    out = []
    for name in registry.all_tasks():
        out.append((name, {}))
        out += [(name, p) for p in EXTRA.get(name, [])]
    return out


def case_id(name, params):
    return name + json.dumps(params, sort_keys=True)


def digest(name, params):
    """SHA-256 over samples 0..COUNT-1: each key's name, dtype, shape and bytes, keys sorted."""
    h = hashlib.sha256()
    for i in range(COUNT):
        s = api.sample(name, i, seed=SEED, split=SPLIT, **params)
        for k in sorted(s):
            a = np.ascontiguousarray(s[k])
            h.update(f"{i}:{k}:{a.dtype.str}:{a.shape}:".encode())
            h.update(a.tobytes())
    return h.hexdigest()


def _reference():
    with open(REF) as f:
        return json.load(f)


@pytest.mark.parametrize("name,params", cases(), ids=[case_id(*c) for c in cases()])
def test_samples_are_byte_identical(name, params):
    ref = _reference()
    key = case_id(name, params)
    assert key in ref, f"{key} has no digest: regenerate tests/data/digests.json (see the module docstring)"
    assert digest(name, params) == ref[key], f"samples of {key} changed"


def test_every_task_has_a_digest():
    names = {k.split("{")[0] for k in _reference()}
    assert names == set(registry.all_tasks())


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit(__doc__)
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    ref = _reference() if only and os.path.exists(REF) else {}
    ref = {k: v for k, v in ref.items() if k.split("{")[0] != only}
    for name, params in cases():
        if only is None or name == only:
            ref[case_id(name, params)] = digest(name, params)
    with open(REF, "w") as f:
        json.dump(dict(sorted(ref.items())), f, indent=1)
        f.write("\n")
