"""import-hf: synthseq/flipflop's parquet files (docs/tasks/flipflop.md, "The Hub's data") written as
datasets of ours without changing a row; the three layouts a download leaves, their SHA-256 records,
and every refusal before anything is written. The files here are made in the Hub's layout (a string
column `text`, two characters an instruction) from our own generator, so each imported row has a
known answer."""
import hashlib
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import hubimport, store
from longsynth.cli.main import cli
from longsynth.generators.flipflop import hub
from longsynth.generators.flipflop.flipflop import law, law_of_rows

T = 16
REV = "1" * 40
# the Hub's file -> (rows, p_ignore, seed and split of our generator that makes them)
FILES = {"train-00000-of-00002-b4ca32.parquet": (130, 0.8, 0, "train"),
         "train-00001-of-00002-bf5f77.parquet": (70, 0.8, 1, "train"),
         "val-00000-of-00001-fec0c0.parquet": (60, 0.8, 0, "val"),
         "val_dense-00000-of-00001-cd5763.parquet": (50, 0.1, 0, "test"),
         "val_sparse-00000-of-00001-1fcf65.parquet": (200, 0.98, 0, "test")}


def tokens_of(rows):
    """The 2T tokens of our rows: the inputs, then the last read's bit."""
    return np.concatenate([rows["inputs"], rows["targets"][:, -1:]], axis=1)


def texts(n, p, seed, split):
    rows = longsynth.batch("flipflop", 0, n, seed=seed, split=split, T=T, p_ignore=p)
    return ["".join(hub.CHARS[t] for t in row) for row in tokens_of(rows)]


def write(path, strings):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"text": pa.array(strings, pa.string())}), path)


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A folder holding data/*.parquet and nothing that records their SHA-256."""
    root = tmp_path_factory.mktemp("hub") / "plain"
    for name, (n, p, seed, split) in FILES.items():
        write(str(root / "data" / name), texts(n, p, seed, split))
    return root


def cache_of(plain, where):
    """The Hub cache's layout of ``plain``: blobs named by SHA-256, a snapshot of links to them, refs/main."""
    repo = where / "datasets--synthseq--flipflop"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / REV / "data").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REV)
    for name in FILES:
        src = plain / "data" / name
        shutil.copy(src, repo / "blobs" / sha(src))
        os.symlink(os.path.join("..", "..", "..", "blobs", sha(src)), repo / "snapshots" / REV / "data" / name)
    return repo


def local_dir_of(plain, where, etag=None):
    """A `--local-dir` download of ``plain``: the files, and huggingface_hub's metadata beside them."""
    root = where / "local"
    shutil.copytree(plain, root)
    meta = root / ".cache" / "huggingface" / "download" / "data"
    meta.mkdir(parents=True)
    for name in FILES:
        (meta / f"{name}.metadata").write_text(f"{REV}\n{etag or sha(root / 'data' / name)}\n1700000000.0\n")
    return root


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error(r):
    lines = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert r.exit_code != 0 and len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


def test_rows_are_the_files_rows_in_order_and_verify_deep_checks_them(plain, tmp_path, monkeypatch):
    monkeypatch.setattr(hubimport, "READ_ROWS", 23)  # batches and shards that straddle each other and the files
    r = run("import-hf", "synthseq/flipflop", plain, "--out", tmp_path / "out", "--shard-size", 37)
    assert r.exit_code == 0, r.output
    assert "checked against nothing" in r.output  # no record beside plain files
    assert sorted(os.listdir(tmp_path / "out")) == ["ffl-0.1", "ffl-0.8", "ffl-0.98"]
    want = {("ffl-0.8", "train"): [("train", 130, 0.8, 0), ("train", 70, 0.8, 1)],
            ("ffl-0.8", "val"): [("val", 60, 0.8, 0)], ("ffl-0.1", "test"): [("test", 50, 0.1, 0)],
            ("ffl-0.98", "test"): [("test", 200, 0.98, 0)]}
    for (folder, split), parts in want.items():
        ds = longsynth.open(str(tmp_path / "out" / folder))
        assert ds.manifest["params"] == {"T": T, "p_ignore": parts[0][2], "preset": None}
        got = {k: np.stack([ds[split][i][k] for i in range(len(ds[split]))]) for k in ("inputs", "targets")}
        expect = [longsynth.batch("flipflop", 0, n, seed=s, split=sp, T=T, p_ignore=p) for sp, n, p, s in parts]
        for k in ("inputs", "targets"):
            assert np.array_equal(got[k], np.concatenate([e[k] for e in expect])), (folder, split, k)
        m = json.load(open(tmp_path / "out" / folder / "manifest.json"))
        assert m["stream"] == "imported" and m["source"]["repo"] == "synthseq/flipflop"
        assert all(not f["checked"] and len(f["sha256"]) == 64 for f in m["source"]["files"])
        ds.close()
    r = run("verify", tmp_path / "out" / "ffl-0.8", "--deep")
    assert r.exit_code == 0 and "checked against flipflop's definition" in r.output, r.output
    r = run("info", tmp_path / "out" / "ffl-0.98")
    assert r.exit_code == 0 and "imported from synthseq/flipflop (1 file(s))" in r.output, r.output
    card = (tmp_path / "out" / "ffl-0.8" / "README.md").read_text()
    assert "train-00001-of-00002-bf5f77.parquet" in card and "No seed regenerates them" in card
    assert "Seed 0" not in card and "Imported; samples: train 200, val 60" in card  # no seed made these rows
    r = run("export", tmp_path / "out" / "ffl-0.1", "--format", "hf", "--out", tmp_path / "hf")
    assert r.exit_code == 0, r.output
    hf_card = (tmp_path / "hf" / "README.md").read_text()
    assert "No seed regenerates them" in hf_card and "Seed 0" not in hf_card


def test_a_rerun_resumes_and_another_source_needs_overwrite(plain, tmp_path):
    assert run("import-hf", "synthseq/flipflop", plain, "--out", tmp_path / "o").exit_code == 0
    before = {f: os.stat(tmp_path / "o" / "ffl-0.8" / f).st_mtime_ns for f in os.listdir(tmp_path / "o" / "ffl-0.8")
              if f.endswith(".h5")}
    r = run("import-hf", "synthseq/flipflop", plain, "--out", tmp_path / "o")
    assert r.exit_code == 0 and "already complete" in r.output, r.output
    assert before == {f: os.stat(tmp_path / "o" / "ffl-0.8" / f).st_mtime_ns for f in before}
    other = _edited(plain, tmp_path, "val-00000-of-00001-fec0c0.parquet", lambda s: s.pop())  # a new revision
    assert "--overwrite" in one_error(run("import-hf", "synthseq/flipflop", other, "--out", tmp_path / "o"))
    r = run("import-hf", "synthseq/flipflop", other, "--out", tmp_path / "o", "--overwrite")
    assert r.exit_code == 0 and json.load(open(tmp_path / "o" / "ffl-0.8" / "manifest.json"))["counts"]["val"] == 59


@pytest.mark.parametrize("layout", ["cache", "snapshot", "local-dir"])
def test_the_hubs_sha256_records_are_checked(plain, tmp_path, layout):
    if layout == "local-dir":
        src = local_dir_of(plain, tmp_path)
    else:
        src = cache_of(plain, tmp_path)
        src = src if layout == "cache" else src / "snapshots" / REV
    r = run("import-hf", "synthseq/flipflop", src, "--out", tmp_path / "out")
    assert r.exit_code == 0 and "checked against nothing" not in r.output, r.output
    m = json.load(open(tmp_path / "out" / "ffl-0.8" / "manifest.json"))
    assert m["source"]["revision"] == REV and all(f["checked"] for f in m["source"]["files"])
    assert [f["sha256"] for f in m["source"]["files"]] == [sha(plain / "data" / n) for n in FILES if "train" in n or
                                                           n.startswith("val-")]


def test_a_file_unlike_its_record_is_refused_before_anything_is_written(plain, tmp_path):
    repo = cache_of(plain, tmp_path)
    blob = os.path.realpath(repo / "snapshots" / REV / "data" / "val_dense-00000-of-00001-cd5763.parquet")
    write(blob, texts(50, 0.1, 9, "test"))  # another draw under the old name
    assert "is not the Hub's" in one_error(run("import-hf", "synthseq/flipflop", repo, "--out", tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    local = local_dir_of(plain, tmp_path, etag="0" * 64)
    assert "is not the Hub's" in one_error(run("import-hf", "synthseq/flipflop", local, "--out", tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_link_out_of_the_cache_is_not_followed(plain, tmp_path):
    repo = cache_of(plain, tmp_path)
    link = repo / "snapshots" / REV / "data" / "val-00000-of-00001-fec0c0.parquet"
    os.remove(link)
    os.symlink(plain / "data" / "val-00000-of-00001-fec0c0.parquet", link)
    assert "not followed" in one_error(run("import-hf", "synthseq/flipflop", repo, "--out", tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def _edited(plain, tmp_path, name, edit):
    src = tmp_path / "src"
    shutil.copytree(plain, src)
    path = src / "data" / name
    strings = pq.read_table(path).column("text").to_pylist()
    edit(strings)
    write(str(path), strings)
    return src


def _flip_last_read(strings):
    s = strings[41]
    strings[41] = s[:-1] + ("1" if s[-1] == "0" else "0")


@pytest.mark.parametrize("name, edit, said", [
    ("train-00001-of-00002-bf5f77.parquet", _flip_last_read, "row 41: the read at instruction 15 does not return"),
    ("val-00000-of-00001-fec0c0.parquet", lambda s: s.__setitem__(3, "r" + s[3][1:]),
     "row 3: the first instruction is not a write"),
    ("val-00000-of-00001-fec0c0.parquet", lambda s: s.__setitem__(5, s[5][:-2] + "i0"),
     "row 5: the last instruction is not a read"),
    ("val-00000-of-00001-fec0c0.parquet", lambda s: s.__setitem__(8, s[8][:4] + "x" + s[8][5:]),
     "row 8: character 'x' at 4"),
    ("val-00000-of-00001-fec0c0.parquet", lambda s: s.__setitem__(9, s[9] + "w1"), "row 9: 34 characters"),
    ("train-00000-of-00002-b4ca32.parquet", lambda s: s.__setitem__(0, "w1r"), "row 0: strings of 3 characters"),
    ("train-00000-of-00002-b4ca32.parquet", lambda s: s.__setitem__(0, None), "row 0: no string (a null)"),
    ("val-00000-of-00001-fec0c0.parquet", lambda s: s.__setitem__(7, None), "row 7:"),
    ("val-00000-of-00001-fec0c0.parquet", lambda s: s.__setitem__(2, "w0w1" + s[2][4:].replace("w", "0", 1)),
     "row 2: something other than"),
])
def test_a_row_that_is_no_flipflop_string_is_named_and_nothing_is_written(plain, tmp_path, name, edit, said):
    src = _edited(plain, tmp_path, name, edit)
    line = one_error(run("import-hf", "synthseq/flipflop", src, "--out", tmp_path / "out"))
    assert f"{name}" in line and said in line and "nothing written" in line, line
    assert not (tmp_path / "out").exists()


def test_a_file_drawn_at_another_p_is_refused(plain, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(plain, src)
    write(str(src / "data" / "val_sparse-00000-of-00001-1fcf65.parquet"), texts(200, 0.8, 0, "test"))
    line = one_error(run("import-hf", "synthseq/flipflop", src, "--out", tmp_path / "out"))
    assert "standard deviations from FFL(0.98)" in line and "val_sparse" in line, line
    assert not (tmp_path / "out").exists()


def test_a_split_in_part_and_a_foreign_file_are_refused(plain, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(plain, src)
    os.remove(src / "data" / "train-00001-of-00002-bf5f77.parquet")
    assert "a split is imported whole" in one_error(run("import-hf", "synthseq/flipflop", src, "--out",
                                                        tmp_path / "out"))
    write(str(src / "data" / "train-00001-of-00002-bf5f77.parquet"), texts(70, 0.8, 1, "train"))
    write(str(src / "data" / "test-00000-of-00001-aa.parquet"), texts(5, 0.8, 1, "test"))
    assert "not a file of synthseq/flipflop's splits" in one_error(run("import-hf", "synthseq/flipflop", src, "--out",
                                                                       tmp_path / "out"))
    (src / "data" / "test-00000-of-00001-aa.parquet").write_bytes(b"PAR1 not a parquet file")
    os.rename(src / "data" / "test-00000-of-00001-aa.parquet", src / "data" / "val-00000-of-00001-fec0c0.parquet")
    assert "not a readable parquet file" in one_error(run("import-hf", "synthseq/flipflop", src, "--out",
                                                          tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert "none of the Hub datasets" not in run("import-hf", "someone/else", src, "--out", tmp_path / "out").output
    assert run("import-hf", "someone/else", src, "--out", tmp_path / "out").exit_code == 2  # click's choice


def law_naive(tok):
    """The definition, one instruction after another: (row, what) of the first string that breaks it."""
    for i, row in enumerate(tok.tolist()):
        last = None
        for t in range(len(row) // 2):
            op, bit = row[2 * t], row[2 * t + 1]
            if op not in (0, 1, 2) or (t == 0 and op != 0) or (t == len(row) // 2 - 1 and op != 1) or bit not in (3, 4):
                return i, "shape"
            if op == 0:
                last = bit
            elif op == 1 and bit != last:
                return i, "read"
    return None


def test_the_law_agrees_with_the_definition_step_by_step():
    rng = np.random.default_rng(0)
    good = tokens_of(longsynth.batch("flipflop", 0, 300, seed=3, T=12, p_ignore=0.5)).astype(np.int64)
    assert law(good) is None and law_naive(good) is None
    for _ in range(300):
        tok = good.copy()
        i, j = rng.integers(len(tok)), rng.integers(tok.shape[1])
        tok[i, j] = rng.integers(5)
        fast, slow = law(tok), law_naive(tok)
        assert (fast is None) == (slow is None), (i, j, fast, slow)
        if fast is not None:
            assert fast[0] == slow[0] == i
            assert ("does not return" in fast[1]) == (slow[1] == "read"), (fast, slow)


def test_verify_deep_fails_on_stored_rows_that_break_the_law(tmp_path):
    """A dataset whose shards and manifest agree but whose rows are no flip-flop strings (written past the
    import's check): verify --deep names the row; the same rows unbroken pass."""
    good = longsynth.batch("flipflop", 0, 40, seed=2, T=T, p_ignore=0.8)
    source = {"repo": "synthseq/flipflop", "revision": None,
              "files": [{"name": "x.parquet", "split": "test", "hub_split": "val", "rows": 40, "sha256": "0" * 64,
                         "checked": False}]}
    row = next(i for i in range(40) if (good["targets"][i] != -100).sum() >= 2)  # a read before the last
    for name, broken in (("good", None), ("last", -1), ("middle", 0)):
        rows = {k: v.copy() for k, v in good.items()}
        if broken is not None:
            reads = np.flatnonzero(rows["targets"][row] != -100)
            rows["targets"][row, reads[broken]] = 7 - rows["targets"][row, reads[broken]]  # bit 3 <-> 4
        store.build.write_rows(str(tmp_path / name), "flipflop", {"T": T, "p_ignore": 0.8}, {"test": 40}, source,
                               lambda split, start, n, rows=rows: {k: v[start:start + n] for k, v in rows.items()})
    assert store.verify(str(tmp_path / "good"), deep=True) == []
    # the last read's bit is the string's last token: the string breaks the law; another's is a target alone
    assert store.verify(str(tmp_path / "last"), deep=True) == [
        f"test[{row}]: the read at instruction {T - 1} does not return the last bit written (the task's definition)"]
    assert store.verify(str(tmp_path / "middle"), deep=True) == [
        f"test[{row}]: targets other than the reads' bits (the task's definition)"]
    assert law_of_rows(None, good) is None


@pytest.mark.parametrize("edit, field", [
    (lambda m: m.pop("source"), "source"),
    (lambda m: m["source"]["files"][0].__setitem__("rows", 39), "source.files"),
    (lambda m: m["source"]["files"][0].__setitem__("sha256", "xyz"), "source.files[0].sha256"),
    (lambda m: m["source"]["files"][0].__setitem__("split", "train"), "source.files[0].split"),
    (lambda m: m.__setitem__("stream", "longsynth"), "source"),
    # names reach the dataset's cards and the terminal: markup and escapes are refused
    (lambda m: m["source"]["files"][0].__setitem__("name", "x`<img src=x onerror=alert(1)>.parquet"),
     "source.files[0].name"),
    (lambda m: m["source"].__setitem__("repo", "a/b\x1b[31m"), "source.repo"),
    (lambda m: m["source"]["files"][0].__setitem__("hub_split", "val | x"), "source.files[0].hub_split"),
])
def test_a_malformed_source_is_one_line_naming_its_field(tmp_path, edit, field):
    rows = longsynth.batch("flipflop", 0, 40, seed=2, T=T, p_ignore=0.8)
    source = {"repo": "synthseq/flipflop", "revision": None,
              "files": [{"name": "x.parquet", "split": "test", "hub_split": "val", "rows": 40, "sha256": "0" * 64,
                         "checked": False}]}
    store.build.write_rows(str(tmp_path / "d"), "flipflop", {"T": T, "p_ignore": 0.8}, {"test": 40}, source,
                           lambda split, start, n: {k: v[start:start + n] for k, v in rows.items()})
    path = tmp_path / "d" / "manifest.json"
    m = json.load(open(path))
    edit(m)
    path.write_text(json.dumps(m))
    line = one_error(run("info", tmp_path / "d"))
    assert f"'{field}'" in line or f" {field}" in line, line
