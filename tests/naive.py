"""Slow, independent NumPy / pure-Python twins of every longsynth kernel.

Written from ../shared/TASKS.md and the documented reproducibility contract (the key ->
stream construction in ``longsynth/rng.py``'s docstring and each generator's documented
draw order), never from the kernels' code. Pure Python integers throughout the RNG, so
an error in the Numba uint64 arithmetic cannot hide here.
"""
import math

import numpy as np

M64 = (1 << 64) - 1
SPLITS = {"train": 1, "val": 2, "test": 3}
FIXED = 0


# ---------------------------------------------------------------- random stream


def mix(z):
    """SplitMix64 finaliser."""
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Stream:
    """xoshiro256** keyed by (seed, split code, index), as documented in longsynth.rng."""

    def __init__(self, seed, split, index):
        a = mix(seed ^ 0x9E3779B97F4A7C15)
        b = mix(a ^ mix(split ^ 0xD1B54A32D192ED03))
        c = mix(b ^ mix(index ^ 0x8CB92BA72F3D8DD7))
        d = mix(c ^ 0x2545F4914F6CDD1D)
        self.s = [a, c, b, d]
        for _ in range(4):
            self.u64()

    def u64(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.u64() >> 11) * 2.0**-53

    def randint(self, n):
        threshold = (1 << 64) % n
        while True:
            r = self.u64()
            if r >= threshold:
                return r % n

    def normal(self):
        while True:
            r = self.u64()
            layer = r & 0xFF
            r >>= 8
            negative = r & 1
            frac = (r >> 1) & ((1 << 52) - 1)
            x = frac * ZX[layer] / 2.0**52
            if negative:
                x = -x
            if frac < int(ZX[layer + 1] / ZX[layer] * 2.0**52):
                return x
            if layer == 0:
                while True:
                    xx = -math.log(1.0 - self.uniform()) / ZR
                    yy = -math.log(1.0 - self.uniform())
                    if 2 * yy > xx * xx:
                        return -(ZR + xx) if negative else ZR + xx
            else:
                lo, hi = math.exp(-0.5 * ZX[layer] ** 2), math.exp(-0.5 * ZX[layer + 1] ** 2)
                if lo + self.uniform() * (hi - lo) < math.exp(-0.5 * x * x):
                    return x

    def normals(self, n):
        return np.array([self.normal() for _ in range(n)], dtype=np.float64)

    def unit_inf_noise(self, n, dtype=np.float32):
        """n normals divided by their max |value| (TASKS.md 'normalised noise')."""
        x = self.normals(n)
        return (x / np.abs(x).max()).astype(dtype)


def _ziggurat_edges(r=3.6541528853610088, v=0.00492867323399, layers=256):
    """Marsaglia-Tsang layer edges: x0 = v/f(r), x1 = r, x_{i+1} = f^-1(v/x_i + f(x_i)), x_256 = 0."""
    f = lambda t: math.exp(-0.5 * t * t)  # noqa: E731
    xs = [v / f(r), r]
    for _ in range(layers - 2):
        xs.append(math.sqrt(-2.0 * math.log(v / xs[-1] + f(xs[-1]))))
    xs.append(0.0)
    return xs, r


ZX, ZR = _ziggurat_edges()


# ---------------------------------------------------------------- atomic tasks


def cumsum(seed, split, index, L):
    """TASKS.md: x normalised noise; y_i = (i+1)^-1/2 sum_{j<=i} x_j. Returns inputs, targets."""
    x = Stream(seed, SPLITS[split], index).unit_inf_noise(L)
    y = np.cumsum(x.astype(np.float64)) / np.sqrt(np.arange(1, L + 1))
    return {"inputs": x[:, None], "targets": y.astype(np.float32)[:, None]}


# ---------------------------------------------------------------- pathfinder-seg (image checks)
# Written from TASKS.md's definition only: they look at pixels and marker positions, never at
# how the renderer places dashes.


def _pixel_graph(mask, link):
    """Lit pixels of mask (row, col) and the sparse graph joining pixels <= link apart."""
    from scipy.sparse import coo_matrix
    from scipy.spatial import cKDTree

    pts = np.argwhere(mask).astype(np.float64)
    pairs = cKDTree(pts).query_pairs(link + 1e-9, output_type="ndarray") if len(pts) else np.zeros((0, 2), int)
    d = np.sqrt(((pts[pairs[:, 0]] - pts[pairs[:, 1]]) ** 2).sum(1))
    g = coo_matrix((d, (pairs[:, 0], pairs[:, 1])), shape=(len(pts), len(pts))).tocsr()
    return pts, g


def joined_groups(mask, link):
    """Label per lit pixel of the groups formed when pixels whose centres lie at most
    ``link`` apart are joined (gaps bridged); returns (points [n, 2], labels [n], count)."""
    from scipy.sparse.csgraph import connected_components

    pts, g = _pixel_graph(mask, link)
    if len(pts) == 0:
        return pts, np.zeros(0, int), 0
    count, labels = connected_components(g, directed=False)
    return pts, labels, count


def path_ends(mask, link):
    """The two ends of a path drawn in mask: double sweep of shortest-path distances along
    the pixel graph (gaps up to ``link`` bridged): the pixel farthest from any pixel, then
    the pixel farthest from that one."""
    from scipy.sparse.csgraph import dijkstra

    pts, g = _pixel_graph(mask, link)
    d0 = dijkstra(g, directed=False, indices=0)
    a = int(np.argmax(np.where(np.isfinite(d0), d0, -1)))
    da = dijkstra(g, directed=False, indices=a)
    b = int(np.argmax(np.where(np.isfinite(da), da, -1)))
    return pts[a], pts[b]


def components8(mask):
    """Number of 8-connected components of a boolean image."""
    from scipy import ndimage

    return int(ndimage.label(mask, structure=np.ones((3, 3), int))[1])


# ---------------------------------------------------------------- listops

LISTOPS_VOCAB = ["[MIN", "[MAX", "[MED", "[SM", "]"] + [str(d) for d in range(10)]
LISTOPS_CLOSE = 4


def listops_apply(op, args):
    """TASKS.md: MIN, MAX, MED = int(numpy.median(args)), SM = sum mod 10."""
    name = LISTOPS_VOCAB[op]
    if name == "[MIN":
        return min(args)
    if name == "[MAX":
        return max(args)
    if name == "[MED":
        return int(np.median(args))
    return sum(args) % 10


def listops_evaluate(tokens):
    """Parse a token-id sequence (vocabulary above) and recompute everything from it.

    Returns targets (value at each `]`, -1 elsewhere), heights and operators per `]`,
    subtree token lengths and `]` positions, root value, length and the template hash
    (h = 0x9E3779B97F4A7C15; h = mix(h ^ (t + 1)) over the non-digit tokens t).
    Raises ValueError if the sequence is not one well-formed expression.
    """
    tokens = [int(t) for t in tokens]
    targets = [-1] * len(tokens)
    heights, operators, lengths, closes = [], [], [], []
    stack = []  # [op, start, child values, child max height]
    root = None
    h = 0x9E3779B97F4A7C15
    for i, t in enumerate(tokens):
        if root is not None:
            raise ValueError("tokens after the end of the expression")
        if t < LISTOPS_CLOSE:
            stack.append([t, i, [], 0])
            h = mix(h ^ (t + 1))
        elif t == LISTOPS_CLOSE:
            if not stack or len(stack[-1][2]) < 2:
                raise ValueError(f"`]` at {i} closes no operator with >= 2 arguments")
            op, start, args, hmax = stack.pop()
            value = listops_apply(op, args)
            height = hmax + 1
            targets[i] = value
            heights.append(height)
            operators.append(op)
            lengths.append(i - start + 1)
            closes.append(i)
            h = mix(h ^ (t + 1))
            if stack:
                stack[-1][2].append(value)
                stack[-1][3] = max(stack[-1][3], height)
            else:
                root = value
        elif t < len(LISTOPS_VOCAB):
            if not stack:
                raise ValueError("a bare digit is not an operator expression")
            stack[-1][2].append(t - 5)
        else:
            raise ValueError(f"token id {t} outside the vocabulary")
    if stack or root is None:
        raise ValueError("unterminated expression")
    return {"targets": targets, "heights": heights, "operators": operators, "lengths": lengths,
            "closes": closes, "root": root, "length": len(tokens), "template": h}


def listops_tree(rng, depth, max_depth, max_args):
    """One tree of the LRA process, straight from TASKS.md (recursive, Python ``random``).

    Returns (tokens, operator of the root or None for a leaf, root arity, height).
    """
    if depth < max_depth and rng.random() < 0.25:
        arity = rng.randint(2, max_args)
        op = rng.randrange(4)
        tokens, height = [op], 0
        for _ in range(arity):
            sub, _, _, h = listops_tree(rng, depth + 1, max_depth, max_args)
            tokens += sub
            height = max(height, h)
        return tokens + [LISTOPS_CLOSE], op, arity, height + 1
    return [5 + rng.randrange(10)], None, 0, 0


def listops_reference(seed, n, min_length, max_length, max_args, max_depth):
    """n trees by plain rejection: keep a tree iff min_length < length < max_length.

    Returns (list of (root operator, root arity, height, length), trees drawn).
    """
    import random

    rng = random.Random(seed)
    out, drawn = [], 0
    while len(out) < n:
        drawn += 1
        tokens, op, arity, height = listops_tree(rng, 1, max_depth, max_args)
        if min_length < len(tokens) < max_length:
            out.append((op, arity, height, len(tokens)))
    return out, drawn
