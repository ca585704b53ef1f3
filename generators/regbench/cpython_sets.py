"""The iteration order of CPython's sets, in Numba: the hash table a set keeps, replayed insertion by
insertion, for the sets whose order decides the bytes of berlino/seq_icl's RegBench (generators/regbench/
authors.py). Written from CPython 3.11's behaviour (Objects/setobject.c, Objects/tupleobject.c), checked
against real sets and hashes in tests/test_regbench_authors.py.

A set is (keys, hashes, meta): keys int64 [size] (an element's id >= 0, EMPTY, DUMMY for a removed one),
hashes int64 [size] (its Python hash), meta int64 [3] (mask = size - 1, fill = slots ever used, used =
elements). Elements with equal ids are equal; distinct ids are unequal even under one hash (a DFA object
of the authors compares by identity; equal frozensets are given one id by the caller). A set iterates in
slot order.

- ``add``: ``set.add`` and each element of ``set(iterable)`` in turn: probe from hash & mask, 9 slots
  on where the table has them, then i = 5 i + 1 + perturb (perturb the hash, shifted right 5 bits a
  probe round); a removed slot met on the way is reused; a set whose fill reaches 3/5 of its mask
  grows to the smallest power of 2 above 4 x its elements (2 x above 50,000), reinserting in slot order.
- ``merge``: ``set(other_set)``, ``s.copy()``, ``s.union(t)`` (a copy of s, then t merged): grown first
  to fit, then the other's slots copied as they are (same size, empty, no removed slots), reinserted
  in slot order (empty), or added one by one.
- ``remove``: the slot becomes DUMMY; ``copy.deepcopy`` of a set is ``set(list(s))``.
- ``tuple_hash``, ``frozenset_hash``: Python's hash of a tuple (xxHash's mixing over the items'
  hashes) and of a frozenset (its members' hashes shuffled and XORed, then dispersed); a small int
  hashes to itself. A str's hash depends on the process's hash seed: the caller brings them.
"""
import numpy as np
from numba import njit

EMPTY = -1
DUMMY = -2
_LINEAR_PROBES = 9
_XX1 = np.uint64(11400714785074694791)
_XX2 = np.uint64(14029467366897019727)
_XX5 = np.uint64(2870177450012600261)
_U5, _U11, _U16, _U25, _U31, _U33 = (np.uint64(v) for v in (5, 11, 16, 25, 31, 33))


@njit(cache=True)
def new(size=8):
    keys = np.full(size, EMPTY, dtype=np.int64)
    meta = np.zeros(3, dtype=np.int64)
    meta[0] = size - 1
    return keys, np.zeros(size, dtype=np.int64), meta


@njit(cache=True)
def _insert_clean(keys, hashes, key, h):
    mask = np.uint64(keys.shape[0] - 1)
    perturb = np.uint64(h)
    i = perturb & mask
    while True:
        if keys[i] == EMPTY:
            keys[i], hashes[i] = key, h
            return
        if i + np.uint64(_LINEAR_PROBES) <= mask:
            for j in range(1, _LINEAR_PROBES + 1):
                if keys[i + np.uint64(j)] == EMPTY:
                    keys[i + np.uint64(j)], hashes[i + np.uint64(j)] = key, h
                    return
        perturb >>= _U5
        i = (i * np.uint64(5) + np.uint64(1) + perturb) & mask


@njit(cache=True)
def _resize(keys, hashes, meta, minused):
    size = 8
    while size <= minused:
        size <<= 1
    if size == 8 and keys.shape[0] == 8 and meta[1] == meta[2]:
        return keys, hashes  # a small table without removed slots stays as it is
    new_keys = np.full(size, EMPTY, dtype=np.int64)
    new_hashes = np.zeros(size, dtype=np.int64)
    for i in range(keys.shape[0]):
        if keys[i] >= 0:
            _insert_clean(new_keys, new_hashes, keys[i], hashes[i])
    meta[0], meta[1] = size - 1, meta[2]
    return new_keys, new_hashes


@njit(cache=True)
def _probe(keys, hashes, key, h):
    """(slot of key or of the empty slot ending its probe, the last removed slot met or -1)."""
    mask = np.uint64(keys.shape[0] - 1)
    perturb = np.uint64(h)
    i = perturb & mask
    free = -1
    while True:
        probes = _LINEAR_PROBES if i + np.uint64(_LINEAR_PROBES) <= mask else 0
        j = i
        for _ in range(probes + 1):
            k = keys[j]
            if k == EMPTY:
                return np.int64(j), free
            if hashes[j] == h and k == key:
                return np.int64(j), free
            if k == DUMMY:
                free = np.int64(j)
            j += np.uint64(1)
        perturb >>= _U5
        i = (i * np.uint64(5) + np.uint64(1) + perturb) & mask


@njit(cache=True)
def add(keys, hashes, meta, key, h):
    """Add ``key`` (hash h); returns the set's (keys, hashes), new arrays where it grew."""
    j, free = _probe(keys, hashes, key, h)
    if keys[j] == key:
        return keys, hashes
    if free >= 0:
        keys[free], hashes[free] = key, h
        meta[2] += 1
        return keys, hashes
    keys[j], hashes[j] = key, h
    meta[1] += 1
    meta[2] += 1
    if meta[1] * 5 < meta[0] * 3:
        return keys, hashes
    return _resize(keys, hashes, meta, meta[2] * 2 if meta[2] > 50000 else meta[2] * 4)


@njit(cache=True)
def remove(keys, hashes, meta, key, h):
    j, _ = _probe(keys, hashes, key, h)
    if keys[j] == key:
        keys[j], hashes[j] = DUMMY, -1
        meta[2] -= 1


@njit(cache=True)
def merge(keys, hashes, meta, o_keys, o_hashes, o_meta):
    """Merge the other set into this one (``set_merge``); returns this set's (keys, hashes)."""
    if o_meta[2] == 0:
        return keys, hashes
    if (meta[1] + o_meta[2]) * 5 >= meta[0] * 3:
        keys, hashes = _resize(keys, hashes, meta, (meta[2] + o_meta[2]) * 2)
    if meta[1] == 0 and meta[0] == o_meta[0] and o_meta[1] == o_meta[2]:
        for i in range(o_keys.shape[0]):
            if o_keys[i] >= 0:
                keys[i], hashes[i] = o_keys[i], o_hashes[i]
        meta[1], meta[2] = o_meta[1], o_meta[2]
        return keys, hashes
    if meta[1] == 0:
        for i in range(o_keys.shape[0]):
            if o_keys[i] >= 0:
                _insert_clean(keys, hashes, o_keys[i], o_hashes[i])
        meta[1], meta[2] = o_meta[2], o_meta[2]
        return keys, hashes
    for i in range(o_keys.shape[0]):
        if o_keys[i] >= 0:
            keys, hashes = add(keys, hashes, meta, o_keys[i], o_hashes[i])
    return keys, hashes


@njit(cache=True)
def from_list(ids, hs):
    """``set(seq)`` of elements ids with hashes hs, added in order."""
    keys, hashes, meta = new()
    for i in range(ids.shape[0]):
        keys, hashes = add(keys, hashes, meta, ids[i], hs[i])
    return keys, hashes, meta


@njit(cache=True)
def copy(keys, hashes, meta):
    """``set(s)``, ``s.copy()``."""
    k2, h2, m2 = new()
    k2, h2 = merge(k2, h2, m2, keys, hashes, meta)
    return k2, h2, m2


@njit(cache=True)
def elements(keys):
    """Its element ids in iteration order."""
    return keys[keys >= 0]


@njit(cache=True)
def tuple_hash(lanes, n):
    """hash() of a tuple whose n items hash to lanes[:n]."""
    acc = _XX5
    for i in range(n):
        acc += np.uint64(lanes[i]) * _XX2
        acc = (acc << _U31) | (acc >> _U33)
        acc *= _XX1
    acc += np.uint64(n) ^ (_XX5 ^ np.uint64(3527539))
    if acc == np.uint64(0xFFFFFFFFFFFFFFFF):
        return np.int64(1546275796)
    return np.int64(acc)


@njit(cache=True)
def _shuffle_bits(h):
    return ((h ^ np.uint64(89869747)) ^ (h << _U16)) * np.uint64(3644798167)


@njit(cache=True)
def frozenset_hash(member_hashes, n):
    """hash() of a frozenset whose n members hash to member_hashes[:n] (distinct members)."""
    acc = np.uint64(0)
    for i in range(n):
        acc ^= _shuffle_bits(np.uint64(member_hashes[i]))
    acc ^= np.uint64(n + 1) * np.uint64(1927868237)
    acc ^= (acc >> _U11) ^ (acc >> _U25)
    acc = acc * np.uint64(69069) + np.uint64(907133923)
    if acc == np.uint64(0xFFFFFFFFFFFFFFFF):
        return np.int64(590923713)
    return np.int64(acc)
