"""What a researcher sees: summaries that say what they cover, progress that reads in a log,
messages that tell an unfinished dataset from a damaged one and say how to go on."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from longsynth import store
from longsynth.cli.main import cli


@pytest.fixture(scope="module")
def pathfinder(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui") / "pf"
    store.generate(str(root), "pathfinder", {"size": 32}, seed=0, num_samples=500, workers=1)
    return root


def test_info_statistics_cover_every_sample_and_say_so(pathfinder):
    r = CliRunner().invoke(cli, ["info", str(pathfinder)])
    assert r.exit_code == 0, r.output
    assert "statistics over all 500 samples (train 400, val 50, test 50):" in r.output
    ds = store.open(str(pathfinder))
    lines = r.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.strip().startswith("distractors"))
    for i, split in enumerate(ds.splits):  # a line per split, never pooled over splits
        dist = ds[split].column("distractors")
        want = f"{split:5s} min {dist.min()} max {dist.max()} mean {dist.mean():.4g} std {dist.std():.4g}"
        assert lines[at + i].endswith(want), (want, lines[at + i])
    assert ds["train"].column("distractors").max() > 1  # the 4-sample preview of old said "max 1"
    for split in ds.splits:  # LRA Pathfinder's label balance, per split
        t = ds[split].column("targets")
        want = f"0: {100 * np.mean(t == 0):.1f}%  1: {100 * np.mean(t == 1):.1f}%"
        assert re.search(rf"^  {split}\s+{re.escape(want)}$", r.output, re.M), (want, r.output)
    r = CliRunner().invoke(cli, ["info", str(pathfinder), "--samples", "4"])
    assert "statistics over 12 samples (train 4, val 4, test 4):" in r.output


def test_info_class_balance_of_tagging_targets(tmp_path):
    root = tmp_path / "ls"
    store.generate(str(root), "listops-subtrees", {"min_length": 20, "max_length": 60, "max_depth": 4}, seed=1,
                   splits={"train": 60, "val": 10, "test": 10}, workers=1)
    s = store.info(str(root))
    ds = store.open(str(root))
    for split in ds.splits:
        v = np.concatenate([x["targets"] for x in ds[split]]).astype(int)
        v = v[v >= 0]  # -1: positions without a label
        want = {int(c): float(np.mean(v == c)) for c in np.unique(v)}
        assert s["balance"][split] == pytest.approx(want)
        assert abs(sum(s["balance"][split].values()) - 1) < 1e-9


def _gen(out, *extra, n="3000"):
    return [sys.executable, "-m", "longsynth", "gen", "cumsum", "--L", "4096", "-n", n, "--shard-size", "100",
            "-j", "1", *extra, "--out", str(out)]


def test_gen_progress_in_a_log_is_whole_lines_in_one_number_format(tmp_path):
    p = subprocess.run(_gen(tmp_path / "d", n="1200"), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "\r" not in p.stderr and "\x1b" not in p.stderr
    lines = p.stderr.splitlines()
    bars = [x for x in lines if x.startswith("gen cumsum:")]
    assert bars and bars[-1].startswith("gen cumsum: 100% 1,200/1,200 samples [") and "samples/s]" in bars[-1]
    assert all(x.startswith(("cumsum: 1,200 samples", "gen cumsum:")) for x in lines), lines  # no bare lines
    assert p.stdout.startswith("cumsum: 1,200 samples (train 1,152, val 24, test 24) in 14 shards")


def test_ctrl_c_says_how_to_resume_and_the_rerun_says_resuming(tmp_path):
    out = tmp_path / "d"
    p = subprocess.Popen(_gen(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120

    def recorded():  # a second shard written: the first one's record is in gen's manifest (written on Ctrl-C)
        return (out / "train-00001.h5").exists()

    while time.time() < deadline and not recorded():
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    m = re.fullmatch(r"interrupted: ([\d,]+) of 3,000 samples kept; rerun the same command to resume: "
                     r"longsynth gen cumsum --L 4096 --num-samples 3000 .*--out .*", last)
    assert m, last
    kept = m.group(1)
    assert kept != "3,000"
    r = CliRunner().invoke(cli, ["verify", str(out)])
    assert r.exit_code == 1 and f"incomplete, not damaged: {kept} of 3,000 samples written" in r.output, r.output
    p = subprocess.run(_gen(out), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and f"resuming: {kept} of 3,000 samples already written" in p.stderr, p.stderr


def test_a_dataset_being_written_is_named_as_such(tmp_path):
    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 32}, seed=0, num_samples=100, workers=1)
    m = json.loads((root / "manifest.json").read_text())
    m["complete"] = False
    (root / "manifest.json").write_text(json.dumps(m))
    with store.DirLock(str(root)):
        with pytest.raises(store.LongsynthError, match=rf"is being written by process {os.getpid()}; open it"):
            store.open(str(root))
        r = CliRunner().invoke(cli, ["verify", str(root)])
        assert r.exit_code == 1 and f"is being written by process {os.getpid()}; verify it when" in r.output
        assert "problem" not in r.output
    with pytest.raises(store.LongsynthError, match="dataset is incomplete; rerun its gen command to resume"):
        store.open(str(root))  # the writer is gone: a stopped gen, to be resumed


def test_validate_ends_in_a_summary_and_short_runs_scale_their_schedule(tmp_path):
    pytest.importorskip("torch")
    r = CliRunner().invoke(cli, ["validate", "listops-subtrees", "--steps", "2"])  # a stored-only task: one line
    assert r.exit_code == 1
    root = tmp_path / "ls"
    store.generate(str(root), "listops-subtrees", {"min_length": 20, "max_length": 60, "max_depth": 4}, seed=1,
                   splits={"train": 64, "val": 16, "test": 16}, workers=1)
    r = CliRunner().invoke(cli, ["validate", str(root), "--steps", "30", "--report-dir", str(tmp_path / "rep")])
    assert r.exit_code == (3 if "certificate FAILED" in r.stdout else 0), r.output  # 3: a FAILED certificate
    out = r.stdout.splitlines()
    assert not r.stdout.lstrip().startswith("{")  # not a JSON dump
    # the dataset by its folder's name: the certificate travels, a path of this machine does not
    assert out[0].startswith(f"dlr on {root.name} (listops-subtrees, tiny): 30 steps (the protocol's 300 scaled: "
                             "warmup 3, an evaluation every 10)"), out
    m = json.loads((tmp_path / "rep" / "metrics.json").read_text())
    assert (m["train_config"]["warmup_steps"], m["train_config"]["eval_every"]) == (3, 10)
    assert [v["step"] for v in json.loads((tmp_path / "rep" / "history.json").read_text())["val"]] == [10, 20, 30]
    acc = m["test"]["accuracy"]
    assert re.search(rf"^test accuracy {acc:.3f}", r.stdout, re.M), r.stdout
    assert re.search(r"^certificate (PASSED|FAILED|no verdict)", r.stdout, re.M), r.stdout
    assert f"report: {tmp_path / 'rep' / 'metrics.json'}" in r.stdout
    lr = m["lr"]
    name = f"train dlr on listops-subtrees lr {lr:g} seed 0:"  # the run's name: runs of --jobs stay apart
    bars = [x for x in r.stderr.splitlines() if x.startswith(name)]  # a log: lines
    assert "\r" not in r.stderr and bars[-1].startswith(f"{name} 100% 30/30 steps ["), r.stderr
    assert re.search(r"steps/s, loss \d+\.\d{4}, val accuracy \d\.\d{4}\]$", bars[-1]), bars[-1]


def test_gen_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    out = tmp_path / "never" / "d"
    r = CliRunner().invoke(cli, ["gen", "pathfinder-seg", "--size", "512", "--out", str(out), "--dry-run"])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "never").exists()
    p = store.dry_run(str(out), "pathfinder-seg", {"size": 512})
    lines = r.stdout.splitlines()
    assert lines[0].startswith("pathfinder-seg (size=512, ") and "100,000 samples in" in lines[0]
    assert lines[1].split() == ["train", "96,000", "samples", f"{p.shards['train']:,}", "shards"]
    assert f"about {store.human(p.bytes)} on disk; " in r.stdout and r.stdout.rstrip().endswith("nothing written "
                                                                                                "(--dry-run)")
    assert p.bytes == store.estimate_bytes(p.task, p.config, p.splits, 0, p.shard_size) > 10**10


def test_discoverable_options_and_presets():
    r = CliRunner().invoke(cli, ["gen", "--help"])
    for opt in ("-n, --num-samples", "-j, --workers", "--seed", "--dry-run", "--shard-size"):
        assert opt in r.output, opt
    r = CliRunner().invoke(cli, ["validate", "--help"])
    assert re.search(r"^\s+atomic\s+tiny 600 x 16 .*paper 40,000 x 16 \(mips: 192,000 x 4\)$", r.output, re.M), r.output
    assert re.search(r"^\s+pathfinder-seg-512\s+tiny 300 x 4\s+paper 114,000 x 14$", r.output, re.M), r.output


def test_reprs_say_what_they_hold_and_validation_is_val(pathfinder):
    from longsynth import registry

    ds = store.open(str(pathfinder))
    assert repr(ds) == f"<longsynth.Dataset pathfinder, seed 0: train 400, val 50, test 50 at {pathfinder}>"
    assert repr(ds["validation"]).startswith("<longsynth.Split val: 50 samples in 1 shards, keys inputs, targets")
    assert repr(registry.get("cumsum")).startswith("<longsynth.Task cumsum (atomic): ")
    assert ds["validation"] is ds["val"]
    torch = pytest.importorskip("torch")  # noqa: F841
    from longsynth.torch import ShardDataset

    assert len(ShardDataset(str(pathfinder), split="validation")) == 50
    with pytest.raises(store.LongsynthError,
                       match=r"no split .dev.; this dataset has train, val, test \(validation is val\)"):
        store.open(str(pathfinder))["dev"]


def test_the_command_line_imports_neither_matplotlib_nor_torch_until_needed():
    code = ("import sys, longsynth, longsynth.store, longsynth.cli.main; "
            "print(sorted(m for m in ('matplotlib', 'torch') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", (p.stdout, p.stderr)


def test_a_swallowed_interrupt_ends_the_job_at_the_next_progress_report():
    from longsynth.cli import main as m

    bar = m.Watched("gen x", file=open(os.devnull, "w"))
    bar(None, total=10)
    bar(3)
    m._SIGNALLED.append(signal.SIGTERM)
    try:
        with pytest.raises(KeyboardInterrupt):
            bar(3)
    finally:
        m._SIGNALLED.clear()
        bar.close()


def test_a_swallowed_interrupt_prints_no_traceback_and_other_unraisables_still_do():
    """A signal's KeyboardInterrupt raised inside a weakref callback is not printed as
    "Exception ignored ... Traceback" (the job still ends: above); anything else still is."""
    import types

    from longsynth.cli import main as m

    seen, resent = [], []
    hook = m._unraisable(seen.append, resent.append)
    interrupt = types.SimpleNamespace(exc_value=KeyboardInterrupt())
    other = types.SimpleNamespace(exc_value=ValueError("a real bug"))
    hook(interrupt)  # no signal received: not ours, passed on
    m._SIGNALLED.append(signal.SIGINT)
    try:
        hook(interrupt)
        hook(other)
    finally:
        m._SIGNALLED.clear()
    assert seen == [interrupt, other]
    assert resent == [signal.SIGINT]  # the swallowed one is delivered again (test_untrusted_ends: it stops the run)


def test_show_dir_on_values_outside_the_definition_is_one_line(tmp_path, monkeypatch):
    """A folder from someone else can hold checksum-consistent values the task never makes
    (a Pathfinder label 7): the preview code indexes its palette with them."""
    root = tmp_path / "pf"
    store.generate(str(root), "pathfinder", {"size": 32}, seed=0, num_samples=20, workers=1)
    from longsynth import registry

    task = registry.get("pathfinder")

    def crafted(samples, cfg, path):
        np.zeros(3)[7]  # what a palette lookup does with label 7

    monkeypatch.setattr(task, "show", crafted)
    r = CliRunner().invoke(cli, ["show", str(root), "--out", str(tmp_path / "p.png")])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.output.startswith(f"Error: {root}: cannot draw these samples: values outside") and "IndexError" in r.output
