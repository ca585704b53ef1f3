"""MAD's memorization (mad/data/instances.py ``generate_memorization_instance``): a key -> value
map fixed for the dataset, stored in the manifest; definition and worked example:
docs/tasks/mad.md.

Vocabulary layout (V = vocab_size, n = noise_vocab_size, "ns" the non-special tokens):
    mad-memorization               keys [0, ns//2), values [ns//2, ns), ns = V - n - 1,
                                   noise [ns, V - 1), insert V - 1

Draw order (the notation: generators/mad/common.py):
    memorization f = randint(seq_len / 2); then per pair i: if frac_noise > 0 and i != f,
                 noise = uniform() < frac_noise (2 tokens randint(n)), else key randint(ns//2).
                 The key -> value map: stream(kv_map_seed, FIXED, 0), for key k = 0..ns//2-1
                 in turn, a value drawn uniformly among those not yet given (swap-remove
                 Fisher-Yates over the ns - ns//2 values); stored in the manifest.
"""
import functools
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE
from longsynth.generators.mad.common import MAX_LEN, MAX_VOCAB, _check_noise, _require, _task, _vocab
from longsynth.rng import FIXED, randint, stream, uniform
from longsynth.task import param

MemorizationLaw = namedtuple("MemorizationLaw", "n_keys noise_lo n_noise frac_noise n_pairs insert")


@dataclass(frozen=True)
class MemorizationConfig:
    vocab_size: int = _vocab(256)
    seq_len: int = param(32, "sequence length (MAD's seq_len; pairs of key and insert token)", lo=2, hi=MAX_LEN)
    noise_vocab_size: int = param(0, "noise tokens, just below the insert token", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a pair is 2 noise tokens instead", lo=0.0, hi=0.999999)
    kv_map_seed: int = param(12345, "seed of the fixed key -> value map (shared by every split)", lo=0, hi=2**63 - 1)


def _check_memorization(cfg):
    _require(cfg.seq_len % 2 == 0, f"seq_len: must be even (key, insert pairs), got {cfg.seq_len}")
    _require(cfg.vocab_size - cfg.noise_vocab_size - 1 >= 4,
             f"vocab_size: must leave >= 4 key/value tokens (two keys: with one, every sample is the same) after "
             f"{cfg.noise_vocab_size} noise tokens and the insert token, got {cfg.vocab_size}")
    _check_noise(cfg)


def _memorization_law(cfg):
    ns = cfg.vocab_size - cfg.noise_vocab_size - 1
    return MemorizationLaw(ns // 2, ns, max(cfg.noise_vocab_size, 1), float(cfg.frac_noise), cfg.seq_len // 2,
                           cfg.vocab_size - 1)


@njit(cache=True)
def memorization_map(kv_map_seed, n_keys, n_values):
    """int64 [n_keys]: the value of each key, an injection into [n_keys, n_keys + n_values)."""
    s = stream(kv_map_seed, FIXED, 0)
    pool = np.arange(n_keys, n_keys + n_values)
    out = np.empty(n_keys, dtype=np.int64)
    left = n_values
    for k in range(n_keys):
        j = randint(s, left)
        out[k] = pool[j]
        left -= 1
        pool[j] = pool[left]
    return out


@njit(cache=True)
def memorization_one(seed, split, index, law, kv, inp, tgt):
    """inp, tgt [seq_len]: pairs (key, insert) scored at the insert token with the key's value."""
    s = stream(seed, split, index)
    never_noise = randint(s, law.n_pairs)
    for i in range(law.n_pairs):
        noise = False
        if law.frac_noise > 0 and i != never_noise:
            noise = uniform(s) < law.frac_noise
        p = 2 * i
        if noise:
            for t in range(2):
                inp[p + t] = law.noise_lo + randint(s, law.n_noise)
                tgt[p + t] = IGNORE
        else:
            k = randint(s, law.n_keys)
            inp[p] = k
            tgt[p] = IGNORE
            inp[p + 1] = law.insert
            tgt[p + 1] = kv[k]


@njit(cache=True, parallel=True)
def memorization_fill(seed, split, start, law, kv, inp, tgt):
    for b in prange(inp.shape[0]):
        memorization_one(seed, split, start + b, law, kv, inp[b], tgt[b])


def _memorization_length(cfg):
    return 2 * (cfg.seq_len // 2)


@functools.lru_cache(maxsize=64)
def _memorization_fixed(cfg, seed):
    ns = cfg.vocab_size - cfg.noise_vocab_size - 1
    kv = memorization_map(cfg.kv_map_seed, ns // 2, ns - ns // 2)
    kv.setflags(write=False)
    return {"kv_map": kv}


def _fill_memorization(cfg, seed, split, start, out, fixed):
    kv = np.ascontiguousarray(fixed["kv_map"], dtype=np.int64)
    memorization_fill(seed, split, start, _memorization_law(cfg), kv, out["inputs"], out["targets"])


TASKS = [
    _task("mad-memorization", config=MemorizationConfig,
          summary="MAD memorization: values of a fixed key -> value map",
          length=_memorization_length, fill=_fill_memorization, check=_check_memorization,
          card="seq_len/2 pairs (key, insert token); the insert token's target is the key's value under a map "
          "fixed by kv_map_seed (docs/tasks/mad.md).", fixed=_memorization_fixed),
]
