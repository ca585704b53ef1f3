"""longsynth.plot: the Pillow figures behind previews and certificates."""
import numpy as np

from longsynth import plot

BLUE = plot.COLORS[0]


def blue_rows(img, columns=slice(None)):
    a = np.asarray(img)[:, columns]
    return np.nonzero((a == BLUE).all(axis=-1).any(axis=1))[0]


def test_robust_range_keeps_an_outlier_from_flattening_the_rest():
    series = np.r_[100.0, np.tile([1.0, 2.0], 200)]
    away = slice(200, 800)  # columns far from the outlier at the start
    plain = blue_rows(plot.lines([("loss", series)], panel_height=100), away)
    robust = blue_rows(plot.lines([("loss", series)], panel_height=100, robust=True), away)
    assert np.ptp(plain) <= 3 and np.ptp(robust) >= 90  # the 1..2 wiggle now fills the panel


def test_single_point_is_visible_and_nan_is_skipped():
    img = plot.lines([("one evaluation", [0.5]), ("gaps", [1.0, np.nan, 2.0, 3.0])])
    assert len(blue_rows(img)) >= 4


def test_grid_bars_and_colorize(tmp_path):
    masks = plot.colorize(np.array([[0, 1], [2, 1]]), [(255, 255, 255), (128, 128, 128), (0, 0, 0)])
    assert masks.shape == (2, 2, 3) and tuple(masks[1, 0]) == (0, 0, 0)
    img = plot.grid([np.zeros((8, 8), np.uint8), masks.repeat(4, 0).repeat(4, 1)], tmp_path / "g.png", cols=2,
                    labels=["a", "b"], scale=2)
    assert (tmp_path / "g.png").exists() and img.size[0] > 32
    hist = plot.bars([("lengths", np.linspace(0, 1, 6), [1, 5, 2, 0, 3])], tmp_path / "h.png")
    assert len(blue_rows(hist)) > 10
