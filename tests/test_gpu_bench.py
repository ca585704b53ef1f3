"""bench/gpu.py, the command a session lent a GPU runs (docs/validation.md, "Findings"): its plan
runs on the CPU with --smoke, writes each cell's report and a summary, and refuses to start a
paper-scale plan where there is no CUDA device."""
import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "gpu.py")
# a bench/ script imports its own folder's modules (bench/_common.py), which PYTHONSAFEPATH (tests/conftest.py) hides
SCRIPT_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}


@pytest.mark.slow  # a tiny evaluate run in a subprocess: about 15 s
def test_smoke_plan_writes_each_cells_report(tmp_path):
    out = tmp_path / "gpu"
    # run from tmp_path: its `python -m longsynth evaluate` then imports the longsynth this test imports, where from
    # the checkout it imported the source tree, another copy with a Numba cache of its own (on CI's clean clone the
    # cumsum kernels compiled again), as conftest.py's PYTHONSAFEPATH keeps the other tests' subprocesses from doing
    r = subprocess.run([sys.executable, BENCH, "--smoke", "--out", str(out), "--only", "dlr-t1-cumsum"],
                       capture_output=True, text=True, timeout=600, env=SCRIPT_ENV, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((out / "gpu.json").read_text())
    assert [c["name"] for c in summary["cells"]] == ["dlr-t1-cumsum"]
    for c in summary["cells"]:
        assert c["returncode"] == 0 and c["rows"], c
        assert "--scale" in c["command"] and "tiny" in c["command"] and "cpu" in c["command"]
        assert (out / c["name"] / "report.md").exists()
        assert "not a verdict" in (out / c["name"] / "report.md").read_text()  # 3 steps: a budget cut


def test_the_paper_plan_needs_a_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: the paper plan would start")
    r = subprocess.run([sys.executable, BENCH, "--out", str(tmp_path / "g")], capture_output=True, text=True,
                       timeout=120, env=SCRIPT_ENV)
    assert r.returncode != 0 and "no CUDA device here" in r.stderr
    assert not (tmp_path / "g").exists()
