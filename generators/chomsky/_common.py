"""What the 15 Chomsky-hierarchy tasks share (docs/tasks/chomsky.md, "Conventions"): the length
parameters, the row layout, the draws of bits and of uniform non-zero binary numbers, the
bracketed expressions of the two DCF arithmetic tasks, the choice between a task's two batch
fillers, and the Task record.

Row layout (the authors' non-autoregressive models, ``make_model_with_empty_targets``): a
sample of input length n and output length o is the row

    inputs   x_1 .. x_n   E .. E (o times)   P .. P
    targets  -100 .. -100 y_1 .. y_o         -100 .. -100

of width W = n(max_length) + o(max_length), E = I (the empty token, I the authors'
``input_size``), P = I + 1 (padding, after the output phase). ``targets`` hold the output
class ids (the argmax of the authors' one-hot ``output``); vocab_size = max(I + 2, O), O
the authors' ``output_size``.

Batch fillers: every task has two of one signature, (seed, split, start, lo, hi, extra..., inp,
tgt): ``<task>_rows``, serial over the rows, and ``<task>_fill``, parallel over chunks of CHUNK
rows, each chunk one ``<task>_rows`` call. ``Filler`` picks one per batch: launching a parallel
loop costs tens of microseconds even on one thread, more than a training batch (128 rows of 1-40
tokens) takes to draw.

Kernels: a batch filler keeps one random state for its rows, ``reseed`` for each; a task's
``<task>_one`` and the small pieces below are inlined into its fillers (``inline="always"``): as
calls, the views and state they take cost more than a short row's draws. Runs of uniform symbols
are drawn by ``below_fill``, the state in registers.

Draws: every sample reads stream(seed, split, index) only; its first draw is the input length
n = min_length + below(max_length - min_length + 1). ``bits(k)`` takes ceil(k / 64) words of
the stream, bit i of the string being bit i % 64 of word i // 64 (least significant first).
"""
from dataclasses import dataclass, replace

import numpy as np
from numba import get_num_threads, njit

from longsynth.errors import LongsynthError
from longsynth.generators._tokens import IGNORE, token_dtype
from longsynth.rng import SPLITS, below, below_fill, next_u64, reseed
from longsynth.task import KeySpec, Task, param

CITATION = """@inproceedings{deletang2023neural,
  title     = {Neural Networks and the {C}homsky Hierarchy},
  author    = {Del{\\'e}tang, Gr{\\'e}goire and Ruoss, Anian and Grau-Moya, Jordi and Genewein, Tim
               and Wenliang, Li Kevin and Catt, Elliot and Cundy, Chris and Hutter, Marcus and Legg, Shane
               and Veness, Joel and Ortega, Pedro A.},
  booktitle = {International Conference on Learning Representations (ICLR)},
  note      = {arXiv:2207.02098},
  year      = {2023}
}"""
MAX_LENGTH = 1 << 16  # linear-time tasks
MAX_LENGTH_QUADRATIC = 1 << 13  # binary multiplication and square root: O(n^2) bit operations a sample
MAX_ALPHABET = 1 << 14
DEFAULT_RANGE = (1, 40)  # (min_length, max_length) when neither is given: the paper's training lengths
DEFAULT_TEST_RANGE = (41, 500)  # (test_min_length, test_max_length): the paper's test lengths
LENGTHS = ("min_length", "max_length", "test_min_length", "test_max_length")


def min_length(hi=MAX_LENGTH):
    return param(DEFAULT_RANGE[0], "shortest input of the train and val splits; the length is uniform per sample "
                    "in [min_length, max_length] (the paper trains on 1-40)", lo=1, hi=hi)


def max_length(hi=MAX_LENGTH):
    return param(DEFAULT_RANGE[1], "longest input of the train and val splits", lo=1, hi=hi)


def test_min_length(hi=MAX_LENGTH):
    return param(DEFAULT_TEST_RANGE[0], "shortest input of the test split, uniform in [test_min_length, "
                    "test_max_length] (the paper tests on 41-500: lengths never trained on)", lo=1, hi=hi)


def test_max_length(hi=MAX_LENGTH):
    return param(DEFAULT_TEST_RANGE[1], "longest input of the test split; every split's rows are padded to the "
                    "longest input of any split and its output", lo=1, hi=hi)


def fixed_length(hi=MAX_LENGTH):
    return param(None, "every input of every split of this one length: sets min_length, max_length, "
                       "test_min_length and test_max_length to it (the authors' sample_batch length)", lo=1, hi=hi,
                 sets=LENGTHS)


def score_padding():
    return param(False, "also score the zeros after the end token (the authors' loss counts them, their "
                        "accuracy does not)")


@dataclass(frozen=True)
class LengthConfig:
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


@dataclass(frozen=True)
class AlphabetConfig:
    vocab_size: int = param(2, "symbols 0..vocab_size-1, each uniform (the paper: 2)", lo=1, hi=MAX_ALPHABET)
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


@dataclass(frozen=True)
class TerminatedConfig:
    score_padding: bool = score_padding()
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


def check_lengths(cfg):
    """A config's lengths in order; ``length`` beside a bound that disagrees with it is refused before, by
    Task.make_config (param's ``sets``): a bound left at its default takes the length's value (``fix_length``)."""
    if cfg.length is None:
        for lo, hi in (("min_length", "max_length"), ("test_min_length", "test_max_length")):
            if getattr(cfg, lo) > getattr(cfg, hi):
                raise LongsynthError(f"{lo}: {getattr(cfg, lo)} exceeds {hi} = {getattr(cfg, hi)}")


def split_lengths(cfg, split):
    """(shortest, longest) input of split code ``split`` (longsynth.rng.SPLITS): the test split at the test
    lengths, train and val at the training lengths (the authors select no model on lengths beyond training)."""
    return (cfg.test_min_length, cfg.test_max_length) if split == SPLITS["test"] else (cfg.min_length, cfg.max_length)


def longest(cfg):
    """The longest input of any split: the rows' width is this input's and its output's."""
    return max(cfg.max_length, cfg.test_max_length)


class Layout:
    """The authors' sizes of one task: ``input_size(cfg)`` (I), ``output_size(cfg)`` (O),
    ``in_len(n)`` (the input length of a drawn length n) and ``out_len(n)``."""

    def __init__(self, input_size, output_size, out_len, in_len=lambda n: n):
        self.input_size, self.output_size, self.out_len, self.in_len = input_size, output_size, out_len, in_len

    def width(self, cfg):
        # n + o(n) never decreases with n, so the longest row is the one of the longest input of any split
        n = longest(cfg)
        return self.in_len(n) + self.out_len(n)

    def vocab_size(self, cfg):
        return max(self.input_size(cfg) + 2, self.output_size(cfg))

    def keys(self, cfg):
        dtype, w = token_dtype(self.vocab_size(cfg)), (self.width(cfg),)
        return {
            "inputs": KeySpec(dtype, w, doc="the input, then one empty token per output position, then padding"),
            "targets": KeySpec(dtype, w, doc="-100 on the input; the output class ids at the empty tokens"),
        }


def fix_length(cfg):
    """The config with min_length = max_length = length where ``length`` is given."""
    return cfg if cfg.length is None else replace(cfg, **{k: cfg.length for k in LENGTHS})


LENGTH_DEFINITION = ("n, the input's length: the index of the first scored target (the outputs follow the n inputs; "
                     "modular arithmetic's even lengths are one shorter, as the authors draw them)")
LAYOUTS = {}  # task name -> its Layout (the authors' I, O and lengths; read by the harness's chance level)


CHUNK = 16  # rows a parallel filler hands one thread at a time (the rows' scratch is allocated once a chunk)
SERIAL_WORK = 1 << 15  # count * max_length up to which a batch runs serially even with many threads


class Filler:
    """Task.fill from a task's serial filler ``rows`` and parallel one ``fill``: ``rows`` on one
    thread or for a batch of at most SERIAL_WORK (count times max_length), else ``fill``; both
    get (seed, split, start, min_length, max_length, *args(cfg), inputs, targets)."""

    def __init__(self, rows, fill, args=lambda cfg: ()):
        self.rows, self.fill, self.args = rows, fill, args

    def __call__(self, cfg, seed, split, start, out, fixed):
        inp, tgt = out["inputs"], out["targets"]
        lo, hi = split_lengths(cfg, split)
        serial = inp.shape[0] * hi <= SERIAL_WORK or get_num_threads() == 1
        (self.rows if serial else self.fill)(seed, split, start, lo, hi, *self.args(cfg), inp, tgt)


def make_task(name, config, summary, layout, fill, card, check=None):
    def _check(cfg):
        check_lengths(cfg)
        if check is not None:
            check(fix_length(cfg))

    LAYOUTS[name] = layout
    return Task(name=name, config=config, summary=summary, keys=layout.keys, fill=fill, check=_check,
                resolve=fix_length, family="tokens", vocab_size=layout.vocab_size, citation=CITATION, card=card,
                row_length_offset=lambda cfg: 0, row_length_anchor="first", row_length_definition=LENGTH_DEFINITION)


# ---------------------------------------------------------------- kernels' shared pieces


@njit(cache=True, inline="always")
def draw_length(s, lo, hi):
    return lo + below(s, hi - lo + 1)


@njit(cache=True, inline="always")
def unsigned(i):
    """An index as uint64 (i >= 0): loops over unsigned indices vectorise (``frame``). Keep both sides of
    index arithmetic unsigned: Numba computes uint64 with int64 in float64."""
    return np.uint64(i)


@njit(cache=True, inline="always")
def frame(inp, tgt, n, o, empty):
    """inp[n:n+o] = empty, inp[n+o:] = empty + 1 (padding), tgt[:] = -100; inp[:n] is the caller's.
    Unsigned indices (``unsigned``): Numba checks a signed index for a negative value, which keeps the
    compiler from vectorising a loop; slice assignments vectorise but cost more on short rows."""
    un, uo, uw = unsigned(n), unsigned(n + o), unsigned(inp.shape[0])
    for i in range(un, uo):
        inp[i] = empty
    for i in range(uo, uw):
        inp[i] = empty + 1
    for i in range(unsigned(0), unsigned(tgt.shape[0])):
        tgt[i] = IGNORE


@njit(cache=True, inline="always")
def uniform_string(s, seed, split, index, lo, hi, v, o_per_symbol, inp, tgt):
    """The start of a string task's row (reverse, duplicate, odds-first, bucket sort): the state of
    (seed, split, index), n, the frame of o = o_per_symbol n outputs, then x = n symbols below(v); returns n."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, o_per_symbol * n, v)
    below_fill(s, inp, 0, n, v)
    return n


@njit(cache=True, inline="always")
def bits(s, out, start, k):
    """out[start + i] = bit i of bits(k), i < k; returns how many are 1."""
    ones = 0
    word = np.uint64(0)
    for i in range(k):
        if i % 64 == 0:
            word = next_u64(s)
        b = np.int64((word >> np.uint64(i % 64)) & np.uint64(1))
        out[start + i] = b
        ones += b
    return ones


@njit(cache=True, inline="always")
def nonzero_bits(s, out, start, k):
    """out[start:start + k] = the bits (least significant first) of a number uniform in [1, 2^k - 1]:
    bits(k), drawn again while all are 0."""
    while bits(s, out, start, k) == 0:  # all zero with probability 2^-k <= 1/2: fewer than 2 passes expected
        pass


@njit(cache=True, inline="always")
def nonzero_word(s, k):
    """nonzero_bits(k) for k <= 64 as one word (bit i of the word = bit i of the string): the same draws."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - k)
    word = next_u64(s) & mask
    while word == 0:
        word = next_u64(s) & mask
    return word


@njit(cache=True, inline="always")
def put_bits(out, start, word, k):
    """out[start + i] = bit i of word, i < k (least significant first)."""
    for i in range(k):
        out[start + i] = (word >> np.uint64(i)) & np.uint64(1)


@njit(cache=True)
def expression_frames(max_length):
    """Scratch for ``expression`` of at most max_length tokens: every open frame has length >= 5
    and holds its child, so the depth is at most length / 4 + 1."""
    return max_length // 4 + 2


@njit(cache=True)
def expression(s, m, n_ops, length, out, start, ids, frames):
    """Writes a bracketed expression of ``length`` tokens at out[start:] and returns its value mod m
    (docs/tasks/chomsky.md, "modular-arithmetic-brackets"). ids = (+, -, *, (, )) token ids;
    frames: int64 scratch [5, expression_frames(length) or more].

    length 1: t; 2: - t; 3: ( t ); 4: ( - t ) with t = below(m); length >= 5: ( e1 op e2 ) with
    |e1| = 1 + below(length - 4) drawn first, then e1, e2, then op = below(n_ops) (+, -, *).
    Pre-order with an explicit stack of frames (no recursion: lengths reach 2^16)."""
    minus, lpar, rpar = ids[1], ids[3], ids[4]
    fpos, flen, fleft, fval, fstage = frames[0], frames[1], frames[2], frames[3], frames[4]
    depth = 1
    fpos[0], flen[0], fstage[0] = start, length, 0
    ret = 0
    while depth > 0:
        f = depth - 1
        p, ln = fpos[f], flen[f]
        if fstage[f] == 0 and ln < 5:
            t = below(s, m)
            neg = ln == 2 or ln == 4
            if ln >= 3:
                out[p] = lpar
                out[p + ln - 1] = rpar
                p += 1
            if neg:
                out[p] = minus
                p += 1
            out[p] = t
            ret = (m - t) % m if neg else t
            depth -= 1
        elif fstage[f] == 0:
            a = 1 + below(s, ln - 4)
            fleft[f] = a
            out[p] = lpar
            out[p + ln - 1] = rpar
            fstage[f] = 1
            fpos[depth], flen[depth], fstage[depth] = p + 1, a, 0
            depth += 1
        elif fstage[f] == 1:
            fval[f] = ret
            fstage[f] = 2
            a = fleft[f]
            fpos[depth], flen[depth], fstage[depth] = p + 2 + a, ln - a - 3, 0
            depth += 1
        else:
            op = below(s, n_ops)
            out[p + 1 + fleft[f]] = ids[op]
            if op == 0:
                ret = (fval[f] + ret) % m
            elif op == 1:
                ret = (fval[f] - ret + m) % m
            else:
                ret = fval[f] * ret % m
            depth -= 1
    return ret
