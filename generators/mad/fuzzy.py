"""MAD's fuzzy in-context recall (mad/data/instances.py
``generate_fuzzy_in_context_recall_instance``): keys and values are motifs of several tokens;
definition and worked example: docs/tasks/mad.md.

Vocabulary layout (V = vocab_size, n = noise_vocab_size, "ns" the non-special tokens):
    mad-fuzzy-recall               ns = V - n - 1 (multi_query; pad V - 1) or V - n - 2
                                   (pad V - 2, copy prefix V - 1); keys and values as above

Draw order (the notation: generators/mad/common.py):
    fuzzy        motif draws "key(s)": s tokens, each randint(ns//2) redrawn while it repeats
                 an earlier token of the motif (values alike from the value range). Probe
                 sizes ks = 1 + randint(k_motif_size) (train; else k_motif_size) and
                 vs = 1 + randint(v_motif_size), probe key(ks), probe value(vs), probe slot
                 randint(seq_len - 2 (ks + vs)). Then while the sequence is shorter than
                 seq_len - ks - vs - k_motif_size - v_motif_size: sizes as for the probe; if the
                 probe is due (length >= slot, not yet shown) it is written and the sizes are
                 unused; else noise = uniform() < frac_noise when frac_noise > 0 (ks + vs
                 tokens randint(n)), else key(size) and, for a key neither shown nor the probe
                 key, value(size).
"""
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._copy import copy_run
from longsynth.generators._tokens import IGNORE
from longsynth.generators.mad.common import (_MULTI_QUERY, MAX_VOCAB, TRAIN, _check_noise, _require, _seq_len,
                                            _seq_length, _shift_out, _task, _vocab)
from longsynth.rng import randint, stream, uniform
from longsynth.task import param

FuzzyLaw = namedtuple(
    "FuzzyLaw", "n_keys n_values noise_lo n_noise frac_noise seq_len k_motif v_motif multi_query pad copy_prefix"
)


@dataclass(frozen=True)
class FuzzyRecallConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = _seq_len(128)
    multi_query: bool = param(True, _MULTI_QUERY)
    k_motif_size: int = param(3, "longest key (keys are 1..k tokens in training, k at test)", lo=1, hi=16)
    v_motif_size: int = param(3, "longest value (values are 1..v tokens)", lo=1, hi=16)
    noise_vocab_size: int = param(0, "noise tokens, taken below the pad token", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a key-value slot is noise instead", lo=0.0, hi=0.999999)


def _fuzzy_specials(cfg):
    return cfg.vocab_size - cfg.noise_vocab_size - (1 if cfg.multi_query else 2)


def _check_fuzzy(cfg):
    ns = _fuzzy_specials(cfg)
    _require(ns // 2 >= cfg.k_motif_size, f"vocab_size: {cfg.vocab_size} leaves {ns // 2} key tokens, fewer "
             f"than k_motif_size = {cfg.k_motif_size} distinct tokens a key needs")
    _require(ns - ns // 2 >= cfg.v_motif_size, f"vocab_size: {cfg.vocab_size} leaves {ns - ns // 2} value "
             f"tokens, fewer than v_motif_size = {cfg.v_motif_size}")
    _require(cfg.seq_len > 2 * (cfg.k_motif_size + cfg.v_motif_size),
             f"seq_len: must exceed 2 (k_motif_size + v_motif_size) = "
             f"{2 * (cfg.k_motif_size + cfg.v_motif_size)}, got {cfg.seq_len}")
    _check_noise(cfg)


def _fuzzy_law(cfg):
    ns = _fuzzy_specials(cfg)
    v = cfg.vocab_size
    return FuzzyLaw(ns // 2, ns - ns // 2, ns, max(cfg.noise_vocab_size, 1), float(cfg.frac_noise), cfg.seq_len,
                    cfg.k_motif_size, cfg.v_motif_size, bool(cfg.multi_query),
                    v - 1 if cfg.multi_query else v - 2, v - 1)


@njit(cache=True)
def _motif(s, n, size, out):
    """out[:size] <- size distinct tokens of [0, n), each randint(n) redrawn while it repeats."""
    for j in range(size):
        # size <= n (_check_fuzzy: k_motif_size <= keys, v_motif_size <= values), so >= 1 of
        # the n tokens is still unused: each draw is fresh with probability >= (n - j) / n
        while True:
            t = randint(s, n)
            fresh = True
            for i in range(j):
                if out[i] == t:
                    fresh = False
            if fresh:
                out[j] = t
                break


@njit(cache=True)
def _find(table_keys, key_len, n_entries, key, size):
    """Row of ``key`` (``size`` tokens) among the first n_entries rows, or -1."""
    for e in range(n_entries):
        if key_len[e] != size:
            continue
        same = True
        for j in range(size):
            if table_keys[e, j] != key[j]:
                same = False
                break
        if same:
            return e
    return -1


@njit(cache=True)
def _put(tokens, scored, pos, motif, size, offset, score):
    for j in range(size):
        tokens[pos + j] = motif[j] + offset
        scored[pos + j] = motif[j] + offset if score else IGNORE
    return pos + size


@njit(cache=True)
def fuzzy_one(seed, split, index, law, inp, tgt):
    """inp, tgt [seq_len]: the sequence is padded at the front to seq_len + 1, then shifted."""
    s = stream(seed, split, index)
    training = split == TRAIN
    km, vm = law.k_motif, law.v_motif
    n_full = law.seq_len + 1
    tokens = np.empty(n_full, dtype=np.int64)
    scored = np.empty(n_full, dtype=np.int64)
    cap = law.seq_len  # every entry adds >= 2 tokens
    table_keys = np.empty((cap, km), dtype=np.int64)
    table_vals = np.empty((cap, vm), dtype=np.int64)
    key_len = np.empty(cap, dtype=np.int64)
    val_len = np.empty(cap, dtype=np.int64)
    probe_k = np.empty(km, dtype=np.int64)
    probe_v = np.empty(vm, dtype=np.int64)
    key = np.empty(km, dtype=np.int64)
    val = np.empty(vm, dtype=np.int64)

    pks = 1 + randint(s, km) if training else km
    pvs = 1 + randint(s, vm)
    _motif(s, law.n_keys, pks, probe_k)
    _motif(s, law.n_values, pvs, probe_v)
    probe_slot = randint(s, law.seq_len - 2 * (pks + pvs))
    probe_shown = False
    n_entries = 0
    pos = 0
    limit = law.seq_len - (pks + pvs) - (km + vm)
    while pos < limit:
        ks = 1 + randint(s, km) if training else km
        vs = 1 + randint(s, vm)
        if pos >= probe_slot and not probe_shown:
            pos = _put(tokens, scored, pos, probe_k, pks, 0, False)
            pos = _put(tokens, scored, pos, probe_v, pvs, law.n_keys, False)
            copy_run(table_keys[n_entries], 0, probe_k, 0, pks)
            key_len[n_entries] = pks
            copy_run(table_vals[n_entries], 0, probe_v, 0, pvs)
            val_len[n_entries] = pvs
            n_entries += 1
            probe_shown = True
            continue
        noise = False
        if law.frac_noise > 0:
            noise = uniform(s) < law.frac_noise
        if noise:
            for j in range(ks + vs):
                tokens[pos] = law.noise_lo + randint(s, law.n_noise)
                scored[pos] = IGNORE
                pos += 1
            continue
        _motif(s, law.n_keys, ks, key)
        e = _find(table_keys, key_len, n_entries, key, ks)
        seen = e >= 0
        if not seen:
            e = n_entries
            n_entries += 1
            copy_run(table_keys[e], 0, key, 0, ks)
            key_len[e] = ks
            is_probe = ks == pks
            if is_probe:
                for j in range(ks):
                    if key[j] != probe_k[j]:
                        is_probe = False
            if is_probe:
                copy_run(table_vals[e], 0, probe_v, 0, pvs)
                val_len[e] = pvs
                probe_shown = True
            else:
                _motif(s, law.n_values, vs, val)
                copy_run(table_vals[e], 0, val, 0, vs)
                val_len[e] = vs
        pos = _put(tokens, scored, pos, key, ks, 0, False)
        pos = _put(tokens, scored, pos, table_vals[e], val_len[e], law.n_keys, seen and law.multi_query)
    if not law.multi_query:
        tokens[pos] = law.copy_prefix
        scored[pos] = IGNORE
        pos += 1
    pos = _put(tokens, scored, pos, probe_k, pks, 0, False)
    pos = _put(tokens, scored, pos, probe_v, pvs, law.n_keys, True)
    pad = n_full - pos
    for i in range(pos - 1, -1, -1):
        tokens[i + pad] = tokens[i]
        scored[i + pad] = scored[i]
    for i in range(pad):
        tokens[i] = law.pad
        scored[i] = IGNORE
    _shift_out(tokens, scored, training, inp, tgt)


@njit(cache=True, parallel=True)
def fuzzy_fill(seed, split, start, law, inp, tgt):
    for b in prange(inp.shape[0]):
        fuzzy_one(seed, split, start + b, law, inp[b], tgt[b])


def _fill_fuzzy(cfg, seed, split, start, out, fixed):
    fuzzy_fill(seed, split, start, _fuzzy_law(cfg), out["inputs"], out["targets"])


TASKS = [
    _task("mad-fuzzy-recall", config=FuzzyRecallConfig,
          summary="MAD fuzzy in-context recall: keys and values of 1..k tokens",
          length=_seq_length, fill=_fill_fuzzy, check=_check_fuzzy,
          card="in-context recall whose keys and values are motifs of 1..k_motif_size / 1..v_motif_size distinct "
          "tokens, padded at the front (docs/tasks/mad.md)."),
]
