"""The authors' RegBench data: what berlino/seq_icl @ 9b9223d's ``ICLDFADataModule(...).setup()``
(src/dataloaders/dfa.py, with pythomata 0.3.2) makes for a ``seed`` in a Python started with
``PYTHONHASHSEED=hash_seed``, split by split, without their code or pythomata.

Their bytes depend on the hash seed through three orders, replayed here (generators/regbench/
cpython_sets.py) from the hashes of the letters and of the string "sink", which a child interpreter
started with that hash seed computes (``string_hashes``; the same Python as the caller's, whose str hash
is the one that matters: CPython 3.11 changed it):
- the alphabet a DFA is given is a set of letters, whose order numbers the letters inside pythomata;
- completing a DFA adds a state "sink" to the set of its int states, which decides the states' numbers;
- the DFAs are gathered in a set keyed by a hash of their transitions (letters included), then listed
  and shuffled; DFA objects compare by identity, so the set keeps duplicates and only orders them.
Every other order (sets of int pairs and of frozensets inside the minimisation) is fixed by CPython's
int, tuple and frozenset hashes and replayed the same way. NumPy's draws are generators/regbench/
numpy_draws.py.

One DFA, in their order: n states (``integers(max_outgoing_edges, max_num_nodes + 1)``), m letters
(``integers(max_outgoing_edges, vocab_size - 1)``), the alphabet (``choice(vocab_size - 2, m,
replace=False)``) and a sampler seed (``integers(0, 2^32)``) from the data module's generator; from the
sampler's: for each state 1..max_outgoing_edges - 1 edges on distinct letters to distinct other states,
then the seed of the DFA's own generator. pythomata completes it with the sink, minimises it (pairs of
states removed from the relation round by round), renumbers the classes in the order of a set of
frozensets, and trims it; the walk from the start state takes ``choice`` of a state's letters in the
order the minimisation inserted them. After all DFAs: the set, ``list``, ``shuffle``; the splits
train, test, val in that order draw each row's string count and lengths from the data module's
generator and its letters from the DFA's.

``dfa`` is the row's minimal DFA in this task's own numbering (breadth-first from the start over
ascending letters): the DFA accuracy needs the language, not pythomata's names.
"""
import functools
import os
import subprocess
import sys

import numpy as np
from numba import njit

from longsynth.errors import LongsynthError
from longsynth.generators._tokens import IGNORE
from longsynth.generators.regbench import cpython_sets as cs
from longsynth.generators.regbench import numpy_draws as nd
from longsynth.generators.regbench.config import tokens_per_row

AUTHORS_ORDER = ("train", "test", "val")  # setup()'s dict: the order its rows are drawn
HASH_SEEDS = 4294967295  # PYTHONHASHSEED's largest value


@functools.lru_cache(maxsize=8)
def string_hashes(hash_seed, n_letters):
    """hash() of the letters a.. (n_letters of them) and of "sink" in a Python started with
    PYTHONHASHSEED=hash_seed: an int64 array of n_letters + 1, "sink" last."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = str(hash_seed)
    words = [chr(97 + i) for i in range(n_letters)] + ["sink"]
    out = subprocess.run([sys.executable, "-S", "-c", "import sys; print(*[hash(w) for w in sys.argv[1:]])",
                          *words], env=env, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise LongsynthError(f"hash_seed: a Python started with PYTHONHASHSEED={hash_seed} failed: "
                             f"{(out.stderr.strip().splitlines() or ['no message'])[-1]}")
    return np.array([int(v) for v in out.stdout.split()], dtype=np.int64)


@njit(cache=True)
def _seeded(word):
    st = np.zeros(6, dtype=np.uint64)
    w = np.empty(1, dtype=np.uint64)
    w[0] = np.uint64(word)
    nd.seed(w, st)
    return st


@njit(cache=True)
def _pair_hash(a, b):
    lanes = np.empty(2, dtype=np.int64)
    lanes[0], lanes[1] = a, b
    return cs.tuple_hash(lanes, 2)


@njit(cache=True)
def _draw(main, max_nodes, n_letters, max_edges, sym, tgt, deg):
    """One DFA's draws: (n, alphabet, the seed of its generator); sym, tgt [n, max_edges] <- each state's
    edges in drawn order (letters, states), deg [n] their count."""
    n = nd.integers(main, max_edges, max_nodes + 1)
    m = nd.integers(main, max_edges, n_letters + 1)
    alpha = np.empty(m, dtype=np.int64)
    nd.choice_distinct(main, n_letters, m, alpha)
    sampler = _seeded(nd.integers(main, 0, 1 << 32))
    pos = np.empty(max_edges, dtype=np.int64)
    other = np.empty(max_edges, dtype=np.int64)
    for v in range(n):
        k = nd.integers(sampler, 1, max_edges)
        nd.choice_distinct(sampler, m, k, pos)
        nd.choice_distinct(sampler, n - 1, k, other)
        deg[v] = k
        for i in range(k):
            sym[v, i] = alpha[pos[i]]
            tgt[v, i] = other[i] if other[i] < v else other[i] + 1
    return n, alpha, nd.integers(sampler, 0, 1 << 32)


@njit(cache=True)
def _minimise(n, alpha, sym, tgt, deg, letter_hash, sink_hash, out_deg, out_letter, out_next):
    """pythomata's complete, minimize and trim of the drawn DFA; out_* [max_nodes + 1, ...] <- each final
    state's edges in pythomata's order (letters, states), a state the class number minimize gave it;
    returns (start state, the DFA object's hash)."""
    m = alpha.shape[0]
    keys, _, _ = cs.from_list(alpha, letter_hash[alpha])
    order_a = cs.elements(keys)  # the alphabet set's order: pythomata's letter numbers
    apos = np.full(letter_hash.shape[0], -1, dtype=np.int64)
    for i in range(m):
        apos[order_a[i]] = i
    ints = np.arange(n)
    k0, h0, m0 = cs.from_list(ints, ints)
    k1, h1, m1 = cs.copy(k0, h0, m0)  # the states property: a copy, and union copies again
    k2, h2, m2 = cs.copy(k1, h1, m1)
    sk, sh, sm = cs.from_list(np.full(1, n, dtype=np.int64), np.full(1, sink_hash, dtype=np.int64))
    k2, h2 = cs.merge(k2, h2, m2, sk, sh, sm)
    order_s = cs.elements(k2)  # the completed states' order: pythomata's state numbers (n is the sink)
    N = n + 1
    idx = np.empty(N, dtype=np.int64)
    for i in range(N):
        idx[order_s[i]] = i
    # the completed DFA in pythomata's numbers: each state's edges in insertion order (drawn, then the
    # missing letters in the alphabet's order to the sink)
    dl = np.empty((N, m), dtype=np.int64)  # state, letter number -> state
    delta_order = np.empty((N, m), dtype=np.int64)  # the set of (letter, state) pairs, in its order
    ids = np.empty(m, dtype=np.int64)
    hs = np.empty(m, dtype=np.int64)
    has = np.zeros(m, dtype=np.bool_)
    for v in range(N):
        i = idx[v]
        c = 0
        has[:] = False
        if v < n:
            for e in range(deg[v]):
                a, t = apos[sym[v, e]], idx[tgt[v, e]]
                has[a] = True
                ids[c], hs[c] = a * N + t, _pair_hash(a, t)
                dl[i, a] = t
                c += 1
        for a in range(m):
            if not has[a]:
                t = idx[n]
                ids[c], hs[c] = a * N + t, _pair_hash(a, t)
                dl[i, a] = t
                c += 1
        dk, _, _ = cs.from_list(ids, hs)
        delta_order[i] = cs.elements(dk)
    accepting = np.ones(N, dtype=np.bool_)
    accepting[idx[n]] = False
    # the greatest fixpoint: every pair, then round by round the pairs whose letters lead out of the
    # relation (judged against the round's start), removed from a deep copy of it
    pair_hash = np.empty(N * N, dtype=np.int64)
    for s in range(N):
        for t in range(N):
            pair_hash[s * N + t] = _pair_hash(s, t)
    inz = np.ones((N, N), dtype=np.bool_)
    ck, chs, cm = cs.from_list(np.arange(N * N), pair_hash)
    gone = np.empty(N * N, dtype=np.int64)
    while True:
        cur = cs.elements(ck)
        g = 0
        for e in cur:
            s, t = e // N, e % N
            out = accepting[s] != accepting[t]
            a = 0
            while not out and a < m:
                out = not inz[dl[s, a], dl[t, a]]
                a += 1
            if out:
                gone[g] = e
                g += 1
        if g == 0:
            break
        ck, chs, cm = cs.from_list(cur, pair_hash[cur])
        for j in range(g):
            cs.remove(ck, chs, cm, gone[j], pair_hash[gone[j]])
            inz[gone[j] // N, gone[j] % N] = False
    # classes: keyed in the order their first state appears in the relation, a set of frozensets
    seen = np.zeros(N, dtype=np.bool_)
    firsts = np.empty(N, dtype=np.int64)
    nf = 0
    for e in cs.elements(ck):
        s = e // N
        if not seen[s]:
            seen[s] = True
            firsts[nf] = s
            nf += 1
    members = np.empty(N, dtype=np.int64)
    cids = np.empty(nf, dtype=np.int64)
    chash = np.empty(nf, dtype=np.int64)
    for j in range(nf):
        s = firsts[j]
        c = 0
        for t in range(N):
            if inz[s, t]:
                members[c] = t
                c += 1
        cids[j] = members[0]  # one id per class: its smallest state
        chash[j] = cs.frozenset_hash(members, c)
    canon = np.empty(N, dtype=np.int64)  # a state's class id: its smallest member
    for s in range(N):
        for t in range(N):
            if inz[s, t]:
                canon[s] = t
                break
    ek, _, _ = cs.from_list(cids, chash)
    number = np.full(N, -1, dtype=np.int64)
    eo = cs.elements(ek)
    for j in range(eo.shape[0]):
        number[eo[j]] = j
    cls = np.empty(N, dtype=np.int64)
    for s in range(N):
        cls[s] = number[canon[s]]
    K = eo.shape[0]
    nt_letter = np.empty((K, m), dtype=np.int64)
    nt_next = np.empty((K, m), dtype=np.int64)
    nt_deg = np.zeros(K, dtype=np.int64)
    seen = np.zeros((K, m), dtype=np.bool_)
    for i in range(N):
        c = cls[i]
        for e in delta_order[i]:
            a, t = e // N, e % N
            if not seen[c, a]:
                seen[c, a] = True
                nt_letter[c, nt_deg[c]] = a
                nt_next[c, nt_deg[c]] = cls[t]
                nt_deg[c] += 1
    start, sink = cls[idx[0]], cls[idx[n]]
    # trim: the states reachable from the start, the sink and the edges to it left out
    reach = np.zeros(K, dtype=np.bool_)
    queue = np.empty(K, dtype=np.int64)
    reach[start] = True
    queue[0] = start
    head, tail = 0, 1
    while head < tail:
        c = queue[head]
        head += 1
        for j in range(nt_deg[c]):
            d = nt_next[c, j]
            if not reach[d]:
                reach[d] = True
                queue[tail] = d
                tail += 1
    out_deg[:] = 0
    node_hash = np.empty(K, dtype=np.int64)
    nn = 0
    items = np.empty(m, dtype=np.int64)
    for c in range(K):  # ascending: _sorted_transitions sorts the states, then each state's edges by target
        if not reach[c] or c == sink:
            continue
        d = 0
        for j in range(nt_deg[c]):
            if nt_next[c, j] != sink:
                out_letter[c, d] = order_a[nt_letter[c, j]]
                out_next[c, d] = nt_next[c, j]
                d += 1
        out_deg[c] = d
        ni = 0
        for target in range(K):  # a stable sort by target
            for j in range(d):
                if out_next[c, j] == target:
                    items[ni] = _pair_hash(letter_hash[out_letter[c, j]], target)
                    ni += 1
        node_hash[nn] = cs.tuple_hash(items, ni)
        nn += 1
    return start, cs.tuple_hash(node_hash, nn)


@njit(cache=True)
def _canonical(start, out_deg, out_letter, out_next, n_letters, table):
    """table [max_nodes, n_letters] <- the DFA numbered breadth-first from the start over ascending letters."""
    K = out_deg.shape[0]
    trans = np.full((K, n_letters), -1, dtype=np.int64)
    for c in range(K):
        for j in range(out_deg[c]):
            trans[c, out_letter[c, j]] = out_next[c, j]
    number = np.full(K, -1, dtype=np.int64)
    order = np.empty(K, dtype=np.int64)
    number[start] = 0
    order[0] = start
    found, head = 1, 0
    while head < found:
        c = order[head]
        head += 1
        for a in range(n_letters):
            d = trans[c, a]
            if d >= 0 and number[d] < 0:
                number[d] = found
                order[found] = d
                found += 1
    table[:, :] = -1
    for q in range(found):
        for a in range(n_letters):
            d = trans[order[q], a]
            if d >= 0:
                table[q, a] = number[d]


@njit(cache=True)
def _pool(main, count, max_nodes, n_letters, max_edges, letter_hash, sink_hash, out_deg, out_letter, out_next,
          start, walk, table):
    """The ``count`` DFAs of setup() in their final order (returned: draw numbers): out_* [count, max_nodes + 1,
    ...] their edges, start [count], walk [count, 6] the state of each one's generator, table their canonical
    tables; main is left after the shuffle."""
    sym = np.empty((max_nodes, max_edges), dtype=np.int64)
    tgt = np.empty((max_nodes, max_edges), dtype=np.int64)
    deg = np.empty(max_nodes, dtype=np.int64)
    hashes = np.empty(count, dtype=np.int64)
    for t in range(count):
        n, alpha, walk_seed = _draw(main, max_nodes, n_letters, max_edges, sym, tgt, deg)
        walk[t] = _seeded(walk_seed)
        start[t], hashes[t] = _minimise(n, alpha, sym, tgt, deg, letter_hash, sink_hash, out_deg[t], out_letter[t],
                                        out_next[t])
        _canonical(start[t], out_deg[t], out_letter[t], out_next[t], n_letters, table[t])
    keys, _, _ = cs.from_list(np.arange(count), hashes)
    order = cs.elements(keys).copy()
    nd.shuffle_list(main, order)
    return order


@njit(cache=True)
def _rows(main, rows, start, out_deg, out_letter, out_next, walk, min_ic, max_ic, max_len, cut, sep, inp, tgt, draw):
    """The split's rows, DFAs ``rows`` (draw numbers) in order: each row's string count and lengths from main,
    its letters from its DFA's generator; inp, tgt [len(rows), width] <- the text's tokens (its first ``cut``)
    but the last and the next token (-100 at '|'), padded. Without ``draw``, only main's draws (a split
    before the one asked)."""
    width = inp.shape[1] if draw else 0
    toks = np.empty(cut, dtype=np.int64)
    for r in range(rows.shape[0]):
        t = rows[r]
        g = walk[t].copy()
        strings = nd.integers(main, min_ic, max_ic)
        c = 0
        for w in range(strings):
            length = nd.integers(main, 1, max_len)
            if not draw:
                continue
            if w > 0 and c < cut:
                toks[c] = sep
                c += 1
            q = start[t]
            for _ in range(length):
                j = nd.integers(g, 0, out_deg[t, q])
                if c < cut:
                    toks[c] = 1 + out_letter[t, q, j]
                    c += 1
                q = out_next[t, q, j]
        if not draw:
            continue
        for i in range(width):
            if i < c - 1:
                inp[r, i] = toks[i]
                tgt[r, i] = IGNORE if toks[i + 1] == sep else toks[i + 1]
            else:
                inp[r, i] = 0
                tgt[r, i] = IGNORE


def split_counts(counts):
    """(num_examples, num_test_examples) of setup() from {split: count}: test must be num_test_examples // 2,
    val the rest."""
    bad = sorted(set(counts) - set(AUTHORS_ORDER))
    if bad:
        raise LongsynthError(f"splits: the authors' RegBench has train, test and val, got {bad[0]!r}")
    n, test, val = (int(counts.get(s, 0)) for s in AUTHORS_ORDER)
    if test != (test + val) // 2:
        raise LongsynthError(f"splits: setup() makes test = num_test_examples // 2 and val the rest, so test is "
                             f"val or val - 1; got test={test}, val={val}")
    if test + val > 9 * n:
        raise LongsynthError(f"splits: setup() draws at most 10 x num_examples DFAs and scales the splits down "
                             f"past that; keep test + val <= 9 x train ({9 * n}), got {test + val}")
    return n, test + val


def check_hash_seed(hash_seed):
    if isinstance(hash_seed, bool) or not isinstance(hash_seed, (int, np.integer)) or \
            not 0 <= int(hash_seed) <= HASH_SEEDS:
        raise LongsynthError(f"hash_seed: PYTHONHASHSEED's range, an int in 0..{HASH_SEEDS}, got {hash_seed!r}")
    return int(hash_seed)


class Pool:
    """setup()'s DFAs for (cfg, seed, counts, hash_seed), and its generator after them."""

    def __init__(self, cfg, seed, counts, hash_seed):
        n, m = split_counts(counts)
        self.cfg, self.count = cfg, n + m
        letters = cfg.vocab_size - 2
        hashes = string_hashes(check_hash_seed(hash_seed), letters)
        self.main = nd.new_state()
        nd.seed(nd.entropy_words(int(seed)), self.main)
        S = cfg.max_num_nodes + 1
        self.out_deg = np.zeros((self.count, S), dtype=np.int64)
        self.out_letter = np.zeros((self.count, S, letters), dtype=np.int64)
        self.out_next = np.zeros((self.count, S, letters), dtype=np.int64)
        self.start = np.zeros(self.count, dtype=np.int64)
        self.walk = np.zeros((self.count, 6), dtype=np.uint64)
        self.table = np.zeros((self.count, cfg.max_num_nodes, letters), dtype=np.int8)
        self.order = _pool(self.main, self.count, cfg.max_num_nodes, letters, cfg.max_outgoing_edges, hashes[:-1],
                           hashes[-1], self.out_deg, self.out_letter, self.out_next, self.start, self.walk, self.table)
        bounds = np.cumsum([0, n, m // 2, m - m // 2])
        self.rows = {s: self.order[bounds[i]:bounds[i + 1]] for i, s in enumerate(AUTHORS_ORDER)}

    def blocks(self, split, block):
        """{"inputs", "targets", "dfa"} blocks of ``split``'s rows, in order (the splits before it drawn first)."""

        cfg = self.cfg
        main = self.main.copy()
        width = tokens_per_row(cfg) - 1
        cut = (cfg.input_seq_len + 1) // 2
        args = (self.start, self.out_deg, self.out_letter, self.out_next, self.walk,
                cfg.min_num_in_context_examples, cfg.max_num_in_context_examples, cfg.max_len_per_example, cut,
                cfg.vocab_size - 1)
        empty = np.zeros((0, 0), dtype=np.int64)
        for s in AUTHORS_ORDER[: AUTHORS_ORDER.index(split)]:
            _rows(main, self.rows[s], *args, empty, empty, False)
        rows = self.rows[split]
        for lo in range(0, rows.shape[0], block):
            part = rows[lo: lo + block]
            inp = np.empty((part.shape[0], width), dtype=np.int64)
            tgt = np.empty((part.shape[0], width), dtype=np.int64)
            _rows(main, part, *args, inp, tgt, True)
            yield {"inputs": inp, "targets": tgt, "dfa": self.table[part]}


_POOLS = {}  # the last data set's Pool: its splits' streams share one


def _pool_of(cfg, seed, counts):
    key = (cfg, seed, tuple(sorted((s, int(n)) for s, n in counts.items())))
    if key not in _POOLS:
        _POOLS.clear()
        _POOLS[key] = Pool(cfg, seed, counts, cfg.hash_seed)
    return _POOLS[key]


def _open(cfg, seed, counts, split):
    from longsynth.generators._authors import Stream, block_rows

    if cfg.hash_seed is None:
        raise LongsynthError("hash_seed: the authors' rows depend on the PYTHONHASHSEED their code ran under; give "
                             "it (--hash-seed H: their rows in a Python started with PYTHONHASHSEED=H)")
    split_counts(counts)
    shape = (tokens_per_row(cfg) - 1,)
    extra = {"dfa": (cfg.max_num_nodes, cfg.vocab_size - 2)}
    def blocks():  # drawn when the stream is first read
        yield from _pool_of(cfg, seed, counts).blocks(split, block_rows(shape))

    total = sum(int(v) for v in counts.values())
    side = total * (cfg.max_num_nodes + 1) * (cfg.vocab_size - 2) * 16 + total * cfg.max_num_nodes * cfg.vocab_size
    return Stream(counts.get(split, 0), blocks(), shape, side_bytes=side, extra=extra,
                  side_doc="every DFA of the data set: its edges and its table")


def _pipeline(cfg, seed, counts, split):
    """Split ``split`` of setup(num_examples=counts["train"], num_test_examples=counts["test"] + counts["val"])."""
    return _open(cfg, seed, counts, split)


def _stream(cfg, count, seed, split):
    """The training rows of setup(num_examples=count, num_test_examples=0): its other splits come from the same
    pool of DFAs, so they are made by ``authors_dataset`` (the pipeline) only."""
    if split != "train":
        raise LongsynthError(f"split: the authors' RegBench splits come from one pool of DFAs; {split} is made by "
                             "authors_dataset (gen --authors-stream) with counts for train, test and val")
    return _open(cfg, seed, {"train": count}, split)


def authors():
    """The task's (authors, authors_pipeline) records (generators/_authors.py)."""
    from longsynth.generators._authors import Authors

    return (Authors(_stream, "setup()'s training rows under PYTHONHASHSEED=hash_seed", splits=("train",)),
            Authors(_pipeline, "setup()'s splits under PYTHONHASHSEED=hash_seed", splits=AUTHORS_ORDER, card=CARD))


CARD = ("The samples are the authors' own data set (`longsynth.authors_dataset`): what berlino/seq_icl's "
        "`ICLDFADataModule.setup()` returns for this seed in a Python started with PYTHONHASHSEED set to the "
        "`hash_seed` parameter, whose value their rows depend on. One pool of DFAs is drawn from one generator, "
        "ordered by a Python set and shuffled, then cut into train, test and val, whose strings are drawn split "
        "after split from the same generator; each row depends on every draw before it. The same command "
        "regenerates them bit for bit, but no row can be drawn alone (docs/tasks/regbench.md).")
