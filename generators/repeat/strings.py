"""The rows of "Repeat After Me"'s string tasks, one kernel for the four (docs/tasks/repeat.md).

An example is a string of characters: n letters s (each uniform on the vocab_size letters),
framed by the markers ``$ | .`` as each task writes it (``example``); a row is characters
c[0..C-1], C = context_len, with a mask of the scored characters. Train and val rows pack
examples of lengths n uniform on [min_train_len, max_train_len] until C characters are written,
the last example cut at C and unscored; a test row is one example, n uniform on [min_eval_len,
max_eval_len], padded with ``*``. inputs[t] = c[t] and targets[t] = c[t + 1] where c[t + 1] is
scored, -100 elsewhere (t < C - 1): the authors' loss on ``input_ids[:, 1:]`` under
``mask[:, 1:]``.

Draw order, all from stream(seed, split, index), example after example: n = lo + below(hi - lo
+ 1); the n letters below(vocab_size) in order; then, by task, the lookup's query (one draw) or
duplicate's two starts (``example``). A lookup redraws its n letters (same n) until some start
qualifies, at most MAX_TRIES times.
"""
import numpy as np
from numba import njit, prange

from longsynth.generators._copy import copy_run
from longsynth.rng import below, below_fill, stream

COPY, PREFIX, SUFFIX, DUPLICATE = 0, 1, 2, 3
MAX_TRIES = 1000  # strings a lookup draws for one example before the row is refused (a config with
# no unique n-gram in reach: two letters and n-gram 1, say)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_BASE = np.uint64(1_000_003)


def markers(vocab_size):
    """($, |, ., *): the ids after the letters, as the authors' tokenizer numbers them."""
    return vocab_size, vocab_size + 1, vocab_size + 2, vocab_size + 3


def longest_example(kind, n, n_gram, length_answer):
    """The most characters an example of n letters can take (its answer the whole rest, or
    length_answer letters)."""
    if kind == PREFIX or kind == SUFFIX:  # the answer follows the query: at most n - n_gram letters
        answer = min(length_answer, n - n_gram) if length_answer > 0 else n - n_gram
        return n_gram + n + answer + (4 if kind == PREFIX else 3)
    answer = min(length_answer, n) if length_answer > 0 and kind == COPY else n
    return n + answer + 3


def query_limit(n, n_gram, length_answer):
    """The starts an n-gram query (and duplicate's two starts) is drawn among: 0 .. limit - 1, as
    the authors' ``max_limit`` (room for the answer after it, and one character more)."""
    return n - n_gram - (length_answer if length_answer > 0 else 0) - 1


@njit(cache=True)
def _classes(s, n, g, starts, hashes, slot_start, slot_hash, slot_count, cls):
    """cls[i] <- a slot shared by exactly the starts i' < ``starts`` whose g-gram equals start i's;
    slot_count[slot] <- how many there are. Hash table of open addressing over a polynomial hash,
    every equal hash checked letter by letter (exact whatever the hash)."""
    size, bits = 8, 3  # the smallest power of two of at least twice the starts (and of the scratch's)
    while size < 2 * starts:
        size, bits = 2 * size, bits + 1
    shift = np.uint64(64 - bits)
    slot_start[:size] = -1
    top = np.uint64(1)
    for _ in range(g - 1):
        top *= _BASE
    h = np.uint64(0)
    for k in range(g):
        h = h * _BASE + np.uint64(s[k])
    for i in range(starts):
        if i > 0:
            h = (h - np.uint64(s[i - 1]) * top) * _BASE + np.uint64(s[i + g - 1])
        hashes[i] = h
        j = np.int64((h * _GOLD) >> shift)  # Fibonacci hashing: the top bits of the product
        while True:
            first = slot_start[j]
            if first < 0:
                slot_start[j], slot_hash[j], slot_count[j], cls[i] = i, h, 1, j
                break
            if slot_hash[j] == h:
                same = True
                for k in range(g):
                    if s[first + k] != s[i + k]:
                        same = False
                        break
                if same:
                    slot_count[j] += 1
                    cls[i] = j
                    break
            j = (j + 1) & (size - 1)


@njit(cache=True)
def example(st, kind, n, g, la, vs, ambiguous, c, at, scratch):
    """Writes one example of n letters at c[at:] and returns (its length, where its scored part
    starts), or (-1, 0) when a lookup found no query in MAX_TRIES strings. ``scratch``: (s, hashes,
    slot_start, slot_hash, slot_count, cls, cand) sized for the longest n."""
    s, hashes, slot_start, slot_hash, slot_count, cls, cand = scratch
    dollar, bar, dot = vs, vs + 1, vs + 2
    limit = n - g - (la if la > 0 else 0) - 1
    idx = 0
    for tries in range(MAX_TRIES if kind == PREFIX or kind == SUFFIX else 1):
        below_fill(st, s, 0, n, vs)
        if kind == COPY or kind == DUPLICATE:
            break
        counted = limit if ambiguous else n - g + 1  # the authors count within their list alone
        _classes(s, n, g, counted, hashes, slot_start, slot_hash, slot_count, cls)
        k = 0
        for i in range(limit):
            if slot_count[cls[i]] == 1:
                cand[k] = i
                k += 1
        if k == 0:
            if tries == MAX_TRIES - 1:
                return -1, 0
            continue
        if ambiguous:  # the authors' draw: any start of their list but the last, its n-gram's first occurrence
            j = below(st, limit - 1)
            idx = j
            for i in range(j):
                if cls[i] == cls[j]:
                    idx = i
                    break
        else:
            idx = cand[below(st, k)]
        break
    if kind == DUPLICATE:  # two starts g apart at least: every occurrence of the second's n-gram becomes the first's
        i = below(st, limit)
        near_lo, near_hi = max(0, i - g + 1), min(limit, i + g)  # the starts whose window overlaps i's
        if near_hi - near_lo == limit:  # none is g away (a short string): any other start
            near_lo, near_hi = i, i + 1
        j = below(st, limit - (near_hi - near_lo))
        if j >= near_lo:
            j += near_hi - near_lo
        new = s[i : i + g].copy()
        old = s[j : j + g].copy()
        t = 0
        while t + g <= n:  # str.replace: left to right, matches never overlapping
            same = True
            for k in range(g):
                if s[t + k] != old[k]:
                    same = False
                    break
            if same:
                copy_run(s, t, new, 0, g)
                t += g
            else:
                t += 1
    m = at
    c[m] = dollar
    m += 1
    if kind == PREFIX:
        copy_run(c, m, s, idx, g)
        c[m + g] = bar
        m += g + 1
    copy_run(c, m, s, 0, n)
    c[m + n] = bar
    m += n + 1
    scored = m - at
    if kind == SUFFIX:
        copy_run(c, m, s, idx, g)
        m += g
        scored += g
    if kind == PREFIX or kind == SUFFIX:
        rest = n - idx - g
        a = min(la, rest) if la > 0 else rest
        copy_run(c, m, s, idx + g, a)
    else:  # copy's answer is length_answer letters when set, duplicate's always the whole string
        a = min(la, n) if la > 0 and kind == COPY else n
        copy_run(c, m, s, 0, a)
    m += a
    c[m] = dot
    return m + 1 - at, scored


@njit(cache=True)
def row(seed, split, index, kind, g, la, vs, ambiguous, packed, lo, hi, c, mask, scratch, buf):
    """Characters c[:C] and mask[:C] of one row (module docstring); buf: an example's room.
    Returns False when an example found no query."""
    st = stream(seed, split, index)
    C = c.shape[0]
    mask[:] = 0
    pos = 0
    while pos < C:
        n = lo + below(st, hi - lo + 1)
        m, scored = example(st, kind, n, g, la, vs, ambiguous, buf, 0, scratch)
        if m < 0:
            return False
        if pos + m > C:  # the last example, cut at C and unscored
            copy_run(c, pos, buf, 0, C - pos)
            return True
        copy_run(c, pos, buf, 0, m)
        mask[pos + scored : pos + m] = 1
        pos += m
        if not packed:
            c[pos:] = vs + 3  # *
            return True
    return True


@njit(cache=True)
def scratch_for(longest):
    """Scratch arrays of ``example`` for strings of at most ``longest`` letters."""
    size = 8
    while size < 2 * (longest + 1):
        size *= 2
    return (np.empty(longest, np.int64), np.empty(longest + 1, np.uint64), np.empty(size, np.int64),
            np.empty(size, np.uint64), np.empty(size, np.int64), np.empty(longest + 1, np.int64),
            np.empty(longest + 1, np.int64))


@njit(cache=True, parallel=True)
def fill(seed, split, start, kind, g, la, vs, ambiguous, packed, lo, hi, longest, inputs, targets, failed):
    """Rows start .. start + count - 1 into inputs, targets [count, C - 1]; failed[b] marks a row
    whose example found no query (the wrapper refuses the config)."""
    count, T = inputs.shape
    chunks = min(count, 64)
    for ch in prange(chunks):
        scratch = scratch_for(longest)
        c = np.empty(T + 1, np.int64)
        mask = np.empty(T + 1, np.uint8)
        buf = np.empty(3 * longest + g + 8, np.int64)
        for b in range(ch * count // chunks, (ch + 1) * count // chunks):
            failed[b] = not row(seed, split, start + b, kind, g, la, vs, ambiguous, packed, lo, hi, c, mask,
                                scratch, buf)
            for t in range(T):
                inputs[b, t] = c[t]
                targets[b, t] = c[t + 1] if mask[t + 1] else -100
