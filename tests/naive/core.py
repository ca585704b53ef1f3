"""What every twin shares: the split codes, the keyed random stream (xoshiro256** from
SplitMix64 keys, as ``longsynth/rng.py``'s docstring documents it, in pure Python
integers) with its draws, and the token dtype rule."""
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


def _token_dtype(vocab_size):
    """docs/adding-a-task.md, "Token tasks": int8 up to 127 tokens, int16 up to 32,767, else int32."""
    for t in (np.int8, np.int16, np.int32):
        if vocab_size <= np.iinfo(t).max:
            return t
    return np.int64
