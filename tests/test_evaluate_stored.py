"""evaluate on stored data (--data DIR): a bidirectional protocol on a stored Pathfinder-Seg dataset (a file
of its own: pytest-xdist gives each file to one worker, so this long test runs beside the others)."""
import json

import pytest

from longsynth.store import generate
from test_evaluate import _evaluate


@pytest.mark.slow  # trains for minutes: left out of the fast subset (README)
def test_local_attention_runs_a_stored_pathfinder_protocol_from_data(tmp_path):
    """A bidirectional protocol on stored data (--data DIR with one dataset per protocol):
    local attention is built not causal, the report shows the paper's LOCALATTENTION figure."""
    data = tmp_path / "data"
    generate(str(data / "pathfinder-seg-128"), "pathfinder-seg", {"size": 128}, seed=0,
             splits={"train": 4, "val": 4, "test": 4}, workers=1)
    out = tmp_path / "rep"
    r = _evaluate(["local-attention", "--suite", "pathfinder-seg-128", "--steps", "1", "--data", str(data),
                   "--out", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "report.json").read_text())
    run = rep["runs"][0]
    assert run["model_config"]["layer"] == "local-attention" and run["model_config"]["bidirectional"]
    assert run["spec"]["seq_len"] == 128 * 128 and not run["spec"]["causal"] and run["primary_metric"] == "macro_f1"
    assert rep["rows"][0]["paper"]["attention"] == 0.84  # Table 3: LOCALATTENTION 84.0 macro F1 at 128 px
    r = _evaluate(["local-attention", "--suite", "pathfinder-seg-256", "--steps", "2", "--data", str(data),
                   "--out", str(out)])
    assert r.exit_code == 1 and "pathfinder-seg-256 does not exist" in r.output
