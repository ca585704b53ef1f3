"""The longsynth command through click's CliRunner: happy paths and one-line errors."""
import json
import os
import re

import pytest
from click.testing import CliRunner

import longsynth
from longsynth.cli.main import cli


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, runner):
    out = tmp_path_factory.mktemp("cli") / "cumsum"
    r = runner.invoke(cli, ["gen", "cumsum", "--L", "64", "-n", "500", "--shard-size", "100", "--workers", "2",
                            "--seed", "4", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def one_error_line(result):
    lines = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_list(runner):
    r = runner.invoke(cli, ["list"])
    assert r.exit_code == 0 and r.output.splitlines()[0].startswith(longsynth.tasks()[0])
    rows = r.output.split("\n\n")[0].splitlines()
    assert [x.split()[0] for x in rows] == longsynth.tasks()
    assert re.search(r"^pathfinder-seg +pathfinder +100,000 samples +\d+\.\d GB ", r.output, re.M), r.output
    assert re.search(r"^cumsum +atomic +10,000 samples +\d+\.\d MB ", r.output, re.M), r.output
    assert "*: a value the task's preset derives" in r.output
    pf = next(line for line in r.output.splitlines() if line.startswith("pathfinder-seg "))
    assert "None" not in pf and "paddle_length=5*" in pf and "distractors=16*" in pf  # the preset's values
    # the columns stay aligned past 18-character names (chomsky-missing-duplicate-string, mad-selective-copying)
    assert len({row.index(" samples ") for row in rows}) == 1, rows


def test_list_columns_fit_the_widest_entry(runner):
    """A name, a family, a count or a size wider than today's tasks' moves every row's columns with it: each
    line's description starts at the same offset."""
    import dataclasses

    from registered import registered

    from longsynth import registry

    wide = dataclasses.replace(registry.get("cumsum"), name="a-task-name-of-forty-two-characters-or-so",
                               family="a-long-family", default_num_samples=123_456_789_012)
    with registered(wide):
        r = runner.invoke(cli, ["list"])
        tasks = registry.all_tasks()
    assert r.exit_code == 0, r.output
    rows = r.output.split("\n\n")[0].splitlines()
    assert rows[-1].startswith(wide.name) and "123,456,789,012 samples" in rows[-1]
    starts = {row.index(f"  {tasks[row.split()[0]].summary} (") for row in rows}
    assert len(starts) == 1, rows


def test_gen_info_verify(runner, dataset):
    m = json.load(open(dataset / "manifest.json"))
    assert m["counts"] == {"train": 480, "val": 10, "test": 10} and m["complete"]
    assert m["command"] == f"longsynth gen cumsum --L 64 --num-samples 500 --seed 4 --shard-size 100 --out {dataset}"
    card = (dataset / "README.md").read_text()
    assert m["command"] in card and m["splits"]["train"]["digest"] in card
    r = runner.invoke(cli, ["info", str(dataset)])
    assert r.exit_code == 0 and "train" in r.output and "float32" in r.output and "[64, 1]" in r.output
    r = runner.invoke(cli, ["info", str(dataset), "--json"])
    assert json.loads(r.output)["splits"]["train"]["count"] == 480
    r = runner.invoke(cli, ["verify", str(dataset), "--deep"])
    assert r.exit_code == 0 and r.stdout.startswith("OK: 7 shards, 500 samples")


def test_gen_splits_option(runner, tmp_path):
    r = runner.invoke(cli, ["gen", "cumsum", "--L", "8", "--splits", "train=30,test=5", "--workers", "1",
                            "-o", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    assert longsynth.open(tmp_path / "s").manifest["counts"] == {"train": 30, "test": 5}


def test_corrupt_shard_is_one_line_error(runner, dataset, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(dataset, bad)
    shard = bad / "train-00001.h5"
    data = bytearray(shard.read_bytes())
    data[-100] ^= 0xFF
    shard.write_bytes(bytes(data))
    r = runner.invoke(cli, ["verify", str(bad)])
    assert re.fullmatch(rf"Error: {re.escape(str(bad))}: damaged: \d problem\(s\) found", one_error_line(r))
    assert "train-00001.h5: SHA-256 mismatch" in r.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["gen", "nope", "-o", "{tmp}/x"], "unknown task 'nope'"),
        (["gen", "cumsum", "--L", "0", "-o", "{tmp}/x"], "L: must be in [1, 16777216], got 0"),
        (["gen", "cumsum", "-n", "-5", "-o", "{tmp}/x"], "num_samples: must be an integer >= 1"),
        (["gen", "cumsum", "--splits", "train=ten", "-o", "{tmp}/x"], "splits: expected train=N,val=N,test=N"),
        (["gen", "cumsum", "--splits", "train=3", "-n", "5", "-o", "{tmp}/x"], "give --num-samples or --splits"),
        (["gen", "cumsum", "--seed", "-1", "-o", "{tmp}/x"], "seed: must be an integer in [0, 2**63 - 1]"),
        (["gen", "cumsum", "--workers", "0", "-o", "{tmp}/x"], "workers: must be an integer >= 1"),
        (["gen", "cumsum", "-n", "10", "-o", "{tmp}/file.txt/x"], "cannot create directory"),
        (["gen", "cumsum", "-n", "10", "-o", "{tmp}/file.txt"], "file.txt' is a file"),
        (["info", "{tmp}"], "no manifest.json; not a longsynth dataset directory"),
        (["verify", "{tmp}/missing"], "missing: does not exist"),
        (["show", "{tmp}/missing"], "is neither a task"),
    ],
)
def test_bad_input_one_line_error(runner, tmp_path, args, message):
    (tmp_path / "file.txt").write_text("x")
    r = runner.invoke(cli, [a.format(tmp=tmp_path) for a in args])
    assert message in one_error_line(r)
    assert not os.path.exists(tmp_path / "x" / "manifest.json")


def test_other_dataset_refused_then_overwritten(runner, dataset, tmp_path):
    import shutil

    d = tmp_path / "d"
    shutil.copytree(dataset, d)
    r = runner.invoke(cli, ["gen", "cumsum", "--L", "32", "-n", "50", "-j", "1", "-o", str(d)])
    assert "holds a different dataset" in one_error_line(r)
    assert longsynth.open(d).config.L == 64
    r = runner.invoke(cli, ["gen", "cumsum", "--L", "32", "-n", "50", "-j", "1", "-o", str(d), "--overwrite"])
    assert r.exit_code == 0 and longsynth.open(d).config.L == 32


def test_help_on_every_option(runner):
    from longsynth.cli.main import cli as root

    def walk(cmd, ctx_name):
        import click

        ctx = click.Context(cmd, info_name=ctx_name)
        for p in cmd.params:
            if isinstance(p, click.Option):
                assert p.help, f"{ctx_name} {p.name} has no help"
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{ctx_name} {name}")

    walk(root, "longsynth")


@pytest.mark.parametrize("where", ["repo", "elsewhere"])
def test_python_dash_m(tmp_path, where):
    import subprocess
    import sys

    cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) if where == "repo" else tmp_path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}  # in the checkout: its source tree
    r = subprocess.run([sys.executable, "-m", "longsynth", "list"], cwd=cwd, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith(longsynth.tasks()[0]), r.stderr


def test_validate_writes_certificate_that_info_shows(runner, tmp_path):
    d = tmp_path / "d"
    r = runner.invoke(cli, ["gen", "cumsum", "--L", "64", "--splits", "train=64,val=16,test=16", "-j", "1",
                            "-o", str(d)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["validate", str(d), "--steps", "3", "--json"])
    report = json.loads(r.stdout)
    assert r.exit_code == (3 if report["certificate"]["passed"] is False else 0), r.output  # 3: FAILED
    assert report["report_dir"].startswith(str(d / "validation"))
    for name in ("metrics.json", "curves.png"):
        assert os.path.exists(os.path.join(report["report_dir"], name))
    assert "r2" in report["final"] and report["paper"]
    r = runner.invoke(cli, ["info", str(d)])
    assert r.exit_code == 0 and f"({report['report_dir']})" in r.output and "validation:" in r.output
    r = runner.invoke(cli, ["validate", "listops", "--steps", "3"])
    assert "on-the-fly validation covers atomic tasks" in one_error_line(r)
    r = runner.invoke(cli, ["validate", "cumsum", "--steps", "0"])
    assert "--steps must be >= 1" in one_error_line(r)


def test_a_mistyped_task_gets_the_nearest_name_and_a_missing_folder_does_not_exist(tmp_path):
    """One line each: "did you mean" for a near task name; "does not exist" for a missing path
    (not "no manifest.json", which is for a folder that holds no dataset)."""
    r = CliRunner().invoke(cli, ["gen", "cumsun", "-o", str(tmp_path / "x")])
    assert r.exit_code != 0 and "unknown task 'cumsun'; did you mean cumsum?" in r.output
    r = CliRunner().invoke(cli, ["info", str(tmp_path / "nowhere")])
    assert r.exit_code == 1 and r.output.strip() == f"Error: {tmp_path / 'nowhere'}: does not exist"
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(cli, ["info", str(tmp_path / "empty")])
    assert r.exit_code == 1 and "no manifest.json; not a longsynth dataset directory" in r.output


def test_running_out_of_memory_is_one_line(monkeypatch, tmp_path):
    """An allocation that fails where no estimate refused it first (NumPy's _ArrayMemoryError is a MemoryError)
    ends in one line that says what to do, never a traceback."""
    import numpy as np

    from longsynth.task import Task

    def no_memory(*a, **k):
        return np.empty(1 << 62, dtype=np.uint8)  # NumPy refuses: _ArrayMemoryError

    monkeypatch.setattr(Task, "generate", no_memory)
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "8", "-n", "100", "--workers", "1",
                                 "--out", str(tmp_path / "d")])
    lines = [s for s in r.output.splitlines() if s.startswith("Error:")]
    assert r.exit_code == 1 and "Traceback" not in r.output and len(lines) == 1, r.output
    assert "out of memory" in lines[0] and "ask for less" in lines[0]
