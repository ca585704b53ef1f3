"""The ListOps tree sampler: the LRA tree process conditioned on a length window, in Numba.

The task definitions, keys and vocabulary are in ``generators/listops/tasks.py`` (and
docs/tasks/listops.md); this module holds what changes when the draw order or the speed
of the sampler changes: the token ids the kernels write, the reproducibility contract and
the kernels that honour it.

Draw order (the reproducibility contract, revision 2; see ``longsynth.rng``). Sample
``index`` reads only the stream ``stream(seed, split, index)``, as whole 64-bit words w_0,
w_1, ... (``next_u64``). Trees are drawn one after another (attempts) until one is
accepted. An attempt builds the shape level by level (breadth first); level d (the root's
is 1) holds z_d nodes in left-to-right order, z_1 = 1. For d = 1 .. max_depth - 1:

1. Decisions: the next ceil(z_d / 32) words; node j is an operator iff bits 2(j mod 32) and
   2(j mod 32) + 1 of word floor(j / 32) are both 0 (probability exactly 1/4). Unused bits
   are discarded. Nodes at depth max_depth are leaves and draw nothing.
2. Argument counts 2 + u, u uniform in 0 .. m - 1 with m = max_args - 1, for the level's x_d
   operators in order: if m = 2^k (k >= 1), fields of k bits, floor(64 / k) per word, low
   first (operator i reads field i mod floor(64 / k) of the level's word floor(i / floor(64/k)));
   if m = 1, nothing; otherwise 16-bit chunks, 4 per word, low first, a fresh word at the
   level's start: chunk c gives u = (c * m) >> 16 unless (c * m) mod 2^16 < 2^16 mod m, in
   which case it is discarded and the next chunk read (Lemire; exactly uniform).
3. Bounds. After level d, length = 1 + sum over the operators so far of (arguments + 1) and
   z_{d+1} = sum of the level's argument counts. The attempt is rejected if length >=
   max_length, or if length + z_{d+1} (M_{d+1} - 1) <= min_length, where M_e is the longest
   subtree rooted at depth e (M_max_depth = 1, M_e = 2 + max_args M_{e+1}); otherwise it is
   accepted if z_{d+1} = 0 or d + 1 = max_depth, else it goes on to level d + 1.

Labels, for the accepted tree only, from a bit reservoir that starts at the word after the
attempt: a request for k bits takes the low k bits of the current word and shifts them out;
if fewer than k bits remain, the rest of the word is discarded and the next word loaded.
Tokens in order (preorder): every operator takes 2 bits (0 MIN, 1 MAX, 2 MED, 3 SM), every
leaf a digit: a 16-bit request x gives (10 x) >> 16, unless (10 x) mod 2^16 < 2^16 mod 10 = 6,
in which case x is requested again.

Why this is exactly the conditioned LRA process. In the LRA process every node's decision
and argument count are independent draws, so assigning draws to nodes breadth first
instead of depth first gives the same law of shapes. Labels (operator kinds and digits) are
independent of the shape, and the length depends on the shape only: the law of (shape,
labels) given the window is law(shape | window) x law(labels | shape), so drawing labels
only after a shape is accepted changes nothing. Rejection sampling returns the first
attempt whose shape lies in the window; stopping an attempt early changes nothing as long as
it happens only to attempts that would be rejected anyway and depends only on what was
drawn so far. After level d the final length is at least the length so far (pending nodes
can only add tokens) and at most length + z_{d+1} (M_{d+1} - 1) (each pending node at
most a full subtree), so both early rejections are certain. A leaf root (length 1 <=
min_length) is rejected after one word. Attempts consume disjoint stretches of the stream,
so how many words a rejected attempt used does not bias the next one. (Revision 1 of this
contract drew node by node in preorder; revision 2 gives the same law, 17x faster.)

Implementation (three layers): ``attempt_length`` counts a word's 32 decisions with one
popcount and sums up to 21 argument fields with k popcounts, so a rejected attempt costs
about one word operation per 32 nodes; ``attempt_shape`` is the node-by-node reference of
the same draws and records every node's argument count (a test checks both consume
identical words, accepted or not). Once an attempt is accepted, ``attempt_shape`` replays
it from the saved stream state, and ``_labelled_tree`` walks the shape in preorder (one
cursor per level: preorder meets each level's nodes left to right) while drawing labels,
in one pass. ``listops_fill`` runs samples in parallel into padded rows, which
``generate_padded`` allocates and the tasks' block hooks (``generators/listops/tasks.py``)
compact into ragged keys.

Template: h = 0x9E3779B97F4A7C15; for every non-digit token id t in order,
h = splitmix64_finaliser(h ^ (t + 1)). Equal templates give equal hashes.
"""
import numpy as np
from numba import njit, prange

from longsynth.generators._copy import copy_run
from longsynth.rng import next_u64, popcount, stream

VOCAB = ["[MIN", "[MAX", "[MED", "[SM", "]", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
OPERATORS = VOCAB[:4]
CLOSE = 4
DIGIT0 = 5
PAD_ID = len(VOCAB)  # 15, outside the vocabulary: what pad_collate pads inputs with
IGNORE = -1  # target of every token that is not a `]`
EVEN = np.uint64(0x5555555555555555)  # bit 0 of each 2-bit decision in a word
ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
TEMPLATE_SEED = 0x9E3779B97F4A7C15
REVISION = 2  # 1: node-by-node preorder draws (longsynth 0.1.0); 2: level-by-level words


# Numba note: these inlined helpers never reassign their arguments (doing so made every
# call ~20x slower); each returns the new reservoir (word, left) instead.


@njit(cache=True, inline="always")
def _bits(s, word, left, k):
    """(k low bits of the reservoir, word, left); reloads a fresh word when fewer than k remain."""
    mask = (np.uint64(1) << np.uint64(k)) - np.uint64(1)
    if left < k:
        fresh = next_u64(s)
        return np.int64(fresh & mask), fresh >> np.uint64(k), 64 - k
    return np.int64(word & mask), word >> np.uint64(k), left - k


@njit(cache=True, inline="always")
def _choice(s, word, left, m, k):
    """(uniform integer in [0, m), word, left). k >= 0: m == 2**k, take k bits. k < 0:
    Lemire's multiply-shift on 16 bits x: value (x * m) >> 16, x redrawn while
    (x * m) mod 2**16 < 2**16 mod m (exact; a redraw happens with probability < m / 2**16)."""
    if k >= 0:
        return _bits(s, word, left, k)
    x, w, n = _bits(s, word, left, 16)
    prod = x * m
    if (prod & 0xFFFF) < m:
        t = 65536 % m
        while (prod & 0xFFFF) < t:  # m <= 2^16 (10 here): accepted with probability 1 - t / 2^16 > 1/2
            x, w, n = _bits(s, w, n, 16)
            prod = x * m
    return prod >> 16, w, n


@njit(cache=True, inline="always")
def _arg_bits(max_args):
    """Bits per argument-count draw: log2(max_args - 1) if a power of two, else -1 (Lemire)."""
    kbits = 0
    while (1 << kbits) < max_args - 1:
        kbits += 1
    return kbits if (1 << kbits) == max_args - 1 else -1


@njit(cache=True, inline="always")
def _low(n):
    """Mask of the n low bits of a uint64 (0 <= n; n >= 64 gives all ones)."""
    if n >= 64:
        return ALL_ONES
    return (np.uint64(1) << np.uint64(n)) - np.uint64(1)


@njit(cache=True, inline="always")
def _field_base(k):
    """Bit 0 of each of the 64 // k fields of k bits in a word (k >= 1)."""
    base = np.uint64(0)
    for i in range(64 // k):
        base |= np.uint64(1) << np.uint64(k * i)
    return base


@njit(cache=True, inline="always")
def _field_sum(w, base, k):
    """Sum of the k-bit fields of w whose bit 0 is set in base (one popcount per bit plane)."""
    total = 0
    for b in range(k):
        total += popcount(w & (base << np.uint64(b))) << b
    return total


@njit(cache=True, inline="always")
def _chunk_choice(s, w, chunks, m, t):
    """(u, w, chunks): Lemire's exact choice in [0, m) from 16-bit chunks of w (4 per word,
    low first, a fresh word when none are left); a chunk x with (x * m) mod 2**16 < t =
    2**16 mod m is discarded and the next one read."""
    while True:  # m = max_args - 1 <= 15: a chunk is accepted with probability 1 - t / 2^16 > 1/2
        if chunks == 0:
            w = next_u64(s)
            chunks = 4
        prod = np.int64(w & np.uint64(0xFFFF)) * m
        w = w >> np.uint64(16)
        chunks -= 1
        if (prod & 0xFFFF) >= t:
            return prod >> 16, w, chunks


@njit(cache=True)
def caps(max_length, max_args, max_depth):
    """cap[d] = M_d - 1 for d = 1..max_depth, M_d the longest token length of a subtree rooted
    at depth d (M_max_depth = 1, M_d = 2 + max_args * M_{d+1}), clipped at max_length."""
    cap = np.zeros(max_depth + 1, dtype=np.int64)
    m = 1
    for d in range(max_depth, 0, -1):
        cap[d] = m - 1
        m = min(2 + max_args * m, max_length)
    return cap


@njit(cache=True, inline="always")
def _level_verdict(length, z, cap_next, min_length, max_length):
    """After a level (length so far, z pending nodes that add at most cap_next tokens each):
    0 to reject (the final length cannot land in the window), the length to accept (no
    pending nodes), -1 to go on."""
    if length >= max_length or length + z * cap_next <= min_length:
        return 0
    return length if z == 0 else -1


@njit(cache=True)
def attempt_length(s, min_length, max_length, max_args, max_depth, cap):
    """One attempt, level by level with 32 decisions per popcount: accepted length, else 0.

    Consumes exactly the words of :func:`attempt_shape` (the node-by-node reference).
    """
    m = max_args - 1
    k = _arg_bits(max_args)
    per = 64 // k if k > 0 else 64
    base = _field_base(k) if k > 0 else np.uint64(0)
    t = 65536 % m
    length = 1
    z = 1
    for d in range(1, max_depth):
        x = 0
        for j0 in range(0, z, 32):
            w = next_u64(s)
            x += popcount(~(w | (w >> np.uint64(1))) & EVEN & _low(2 * (z - j0)))
        total = 2 * x
        if k > 0:
            for i0 in range(0, x, per):
                total += _field_sum(next_u64(s), base & _low(k * (x - i0)), k)
        elif k < 0:
            w = np.uint64(0)
            chunks = 0
            for _ in range(x):
                u, w, chunks = _chunk_choice(s, w, chunks, m, t)
                total += u
        length += x + total
        v = _level_verdict(length, total, cap[d + 1], min_length, max_length)
        if v >= 0:
            return v
        z = total
    return length


@njit(cache=True)
def attempt_shape(s, min_length, max_length, max_args, max_depth, cap, kids, starts):
    """One attempt node by node (the documented draw order): accepted length, else 0.

    Writes the argument count of every node at depth < max_depth (0 for a leaf) into kids,
    level after level in left-to-right order; level d starts at kids[starts[d]].
    """
    m = max_args - 1
    k = _arg_bits(max_args)
    per = 64 // k if k > 0 else 64
    field = (1 << k) - 1 if k > 0 else 0
    t = 65536 % m
    length = 1
    z = 1
    n = 0
    for d in range(1, max_depth):
        starts[d] = n
        w = np.uint64(0)
        for j in range(z):
            if j % 32 == 0:
                w = next_u64(s)
            kids[n + j] = ((w >> np.uint64(2 * (j % 32))) & np.uint64(3)) == 0  # 1: operator
        total = 0
        i = 0
        chunks = 0
        for j in range(n, n + z):
            if kids[j]:
                u = 0
                if k > 0:
                    if i % per == 0:
                        w = next_u64(s)
                    u = np.int64(w >> np.uint64(k * (i % per))) & field
                elif k < 0:
                    u, w, chunks = _chunk_choice(s, w, chunks, m, t)
                kids[j] = u + 2
                total += u + 3
                i += 1
        n += z
        length += total
        total -= i  # arguments of this level's operators: the next level's nodes
        v = _level_verdict(length, total, cap[d + 1], min_length, max_length)
        if v >= 0:
            return v
        z = total
    return length


@njit(cache=True, inline="always")
def _hash_step(h, t):
    """SplitMix64 finaliser of h ^ (t + 1): one template token into the hash."""
    a = h ^ np.uint64(t + 1)
    b = (a ^ (a >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    c = (b ^ (b >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return c ^ (c >> np.uint64(31))


@njit(cache=True, inline="always")
def _kth(hist, base, k):
    """k-th smallest (0-based) of the digits counted in hist[base:base + 10]: branch-free."""
    v = 0
    cum = 0
    for b in range(10):
        cum += hist[base + b]
        v += cum <= k
    return v


@njit(cache=True, inline="always")
def _close_value(op, count, hist, base):
    """Value of operator op over the count digits counted in hist[base:base + 10]
    (MED = int(numpy.median(args)): the mean of the two middle values, truncated)."""
    if op == 0:
        return _kth(hist, base, 0)
    if op == 1:
        return _kth(hist, base, count - 1)
    if op == 3:
        total = 0
        for b in range(1, 10):
            total += b * hist[base + b]
        return total % 10
    return (_kth(hist, base, (count - 1) // 2) + _kth(hist, base, count // 2)) // 2


@njit(cache=True)
def _labelled_tree(kids, starts, max_depth, s, tokens, targets, heights, operators):
    """Walk the accepted shape (kids, starts) in preorder while drawing labels from stream s
    (a bit reservoir starting at its next word); write tokens and tags, compute values,
    heights and operators per `]` and the template hash. Returns (length, n_close, root, template).

    Preorder visits each level's nodes left to right, so one cursor per level finds them.
    Each open operator counts its arguments' digits (a histogram of 10), from which its `]`
    reads MIN, MAX, MED or SM; heights start at 0, so only operator children update them.
    """
    frames = max_depth + 1
    cursor = starts.copy()
    rem = np.empty(frames, dtype=np.int64)
    f_op = np.empty(frames, dtype=np.int64)
    f_n = np.empty(frames, dtype=np.int64)
    f_h = np.zeros(frames, dtype=np.int64)
    hist = np.zeros(frames * 10, dtype=np.int64)
    word = np.uint64(0)
    left = 0
    top = -1
    pos = 0
    nclose = 0
    h = np.uint64(TEMPLATE_SEED)
    while True:
        d = top + 2
        c = 0
        if d < max_depth:
            c = np.int64(kids[cursor[d]])
            cursor[d] += 1
        if c > 0:
            op, word, left = _bits(s, word, left, 2)
            tokens[pos] = op
            targets[pos] = IGNORE
            pos += 1
            h = _hash_step(h, op)
            top += 1
            rem[top] = c
            f_n[top] = c
            f_op[top] = op
            continue
        v, word, left = _choice(s, word, left, 10, -1)
        tokens[pos] = DIGIT0 + v
        targets[pos] = IGNORE
        pos += 1
        if top < 0:
            return pos, nclose, v, h
        hist[top * 10 + v] += 1
        rem[top] -= 1
        while rem[top] == 0:
            base = top * 10
            op = f_op[top]
            v = _close_value(op, f_n[top], hist, base)
            for b in range(10):
                hist[base + b] = 0
            ht = f_h[top] + 1
            f_h[top] = 0
            tokens[pos] = CLOSE
            targets[pos] = v
            pos += 1
            h = _hash_step(h, CLOSE)
            heights[nclose] = ht
            operators[nclose] = op
            nclose += 1
            top -= 1
            if top < 0:
                return pos, nclose, v, h
            hist[top * 10 + v] += 1
            f_h[top] = max(f_h[top], ht)
            rem[top] -= 1


@njit(cache=True)
def listops_one(seed, split, index, min_length, max_length, max_args, max_depth,
                tokens, targets, heights, operators):
    """Sample ``index`` into the row buffers; returns (length, n_close, root, template, attempts)."""
    s = stream(seed, split, index)
    cap = caps(max_length, max_args, max_depth)
    saved = np.empty(4, dtype=np.uint64)
    attempts = 0
    length = 0
    # attempts are independent, each accepted with probability acceptance(cfg) >= 1e-6
    # (listops._check refuses less, and an empty window): <= 1e6 attempts expected
    while length == 0:
        attempts += 1
        copy_run(saved, 0, s, 0, saved.shape[0])
        length = attempt_length(s, min_length, max_length, max_args, max_depth, cap)
    kids = np.empty(max_length, dtype=np.uint8)
    starts = np.zeros(max_depth + 1, dtype=np.int64)
    again = attempt_shape(saved, min_length, max_length, max_args, max_depth, cap, kids, starts)
    n, nclose, root, h = _labelled_tree(kids, starts, max_depth, s, tokens, targets, heights, operators)
    if again != length or n != length:
        raise RuntimeError("listops: shape replay disagrees with the length pass")
    return length, nclose, root, h, attempts


@njit(cache=True, parallel=True)
def listops_fill(seed, split, start, min_length, max_length, max_args, max_depth,
                 tokens, targets, heights, operators, lengths, ncloses, roots, templates, attempts):
    """Samples start..start+n-1 into padded rows [n, ...] and per-sample scalars [n]."""
    for b in prange(tokens.shape[0]):
        length, nclose, root, tmpl, att = listops_one(
            seed, split, start + b, min_length, max_length, max_args, max_depth,
            tokens[b], targets[b], heights[b], operators[b])
        lengths[b] = length
        ncloses[b] = nclose
        roots[b] = root
        templates[b] = tmpl
        attempts[b] = att


def generate_padded(cfg, seed, split, start, count):
    """Kernel output for samples start..start+count-1: padded rows, scalars and attempts."""
    width = cfg.max_length
    out = {
        "tokens": np.empty((count, width), dtype=np.uint8),
        "targets": np.empty((count, width), dtype=np.int8),
        "heights": np.empty((count, width // 3 + 1), dtype=np.int8),
        "operators": np.empty((count, width // 3 + 1), dtype=np.int8),
        "lengths": np.zeros(count, dtype=np.int32),
        "ncloses": np.zeros(count, dtype=np.int32),
        "roots": np.zeros(count, dtype=np.int8),
        "templates": np.zeros(count, dtype=np.uint64),
        "attempts": np.zeros(count, dtype=np.int64),
    }
    listops_fill(seed, split, start, cfg.min_length, cfg.max_length, cfg.max_args, cfg.max_depth,
                 out["tokens"], out["targets"], out["heights"], out["operators"], out["lengths"],
                 out["ncloses"], out["roots"], out["templates"], out["attempts"])
    return out
