"""MAD's compression (mad/data/instances.py ``generate_compression_instance``); definition,
its quirk (the noise masking never takes effect) and worked example: docs/tasks/mad.md.

Vocabulary layout (V = vocab_size, n = noise_vocab_size):
    mad-compression                data [0, V - n - 1), noise [V - n - 1, V - 1), end V - 1

Draw order (the notation: generators/mad/common.py):
    compression  seq_len - 1 tokens below(V - n - 1); then if frac_noise > 0 for each of
                 them: uniform() < frac_noise replaces it by V - n - 1 + randint(n).
    memorization f = randint(seq_len / 2); then per pair i: if frac_noise > 0 and i != f,
                 noise = uniform() < frac_noise (2 tokens randint(n)), else key randint(ns//2).
                 The key -> value map: stream(kv_map_seed, FIXED, 0), for key k = 0..ns//2-1
                 in turn, a value drawn uniformly among those not yet given (swap-remove
                 Fisher-Yates over the ns - ns//2 values); stored in the manifest.
"""
from collections import namedtuple
from dataclasses import dataclass

from numba import njit, prange

from longsynth.generators._tokens import IGNORE
from longsynth.generators.mad.common import MAX_LEN, MAX_VOCAB, _check_noise, _require, _seq_length, _task, _vocab
from longsynth.rng import below, randint, stream, uniform
from longsynth.task import param

CompressionLaw = namedtuple("CompressionLaw", "n_data noise_lo n_noise frac_noise end ignore_noise_targets")


@dataclass(frozen=True)
class CompressionConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = param(32, "sequence length (MAD's seq_len)", lo=2, hi=MAX_LEN)
    noise_vocab_size: int = param(0, "noise tokens, just below the end token", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a token is replaced by noise", lo=0.0, hi=0.999999)
    ignore_noise_targets: bool = param(False, "mark noise positions -100 in targets (MAD's code means to but "
                                       "returns the noisy inputs as targets: off keeps MAD's law)")


def _check_compression(cfg):
    _require(cfg.vocab_size - cfg.noise_vocab_size - 1 >= 1,
             f"vocab_size: must leave >= 1 data token after {cfg.noise_vocab_size} noise tokens and the end "
             f"token, got {cfg.vocab_size}")
    _check_noise(cfg)


def _compression_law(cfg):
    nd = cfg.vocab_size - cfg.noise_vocab_size - 1
    return CompressionLaw(nd, nd, max(cfg.noise_vocab_size, 1), float(cfg.frac_noise), cfg.vocab_size - 1,
                          bool(cfg.ignore_noise_targets))


@njit(cache=True)
def compression_one(seed, split, index, law, inp, tgt):
    """inp, tgt [seq_len]: seq_len - 1 tokens and the end token; targets the (noisy) inputs."""
    s = stream(seed, split, index)
    n = inp.shape[0] - 1
    for i in range(n):
        inp[i] = below(s, law.n_data)
    inp[n] = law.end
    for i in range(n + 1):
        tgt[i] = inp[i]
    if law.frac_noise > 0:
        for i in range(n):
            if uniform(s) < law.frac_noise:
                inp[i] = law.noise_lo + randint(s, law.n_noise)
                tgt[i] = IGNORE if law.ignore_noise_targets else inp[i]


@njit(cache=True, parallel=True)
def compression_fill(seed, split, start, law, inp, tgt):
    for b in prange(inp.shape[0]):
        compression_one(seed, split, start + b, law, inp[b], tgt[b])


def _fill_compression(cfg, seed, split, start, out, fixed):
    compression_fill(seed, split, start, _compression_law(cfg), out["inputs"], out["targets"])


TASKS = [
    _task("mad-compression", config=CompressionConfig,
          summary="MAD compression: reproduce a random sequence (autoencoder)",
          length=_seq_length, fill=_fill_compression, check=_check_compression,
          card="seq_len - 1 uniform tokens and an end token; the targets are the inputs (docs/tasks/mad.md)."),
]
