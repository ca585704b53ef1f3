"""longsynth.plot: the figures behind previews, dataset summaries and certificates."""
import numpy as np
import pytest

from longsynth import plot


def test_robust_range_keeps_an_outlier_from_flattening_the_rest():
    series = np.r_[100.0, np.tile([1.0, 2.0], 200)]
    plain = plot.lines([("loss", series)], panel_height=100).axes[0].get_ylim()
    robust = plot.lines([("loss", series)], panel_height=100, robust=True).axes[0].get_ylim()
    assert plain[1] >= 100 and robust[1] < 3  # the 1..2 wiggle now fills the panel


def test_robust_is_chosen_per_panel():
    """A few-point panel keeps its real range beside a clipped long one; a flag list of the wrong size is refused."""
    loss = np.r_[100.0, np.tile([1.0, 2.0], 200)]
    val = np.r_[0.9, np.ones(99)]  # a lone first reading below a flat 1.0
    fig = plot.lines([("loss", loss), ("val", val)], robust=[True, False])
    assert fig.axes[0].get_ylim()[1] < 3 and fig.axes[1].get_ylim()[0] <= 0.9
    assert fig.axes[1].lines[0].get_ydata()[0] == 0.9  # drawn where it is, not at an edge
    with pytest.raises(ValueError, match="2 flags for 1 panels"):
        plot.lines([("loss", loss)], robust=[True, False])


def test_one_evaluation_has_integer_ticks_and_nan_is_skipped(tmp_path):
    fig = plot.lines([("one evaluation", [0.5], [20]), ("gaps", [1.0, np.nan, 2.0, 3.0])], tmp_path / "l.png")
    ticks = fig.axes[0].get_xticks()
    lo, hi = fig.axes[0].get_xlim()
    shown = [t for t in ticks if lo <= t <= hi]
    assert 20 in shown and all(float(t).is_integer() for t in shown), shown
    assert fig.axes[0].lines[0].get_marker() == "o"  # a single point is drawn as a dot
    assert (tmp_path / "l.png").stat().st_size > 1000


def test_integer_quantities_get_integer_ticks(tmp_path):
    heights = np.arange(0, 17) - 0.5  # bins centred on heights 0..15
    fig = plot.bars([("subtree height", heights, np.arange(16))], tmp_path / "h.png")
    lo, hi = fig.axes[0].get_xlim()
    shown = [t for t in fig.axes[0].get_xticks() if lo <= t <= hi]
    assert len(shown) >= 4 and all(float(t).is_integer() for t in shown), shown
    fig = plot.lines([("loss", np.linspace(3.0, 0.2, 500), np.arange(1, 501))], width=600)
    assert len(fig.axes[0].get_yticks()) >= 4


def test_grid_and_colorize(tmp_path):
    masks = plot.colorize(np.array([[0, 1], [2, 1]]), [(255, 255, 255), (128, 128, 128), (0, 0, 0)])
    assert masks.shape == (2, 2, 3) and tuple(masks[1, 0]) == (0, 0, 0)
    img = plot.grid([np.zeros((8, 8), np.uint8), masks.repeat(4, 0).repeat(4, 1)], tmp_path / "g.png", cols=2,
                    labels=["a", "b"], scale=2)
    assert (tmp_path / "g.png").exists() and img.size[0] > 32
