"""MAD token-task twins (docs/tasks/mad.md): recall, noisy and fuzzy recall, selective
copying, compression, memorization."""
import numpy as np

from .core import FIXED, SPLITS, Stream, _token_dtype


# ---------------------------------------------------------------- MAD token tasks (docs/tasks/mad.md)

MAD_IGNORE = -100


def _mad_out(tokens, scored, split, dtype):
    """The full sequence shifted by one: next-token targets in train, the scored tokens otherwise."""
    t = np.array(tokens, dtype=np.int64)
    y = t[1:] if split == "train" else np.array(scored, dtype=np.int64)[1:]
    return {"inputs": t[:-1].astype(dtype), "targets": y.astype(dtype)}


def mad_recall(seed, split, index, vocab_size, seq_len, multi_query, noise_vocab_size, frac_noise):
    st = Stream(seed, SPLITS[split], index)
    ns = vocab_size - noise_vocab_size - (0 if multi_query else 1)
    nk = ns // 2
    pairs = seq_len // 2
    while True:
        value, first_seen, tokens, scored = {}, [], [], []
        never = st.randint(pairs)
        for i in range(pairs - 1):
            if frac_noise > 0 and i != never and st.uniform() < frac_noise:
                for _ in range(2):
                    tokens.append(ns + st.randint(noise_vocab_size))
                    scored.append(MAD_IGNORE)
                continue
            k = st.randint(nk)
            repeat = k in value
            if not repeat:
                value[k] = nk + st.randint(ns - nk)
                first_seen.append(k)
            tokens += [k, value[k]]
            scored += [MAD_IGNORE, value[k] if repeat and multi_query else MAD_IGNORE]
        if first_seen:
            break
    probe = first_seen[st.randint(len(first_seen))]
    if not multi_query:
        tokens.append(vocab_size - 1)
        scored.append(MAD_IGNORE)
    tokens += [probe, value[probe]]
    scored += [MAD_IGNORE, value[probe]]
    return _mad_out(tokens, scored, split, _token_dtype(vocab_size))


def _mad_motif(st, n, size, offset):
    out = []
    while len(out) < size:
        t = st.randint(n)
        if t not in out:
            out.append(t)
    return tuple(t + offset for t in out)


def mad_fuzzy_recall(seed, split, index, vocab_size, seq_len, multi_query, k_motif_size, v_motif_size,
                     noise_vocab_size, frac_noise):
    st = Stream(seed, SPLITS[split], index)
    train = split == "train"
    ns = vocab_size - noise_vocab_size - (1 if multi_query else 2)
    nk = ns // 2

    def sizes():
        ks = 1 + st.randint(k_motif_size) if train else k_motif_size
        return ks, 1 + st.randint(v_motif_size)

    pks, pvs = sizes()
    pk = _mad_motif(st, nk, pks, 0)
    pv = _mad_motif(st, ns - nk, pvs, nk)
    slot = st.randint(seq_len - 2 * (pks + pvs))
    probe_shown = False
    shown = {}
    tokens, scored = [], []
    while len(tokens) < seq_len - (pks + pvs) - (k_motif_size + v_motif_size):
        ks, vs = sizes()
        if len(tokens) >= slot and not probe_shown:
            tokens += list(pk + pv)
            scored += [MAD_IGNORE] * (pks + pvs)
            shown[pk] = pv
            probe_shown = True
            continue
        if frac_noise > 0 and st.uniform() < frac_noise:
            for _ in range(ks + vs):
                tokens.append(ns + st.randint(noise_vocab_size))
                scored.append(MAD_IGNORE)
            continue
        k = _mad_motif(st, nk, ks, 0)
        repeat = k in shown
        if not repeat:
            if k == pk:
                shown[k] = pv
                probe_shown = True
            else:
                shown[k] = _mad_motif(st, ns - nk, vs, nk)
        v = shown[k]
        tokens += list(k + v)
        scored += [MAD_IGNORE] * ks + (list(v) if repeat and multi_query else [MAD_IGNORE] * len(v))
    if not multi_query:
        tokens.append(vocab_size - 1)
        scored.append(MAD_IGNORE)
    tokens += list(pk + pv)
    scored += [MAD_IGNORE] * pks + list(pv)
    pad = seq_len + 1 - len(tokens)
    padding = vocab_size - 1 if multi_query else vocab_size - 2
    return _mad_out([padding] * pad + tokens, [MAD_IGNORE] * pad + scored, split, _token_dtype(vocab_size))


def _mad_pairs(st, bound, count):
    """count draws on [0, bound): 32-bit halves of u64 words (low first), x * bound, rejected while
    its low 32 bits fall below 2^32 mod bound, else its high 32 bits."""
    out, halves = [], []
    while len(out) < count:
        if not halves:
            w = st.u64()
            halves = [w & 0xFFFFFFFF, w >> 32]
        m = halves.pop(0) * bound
        if m % 2**32 >= 2**32 % bound:
            out.append(m >> 32)
    return out


def mad_selective_copying(seed, split, index, vocab_size, seq_len, num_tokens_to_copy, blank_after_last):
    st = Stream(seed, SPLITS[split], index)
    n = num_tokens_to_copy
    data = [st.randint(vocab_size - 2) for _ in range(n)]
    slots = n + 1 if blank_after_last else n
    before = [0] * (n + 1)
    for gap in _mad_pairs(st, slots, seq_len - 2 * n - 1):
        before[gap] += 1
    blank, copy = vocab_size - 2, vocab_size - 1
    x = []
    for j in range(n):
        x += [blank] * before[j] + [data[j]]
    x += [blank] * before[n] + [copy] + [blank] * n
    y = [MAD_IGNORE] * (seq_len - n) + data
    dt = _token_dtype(vocab_size)
    return {"inputs": np.array(x, dtype=dt), "targets": np.array(y, dtype=dt)}


def mad_compression(seed, split, index, vocab_size, seq_len, noise_vocab_size, frac_noise, ignore_noise_targets):
    st = Stream(seed, SPLITS[split], index)
    nd = vocab_size - noise_vocab_size - 1
    x = [st.below(nd) for _ in range(seq_len - 1)]
    y = list(x)
    if frac_noise > 0:
        for i in range(seq_len - 1):
            if st.uniform() < frac_noise:
                x[i] = nd + st.randint(noise_vocab_size)
                y[i] = MAD_IGNORE if ignore_noise_targets else x[i]
    dt = _token_dtype(vocab_size)
    return {"inputs": np.array(x + [vocab_size - 1], dtype=dt), "targets": np.array(y + [vocab_size - 1], dtype=dt)}


def mad_memorization_map(kv_map_seed, vocab_size, noise_vocab_size):
    """Key k -> value: each key in turn takes a uniform value among those not yet given."""
    st = Stream(kv_map_seed, FIXED, 0)
    ns = vocab_size - noise_vocab_size - 1
    nk = ns // 2
    free = list(range(nk, ns))
    out = []
    for _ in range(nk):
        j = st.randint(len(free))
        out.append(free[j])
        free[j] = free[-1]
        free.pop()
    return out


def mad_memorization(seed, split, index, vocab_size, seq_len, noise_vocab_size, frac_noise, kv_map_seed):
    kv = mad_memorization_map(kv_map_seed, vocab_size, noise_vocab_size)
    st = Stream(seed, SPLITS[split], index)
    ns = vocab_size - noise_vocab_size - 1
    pairs = seq_len // 2
    never = st.randint(pairs)
    x, y = [], []
    for i in range(pairs):
        if frac_noise > 0 and i != never and st.uniform() < frac_noise:
            x += [ns + st.randint(noise_vocab_size) for _ in range(2)]
            y += [MAD_IGNORE, MAD_IGNORE]
        else:
            k = st.randint(ns // 2)
            x += [k, vocab_size - 1]
            y += [MAD_IGNORE, kv[k]]
    dt = _token_dtype(vocab_size)
    return {"inputs": np.array(x, dtype=dt), "targets": np.array(y, dtype=dt)}
