"""The authors' own stream of the Chomsky tasks (docs/tasks/chomsky.md, "The authors' stream").

``arrays(name, cfg, count, seed)`` is one call of the authors' ``sample_batch(PRNGKey(seed), count,
length)`` on a fresh task object built as experiments/constants.py's TASK_BUILDERS builds it, after
``random.seed(seed)`` and ``np.random.seed(seed)`` (experiments/training.py 193-194): the argmax of its
one-hot ``input`` and ``output``, int64, shaped as theirs (a task with one output gives ``targets``
[count]). The jitted JAX tasks are replayed by generators/chomsky/authors_jax.py (threefry-2x32 in the
layout of ``jax_threefry_partitionable=False``), the tasks written in Python by authors_py.py (NumPy's
legacy generator and Python's ``random``).

``rows(...)`` lays those arrays out as the rows every chomsky task stores (_common.py, the row layout):
what ``gen --authors-stream`` writes. A row is then the input, its o(n) empty tokens, and the output
under them; after a terminated output's end token the authors' zeros are -100 unless ``score_padding``,
as in our own law.
"""
import numpy as np

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream
from longsynth.generators._tokens import IGNORE

JAX_TASKS = ("even-pairs", "parity-check", "cycle-navigation", "modular-arithmetic", "reverse-string",
             "duplicate-string", "missing-duplicate-string", "odds-first", "bucket-sort")
PY_TASKS = ("modular-arithmetic-brackets", "solve-equation", "stack-manipulation", "binary-addition",
            "binary-multiplication", "compute-sqrt")
MAX_SEED = (1 << 32) - 1  # np.random.seed's range (training.py 194 seeds it with the run's seed)
DIGIT_TASKS = ("modular-arithmetic-brackets", "solve-equation")  # numbers written as decimal strings
END = 2  # the end token of the terminated outputs (stack manipulation, binary addition and multiplication)
PAD_CHUNK = 1 << 20  # output cells whose padding is masked at a time (rows): two bool masks of 1 MB


def params_of(cfg):
    """The authors' constructor arguments held by ``cfg`` (TASK_BUILDERS' names)."""
    names = ("modulus", "operators", "mult", "vocab_size")
    return {k: getattr(cfg, k) for k in names if hasattr(cfg, k)}


def check(name, cfg, seed, split):
    """Refuse, in one line, what one authors' call cannot give."""
    if cfg.min_length != cfg.max_length:
        raise LongsynthError(f"length: the authors' stream of chomsky-{name} is one sample_batch call at one "
                             f"length; give length (got min_length {cfg.min_length}, max_length {cfg.max_length})")
    if seed > MAX_SEED:
        raise LongsynthError(f"seed: the authors seed NumPy's global generator with it, which takes 0..2**32 - 1; "
                             f"got {seed}")
    if name in DIGIT_TASKS and cfg.modulus > 10:
        raise LongsynthError(f"modulus: the authors write chomsky-{name}'s numbers digit by digit, so a modulus "
                             f"above 10 gives rows longer than the length (or their np.array fails); got {cfg.modulus}")
    if split != "train":
        raise LongsynthError(f"split: the authors' stream of chomsky-{name} is their training call for a seed; "
                             f"write a test set as another dataset, at its own length and seed (got {split}; "
                             f"longsynth gen: --splits train=N)")


def arrays(name, cfg, count, seed):
    """{"inputs", "targets"}: the argmax of the authors' one-hot arrays (see the module's docstring)."""
    if name in JAX_TASKS:
        from longsynth.generators.chomsky import authors_jax as impl
    else:
        from longsynth.generators.chomsky import authors_py as impl
    inputs, targets = impl.draw(name, count, seed, cfg.max_length, params_of(cfg))
    return {"inputs": inputs, "targets": targets}


def rows(layout, cfg, raw):
    """The authors' arrays ``raw`` laid out as our rows (int64 [count, width])."""
    x, y = raw["inputs"], raw["targets"].reshape(raw["targets"].shape[0], -1)
    n, o, count = layout.in_len(cfg.max_length), layout.out_len(cfg.max_length), x.shape[0]
    if x.shape[1:] != (n,) or y.shape[1:] != (o,):
        raise AssertionError(f"the authors' arrays {x.shape}, {y.shape} are not the layout's ({n}, {o})")
    empty = layout.input_size(cfg)
    inputs = np.full((count, layout.width(cfg)), empty + 1, dtype=np.int64)  # padding after the output phase
    targets = np.full_like(inputs, IGNORE)
    inputs[:, :n], inputs[:, n:n + o] = x, empty
    targets[:, n:n + o] = y
    if hasattr(cfg, "score_padding") and not cfg.score_padding and o:
        step = max(1, PAD_CHUNK // o)  # rows at a time: the masks stay small beside the split
        for i in range(0, count, step):
            out = targets[i:i + step, n:n + o]  # a view
            is_end = out == END
            first = np.where(is_end.any(axis=1), is_end.argmax(axis=1), o)  # the first end token's column
            out[np.arange(o) > first[:, None]] = IGNORE  # past it
    return {"inputs": inputs, "targets": targets}


def register(name, layout):
    """(authors, authors_arrays) of task ``chomsky-<name>``, as Task records them."""

    def _arrays(cfg, count, seed, split):
        check(name, cfg, seed, split)
        return arrays(name, cfg, count, seed)

    def _open(cfg, count, seed, split):
        check(name, cfg, seed, split)
        width = layout.width(cfg)
        blocks = (rows(layout, cfg, arrays(name, cfg, count, seed)) for _ in range(1))
        # the authors' arrays (int64), alive while they are laid out as rows; the rows are the block, every row
        raw = count * 8 * (layout.in_len(cfg.max_length) + layout.out_len(cfg.max_length)) + 2 * PAD_CHUNK
        return Stream(count, blocks, (width,), side_bytes=raw, block_bytes=2 * 8 * count * width,
                      side_doc="one sample_batch call: every row is drawn at once, as theirs")

    return Authors(_open, f"The authors' sample_batch of chomsky-{name} for a seed, as rows."), _arrays
