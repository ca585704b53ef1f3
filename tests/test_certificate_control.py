"""A certificate that can fail: real data passes, permuted targets fail (a file of its own: pytest-xdist gives
each file to one worker, so this long test runs beside the others)."""
import json

import pytest
import torch

torch.set_num_threads(1)


@pytest.mark.slow  # trains for minutes: left out of the fast subset (README)
def test_a_certificate_fails_on_broken_data_and_passes_on_real_data(tmp_path):
    """cumsum: the reference DLR is its own positive control (paper R^2 1). 200 tiny steps
    reach ~0.96 and pass; the same run with targets permuted across each batch's samples
    (the negative control) stays near 0 and fails. bench/certificate.py does the same for
    select and mips, whose positive control is attention (docs/validation.md)."""
    from longsynth.models_ref.evaluation.validate import validate

    torch.set_num_threads(1)
    real = validate("cumsum", steps=200, report_dir=str(tmp_path / "real"), progress=False)
    torch.set_num_threads(1)
    broken = validate("cumsum", steps=200, report_dir=str(tmp_path / "broken"), progress=False, permute_targets=True)
    torch.set_num_threads(1)
    assert real["certificate"] == {"passed": True, "reasons": [], "can_fail": True}, real["test"]
    assert broken["certificate"]["passed"] is False and "not within 0.1" in broken["certificate"]["reasons"][0]
    assert broken["data"]["permuted_targets"] and broken["test"]["r2"] < 0.5 < real["test"]["r2"]
    assert json.loads((tmp_path / "broken" / "metrics.json").read_text())["certificate"]["passed"] is False
