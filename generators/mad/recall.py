"""MAD's in-context recall and noisy in-context recall (mad/data/instances.py
``generate_in_context_recall_instance``, ``generate_noisy_in_context_recall_instance``);
definitions and worked examples: docs/tasks/mad.md.

Vocabulary layout (V = vocab_size, n = noise_vocab_size, "ns" the non-special tokens):
    mad-recall, mad-noisy-recall   ns = V - n (multi_query) or V - n - 1 (copy prefix V - 1);
                                   keys [0, ns//2), values [ns//2, ns), noise [ns, ns + n)

Draw order (the notation: generators/mad/common.py):
    recall       f = randint(P) with P = seq_len / 2 (the slot that is never noise); then for
                 slots i = 0..P-2: if frac_noise > 0 and i != f, noise = uniform() < frac_noise;
                 a noise slot draws 2 tokens randint(n); otherwise key randint(ns//2) and, if
                 the key is new, its value ns//2 + randint(ns - ns//2). Then the probe
                 randint(number of distinct keys shown), over the keys in order of first
                 appearance. A sample that showed no key (every slot noise; MAD's code fails
                 there) is redrawn from where its stream stands.
"""
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE
from longsynth.generators.mad.common import (_MULTI_QUERY, MAX_VOCAB, TRAIN, _check_noise, _require, _seq_len,
                                            _shift_out, _task, _vocab)
from longsynth.rng import randint, stream, uniform
from longsynth.task import param

RecallLaw = namedtuple("RecallLaw", "n_keys n_values noise_lo n_noise frac_noise n_pairs multi_query copy_prefix")


@dataclass(frozen=True)
class RecallConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = _seq_len(128)
    multi_query: bool = param(True, _MULTI_QUERY)
    noise_vocab_size: int = param(0, "noise tokens, taken from the top of the vocabulary", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a key-value slot is 2 noise tokens instead", lo=0.0, hi=0.999999)


@dataclass(frozen=True)
class NoisyRecallConfig:
    vocab_size: int = _vocab(32)
    seq_len: int = _seq_len(128)
    multi_query: bool = param(True, _MULTI_QUERY)
    noise_vocab_size: int = param(16, "noise tokens, taken from the top of the vocabulary", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.2, "probability that a key-value slot is 2 noise tokens instead", lo=0.0, hi=0.999999)


def _recall_specials(cfg):
    return cfg.vocab_size - cfg.noise_vocab_size - (0 if cfg.multi_query else 1)


def _check_recall(cfg):
    _require(cfg.seq_len % 2 == 0, f"seq_len: must be even (key-value pairs), got {cfg.seq_len}")
    ns = _recall_specials(cfg)
    _require(ns >= 2, f"vocab_size: must leave >= 2 key/value tokens after {cfg.noise_vocab_size} noise tokens"
             f"{'' if cfg.multi_query else ' and the copy prefix'}, got {cfg.vocab_size}")
    _check_noise(cfg)


def _recall_law(cfg):
    ns = _recall_specials(cfg)
    return RecallLaw(ns // 2, ns - ns // 2, ns, max(cfg.noise_vocab_size, 1), float(cfg.frac_noise),
                     cfg.seq_len // 2, bool(cfg.multi_query), cfg.vocab_size - 1)


@njit(cache=True)
def recall_one(seed, split, index, law, inp, tgt):
    """inp, tgt [T]: T = seq_len - 1 (multi_query) or seq_len; the full sequence is T + 1 long."""
    s = stream(seed, split, index)
    n_full = inp.shape[0] + 1
    tokens = np.empty(n_full, dtype=np.int64)
    scored = np.empty(n_full, dtype=np.int64)
    value = np.empty(law.n_keys, dtype=np.int64)
    order = np.empty(law.n_keys, dtype=np.int64)
    # a pass shows a key with probability >= 1/2 (n_pairs >= 2: never_noise <= n_pairs - 2,
    # a slot that is never noise, with probability (n_pairs - 1) / n_pairs): <= 2 expected
    while True:
        value[:] = -1
        shown = 0
        never_noise = randint(s, law.n_pairs)
        pos = 0
        for i in range(law.n_pairs - 1):
            noise = False
            if law.frac_noise > 0 and i != never_noise:
                noise = uniform(s) < law.frac_noise
            if noise:
                for t in range(2):
                    tokens[pos + t] = law.noise_lo + randint(s, law.n_noise)
                    scored[pos + t] = IGNORE
            else:
                k = randint(s, law.n_keys)
                seen = value[k] >= 0
                if not seen:
                    value[k] = law.n_keys + randint(s, law.n_values)
                    order[shown] = k
                    shown += 1
                tokens[pos] = k
                scored[pos] = IGNORE
                tokens[pos + 1] = value[k]
                scored[pos + 1] = value[k] if (seen and law.multi_query) else IGNORE
            pos += 2
        if shown > 0:
            break
    probe = order[randint(s, shown)]
    if not law.multi_query:
        tokens[pos] = law.copy_prefix
        scored[pos] = IGNORE
        pos += 1
    tokens[pos] = probe
    scored[pos] = IGNORE
    tokens[pos + 1] = value[probe]
    scored[pos + 1] = value[probe]
    _shift_out(tokens, scored, split == TRAIN, inp, tgt)


@njit(cache=True, parallel=True)
def recall_fill(seed, split, start, law, inp, tgt):
    for b in prange(inp.shape[0]):
        recall_one(seed, split, start + b, law, inp[b], tgt[b])


def _recall_length(cfg):
    return cfg.seq_len - 1 if cfg.multi_query else cfg.seq_len


def _fill_recall(cfg, seed, split, start, out, fixed):
    recall_fill(seed, split, start, _recall_law(cfg), out["inputs"], out["targets"])


TASKS = [
    _task("mad-recall", config=RecallConfig,
          summary="MAD in-context recall: values of repeated keys in a key-value stream",
          length=_recall_length, fill=_fill_recall, check=_check_recall,
          card="seq_len/2 - 1 key-value pairs (keys [0, ns/2), values [ns/2, ns), one value per key), then a "
          "probe pair of a key shown before; train: next-token targets; test: the values of keys shown before "
          "(docs/tasks/mad.md)."),
    _task("mad-noisy-recall", config=NoisyRecallConfig,
          summary="MAD noisy in-context recall: recall with noise slots",
          length=_recall_length, fill=_fill_recall, check=_check_recall,
          card="in-context recall where each pair slot is 2 noise tokens with probability frac_noise "
          "(docs/tasks/mad.md)."),
]
