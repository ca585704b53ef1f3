"""The evaluate harness: the model contract, its checks, sweeps, reports, and validate on top of it."""
import json
import os

import pytest

import torch

from longsynth.store import generate

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)


# ---------------------------------------------------------------- validate keeps its certificates


def test_validate_gives_the_certificates_it_gave_before_the_harness(tmp_path):
    """The same metrics, to float rounding, as validate before it ran on the harness
    (tests/data/validate_before.json): one atomic task on the fly, one stored dataset."""
    from longsynth.models_ref.validate import validate

    before = json.load(open(os.path.join(HERE, "data", "validate_before.json")))["runs"]
    torch.set_num_threads(1)
    otf = validate("cumsum", model="dlr", scale="tiny", steps=30, report_dir=str(tmp_path / "otf"), progress=False)
    root = str(tmp_path / "ds")
    generate(root, "select-fixed", {"L": 64}, seed=1, splits={"train": 64, "val": 32, "test": 32}, workers=1)
    torch.set_num_threads(1)
    st = validate(root, model="dlr", steps=6, batch_size=8, report_dir=str(tmp_path / "st"), progress=False)
    torch.set_num_threads(1)
    for name, now in (("cumsum-otf", otf), ("select-fixed-stored", st)):
        was = before[name]
        assert now["best_step"] == was["best_step"]
        for part in ("test", "best", "final"):
            for key in ("r2", "loss"):
                assert now[part][key] == pytest.approx(was[part][key], rel=1e-5, abs=1e-7), (name, part, key)
            assert now[part]["exact"]["r2"] == pytest.approx(was[part]["exact"]["r2"], rel=1e-5, abs=1e-7)
    m = json.loads((tmp_path / "st" / "metrics.json").read_text())
    assert m["protocol"] == "atomic" and m["model_config"]["layer"] == "dlr" and m["train_config"]["steps"] == 6
    assert (tmp_path / "st" / "curves.png").stat().st_size > 1000
