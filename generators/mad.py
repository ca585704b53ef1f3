"""MAD's six token tasks (Poli et al. 2024, athms/mad-lab @ 0f49a452, mad/data/instances.py).

Definitions, worked examples and quirks: docs/tasks/mad.md. Every task stores ``inputs`` and
``targets``, integer token ids [T] (int8 up to 127 tokens, int16 up to 32,767, else int32), -100 in
``targets`` at every unscored position. Parameters carry MAD's names and its configs'
defaults (configs/tasks/*.yml; where a function default differs, the config wins).
"Scored as at test time" means split val or test; the train split scores as MAD's
``is_training=True`` (next-token targets at every position for the recall tasks).

Vocabulary layout (V = vocab_size, n = noise_vocab_size, "ns" the non-special tokens):
    mad-recall, mad-noisy-recall   ns = V - n (multi_query) or V - n - 1 (copy prefix V - 1);
                                   keys [0, ns//2), values [ns//2, ns), noise [ns, ns + n)
    mad-fuzzy-recall               ns = V - n - 1 (multi_query; pad V - 1) or V - n - 2
                                   (pad V - 2, copy prefix V - 1); keys and values as above
    mad-selective-copying          data [0, V - 2), blank V - 2, copy V - 1
    mad-compression                data [0, V - n - 1), noise [V - n - 1, V - 1), end V - 1
    mad-memorization               keys [0, ns//2), values [ns//2, ns), ns = V - n - 1,
                                   noise [ns, V - 1), insert V - 1

Draw order (the reproducibility contract; ``stream(seed, split, index)``, one per sample;
``randint(m)`` uniform on [0, m), ``uniform()`` on [0, 1); ``below(m)`` uniform on [0, m) by
Lemire's multiply-shift, no division on most draws (all three: longsynth/rng.py); ``pairs(g)``
a run of draws uniform on [0, g), as below(g) but on both 32-bit halves of each next_u64: x the
low half, then the high half; m = x * g, x rejected while m mod 2^32 < 2^32 mod g, else the
draw is m >> 32; a run starts on a fresh next_u64):
    recall       f = randint(P) with P = seq_len / 2 (the slot that is never noise); then for
                 slots i = 0..P-2: if frac_noise > 0 and i != f, noise = uniform() < frac_noise;
                 a noise slot draws 2 tokens randint(n); otherwise key randint(ns//2) and, if
                 the key is new, its value ns//2 + randint(ns - ns//2). Then the probe
                 randint(number of distinct keys shown), over the keys in order of first
                 appearance. A sample that showed no key (every slot noise; MAD's code fails
                 there) is redrawn from where its stream stands.
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
    selective    num_tokens_to_copy tokens randint(V - 2), then pairs(g) for the
                 seq_len - 2 num_tokens_to_copy - 1 blanks: their gaps, with
                 g = num_tokens_to_copy (num_tokens_to_copy + 1 with blank_after_last).
    compression  seq_len - 1 tokens below(V - n - 1); then if frac_noise > 0 for each of
                 them: uniform() < frac_noise replaces it by V - n - 1 + randint(n).
    memorization f = randint(seq_len / 2); then per pair i: if frac_noise > 0 and i != f,
                 noise = uniform() < frac_noise (2 tokens randint(n)), else key randint(ns//2).
                 The key -> value map: stream(kv_map_seed, FIXED, 0), for key k = 0..ns//2-1
                 in turn, a value drawn uniformly among those not yet given (swap-remove
                 Fisher-Yates over the ns - ns//2 values); stored in the manifest.

Worked examples: docs/tasks/mad.md, one per task.
"""
import functools
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators import mad_authors
from longsynth.generators._tokens import IGNORE, REVISION, token_dtype
from longsynth.rng import FIXED, SPLITS, below, next_u64, randint, stream, uniform
from longsynth.task import KeySpec, Task, param

CITATION = """@inproceedings{poli2024mad,
  title     = {Mechanistic Design and Scaling of Hybrid Architectures},
  author    = {Poli, Michael and Thomas, Armin W. and Nguyen, Eric and Ponnusamy, Pragaash and Deiseroth, Bj{\\"o}rn
               and Kersting, Kristian and Suzuki, Taiji and Hie, Brian and Ermon, Stefano and R{\\'e}, Christopher
               and Zhang, Ce and Massaroli, Stefano},
  booktitle = {International Conference on Machine Learning (ICML)},
  year      = {2024},
  note      = {arXiv:2403.17844}
}"""
TRAIN = SPLITS["train"]
MAD_TEST = mad_authors.MAD_TEST_EXAMPLES  # MAD's sizes exactly: --splits train=12800,test=1280 (memorization 256)
MAX_VOCAB = 1 << 20
MAX_LEN = 1 << 20

RecallLaw = namedtuple("RecallLaw", "n_keys n_values noise_lo n_noise frac_noise n_pairs multi_query copy_prefix")
FuzzyLaw = namedtuple(
    "FuzzyLaw", "n_keys n_values noise_lo n_noise frac_noise seq_len k_motif v_motif multi_query pad copy_prefix"
)
CopyLaw = namedtuple("CopyLaw", "n_data blank copy n_copy n_blank n_gaps")
CompressionLaw = namedtuple("CompressionLaw", "n_data noise_lo n_noise frac_noise end ignore_noise_targets")
MemorizationLaw = namedtuple("MemorizationLaw", "n_keys noise_lo n_noise frac_noise n_pairs insert")


# ---------------------------------------------------------------- configs


def _vocab(default):
    return param(default, "vocabulary size V, special and noise tokens included", lo=3, hi=MAX_VOCAB)


def _seq_len(default):
    return param(default, "sequence length (MAD's seq_len)", lo=4, hi=MAX_LEN)


_MULTI_QUERY = "score every value of a key shown before (else only the final probe, after a copy prefix)"


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


@dataclass(frozen=True)
class FuzzyRecallConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = _seq_len(128)
    multi_query: bool = param(True, _MULTI_QUERY)
    k_motif_size: int = param(3, "longest key (keys are 1..k tokens in training, k at test)", lo=1, hi=16)
    v_motif_size: int = param(3, "longest value (values are 1..v tokens)", lo=1, hi=16)
    noise_vocab_size: int = param(0, "noise tokens, taken below the pad token", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a key-value slot is noise instead", lo=0.0, hi=0.999999)


@dataclass(frozen=True)
class SelectiveCopyingConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = _seq_len(256)
    num_tokens_to_copy: int = param(16, "data tokens scattered among blanks, copied after the copy token",
                                    lo=1, hi=MAX_LEN)
    blank_after_last: bool = param(False, "let blanks follow the last data token (MAD never does: off keeps "
                                   "MAD's law)")


@dataclass(frozen=True)
class CompressionConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = param(32, "sequence length (MAD's seq_len)", lo=2, hi=MAX_LEN)
    noise_vocab_size: int = param(0, "noise tokens, just below the end token", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a token is replaced by noise", lo=0.0, hi=0.999999)
    ignore_noise_targets: bool = param(False, "mark noise positions -100 in targets (MAD's code means to but "
                                       "returns the noisy inputs as targets: off keeps MAD's law)")


@dataclass(frozen=True)
class MemorizationConfig:
    vocab_size: int = _vocab(256)
    seq_len: int = param(32, "sequence length (MAD's seq_len; pairs of key and insert token)", lo=2, hi=MAX_LEN)
    noise_vocab_size: int = param(0, "noise tokens, just below the insert token", lo=0, hi=MAX_VOCAB)
    frac_noise: float = param(0.0, "probability that a pair is 2 noise tokens instead", lo=0.0, hi=0.999999)
    kv_map_seed: int = param(12345, "seed of the fixed key -> value map (shared by every split)", lo=0, hi=2**63 - 1)


# ---------------------------------------------------------------- checks and laws


def _require(ok, message):
    if not ok:
        raise LongsynthError(message)


def _check_noise(cfg):
    _require(cfg.frac_noise == 0 or cfg.noise_vocab_size > 0,
             f"noise_vocab_size: must be > 0 when frac_noise > 0, got {cfg.noise_vocab_size}")


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


def _check_copying(cfg):
    _require(cfg.seq_len > 2 * cfg.num_tokens_to_copy + 1,
             f"seq_len: must exceed 2 num_tokens_to_copy + 1 = {2 * cfg.num_tokens_to_copy + 1}, got {cfg.seq_len}")


def _copy_law(cfg):
    n = cfg.num_tokens_to_copy
    return CopyLaw(cfg.vocab_size - 2, cfg.vocab_size - 2, cfg.vocab_size - 1, n, cfg.seq_len - 2 * n - 1,
                   n + 1 if cfg.blank_after_last else n)


def _check_compression(cfg):
    _require(cfg.vocab_size - cfg.noise_vocab_size - 1 >= 1,
             f"vocab_size: must leave >= 1 data token after {cfg.noise_vocab_size} noise tokens and the end "
             f"token, got {cfg.vocab_size}")
    _check_noise(cfg)


def _compression_law(cfg):
    nd = cfg.vocab_size - cfg.noise_vocab_size - 1
    return CompressionLaw(nd, nd, max(cfg.noise_vocab_size, 1), float(cfg.frac_noise), cfg.vocab_size - 1,
                          bool(cfg.ignore_noise_targets))


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


# ---------------------------------------------------------------- kernels: in-context recall (plain and noisy)


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


@njit(cache=True)
def _shift_out(tokens, scored, training, inp, tgt):
    """inp <- tokens[:-1]; tgt <- tokens[1:] in training (next-token targets), else scored[1:]."""
    for i in range(inp.shape[0]):
        inp[i] = tokens[i]
        tgt[i] = tokens[i + 1] if training else scored[i + 1]


@njit(cache=True, parallel=True)
def recall_fill(seed, split, start, law, inp, tgt):
    for b in prange(inp.shape[0]):
        recall_one(seed, split, start + b, law, inp[b], tgt[b])


# ---------------------------------------------------------------- kernels: fuzzy in-context recall


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
            table_keys[n_entries, :pks] = probe_k[:pks]
            key_len[n_entries] = pks
            table_vals[n_entries, :pvs] = probe_v[:pvs]
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
            table_keys[e, :ks] = key[:ks]
            key_len[e] = ks
            is_probe = ks == pks
            if is_probe:
                for j in range(ks):
                    if key[j] != probe_k[j]:
                        is_probe = False
            if is_probe:
                table_vals[e, :pvs] = probe_v[:pvs]
                val_len[e] = pvs
                probe_shown = True
            else:
                _motif(s, law.n_values, vs, val)
                table_vals[e, :vs] = val[:vs]
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


# ---------------------------------------------------------------- kernels: selective copying


@njit(cache=True)
def count_pairs(s, draws, counts):
    """counts[j] += 1 for ``draws`` values j uniform on [0, len(counts)) (< 2^32), in order:
    rng.below's multiply-shift with rejection, but on both 32-bit halves of each next_u64 (low
    half first), two draws a word. Selective copying draws a gap per blank, most of its
    sequence: half the generator calls of one ``below`` per blank."""
    g = np.uint64(counts.shape[0])
    low = np.uint64(0xFFFFFFFF)
    threshold = (np.uint64(1 << 32) - g) % g  # 2^32 mod bound
    word = np.uint64(0)
    halves = 0
    for _ in range(draws):
        while True:  # 1 <= g < 2^32: a half is accepted with probability 1 - (2^32 mod g) / 2^32 > 1/2
            if halves == 0:
                word = next_u64(s)
                x = word & low
                halves = 1
            else:
                x = word >> np.uint64(32)
                halves = 0
            m = x * g
            if (m & low) >= threshold:
                break
        counts[np.int64(m >> np.uint64(32))] += 1


@njit(cache=True)
def copying_one(seed, split, index, law, inp, tgt):
    """inp, tgt [seq_len]: data tokens with blanks in the gaps before them, copy token, blanks."""
    s = stream(seed, split, index)
    n = law.n_copy
    m = inp.shape[0] - n
    for j in range(n):  # the data tokens, kept where the targets want them
        tgt[m + j] = randint(s, law.n_data)
    gaps = np.zeros(law.n_gaps, dtype=np.int64)
    count_pairs(s, law.n_blank, gaps)
    inp[:] = law.blank
    pos = -1
    for j in range(n):
        pos += gaps[j] + 1  # data token j follows the blanks of gaps 0..j
        inp[pos] = tgt[m + j]
    inp[law.n_blank + n] = law.copy
    tgt[:m] = IGNORE


@njit(cache=True, parallel=True)
def copying_fill(seed, split, start, law, inp, tgt):
    for b in prange(inp.shape[0]):
        copying_one(seed, split, start + b, law, inp[b], tgt[b])


# ---------------------------------------------------------------- kernels: compression


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


# ---------------------------------------------------------------- kernels: memorization


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


# ---------------------------------------------------------------- task records


def _token_keys(length):
    def keys(cfg):
        dt = token_dtype(cfg.vocab_size)
        return {
            "inputs": KeySpec(dt, (length(cfg),), doc="token ids"),
            "targets": KeySpec(dt, (length(cfg),), doc="token ids; -100 where not scored"),
        }
    return keys


def _recall_length(cfg):
    return cfg.seq_len - 1 if cfg.multi_query else cfg.seq_len


def _seq_length(cfg):
    return cfg.seq_len


def _memorization_length(cfg):
    return 2 * (cfg.seq_len // 2)


def _fill_recall(cfg, seed, split, start, out, fixed):
    recall_fill(seed, split, start, _recall_law(cfg), out["inputs"], out["targets"])


def _fill_fuzzy(cfg, seed, split, start, out, fixed):
    fuzzy_fill(seed, split, start, _fuzzy_law(cfg), out["inputs"], out["targets"])


def _fill_copying(cfg, seed, split, start, out, fixed):
    copying_fill(seed, split, start, _copy_law(cfg), out["inputs"], out["targets"])


def _fill_compression(cfg, seed, split, start, out, fixed):
    compression_fill(seed, split, start, _compression_law(cfg), out["inputs"], out["targets"])


@functools.lru_cache(maxsize=64)
def _memorization_fixed(cfg, seed):
    ns = cfg.vocab_size - cfg.noise_vocab_size - 1
    kv = memorization_map(cfg.kv_map_seed, ns // 2, ns - ns // 2)
    kv.setflags(write=False)
    return {"kv_map": kv}


def _fill_memorization(cfg, seed, split, start, out, fixed):
    kv = np.ascontiguousarray(fixed["kv_map"], dtype=np.int64)
    memorization_fill(seed, split, start, _memorization_law(cfg), kv, out["inputs"], out["targets"])


def _vocab_size(cfg):
    return cfg.vocab_size


def _task(name, *, config, summary, length, fill, check, card, **extra):
    return Task(name=name, config=config, summary=summary, keys=_token_keys(length), fill=fill, check=check,
                family="tokens", revision=REVISION, card=card, vocab_size=_vocab_size,
                authors=mad_authors.stream_of(name), authors_pipeline=mad_authors.pipeline_of(name),
                citation=CITATION, default_num_samples=mad_authors.MAD_TRAIN_EXAMPLES[name] + MAD_TEST, **extra)


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
    _task("mad-fuzzy-recall", config=FuzzyRecallConfig,
          summary="MAD fuzzy in-context recall: keys and values of 1..k tokens",
          length=_seq_length, fill=_fill_fuzzy, check=_check_fuzzy,
          card="in-context recall whose keys and values are motifs of 1..k_motif_size / 1..v_motif_size distinct "
          "tokens, padded at the front (docs/tasks/mad.md)."),
    _task("mad-selective-copying", config=SelectiveCopyingConfig,
          summary="MAD selective copying: copy the tokens among blanks",
          length=_seq_length, fill=_fill_copying, check=_check_copying,
          card="num_tokens_to_copy data tokens scattered among blanks, a copy token, then the data tokens are the "
          "targets of the last positions (docs/tasks/mad.md)."),
    _task("mad-compression", config=CompressionConfig,
          summary="MAD compression: reproduce a random sequence (autoencoder)",
          length=_seq_length, fill=_fill_compression, check=_check_compression,
          card="seq_len - 1 uniform tokens and an end token; the targets are the inputs (docs/tasks/mad.md)."),
    _task("mad-memorization", config=MemorizationConfig,
          summary="MAD memorization: values of a fixed key -> value map",
          length=_memorization_length, fill=_fill_memorization, check=_check_memorization,
          card="seq_len/2 pairs (key, insert token); the insert token's target is the key's value under a map "
          "fixed by kv_map_seed (docs/tasks/mad.md).", fixed=_memorization_fixed),
]
