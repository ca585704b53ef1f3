"""associative-recall and induction-head: H3's synthetics as safari generates them
(docs/tasks/safari.md).

Vocabulary (safari's ``Vocab``): V = vocab_size tokens counting the two special ones. The
n = V - 2 ordinary tokens are the strings "0".."n-1"; with "." (noop) and "=>" (the copy
prefix) they are sorted as strings, which gives ids: "." = 0, the ordinary strings in
string order = 1..n ("0", "1", "10", "11", ..., "2", ...), "=>" = n + 1. ``vocab(cfg)``
lists them.

A sequence s is made as below; inputs = s[:-1], targets = s[1:] on the train split (safari
trains on every next token) and, on val and test, targets -100 except the answer (the last
position for associative-recall, the last induction_len for induction-head), as safari's
test set.

associative-recall (``generate_assoc_recall``): K = n // 2 keys (ids 1..K), values ids
K+1..n; a key is a tuple of num_keys keys (T = K^num_keys tuples, numbered in lexicographic
order, the first key most significant). Every tuple gets a value; then P = L // (num_keys + 1)
pairs ``k v`` of uniform tuples; then ``=> k v`` for a query tuple k. With allow_dot off the
query is uniform among the tuples present in the pairs; with allow_dot on it is uniform
among all, and its answer is "." when absent. Length P (num_keys + 1) + num_keys + 2.

induction-head (``generate_induction_head``): L uniform ordinary tokens, then "=>"; then,
with probability 1/2 one trigger, else induction_num_triggers: trigger positions uniform on
[0, L - 1 - induction_len), sorted, each kept if more than induction_len after the last kept;
the induction_len tokens after the first kept trigger are the answer; at every kept trigger
"=>" is written followed by the answer; the answer is appended. Length L + 1 + induction_len.

Draw order (stream(seed, split, index)):
    associative-recall  values: for t = 0..T-1: K + 1 + below(n - K)
                        pairs: P times t = below(T)
                        query: t = below(T), redrawn while absent unless allow_dot
                        (P >= 1 then: input_seq_len >= num_keys + 1, so some t is present)
    induction-head      L tokens 1 + below(n); u = uniform(); (1 if u < 0.5 else
                        induction_num_triggers) positions below(L - 1 - induction_len)
    (below: longsynth.rng's exact multiply-shift draw of [0, n))

Worked example (associative-recall, V = 10: n = 8, ids "." 0, "0".."7" 1..8, "=>" 9; keys
1..4, values 5..8; L = 8): values of keys 1..4: (7, 5, 8, 7); pairs 2 4 1 2; query 4:
    s        2 5 4 7 1 7 2 5 9 4 7
    inputs   2 5 4 7 1 7 2 5 9 4       targets (train) 5 4 7 1 7 2 5 9 4 7
                                       targets (test)  -100 x 9, 7

``authors`` is safari's own per-example stream (np.random.default_rng calls in its order),
see ``authors_recall`` and ``authors_induction``.
"""
from dataclasses import dataclass, replace

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators._tokens import IGNORE, REVISION, token_dtype
from longsynth.rng import below, stream, uniform
from longsynth.task import KeySpec, Task, param

MAX_L = 1 << 20
MAX_V = 1 << 16
MAX_TUPLES = 1 << 20  # key tuples of associative-recall (K^num_keys)
TRAIN = 1  # longsynth.rng.SPLITS["train"]: every next token scored
# safari draws train then test from one default_rng(seed); its per-example stream here takes
# default_rng(seed + offset) per split
AUTHORS_SEED_OFFSET = {"train": 0, "val": 1, "test": 2}

RECALL_PRESETS = {  # preset: (vocab_size, input_seq_len)
    "safari": (20, 40),  # safari's data module (configs/dataset/icl_synthetics.yaml)
    "h3": (10, 20),  # H3 Table 1 (configs .../associative_recall/vocab_size_10.yaml)
    "hyena-131k": (30, 131072),  # Hyena's long recall (configs .../hyena-131k-30vs.yaml)
}
INDUCTION_PRESETS = {
    "safari": (20, 30),  # safari's induction_head pipeline = H3 Table 1
    "h3": (20, 30),
    "mamba": (16, 256),  # Mamba's induction heads: vocabulary 16, trained at 256
}

H3 = """@inproceedings{fu2023hungry,
  title     = {Hungry Hungry Hippos: Towards Language Modeling with State Space Models},
  author    = {Fu, Daniel Y. and Dao, Tri and Saab, Khaled K. and Thomas, Armin W. and Rudra, Atri and R{\\'e},
               Christopher},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2023}
}"""


def vocabulary(vocab_size):
    """safari's token strings by id: sorted("0".."n-1", ".", "=>") with n = vocab_size - 2."""
    return sorted([str(v) for v in range(vocab_size - 2)] + [".", "=>"])


@dataclass(frozen=True)
class RecallConfig:
    preset: str = param("safari", "settings: safari (V 20, L 40), h3 (Table 1: V 10, L 20), hyena-131k "
                        "(V 30, L 131072)", choices=tuple(RECALL_PRESETS))
    vocab_size: int | None = param(None, "tokens, the two special ones included (preset 20 / 10 / 30)", lo=4, hi=MAX_V)
    input_seq_len: int | None = param(None, "length of the key-value part (preset 40 / 20 / 131072)", lo=2, hi=MAX_L)
    num_keys: int = param(1, "tokens per key", lo=1, hi=20)
    allow_dot: bool = param(False, "query any key (answer '.' when absent) instead of a present one")


@dataclass(frozen=True)
class InductionConfig:
    preset: str = param("safari", "settings: safari and h3 (Table 1: V 20, L 30), mamba (V 16, L 256)",
                        choices=tuple(INDUCTION_PRESETS))
    vocab_size: int | None = param(None, "tokens, the two special ones included (preset 20 / 20 / 16)", lo=3,
                                   hi=MAX_V)
    input_seq_len: int | None = param(None, "random tokens before the final '=>' (preset 30 / 30 / 256)", lo=3,
                                      hi=MAX_L)
    induction_len: int = param(1, "tokens copied after each '=>'", lo=1, hi=MAX_L)
    induction_num_triggers: int = param(1, "trigger positions drawn when not 1 (each case has probability 1/2)",
                                        lo=1, hi=MAX_L)


def _resolve(presets):
    def resolve(cfg):
        v, L = presets[cfg.preset]
        cfg = replace(cfg, vocab_size=v if cfg.vocab_size is None else cfg.vocab_size,
                      input_seq_len=L if cfg.input_seq_len is None else cfg.input_seq_len)
        return cfg
    return resolve


def _check_recall(cfg):
    v, L = RECALL_PRESETS[cfg.preset]
    n = (v if cfg.vocab_size is None else cfg.vocab_size) - 2
    L = L if cfg.input_seq_len is None else cfg.input_seq_len
    if (n // 2) ** cfg.num_keys > MAX_TUPLES:
        raise LongsynthError(f"num_keys: {n // 2}^{cfg.num_keys} key tuples is more than {MAX_TUPLES:,}")
    if not cfg.allow_dot and L < cfg.num_keys + 1:  # no pair, so no present key to query (recall_one)
        raise LongsynthError(f"input_seq_len: must be >= num_keys + 1 = {cfg.num_keys + 1} (one key-value pair) "
                             f"unless allow_dot, got {L}")


def _check_induction(cfg):
    _, L = INDUCTION_PRESETS[cfg.preset]
    L = L if cfg.input_seq_len is None else cfg.input_seq_len
    if cfg.induction_len > L - 2:
        raise LongsynthError(f"induction_len: must be <= input_seq_len - 2 = {L - 2}, got {cfg.induction_len}")


def _recall_len(cfg):
    return (cfg.input_seq_len // (cfg.num_keys + 1)) * (cfg.num_keys + 1) + cfg.num_keys + 2


def _induction_len(cfg):
    return cfg.input_seq_len + 1 + cfg.induction_len


# ---------------------------------------------------------------- kernels


@njit(cache=True)
def _finish(seq, split, answer, inp, tgt):
    """inputs = seq[:-1]; targets = seq[1:] (train) or only the last ``answer`` of them."""
    m = inp.shape[0]
    for t in range(m):
        inp[t] = seq[t]
        tgt[t] = seq[t + 1] if split == TRAIN or t >= m - answer else IGNORE


@njit(cache=True)
def recall_one(seed, split, index, V, nk, allow_dot, scratch, inp, tgt):
    seq, vals, present = scratch
    n = V - 2
    K = n // 2
    T = vals.shape[0]
    s = stream(seed, split, index)
    for t in range(T):
        vals[t] = K + 1 + below(s, n - K)
        present[t] = 0
    P = (seq.shape[0] - nk - 2) // (nk + 1)
    w = 0
    for _ in range(P):
        t = below(s, T)
        present[t] = 1
        c = t
        for d in range(nk - 1, -1, -1):  # key tokens, the first most significant
            seq[w + d] = 1 + c % K
            c //= K
        seq[w + nk] = vals[t]
        w += nk + 1
    t = below(s, T)
    if not allow_dot:
        # Terminates: _check_recall refuses P = 0 without allow_dot, so some tuple is present
        # and each below(T) hits one with probability >= 1/T >= 2^-20 (at most T draws
        # expected; more than 64 T with probability < e^-64). Surely, too: within its period
        # xoshiro256** outputs every u64, among them one that below(T) accepts, wherever it
        # reads it, as a present tuple. Not capped: a cap would change bytes.
        while present[t] == 0:
            t = below(s, T)
    seq[w] = n + 1
    c = t
    for d in range(nk, 0, -1):
        seq[w + d] = 1 + c % K
        c //= K
    seq[w + nk + 1] = vals[t] if present[t] else 0
    _finish(seq, split, 1, inp, tgt)


@njit(cache=True)
def induction_one(seed, split, index, V, ilen, triggers, scratch, inp, tgt):
    seq, pos = scratch
    n = V - 2
    L = seq.shape[0] - 1 - ilen
    s = stream(seed, split, index)
    for t in range(L):
        seq[t] = 1 + below(s, n)
    seq[L] = n + 1
    m = 1 if uniform(s) < 0.5 else triggers
    for j in range(m):
        pos[j] = below(s, L - 1 - ilen)
    pos[:m].sort()
    first = pos[0]
    for i in range(ilen):
        seq[L + 1 + i] = seq[first + 1 + i]
    last = -1
    for j in range(m):
        p = pos[j]
        if last >= 0 and p - last <= ilen:
            continue
        last = p
        seq[p] = n + 1
        for i in range(ilen):
            seq[p + 1 + i] = seq[L + 1 + i]
    _finish(seq, split, ilen, inp, tgt)


@njit(cache=True, parallel=True)
def recall_fill(seed, split, start, V, nk, allow_dot, tuples, inp, tgt):
    n = inp.shape[0]
    chunks = min(n, 64)
    for c in prange(chunks):  # scratch allocated once per chunk of samples
        scratch = (np.empty(inp.shape[1] + 1, dtype=np.int64), np.empty(tuples, dtype=np.int64),
                   np.empty(tuples, dtype=np.uint8))
        for b in range(c * n // chunks, (c + 1) * n // chunks):
            recall_one(seed, split, start + b, V, nk, allow_dot, scratch, inp[b], tgt[b])


@njit(cache=True, parallel=True)
def induction_fill(seed, split, start, V, ilen, triggers, inp, tgt):
    n = inp.shape[0]
    chunks = min(n, 64)
    for c in prange(chunks):
        scratch = (np.empty(inp.shape[1] + 1, dtype=np.int64), np.empty(triggers, dtype=np.int64))
        for b in range(c * n // chunks, (c + 1) * n // chunks):
            induction_one(seed, split, start + b, V, ilen, triggers, scratch, inp[b], tgt[b])


def _keys(length_of, what):
    def keys(cfg):
        dt = token_dtype(cfg.vocab_size)
        m = length_of(cfg) - 1
        return {"inputs": KeySpec(dt, (m,), doc=f"token ids (safari's sorted vocabulary): {what}"),
                "targets": KeySpec(dt, (m,), doc="the next token (train) or only the answer (val, test); -100 "
                                                 "elsewhere")}
    return keys


def _fill_recall(cfg, seed, split, start, out, fixed):
    tuples = ((cfg.vocab_size - 2) // 2) ** cfg.num_keys
    recall_fill(seed, split, start, cfg.vocab_size, cfg.num_keys, bool(cfg.allow_dot), tuples, out["inputs"],
                out["targets"])


def _fill_induction(cfg, seed, split, start, out, fixed):
    induction_fill(seed, split, start, cfg.vocab_size, cfg.induction_len, cfg.induction_num_triggers, out["inputs"],
                   out["targets"])


# ---------------------------------------------------------------- safari's own stream


def _authors_rng(seed, split):
    return np.random.default_rng(seed + AUTHORS_SEED_OFFSET[split])


def _authors_rows(rows, length, split, answer):
    x = np.array(rows, dtype=np.int64).reshape(len(rows), length)
    inputs, targets = x[:, :-1].copy(), x[:, 1:].copy()
    if split != "train":
        targets[:, : targets.shape[1] - answer] = IGNORE
    return {"inputs": inputs, "targets": targets}


def _authors_recall_open(cfg, count, seed, split):
    """safari's ``generate_assoc_recall(vocab, input_seq_len, num_keys, rng, allow_dot)``
    called ``count`` times on one ``np.random.default_rng(seed')`` (seed' = seed + 0, 1, 2
    for train, val, test), tokenised with its vocabulary; inputs x[:-1], targets x[1:] (val
    and test: the answer only, as safari's test set). The same Generator calls in the same
    order: a value ``choice`` per key tuple, a tuple ``choice`` per pair, the query's, and
    with allow_dot off a ``choice`` among the present tuples (in order of first appearance)
    when the query is absent. ``choice`` of a list is ``integers(0, len)``: drawn here as
    such, vectorised where safari loops (the same numbers). A Stream (generators/_authors.py):
    each example is drawn in turn, nothing kept between them."""
    length = _recall_len(cfg) - 1
    return Stream(count, _recall_blocks(cfg, count, seed, split, block_rows((length,))), (length,))


def _recall_blocks(cfg, count, seed, split, block):
    n = cfg.vocab_size - 2
    K = n // 2
    nk = cfg.num_keys
    T = K ** nk
    P = cfg.input_seq_len // (nk + 1)
    digits = 1 + (np.arange(T)[:, None] // K ** np.arange(nk - 1, -1, -1)[None, :]) % K  # key tokens per tuple
    rng = _authors_rng(seed, split)
    for lo in range(0, count, block):
        rows = []
        for _ in range(min(block, count - lo)):
            vals = K + 1 + rng.integers(0, n - K, size=T)
            pairs = rng.integers(0, T, size=P)
            t = int(rng.integers(0, T))
            seen, first = np.unique(pairs, return_index=True)
            present = t in set(seen.tolist())
            if not cfg.allow_dot and not present:
                order = seen[np.argsort(first)]
                t, present = int(order[rng.integers(0, order.size)]), True  # a tuple shown: present
            body = np.concatenate([digits[pairs], vals[pairs][:, None]], axis=1).ravel()
            answer = vals[t] if present else 0
            rows.append(np.concatenate([body, [n + 1], digits[t], [answer]]))
        yield _authors_rows(rows, _recall_len(cfg), split, 1)


def _authors_induction_open(cfg, count, seed, split):
    """safari's ``generate_induction_head(vocab, input_seq_len, "=>", induction_len,
    induction_num_triggers, rng)`` called ``count`` times on one ``np.random.default_rng(seed')``
    (seed' as ``authors_recall``), tokenised; inputs x[:-1], targets x[1:] (val and test: the
    last induction_len only). The same Generator calls: ``choice`` of the sorted vocabulary
    with p zero at the special tokens, ``uniform()``, ``integers`` for the triggers. A Stream,
    each example drawn in turn."""
    length = _induction_len(cfg) - 1
    return Stream(count, _induction_blocks(cfg, count, seed, split, block_rows((length,))), (length,))


def _induction_blocks(cfg, count, seed, split, block):
    V, L, ilen = cfg.vocab_size, cfg.input_seq_len, cfg.induction_len
    words = vocabulary(V)
    p = [1 / (V - 2) if w not in (".", "=>") else 0 for w in words]
    ids = np.arange(V)
    rng = _authors_rng(seed, split)
    for lo in range(0, count, block):
        rows = []
        for _ in range(min(block, count - lo)):
            seq = list(rng.choice(ids, L, replace=True, p=p)) + [V - 1]
            m = 1 if rng.uniform() < 0.5 else cfg.induction_num_triggers
            pos = sorted(rng.integers(L - (1 + ilen), size=m))
            kept = [pos[0]]
            for q in pos[1:]:
                if q - kept[-1] > ilen:
                    kept.append(q)
            answer = [seq[kept[0] + 1 + i] for i in range(ilen)]
            for q in kept:
                seq[q] = V - 1
                seq[q + 1 : q + 1 + ilen] = answer
            rows.append(seq + answer)
        yield _authors_rows(rows, _induction_len(cfg), split, ilen)


authors_recall = Authors(_authors_recall_open)  # called: the whole split
authors_induction = Authors(_authors_induction_open)


TASKS = [
    Task(
        name="associative-recall",
        config=RecallConfig,
        summary="H3's associative recall (safari): key-value pairs, then '=> key', answer its value",
        keys=_keys(_recall_len, "pairs k v, then => k v"),
        fill=_fill_recall,
        check=_check_recall,
        resolve=_resolve(RECALL_PRESETS),
        family="tokens",
        revision=REVISION,
        vocab_size=lambda cfg: cfg.vocab_size,
        vocab=lambda cfg: vocabulary(cfg.vocab_size),
        authors=authors_recall,
        citation=H3,
        default_num_samples=5500,
        card="Pairs k v (keys the first half of safari's ordinary tokens, values the second, each key's value "
             "fixed per sequence), then '=>', a key and its value. safari's generate_assoc_recall "
             "(HazyResearch/safari, src/dataloaders/synthetics.py).",
    ),
    Task(
        name="induction-head",
        config=InductionConfig,
        summary="H3's induction head (safari): copy the token after '=>' at the end",
        keys=_keys(_induction_len, "random tokens with '=> x' at triggers, then => x"),
        fill=_fill_induction,
        check=_check_induction,
        resolve=_resolve(INDUCTION_PRESETS),
        family="tokens",
        revision=REVISION,
        vocab_size=lambda cfg: cfg.vocab_size,
        vocab=lambda cfg: vocabulary(cfg.vocab_size),
        authors=authors_induction,
        citation=H3,
        default_num_samples=5500,
        card="Uniform tokens; at trigger positions '=>' followed by the answer (the token(s) after the first "
             "trigger); then '=>' and the answer. safari's generate_induction_head (HazyResearch/safari).",
    ),
]
