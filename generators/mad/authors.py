"""MAD's own streams: the samples athms/mad-lab @ 0f49a452 (mad/data/instances.py) makes for a seed.

``authors(cfg, count, seed, split)`` equals, element for element,
``[generate_<task>_instance(rng=rng, is_training=(split == "train"), **params) for _ in range(count)]``
stacked, where ``rng = np.random.default_rng(seed)`` and ``np.random.seed(seed)`` come first
(selective copying draws its blank positions from NumPy's global legacy generator; here a
``RandomState(seed)`` of our own, the same stream, so the caller's global state is left alone).
Memorization's fixed key -> value map comes from ``default_rng(kv_map_seed)``.

This is a lean rewrite, not MAD's code: it makes the same NumPy calls in the same order
(``rng.choice(a)`` of a 1-D or 2-D array is ``a[rng.integers(0, len(a))]``; ``rng.choice(a,
size=m)`` is ``a[rng.integers(0, len(a), size=m)]``; shuffling a list of all motif tuples moves
them as ``rng.permutation`` of their indices does, so fuzzy recall shuffles indices and
decodes only the tuples it picks, never building the lists). docs/tasks/mad.md, "The
authors' stream", lists the quirks this keeps; tests/test_mad.py checks it against fixtures
made by running MAD's code (bench/mad_fixtures.py remakes them).

``mad_dataset`` makes MAD's train and test sets as MAD's training script does: one generator
for both, the test set continuing the stream where the training set left it.
"""
import dataclasses
import math

import numpy as np

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators._tokens import IGNORE

# configs/tasks/*.yml: num_train_examples of each task's baseline; MADConfig.num_test_examples, seed
MAD_TRAIN_EXAMPLES = {
    "mad-recall": 12_800, "mad-noisy-recall": 12_800, "mad-fuzzy-recall": 12_800,
    "mad-selective-copying": 12_800, "mad-compression": 12_800, "mad-memorization": 256,
}
MAD_TEST_EXAMPLES = 1_280
MAD_SEED = 12_345


class Draws:
    """The two generators MAD's data draws from: ``rng`` (PCG64) and the global legacy one."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.legacy = np.random.RandomState(seed)


def _pick(rng, n):
    """``rng.choice`` of an n-element sequence: the index it draws."""
    return int(rng.integers(0, n))


# ---------------------------------------------------------------- in-context recall (plain and noisy)


def recall_instance(draws, cfg, is_training):
    rng = draws.rng
    ns = cfg.vocab_size - cfg.noise_vocab_size - (0 if cfg.multi_query else 1)
    nk, nv = ns // 2, ns - ns // 2
    frac = cfg.frac_noise
    pairs = cfg.seq_len // 2
    values, scored, tokens = {}, [], []
    never_noise = _pick(rng, pairs)
    for i in range(pairs - 1):
        if frac > 0 and i != never_noise and rng.random() < frac:
            tokens.extend(int(t) + ns for t in rng.integers(0, cfg.noise_vocab_size, size=2))
            scored.extend((IGNORE, IGNORE))
            continue
        k = _pick(rng, nk)
        seen = k in values
        if not seen:
            values[k] = nk + _pick(rng, nv)
        tokens.extend((k, values[k]))
        scored.extend((IGNORE, values[k] if seen and cfg.multi_query else IGNORE))
    if not values:
        raise LongsynthError("MAD's recall generator fails on this draw: every slot was noise, no key to probe")
    keys = list(values)
    probe = keys[_pick(rng, len(keys))]
    if not cfg.multi_query:
        tokens.append(cfg.vocab_size - 1)
        scored.append(IGNORE)
    tokens.extend((probe, values[probe]))
    scored.extend((IGNORE, values[probe]))
    return _shift(tokens, scored, is_training)


def _shift(tokens, scored, is_training):
    tokens = np.asarray(tokens, dtype=np.int64)
    if is_training:
        return tokens[:-1], tokens[1:]
    return tokens[:-1], np.asarray(scored, dtype=np.int64)[1:]


# ---------------------------------------------------------------- fuzzy in-context recall


def _arrangements(n, k):
    return math.perm(n, k)


def _unrank(rank, n, k, offset):
    """The ``rank``-th tuple of ``itertools.permutations(range(n), k)`` (lexicographic), plus offset."""
    left = list(range(n))
    out = []
    for j in range(k):
        block = math.perm(n - 1 - j, k - 1 - j)
        c, rank = divmod(rank, block)
        out.append(left.pop(c) + offset)
    return tuple(out)


class _Motifs:
    """A shuffled list of every k-tuple of distinct tokens of [offset, offset + n), by its indices."""

    def __init__(self, rng, n, k, offset):
        self.order = rng.permutation(_arrangements(n, k))
        self.n, self.k, self.offset = n, k, offset

    def choice(self, rng):
        return _unrank(int(self.order[_pick(rng, len(self.order))]), self.n, self.k, self.offset)


def _fuzzy_sizes(cfg):
    """(key tokens, value tokens) of fuzzy recall's motifs: the vocabulary less noise and special tokens, halved."""
    ns = cfg.vocab_size - cfg.noise_vocab_size - (1 if cfg.multi_query else 2)
    return max(0, ns // 2), max(0, ns - ns // 2)


def fuzzy_side_bytes(cfg):
    """Bytes a fuzzy recall row's ``_Motifs`` hold at once: an int64 index of every key motif of each size a training
    row draws and of every value motif (perm(2047, 3) of vocab_size 4096 alone is 69 GB)."""
    nk, nv = _fuzzy_sizes(cfg)
    return 8 * (sum(math.perm(nk, s) for s in range(1, cfg.k_motif_size + 1))
                + sum(math.perm(nv, s) for s in range(1, cfg.v_motif_size + 1)))


def fuzzy_instance(draws, cfg, is_training):
    rng = draws.rng
    km, vm = cfg.k_motif_size, cfg.v_motif_size
    ns = cfg.vocab_size - cfg.noise_vocab_size - (1 if cfg.multi_query else 2)
    nk, nv = ns // 2, ns - ns // 2
    pad = cfg.vocab_size - 1 if cfg.multi_query else cfg.vocab_size - 2
    key_sizes = list(range(1, km + 1)) if is_training else [km]
    keys = {s: _Motifs(rng, nk, s, 0) for s in key_sizes}
    vals = {s: _Motifs(rng, nv, s, nk) for s in range(1, vm + 1)}

    def key_size():
        return key_sizes[_pick(rng, len(key_sizes))] if is_training else km

    pks = key_size()
    pvs = _pick(rng, vm) + 1
    probe_k = keys[pks].choice(rng)
    probe_v = vals[pvs].choice(rng)
    probe_slot = _pick(rng, cfg.seq_len - 2 * (pks + pvs))
    probe_shown = False
    shown = {}
    tokens, scored = [], []
    while len(tokens) < cfg.seq_len - (pks + pvs) - (km + vm):
        ks = key_size()
        vs = _pick(rng, vm) + 1
        if len(tokens) >= probe_slot and not probe_shown:
            tokens.extend(probe_k + probe_v)
            scored.extend([IGNORE] * (pks + pvs))
            shown[probe_k] = probe_v
            probe_shown = True
            continue
        if cfg.frac_noise > 0 and rng.random() < cfg.frac_noise:
            tokens.extend(int(t) + ns for t in rng.integers(0, cfg.noise_vocab_size, size=ks + vs))
            scored.extend([IGNORE] * (ks + vs))
            continue
        k = keys[ks].choice(rng)
        seen = k in shown
        if k == probe_k:
            v = probe_v
            probe_shown = True
        elif seen:
            v = shown[k]
        else:
            v = vals[vs].choice(rng)
        tokens.extend(k + v)
        scored.extend([IGNORE] * ks + (list(v) if seen and cfg.multi_query else [IGNORE] * len(v)))
        shown[k] = v
    if not cfg.multi_query:
        tokens.append(cfg.vocab_size - 1)
        scored.append(IGNORE)
    tokens.extend(probe_k + probe_v)
    scored.extend([IGNORE] * pks + list(probe_v))
    n_pad = cfg.seq_len + 1 - len(tokens)
    return _shift([pad] * n_pad + tokens, [IGNORE] * n_pad + scored, is_training)


# ---------------------------------------------------------------- selective copying, compression, memorization


def selective_copying_instance(draws, cfg, is_training):
    n = cfg.num_tokens_to_copy
    blank, copy = cfg.vocab_size - 2, cfg.vocab_size - 1
    n_blank = cfg.seq_len - 2 * n - 1
    data = draws.rng.integers(0, cfg.vocab_size - 2, size=(n,))
    gaps = np.bincount(draws.legacy.randint(0, n, n_blank), minlength=n)
    inputs = np.full(cfg.seq_len, blank, dtype=np.int64)
    at = np.arange(n) + np.cumsum(gaps)  # data token j follows the blanks of gaps 0..j
    inputs[at] = data
    inputs[n + n_blank] = copy
    targets = np.full(cfg.seq_len, IGNORE, dtype=np.int64)
    targets[-n:] = data
    return inputs, targets


def compression_instance(draws, cfg, is_training):
    rng = draws.rng
    nd = cfg.vocab_size - cfg.noise_vocab_size - 1
    inputs = np.empty(cfg.seq_len, dtype=np.int64)
    inputs[:-1] = rng.integers(0, nd, size=(cfg.seq_len - 1,))
    inputs[-1] = cfg.vocab_size - 1
    if cfg.frac_noise > 0:
        for i in range(cfg.seq_len - 1):
            if rng.random() < cfg.frac_noise:
                inputs[i] = nd + _pick(rng, cfg.noise_vocab_size)
    return inputs, inputs.copy()  # MAD returns (inputs, inputs): the noise masking never takes effect


def memorization_map(seed, ns):
    """MAD's ``generate_kv_map(vocab_size=ns, seed=seed)``: (keys in MAD's list order, value of each key).
    MAD's instance function passes ns = vocab_size - noise_vocab_size - 1 (``kv_map_seed``);
    MADConfig, which its training pipeline uses, passes vocab_size - 1 and its own seed."""
    nk = ns // 2
    kv_rng = np.random.default_rng(seed)
    keys = kv_rng.permutation(nk)
    vals = kv_rng.permutation(ns - nk) + nk
    m = min(nk, ns - nk)
    value = np.empty(nk, dtype=np.int64)
    value[keys[:m]] = vals[:m]
    return keys[:m], value


def memorization_instance(draws, cfg, is_training, kv):
    rng = draws.rng
    keys, value = kv
    ns = cfg.vocab_size - cfg.noise_vocab_size - 1
    insert = cfg.vocab_size - 1
    pairs = cfg.seq_len // 2
    inputs = np.empty(2 * pairs, dtype=np.int64)
    targets = np.empty(2 * pairs, dtype=np.int64)
    never_noise = _pick(rng, pairs)
    for i in range(pairs):
        if cfg.frac_noise > 0 and i != never_noise and rng.random() < cfg.frac_noise:
            inputs[2 * i: 2 * i + 2] = ns + rng.integers(0, cfg.noise_vocab_size, size=2)
            targets[2 * i: 2 * i + 2] = IGNORE
            continue
        k = keys[_pick(rng, len(keys))]
        inputs[2 * i], inputs[2 * i + 1] = k, insert
        targets[2 * i], targets[2 * i + 1] = IGNORE, value[k]
    return inputs, targets


# ---------------------------------------------------------------- streams


# Parameters of ours that MAD's functions do not have, with the value that is MAD's behaviour.
_OURS_ONLY = {"blank_after_last": False, "ignore_noise_targets": False}

_INSTANCE = {
    "mad-recall": recall_instance,
    "mad-noisy-recall": recall_instance,
    "mad-fuzzy-recall": fuzzy_instance,
    "mad-selective-copying": selective_copying_instance,
    "mad-compression": compression_instance,
}

# The order MAD's pipeline draws the splits in: training set, then the sets scored as at test time.
PIPELINE_ORDER = ("train", "val", "test")


def _instances(name, cfg, map_ns=None):
    """The per-instance function of task ``name`` for cfg, as (draws, is_training) -> (inputs, targets).
    ``map_ns``: the vocabulary memorization's map is drawn over (MAD's instance function's by default)."""
    for k, mad_value in _OURS_ONLY.items():
        if getattr(cfg, k, mad_value) != mad_value:
            raise LongsynthError(f"{k}: MAD's generator has no such option; the authors' stream needs "
                                 f"{k}={mad_value}")
    if name == "mad-memorization":
        ns = cfg.vocab_size - cfg.noise_vocab_size - 1 if map_ns is None else map_ns
        kv = memorization_map(cfg.kv_map_seed, ns)
        return lambda draws, is_training: memorization_instance(draws, cfg, is_training, kv)
    fn = _INSTANCE[name]
    return lambda draws, is_training: fn(draws, cfg, is_training)


def _stack(pairs):
    if not pairs:
        return {"inputs": np.zeros(0, dtype=np.int64), "targets": np.zeros(0, dtype=np.int64)}
    return {"inputs": np.stack([p[0] for p in pairs]).astype(np.int64),
            "targets": np.stack([p[1] for p in pairs]).astype(np.int64)}


def run(name, cfg, count, draws, is_training):
    """``count`` instances of task ``name`` from ``draws`` (advanced in place), stacked."""
    make = _instances(name, cfg)
    return _stack([make(draws, is_training) for _ in range(count)])


def _check_seed(seed):
    if not 0 <= seed < 1 << 32:
        raise LongsynthError(f"seed: MAD's np.random.seed takes [0, 2**32), got {seed}")


def _row_shape(name, cfg):
    from longsynth import registry

    return tuple(registry.get(name).keys(cfg)["inputs"].shape)


def _side(name, cfg):
    """The Stream arguments of what task ``name``'s rows hold beside them: fuzzy recall's motif indices."""
    if name != "mad-fuzzy-recall":
        return {}
    return {"side_bytes": fuzzy_side_bytes(cfg), "side_doc": "a shuffled index of every key and value motif, "
                                                             "drawn again for each row: vocab_size and the motif "
                                                             "sizes set its size, whatever the count"}


def _blocks(make, draws, ahead, count, is_training, block):
    """Blocks of ``count`` instances from ``draws``, after drawing (not keeping) the
    instances of ``ahead`` [(count, is_training), ...] first."""
    for n, training in ahead:
        for _ in range(n):
            make(draws, training)
    for lo in range(0, count, block):
        yield _stack([make(draws, is_training) for _ in range(min(block, count - lo))])


def stream_of(name):
    """The ``authors(cfg, count, seed, split)`` function of task ``name`` (an ``Authors``,
    generators/_authors.py: called, the stacked rows; ``.open``, a Stream of them): MAD's
    instance function from fresh generators. Each call starts anew, so two splits of one seed
    share their draws: a data set is ``pipeline_of``'s."""
    def open_stream(cfg, count, seed, split):
        _check_seed(seed)
        make = _instances(name, cfg)
        shape = _row_shape(name, cfg)
        return Stream(count, _blocks(make, Draws(seed), [], count, split == "train", block_rows(shape)), shape,
                      **_side(name, cfg))
    return Authors(open_stream, f"MAD's stream of {name} for seed (fresh default_rng(seed) and legacy seed(seed)).")


def pipeline_of(name):
    """The ``pipeline(cfg, seed, counts, split)`` function of task ``name`` (an ``Authors``): split
    ``split`` of the data set whose splits have ``counts`` ({split: count}), as MAD's
    ``generate_data`` makes its sets (mad/data/dataset.py): one pair of generators for the whole
    set, the training rows first, then each split scored as at test time continuing where the one
    before stopped (order train, val, test; MAD itself has train and test). Memorization's map is
    MADConfig's: ``generate_kv_map`` over vocab_size - 1 tokens (noise tokens included), seeded by
    ``kv_map_seed`` (MADConfig passes its seed, so MAD's own files have kv_map_seed equal to the
    seed, 12345). The rows of the splits ahead are drawn again, not kept."""
    def open_stream(cfg, seed, counts, split):
        _check_seed(seed)
        make = _instances(name, cfg, map_ns=cfg.vocab_size - 1)
        shape = _row_shape(name, cfg)
        ahead = [(counts.get(s, 0), s == "train") for s in PIPELINE_ORDER[: PIPELINE_ORDER.index(split)]]
        count = counts.get(split, 0)
        return Stream(count, _blocks(make, Draws(seed), ahead, count, split == "train", block_rows(shape)), shape,
                      **_side(name, cfg))
    return Authors(open_stream, f"MAD's data set of {name}: its splits continue one stream (generate_data).")


def mad_dataset(name, cfg, *, seed=MAD_SEED, num_train_examples=None, num_test_examples=MAD_TEST_EXAMPLES):
    """MAD's train and test sets for task ``name`` as its training script makes them: the training
    instances first, then the test instances continuing the same generators (MADConfig's seed 12345).
    MADConfig draws memorization's map from the same seed, so kv_map_seed is set to it here.
    ``longsynth gen mad-<task> --authors-stream --seed 12345 --splits train=12800,test=1280`` writes the
    same rows (docs/tasks/mad.md, "MAD's own files")."""
    if name == "mad-memorization":
        cfg = dataclasses.replace(cfg, kv_map_seed=seed)
    n_train = MAD_TRAIN_EXAMPLES[name] if num_train_examples is None else num_train_examples
    counts = {"train": n_train, "test": num_test_examples}
    make = pipeline_of(name)
    return {s: make(cfg, seed, counts, s) for s in ("train", "test")}
