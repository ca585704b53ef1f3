"""Public sample API: a sample is a pure function of (task config, seed, split, index)."""
import os

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


_RESOLVED = {}  # resolve's key (below) -> resolve's tuple
_RESOLVED_MAX = 256


def _resolve_key(task, seed, split, params):
    """The arguments with the type of every value: 1, 1.0 and True are equal as dict keys, but validation
    takes only the first. None where a value cannot be a key (a list): resolve then validates anew. The
    parameters in the caller's order: another order is another key, for the same result."""
    try:
        key = (task, type(seed), seed, type(split), split, tuple(params.items()), tuple(map(type, params.values())))
        hash(key)
    except TypeError:
        return None
    return key


def resolve(task, seed, split, params):
    """(Task, config, seed, split code, fixed draws) after validating everything. A loop that asks for a
    batch per step validates its arguments once: configs are frozen, and so are the fixed draws."""
    t = registry.get(task)
    key = _resolve_key(task, seed, split, params)
    hit = _RESOLVED.get(key) if key is not None else None
    if hit is not None and hit[0] is t:  # the task registered under that name when the entry was made
        return hit
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    out = (t, cfg, seed, split_code(split), t.fixed_draws(cfg, seed))
    if key is not None:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[key] = out
    return out


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
    if count and start + count - 1 > MAX_SEED:  # the last index, as sample() bounds an index
        raise LongsynthError(f"count: samples {start:,}..{start + count - 1:,} pass the last index {MAX_SEED:,} "
                             f"(2^63 - 1)")
    if not t.batchable:
        raise LongsynthError(f"task: {task} has variable-length samples; use sample() or a stored dataset")
    if out is None:
        _check_batch_memory(t, cfg, count)
        out = t.allocate(cfg, count)
    else:
        want = t.allocate(cfg, 0)
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


_SMALL_BATCH = 16 << 20  # bytes: a batch this small is drawn without asking how much memory is left


def _check_batch_memory(t, cfg, count):
    """Refuse (one LongsynthError line) a batch whose arrays exceed ``memory_available()``, before they are
    allocated: 2**62 rows were NumPy's ValueError ('array is too big'), 100,000 rows of length 65,536 its
    _ArrayMemoryError."""
    from longsynth.store.manifest import human

    row = sum(int(np.prod(a.shape[1:], dtype=object)) * a.itemsize for a in t.allocate(cfg, 0).values())
    need = count * row
    if need <= _SMALL_BATCH:  # reading the system's memory costs 0.1 ms, more than a small batch's draw
        return
    avail = memory_available()
    if avail is not None and need > avail:
        fits = avail // row if row else count
        raise LongsynthError(f"count: {count:,} rows of {t.name} need {human(need)} of memory ({human(row)} a row), "
                             f"{human(avail)} available now; at most {fits:,} rows fit")


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
    row before it, unlike ``sample``/``batch``, whose rows are pure functions of their index.
    A count whose rows (and what the draws keep) cannot fit in the memory available now is
    refused before anything is drawn (``memory_available``); ``gen --authors-stream`` writes
    such a split shard by shard. The Chomsky tasks return the authors' own arrays instead of rows
    (``length`` fixes the one length of their call; ``targets`` [count] where the output has one
    position): docs/tasks/chomsky.md, "The authors' stream"."""
    t = registry.get(task)
    if t.authors is None:
        raise LongsynthError(f"task: {task} has no authors' stream (tasks with one: "
                             f"{', '.join(n for n, x in registry.all_tasks().items() if x.authors) or 'none'})")
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    count = _check_index("count", count)
    split = split_name(split)
    s = authors_open(t, cfg, seed, {split: count}, split, "authors")
    _check_memory(t, {split: s}, keep=True)
    from longsynth.progress import compiling_note, to_stderr

    with compiling_note(to_stderr, f"{task}'s authors' stream", verb="drawing"):
        if t.authors_arrays is not None:  # the authors' arrays are not rows of ours (the Chomsky tasks)
            return t.authors_arrays(cfg, count, seed, split)
        return s.rows()


def authors_dataset(task, splits, *, seed, **params):
    """The authors' own data set for ``seed``: ``{split: {"inputs", "targets"}}`` (int64) for the
    counts in ``splits`` (e.g. ``{"train": 12800, "test": 1280}``; any of train, val, test), what
    ``longsynth gen TASK --authors-stream`` writes. Where the authors' pipeline draws every split
    from one generator (MAD's ``generate_data``: the test set continues where the training set
    stopped), the splits continue one stream in the order train, val, test, so no split repeats
    another's draws; elsewhere each split is ``authors_stream`` of its count (each task's page in
    docs/tasks/ says how the authors seed their splits). Refused, as ``authors_stream``, when the
    rows cannot fit in memory."""
    t = registry.get(task)
    if t.authors is None:
        raise LongsynthError(f"task: {task} has no authors' stream")
    if not isinstance(splits, dict) or not splits:
        raise LongsynthError(f"splits: a dict such as {{'train': 100, 'test': 10}}, got {splits!r}")
    counts = {split_name(s): _check_index(f"splits[{s!r}]", n) for s, n in splits.items()}
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    streams = authors_streams(t, cfg, seed, counts, keep=True)
    from longsynth.progress import compiling_note, to_stderr

    with compiling_note(to_stderr, f"{task}'s authors' stream", verb="drawing"):
        return {s: streams[s].rows() for s in counts}


def authors_open(t, cfg, seed, counts, split, stream=None):
    """The ``Stream`` (longsynth/generators/_authors.py) of split ``split`` of the authors' data set
    whose splits have ``counts`` ({split: count}), validated (a refusal is one LongsynthError line)
    but not yet drawn. ``stream``: the manifest's; "authors" (each split its own stream, what
    datasets made before the pipelines existed hold) is honoured for a task that has a pipeline."""
    from longsynth.generators._authors import Stream

    if t.authors_pipeline is None or stream == "authors":
        fn, args = t.authors, (cfg, counts[split], seed, split)
    else:
        fn, args = t.authors_pipeline, (cfg, seed, counts, split)
    if hasattr(fn, "open"):
        return fn.open(*args)
    # a task registering a plain function: its whole split, drawn when the stream is first read
    blocks = (_shaped(t, cfg, counts[split], fn(*args)) for _ in range(1))
    return Stream(counts[split], blocks, tuple(t.keys(cfg)["inputs"].shape))


def authors_streams(t, cfg, seed, counts, stream=None, keep=False):
    """{split: Stream} of the authors' data set whose splits have ``counts``, refused in one line
    when the memory available now cannot hold what one split's draws keep (its side arrays) or,
    with ``keep``, every split's rows as well (``authors_dataset``): nothing is drawn before."""
    streams = {s: authors_open(t, cfg, seed, counts, s, stream) for s in counts}
    _check_memory(t, streams, keep)
    return streams


def _read(path):
    with open(path) as f:
        return f.read()


# (limit file, usage file) of a cgroup memory limit: v2, then v1 (whose "no limit" is a number near 2^63)
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def _rooms(read=_read):
    """Bytes left under each limit this process runs under: a cgroup's memory limit (v2 or v1) and
    RLIMIT_AS (less the address space already mapped, /proc/self/status VmSize)."""
    out = []
    for limit_file, used_file in _CGROUP_FILES:
        try:
            limit = read(limit_file).strip()
            if limit != "max" and int(limit) < 1 << 60:
                out.append(max(0, int(limit) - int(read(used_file).strip())))
        except (OSError, ValueError):
            pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            vm = next(int(line.split()[1]) * 1024 for line in read("/proc/self/status").splitlines()
                      if line.startswith("VmSize:"))
            out.append(max(0, soft - vm))
    except (ImportError, OSError, ValueError, IndexError, StopIteration):
        pass
    return out


def memory_available(read=_read):
    """Bytes this process may still allocate, about: /proc/meminfo's MemAvailable, lowered to the
    room left under a cgroup memory limit (v2 or v1) and under RLIMIT_AS; the physical memory
    where /proc is missing; None if nothing is known (nothing is refused then). ``read`` reads a
    file's text (tests give a fake system)."""
    avail = None
    try:
        for line in read("/proc/meminfo").splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        try:
            avail = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            avail = None
    for room in _rooms(read):
        avail = room if avail is None else min(avail, room)
    return avail


def _check_memory(t, streams, keep, verifying=False):
    """Refuse (one LongsynthError line) the streams whose side arrays, or with ``keep`` whose
    rows as well, exceed ``memory_available()``; ``verifying``: the stream is redrawn by
    ``verify --deep``, not written."""
    from longsynth.store.manifest import human

    # kept (authors_dataset): the rows and the side arrays; a block that is the whole split is handed over as the
    # rows (Stream.rows). Written shard by shard (gen, verify --deep): the side arrays and the block beside them
    held = {name: s.side_bytes + (0 if keep else s.block_bytes) for name, s in streams.items()}
    side = max(held.values(), default=0)
    rows = sum(s.count * 16 * int(np.prod(s.row_shape, dtype=np.int64)) for s in streams.values()) if keep else 0
    avail = memory_available()
    if avail is None or side + rows <= avail:
        return
    total = sum(s.count for s in streams.values())
    split = max(held, key=held.get)
    big = streams[split]
    if keep:
        why = (f"{human(rows)} for the rows (int64){f' and {human(side)} that its draws keep' if side else ''}")
        written = max((s.side_bytes + s.block_bytes for s in streams.values()), default=0)  # what gen would hold
        hint = (f"; `longsynth gen {t.name} --authors-stream` writes them shard by shard"
                if written <= avail else "")
        raise LongsynthError(f"count: {total:,} rows of {t.name}'s authors' stream need about {human(side + rows)} "
                             f"of memory ({why}), {human(avail)} available now; ask for fewer rows{hint}")
    if verifying:
        raise LongsynthError(f"verify --deep: redrawing {split} ({big.count:,} rows) of {t.name}'s authors' stream "
                             f"would keep about {human(side)} in memory ({big.side_doc}), {human(avail)} available "
                             f"now; verify without --deep checks every stored byte against the manifest's SHA-256")
    raise LongsynthError(f"splits: {split} ({big.count:,} rows) of {t.name}'s authors' stream keeps about "
                         f"{human(side)} in memory while it is written ({big.side_doc}), {human(avail)} available "
                         f"now; lower its count, or the parameters that size what it keeps")


_CURSOR = {}  # the authors' stream authors_block last read: its key -> the Stream, where it stopped


def authors_block(t, cfg, seed, split, counts, start, n, stream=None, verifying=False):
    """Rows start..start+n-1 of split ``split`` of the authors' data set whose splits have
    ``counts`` ({split: count}), in the task's stored dtypes. ``stream``: the manifest's (see
    ``authors_open``). The split's stream is kept where this call stops, so blocks asked in
    order (a dataset's shards, written one after another; the rows verify --deep samples, in
    index order) advance one stream across the split; an earlier row starts it again, later
    rows skip ahead (what a resumed gen does for the shards it kept). Memory: the stream's
    side arrays and one block, never the split; a stream whose side arrays exceed the memory
    available is refused before it is drawn (``verifying``: verify --deep's, which says so)."""
    counts = dict(counts)
    key = (t.name, cfg, seed, split, tuple(sorted(counts.items())), stream)
    cur = _CURSOR.get(key)
    if cur is None or cur.position > start:
        _CURSOR.clear()  # another stream's side arrays go before this one's are drawn
        cur = authors_open(t, cfg, seed, counts, split, stream)
        _check_memory(t, {split: cur}, keep=False, verifying=verifying)
        _CURSOR[key] = cur
    try:
        cur.skip(start - cur.position)
        rows = cur.take(n, {k: spec.dtype for k, spec in t.keys(cfg).items()})
    except BaseException:  # a refusal raised mid-stream (MAD's recall on a draw its code fails on), Ctrl-C:
        _CURSOR.clear()  # the stream stopped inside a block; the next call starts it again
        raise
    if cur.position == cur.count:
        _CURSOR.clear()
    return rows


def _shaped(t, cfg, count, rows):
    shapes = {k: (count,) + tuple(spec.shape) for k, spec in t.keys(cfg).items()}
    return {k: np.ascontiguousarray(rows[k], dtype=np.int64).reshape(shapes[k]) for k in ("inputs", "targets")}
