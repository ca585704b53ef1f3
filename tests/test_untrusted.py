"""A dataset from a stranger: never run code, never touch a file outside it, never serve a
swapped shard (docs/format.md, "Trust"). One section per finding of the hostile test, in
its order; each attack ends in one line or correct data."""
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import store
from longsynth.cli.main import cli

P = {"L": 32}


def gen(root, **kw):
    kw.setdefault("num_samples", 120)
    kw.setdefault("shard_size", 40)
    kw.setdefault("workers", 1)
    kw.setdefault("seed", 11)
    return store.generate(str(root), "cumsum", P, **kw)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error_line(result):
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.output
    return lines[0]


def edit_manifest(root, change):
    path = os.path.join(root, "manifest.json")
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    change(m)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(m, f)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A small finished dataset; tests copy it before they attack it."""
    root = tmp_path_factory.mktemp("clean") / "d"
    gen(root)
    return root


@pytest.fixture
def ds(clean, tmp_path):
    root = tmp_path / "d"
    shutil.copytree(clean, root)
    return root


# ---------------------------------------------------------------- 1. hf export deletes listed files


@pytest.mark.parametrize("listed", ["/ABS/victim.txt", "../x/victim.txt", "data/../../x/victim.txt", "victim.txt"])
def test_hf_export_never_deletes_a_file_its_record_lists(ds, tmp_path, listed):
    pytest.importorskip("datasets")
    (tmp_path / "x").mkdir()
    victims = [tmp_path / "victim.txt", tmp_path / "x" / "victim.txt", tmp_path / "o" / "victim.txt"]
    out = tmp_path / "o"
    out.mkdir()
    for v in victims:
        v.write_text("mine")
    listed = listed.replace("/ABS", str(tmp_path))
    (out / "longsynth.json").write_text(json.dumps({"export": {"format": "hf", "files": [listed, "README.md"]}}))
    line = one_error_line(invoke("export", ds, "--format", "hf", "--out", out))
    assert "export.files[0]" in line and "is not a file an hf export writes" in line
    assert all(v.read_text() == "mine" for v in victims)


# ---------------------------------------------------------------- 2. a .lock that is a link


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "hard link"])
def test_lock_that_is_a_link_is_refused_and_its_target_untouched(ds, tmp_path, kind):
    victim = tmp_path / "victim.txt"
    if kind != "dangling symlink":
        victim.write_text("mine")
    if kind == "hard link":
        os.link(victim, ds / ".lock")
    else:
        os.symlink(victim, ds / ".lock")
    line = one_error_line(invoke("gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1,
                                 "--out", ds))
    assert ".lock" in line and ("symbolic link" in line or "hard links" in line)
    if kind == "dangling symlink":
        assert not victim.exists()
    else:
        assert victim.read_text() == "mine"


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
    from longsynth.models_ref.model import ModelConfig
    from longsynth.models_ref.trainer import TrainConfig, load_model, train

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

    from longsynth import fidelity
    from longsynth.errors import LongsynthError

    root = tmp_path / "ds"
    store.generate(str(root), "pathfinder-seg", {"size": 128}, seed=4, splits={"train": 2}, shard_size=2, workers=1)
    out = tmp_path / "dlr"
    store.export(str(root), "dlr-pathfinder", str(out))
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
