"""Every writer stays inside its output folder (docs/format.md, "Trust"): no link inside
``--out`` is followed, files land under temporary names and are renamed, one command
holds a folder at a time and a failed one removes only what it made. One section per
writer that a hostile user broke: the output-directory module itself, export (every
format), evaluate (report, runs, certificates, checkpoints) and validate."""
import json
import os

import pytest

from longsynth import store
from longsynth.errors import LongsynthError
from longsynth.outdir import Folder
from conftest import run_evaluate as _evaluate
from untrusted_fixtures import invoke, one_error_line  # the hostile tests' one-line checks


@pytest.fixture
def victim(tmp_path):
    """A user's file and folder outside every output folder: they must never change."""
    v = tmp_path / "victim"
    v.mkdir()
    (v / "mine.txt").write_text("mine")
    return v


def untouched(victim):
    return sorted(os.listdir(victim)) == ["mine.txt"] and (victim / "mine.txt").read_text() == "mine"


# ---------------------------------------------------------------- the output directory


def test_a_link_anywhere_below_the_output_folder_is_refused(tmp_path, victim):
    out = tmp_path / "out"
    (out / "a").mkdir(parents=True)
    os.symlink(victim, out / "a" / "b")
    with pytest.raises(LongsynthError, match=r"a/b: is a symbolic link inside the output folder"):
        Folder(str(out)).sub("a", "b", "c").write_text("x.txt", "nope")
    with pytest.raises(LongsynthError, match="symbolic link"):
        Folder(str(out)).sub("a", "b").exists("mine.txt")
    os.symlink(victim / "mine.txt", out / "a" / "f.txt")
    with pytest.raises(LongsynthError, match="f.txt: is a link inside the output folder"):
        Folder(str(out)).sub("a").write_text("f.txt", "nope")
    with pytest.raises(LongsynthError, match="f.txt: is a symbolic link; not read"):
        Folder(str(out)).sub("a").read_json("f.txt")
    assert untouched(victim)


def test_files_are_written_under_a_temporary_name_never_through_a_planted_one(tmp_path, victim):
    out = Folder(str(tmp_path / "out")).sub("runs")
    out.make()
    os.symlink(victim / "mine.txt", os.path.join(out.path, ".r.json.tmp"))
    out.write_json("r.json", {"a": 1})
    assert out.read_json("r.json") == {"a": 1} and sorted(out.listdir()) == ["r.json"]
    with pytest.raises(RuntimeError):
        with out.create("half.bin") as f:
            f.write(b"partial")
            raise RuntimeError("the writer failed")
    assert sorted(out.listdir()) == ["r.json"] and untouched(victim)


def test_one_command_holds_a_folder_and_a_failed_one_removes_only_what_it_made(tmp_path):
    out = Folder(str(tmp_path / "new" / "out"))
    with out.hold():
        out.write_text("first.txt", "the first command's result")
        with pytest.raises(LongsynthError, match=rf"out is being written by process {os.getpid()}$"):
            with out.hold():
                pass
    assert (tmp_path / "new" / "out" / "first.txt").read_text() == "the first command's result"
    assert os.listdir(tmp_path / "new" / "out") == ["first.txt"]  # the lock is gone with its command
    fresh = Folder(str(tmp_path / "fresh")).sub("a", "b")
    with pytest.raises(RuntimeError):
        with fresh.hold():
            raise RuntimeError("failed before writing")
    assert not (tmp_path / "fresh").exists()


def test_a_file_write_that_fails_removes_the_folders_it_made_and_only_those(tmp_path):
    """A checkpoint interrupted mid-write (Ctrl-C, SIGTERM) leaves no empty checkpoints/."""
    run = Folder(str(tmp_path / "run"))
    run.make()
    ck = run.sub("checkpoints")
    with pytest.raises(KeyboardInterrupt):
        with ck.create("last.pt") as f:
            f.write(b"half a checkpoint")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path / "run") == []  # neither the file, its temporary name nor checkpoints/
    ck.write_bytes("last.pt", b"a whole one")
    with pytest.raises(KeyboardInterrupt):
        with ck.create("best.pt") as f:
            raise KeyboardInterrupt
    assert os.listdir(tmp_path / "run" / "checkpoints") == ["last.pt"]  # a folder it did not make stays


# ---------------------------------------------------------------- export


@pytest.fixture(scope="module")
def listops(tmp_path_factory):
    root = tmp_path_factory.mktemp("lo") / "ls"
    store.generate(str(root), "listops", {"min_length": 20, "max_length": 60, "max_depth": 4}, seed=2,
                   splits={"train": 8, "val": 2, "test": 2}, workers=1)
    return root


@pytest.fixture(scope="module")
def pathfinder(tmp_path_factory):
    root = tmp_path_factory.mktemp("pf") / "pf"
    store.generate(str(root), "pathfinder", {"size": 32, "difficulty": "hard"}, seed=2,
                   splits={"train": 6, "val": 2, "test": 2}, workers=1)
    return root


@pytest.mark.parametrize("fmt", ["lra-tsv", "hf"])
def test_a_second_export_into_a_held_folder_is_refused_and_the_first_result_stands(listops, tmp_path, fmt):
    if fmt == "hf":
        pytest.importorskip("datasets")
    out = tmp_path / "new"
    with Folder(str(out)).hold():  # the first export, still writing
        (out / "theirs.txt").write_text("the first export's file")
        line = one_error_line(invoke("export", listops, "--format", fmt, "--out", out))
        assert line == f"Error: {out} is being written by process {os.getpid()}"
        assert (out / "theirs.txt").read_text() == "the first export's file"
    assert os.listdir(out) == ["theirs.txt"]


@pytest.mark.parametrize("linked", ["imgs", "metadata", "curv_contour_length_14"])
def test_lra_pathfinder_never_writes_through_a_linked_folder(pathfinder, tmp_path, victim, linked):
    out = tmp_path / "lra"
    inner = out / "curv_contour_length_14"
    if linked == "curv_contour_length_14":
        out.mkdir()
        os.symlink(victim, inner)
    else:
        inner.mkdir(parents=True)
        os.symlink(victim, inner / linked)
    line = one_error_line(invoke("export", pathfinder, "--format", "lra-pathfinder", "--out", out))
    assert f"{linked}: is a symbolic link inside the output folder" in line
    assert untouched(victim)


def test_lra_tsv_never_replaces_a_link_at_a_final_name(listops, tmp_path, victim):
    out = tmp_path / "tsv"
    out.mkdir()
    os.symlink(victim / "mine.txt", out / "basic_train.tsv")
    line = one_error_line(invoke("export", listops, "--format", "lra-tsv", "--out", out))
    assert "basic_train.tsv: is a link inside the output folder; not replaced" in line
    assert untouched(victim) and sorted(os.listdir(out)) == ["basic_train.tsv"]


# ---------------------------------------------------------------- evaluate and validate

torch = pytest.importorskip("torch")


def _run_dir(out):
    (run,) = [os.path.join(dp, d) for dp, ds, _ in os.walk(out / "runs") for d in ds if d.startswith("lr")]
    return run


@pytest.mark.parametrize("name", ["report.md", "report.json", "report.png"])
def test_evaluate_never_writes_a_report_through_a_link(report, tmp_path, victim, name):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(report, out)
    os.remove(out / name)
    os.symlink(victim / "mine.txt", out / name)
    line = one_error_line(_evaluate("--out", out))
    assert f"{name}: is a link inside the output folder" in line
    assert untouched(victim)


def test_evaluate_never_sends_runs_through_a_linked_runs_folder(tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "runs")
    line = one_error_line(_evaluate("--out", out))
    assert "runs: is a symbolic link inside the output folder" in line
    assert untouched(victim)


def test_evaluate_never_reads_a_certificate_through_a_link(report, tmp_path, victim):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(report, out)
    run = _run_dir(out)
    cert = json.loads(open(os.path.join(run, "metrics.json")).read())
    cert["test"]["r2"] = 0.987654321
    (victim / "forged.json").write_text(json.dumps(cert))
    os.remove(os.path.join(run, "metrics.json"))
    os.symlink(victim / "forged.json", os.path.join(run, "metrics.json"))
    r = _evaluate("--out", out)
    assert "0.9877" not in r.output and "0.987654321" not in (out / "report.json").read_text()
    assert "already finished" not in r.output  # the linked certificate was not taken as the run
    assert (victim / "forged.json").read_text() == json.dumps(cert)


def test_evaluate_never_writes_a_checkpoint_through_a_planted_temporary_name(tmp_path, victim):
    out = tmp_path / "out"
    r = _evaluate("--out", out)
    assert r.exit_code == 0, r.output
    run = _run_dir(out)
    os.remove(os.path.join(run, "metrics.json"))  # the run is redone, from its checkpoint
    os.symlink(victim / "mine.txt", os.path.join(run, "checkpoints", ".last.pt.tmp"))
    os.remove(os.path.join(run, "checkpoints", "last.pt"))
    os.symlink(victim / "mine.txt", os.path.join(run, "checkpoints", "last.pt"))
    line = one_error_line(_evaluate("--out", out))
    assert "last.pt" in line and ("symbolic link" in line or "is a link" in line)
    assert untouched(victim)


def test_evaluate_into_a_held_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    with Folder(str(out)).hold():
        line = one_error_line(_evaluate("--out", out))
    assert line == f"Error: {out} is being written by process {os.getpid()}"
    assert os.listdir(out) == []


def test_evaluate_refuses_a_folder_that_holds_no_report(tmp_path):
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("mine")
    line = one_error_line(_evaluate("--out", out))
    assert "folder is not empty and holds no evaluate report ('thesis.tex'" in line
    assert os.listdir(out) == ["thesis.tex"]


def test_validate_never_writes_through_a_linked_validation_folder(cumsum_data, tmp_path, victim):
    os.symlink(victim, cumsum_data / "validation")
    line = one_error_line(invoke("validate", cumsum_data, "--steps", "2"))
    assert "validation: is a symbolic link inside the output folder" in line
    assert untouched(victim)


@pytest.fixture
def cumsum_data(tmp_path):
    root = tmp_path / "cumsum"
    store.generate(str(root), "cumsum", {"L": 32}, seed=1, splits={"train": 64, "val": 16, "test": 16}, workers=1)
    return root


def test_a_linked_run_record_is_refused_before_anything_is_dropped(report, tmp_path, victim):
    """files.json replaced by a link made --edited redo drop the run's checkpoints, retrain, then fail writing the
    record through the link: it is refused in one line before anything is touched."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(report, out)
    run = _run_dir(out)
    os.remove(os.path.join(run, "files.json"))
    os.symlink(victim / "mine.txt", os.path.join(run, "files.json"))
    before = sorted(os.listdir(os.path.join(run, "checkpoints")))
    line = one_error_line(_evaluate("--out", out, "--edited", "redo"))
    assert "files.json: is a symbolic link inside the output folder" in line
    assert sorted(os.listdir(os.path.join(run, "checkpoints"))) == before and before  # nothing dropped
    assert untouched(victim)
