"""The authors' streams made block by block (generators/_authors.py): the blocks concatenated
are the whole split whatever the block sizes, the bytes are those of before streaming,
`gen --authors-stream` advances one stream per split across its shards (resumed runs skip
the kept rows), and counts that cannot fit in memory are refused in one line, at once."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import api, registry, store
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.generators import _authors

from test_reliability import one_error_line

AUTHORS = sorted(n for n, t in registry.all_tasks().items() if t.authors is not None)

# (task, params, count, seed, split): settings whose state carries across rows (mqar's doubles
# run out and are refilled mid-stream at kv 8; copying's tokens; word-problem's set)
STREAMS = [
    ("mqar", dict(input_seq_len=64, num_kv_pairs=8), 700, 3, "val"),
    ("mqar", dict(vocab_size=256, input_seq_len=128, num_kv_pairs=16, power_a=0.5), 300, 11, "train"),
    ("selective-copying", dict(L=60, M=4, A=10), 50, 2, "test"),
    ("associative-recall", {}, 40, 5, "train"),
    ("associative-recall", {}, 40, 5, "test"),
    ("induction-head", {}, 40, 1, "val"),
    ("word-problem", dict(group="S3", k=4), 50, 0, "train"),
    ("word-problem", dict(group="A5", k=10), 300, 9, "train"),
    ("parity", {}, 30, 42, "test"),
    ("modular-arithmetic", {}, 30, 42, "train"),
    ("modular-arithmetic", dict(brackets=True, mult=True, vocab_size=20), 30, 4, "val"),
    ("mad-recall", {}, 20, 12345, "train"),
    ("mad-noisy-recall", {}, 20, 12345, "test"),
    ("mad-fuzzy-recall", {}, 10, 12345, "train"),
    ("mad-selective-copying", {}, 20, 7, "test"),
    ("mad-compression", {}, 20, 7, "train"),
    ("mad-memorization", {}, 20, 7, "train"),
]
DATASETS = [  # (task, params, counts, seed): authors_dataset, the pipelines' splits continuing one stream
    ("mad-recall", {}, {"train": 13, "val": 4, "test": 9}, 5),
    ("mad-memorization", dict(noise_vocab_size=8, frac_noise=0.3), {"train": 13, "test": 9}, 6),
    ("mqar", dict(input_seq_len=64), {"train": 50, "test": 20}, 0),
]
# SHA-256 (first 32 hex digits) of each case's rows as the whole-split code made them before the
# streams were made block by block (the same bytes: the fixture tests check them against the
# authors' own code; these, that nothing moved for settings the fixtures do not hold)
BEFORE = {
    'mqar {"input_seq_len": 64, "num_kv_pairs": 8} 700 3 val': "11df5cd5a53d3091218415c4ed6a25ab",
    'mqar {"input_seq_len": 128, "num_kv_pairs": 16, "power_a": 0.5, "vocab_size": 256} 300 11 train':
        "d968b32909abf53d547b38e00a0593a8",
    'selective-copying {"A": 10, "L": 60, "M": 4} 50 2 test': "2120b018ad7e979e8be54960f0b9261d",
    'associative-recall {} 40 5 train': "bfaa86569cec8145e91921057eadcc53",
    'associative-recall {} 40 5 test': "d903f41528f698e5943b53683277f5b8",
    'induction-head {} 40 1 val': "538b11b6c9b3d9bc9fd1215d2781f4d5",
    'word-problem {"group": "S3", "k": 4} 50 0 train': "0a920253b0518426cc98f8acee7bef5d",
    'word-problem {"group": "A5", "k": 10} 300 9 train': "88e123d2c420a95f5d818c4ffef1a2c5",
    'parity {} 30 42 test': "e0570e6742cff5c8ab381253c82b8ac5",
    'modular-arithmetic {} 30 42 train': "9723316f8bbabe8bd73f3c6f1c63973f",
    'modular-arithmetic {"brackets": true, "mult": true, "vocab_size": 20} 30 4 val':
        "3dc1dc405e2c15d050e7baddbdadab36",
    'mad-recall {} 20 12345 train': "bd11d24434eaed3d30c40fcf5d00172a",
    'mad-noisy-recall {} 20 12345 test': "bfb92e76beb91f547f0f8317d148b3ab",
    'mad-fuzzy-recall {} 10 12345 train': "a6c30ef2667b9dd16e0cc1e881328e4e",
    'mad-selective-copying {} 20 7 test': "0dad6467b4343f3387064389f0e28a9f",
    'mad-compression {} 20 7 train': "902dde159c74999ab3346528bf991ec1",
    'mad-memorization {} 20 7 train': "4fd1fccc1e1efca2702e0aad45c3339c",
    'mad-recall {} {"train": 13, "val": 4, "test": 9} 5 train': "6f8ee1465eead5c631619efd63effd05",
    'mad-recall {} {"train": 13, "val": 4, "test": 9} 5 val': "368a8cbf4e00e2127ef7f755aaf9dcec",
    'mad-recall {} {"train": 13, "val": 4, "test": 9} 5 test': "e7e910b5e64d17854a451a1c16d07498",
    'mad-memorization {"frac_noise": 0.3, "noise_vocab_size": 8} {"train": 13, "test": 9} 6 train':
        "f499abcec85104825687a0314faac808",
    'mad-memorization {"frac_noise": 0.3, "noise_vocab_size": 8} {"train": 13, "test": 9} 6 test':
        "70fc638a43ea629f467ba8a4866a28d4",
    'mqar {"input_seq_len": 64} {"train": 50, "test": 20} 0 train': "31c4407f8536da91a9f469c835eaa832",
    'mqar {"input_seq_len": 64} {"train": 50, "test": 20} 0 test': "8f8579e08acbaeb9b0fdbc5374734679",
}


def _digest(rows):
    h = hashlib.sha256()
    for k in ("inputs", "targets"):
        a = rows[k]
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:32]


def _open(task, params, count, seed, split):
    t = registry.get(task)
    return api.authors_open(t, t.make_config(**params), seed, {split: count}, split, "authors")


def _assert_rows_equal(got, want, what):
    for k in want:
        assert got[k].dtype == np.int64 and got[k].shape == want[k].shape, (what, k)
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{what} {k}")


def test_the_cases_cover_every_task_with_an_authors_stream():
    """Each task with an authors' stream when streaming came (a later one: the defaults' test)."""
    assert {c[0] for c in STREAMS} <= set(AUTHORS) and len({c[0] for c in STREAMS}) == 13
    assert set(BEFORE) == {f"{t} {json.dumps(p, sort_keys=True)} {n} {s} {sp}" for t, p, n, s, sp in STREAMS} | {
        f"{t} {json.dumps(p, sort_keys=True)} {json.dumps(c)} {s} {sp}" for t, p, c, s in DATASETS for sp in c}


@pytest.mark.parametrize("case", STREAMS, ids=lambda c: f"{c[0]}-{c[2]}-{c[4]}")
def test_the_stream_is_the_bytes_of_before(case):
    task, params, count, seed, split = case
    got = longsynth.authors_stream(task, count, seed=seed, split=split, **params)
    assert _digest(got) == BEFORE[f"{task} {json.dumps(params, sort_keys=True)} {count} {seed} {split}"]


@pytest.mark.parametrize("case", DATASETS, ids=lambda c: c[0])
def test_the_data_set_is_the_bytes_of_before(case):
    task, params, counts, seed = case
    got = longsynth.authors_dataset(task, counts, seed=seed, **params)
    for split, rows in got.items():
        key = f"{task} {json.dumps(params, sort_keys=True)} {json.dumps(counts)} {seed} {split}"
        assert _digest(rows) == BEFORE[key]


@pytest.mark.parametrize("case", STREAMS, ids=lambda c: f"{c[0]}-{c[2]}-{c[4]}")
@pytest.mark.parametrize("inner", [1, 3, 7])
def test_blocks_of_any_size_concatenate_to_the_whole_split(case, inner, monkeypatch):
    """The stream made ``inner`` rows a block (its own boundaries: mqar's slot draws continue
    across them), read in takes and skips of sizes aligned with nothing, equals the split
    made in one block."""
    task, params, count, seed, split = case
    whole = _open(task, params, count, seed, split).rows()
    row = int(np.prod(whole["inputs"].shape[1:]))
    monkeypatch.setattr(_authors, "BLOCK_BYTES", inner * 16 * row)
    s = _open(task, params, count, seed, split)
    parts, at, sizes = [], 0, [1, 2, 5, 0, 4, 11]
    for i, n in enumerate(sizes * count):
        n = min(n, count - at)
        if i % 3 == 2:
            s.skip(n)  # what a resumed gen does with the rows of its kept shards
        else:
            part = s.take(n)
            _assert_rows_equal(part, {k: v[at : at + n] for k, v in whole.items()}, f"rows {at}..{at + n}")
            parts.append((at, n))
        at += n
        if at == count:
            break
    assert s.position == count and at == count and 0 < sum(n for _, n in parts) < count
    with pytest.raises(ValueError):
        s.take(1)


def authors_defaults(task):
    """The parameters an authors' stream needs beyond the task's defaults: the Chomsky tasks' one call has one
    length (docs/tasks/chomsky.md, "The authors' stream"); Repeat After Me's lookups fail at their own defaults
    on a training example of 5 letters (docs/tasks/repeat.md), so theirs start at 6; RegBench's rows depend on the
    hash seed their code ran under, which it must be given (docs/tasks/regbench.md)."""
    if task.startswith("chomsky-"):
        return {"length": 9}
    if task == "regbench":
        return {"hash_seed": 0}
    return {"min_train_len": 6} if task in ("repeat-prefix-ngram", "repeat-suffix-ngram") else {}


@pytest.mark.parametrize("task", AUTHORS)
def test_every_task_streams_its_defaults_in_blocks(task, monkeypatch):
    """Any task with an authors' stream (one registered later too), at its defaults: made 2
    rows a block and read 3 at a time, the stream is the split made in one block."""
    count = 17
    params = authors_defaults(task)
    split = registry.get(task).authors.splits[0]  # Repeat After Me's duplicate n-gram: their test rows alone
    whole = _open(task, params, count, 1, split).rows()
    monkeypatch.setattr(_authors, "BLOCK_BYTES", 2 * 16 * int(np.prod(whole["inputs"].shape[1:])))
    s = _open(task, params, count, 1, split)
    got = [s.take(min(3, count - at)) for at in range(0, count, 3)]
    _assert_rows_equal({k: np.concatenate([g[k] for g in got]) for k in whole}, whole, task)


def test_a_take_casts_to_the_stored_dtypes_as_astype_does():
    s = _open("mqar", dict(input_seq_len=64), 20, 1, "train")
    whole = _open("mqar", dict(input_seq_len=64), 20, 1, "train").rows()
    got = s.take(20, {"inputs": np.int16, "targets": np.int16})
    for k in ("inputs", "targets"):
        assert got[k].dtype == np.int16 and np.array_equal(got[k], whole[k].astype(np.int16))


def test_a_task_registering_a_plain_function_still_streams(monkeypatch):
    """A task whose ``authors`` is a plain whole-split function (no ``open``): served as one block."""
    import dataclasses

    t = registry.get("parity")
    plain = dataclasses.replace(t, authors=lambda cfg, count, seed, split: t.authors(cfg, count, seed, split))
    cfg = t.make_config()
    want = t.authors(cfg, 9, 3, "train")
    assert api.authors_block(plain, cfg, 3, "train", {"train": 9}, 4, 3, "authors")["inputs"].tolist() == \
        want["inputs"][4:7].astype(t.keys(cfg)["inputs"].dtype).tolist()


def test_a_stream_that_raised_is_started_again():
    """MAD's recall fails on some draws (every slot noise): the refusal comes again on the next
    call, from a fresh stream, never from the stopped one (StopIteration)."""
    t = registry.get("mad-recall")
    cfg = t.make_config(vocab_size=20, seq_len=4, noise_vocab_size=4, frac_noise=0.99)
    for _ in range(2):
        with pytest.raises(LongsynthError, match="every slot was noise"):
            api.authors_block(t, cfg, 0, "test", {"test": 50}, 0, 50, "authors")
    s = api.authors_open(t, cfg, 0, {"test": 50}, "test", "authors")
    with pytest.raises(LongsynthError):
        s.take(50)
    with pytest.raises(ValueError, match="failed earlier"):
        s.take(1)


# ---------------------------------------------------------------- gen, verify --deep, resume


def _count_streams(monkeypatch):
    """Spy on the streams: [split] of each one drawn from (opened streams never read, as the
    plan's checks open them, are not), and the size of every take."""
    drawn, takes = [], []
    real = api.authors_open

    def spy(t, cfg, seed, counts, split, stream=None):
        s = real(t, cfg, seed, counts, split, stream)
        take, skip, seen = s.take, s.skip, []

        def first():
            if not seen:
                seen.append(1)
                drawn.append(split)

        def counted_take(n, dtypes=None):
            first()
            takes.append(n)
            return take(n, dtypes)

        def counted_skip(n):
            if n:
                first()
            return skip(n)

        s.take, s.skip = counted_take, counted_skip
        return s

    monkeypatch.setattr(api, "authors_open", spy)
    return drawn, takes


@pytest.mark.parametrize("task,params,splits", [
    ("mqar", dict(input_seq_len=64, num_kv_pairs=8), {"train": 700, "val": 23, "test": 61}),
    ("mad-recall", {}, {"train": 40, "val": 9, "test": 17}),
    ("word-problem", dict(group="S3", k=4), {"train": 97}),
])
def test_gen_writes_the_whole_stream_shard_by_shard(tmp_path, monkeypatch, task, params, splits):
    """Small shards (13 rows, aligned with no block of the stream): the stored rows are the
    data set's, one stream is opened per split and advanced across its shards, never asked
    for more than a shard's rows; verify --deep then regenerates sampled rows the same way."""
    drawn, takes = _count_streams(monkeypatch)
    root = tmp_path / "d"
    store.generate(str(root), task, params, seed=3, splits=splits, shard_size=13, workers=1, authors_stream=True)
    assert drawn == list(splits) and max(takes) <= 13 and sum(takes) == sum(splits.values())
    want = longsynth.authors_dataset(task, splits, seed=3, **params)
    ds = longsynth.open(root)
    for split, n in splits.items():
        for k in ("inputs", "targets"):
            stored = np.stack([ds[split][i][k] for i in range(n)]).astype(np.int64)
            assert np.array_equal(stored, want[split][k]), (split, k)
    drawn.clear()
    assert store.verify(str(root), deep=True, samples=25) == []
    assert drawn == list(splits)  # the sampled rows of a split, in order: one pass of its stream


def _drop(root, names):
    m = json.loads((root / "manifest.json").read_text())
    m["complete"] = False
    for split in m["splits"].values():
        split["shards"] = [r for r in split["shards"] if r["file"] not in names]
    (root / "manifest.json").write_text(json.dumps(m))
    for n in names:
        (root / n).unlink()


def _shard_bytes(root):
    return {f: (root / f).read_bytes() for f in sorted(os.listdir(root)) if store.SHARD_RE.match(f)}


@pytest.mark.parametrize("task,params,splits,lost", [
    ("mqar", dict(input_seq_len=64), {"train": 60, "test": 20}, ["train-00003.h5", "train-00004.h5"]),
    ("mad-recall", {}, {"train": 30, "val": 10, "test": 12}, ["train-00002.h5", "val-00001.h5", "test-00001.h5"]),
])
def test_a_resumed_gen_writes_the_same_bytes(tmp_path, monkeypatch, task, params, splits, lost):
    """Shards lost (as a killed gen leaves them: the last, or any): the rerun replays each
    split's stream from its start, skipping the kept shards' rows, and writes the same files."""
    ref, d = tmp_path / "ref", tmp_path / "d"
    store.generate(str(ref), task, params, seed=2, splits=splits, shard_size=7, workers=1, authors_stream=True)
    shutil.copytree(ref, d)
    _drop(d, lost)
    drawn, takes = _count_streams(monkeypatch)
    store.generate(str(d), task, params, seed=2, splits=splits, shard_size=7, workers=1, authors_stream=True)
    assert drawn == [s for s in splits if any(n.startswith(s) for n in lost)]  # only the splits with shards to write
    records = [r for sp in store.read_manifest(str(ref))["splits"].values() for r in sp["shards"]]
    assert sum(takes) == sum(r["count"] for r in records if r["file"] in lost)  # the kept rows: skipped, not taken
    assert _shard_bytes(d) == _shard_bytes(ref)
    assert store.read_manifest(str(d))["splits"] == store.read_manifest(str(ref))["splits"]


# ---------------------------------------------------------------- what cannot fit: one line, at once


def _run(code, timeout=120):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


ABSURD = [
    ("mqar", 10**15, {}),
    ("word-problem", 10**15, dict(group="S7", k=65536)),
    ("selective-copying", 10**12, {}),
    ("mad-recall", 10**15, {}),
]


@pytest.mark.parametrize("task,count,params", ABSURD, ids=[a[0] for a in ABSURD])
def test_an_absurd_count_is_one_line_at_once(task, count, params):
    """Before: mqar tried to allocate 28.4 PiB, word-problem's set grew without limit. Now
    refused before any draw, in a fresh process well inside the timeout."""
    code = ("import longsynth\n"
            "from longsynth.errors import LongsynthError\n"
            "try:\n"
            f"    longsynth.authors_stream({task!r}, {count}, seed=0, **{params!r})\n"
            "except LongsynthError as e:\n"
            "    print('refused:', e)\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"refused: count: {count:,} rows of {task}'s authors' stream need "
                                                   "about"), r.stdout
    assert "available now" in lines[0]


@pytest.mark.parametrize("task,count,params", ABSURD[:2], ids=[a[0] for a in ABSURD[:2]])
def test_gen_refuses_a_split_whose_draws_cannot_fit_in_one_line(tmp_path, task, count, params):
    args = [a for k, v in params.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    out = tmp_path / "d"
    r = subprocess.run([sys.executable, "-m", "longsynth", "gen", task, "--authors-stream", *args,
                        "--splits", f"train={count}", "--out", str(out)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert r.returncode != 0 and len(lines) == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert lines[0].startswith(f"Error: splits: train ({count:,} rows) of {task}'s authors' stream keeps about")
    assert not out.exists()


def test_what_must_fit_is_the_rows_for_the_api_and_the_side_arrays_for_gen(tmp_path, monkeypatch):
    """With 2 MB available: 10,000 mqar rows of 64 (10 MB as int64) are refused by the API,
    which says gen writes them; gen writes them (its stream keeps 160 kB: every row's 4 keys
    and 4 values, int16); 200,000 rows' keys and values (3.2 MB) are refused by gen too,
    before any write, and by its dry run."""
    monkeypatch.setattr(api, "memory_available", lambda: 2 << 20)
    with pytest.raises(LongsynthError, match=r"^count: 10,000 rows of mqar's authors' stream need about 10\.4 MB of "
                                             r"memory \(10\.2 MB for the rows \(int64\) and 160\.0 kB that its draws "
                                             r"keep\), 2\.1 MB available now; ask for fewer rows; `longsynth gen mqar "
                                             r"--authors-stream` writes them shard by shard$"):
        longsynth.authors_stream("mqar", 10_000, seed=0, input_seq_len=64)
    with pytest.raises(LongsynthError, match="need about"):
        longsynth.authors_dataset("mqar", {"train": 6000, "test": 6000}, seed=0, input_seq_len=64)
    store.generate(str(tmp_path / "ok"), "mqar", dict(input_seq_len=64), seed=0, splits={"train": 10_000},
                   workers=1, authors_stream=True)
    r = CliRunner().invoke(cli, ["gen", "mqar", "--authors-stream", "--input-seq-len", "64", "--splits",
                                 "train=200000", "--out", str(tmp_path / "no")])
    assert one_error_line(r).startswith("Error: splits: train (200,000 rows) of mqar's authors' stream keeps about "
                                        "3.2 MB in memory while it is written (every row's keys and values")
    assert not (tmp_path / "no").exists()
    with pytest.raises(LongsynthError, match="keeps about"):
        store.dry_run(str(tmp_path / "dry"), "mqar", dict(input_seq_len=64), splits={"train": 200_000},
                      authors_stream=True)
    monkeypatch.setattr(api, "memory_available", lambda: None)  # unknown: nothing refused
    assert longsynth.authors_stream("mqar", 3, seed=0, input_seq_len=64)["inputs"].shape == (3, 64)


def test_the_word_problem_estimate_counts_its_cayley_table(tmp_path, monkeypatch):
    """S7's Cayley table (5040 x 5040 int32, 96 MiB; 290 MiB while it is built) was left out of the word-problem
    stream's estimate, so a set that fit by the estimate ran out of memory building the table (under a 4 GB
    address-space limit, 1,300 rows of S7 at k 65536: 3.4 GB estimated, 3.57 GB available, an out-of-memory
    line after 3.5 GB were allocated). Two rows (5 MB of set) with 200 MB available are refused before a draw."""
    monkeypatch.setattr(api, "memory_available", lambda: 200 << 20)
    with pytest.raises(LongsynthError, match=r"^count: 2 rows of word-problem's authors' stream need about 312\.2 MB "
                                             r"of memory \(2\.1 MB for the rows \(int64\) and 310\.1 MB that its draws "
                                             r"keep\), 209\.7 MB "
                                             r"available now"):
        longsynth.authors_stream("word-problem", 2, seed=0, group="S7", k=65536)
    r = CliRunner().invoke(cli, ["gen", "word-problem", "--authors-stream", "--group", "S7", "--k", "65536",
                                 "--splits", "train=2", "-j", "1", "--out", str(tmp_path / "d")])
    line = one_error_line(r)
    assert line.startswith("Error: splits: train (2 rows) of word-problem's authors' stream keeps about 310.1 MB") and \
        "S7's Cayley table), 209.7 MB available now; lower its count, or the parameters that size what it keeps" \
        in line, line
    assert not (tmp_path / "d").exists()


def test_memory_available_is_a_plausible_number():
    got = api.memory_available()
    assert got is None or 1 << 20 < got < 1 << 50


def _system(files):
    def read(path):
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]
    return read


def test_memory_available_heeds_cgroup_v1_v2_and_rlimit_as(monkeypatch):
    """MemAvailable is lowered by a cgroup v1 limit (this development machine's kind), a v2 limit, and
    RLIMIT_AS less the address space already mapped; v1's "no limit" (2^63 rounded to a page) and
    v2's "max" lower nothing."""
    import resource

    gib = 1 << 30
    meminfo = {"/proc/meminfo": f"MemTotal: {64 * gib // 1024} kB\nMemAvailable: {32 * gib // 1024} kB\n",
               "/proc/self/status": f"Name: python\nVmSize: {gib // 1024} kB\n"}
    monkeypatch.setattr(resource, "getrlimit", lambda what: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert api.memory_available(_system(meminfo)) == 32 * gib
    v1 = {"/sys/fs/cgroup/memory/memory.limit_in_bytes": str(8 * gib),
          "/sys/fs/cgroup/memory/memory.usage_in_bytes": str(3 * gib)}
    assert api.memory_available(_system({**meminfo, **v1})) == 5 * gib
    unlimited = {"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712",
                 "/sys/fs/cgroup/memory/memory.usage_in_bytes": str(3 * gib)}
    assert api.memory_available(_system({**meminfo, **unlimited})) == 32 * gib
    v2 = {"/sys/fs/cgroup/memory.max": str(6 * gib), "/sys/fs/cgroup/memory.current": str(2 * gib)}
    assert api.memory_available(_system({**meminfo, **v2})) == 4 * gib
    assert api.memory_available(_system({**meminfo, "/sys/fs/cgroup/memory.max": "max",
                                         "/sys/fs/cgroup/memory.current": "5"})) == 32 * gib
    monkeypatch.setattr(resource, "getrlimit", lambda what: (3 * gib, resource.RLIM_INFINITY))
    assert api.memory_available(_system(meminfo)) == 2 * gib  # 3 GiB of address space, 1 GiB mapped


def test_a_slow_first_authors_stream_says_it_is_compiling(monkeypatch, capsys):
    """The first call of an authors' stream compiles its kernels (22 s for some): past two seconds a line says
    so on stderr, and when it is ready; a quick call says nothing."""
    import time as _time

    from longsynth import progress

    longsynth.authors_stream("mqar", 2, seed=0, input_seq_len=64)  # compiled or loaded here, before the test
    monkeypatch.setattr(progress, "COMPILE_NOTE_AFTER", 0.05)
    real = api.authors_open

    def slow(*a, **k):
        s = real(*a, **k)
        rows = s.rows

        def later():
            _time.sleep(0.3)
            return rows()
        s.rows = later
        return s

    monkeypatch.setattr(api, "authors_open", slow)
    capsys.readouterr()
    longsynth.authors_stream("mqar", 2, seed=0, input_seq_len=64)
    err = capsys.readouterr().err
    assert "longsynth: drawing mqar's authors' stream (a first use also compiles its kernels" in err, err
    assert "longsynth: mqar's authors' stream ready in" in err, err
    monkeypatch.setattr(progress, "COMPILE_NOTE_AFTER", 30.0)
    longsynth.authors_stream("mqar", 2, seed=0, input_seq_len=64)
    assert capsys.readouterr().err == ""


def test_verify_deep_of_an_authors_stream_checks_memory_first(tmp_path, monkeypatch):
    """verify --deep redraws an authors' stream whole (a Chomsky call holds every row at once): past the memory
    available it is one line saying so and what checks without redrawing, before anything is drawn."""
    root = tmp_path / "d"
    store.generate(str(root), "chomsky-reverse-string", dict(length=40), seed=0, splits={"train": 64}, workers=1,
                   authors_stream=True)
    monkeypatch.setattr(api, "memory_available", lambda: 1024)
    r = CliRunner().invoke(cli, ["verify", str(root), "--deep"])
    assert r.exit_code != 0 and "Traceback" not in r.output, r.output
    assert "verify --deep: redrawing train (64 rows) of chomsky-reverse-string's authors' stream" in r.output
    assert "verify without --deep checks every stored byte" in r.output
    monkeypatch.setattr(api, "memory_available", lambda: None)
    assert store.verify(str(root), deep=True) == []


@pytest.mark.parametrize("task,length,count", [("chomsky-duplicate-string", 2048, 64),
                                               ("chomsky-stack-manipulation", 64, 1024)])
def test_a_chomsky_authors_stream_allocates_no_more_than_its_estimate(tmp_path, monkeypatch, task, length, count):
    """A Chomsky call draws the whole split at once: its arrays (raw), the rows laid out from them (the block),
    then a copy of the block as the rows handed out: 5/3 of the estimate (raw + rows) at its peak (NumPy's bytes
    traced; 1.3-1.5x in RSS), and 2.0x where the output's padding is masked (two int64 cumsums of it). The block
    is now the rows handed out and the masks are made a few rows at a time: the peak is within the estimate. gen
    holds the block beside the shard it writes: its check counts it (it counted the raw arrays alone, a third)."""
    import tracemalloc

    longsynth.authors_dataset(task, {"train": 2}, seed=0, length=length)  # compiled, imported
    t = registry.get(task)
    s = api.authors_open(t, t.make_config(length=length), 0, {"train": count}, "train")
    rows = s.count * 16 * int(np.prod(s.row_shape))
    estimate = s.side_bytes + rows
    tracemalloc.start()
    try:
        got = longsynth.authors_dataset(task, {"train": count}, seed=0, length=length)["train"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= estimate, (peak, estimate)
    want = s.rows()  # the same rows through take's copy
    assert all(np.array_equal(got[k], want[k]) for k in want)
    assert s.block_bytes == rows  # the block is every row
    monkeypatch.setattr(api, "memory_available", lambda: s.side_bytes + rows // 2)  # the raw arrays fit, not the rows
    r = CliRunner().invoke(cli, ["gen", task, "--authors-stream", "--length", str(length), "--splits",
                                 f"train={count}", "--out", str(tmp_path / "d")])
    assert one_error_line(r).startswith(f"Error: splits: train ({count:,} rows) of {task}'s authors' stream keeps "
                                        f"about {store.manifest.human(s.side_bytes + rows)} in memory")
