"""bench/gpu.py, the command a session lent a GPU runs (docs/validation.md, "Findings"): every cell of its
plans has a preset at the scale it runs on the GPU and at the one --smoke runs; the smoke plan runs on the CPU
(a cell of each plan here: the whole of both takes minutes), writes each cell's report and a summary; it refuses
an unknown --only, and a GPU plan where there is no CUDA device."""
import json
import os
import subprocess
import sys

import pytest

BENCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
BENCH = os.path.join(BENCH_DIR, "gpu.py")
# a bench/ script imports its own folder's modules (bench/_common.py), which PYTHONSAFEPATH (tests/conftest.py) hides
SCRIPT_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.syspath_prepend(BENCH_DIR)
    import gpu

    return gpu


def test_every_cell_has_a_preset_on_the_gpu_and_in_the_smoke_plan(gpu):
    """The cells the smoke runs here do not include the slow ones (RegBench's Transformer: a minute at its smoke
    scale), so each cell's model is checked to have a row at both its scales; a name the GPU would refuse
    costs a lent machine's minutes."""
    from longsynth.models_ref.evaluation.plan import suite_tasks
    from longsynth.models_ref.protocols.registry import architecture

    names = [f"{group}-{model}" for cells in gpu.PLANS.values() for group, model, *_ in cells]
    assert len(set(names)) == len(names)  # one report folder each, whichever plans share an --out
    for cells in gpu.PLANS.values():
        for group, model, suite, scale, steps, *seeds in cells:
            assert seeds in ([], [3]), (group, model, seeds)  # a cell's runs: one seed, or a best-of
            for at in (scale, gpu.SMOKE.get(model, ("tiny",))[0]):
                for protocol, _ in suite_tasks(suite, at):
                    assert architecture(protocol, at, model) is not None, (group, model, protocol, at)
    assert architecture("regbench", "tiny", "seq-icl-transformer") is None  # why --smoke runs it at the laptop scale


def test_only_names_cells_or_groups_of_the_plan(gpu, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["gpu.py", "--out", str(tmp_path / "g"), "--only", "chomsky-cs"])
    with pytest.raises(SystemExit, match="no cell or group chomsky-cs in the main plan"):
        gpu.main()
    assert not (tmp_path / "g").exists()


@pytest.mark.slow  # a tiny evaluate run in a subprocess each: about 10 s
@pytest.mark.parametrize("plan, only, names", [("main", "dlr-t1-cumsum", ["dlr-t1-cumsum-dlr"]),  # a group
                                               ("extra", "chomsky-regular-rnn", ["chomsky-regular-rnn"])])  # a cell
def test_smoke_plan_writes_each_cells_report(tmp_path, plan, only, names):
    out = tmp_path / "gpu"
    # run from tmp_path: its `python -m longsynth evaluate` then imports the longsynth this test imports, where from
    # the checkout it imported the source tree, another copy with a Numba cache of its own (on CI's clean clone the
    # cumsum kernels compiled again), as conftest.py's PYTHONSAFEPATH keeps the other tests' subprocesses from doing
    r = subprocess.run([sys.executable, BENCH, "--smoke", "--out", str(out), "--plan", plan, "--only", only],
                       capture_output=True, text=True, timeout=600, env=SCRIPT_ENV, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((out / "gpu.json").read_text())
    assert summary["plan"] == plan and [c["name"] for c in summary["cells"]] == names
    for c in summary["cells"]:
        assert c["returncode"] == 0 and c["rows"], c
        assert "--scale" in c["command"] and "tiny" in c["command"] and "cpu" in c["command"]
        assert (out / c["name"] / "report.md").exists()
        assert "not a verdict" in (out / c["name"] / "report.md").read_text()  # 3 steps: a budget cut


def test_the_paper_plan_needs_a_gpu(gpu, monkeypatch, tmp_path):
    """Checked in this process with CUDA hidden (a subprocess spent seconds importing torch to refuse), so it
    runs on a machine with a GPU too."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu, "run_cell", lambda *a: pytest.fail("a cell started without a CUDA device"))
    monkeypatch.setattr(sys, "argv", ["gpu.py", "--out", str(tmp_path / "g")])
    with pytest.raises(SystemExit, match="no CUDA device here"):
        gpu.main()
    assert not (tmp_path / "g").exists()
