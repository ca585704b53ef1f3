"""Slow, independent NumPy / pure-Python twins of every longsynth kernel.

Written from the task definitions in docs/tasks/ and the documented reproducibility contract (the key ->
stream construction in ``longsynth/rng.py``'s docstring and each generator's documented
draw order), never from the kernels' code. Pure Python integers throughout the RNG, so
an error in the Numba uint64 arithmetic cannot hide here.
"""
import itertools
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

    def below(self, n):
        """Lemire: m = (top 32 bits) * n, redrawn while m mod 2^32 < 2^32 mod n; m >> 32."""
        threshold = (1 << 32) % n
        while True:
            m = (self.u64() >> 32) * n
            if m & 0xFFFFFFFF >= threshold:
                return m >> 32

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
        """n normals divided by their max |value| (docs/tasks/atomic.md, 'Conventions')."""
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
    """docs/tasks/atomic.md: x normalised noise; y_i = (i+1)^-1/2 sum_{j<=i} x_j. Returns inputs, targets."""
    x = Stream(seed, SPLITS[split], index).unit_inf_noise(L)
    y = np.cumsum(x.astype(np.float64)) / np.sqrt(np.arange(1, L + 1))
    return {"inputs": x[:, None], "targets": y.astype(np.float32)[:, None]}


# ---------------------------------------------------------------- atomic tasks
# Written from docs/tasks/atomic.md and the draw orders documented in generators/{noise,select,mips,
# solve}.py. Each returns the sample dict (inputs, targets, extras) as the kernel should.


def _noise(seed, split, index, n):
    return Stream(seed, SPLITS[split], index).unit_inf_noise(n)


def shift(seed, split, index, L, C):
    x = _noise(seed, split, index, L)
    y = np.zeros((L, C), dtype=np.float32)
    for j in range(C):
        o = (j * L) // C
        y[o:, j] = x[: L - o]
    return {"inputs": x[:, None], "targets": y}


def cummax(seed, split, index, L):
    x = _noise(seed, split, index, L)
    return {"inputs": x[:, None], "targets": np.maximum.accumulate(x)[:, None]}


def reverse(seed, split, index, L):
    x = _noise(seed, split, index, L)
    inputs = np.concatenate([x, np.zeros(L, dtype=np.float32)])
    return {"inputs": inputs[:, None], "targets": x[::-1].copy()[:, None]}


def exact_int(v):
    """A float32 value as an exact Python integer multiple of 2^-149 (its smallest ulp)."""
    return int(np.float64(v) * 2.0**149)


def sort_order(x):
    """Indices of x ordered by the exact |x_i - x_0|, ties by index (Python's stable sort)."""
    n = [exact_int(v) for v in x]
    return sorted(range(len(x)), key=lambda i: (abs(n[i] - n[0]), i))


def sort(seed, split, index, L):
    x = _noise(seed, split, index, L)
    inputs = np.concatenate([x, np.zeros(L, dtype=np.float32)])
    return {"inputs": inputs[:, None], "targets": x[sort_order(x)][:, None]}


def context_shift(seed, split, index, L):
    st = Stream(seed, SPLITS[split], index)
    s = st.randint(L - 1)
    angle = 2.0 * math.pi * s / L
    xp = np.concatenate([np.array([math.cos(angle), math.sin(angle)], dtype=np.float32), st.unit_inf_noise(L - 2)])
    y = np.zeros(L, dtype=np.float32)
    y[s:] = xp[: L - s]
    return {"inputs": xp[:, None], "targets": y[:, None], "s": np.array(s, dtype=np.int64)}


def floyd(st, n, m):
    """Floyd's uniform m-subset of 0..n-1, as documented in generators/select.py; sorted."""
    chosen = set()
    for t in range(n - m, n):
        r = st.randint(t + 1)
        chosen.add(t if r in chosen else r)
    return sorted(chosen)


def _select_sample(v, pos, L, M):
    inputs = np.zeros((L + 2 * M, 2), dtype=np.float32)
    inputs[: L + M, 0] = v
    inputs[pos, 1] = 1.0
    return {"inputs": inputs, "targets": v[pos][:, None], "positions": np.array(pos, dtype=np.int64)}


def select(seed, split, index, L, M):
    st = Stream(seed, SPLITS[split], index)
    v = st.unit_inf_noise(L + M)
    return _select_sample(v, floyd(st, L + M, M), L, M)


def select_fixed_positions(seed, L, M):
    return np.array(floyd(Stream(seed, FIXED, 0), L + M, M), dtype=np.int64)


def select_fixed(seed, split, index, L, M):
    v = _noise(seed, split, index, L + M)
    return _select_sample(v, list(select_fixed_positions(seed, L, M)), L, M)


def _unit(g):
    ss = 0.0
    for v in g:
        ss += v * v
    return g / math.sqrt(ss)


def mips_scores(q, k):
    """float64 scores [L, L]: ((q_0 k_0 + q_1 k_1) + ...) left to right, from float32 rows."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    s = q[:, None, 0] * k[None, :, 0]
    for d in range(1, q.shape[1]):
        s = s + q[:, None, d] * k[None, :, d]
    return s


def mips_argmax(q, k):
    """Causal argmax_{j <= i} with ties to the smallest j (np.argmax returns the first)."""
    s = mips_scores(q, k)
    s[np.triu_indices(len(q), 1)] = -np.inf
    return s.argmax(axis=1)


def mips(seed, split, index, L, D):
    st = Stream(seed, SPLITS[split], index)
    inputs = np.empty((L, 3 * D), dtype=np.float32)
    for i in range(L):
        for part in range(3):
            inputs[i, part * D : (part + 1) * D] = _unit(st.normals(D)).astype(np.float32)
    q, k, v = inputs[:, :D], inputs[:, D : 2 * D], inputs[:, 2 * D :]
    return {"inputs": inputs, "targets": v[mips_argmax(q, k)]}


def solve_size(L):
    n = 0
    while (n + 1) ** 2 + 2 * (n + 1) <= L:
        n += 1
    return n


def haar(st, n):
    """Q of the QR of a row-major Gaussian G, sign-fixed so that diag(R) > 0 (LAPACK)."""
    g = st.normals(n * n).reshape(n, n)
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diag(r))


def _solve_sample(st, a, L):
    n = a.shape[0]
    a32 = a.astype(np.float32)
    x32 = _unit(st.normals(n)).astype(np.float32)
    b = a32.astype(np.float64) @ x32.astype(np.float64)
    rows = np.concatenate([a32, b.astype(np.float32)[:, None]], axis=1).ravel()
    inputs = np.zeros(L, dtype=np.float32)
    inputs[: rows.size] = rows
    return {"inputs": inputs[:, None], "targets": x32[:, None], "N": np.array(n, dtype=np.int64)}


def solve(seed, split, index, L):
    st = Stream(seed, SPLITS[split], index)
    return _solve_sample(st, haar(st, solve_size(L)), L)


def solve_fixed_matrix(seed, L):
    return haar(Stream(seed, FIXED, 0), solve_size(L))


def solve_fixed(seed, split, index, L):
    return _solve_sample(Stream(seed, SPLITS[split], index), solve_fixed_matrix(seed, L), L)


# ---------------------------------------------------------------- pathfinder-seg (image formation)
# Written from docs/tasks/pathfinder.md, "How an image is made" (the authors' image formation): given the drawn
# geometry (dashes, markers) the image and labels follow; never from the renderer's stamps.


def pathfinder_compose(dashes, markers, margin, connected, L, thickness, aa, contrast, radius, contour_length, size):
    """Image and labels from the drawn geometry, by the authors' image formation (docs/tasks/pathfinder.md):
    every dash a PIL line of width round(thickness aa) on a float canvas aa times finer,
    of side 2 R aa + 1 (R = L + ceil(thickness) + margin) with the line's start at its
    centre, reduced to 2R + 1 with PIL's LANCZOS and centred on the dash's start pixel,
    times contrast; every marker a disk of radius ``radius`` on the whole frame drawn aa
    times finer and reduced the same way; all composed by maximum, rescaled so the peak is 255 (rounded
    half to even); a main path's pixels are those where its own layer is nonzero at 8 bits.
    Dashes: origin path, other path, distractors; rows of -1 are absent."""
    from PIL import Image, ImageDraw

    M, n = size, contour_length
    R = L + math.ceil(thickness) + margin
    image = np.zeros((M, M))
    layers = np.zeros((2, M, M))

    def put(canvas, small, r, c):
        h = small.shape[0] // 2
        for i in range(small.shape[0]):
            for j in range(small.shape[1]):
                y, x = r - h + i, c - h + j
                if 0 <= y < M and 0 <= x < M:
                    canvas[y, x] = max(canvas[y, x], small[i, j])

    for q, (r, c, dy, dx) in enumerate(np.asarray(dashes, dtype=np.int64).tolist()):
        if r < 0:
            continue
        big = Image.new("F", (2 * R * aa + 1, 2 * R * aa + 1), 0.0)
        ImageDraw.Draw(big).line([(R * aa, R * aa), (R * aa + dx, R * aa + dy)], fill=255.0,
                                 width=int(round(thickness * aa)))
        small = np.array(big.resize((2 * R + 1, 2 * R + 1), Image.LANCZOS)).astype(np.float64) / 255 * contrast
        put(image, small, r, c)
        if q < 2 * n:
            put(layers[q // n], small, r, c)
    for r, c in np.asarray(markers, dtype=np.int64).tolist():
        if r >= 0:  # a disk on the whole frame aa times finer, reduced to M x M
            yy, xx = np.ogrid[-r * aa:(M - r) * aa, -c * aa:(M - c) * aa]
            disk = (xx**2 + yy**2 <= (radius * aa) ** 2).astype(np.float64)
            image = np.maximum(image, np.array(Image.fromarray(disk).resize((M, M), Image.LANCZOS)).astype(np.float64))
    peak = image.max()
    img = np.rint(image / peak * 255).astype(np.uint8)
    tgt = np.zeros((M, M), dtype=np.uint8)
    for p in range(2):
        on = np.rint(layers[p] / peak * 255) >= 1
        tgt[on] = np.maximum(tgt[on], 2 if (connected and p == 0) else 1)
    return img, tgt, peak


def scipy_bytescale(data):
    """scipy.misc.bytescale (SciPy <= 1.2), which the original Pathfinder generator's
    imresize / imsave apply to float images: (data - min) * (255 / (max - min)), clipped,
    + 0.5, truncated to uint8."""
    data = np.asarray(data)
    lo, hi = data.min(), data.max()
    scale = 255.0 / ((hi - lo) or 1)
    return (((data - lo) * scale).clip(0, 255) + 0.5).astype(np.uint8)


def lra_pathfinder_compose(dashes, markers, margin, L, thickness, aa, contrast, dcontrast, radius,
                           contour_length, size):
    """Image by the original generator's formation (drewlinsley/pathfinder, snakes.py
    draw_line_n_mask and snakes2.py draw_circle / from_wrapper, with SciPy <= 1.2's
    imresize / imsave): every dash a PIL line on a float canvas aa times finer, bytescaled
    to 8 bits and reduced with LANCZOS as an 8-bit image, / 255 times contrast (main paths)
    or dcontrast (distractors), kept as float32 and placed centred on its start pixel; every
    marker a 0/1 disk on the whole frame aa times finer, bytescaled, reduced the same way, / 255;
    all composed by maximum and bytescaled. Rows of -1 are absent."""
    from PIL import Image, ImageDraw

    M, n = size, contour_length
    R = L + math.ceil(thickness) + margin
    image = np.zeros((M, M))
    for q, (r, c, dy, dx) in enumerate(np.asarray(dashes, dtype=np.int64).tolist()):
        if r < 0:
            continue
        big = Image.new("F", (2 * R * aa + 1, 2 * R * aa + 1), 0.0)
        ImageDraw.Draw(big).line([(R * aa, R * aa), (R * aa + dx, R * aa + dy)], fill=255.0,
                                 width=int(round(thickness * aa)))
        small8 = Image.fromarray(scipy_bytescale(np.asarray(big)), mode="L").resize((2 * R + 1, 2 * R + 1),
                                                                                    Image.LANCZOS)
        gain = contrast if q < 2 * n else dcontrast
        small = (np.asarray(small8).astype(np.float64) / 255 * gain).astype(np.float32)
        for i in range(2 * R + 1):
            for j in range(2 * R + 1):
                y, x = r - R + i, c - R + j
                if 0 <= y < M and 0 <= x < M:
                    image[y, x] = max(image[y, x], float(small[i, j]))
    for r, c in np.asarray(markers, dtype=np.int64).tolist():
        if r >= 0:
            yy, xx = np.ogrid[-r * aa:(M - r) * aa, -c * aa:(M - c) * aa]
            disk = (xx**2 + yy**2 <= (radius * aa) ** 2).astype(np.float64)
            small8 = Image.fromarray(scipy_bytescale(disk), mode="L").resize((M, M), Image.LANCZOS)
            image = np.maximum(image, np.asarray(small8).astype(np.float64) / 255)
    return scipy_bytescale(image), image.max()


def components8(mask):
    """Number of 8-connected components of a boolean image."""
    from scipy import ndimage

    return int(ndimage.label(mask, structure=np.ones((3, 3), int))[1])


# ---------------------------------------------------------------- listops

LISTOPS_VOCAB = ["[MIN", "[MAX", "[MED", "[SM", "]"] + [str(d) for d in range(10)]
LISTOPS_CLOSE = 4


def listops_apply(op, args):
    """docs/tasks/listops.md: MIN, MAX, MED = int(numpy.median(args)), SM = sum mod 10."""
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
    """One tree of the LRA process, straight from docs/tasks/listops.md (recursive, Python ``random``).

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


def listops_longest(max_args, max_depth):
    """M[d]: token length of the full tree below depth d (every node an operator with
    max_args arguments), d = 1 .. max_depth."""
    M = {max_depth: 1}
    for d in range(max_depth - 1, 0, -1):
        M[d] = 2 + max_args * M[d + 1]
    return M


def listops_sample(seed, split, index, min_length, max_length, max_args, max_depth):
    """Token ids of sample ``index``, straight from the documented draw order (revision 2)
    in generators/listops_tree.py: node by node in pure Python, the tree built level by level,
    then written out recursively in preorder and labelled from a bit reservoir."""
    rng = Stream(seed, split, index)
    M = listops_longest(max_args, max_depth)
    m = max_args - 1
    k = m.bit_length() - 1 if m & (m - 1) == 0 else None  # None: not a power of two

    def lemire(next16, n):
        while True:
            c = next16()
            if (c * n) % 65536 >= 65536 % n:
                return (c * n) >> 16

    def attempt():
        levels, z, length = [], 1, 1
        for d in range(1, max_depth):
            words = [rng.u64() for _ in range((z + 31) // 32)]
            is_op = [(words[j // 32] >> (2 * (j % 32))) & 3 == 0 for j in range(z)]
            x = sum(is_op)
            if k is not None and k >= 1:
                per = 64 // k
                words = [rng.u64() for _ in range((x + per - 1) // per)]
                us = [(words[i // per] >> (k * (i % per))) & (m - 1) for i in range(x)]
            elif k == 0:
                us = [0] * x
            else:
                chunks = []

                def next16():
                    if not chunks:
                        w = rng.u64()
                        chunks.extend((w >> (16 * c)) & 0xFFFF for c in range(4))
                    return chunks.pop(0)
                us = [lemire(next16, m) for _ in range(x)]
            it = iter(us)
            level = [2 + next(it) if op else 0 for op in is_op]
            levels.append(level)
            z = sum(level)
            length += sum(a + 1 for a in level if a)
            if length >= max_length or length + z * (M[d + 1] - 1) <= min_length:
                return None
            if z == 0:
                break
        return levels

    levels = None
    while levels is None:
        levels = attempt()

    reservoir = {"word": 0, "left": 0}

    def bits(n):
        if reservoir["left"] < n:
            reservoir["word"], reservoir["left"] = rng.u64(), 64
        v = reservoir["word"] & ((1 << n) - 1)
        reservoir["word"] >>= n
        reservoir["left"] -= n
        return v

    cursors = [0] * len(levels)
    tokens = []

    def write(d):  # the next unvisited node of level d, in preorder
        arity = 0
        if d <= len(levels):
            arity = levels[d - 1][cursors[d - 1]]
            cursors[d - 1] += 1
        if arity:
            tokens.append(bits(2))
            for _ in range(arity):
                write(d + 1)
            tokens.append(LISTOPS_CLOSE)
        else:
            tokens.append(5 + lemire(lambda: bits(16), 10))

    write(1)
    return tokens


# ---------------------------------------------------------------- state tracking (docs/tasks/state-tracking.md)


def _cycle_parity(p):
    """0 for an even permutation of 1..n (a tuple), 1 for an odd one, from its cycles."""
    seen, transpositions = set(), 0
    for start in range(1, len(p) + 1):
        length = 0
        i = start
        while i not in seen:
            seen.add(i)
            i = p[i - 1]
            length += 1
        transpositions += max(length - 1, 0)
    return transpositions % 2


def group_elements(group):
    """[(kind, n, elements)] per factor of a group name; elements in the documented order."""
    factors = []
    for part in group.replace("_x_", "x").split("x"):
        kind, n = part[0], int(part[1:])
        if kind == "Z":
            elements = list(range(n))
        else:
            elements = sorted(itertools.permutations(range(1, n + 1)))
            if kind == "A":
                elements = [p for p in elements if _cycle_parity(p) == 0]
        factors.append((kind, n, elements))
    return factors


def group_multiply(factors, a, b):
    """a b for elements given as tuples of components: permutations compose as a(b(i)),
    residues add."""
    out = []
    for (kind, n, _), x, y in zip(factors, a, b):
        out.append((x + y) % n if kind == "Z" else tuple(x[y[i] - 1] for i in range(len(y))))
    return tuple(out)


def word_problem(seed, split, index, group, k):
    """inputs, targets int64 [k + 1]: BOS, k uniform element ids; BOS, their prefix products,
    multiplying the elements themselves."""
    factors = group_elements(group)
    sizes = [len(e) for _, _, e in factors]
    order = int(np.prod(sizes))
    bos = order + 1
    st = Stream(seed, SPLITS[split], index)
    ids = [st.randint(order) for _ in range(k)]

    def element(i):
        parts = []
        for (_, _, elements), size in zip(reversed(factors), reversed(sizes)):
            parts.append(elements[i % size])
            i //= size
        return tuple(reversed(parts))

    def index_of(e):
        i = 0
        for (_, _, elements), x in zip(factors, e):
            i = i * len(elements) + elements.index(x)
        return i

    acc = element(0)
    prods = []
    for i in ids:
        acc = group_multiply(factors, acc, element(i))
        prods.append(index_of(acc))
    return {"inputs": np.array([bos] + ids, dtype=np.int64), "targets": np.array([bos] + prods, dtype=np.int64)}


class HalfDraws:
    """Uniform draws in [0, k) from the 32-bit halves of a Stream's words, low half first, by
    Lemire's multiply-shift with rejection (docs/tasks/state-tracking.md, "Draws")."""

    def __init__(self, st):
        self.st, self.halves = st, []

    def __call__(self, k):
        while True:
            if not self.halves:
                w = self.st.u64()
                self.halves = [w & 0xFFFFFFFF, w >> 32]
            m = self.halves.pop(0) * k
            if m % (1 << 32) >= (1 << 32) % k:
                return m >> 32


def _lengths(split, lo, hi, test_lo, test_hi):
    return (lo, hi) if split == "train" else (test_lo, test_hi)


def _scored(context_length, word, answer_at, answer, hidden=0, pad=0):
    """The authors' loader: w = word + answer + padding; the answer hidden in the input, the
    pair shifted by one, -100 at every target but the answer's."""
    w = list(word) + [answer]
    w = w + [pad] * (context_length - len(w))
    inputs = list(w[:-1])
    if answer_at < context_length - 1:
        inputs[answer_at] = hidden
    targets = [-100] * (context_length - 1)
    targets[answer_at - 1] = answer
    return {"inputs": np.array(inputs, dtype=np.int64), "targets": np.array(targets, dtype=np.int64)}


def parity(seed, split, index, vocab_size, min_sequence_length, max_sequence_length, context_length,
           test_min_sequence_length, test_max_sequence_length):
    lo, hi = _lengths(split, min_sequence_length, max_sequence_length, test_min_sequence_length,
                      test_max_sequence_length)
    st = Stream(seed, SPLITS[split], index)
    n = lo + st.randint(hi - lo + 1)
    draw = HalfDraws(st)
    word = [1 + draw(vocab_size - 1) for _ in range(n - 1)]
    answer = sum(t - 1 for t in word) % (vocab_size - 1) + 1
    return _scored(context_length, word, n - 1, answer)


def modular_arithmetic(seed, split, index, vocab_size, min_sequence_length, max_sequence_length,
                       context_length, test_min_sequence_length, test_max_sequence_length):
    """Without brackets: the value through Python's own precedence of + - * on the numbers."""
    lo, hi = _lengths(split, min_sequence_length, max_sequence_length, test_min_sequence_length,
                      test_max_sequence_length)
    st = Stream(seed, SPLITS[split], index)
    r_lo = (lo + 1) // 2
    r = r_lo + st.randint((hi + 1) // 2 - r_lo + 1)
    n = 2 * r - 1
    m = vocab_size - 5
    draw = HalfDraws(st)
    word, text = [], ""
    for i in range(n - 2):
        if i % 2 == 0:
            v = draw(m)
            word.append(5 + v)
            text += str(v)
        else:
            op = 1 + draw(3)
            word.append(op)
            text += " +-*"[op]
    answer = 5 + eval(text) % m  # noqa: S307 (digits and + - * only)
    return _scored(context_length, word + [4], n - 1, answer)


def _bracket_expression(draw, m, length, n_ops):
    """(tokens as strings, Python text) in the documented pre-order of draws."""
    if length < 5:
        t = str(draw(m))
        return {1: ([t], t), 2: (["-", t], f"(-{t})"), 3: (["(", t, ")"], f"({t})"),
                4: (["(", "-", t, ")"], f"(-{t})")}[length]
    a = 1 + draw(length - 4)
    lt, ltext = _bracket_expression(draw, m, a, n_ops)
    rt, rtext = _bracket_expression(draw, m, length - a - 3, n_ops)
    op = "+-*"[draw(n_ops)]
    return ["("] + lt + [op] + rt + [")"], f"({ltext}{op}{rtext})"


def modular_arithmetic_brackets(seed, split, index, vocab_size, mult, min_sequence_length,
                                max_sequence_length, context_length, test_min_sequence_length,
                                test_max_sequence_length):
    lo, hi = _lengths(split, min_sequence_length, max_sequence_length, test_min_sequence_length,
                      test_max_sequence_length)
    st = Stream(seed, SPLITS[split], index)
    m = vocab_size - 7
    ids = {"+": m, "-": m + 1, "*": m + 2, "(": m + 3, ")": m + 4, "=": m + 5}
    n = max(lo + st.randint(hi - lo + 1), 5)
    tokens, text = _bracket_expression(HalfDraws(st), m, n - 3, 3 if mult else 2)
    assert len(tokens) == n - 3
    word = [ids[t] if t in ids else int(t) for t in tokens] + [ids["="]]
    answer = eval(text) % m  # noqa: S307 (digits, brackets and + - * only)
    return _scored(context_length, word, n - 2, answer, pad=m + 6)


# ---------------------------------------------------------------- token tasks


def mqar(seed, split, index, vocab_size, input_seq_len, num_kv_pairs, power_a=0.01, num_passes=1,
         random_non_queries=False):
    """docs/tasks/mqar.md: kv distinct keys of [1, V/2) and values of [V/2, V) by redrawing
    repeats, query slots by redrawing repeats from the power-law cdf, then the noise."""
    st = Stream(seed, SPLITS[split], index)
    V, L, kv = vocab_size, input_seq_len, num_kv_pairs
    half = V // 2

    def distinct(lo, n):
        picks = []
        while len(picks) < kv:
            r = lo + st.randint(n)
            if r not in picks:
                picks.append(r)
        return picks

    keys = distinct(1, half - 1)
    values = distinct(half, V - half)
    ctx = 2 * kv * num_passes
    slots = (L - ctx) // 2
    cdf, total = [], 0.0
    for i in range(1, slots + 1):
        total += power_a * float(i) ** (power_a - 1.0)
        cdf.append(total)
    gaps = []
    while len(gaps) < kv:
        u = st.uniform() * cdf[-1]
        g = next((i for i, c in enumerate(cdf) if c > u), slots - 1)
        if g not in gaps:
            gaps.append(g)
    x = np.zeros(L, dtype=np.int64)
    y = np.full(L, -100, dtype=np.int64)
    x[:ctx] = np.tile(np.ravel(np.column_stack([keys, values])), num_passes)
    for k, v, g in zip(keys, values, gaps):
        x[ctx + 2 * g] = k
        y[ctx + 2 * g] = v
    if random_non_queries:
        for t in range(L):
            if x[t] == 0:
                x[t] = st.randint(V)
    dtype = _token_dtype(V)
    return {"inputs": x.astype(dtype), "targets": y.astype(dtype)}


# ---------------------------------------------------------------- MAD token tasks (docs/tasks/mad.md)

MAD_IGNORE = -100


def _mad_out(tokens, scored, split, dtype):
    """The full sequence shifted by one: next-token targets in train, the scored tokens otherwise."""
    t = np.array(tokens, dtype=np.int64)
    y = t[1:] if split == "train" else np.array(scored, dtype=np.int64)[1:]
    return {"inputs": t[:-1].astype(dtype), "targets": y.astype(dtype)}


def _token_dtype(vocab_size):
    """docs/adding-a-task.md, "Token tasks": int8 up to 127 tokens, int16 up to 32,767, else int32."""
    for t in (np.int8, np.int16, np.int32):
        if vocab_size <= np.iinfo(t).max:
            return t
    return np.int64



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
def _safari_targets(seq, split, answer):
    x = np.array(seq, dtype=np.int64)
    y = x[1:].copy()
    if split != "train":
        y[: y.size - answer] = -100
    return x[:-1], y


def associative_recall(seed, split, index, vocab_size, input_seq_len, num_keys=1, allow_dot=False):
    """docs/tasks/safari.md: a value per key tuple, L // (num_keys + 1) pairs of uniform tuples,
    then => and a query tuple (redrawn while absent unless allow_dot) and its value or '.'."""
    st = Stream(seed, SPLITS[split], index)
    n = vocab_size - 2
    K = n // 2
    tuples = list(__import__("itertools").product(range(K), repeat=num_keys))  # lexicographic
    value = [K + 1 + st.below(n - K) for _ in tuples]
    present = set()
    seq = []
    for _ in range(input_seq_len // (num_keys + 1)):
        t = st.below(len(tuples))
        present.add(t)
        seq += [1 + k for k in tuples[t]] + [value[t]]
    t = st.below(len(tuples))
    while not allow_dot and t not in present:
        t = st.below(len(tuples))
    seq += [n + 1] + [1 + k for k in tuples[t]] + [value[t] if t in present else 0]
    x, y = _safari_targets(seq, split, 1)
    return {"inputs": x.astype(_token_dtype(vocab_size)), "targets": y.astype(_token_dtype(vocab_size))}


def induction_head(seed, split, index, vocab_size, input_seq_len, induction_len=1, induction_num_triggers=1):
    """docs/tasks/safari.md: L uniform ordinary tokens and =>; one trigger with probability 1/2,
    else induction_num_triggers, sorted, spaced more than induction_len apart; => and the
    answer at each, and at the end."""
    st = Stream(seed, SPLITS[split], index)
    n, L, m = vocab_size - 2, input_seq_len, induction_len
    seq = [1 + st.below(n) for _ in range(L)] + [n + 1]
    count = 1 if st.uniform() < 0.5 else induction_num_triggers
    pos = sorted(st.below(L - 1 - m) for _ in range(count))
    kept = [pos[0]]
    for p in pos[1:]:
        if p - kept[-1] > m:
            kept.append(p)
    answer = seq[kept[0] + 1 : kept[0] + 1 + m]
    for p in kept:
        seq[p : p + 1 + m] = [n + 1] + answer
    x, y = _safari_targets(seq + answer, split, m)
    return {"inputs": x.astype(_token_dtype(vocab_size)), "targets": y.astype(_token_dtype(vocab_size))}


def selective_copying(seed, split, index, L, M, A):
    """docs/tasks/selective-copying.md: M tokens 1 + below(A - 2), Floyd's M-subset of
    L + M positions, the tokens there in order, M markers A - 1; targets the tokens at the markers."""
    st = Stream(seed, SPLITS[split], index)
    tokens = [1 + st.below(A - 2) for _ in range(M)]
    chosen = set()
    for t in range(L + M - M, L + M):  # Floyd, as documented, with below
        r = st.below(t + 1)
        chosen.add(t if r in chosen else r)
    pos = sorted(chosen)
    x = np.zeros(L + 2 * M, dtype=np.int64)
    x[pos] = tokens
    x[L + M :] = A - 1
    y = np.full(L + 2 * M, -100, dtype=np.int64)
    y[L + M :] = tokens
    dtype = _token_dtype(A)
    return {"inputs": x.astype(dtype), "targets": y.astype(dtype)}
