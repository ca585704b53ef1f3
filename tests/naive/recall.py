"""Token recall and copying twins: MQAR (docs/tasks/mqar.md), Safari's associative recall
and induction head (docs/tasks/safari.md), selective copying
(docs/tasks/selective-copying.md)."""
import numpy as np

from .core import SPLITS, Stream, _token_dtype


# ---------------------------------------------------------------- token tasks


def mqar(seed, split, index, vocab_size, input_seq_len, num_kv_pairs, power_a=0.01, num_passes=1,
         random_non_queries=False):
    """docs/tasks/mqar.md: kv distinct keys of [1, V/2) and values of [V/2, V) by redrawing
    repeats, query slots by redrawing repeats from the power-law cdf, then the noise."""
    st = Stream(seed, SPLITS[split], index)
    V, L, kv = vocab_size, input_seq_len, num_kv_pairs
    half = V // 2

    def distinct(lo, n):
        picks = []
        while len(picks) < kv:
            r = lo + st.randint(n)
            if r not in picks:
                picks.append(r)
        return picks

    keys = distinct(1, half - 1)
    values = distinct(half, V - half)
    ctx = 2 * kv * num_passes
    slots = (L - ctx) // 2
    cdf, total = [], 0.0
    for i in range(1, slots + 1):
        total += power_a * float(i) ** (power_a - 1.0)
        cdf.append(total)
    gaps = []
    while len(gaps) < kv:
        u = st.uniform() * cdf[-1]
        g = next((i for i, c in enumerate(cdf) if c > u), slots - 1)
        if g not in gaps:
            gaps.append(g)
    x = np.zeros(L, dtype=np.int64)
    y = np.full(L, -100, dtype=np.int64)
    x[:ctx] = np.tile(np.ravel(np.column_stack([keys, values])), num_passes)
    for k, v, g in zip(keys, values, gaps):
        x[ctx + 2 * g] = k
        y[ctx + 2 * g] = v
    if random_non_queries:
        for t in range(L):
            if x[t] == 0:
                x[t] = st.randint(V)
    dtype = _token_dtype(V)
    return {"inputs": x.astype(dtype), "targets": y.astype(dtype)}


# ---------------------------------------------------------------- Safari token tasks (docs/tasks/safari.md)


def _safari_targets(seq, split, answer):
    x = np.array(seq, dtype=np.int64)
    y = x[1:].copy()
    if split != "train":
        y[: y.size - answer] = -100
    return x[:-1], y


def associative_recall(seed, split, index, vocab_size, input_seq_len, num_keys=1, allow_dot=False):
    """docs/tasks/safari.md: a value per key tuple, L // (num_keys + 1) pairs of uniform tuples,
    then => and a query tuple (redrawn while absent unless allow_dot) and its value or '.'."""
    st = Stream(seed, SPLITS[split], index)
    n = vocab_size - 2
    K = n // 2
    tuples = list(__import__("itertools").product(range(K), repeat=num_keys))  # lexicographic
    value = [K + 1 + st.below(n - K) for _ in tuples]
    present = set()
    seq = []
    for _ in range(input_seq_len // (num_keys + 1)):
        t = st.below(len(tuples))
        present.add(t)
        seq += [1 + k for k in tuples[t]] + [value[t]]
    t = st.below(len(tuples))
    while not allow_dot and t not in present:
        t = st.below(len(tuples))
    seq += [n + 1] + [1 + k for k in tuples[t]] + [value[t] if t in present else 0]
    x, y = _safari_targets(seq, split, 1)
    return {"inputs": x.astype(_token_dtype(vocab_size)), "targets": y.astype(_token_dtype(vocab_size))}


def induction_head(seed, split, index, vocab_size, input_seq_len, induction_len=1, induction_num_triggers=1):
    """docs/tasks/safari.md: L uniform ordinary tokens and =>; one trigger with probability 1/2,
    else induction_num_triggers, sorted, spaced more than induction_len apart; => and the
    answer at each, and at the end."""
    st = Stream(seed, SPLITS[split], index)
    n, L, m = vocab_size - 2, input_seq_len, induction_len
    seq = [1 + st.below(n) for _ in range(L)] + [n + 1]
    count = 1 if st.uniform() < 0.5 else induction_num_triggers
    pos = sorted(st.below(L - 1 - m) for _ in range(count))
    kept = [pos[0]]
    for p in pos[1:]:
        if p - kept[-1] > m:
            kept.append(p)
    answer = seq[kept[0] + 1 : kept[0] + 1 + m]
    for p in kept:
        seq[p : p + 1 + m] = [n + 1] + answer
    x, y = _safari_targets(seq + answer, split, m)
    return {"inputs": x.astype(_token_dtype(vocab_size)), "targets": y.astype(_token_dtype(vocab_size))}


def selective_copying(seed, split, index, L, M, A):
    """docs/tasks/selective-copying.md: M tokens 1 + below(A - 2), Floyd's M-subset of
    L + M positions, the tokens there in order, M markers A - 1; targets the tokens at the markers."""
    st = Stream(seed, SPLITS[split], index)
    tokens = [1 + st.below(A - 2) for _ in range(M)]
    chosen = set()
    for t in range(L + M - M, L + M):  # Floyd, as documented, with below
        r = st.below(t + 1)
        chosen.add(t if r in chosen else r)
    pos = sorted(chosen)
    x = np.zeros(L + 2 * M, dtype=np.int64)
    x[pos] = tokens
    x[L + M :] = A - 1
    y = np.full(L + 2 * M, -100, dtype=np.int64)
    y[L + M :] = tokens
    dtype = _token_dtype(A)
    return {"inputs": x.astype(dtype), "targets": y.astype(dtype)}
