"""longsynth.files: staged files and folders land together or not at all."""
import hashlib
import os

import pytest

from longsynth.errors import LongsynthError
from longsynth.files import PendingFiles, atomic_write_text, file_sha256


def test_pending_files_and_folders_are_renamed_in_order(tmp_path):
    out = tmp_path / "out"
    with PendingFiles(tmp_path) as pending:
        folder = pending.folder(str(out / "imgs" / "0"))
        with open(os.path.join(folder, "a.png"), "wb") as f:
            f.write(b"png")
        with open(pending.path(str(out / "metadata" / "0.npy"), new=True), "w") as f:
            f.write("row\n")
        assert not (out / "imgs" / "0").exists() and not (out / "metadata" / "0.npy").exists()
        assert [final for _, final, _, _ in pending.items] == [str(out / "imgs" / "0"), str(out / "metadata" / "0.npy")]
    assert (out / "imgs" / "0" / "a.png").read_bytes() == b"png"
    assert (out / "metadata" / "0.npy").read_text() == "row\n"
    assert sorted(os.listdir(out / "imgs")) == ["0"] and sorted(os.listdir(out / "metadata")) == ["0.npy"]


def test_a_failure_leaves_nothing_not_even_the_folders_it_made(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "keep").mkdir()
    with pytest.raises(RuntimeError):
        with PendingFiles(tmp_path) as pending:
            with open(pending.folder(str(out / "imgs" / "0")) + "/a.png", "wb") as f:
                f.write(b"png")
            pending.path(str(tmp_path / "keep" / "x.tsv"))
            raise RuntimeError("writer failed")
    assert sorted(os.listdir(tmp_path)) == ["keep"] and os.listdir(tmp_path / "keep") == []


def test_a_taken_final_name_stops_every_rename(tmp_path):
    (tmp_path / "metadata").mkdir()
    (tmp_path / "metadata" / "0.npy").write_text("theirs")
    with pytest.raises(LongsynthError, match="metadata/0.npy: already exists"):
        with PendingFiles(tmp_path) as pending:
            with open(pending.path(str(tmp_path / "a.tsv")), "w") as f:
                f.write("mine")
            pending.path(str(tmp_path / "metadata" / "0.npy"), new=True)
    assert sorted(os.listdir(tmp_path)) == ["metadata"]
    assert os.listdir(tmp_path / "metadata") == ["0.npy"] and (tmp_path / "metadata" / "0.npy").read_text() == "theirs"


def test_a_file_may_replace_an_old_one_unless_new(tmp_path):
    (tmp_path / "a.tsv").write_text("old")
    with PendingFiles(tmp_path) as pending:
        with open(pending.path(str(tmp_path / "a.tsv")), "w") as f:
            f.write("new")
    assert (tmp_path / "a.tsv").read_text() == "new"


def test_a_link_planted_under_a_temporary_name_is_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, tmp_path / ".a.txt.tmp")
    atomic_write_text(str(tmp_path / "a.txt"), "text")
    assert victim.read_text() == "precious" and (tmp_path / "a.txt").read_text() == "text"
    os.symlink(victim, tmp_path / ".b.tmp")
    with PendingFiles(tmp_path) as pending:
        with open(pending.folder(str(tmp_path / "b")) + "/x", "w") as f:
            f.write("x")
    assert victim.read_text() == "precious" and (tmp_path / "b" / "x").read_text() == "x"
    os.symlink(victim, tmp_path / "c")
    with pytest.raises(LongsynthError, match="symbolic link"):
        file_sha256(str(tmp_path / "c"))
    assert file_sha256(str(victim)) == hashlib.sha256(b"precious").hexdigest()
