"""A dataset from a stranger, its contents: never run code, never serve a swapped shard, never
let an edited manifest or crafted sample drive a kernel out of bounds (docs/format.md,
"Trust"). Sections 3, 4, 6 and 8 of the hostile test's findings, in its order, and the
fuzz test; each attack ends in one line or correct data. Fixtures: untrusted_fixtures.py."""
import copy
import json
import os
import shutil

import numpy as np
import pytest

import longsynth
from longsynth import exports, store

from untrusted_fixtures import *  # noqa: F403 (its __all__: the fixtures clean, ds and listops_subtrees)
from untrusted_fixtures import P, edit_manifest, gen, invoke, one_error_line, relist


# ---------------------------------------------------------------- 3. checkpoints and pickles run no code


class _Payload:
    """Pickles as a call of os.system: loading it with a plain unpickler runs a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_checkpoints_load_without_running_code(tmp_path):
    torch = pytest.importorskip("torch")
    from longsynth.errors import LongsynthError
    from longsynth.models_ref.models.stack import ModelConfig
    from longsynth.models_ref.training.trainer import TrainConfig, train
    from longsynth.models_ref.training.checkpoints import load_model

    marker = tmp_path / "ran"
    cfg = ModelConfig(d_input=1, d_output=2, H=4, N=4, n_layers=1)
    tc = TrainConfig(steps=2, lr=1e-3, eval_every=1, seed=0)
    data = lambda s: (torch.randn(2, 8, 1), torch.randn(2, 8, 2))  # noqa: E731
    val = lambda: [data(0)]  # noqa: E731
    train(cfg, tc, data, val, checkpoint_dir=str(tmp_path / "c"), stop_at_step=1)
    ck = torch.load(tmp_path / "c" / "last.pt", weights_only=True)  # what longsynth writes is plain data
    evil = dict(ck, history=_Payload(marker))
    torch.save(evil, tmp_path / "c" / "last.pt")
    with pytest.raises(LongsynthError, match=r"last.pt: not loaded: it holds posix.system, and loading it could run"):
        load_model(str(tmp_path / "c" / "last.pt"))
    with pytest.raises(LongsynthError, match="could run code"):
        train(cfg, tc, data, val, resume=str(tmp_path / "c" / "last.pt"))
    torch.save(ck, tmp_path / "c" / "last.pt")  # a clean last.pt beside a poisoned best.pt
    best = torch.load(tmp_path / "c" / "best.pt", weights_only=True)
    torch.save(dict(best, model=_Payload(marker)), tmp_path / "c" / "best.pt")
    with pytest.raises(LongsynthError, match=r"best.pt: not loaded"):
        train(cfg, tc, data, val, resume=str(tmp_path / "c" / "last.pt"))
    assert not marker.exists()


def test_authors_pickles_are_read_with_their_types_only(tmp_path):
    import pickle

    from longsynth.generators.pathfinder import fidelity
    from longsynth.errors import LongsynthError

    root = tmp_path / "ds"
    store.generate(str(root), "pathfinder-seg", {"size": 128}, seed=4, splits={"train": 2}, shard_size=2, workers=1)
    out = tmp_path / "dlr"
    exports.export(str(root), "dlr-pathfinder", str(out))
    assert len(fidelity.read_authors(str(out))) == 2  # what the exporter (and the authors) write still reads
    marker = tmp_path / "ran"
    with open(out / "paths" / "0" / "sample_1.pkl", "wb") as f:
        pickle.dump({"segs": _Payload(marker)}, f)
    with pytest.raises(LongsynthError, match=r"path pickle holds posix.system, not one of the authors' types"):
        fidelity.read_authors(str(out))
    assert not marker.exists()
    np.save(out / "metadata" / "0.npy", np.array([["imgs/../../x", "sample_0.png", "0", "1"]]))
    with pytest.raises(LongsynthError, match=r"does not name imgs/<b> and sample_<k>.png"):
        fidelity.read_authors(str(out))


# ------------------------------------------------------- 4. an edited manifest never drives a kernel out of bounds


def test_lowered_max_length_in_the_manifest_is_one_line(listops_subtrees, tmp_path):
    root = tmp_path / "ls"
    shutil.copytree(listops_subtrees, root)
    edit_manifest(root, lambda m: m["params"].update(max_length=25))
    assert invoke("export", listops_subtrees, "--format", "lra-tsv", "--out", tmp_path / "ok").exit_code == 0
    line = one_error_line(invoke("export", root, "--format", "lra-tsv", "--out", tmp_path / "tsv"))
    assert "shard holds other task parameters than the manifest" in line
    assert not (tmp_path / "tsv").exists()
    r = invoke("verify", root)
    assert "problem(s) found" in one_error_line(r) and "train-00000.h5: shard holds other task parameters" in r.output


@pytest.mark.parametrize("crafted", ["token outside the vocabulary", "unbalanced brackets", "negative target",
                                     "longer than max_length"])
def test_tsv_kernel_checks_bounds_on_crafted_samples(listops_subtrees, crafted):
    from longsynth.exports import lra_tsv

    s = dict(longsynth.open(listops_subtrees)["train"][0])
    tokens = s["inputs"].astype(np.int64)
    if crafted == "token outside the vocabulary":
        tokens[3] = 10**6
    elif crafted == "unbalanced brackets":
        tokens = np.concatenate([tokens, np.full(5, lra_tsv.CLOSE, dtype=np.int64)])
    elif crafted == "negative target":
        s["root"] = np.int64(-3)
    else:  # a row far longer than any buffer sized from a parameter
        tokens = np.tile(tokens, 50)
        s["targets"], s["heights"], s["operators"] = np.tile(s["targets"], 50), s["heights"], s["operators"]
    buf = np.empty(13 * tokens.shape[0] + 128, dtype=np.uint8)
    if crafted == "longer than max_length":
        n = lra_tsv._row(s, tokens, True, 0, buf)  # sized from the row: it fits
        assert buf[n - 2 : n].tolist() == [13, 10]
        return
    with pytest.raises((IndexError, ValueError)):
        lra_tsv._row(s, tokens, True, 0, buf)


def test_shard_declaring_more_data_than_it_stores_is_refused(ds):
    """A shard (and manifest) claiming 10**12 samples in datasets that store nothing: a
    reader must not allocate what the shape claims."""
    import h5py

    n = 10**12
    path = ds / "train-00000.h5"
    with h5py.File(path, "r+") as f:
        for name in list(f):
            dtype, inner = f[name].dtype, f[name].shape[1:]
            del f[name]
            f.create_dataset(name, shape=(n,) + inner, dtype=dtype)  # contiguous, never written
        f.attrs["count"] = n

    def change(m):
        m["counts"]["train"] = m["splits"]["train"]["count"] = n
        m["shard_size"] = n
        m["splits"]["train"]["shards"] = m["splits"]["train"]["shards"][:1]
        m["splits"]["train"]["shards"][0]["count"] = n

    edit_manifest(ds, change)
    relist(ds, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match=r"stores 0 bytes, its shape needs"):
        longsynth.open(ds)["train"][0]


def test_ragged_offsets_claiming_terabytes_are_one_line(listops_subtrees, tmp_path):
    """Offsets pointing 10**12 rows into a chunked values dataset that stores nothing: the
    reader fails with one line instead of a MemoryError traceback."""
    import h5py

    root = tmp_path / "ls"
    shutil.copytree(listops_subtrees, root)
    with h5py.File(root / "train-00000.h5", "r+") as f:
        g = f["inputs"]
        dtype, inner, chunks = g["values"].dtype, g["values"].shape[1:], g["values"].chunks
        del g["values"]
        g.create_dataset("values", shape=(10**12,) + inner, maxshape=(None,) + inner, dtype=dtype, chunks=chunks)
        offsets = g["offsets"][()]
        offsets[1:] = 10**12
        g["offsets"][...] = offsets
    relist(root, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match="train-00000.h5: unreadable"):
        longsynth.open(root)["train"][0]
    with pytest.raises(store.DamagedDataError, match="train-00000.h5: "):
        for _ in longsynth.open(root)["train"].iter_samples():
            pass


# ---------------------------------------------------------------- 6. swapped shards are never served


def test_same_size_shard_of_another_range_is_refused(ds):
    a, b = ds / "train-00000.h5", ds / "train-00001.h5"
    os.rename(a, ds / "tmp.h5")
    os.rename(b, a)
    os.rename(ds / "tmp.h5", b)
    relist(ds, "train-00000.h5")
    relist(ds, "train-00001.h5")
    with pytest.raises(store.DamagedDataError, match=r"train-00000.h5: shard holds start 40, the manifest says 0"):
        longsynth.open(ds)["train"][0]
    pytest.importorskip("torch")
    from longsynth.torch import ShardDataset

    with pytest.raises(store.DamagedDataError, match="shard holds start 40"):
        ShardDataset(ds, "train")[1]


def test_same_size_shard_of_another_seed_is_refused(ds, tmp_path):
    gen(tmp_path / "other", seed=12)
    shutil.copy(tmp_path / "other" / "train-00001.h5", ds / "train-00001.h5")
    relist(ds, "train-00001.h5")
    with pytest.raises(store.DamagedDataError, match=r"train-00001.h5: shard of generation \w+, the manifest"):
        longsynth.open(ds)["train"][41]


def test_shard_with_another_dtype_is_refused(ds):
    import h5py

    path = ds / "train-00000.h5"
    with h5py.File(path, "r+") as f:
        data = f["inputs"][()]
        del f["inputs"]
        f.create_dataset("inputs", data=data.view(np.int32))
    relist(ds, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match=r"inputs is int32 \(40, 32, 1\), expected float32"):
        longsynth.open(ds)["train"][0]
    assert any("inputs is int32" in p for p in store.verify(str(ds)))


def test_reader_notices_a_dataset_regenerated_under_it(ds):
    reader = longsynth.open(ds)["train"]
    first = reader[0]["inputs"].copy()
    gen(ds, seed=12, overwrite=True)
    assert np.array_equal(reader[0]["inputs"], first)  # an open shard keeps its (seed-11) file
    assert np.array_equal(first, longsynth.sample("cumsum", 0, seed=11, **P)["inputs"])
    with pytest.raises(store.DamagedDataError, match="the dataset was regenerated or replaced; open it again"):
        reader[41]
    assert np.array_equal(longsynth.open(ds)["train"][41]["inputs"],
                          longsynth.sample("cumsum", 41, seed=12, **P)["inputs"])


def _as_legacy(root, keep_generation=False):
    """Shards and manifest as longsynth wrote them before identity attributes: strings as
    variable-length attributes, no generation id or task revision."""
    import h5py

    for name in sorted(e for e in os.listdir(root) if e.endswith(".h5")):
        with h5py.File(os.path.join(root, name), "r+") as f:
            for k in ("format", "task", "params", "split"):
                value = f.attrs[k].decode()
                del f.attrs[k]
                f.attrs[k] = value  # h5py writes a str as a variable-length string
            del f.attrs["generation"], f.attrs["task_revision"]
        relist(root, name)
    if not keep_generation:
        edit_manifest(root, lambda m: m.pop("generation"))


def test_dataset_of_before_identity_reads_with_the_weaker_check(ds, tmp_path):
    _as_legacy(ds)
    assert np.array_equal(longsynth.open(ds)["train"][41]["inputs"],
                          longsynth.sample("cumsum", 41, seed=11, **P)["inputs"])
    assert store.verify(str(ds), deep=True) == []
    gen(tmp_path / "other", seed=12)
    _as_legacy(tmp_path / "other")
    shutil.copy(tmp_path / "other" / "train-00001.h5", ds / "train-00001.h5")
    relist(ds, "train-00001.h5")
    with pytest.raises(store.DamagedDataError, match=r"shard holds seed 12, the manifest says 11"):
        longsynth.open(ds)["train"][41]


def test_rerunning_gen_gives_a_dataset_of_before_identity_its_identity(ds):
    import h5py

    _as_legacy(ds)
    gen(ds)
    assert "generation" in json.loads((ds / "manifest.json").read_text())
    with h5py.File(ds / "train-00000.h5", "r") as f:
        assert f.attrs.get_id("task").dtype.kind == "S" and "generation" in f.attrs
    assert store.verify(str(ds)) == []


def test_old_shard_under_a_new_manifest_is_refused(ds):
    _as_legacy(ds, keep_generation=True)
    with pytest.raises(store.DamagedDataError, match="written before generation ids, under a manifest that has one"):
        longsynth.open(ds)["train"][0]


def test_negative_start_is_refused_by_readers_and_resume(ds):
    edit_manifest(ds, lambda m: m["splits"]["train"]["shards"][0].update(start=-5))
    with pytest.raises(store.LongsynthError, match=r"splits.train.shards\[0\].start: must be at least 0, got -5"):
        longsynth.open(ds)
    line = one_error_line(invoke("gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1,
                                 "--out", ds))
    assert "splits.train.shards[0].start" in line


# ---------------------------------------------------------------- 8. malformed manifests: one line naming the field


MALFORMED = {
    "a list": (lambda m: [1, 2], "manifest: expected an object"),
    "no splits": (lambda m: m.pop("splits"), "splits: missing"),
    "no params": (lambda m: m.pop("params"), "params: missing"),
    "no versions": (lambda m: m.pop("versions"), "versions: missing"),
    "seed a string": (lambda m: m.update(seed="x"), "seed: expected an integer, got a string"),
    "params a list": (lambda m: m.update(params=[1]), "params: expected an object, got a list"),
    "param of wrong type": (lambda m: m["params"].update(L=[4]), "params.L: expected a number"),
    "count 1e30": (lambda m: m["counts"].update(train=1e30), "counts.train: expected an integer, got a number"),
    "huge count": (lambda m: (m["counts"].update(train=10**30), m["splits"]["train"].update(count=10**30)),
                   "counts.train: must be at most"),
    "count over shards": (lambda m: (m["counts"].update(train=300), m["splits"]["train"].update(count=300)),
                          "splits.train.shards: 3 shards cover 300 samples"),
    "shard count": (lambda m: m["splits"]["train"]["shards"][1].update(count=39), "splits.train.shards[1].count"),
    "sha not hex": (lambda m: m["splits"]["train"]["shards"][1].update(sha256="zz"), "splits.train.shards[1].sha256"),
    "unknown task": (lambda m: m.update(task="nope"), "task: unknown task 'nope'"),
    "keys edited": (lambda m: m["keys"]["inputs"].update(dtype="int32"), "keys.inputs"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED) + ["nested 100,000 deep"])
def test_malformed_manifest_is_one_line_naming_the_field(ds, case):
    path = ds / "manifest.json"
    if case == "nested 100,000 deep":
        path.write_text('{"format": "longsynth-shards", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
        field = "JSON nested more than"
    else:
        change, field = MALFORMED[case]
        m = json.loads(path.read_text())
        got = change(m)
        path.write_text(json.dumps(got if isinstance(got, list) else m))
    for cmd in ("verify", "info", "show"):
        line = one_error_line(invoke(cmd, ds) if cmd != "show" else invoke("show", ds, "--out", ds / "p.png"))
        assert field in line, line
    r = invoke("export", ds, "--format", "hf", "--out", ds.parent / "hf")
    assert field in one_error_line(r) and not (ds.parent / "hf").exists()


@pytest.mark.parametrize("bad", ["[1, 2]", '{"final": 3}', "{", "link"])
def test_invalid_or_linked_certificate_is_one_line_or_skipped(ds, tmp_path, bad):
    run = ds / "validation" / "dlr-1"
    run.mkdir(parents=True)
    if bad == "link":
        (tmp_path / "secret.json").write_text('{"final": {"secret": 1}}')
        os.symlink(tmp_path / "secret.json", run / "metrics.json")
    else:
        (run / "metrics.json").write_text(bad)
    r = invoke("info", ds)
    line = one_error_line(r)
    assert "metrics.json" in line and "secret" not in r.output


# ---------------------------------------------------------------- fuzz: random manifests and shard bytes

FUZZ_SECONDS = 12
ODD_VALUES = [None, -1, 0, 1, 7, 2**70, 1e30, -5.5, "", "x", "../x", "/etc/passwd", "/dev/zero", [], {}, True,
              [[[[1]]]], {"a": [1, {"b": None}]}]


def _json_paths(value, path=()):
    """Every (path, value) in a JSON tree, the root excluded."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield path + (k,), v
        yield from _json_paths(v, path + (k,))


def _mutate_manifest(root, rng, outside):
    def change(m):
        paths = list(_json_paths(m))
        path, _ = rng.choice(paths)
        parent = m
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES + [v for _, v in rng.sample(paths, 2)]))

    edit_manifest(root, change)


def _mutate_shard(root, rng, outside):
    shards = sorted(e for e in os.listdir(root) if e.endswith(".h5") and not os.path.islink(os.path.join(root, e)))
    if len(shards) < 2:
        return
    name = rng.choice(shards)
    path = os.path.join(root, name)
    kind = rng.choice(["flip", "flip", "flip metadata", "truncate", "swap", "link"])
    if kind.startswith("flip"):
        data = bytearray(open(path, "rb").read())
        span = min(len(data), 4096) if kind == "flip metadata" else len(data)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(span)] ^= 1 << rng.randrange(8)
        open(path, "wb").write(bytes(data))
    elif kind == "truncate":
        os.truncate(path, rng.randrange(os.path.getsize(path)))
    elif kind == "swap":
        other = os.path.join(root, rng.choice([e for e in shards if e != name]))
        tmp = os.path.join(root, "swap")
        os.rename(path, tmp)
        os.rename(other, path)
        os.rename(tmp, other)
    else:
        os.remove(path)
        os.symlink(outside, path)
    if rng.random() < 0.5 and kind != "link":  # a forger updates the manifest to match
        try:
            relist(root, name)
        except (KeyError, TypeError, AttributeError):  # an earlier mutation broke the records
            pass


def test_fuzz_one_line_or_correct_data_and_nothing_outside_touched(clean, tmp_path):
    """For FUZZ_SECONDS, a copy of a dataset gets a random manifest field or shard byte
    changed; opening it, reading every sample and verifying it give the clean dataset's
    samples or one LongsynthError line, never another exception, and the file outside it
    (the target of planted links) is never changed."""
    import random
    import time

    rng = random.Random(2024)
    outside = tmp_path / "outside.h5"
    shutil.copy(clean / "train-00000.h5", outside)
    before = (outside.read_bytes(), os.stat(outside).st_mtime_ns)
    truth = {s: [sp[i] for i in range(len(sp))] for s, sp in longsynth.open(clean).splits.items()}
    rounds = errors = 0
    deadline = time.monotonic() + FUZZ_SECONDS
    while time.monotonic() < deadline:
        root = tmp_path / "d"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(clean, root)
        for _ in range(rng.randint(1, 3)):
            (_mutate_manifest if rng.random() < 0.5 else _mutate_shard)(root, rng, outside)
        try:
            ds = longsynth.open(root)
            for split, sp in ds.splits.items():
                for i in range(len(sp)):
                    got = sp[i]
                    assert sorted(got) == sorted(truth[split][i])
                    for k in got:
                        assert np.array_equal(got[k], truth[split][i][k]), (split, i, k)
            ds.close()
            store.verify(str(root))
        except store.LongsynthError as e:
            assert "\n" not in str(e)
            errors += 1
        if rounds % 10 == 0:  # the command line: an OK line or one Error: line
            r = invoke("verify", root)
            assert "Traceback" not in r.output
            assert r.exit_code == 0 or (isinstance(r.exception, SystemExit)
                                        and sum(x.startswith("Error:") for x in r.output.splitlines()) == 1), r.output
        rounds += 1
    assert rounds >= 20 and errors >= rounds // 4, (rounds, errors)
    assert (outside.read_bytes(), os.stat(outside).st_mtime_ns) == before
    assert sorted(os.listdir(tmp_path)) == ["d", "outside.h5"]


# ---------------------------------------------------------------- checkpoints read as untrusted


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    """last.pt of a two-step run of a small reference model (H 4, one layer)."""
    torch = pytest.importorskip("torch")
    from longsynth.models_ref.models.stack import ModelConfig
    from longsynth.models_ref.training.trainer import TrainConfig, train

    folder = tmp_path_factory.mktemp("ck")
    data = lambda s: (torch.randn(2, 8, 1), torch.randn(2, 8, 2))  # noqa: E731
    train(ModelConfig(d_input=1, d_output=2, H=4, N=4, n_layers=1), TrainConfig(steps=2, lr=1e-3, eval_every=1),
          data, lambda: [data(0)], checkpoint_dir=str(folder))
    return folder / "last.pt"


@pytest.mark.parametrize("change,message", [
    (lambda ck: ck.update(model_config=["H", 4]), "not a model checkpoint: model_config: expected an object"),
    (lambda ck: ck.pop("model_config"), "not a model checkpoint: model_config: missing"),
    (lambda ck: ck.update(model="weights"), "not a model checkpoint: model: expected an object, got a string"),
    (lambda ck: ck["model"].update(extra=[1.0]), "not a model checkpoint: model.extra: expected a Tensor, got a list"),
    (lambda ck: ck["model_config"].update(colour="red"), "does not build a model"),
    (lambda ck: ck["model_config"].update(H=0), "does not build a model|implies"),
    (lambda ck: ck["model_config"].update(H=-5), "does not build a model|implies"),
    (lambda ck: ck["model_config"].update(H=30_000), "implies .* numbers, its weights hold"),
    (lambda ck: ck["model_config"].update(n_layers=10 ** 6), "n_layers 1,000,000, more than its"),
    (lambda ck: ck["model_config"].update(d_input=10 ** 9), "implies .* numbers, its weights hold"),
])
def test_a_checkpoint_whose_config_lies_is_one_line_before_anything_is_allocated(small_checkpoint, tmp_path, change,
                                                                                 message):
    """A stranger's checkpoint: its structure is checked and the model its config implies is sized on the meta
    device first (H 30,000 would allocate 14 GB, n_layers 10^6 build for minutes, d_input 10^9 ask for 4 TB)."""
    import resource
    import time

    import torch

    from longsynth.models_ref.training.checkpoints import CheckpointError, load_model

    ck = torch.load(small_checkpoint, weights_only=True)
    change(ck)
    path = tmp_path / "evil.pt"
    torch.save(ck, path)
    before, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
    with pytest.raises(CheckpointError, match=message) as err:
        load_model(str(path))
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert time.perf_counter() - t0 < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # KiB: nothing large allocated


def test_a_compressed_checkpoint_record_is_refused_before_it_inflates(small_checkpoint, tmp_path):
    """torch stores its records uncompressed; a DEFLATE record (1.5 MB inflating to 774 MB in the attack) is
    refused from the archive's directory, before torch reads it; so is a file that is no archive."""
    import zipfile

    from longsynth.models_ref.training.checkpoints import CheckpointError, load_checkpoint

    path = tmp_path / "deflated.pt"
    with zipfile.ZipFile(small_checkpoint) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    with pytest.raises(CheckpointError, match="is compressed .* torch stores them as they are"):
        load_checkpoint(str(path))
    (tmp_path / "plain.pt").write_bytes(b"not an archive" * 10)
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_checkpoint(str(tmp_path / "plain.pt"))
    load_checkpoint(str(small_checkpoint))  # what longsynth writes loads


def _chomsky_transformer_checkpoint(tmp_path, **arch):
    torch = pytest.importorskip("torch")
    from longsynth.models_ref.models.chomsky import ChomskyConfig, ChomskyModel

    cfg = ChomskyConfig(core="chomsky-transformer", I=2, O=2, vocab_size=4,
                        arch={"embedding_dim": 8, "num_layers": 1, "num_heads": 1})
    config = cfg.to_dict()
    config["arch"] = {**config["arch"], **arch}
    path = tmp_path / "c.pt"
    torch.save({"model_config": config, "model": ChomskyModel(cfg).state_dict()}, path)
    return path


def test_a_layer_count_nested_in_the_config_is_bounded_before_building(tmp_path, monkeypatch):
    """A Chomsky transformer's arch.num_layers 10^6 (30,000 built in 39 s) is refused before one layer is built,
    as a top-level n_layers is; the count sits under arch."""
    from longsynth.models_ref.layers import chomsky_transformer as ct
    from longsynth.models_ref.training.checkpoints import CheckpointError, load_model

    path, built = _chomsky_transformer_checkpoint(tmp_path, num_layers=10 ** 6), []
    monkeypatch.setattr(ct, "EncoderLayer", lambda *a, **k: built.append(1))
    with pytest.raises(CheckpointError, match=r"arch\.num_layers 1,000,000, more than its \d+ weight tensors"):
        load_model(str(path))
    assert built == []
    monkeypatch.undo()
    load_model(str(_chomsky_transformer_checkpoint(tmp_path)))  # its own count loads


def test_weights_that_store_less_than_their_shape_are_refused_before_building(small_checkpoint, tmp_path,
                                                                            monkeypatch):
    """numel() counts an expanded (stride-0) view of one number as its whole shape: a 4 kB file passed for the
    2.4e9 numbers its config implied. What is stored is counted instead, each storage once: an expanded weight,
    and weights that share one storage where the model holds them apart, are refused before the real build."""
    import torch

    from longsynth.models_ref.models.stack import Model, ModelConfig
    from longsynth.models_ref.training import checkpoints

    real, calls = checkpoints._model_of, []

    def model_of(config):  # the first build is on the meta device; a second one would allocate
        calls.append(1)
        assert len(calls) == 1, "the real model was built"
        return real(config)

    monkeypatch.setattr(checkpoints, "_model_of", model_of)
    cfg = ModelConfig(d_input=2, d_output=2, H=8, N=2 ** 20, n_layers=1)
    with torch.device("meta"):
        shapes = Model(cfg).state_dict()
    forged = {k: torch.zeros(1, dtype=v.dtype).expand(*v.shape) if v.ndim else torch.zeros((), dtype=v.dtype)
              for k, v in shapes.items()}
    torch.save({"model_config": cfg.to_dict(), "model": forged}, tmp_path / "expanded.pt")
    with pytest.raises(checkpoints.CheckpointError, match=r"has shape .* but stores 1 \(an expanded"):
        checkpoints.load_model(str(tmp_path / "expanded.pt"))

    ck = torch.load(small_checkpoint, weights_only=True)  # two layers whose second is the first's weights again
    ck["model_config"]["n_layers"] = 2
    ck["model"].update({k.replace("blocks.0.", "blocks.1."): v for k, v in ck["model"].items() if "blocks.0." in k})
    torch.save(ck, tmp_path / "shared.pt")
    calls.clear()
    with pytest.raises(checkpoints.CheckpointError, match="implies .* numbers, its weights store .* sharing"):
        checkpoints.load_model(str(tmp_path / "shared.pt"))
    monkeypatch.undo()
    checkpoints.load_model(str(small_checkpoint))  # what longsynth writes loads


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")  # torch says so as it makes one
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_weight_is_refused_in_one_line(tmp_path, layout):
    """A sparse weight has no one storage to count (untyped_storage() raised NotImplementedError): one
    CheckpointError naming the weight and its layout."""
    import torch

    from longsynth.models_ref.models.stack import Model, ModelConfig
    from longsynth.models_ref.training.checkpoints import CheckpointError, load_model

    cfg = ModelConfig(d_input=2, d_output=2, H=8, N=8, n_layers=1)
    weights = Model(cfg).state_dict()
    dense = weights["encoder.weight"]
    weights["encoder.weight"] = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()
    torch.save({"model_config": cfg.to_dict(), "model": weights}, tmp_path / "c.pt")
    with pytest.raises(CheckpointError, match=r"'encoder\.weight' is sparse_(coo|csr), not a dense tensor"):
        load_model(str(tmp_path / "c.pt"))
