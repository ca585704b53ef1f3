"""Public sample API: a sample is a pure function of (task config, seed, split, index)."""
import numpy as np

from longsynth import registry
from longsynth.errors import LongsynthError
from longsynth.rng import split_code, split_name
from longsynth.task import unpack

MAX_SEED = (1 << 63) - 1


def tasks():
    """Names of all tasks, in listing order."""
    return list(registry.all_tasks())


def check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise LongsynthError(f"seed: must be an integer in [0, 2**63 - 1], got {seed!r}")
    return int(seed)


def _check_index(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_SEED:
        raise LongsynthError(f"{name}: must be an integer >= 0, got {value!r}")
    return int(value)


def resolve(task, seed, split, params):
    """(Task, config, seed, split code, fixed draws) after validating everything."""
    t = registry.get(task)
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    code = split_code(split)
    return t, cfg, seed, code, t.fixed_draws(cfg, seed)


def sample(task, index, *, seed=0, split="train", **params):
    """Sample ``index`` of ``task`` as a dict of NumPy arrays (keys ``inputs``, ``targets``, extras)."""
    t, cfg, seed, code, fixed = resolve(task, seed, split, params)
    index = _check_index("index", index)
    return unpack(t.generate(cfg, seed, code, index, 1, fixed), 0)


def batch(task, start, count, *, seed=0, split="train", out=None, **params):
    """Samples start..start+count-1 with a leading batch axis, generated in parallel.

    ``out`` (a dict like the one returned) is filled in place when given. Only tasks whose
    samples all have one shape support this; variable-length tasks raise ValueError.
    """
    t, cfg, seed, code, fixed = resolve(task, seed, split, params)
    start = _check_index("start", start)
    count = _check_index("count", count)
    if not t.batchable:
        raise LongsynthError(f"task: {task} has variable-length samples; use sample() or a stored dataset")
    want = t.allocate(cfg, 0)
    if out is None:
        out = t.allocate(cfg, count)
    else:
        for k, arr in want.items():
            got = out.get(k)
            if (
                not isinstance(got, np.ndarray)
                or got.dtype != arr.dtype
                or got.shape != (count,) + arr.shape[1:]
                or not got.flags.c_contiguous
            ):
                raise LongsynthError(
                    f"out: {k!r} must be a C-contiguous {arr.dtype} array of shape {(count,) + arr.shape[1:]}"
                )
    t.fill(cfg, seed, code, start, out, fixed)
    return out


def vocab(task, **params):
    """Token strings indexed by id, for token tasks; ValueError for the others."""
    t = registry.get(task)
    if t.vocab is None:
        raise LongsynthError(f"task: {task} has no token vocabulary")
    return list(t.vocab(t.make_config(**params)))


def authors_stream(task, count, *, seed, split="train", **params):
    """The authors' own stream for ``seed``: ``{"inputs", "targets"}`` int64 [count, L], equal
    element for element to what the authors' generator returns for that seed and those
    parameters (each task's page in docs/tasks/ says which function, and how ``split`` maps
    to the authors' seeds). Sequential, as theirs: row i depends on ``count`` and on every
    row before it, unlike ``sample``/``batch``, whose rows are pure functions of their index."""
    t = registry.get(task)
    if t.authors is None:
        raise LongsynthError(f"task: {task} has no authors' stream (tasks with one: "
                             f"{', '.join(n for n, x in registry.all_tasks().items() if x.authors) or 'none'})")
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    count = _check_index("count", count)
    return authors_rows(t, cfg, count, seed, split_name(split))


def authors_dataset(task, splits, *, seed, **params):
    """The authors' own data set for ``seed``: ``{split: {"inputs", "targets"}}`` (int64) for the
    counts in ``splits`` (e.g. ``{"train": 12800, "test": 1280}``; any of train, val, test), what
    ``longsynth gen TASK --authors-stream`` writes. Where the authors' pipeline draws every split
    from one generator (MAD's ``generate_data``: the test set continues where the training set
    stopped), the splits continue one stream in the order train, val, test, so no split repeats
    another's draws; elsewhere each split is ``authors_stream`` of its count (each task's page in
    docs/tasks/ says how the authors seed their splits)."""
    t = registry.get(task)
    if t.authors is None:
        raise LongsynthError(f"task: {task} has no authors' stream")
    if not isinstance(splits, dict) or not splits:
        raise LongsynthError(f"splits: a dict such as {{'train': 100, 'test': 10}}, got {splits!r}")
    counts = {split_name(s): _check_index(f"splits[{s!r}]", n) for s, n in splits.items()}
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    return {s: authors_split(t, cfg, seed, counts, s) for s in counts}


def authors_split(t, cfg, seed, counts, split):
    """Split ``split`` of the authors' data set whose splits have ``counts``, as int64 C arrays."""
    if t.authors_pipeline is None:
        return authors_rows(t, cfg, counts[split], seed, split)
    rows = t.authors_pipeline(cfg, seed, counts, split)
    return _shaped(t, cfg, counts[split], rows)


_AUTHORS = {}  # the last authors' split made by authors_block: (task, cfg, seed, split, counts) -> rows


def authors_block(t, cfg, seed, split, counts, start, n, stream=None):
    """Rows start..start+n-1 of split ``split`` of the authors' data set whose splits have
    ``counts`` ({split: count}), in the task's stored dtypes. ``stream``: the manifest's; "authors"
    (each split its own stream, what datasets made before the pipelines existed hold) is honoured
    for a task that has a pipeline. The whole split is made once (its rows depend on the counts)
    and kept until another is asked for: a dataset's shards, written one after another, share it."""
    counts = dict(counts)
    key = (t.name, cfg, seed, split, tuple(sorted(counts.items())), stream)
    if key not in _AUTHORS:
        _AUTHORS.clear()
        specs = t.keys(cfg)
        rows = (authors_rows(t, cfg, counts[split], seed, split) if stream == "authors"
                else authors_split(t, cfg, seed, counts, split))
        _AUTHORS[key] = {k: v.astype(specs[k].dtype) for k, v in rows.items()}
    rows = _AUTHORS[key]
    return {k: v[start : start + n] for k, v in rows.items()}


def authors_rows(t, cfg, count, seed, split):
    """``t.authors`` for a validated config, as int64 C arrays of the task's key shapes."""
    return _shaped(t, cfg, count, t.authors(cfg, count, seed, split))


def _shaped(t, cfg, count, rows):
    shapes = {k: (count,) + tuple(spec.shape) for k, spec in t.keys(cfg).items()}
    return {k: np.ascontiguousarray(rows[k], dtype=np.int64).reshape(shapes[k]) for k in ("inputs", "targets")}
