"""eSSM learns CumSum at the tiny preset through the harness (S4 and S4D: test_s4_learning.py)."""
import pytest

from test_s4_learning import learns_cumsum


@pytest.mark.slow  # trains through the harness: left out of the fast subset (README)
def test_essm_learns_cumsum_at_the_tiny_preset(tmp_path):
    assert learns_cumsum("essm", 300, tmp_path) >= 0.95  # seeds 0-4: >= 0.991 (test_s4_learning.py)
