"""verify --authors: a dataset's rows made again by the authors' code from a checkout
(longsynth/crosscheck.py). The real checkouts are not at hand in CI: a stand-in zoology whose
``multiquery_ar`` returns the rows a test chooses shows the command's plumbing, its verdicts
and its one-line failures (docs/authors-data.md records the runs against the real code)."""
import textwrap

import pytest
from click.testing import CliRunner

from longsynth.cli.main import cli

PARAMS = ["--input-seq-len", "32", "--num-kv-pairs", "2", "--vocab-size", "64"]

ZOOLOGY = textwrap.dedent('''
    import numpy as np
    import torch
    import longsynth
    from longsynth.generators.recall.mqar import AUTHORS_SEED_OFFSET

    CALLS = []


    class Segment:
        def __init__(self, inputs, labels):
            self.inputs, self.labels = torch.tensor(inputs), torch.tensor(labels)


    def multiquery_ar(vocab_size, num_examples, input_seq_len, seed, power_a, num_kv_pairs, num_passes,
                      random_non_queries):
        split = {v: k for k, v in AUTHORS_SEED_OFFSET.items()}[seed % 100]
        rows = longsynth.authors_stream("mqar", num_examples, seed=seed - AUTHORS_SEED_OFFSET[split], split=split,
                                        vocab_size=vocab_size, input_seq_len=input_seq_len,
                                        num_kv_pairs=num_kv_pairs, power_a=power_a)
        CALLS.append(seed)
        inputs = rows["inputs"]
        if SPOIL:
            inputs = inputs.copy()
            inputs[-1, 0] += 1
        return Segment(inputs, rows["targets"])
''')


def _checkout(tmp_path, spoil, name="zoology-co"):
    pkg = tmp_path / name / "zoology" / "data"
    pkg.mkdir(parents=True)
    (tmp_path / name / "zoology" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "multiquery_ar.py").write_text(ZOOLOGY + f"\nSPOIL = {spoil}\n")
    return tmp_path / name


def _gen(tmp_path, *extra):
    out = tmp_path / "mqar"
    r = CliRunner().invoke(cli, ["gen", "mqar", *PARAMS, "--seed", "100", "--splits", "train=20,test=6",
                                 "--out", str(out), *extra])
    assert r.exit_code == 0, r.output
    return out


def test_rows_equal_to_the_authors_pass(tmp_path):
    out = _gen(tmp_path, "--authors-stream")
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(_checkout(tmp_path, False))])
    assert r.exit_code == 0, r.output
    assert "all 26 rows equal the authors' code's" in r.output


def test_one_token_off_fails_naming_the_row(tmp_path):
    out = _gen(tmp_path, "--authors-stream")
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(_checkout(tmp_path, True, "spoilt"))])
    assert r.exit_code != 0
    assert "train[19]: inputs differs from the authors' row" in r.output
    assert "test[5]: inputs differs" in r.output and "differs from the authors' code: 2 row(s)" in r.output


@pytest.mark.parametrize("case", ["law", "no-folder", "wrong-repo", "their-error", "generator-exit",
                                  "their-base-exception", "unprintable"])
def test_what_cannot_be_compared_is_one_line(tmp_path, case):
    out = _gen(tmp_path, *([] if case == "law" else ["--authors-stream"]))
    checkout = _checkout(tmp_path, False)
    if case == "no-folder":
        checkout = tmp_path / "missing"
    elif case == "wrong-repo":
        checkout = tmp_path / "empty"
        checkout.mkdir()
    elif case == "their-error":
        (checkout / "zoology" / "data" / "multiquery_ar.py").write_text(
            "def multiquery_ar(**kw):\n    raise ValueError('boom')\n")
    elif case in THEIR_RAISES:
        (checkout / "zoology" / "data" / "multiquery_ar.py").write_text(THEIR_RAISES[case])
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout)])
    assert r.exit_code != 0 and "Traceback" not in r.output
    last = r.output.strip().splitlines()[-1]
    want = {"law": "made with longsynth's law", "no-folder": "is not a folder",
            "wrong-repo": "the authors' code failed on train: ModuleNotFoundError",
            "their-error": "the authors' code failed on train: ValueError: boom",
            "generator-exit": "the authors' code failed on train: GeneratorExit: theirs",
            "their-base-exception": "the authors' code failed on train: Theirs: not an Exception",
            "unprintable": "the authors' code failed on train: Unprintable: (its message could not be read)"}[case]
    assert want in last, r.output
    assert [line for line in r.output.splitlines() if line.startswith("Error:")] == [last], r.output


THEIR_RAISES = {  # BaseExceptions that are not Exception or SystemExit (had traced back), and a str() that fails
    "generator-exit": "def multiquery_ar(**kw):\n    raise GeneratorExit('theirs')\n",
    "their-base-exception": "class Theirs(BaseException):\n    pass\n\n\n"
                            "def multiquery_ar(**kw):\n    raise Theirs('not an Exception')\n",
    "unprintable": "class Unprintable(Exception):\n    def __str__(self):\n        raise RuntimeError\n\n\n"
                   "def multiquery_ar(**kw):\n    raise Unprintable()\n",
}


@pytest.mark.parametrize("code", [0, 3])
def test_a_checkout_that_ends_its_process_is_one_line_not_a_pass(tmp_path, code):
    """Their code runs in a child Python: os._exit(0) in it (which ended verify itself with status 0 and no
    verdict) ends only the child, and its missing rows are one line."""
    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    (checkout / "zoology" / "data" / "multiquery_ar.py").write_text(
        f"import os\n\n\ndef multiquery_ar(**kw):\n    os._exit({code})\n")
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout)])
    assert r.exit_code == 1 and "Traceback" not in r.output and "OK: all" not in r.output, r.output
    assert r.output.strip().splitlines()[-1] == (f"Error: --authors: the authors' code ended its process (exit status "
                                                 f"{code}) before giving the rows of train: no verdict"), r.output


def test_what_their_code_prints_does_not_reach_the_rows(tmp_path, capfd):
    """What their code prints (sys.stdout, or fd 1 itself) goes to stderr, not into the rows the child sends."""
    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    path = checkout / "zoology" / "data" / "multiquery_ar.py"
    path.write_text("import os\nprint('theirs at import')\nos.write(1, b'raw bytes')\n" + path.read_text())
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout)])
    assert r.exit_code == 0 and "all 26 rows equal the authors' code's" in r.output, r.output
    assert "theirs at import" in capfd.readouterr().err


def test_a_keyboard_interrupt_in_their_code_still_aborts(tmp_path):
    """Ctrl-C while their code runs is not turned into a verdict or an error line: it aborts, as anywhere."""
    from longsynth import crosscheck

    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    (checkout / "zoology" / "data" / "multiquery_ar.py").write_text(
        "def multiquery_ar(**kw):\n    raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        crosscheck.compare(str(out), str(checkout))


def test_the_runners_cover_every_task_with_an_authors_stream():
    from longsynth import crosscheck, registry

    have = {n for n, t in registry.all_tasks().items() if t.authors is not None}
    assert have == set(crosscheck.RUNNERS)


def test_the_chomsky_checkout_is_imported_without_a_folder_outside_it(tmp_path, monkeypatch):
    """Their modules import each other by their package's name: the checkout is imported as that package
    from where it is, with no temporary folder or link left behind (tempfile's folder is watched)."""
    import tempfile

    from longsynth import crosscheck

    co = tmp_path / "nnch"
    (co / "tasks").mkdir(parents=True)
    (co / "tasks" / "__init__.py").write_text("")
    (co / "tasks" / "task.py").write_text("class GeneralizationTask:\n    pass\n")
    for module, cls in crosscheck._CHOMSKY_CLASSES.values():
        level, name = module.split(".")
        (co / "tasks" / level).mkdir(exist_ok=True)
        (co / "tasks" / level / "__init__.py").write_text("")
        (co / "tasks" / level / f"{name}.py").write_text(
            f"from {crosscheck._CHOMSKY_PACKAGE}.tasks import task\n\nclass {cls}(task.GeneralizationTask):\n"
            "    pass\n")
    watched = tmp_path / "tmp"
    watched.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(watched))
    found = crosscheck.chomsky(str(co))
    assert set(found) == set(crosscheck._CHOMSKY_CLASSES)
    assert found["reverse-string"].__name__ == "ReverseString" and found["reverse-string"].__module__.endswith(
        "tasks.dcf.reverse_string")
    assert list(watched.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["nnch", "tmp"]


def test_an_authors_code_that_returns_too_few_rows_is_one_line(tmp_path):
    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    f = checkout / "zoology" / "data" / "multiquery_ar.py"
    f.write_text(f.read_text().replace("return Segment(inputs, rows[\"targets\"])",
                                       "return Segment(inputs[:3], rows[\"targets\"][:3])"))
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout)])
    assert r.exit_code != 0 and "Traceback" not in r.output and "IndexError" not in r.output, r.output
    assert "the authors' code gave 3 rows of inputs for train, which holds 20 rows" in r.output.strip().splitlines()[-1]


def test_verify_run_inside_a_strangers_folder_imports_nothing_from_it(tmp_path, monkeypatch):
    """verify --authors runs their code in a `python -c` child, which puts the current folder first on sys.path: a
    numpy.py or longsynth/ planted in the folder a user verifies from (a stranger's dataset, say) must not run."""
    from longsynth import crosscheck

    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    planted = tmp_path / "planted"
    (planted / "longsynth").mkdir(parents=True)
    marker = tmp_path / "ran"
    for path in (planted / "numpy.py", planted / "longsynth" / "__init__.py"):
        path.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(0)\n")
    monkeypatch.chdir(planted)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)  # the suite's own guard would hide the child's sys.path
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout)])
    assert r.exit_code == 0 and "all 26 rows equal" in r.output, r.output
    assert not marker.exists()
    assert crosscheck._REGBENCH_CHILD.startswith(crosscheck.NO_CWD)  # RegBench's child starts the same way


def test_an_authors_code_that_runs_past_the_time_limit_is_ended_with_one_line(tmp_path):
    """A manifest's counts and parameters can keep their code busy for hours within the memory estimate:
    --time-limit ends the child, and that is one line with no verdict, not a verify that waits for ever."""
    import time

    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    (checkout / "zoology" / "data" / "multiquery_ar.py").write_text(
        "import time\n\n\ndef multiquery_ar(**kw):\n    time.sleep(600)\n")
    start = time.monotonic()
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout), "--time-limit", "2"])
    assert time.monotonic() - start < 120, "the child was not ended at the limit"
    assert r.exit_code == 1 and "Traceback" not in r.output and "OK: all" not in r.output, r.output
    assert r.output.strip().splitlines()[-1] == ("Error: --authors: the authors' code ran past the time limit (2 s) "
                                                 "before giving the rows of train; ended, no verdict (a longer "
                                                 "--time-limit lets it finish)"), r.output


def test_the_time_limit_leaves_a_quick_checkout_alone(tmp_path):
    out = _gen(tmp_path, "--authors-stream")
    checkout = _checkout(tmp_path, False)
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(checkout), "--time-limit", "300"])
    assert r.exit_code == 0 and "all 26 rows equal the authors' code's" in r.output, r.output


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "1e10", "1e309"])
def test_a_time_limit_that_is_not_a_finite_positive_number_is_one_line(tmp_path, value):
    """nan and inf pass a click FloatRange, and a thread's timer refuses more than about 9.2e9 s (with a traceback in
    the timer's thread, and no limit): each is refused on the command line, before anything runs."""
    r = CliRunner().invoke(cli, ["verify", str(tmp_path), "--time-limit", value])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert r.output.strip().splitlines()[-1].startswith("Error: Invalid value for '--time-limit': must be a number "
                                                        "of seconds > 0 and at most 1e9"), r.output
