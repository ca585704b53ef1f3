"""Grazzi et al.'s own streams (automl/unlocking_state_tracking @ df8f8407,
xlstm/experiments/data/formal_language): their task functions, one example per call with
``default_rng(base + i)``, ``base = default_rng(split_seed).integers(2^32 - count)``, the split
seeds ``random.Random(seed).randint(0, 2^32)`` for train, validation, test in order; made block
by block (generators/_authors.py). docs/tasks/state-tracking.md, "The authors' streams", and
tests/test_state_tracking.py checks them against fixtures made by running their code.
"""
import random

import numpy as np

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators._tokens import IGNORE
from longsynth.rng import SPLITS, split_name

SPLIT_ORDER = ("train", "val", "test")  # the order the authors draw their split seeds in
PLUS, MINUS, TIMES, EQUALS = 1, 2, 3, 4  # modular arithmetic without brackets: the operators' and '=' ids


def split_lengths(cfg, split):
    """(lo, hi) of a split code: train the train range, val and test the test range."""
    if split == SPLITS["train"]:
        return cfg.min_sequence_length, cfg.max_sequence_length
    return cfg.test_min_sequence_length, cfg.test_max_sequence_length


def authors_split_seeds(seed):
    """{split name: seed} as the authors' dataset draws them: random.Random(seed).randint(0, 2^32)
    for train, validation and test, in that order."""
    rnd = random.Random(seed)
    return {name: rnd.randint(0, 1 << 32) for name in SPLIT_ORDER}


def _authors_base(split_seed, count):
    return int(np.random.default_rng(split_seed).integers((1 << 32) - count))


def _authors_parity_raw(rng, cfg, lo, hi):
    c, v = cfg.context_length, cfg.vocab_size
    w = np.zeros(c, dtype=np.int64)
    w[:-1] = rng.integers(1, v, size=[1, c - 1])[0]
    n = int(rng.integers(lo, hi + 1, size=[1])[0])
    w[n - 1:] = 0
    w[n - 1] = (int(w[: n - 1].sum()) - n + 1) % (v - 1) + 1
    return w, n - 1


def _authors_modular_raw(rng, cfg, lo, hi):
    c, v = cfg.context_length, cfg.vocab_size
    w = rng.integers(v - 5, size=[1, c])[0] + 5
    w[1::2] = rng.integers(3, size=[1, c // 2])[0] + 1
    r_lo = min((lo + 1) // 2, (hi + 1) // 2)
    n = int(2 * rng.integers(r_lo, (hi + 1) // 2 + 1, size=[1])[0] - 1)
    w[n - 2] = EQUALS
    w[n:] = 0
    # their evaluation runs in NumPy int64 (a product of > 27 factors could wrap; kept as theirs)
    total, sign, term = np.int64(0), 1, w[0] - 5
    for j, tok in enumerate(w[1: n - 2]):
        if j % 2 == 0:
            if tok != TIMES:
                total += sign * term
                term = np.int64(1)
                sign = -1 if tok == MINUS else 1
        else:
            term *= tok - 5
    total += sign * term
    w[n - 1] = total % (v - 5) + 5
    return w, n - 1


def _authors_expression(rng, m, length, n_ops):
    """(tokens, value) as the authors' recursive generator draws them; tokens are strings."""
    if length < 5:
        t = int(rng.integers(m))
        forms = {1: ([str(t)], t), 2: (["-", str(t)], -t % m), 3: (["(", str(t), ")"], t),
                 4: (["(", "-", str(t), ")"], -t % m)}
        return forms[length]
    a = int(rng.integers(1, length - 3))
    lt, lv = _authors_expression(rng, m, a, n_ops)
    rt, rv = _authors_expression(rng, m, length - a - 3, n_ops)
    op = int(rng.integers(0, n_ops))
    value = ((lv + rv) % m, (lv - rv) % m, (lv * rv) % m)[op]
    return ["("] + lt + ["+-*"[op]] + rt + [")"], value


def _authors_brackets_raw(rng, cfg, lo, hi):
    m = cfg.vocab_size - 7
    ids = {"+": m, "-": m + 1, "*": m + 2, "(": m + 3, ")": m + 4, "=": m + 5, "[PAD]": m + 6}
    n = max(int(rng.integers(lo, hi + 1)), 5)
    tokens, value = _authors_expression(rng, m, n - 3, 3 if cfg.mult else 2)
    tokens = tokens + ["=", str(value), "[PAD]"]
    w = np.full(cfg.context_length, ids["[PAD]"], dtype=np.int64)
    w[: len(tokens)] = [ids[t] if t in ids else int(t) for t in tokens]
    return w, n - 2


def _authors(raw):
    def open_stream(cfg, count, seed, split):
        """The authors' stream {"inputs", "targets"} int64 [count, context_length - 1], as a Stream
        (generators/_authors.py): example i from its own seed base + i, nothing kept between them."""
        name = split_name(split)
        if count >= 1 << 32:
            raise LongsynthError("count: the authors' seeding needs count < 2^32")
        lengths = split_lengths(cfg, SPLITS[name])
        base = _authors_base(authors_split_seeds(seed)[name], count)  # example i's seed: base + i
        c = cfg.context_length
        return Stream(count, _authors_blocks(raw, cfg, count, lengths, base, block_rows((c - 1,))), (c - 1,))
    return Authors(open_stream)


def _authors_blocks(raw, cfg, count, lengths, base, block):
    lo, hi = lengths
    c = cfg.context_length
    for start in range(0, count, block):
        n = min(block, count - start)
        inputs = np.empty((n, c - 1), dtype=np.int64)
        targets = np.full((n, c - 1), IGNORE, dtype=np.int64)
        for i in range(n):
            w, answer = raw(np.random.default_rng(base + start + i), cfg, lo, hi)
            inputs[i] = w[:-1]
            if answer < c - 1:
                inputs[i, answer] = 0  # their pad index hides the answer
            targets[i, answer - 1] = w[answer]
        yield {"inputs": inputs, "targets": targets}


_authors_plain = _authors(_authors_modular_raw)
_authors_brackets = _authors(_authors_brackets_raw)
authors_parity = _authors(_authors_parity_raw)


def _authors_modular_open(cfg, count, seed, split):
    """The authors' stream of modular_arithmetic or, with brackets, modular_arithmetic_with_brackets."""
    return (_authors_brackets if cfg.brackets else _authors_plain).open(cfg, count, seed, split)


authors_modular = Authors(_authors_modular_open)
