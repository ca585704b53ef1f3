"""mqar: zoology's multi-query associative recall (docs/tasks/mqar.md).

Definition (the law of zoology's ``multiquery_ar``): V = vocab_size tokens, keys from
[1, V/2), values from [V/2, V), 0 the filler. A sample holds kv = num_kv_pairs distinct
keys k_1..k_kv and distinct values v_1..v_kv. The context ``k_1 v_1 ... k_kv v_kv`` is
repeated num_passes times (length ctx = 2 kv num_passes); then the query region, zeros
with key k_j at position ctx + 2 g_j, where g_1..g_kv are distinct query slots of
[0, S), S = (L - ctx) // 2, drawn one after another without replacement with weights
w_i = a * (i + 1)^(a - 1) (a = power_a; slot i = 0 is the likeliest). targets are -100
(the ignore index) except at each query, where they are the value of its key: position
ctx + 2 g_j holds v_j. With random_non_queries every 0 of the inputs is replaced by a
uniform token of [0, V).

Draw order, all from stream(seed, split, index):
    keys    for j = 1..kv: k = 1 + randint(V/2 - 1), redrawn while it equals an earlier key
    values  for j = 1..kv: v = V/2 + randint(V - V/2), redrawn while it equals an earlier value
    slots   for j = 1..kv: u = uniform() * c_S with c_i = w_1 + ... + w_i summed in order in
            float64; g is the first slot i with c_{i+1} > u (S - 1 if none); redrawn while it
            equals an earlier slot
    noise   (random_non_queries only) for t = 0..L-1 with inputs[t] == 0: inputs[t] = randint(V)

Worked example (V = 20, L = 16, kv = 2): keys (2, 4), values (18, 13), slots (3, 0):
    inputs   2   18    4   13    4    0    0    0    0    0    2    0    0    0    0    0
    targets -100 -100 -100 -100 13  -100 -100 -100 -100 -100 18  -100 -100 -100 -100 -100

``authors`` is zoology's own stream (legacy ``np.random`` calls in its order), see
``authors_rows``.
"""
import functools
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators._tokens import IGNORE, REVISION, token_dtype
from longsynth.rng import randint, stream, uniform
from longsynth.task import KeySpec, Task, param

MAX_L = 1 << 20
MAX_V = 1 << 24
GUIDE = 4  # guide-table entries per query slot (the inverse-cdf search starts at its entry)
DOUBLES = 4096  # legacy doubles drawn at a time for the authors' stream's slot draws
# zoology's seed of each split (np.random.seed takes [0, 2**32)): train = seed, test = seed + 10,
# as its paper-era runs (train seed 0, test seed 10); val between them
AUTHORS_SEED_OFFSET = {"train": 0, "val": 5, "test": 10}

CITATION = """@article{arora2023zoology,
  title   = {Zoology: Measuring and Improving Recall in Efficient Language Models},
  author  = {Arora, Simran and Eyuboglu, Sabri and Timalsina, Aman and Johnson, Isys and Poli, Michael
             and Zou, James and Rudra, Atri and R{\\'e}, Christopher},
  journal = {arXiv:2312.04927},
  year    = {2023}
}"""


@dataclass(frozen=True)
class MQARConfig:
    vocab_size: int = param(8192, "vocabulary V: keys from [1, V/2), values from [V/2, V), 0 the filler",
                            lo=4, hi=MAX_V)
    input_seq_len: int = param(64, "sequence length L (even, < V)", lo=4, hi=MAX_L)
    num_kv_pairs: int = param(4, "key-value pairs per sequence (all queried)", lo=1, hi=MAX_L // 4)
    power_a: float = param(0.01, "power law of the query slots: weight a * i^(a-1), slot i = 1, 2, ...",
                           lo=1e-6, hi=1.0)
    num_passes: int = param(1, "times the context k v k v ... is repeated (JRT)", lo=1, hi=MAX_L // 4)
    random_non_queries: bool = param(False, "replace every filler 0 of the inputs by a uniform token of [0, V)")


def _check(cfg):
    L, kv = cfg.input_seq_len, cfg.num_kv_pairs
    if L % 2:
        raise LongsynthError(f"input_seq_len: must be even (zoology's assertion), got {L}")
    if cfg.vocab_size <= L:
        raise LongsynthError(f"vocab_size: must exceed input_seq_len ({L}), got {cfg.vocab_size}")
    need = 2 * kv * cfg.num_passes + 2 * kv
    if need > L:
        raise LongsynthError(f"num_kv_pairs: 2 * num_kv_pairs * (num_passes + 1) = {need} must be <= "
                             f"input_seq_len ({L})")


@njit(cache=True)
def _distinct(s, picks, lo, n, seen):
    """picks[j] = lo + randint(n), redrawn while equal to an earlier pick; ``seen``: a zeroed
    byte map of n entries (zeroed again on return)."""
    m = picks.shape[0]
    for j in range(m):
        # m <= n (_check: V > L >= 4 kv, so V/2 - 1 >= kv and V - V/2 >= kv): n - j >= 1 free,
        # each draw lands on one with probability >= (n - j) / n
        while True:
            r = randint(s, n)
            if seen[r] == 0:
                seen[r] = 1
                break
        picks[j] = lo + r
    for j in range(m):
        seen[picks[j] - lo] = 0


@njit(cache=True)
def _slots(s, picks, cdf, guide, taken):
    """picks[j]: distinct slots drawn from the unnormalised cumulative weights ``cdf``;
    ``guide`` from ``slot_guide``; ``taken``: a zeroed byte map of len(cdf) slots (zeroed
    again on return)."""
    n = cdf.shape[0]
    total = cdf[n - 1]
    g = guide.shape[0]
    j = 0
    # kv <= S slots (_check: L - 2 kv passes >= 2 kv), each of probability w_i / c_S >= 1 / S^2
    # >= 2^-38 (a <= 1: w_i in [a / i, a]), far above the cdf's float64 rounding: a draw
    # hits a free slot with probability >= 2^-38 while j < kv
    while j < picks.shape[0]:
        x = uniform(s)
        u = x * total
        # the first i with cdf[i] > u (n - 1 if none), searched from the guide's entry for x
        # (u / total up to rounding): back while the slot before also exceeds u, then on
        # while this one does not
        lo = guide[min(g - 1, np.int64(x * g))]
        while lo > 0 and cdf[lo - 1] > u:
            lo -= 1
        while lo < n - 1 and cdf[lo] <= u:
            lo += 1
        if taken[lo] == 0:
            taken[lo] = 1
            picks[j] = lo
            j += 1
    for j in range(picks.shape[0]):
        taken[picks[j]] = 0


@njit(cache=True)
def mqar_one(seed, split, index, V, passes, noise, cdf, guide, scratch, inp, tgt):
    """One sample into inp, tgt [L]; ``scratch`` from ``_scratch``."""
    keys, vals, gaps, kseen, vseen, taken = scratch
    L = inp.shape[0]
    kv = keys.shape[0]
    half = V // 2
    s = stream(seed, split, index)
    _distinct(s, keys, 1, half - 1, kseen)
    _distinct(s, vals, half, V - half, vseen)
    _slots(s, gaps, cdf, guide, taken)
    for t in range(L):
        inp[t] = 0
        tgt[t] = -100
    ctx = 2 * kv * passes
    for p in range(passes):
        for j in range(kv):
            inp[p * 2 * kv + 2 * j] = keys[j]
            inp[p * 2 * kv + 2 * j + 1] = vals[j]
    for j in range(kv):
        q = ctx + 2 * gaps[j]
        inp[q] = keys[j]
        tgt[q] = vals[j]
    if noise:
        for t in range(L):
            if inp[t] == 0:
                inp[t] = randint(s, V)


@njit(cache=True)
def _scratch(V, kv, slots):
    """(keys, values, slots) [kv] and zeroed byte maps of keys, values and slots."""
    half = V // 2
    return (np.empty(kv, dtype=np.int64), np.empty(kv, dtype=np.int64), np.empty(kv, dtype=np.int64),
            np.zeros(half - 1, dtype=np.uint8), np.zeros(V - half, dtype=np.uint8), np.zeros(slots, dtype=np.uint8))


@njit(cache=True, parallel=True)
def mqar_fill(seed, split, start, V, kv, passes, noise, cdf, guide, inp, tgt):
    n = inp.shape[0]
    chunks = min(n, 64)
    for c in prange(chunks):  # scratch allocated once per chunk of samples
        scratch = _scratch(V, kv, cdf.shape[0])
        for b in range(c * n // chunks, (c + 1) * n // chunks):
            mqar_one(seed, split, start + b, V, passes, noise, cdf, guide, scratch, inp[b], tgt[b])


@functools.lru_cache(maxsize=64)
def slot_cdf(slots, power_a):
    """c_i = w_1 + ... + w_i (float64, summed in order), w_i = a * i^(a-1), i = 1..slots."""
    cdf = np.empty(slots, dtype=np.float64)
    total = 0.0
    for i in range(1, slots + 1):  # Python floats: libm's pow, as written (NumPy's SIMD pow may round otherwise)
        total += power_a * float(i) ** (power_a - 1.0)
        cdf[i - 1] = total
    cdf.setflags(write=False)
    return cdf


@functools.lru_cache(maxsize=64)
def slot_guide(slots, power_a):
    """int64 [GUIDE * slots]: entry k is the first slot whose cumulative weight exceeds
    k / len * c_S, where the search for a u of [k / len, (k + 1) / len) * c_S starts. Only
    a starting point: the search ends at the same slot from any start."""
    cdf = slot_cdf(slots, power_a)
    g = GUIDE * slots
    guide = np.minimum(np.searchsorted(cdf, np.arange(g) / g * cdf[-1], side="right"), slots - 1).astype(np.int64)
    guide.setflags(write=False)
    return guide


def _slots_of(cfg):
    return (cfg.input_seq_len - 2 * cfg.num_kv_pairs * cfg.num_passes) // 2


def _keys(cfg):
    dt = token_dtype(cfg.vocab_size)
    L = cfg.input_seq_len
    return {
        "inputs": KeySpec(dt, (L,), doc="token ids: context k v k v ..., then the queries among fillers"),
        "targets": KeySpec(dt, (L,), doc="the key's value at each query, -100 elsewhere"),
    }


def _fill(cfg, seed, split, start, out, fixed):
    slots, a = _slots_of(cfg), float(cfg.power_a)
    mqar_fill(seed, split, start, cfg.vocab_size, cfg.num_kv_pairs, cfg.num_passes, bool(cfg.random_non_queries),
              slot_cdf(slots, a), slot_guide(slots, a), out["inputs"], out["targets"])


# ---------------------------------------------------------------- zoology's own stream


@njit(cache=True)
def legacy_choice_p(p, size, doubles, used, out):
    """NumPy's legacy ``RandomState.choice(len(p), size, replace=False, p)`` on the doubles
    ``doubles[used:]`` (what its ``rand`` calls return, in order): rounds of ``size - found``
    doubles; the p of the slots found so far set to 0; cdf = cumsum(p) / its last value;
    each double's slot = searchsorted(cdf, x, right); the new slots kept once each, in the
    order of their first appearance. Writes ``out`` [size]; returns the doubles used so far,
    or -1 when ``doubles`` ran out (nothing is consumed then)."""
    q = p.copy()
    n = q.shape[0]
    cdf = np.empty(n, dtype=np.float64)
    found = 0
    while found < size:  # <= size rounds: a round's first double gives a new slot (p 0 at the found ones)
        k = size - found
        if used + k > doubles.shape[0]:
            return -1
        for j in range(found):
            q[out[j]] = 0.0
        acc = 0.0
        for i in range(n):
            acc += q[i]
            cdf[i] = acc
        last = cdf[n - 1]
        for i in range(n):
            cdf[i] = cdf[i] / last
        start = found
        for j in range(k):
            x = doubles[used + j]
            lo, hi = 0, n  # searchsorted right: the first i with cdf[i] > x
            while lo < hi:
                mid = (lo + hi) >> 1
                if cdf[mid] <= x:
                    lo = mid + 1
                else:
                    hi = mid
            fresh = True
            for i in range(start, found):
                if out[i] == lo:
                    fresh = False
                    break
            if fresh:
                out[found] = lo
                found += 1
        used += k
    return used


def _authors_open(cfg, count, seed, split):
    """zoology's ``multiquery_ar(vocab_size, count, input_seq_len, seed', power_a, num_kv_pairs,
    num_passes, random_non_queries=False)`` inputs and labels, int64 [count, L] each, where
    seed' = seed + AUTHORS_SEED_OFFSET[split], as a Stream (generators/_authors.py).

    The same legacy ``np.random`` calls in the same order (np.random.seed; per row a
    ``permutation(V/2 - 1)`` for the keys; per row one for the values; per row ``choice(S,
    kv, replace=False, p)``, whose rounds ``legacy_choice_p`` runs on the same doubles),
    without ``apply_along_axis``; a private RandomState leaves the
    global one alone. zoology's code fails for num_passes > 1: refused. Its random_non_queries
    noise comes from torch's unseeded global generator, so no seed reproduces it: refused.
    The keys' and values' passes cover every row before the first block: their results are
    kept ([count, kv] each in the token dtype, the stream's side arrays: 2 bytes a key or value
    for V up to 32,767); the slots and the rows follow block by block.
    """
    if cfg.random_non_queries:
        raise LongsynthError("random_non_queries: zoology draws that noise from torch's unseeded global generator, "
                             "so no seed reproduces it; the authors' stream exists only without it")
    if cfg.num_passes != 1:
        raise LongsynthError("num_passes: zoology's multiquery_ar fails for num_passes > 1 (its context array is "
                             "2 * kv * num_passes wide but gets kv keys per row); the authors' stream needs 1")
    zseed = seed + AUTHORS_SEED_OFFSET[split]
    if not 0 <= zseed < 1 << 32:
        raise LongsynthError(f"seed: zoology's np.random.seed takes [0, 2**32); seed {seed} for {split} gives {zseed}")
    L = cfg.input_seq_len
    return Stream(count, _zoology_blocks(cfg, count, zseed, block_rows((L,))), (L,),
                  side_bytes=2 * count * cfg.num_kv_pairs * np.dtype(token_dtype(cfg.vocab_size)).itemsize,
                  side_doc="every row's keys and values, which zoology draws before the first row's slots")


def _zoology_blocks(cfg, count, zseed, block):
    V, L, kv, passes, a = cfg.vocab_size, cfg.input_seq_len, cfg.num_kv_pairs, cfg.num_passes, cfg.power_a
    rs = np.random.RandomState(zseed)
    half = V // 2
    keys = np.empty((count, kv), dtype=token_dtype(V))  # the stream's side arrays: ids < V
    vals = np.empty((count, kv), dtype=token_dtype(V))
    for i in range(count):
        keys[i] = 1 + rs.permutation(half - 1)[:kv]
    for i in range(count):
        vals[i] = half + rs.permutation(V - half)[:kv]
    ctx = 2 * kv * passes
    space = (L - ctx) // 2
    p = a * np.arange(1, space + 1) ** (a - 1)
    p = p / p.sum()
    # the gaps' draws are the stream's last: legacy doubles (rand), consumed in order by
    # legacy_choice_p, drawn in chunks (the same sequence as one call) as it asks for more
    doubles = rs.random_sample(DOUBLES)
    used = 0
    for lo in range(0, count, block):
        n = min(block, count - lo)
        gaps = np.empty((n, kv), dtype=np.int64)
        for i in range(n):
            while True:  # a row needs <= kv (kv + 1) / 2 doubles; each refill doubles what is unread
                used_after = legacy_choice_p(p, kv, doubles, used, gaps[i])
                if used_after >= 0:
                    used = used_after
                    break
                doubles = np.concatenate([doubles[used:], rs.random_sample(doubles.size)])
                used = 0
        k, v = keys[lo : lo + n].astype(np.int64), vals[lo : lo + n].astype(np.int64)
        inputs = np.zeros((n, L), dtype=np.int64)
        targets = np.full((n, L), IGNORE, dtype=np.int64)
        for q in range(passes):
            inputs[:, q * 2 * kv : (q + 1) * 2 * kv : 2] = k
            inputs[:, q * 2 * kv + 1 : (q + 1) * 2 * kv : 2] = v
        rows = np.arange(n)[:, None]
        inputs[rows, ctx + 2 * gaps] = k
        targets[rows, ctx + 2 * gaps] = v
        yield {"inputs": inputs, "targets": targets}


authors_rows = Authors(_authors_open)  # called: the whole split, as zoology's function returns it


TASK = Task(
    name="mqar",
    config=MQARConfig,
    summary="multi-query associative recall (zoology's MQAR): recall each queried key's value",
    keys=_keys,
    fill=_fill,
    check=_check,
    family="tokens",
    revision=REVISION,
    vocab_size=lambda cfg: cfg.vocab_size,
    authors=authors_rows,
    citation=CITATION,
    default_num_samples=100_000,  # zoology's 100K train, 3K test: --splits train=100000,test=3000
    card="Context k_1 v_1 ... k_kv v_kv (distinct keys from [1, V/2), distinct values from [V/2, V)), then "
         "each key once more at an even offset of the query region (power-law slots, a = power_a); the target "
         "at a query is its key's value, -100 elsewhere. zoology's multiquery_ar (HazyResearch/zoology).",
)


def zoology_segment_seeds(train_segments, test_segments, data_seed=123):
    """(train seeds, test seeds): the seed zoology's ``prepare_data`` (zoology/data/utils.py @
    d88d6f54) gives each data segment of a ``DataConfig`` with ``train_segments`` training and
    ``test_segments`` test configs and ``seed=data_seed`` (zoology's default 123):
    ``np.random.seed(data_seed)``, then ``randint(0, 2**31, size=train_segments)`` and
    ``randint(2**31, 2**32, size=test_segments)``. Segment j is ``multiquery_ar(..., seed=s_j)``:
    its rows are ``authors_stream("mqar", n, seed=s_j - AUTHORS_SEED_OFFSET[split], split=split)``
    (docs/tasks/mqar.md, "zoology's pipeline")."""
    rs = np.random.RandomState(data_seed)
    train = rs.randint(0, 2**31, size=train_segments)
    test = rs.randint(2**31, 2**32, size=test_segments)
    return [int(s) for s in train], [int(s) for s in test]
