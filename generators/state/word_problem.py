"""Word problems on finite groups: given a sequence of group elements, every prefix product.

Definition (docs/tasks/state-tracking.md, "word-problem"): the group G is named by factors
joined by ``x`` (or the authors' ``_x_``): ``Sn`` the symmetric group on n letters, ``An``
the alternating group, ``Zn`` the cyclic group. Element order (the authors'): S_n is the
permutations of 1..n in lexicographic order, index 0 the identity; A_n the even ones in that
order; Z_n the residues 0..n-1 with (a + b) mod n; a product G x H indexes (g, h) as
g * |H| + h (several factors: mixed radix, the first factor most significant). Composition
(a b)(i) = a(b(i)). A sample is k elements x_1..x_k; the prefix products are
s_t = x_1 x_2 ... x_t (s_0 the identity, s_t = s_{t-1} x_t).

Tokens: element ids 0..|G|-1, then the authors' special tokens |G| + (0 [PAD], 1 [BOS],
2 [UNK], 3 [EOS], 4 [SEP], 5 [CLS], 6 [MASK]). Keys: ``inputs`` [k + 1] = BOS, x_1..x_k;
``targets`` [k + 1] = BOS, s_1..s_k (the authors' labels: BOS at position 0, scored as
theirs). int8 while |G| + 7 <= 127, else int16 (|G| <= 5040).

Draw order: stream(seed, split, index): x_1..x_k, each randint(|G|), in order.

Worked example (S3, k = 4): S3's elements in order are 0 (1 2 3), 1 (1 3 2), 2 (2 1 3),
3 (2 3 1), 4 (3 1 2), 5 (3 2 1). x = 1, 2, 2, 3:
    s_1 = 1; s_2 = (1 3 2)(2 1 3) = (3 1 2) = 4; s_3 = (3 1 2)(2 1 3) = (1 3 2) = 1;
    s_4 = (1 3 2)(2 3 1) = (3 2 1) = 5
    inputs  [7, 1, 2, 2, 3]    (BOS = |G| + 1 = 7)
    targets [7, 1, 4, 1, 5]

The Cayley table of G is built once per group (NumPy, cached) and the kernel scans it.
The authors' exact stream (``authors``): their generate_data.py for random.seed(seed), with
Python's random.choices and their de-duplication through a set.
"""
import functools
import itertools
import math
import random
import re
import sys
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators._tokens import REVISION, token_dtype
from longsynth.rng import randint, split_name, stream
from longsynth.task import KeySpec, Task, param

SPECIAL = ("[PAD]", "[BOS]", "[UNK]", "[EOS]", "[SEP]", "[CLS]", "[MASK]")
BOS = SPECIAL.index("[BOS]")  # offset after the |G| element ids
MAX_ORDER = 5040  # |S7|: a 5040 x 5040 table is 100 MB as int32
MAX_PERM_LETTERS = 7
_FACTOR = re.compile(r"([SAZ])([1-9][0-9]*)")  # whole factors only: fullmatch ($ would let a newline end one)
CITATION = """@inproceedings{merrill2024illusion,
  title     = {The Illusion of State in State-Space Models},
  author    = {Merrill, William and Petty, Jackson and Sabharwal, Ashish},
  booktitle = {International Conference on Machine Learning (ICML)},
  note      = {arXiv:2404.08819},
  year      = {2024}
}"""


@dataclass(frozen=True)
class WordProblemConfig:
    group: str = param("A5", "the group: factors Sn, An, Zn joined by x (A4xZ5) or the authors' _x_ (A4_x_Z5)")
    k: int = param(10, "sequence length: k elements, k prefix products", lo=1, hi=1 << 16)


def parse_group(name):
    """[(kind, n), ...] of a group name; LongsynthError naming what is wrong."""
    if not isinstance(name, str) or not name:
        raise LongsynthError(f"group: must be factors such as S5, A5, Z60 joined by x, got {name!r}")
    factors = []
    for part in name.replace("_x_", "x").split("x"):
        m = _FACTOR.fullmatch(part)
        if m is None:
            raise LongsynthError(f"group: {part!r} in {name!r} is not Sn, An or Zn (n >= 1)")
        kind, n = m.group(1), int(m.group(2))
        if kind in "SA" and n > MAX_PERM_LETTERS:
            raise LongsynthError(f"group: {part!r}: permutation groups up to {MAX_PERM_LETTERS} letters")
        if kind == "Z" and n > MAX_ORDER:
            raise LongsynthError(f"group: {part!r}: cyclic groups up to Z{MAX_ORDER}")
        factors.append((kind, n))
    if group_order(factors) > MAX_ORDER:
        raise LongsynthError(f"group: {name!r} has {group_order(factors)} elements; at most {MAX_ORDER}")
    if group_order(factors) < 2:
        raise LongsynthError(f"group: {name!r} has one element: every prefix product is the identity, no task")
    return factors


def _factor_order(kind, n):
    if kind == "Z":
        return n
    full = 1
    for i in range(2, n + 1):
        full *= i
    return full if kind == "S" or n < 2 else full // 2


def group_order(factors):
    order = 1
    for kind, n in factors:
        order *= _factor_order(kind, n)
    return order


def permutations(n):
    """int8 [n!, n]: the permutations of 0..n-1 (letters 1..n less one) in lexicographic order."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int8).reshape(-1, n)


def _perm_codes(perms, n):
    """Base-n code of each row; lexicographic order of permutations is the order of codes."""
    weights = n ** np.arange(n - 1, -1, -1, dtype=np.int64)
    return perms.astype(np.int64) @ weights


def _permutation_table(perms):
    """Cayley table of the permutations ``perms`` (rows in lexicographic order, closed under
    composition): table[a, b] = index of a o b, (a o b)(i) = a(b(i))."""
    count, n = perms.shape
    codes = _perm_codes(perms, n)
    table = np.empty((count, count), dtype=np.int32)
    for a in range(count):
        composed = perms[a][perms]  # row b: a(b(i)) for i in 0..n-1
        table[a] = np.searchsorted(codes, _perm_codes(composed, n))
    return table


def _factor_table(kind, n):
    if kind == "Z":
        r = np.arange(n, dtype=np.int32)
        return (r[:, None] + r[None, :]) % n
    perms = permutations(n)
    if kind == "A":
        perms = perms[_even(perms)]
    return _permutation_table(perms)


def _even(perms):
    """Boolean mask of the even permutations (an even number of inversions)."""
    n = perms.shape[1]
    inversions = np.zeros(perms.shape[0], dtype=np.int64)
    for i in range(n):
        for j in range(i + 1, n):
            inversions += perms[:, i] > perms[:, j]
    return inversions % 2 == 0


@functools.lru_cache(maxsize=16)
def cayley_table(group):
    """int32 [|G|, |G|] (read-only): table[a, b] = the index of a b, element 0 the identity."""
    table = np.zeros((1, 1), dtype=np.int32)
    for kind, n in parse_group(group):
        t = _factor_table(kind, n)
        h = t.shape[0]
        table = (table[:, None, :, None] * h + t[None, :, None, :]).reshape(table.shape[0] * h, -1)
        table = table.astype(np.int32)
    table.setflags(write=False)
    return table


@njit(cache=True)
def word_problem_one(seed, split, index, table, bos, inp, tgt):
    """inp, tgt [k + 1]: BOS and k uniform elements; BOS and their prefix products."""
    s = stream(seed, split, index)
    order = table.shape[0]
    inp[0] = bos
    tgt[0] = bos
    acc = 0
    for t in range(1, inp.shape[0]):
        x = randint(s, order)
        acc = table[acc, x]
        inp[t] = x
        tgt[t] = acc


@njit(cache=True, parallel=True)
def word_problem_fill(seed, split, start, table, bos, inp, tgt):
    for b in prange(inp.shape[0]):
        word_problem_one(seed, split, start + b, table, bos, inp[b], tgt[b])


def vocab_size(cfg):
    return group_order(parse_group(cfg.group)) + len(SPECIAL)


def _keys(cfg):
    return {
        "inputs": KeySpec(token_dtype(vocab_size(cfg)), (cfg.k + 1,), doc="BOS, then k element ids"),
        "targets": KeySpec(token_dtype(vocab_size(cfg)), (cfg.k + 1,), doc="BOS, then the k prefix products"),
    }


def _fill(cfg, seed, split, start, out, fixed):
    table = cayley_table(cfg.group)
    word_problem_fill(seed, split, start, table, table.shape[0] + BOS, out["inputs"], out["targets"])


def _check(cfg):
    parse_group(cfg.group)


def _vocab(cfg):
    return [str(i) for i in range(group_order(parse_group(cfg.group)))] + list(SPECIAL)


def prefix_products(table, seqs):
    """int64 [n, k]: the prefix products of each row of ``seqs`` through ``table``."""
    out = np.empty(seqs.shape, dtype=np.int64)
    acc = np.zeros(seqs.shape[0], dtype=np.int64)
    for t in range(seqs.shape[1]):
        acc = table[acc, seqs[:, t]]
        out[:, t] = acc
    return out


def _authors_set(order, k, count, seed):
    """The set the authors' generate_data.py builds for ``samples=count`` and
    ``random.seed(seed)``: tuples of random.choices(range(order), k=k) added until it holds
    ``count``; its iteration order is the CSV's row order."""
    rnd = random.Random(seed)
    population = range(order)
    seen = set()
    while len(seen) < count:  # count <= order^k (authors() refuses more): a new tuple has probability > 0
        seen.add(tuple(rnd.choices(population, k=k)))
    return seen


def authors_sequences(order, k, count, seed):
    """int64 [count, k]: the rows of the authors' generate_data.py for ``samples=count`` and
    ``random.seed(seed)``: tuples of random.choices(range(order), k=k) added to a set until
    it holds ``count``, then the set in its iteration order."""
    return np.array(list(_authors_set(order, k, count, seed)), dtype=np.int64).reshape(count, k)


def _set_bytes(order, k):
    """About the bytes one distinct tuple takes in that set: the tuple, its share of the set's
    table (16-byte slots, at most 5 per entry as the table grows) and, for elements above 256
    (not CPython's shared small ints), an int object (32 bytes) per element."""
    return sys.getsizeof((0,) * k) + 80 + (32 * k if order > 257 else 0)


def _authors_open(cfg, count, seed, split):
    """The authors' stream: {"inputs", "targets"} int64 [count, k + 1] (docs page, "The
    authors' stream"). Only their CSV before the split exists for a seed: their 80/20
    train/test split is drawn unseeded, so it is not reproducible and only split="train"
    (the CSV's rows) is served. A Stream (generators/_authors.py): the CSV's order is the set's
    iteration order, known only once the set holds every row, so the set is built first and
    kept (``_set_bytes`` a row); the rows and their prefix products follow block by block."""
    if split_name(split) != "train":
        raise LongsynthError(
            "split: the word-problem authors split their CSV 80/20 without a seed; only "
            "split='train' (the CSV's rows in order) is their exact stream"
        )
    order = group_order(parse_group(cfg.group))
    # k log2(order) >= 64 holds more sequences than any count (< 2^63): no big power computed
    if cfg.k * math.log2(order) < 64 and count > order ** cfg.k:
        raise LongsynthError(f"count: {cfg.group} has only {order}^{cfg.k} = {order ** cfg.k} distinct sequences")
    return Stream(count, _authors_blocks(cfg, order, count, seed, block_rows((cfg.k + 1,))), (cfg.k + 1,),
                  side_bytes=count * _set_bytes(order, cfg.k) + _table_bytes(order),
                  side_doc=f"the set of every distinct sequence, whose iteration order is the rows' order, and "
                           f"{cfg.group}'s Cayley table")


def _table_bytes(order):
    """The most bytes ``cayley_table`` holds while it builds the int32 [order, order] table, which the
    stream keeps beside the set: three tables (a factor's, the product's and its int32 copy; measured,
    S7's 96 MiB table peaks at 290 MiB)."""
    return 3 * 4 * order * order


def _authors_blocks(cfg, order, count, seed, block):
    seen = _authors_set(order, cfg.k, count, seed)
    table = cayley_table(cfg.group)
    rows = iter(seen)
    for lo in range(0, count, block):
        n = min(block, count - lo)
        seqs = np.array(list(itertools.islice(rows, n)), dtype=np.int64).reshape(n, cfg.k)
        bos = np.full((n, 1), order + BOS, dtype=np.int64)
        yield {"inputs": np.concatenate([bos, seqs], axis=1),
               "targets": np.concatenate([bos, prefix_products(table, seqs)], axis=1)}


authors = Authors(_authors_open)  # called: the whole CSV


TASK = Task(
    name="word-problem",
    config=WordProblemConfig,
    summary="prefix products of k uniform elements of a finite group (S5, A5, A4xZ5, Z60, ...)",
    keys=_keys,
    fill=_fill,
    check=_check,
    vocab=_vocab,
    family="tokens",
    revision=REVISION,
    vocab_size=vocab_size,
    authors=authors,
    citation=CITATION,
    card="inputs: BOS and k element ids drawn uniformly from the group (elements in the authors' order: "
    "permutations of 1..n lexicographic, A_n the even ones, products indexed i*|H|+j); targets: BOS and "
    "the prefix products s_t = x_1 ... x_t with (a b)(i) = a(b(i)).",
)
