"""evaluate --jobs, --dask and resuming: the same metrics whichever way the runs are spread, and a killed
sweep resumes to the uninterrupted result (a file of its own: pytest-xdist gives each file to one worker,
so these minute-long tests run beside the others, docs/benchmarks.md "The test suite's time")."""
import json
import os

import pytest
import torch

from test_evaluate import _evaluate, _metrics, _user_model


@pytest.mark.slow  # trains for minutes: left out of the fast subset (README)
def test_jobs_2_jobs_1_and_a_local_cluster_give_identical_metrics(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = _user_model(tmp_path)
    # two runs (one task, two learning rates): two jobs train one each; a run's metrics landing in the other's
    # folder would differ from one process's (two steps part them: the metrics are asserted distinct)
    common = [f"{path}:build", "--suite", "cumsum", "--steps", "2", "--lr", "1e-3,3e-3", "--seeds", "1"]
    one = tmp_path / "one"
    assert _evaluate([*common, "--out", str(one)]).exit_code == 0
    two = tmp_path / "two"
    r = _evaluate([*common, "--jobs", "2", "--out", str(two)])
    assert r.exit_code == 0, r.output
    assert len(_metrics(one)) == 2 and _metrics(one) == _metrics(two)
    assert len({m[3:] for m in _metrics(one)}) == 2  # the two runs' R^2 differ: a swap would show
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        dk = tmp_path / "dask"
        r = _evaluate([*common, "--dask", c.scheduler_address, "--out", str(dk)])
    assert r.exit_code == 0, r.output
    assert _metrics(dk) == _metrics(one)


@pytest.mark.slow  # trains for minutes: left out of the fast subset (README)
def test_a_killed_evaluate_resumes_and_a_changed_config_starts_fresh(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    path = _user_model(tmp_path)
    args = [f"{path}:build", "--suite", "cumsum", "--steps", "60"]
    whole = tmp_path / "whole"
    assert _evaluate([*args, "--out", str(whole)]).exit_code == 0
    out = tmp_path / "killed"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-m", "longsynth", "evaluate", *args, "--out", str(out)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    ck = None
    while time.time() < deadline and p.poll() is None:
        found = list(out.glob("runs/cumsum/*/checkpoints/last.pt"))
        if found:
            ck = found[0]
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert ck is not None, "no checkpoint appeared"
    # last.pt is written at every evaluation: 60 steps evaluate every 10 (the protocol's 100 of 600, scaled),
    # so the kill lands at step 10 with 50 steps and five evaluations left for the resumed run
    assert torch.load(ck, weights_only=True)["step"] == 10 and not list(out.glob("runs/cumsum/*/metrics.json"))
    r = _evaluate([*args, "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert _metrics(out) == _metrics(whole)
    hist = json.loads(next(out.glob("runs/cumsum/*/history.json")).read_text())
    assert len(hist["train"]) == 60  # the first 10 steps come from the checkpoint
    r = _evaluate([*args, "--out", str(out)])
    assert "all 1 run(s) already finished" in r.output
    r = _evaluate([f"{path}:build", "--suite", "cumsum", "--steps", "2", "--out", str(out)])
    assert r.exit_code == 0 and "1 run(s) changed config" in r.output
    assert len(list(out.glob("runs/cumsum/*"))) == 2
