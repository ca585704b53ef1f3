"""The Hugging Face export: `longsynth export DIR --format hf` writes Parquet files and a dataset card that
the real `datasets` library loads back, sample for sample, as stored."""
import hashlib
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

# The hf extra belongs to the test extra: without these libraries this file fails to
# import (an error in the run), it is never skipped.
import datasets
import pyarrow.parquet as pq
from datasets.info import DatasetInfosDict
from huggingface_hub import DatasetCard

import longsynth
from longsynth import exports, store
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.exports import hf

from test_reliability import flip_sample_byte, one_error_line

SMALL_LISTOPS = {"min_length": 40, "max_length": 120, "max_args": 5, "max_depth": 6}
CASES = {  # name: (task, params, splits); shard sizes of 7 make blocks end at shard boundaries
    "cumsum": ("cumsum", {"L": 32}, {"train": 23, "val": 4, "test": 3}),
    "select": ("select", {"L": 24, "M": 3}, {"train": 9, "val": 2, "test": 2}),  # int64 [M], 2 channels
    "select-fixed": ("select-fixed", {"L": 24, "M": 3}, {"train": 9, "val": 2, "test": 2}),  # fixed draws
    "listops-subtrees": ("listops-subtrees", SMALL_LISTOPS, {"train": 20, "val": 3, "test": 3}),
    "listops": ("listops", SMALL_LISTOPS, {"train": 20, "val": 3, "test": 3}),
    "pathfinder-seg": ("pathfinder-seg", {"size": 128}, {"train": 5, "val": 2, "test": 2}),
    "mqar": ("mqar", {"input_seq_len": 32, "num_kv_pairs": 4}, {"train": 9, "val": 2, "test": 2}),  # tokens, int16
    "word-problem": ("word-problem", {"group": "A5", "k": 6}, {"train": 9, "val": 2, "test": 2}),
    "parity": ("parity", {"context_length": 16, "max_sequence_length": 9, "test_min_sequence_length": 9,
                          "test_max_sequence_length": 16}, {"train": 9, "val": 2, "test": 2}),
    "mad-memorization": ("mad-memorization", {"vocab_size": 40, "seq_len": 12}, {"train": 9, "val": 2, "test": 2}),
}
CITED = {"listops": "Long Range Arena", "mqar": "arXiv:2312.04927", "word-problem": "arXiv:2404.08819",
         "parity": "arXiv:2411.12537", "mad-memorization": "arXiv:2403.17844"}  # the others cite the DLR paper
HF_SPLITS = {"train": "train", "val": "validation", "test": "test"}

datasets.disable_progress_bars()


def tree(root):
    """{relative path: sha256} of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            out[os.path.relpath(path, root)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def gen(root, name):
    task, params, splits = CASES[name]
    store.generate(str(root), task, params, seed=3, splits=splits, shard_size=7, workers=1)
    return root


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every case generated and exported through the command line: {name: (DIR, OUT)}."""
    base = tmp_path_factory.mktemp("hf")
    out = {}
    for name in CASES:
        root = gen(base / name, name)
        r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(base / f"{name}-hf")])
        assert r.exit_code == 0, r.output
        out[name] = (root, base / f"{name}-hf")
    return out


def as_stored(row, specs, derived=()):
    """A row of `with_format("numpy")` as the stored sample: same values, stored dtypes.

    `datasets`' numpy formatter widens integer arrays to int64; the values must survive
    that exactly, and the columns' own Arrow types are checked against the stored dtypes
    through the features. ``derived``: the columns an export adds to the stored keys
    (hf.LENGTH where the rows vary in length), left out."""
    assert set(row) == set(specs) | set(derived)
    sample = {}
    for k, spec in specs.items():
        v = np.asarray(row[k])
        cast = v.astype(spec.dtype)
        assert np.array_equal(cast, v), k  # nothing lost in the cast back
        sample[k] = cast
    return sample


def check_split(rows, sp, digest, lengths=None):
    """Every row equals the stored sample of the same index, and the rows' longsynth split
    digest equals the manifest's. ``lengths``: hf.row_lengths_of's function where the export
    adds a LENGTH column, which must hold the row's length as info counts it."""
    h, n = hashlib.sha256(), 0
    for i, row in enumerate(rows):
        got, want = as_stored(row, sp.specs, [hf.LENGTH] if lengths else []), sp[i]
        for k in want:
            assert got[k].shape == want[k].shape and np.array_equal(got[k], want[k]), (sp.name, i, k)
        if lengths:
            assert row[hf.LENGTH] == lengths(want["targets"][None])[0], (sp.name, i)
        h.update(store.sample_digest(got))
        n += 1
    assert n == len(sp)
    assert h.hexdigest() == digest


@pytest.mark.parametrize("name", list(CASES))
def test_load_dataset_gives_every_stored_sample(exported, name, tmp_path):
    root, out = exported[name]
    ds = longsynth.open(root)
    got = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert list(got) == ["train", "validation", "test"]
    assert got["train"].features == hf.features(ds.task, ds.task.keys(ds.config), ds.config)
    lengths = hf.row_lengths_of(ds.task, ds.config, ds.task.keys(ds.config))
    assert (lengths is not None) == (name == "parity")  # the rows of the others have one length (or store it)
    for split, sp in ds.splits.items():
        check_split(got[HF_SPLITS[split]].with_format("numpy"), sp, ds.manifest["splits"][split]["digest"], lengths)
    first = got["train"][0]  # the default (Python) format: lists, and PIL images for Pathfinder
    for k, v in ds["train"][0].items():
        if isinstance(got["train"].features[k], datasets.Image):
            assert v.ndim == 2 and first[k].mode == "L"
        assert np.array_equal(np.asarray(first[k], dtype=v.dtype), v)


@pytest.mark.parametrize("name", ["cumsum", "listops-subtrees", "pathfinder-seg"])
def test_streaming_gives_every_stored_sample(exported, name):
    root, out = exported[name]
    ds = longsynth.open(root)
    got = datasets.load_dataset(str(out), streaming=True)
    assert sorted(got) == ["test", "train", "validation"]
    for split, sp in ds.splits.items():
        check_split(got[HF_SPLITS[split]].with_format("numpy"), sp, ds.manifest["splits"][split]["digest"])


@pytest.mark.parametrize("name", list(CASES))
def test_card_parses_and_describes_the_dataset(exported, name):
    root, out = exported[name]
    ds = longsynth.open(root)
    m = ds.manifest
    card = DatasetCard.load(out / "README.md", ignore_metadata_errors=False)
    data = card.data.to_dict()
    assert data["license"] == "mit" and "synthetic" in data["tags"]
    assert data["configs"] == [{"config_name": "default", "data_files": [
        {"split": s, "path": f"data/{s}-*.parquet"} for s in ("train", "validation", "test")]}]
    info = DatasetInfosDict.from_dataset_card_data(card.data)["default"]
    assert info.features == hf.features(ds.task, ds.task.keys(ds.config), ds.config)
    assert {s: v.num_examples for s, v in info.splits.items()} == {HF_SPLITS[s]: n for s, n in m["counts"].items()}
    assert info.download_size == sum(os.path.getsize(p) for p in (out / "data").iterdir())
    text = card.text
    assert m["command"] in text and f"Seed {m['seed']}." in text
    for split, info_ in m["splits"].items():
        assert re.search(rf"\| {HF_SPLITS[split]} \| {split} \| {info_['count']} \| 1 \| `{info_['digest']}` \|", text)
    for k, spec in ds.task.keys(ds.config).items():
        assert f"| `{k}` |" in text and spec.doc in text
    assert CITED.get(name, "arXiv:2212.00768") in text
    assert "![the first samples](preview.png)" in text
    from PIL import Image

    assert Image.open(out / "preview.png").size[0] > 100
    mark = json.loads((out / "longsynth.json").read_text())
    assert mark["dataset"] == m and mark["export"]["format"] == "hf"
    assert sorted(mark["export"]["files"]) == sorted(tree(out))
    if m["vocab"]:  # every id with its token (listops: 4 `]`)
        assert "Token id -> token: " + ", ".join(f"{i} `{t}`" for i, t in enumerate(m["vocab"])) + "." in text
    if m["fixed"]:  # the dataset-level draws travel in longsynth.json; those stored as keys are on the card
        assert mark["dataset"]["fixed"] == m["fixed"]
        assert all(f"`{k}`" in text for k in m["fixed"] if k in ds.task.keys(ds.config))


def test_chomsky_export_has_a_length_column(tmp_path):
    """A Chomsky dataset's test split is at lengths never trained on (41-500 by default): its export carries
    each row's length, as `info` counts it, and the card gives each split's shortest and longest."""
    root = tmp_path / "ch"
    store.generate(str(root), "chomsky-parity-check", {"test_max_length": 60}, seed=2,
                   splits={"train": 40, "val": 4, "test": 12}, workers=1)
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(tmp_path / "hf")])
    assert r.exit_code == 0, r.output
    got = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache")).with_format("numpy")
    assert got["test"].features[hf.LENGTH] == datasets.Value("int64")
    ds = longsynth.open(root)
    lengths = hf.row_lengths_of(ds.task, ds.config, ds.task.keys(ds.config))
    info = store.info(str(root))["lengths"]
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "| `length` | Value('int64') | (derived) | scalar | the row's length, n, the input's length" in card
    for split, sp in ds.splits.items():
        check_split(got[HF_SPLITS[split]], sp, ds.manifest["splits"][split]["digest"], lengths)
        col = np.asarray(got[HF_SPLITS[split]][hf.LENGTH])
        assert (col.min(), col.max()) == (info[split]["min"], info[split]["max"])
        assert re.search(rf"\| {HF_SPLITS[split]} \| {split} \| {len(sp)} \| 1 \| `[0-9a-f]{{64}}` \| "
                         rf"{col.min()}-{col.max()} \|", card), card
    train, test = (np.asarray(got[s][hf.LENGTH]) for s in ("train", "test"))
    assert train.max() <= 40 < 41 <= test.min() and test.max() <= 60


def test_pathfinder_images_are_png_features(exported):
    _, out = exported["pathfinder-seg"]
    table = pq.read_table(out / "data" / "train-00000-of-00001.parquet")
    png = table.column("inputs")[0].as_py()
    assert png["bytes"][:8] == b"\x89PNG\r\n\x1a\n" and png["path"] is None
    assert datasets.Features.from_arrow_schema(table.schema)["targets"] == datasets.Image()


def test_png_encoder_round_trips():
    from PIL import Image

    rng = np.random.default_rng(0)
    for a in [np.zeros((1, 1), np.uint8), np.full((3, 5), 255, np.uint8),
              rng.integers(0, 256, (17, 31), dtype=np.uint8), longsynth.sample("pathfinder-seg", 0, seed=0)["inputs"]]:
        img = Image.open(io.BytesIO(hf.png_gray8(a)))
        img.load()  # decodes the whole stream: checks the CRCs and the zlib checksum
        assert img.mode == "L" and np.array_equal(np.asarray(img), a)


# ---------------------------------------------------------------- layout and safety


def test_files_and_row_groups_and_reexport(tmp_path, monkeypatch):
    root = gen(tmp_path / "d", "cumsum")
    monkeypatch.setattr(hf, "ROW_GROUP_ROWS", 4)
    monkeypatch.setattr(hf, "MIN_FILE_BYTES", 1)
    monkeypatch.setattr(hf, "MIN_FILES", 3)
    out = tmp_path / "hf"
    seen = []
    exports.export(str(root), "hf", str(out), lambda n, total=None: seen.append((n, total)))
    assert seen[0] == (None, 30) and sum(n for n, _ in seen[1:]) == 30
    names = sorted(os.listdir(out / "data"))
    assert names == ["test-00000-of-00001.parquet"] + [f"train-{i:05d}-of-00003.parquet" for i in range(3)] + \
        ["validation-00000-of-00001.parquet"]
    groups = [[pq.ParquetFile(out / "data" / f"train-{i:05d}-of-00003.parquet").metadata.row_group(g).num_rows
               for g in range(pq.ParquetFile(out / "data" / f"train-{i:05d}-of-00003.parquet").num_row_groups)]
              for i in range(3)]
    assert groups == [[4, 4], [4, 4], [4, 3]]  # whole row groups, regrouped across the shards of 7
    ds = longsynth.open(root)
    got = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "c1"))
    check_split(got["train"].with_format("numpy"), ds["train"], ds.manifest["splits"]["train"]["digest"])
    stream = datasets.load_dataset(str(out), split="train", streaming=True)
    assert stream.num_shards >= 3  # files (and their row groups) are what workers share out
    check_split(stream.with_format("numpy"), ds["train"], ds.manifest["splits"]["train"]["digest"])

    monkeypatch.undo()  # the same directory again, now one file per split: the old files go
    exports.export(str(root), "hf", str(out))
    assert sorted(os.listdir(out / "data")) == [f"{s}-00000-of-00001.parquet" for s in ("test", "train", "validation")]
    got = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "c2"))
    check_split(got["train"].with_format("numpy"), ds["train"], ds.manifest["splits"]["train"]["digest"])


@pytest.mark.parametrize("name", ["cumsum", "listops-subtrees", "pathfinder-seg"])
def test_workers_change_no_byte(tmp_path, monkeypatch, name):
    """--workers 1 (threads of one process) and 3 (spawned processes, each writing whole
    files) write the same bytes, with files and row groups split small so that every worker
    has several; progress counts every row whatever writes it. 3, not 2 as well: any count
    above 1 runs the same pool, and 3 shares the 4 or more files out unevenly."""
    root = gen(tmp_path / "d", name)
    monkeypatch.setattr(hf, "ROW_GROUP_ROWS", 2)
    monkeypatch.setattr(hf, "MIN_FILE_BYTES", 1)
    monkeypatch.setattr(hf, "MIN_FILES", 4)
    trees = []
    for workers in (1, 3):
        seen = []
        exports.export(str(root), "hf", str(tmp_path / f"hf{workers}"), lambda n, total=None: seen.append(n),
                       workers=workers)
        assert sum(n for n in seen[1:]) == sum(CASES[name][2].values())
        trees.append(tree(tmp_path / f"hf{workers}"))
    assert len([f for f in trees[0] if f.startswith("data/train-")]) >= 3
    assert trees[0] == trees[1]


def test_workers_are_checked(tmp_path):
    root = gen(tmp_path / "d", "listops")
    with pytest.raises(LongsynthError, match="--workers: must be an integer >= 1, got 0"):
        exports.export(str(root), "hf", str(tmp_path / "hf"), workers=0)
    with pytest.raises(LongsynthError, match="--workers: --format lra-tsv writes on one process"):
        exports.export(str(root), "lra-tsv", str(tmp_path / "tsv"), workers=2)
    assert not (tmp_path / "hf").exists() and not (tmp_path / "tsv").exists()
    exports.export(str(root), "lra-tsv", str(tmp_path / "tsv"), workers=1)
    assert sorted(os.listdir(tmp_path / "tsv")) == ["basic_test.tsv", "basic_train.tsv", "basic_val.tsv"]


def test_empty_split_is_left_out(tmp_path):
    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 8}, seed=1, splits={"train": 5, "val": 0, "test": 2}, workers=1)
    exports.export(str(root), "hf", str(tmp_path / "hf"))
    got = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "c"))
    assert {s: len(d) for s, d in got.items()} == {"train": 5, "test": 2}
    assert "val: no samples, left out" in (tmp_path / "hf" / "README.md").read_text()


def test_refuses_a_directory_holding_something_else(tmp_path):
    root = gen(tmp_path / "d", "cumsum")
    out = tmp_path / "hf"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(out)])
    assert one_error_line(r) == (f"Error: {out}: directory is not empty and holds no longsynth hf export; "
                                 f"choose another --out")
    assert os.listdir(out) == ["notes.txt"]


def test_damaged_shard_stops_the_export_with_one_line(tmp_path):
    root = gen(tmp_path / "d", "cumsum")
    flip_sample_byte(root / "train-00001.h5", "targets", 3)  # train[10]
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(tmp_path / "hf")])
    assert re.fullmatch(r"Error: .*train-00001.h5: sample 10 of train fails its checksum \(damaged data\); "
                        r"run `longsynth verify .*`", one_error_line(r))
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("existing", [False, True])
def test_failed_export_leaves_no_partial_file(tmp_path, monkeypatch, existing):
    import errno

    root = gen(tmp_path / "d", "cumsum")
    out = tmp_path / "hf"
    if existing:  # an earlier export stays as it was
        exports.export(str(root), "hf", str(out))
    before = tree(out) if existing else None
    real = pq.ParquetWriter.write_table
    calls = []

    def failing(self, table, row_group_size=None):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, table, row_group_size=row_group_size)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)  # reaches this process only: --workers 1
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(out), "--workers", "1"])
    assert one_error_line(r) == "Error: No space left on device"
    assert (tree(out) == before) if existing else not out.exists()


def test_without_the_libraries_export_says_how_to_install_them(tmp_path, monkeypatch):
    import importlib.util

    root = gen(tmp_path / "d", "cumsum")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "datasets" else real(name, *a))
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(tmp_path / "hf")])
    assert one_error_line(r) == 'Error: --format hf needs datasets: pip install "longsynth[hf]"'
    assert not (tmp_path / "hf").exists()


def test_nothing_else_imports_the_hf_libraries():
    code = ("import sys, longsynth, longsynth.store, longsynth.exports, longsynth.cli.main\n"
            "longsynth.registry.all_tasks()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('datasets', 'pyarrow', 'huggingface_hub')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_formats_registry_and_unknown_format(tmp_path):
    assert exports.formats_for("listops") == ["lra-tsv", "hf"]
    assert exports.formats_for("pathfinder-seg") == ["dlr-pathfinder", "hf"]
    assert exports.formats_for("cumsum") == ["hf"]
    assert exports.formats_for("pathfinder") == ["lra-pathfinder", "hf"]
    root = gen(tmp_path / "d", "cumsum")
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "lra-tsv", "--out", str(tmp_path / "t")])
    assert one_error_line(r) == "Error: cumsum cannot be exported as 'lra-tsv'; formats: hf"
    r = CliRunner().invoke(cli, ["export", str(root), "--format", "csv", "--out", str(tmp_path / "t")])
    assert one_error_line(r) == ("Error: format: unknown format 'csv'; "
                                 "choose from lra-tsv, dlr-pathfinder, lra-pathfinder, hf")


def test_the_card_of_an_authors_stream_says_what_its_rows_are(tmp_path):
    """An `--authors-stream` dataset's rows follow from every row before them: its card must not call each
    a function of its index, as the card of longsynth's own law does."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    store.generate(str(ours), "mqar", dict(input_seq_len=64), seed=0, splits={"train": 8, "test": 4}, workers=1)
    store.generate(str(theirs), "mqar", dict(input_seq_len=64), seed=0, splits={"train": 8, "test": 4}, workers=1,
                   authors_stream=True)
    exports.export(str(ours), "hf", str(tmp_path / "ours-hf"))
    exports.export(str(theirs), "hf", str(tmp_path / "theirs-hf"))
    mine = (tmp_path / "ours-hf" / "README.md").read_text()
    their = (tmp_path / "theirs-hf" / "README.md").read_text()
    assert "pure function of (task, parameters, seed, split, index)" in mine
    assert "pure function" not in their and "authors' own stream" in their and "no row can be drawn alone" in their
