"""The ports of PIL's LANCZOS reduction (generators/pathfinder/resample.py) against PIL itself."""
import numpy as np
import pytest
from PIL import Image

from longsynth.generators.pathfinder import resample


def _canvases(rng):
    """Random, sparse and line-like canvases: ringing, clipping and the frame's edge all occur."""
    yield rng.random((48, 48)) * 255
    sparse = np.zeros((60, 60))
    sparse[rng.integers(0, 60, 40), rng.integers(0, 60, 40)] = 255
    yield sparse
    line = np.zeros((66, 66))
    line[30:34, 2:64] = 255  # a bar touching two edges: the weights renormalised at both
    yield line


@pytest.mark.parametrize("aa", [2, 3])
def test_float_reduction_is_pil_mode_f(aa):
    rng = np.random.default_rng(0)
    for big in _canvases(rng):
        n = big.shape[0] // aa
        want = np.asarray(Image.fromarray(big.astype(np.float32)).resize((n, n), Image.LANCZOS))
        got = resample.reduce_float(big.astype(np.float32), n, n)
        assert got.dtype == np.float32
        assert np.array_equal(got, want)


@pytest.mark.parametrize("aa", [2, 3])
def test_8bit_reduction_is_pil_mode_l(aa):
    rng = np.random.default_rng(1)
    for big in _canvases(rng):
        n = big.shape[0] // aa
        u8 = big.astype(np.uint8)
        want = np.asarray(Image.fromarray(u8, mode="L").resize((n, n), Image.LANCZOS))
        got = resample.reduce_8bit(u8, n, n)
        assert np.array_equal(got, want)


def test_non_integer_factor():
    big = np.random.default_rng(2).random((50, 37)).astype(np.float32) * 255
    want = np.asarray(Image.fromarray(big).resize((16, 21), Image.LANCZOS))
    assert np.array_equal(resample.reduce_float(big, 21, 16), want)
    u8 = big.astype(np.uint8)
    assert np.array_equal(resample.reduce_8bit(u8, 21, 16),
                          np.asarray(Image.fromarray(u8, mode="L").resize((16, 21), Image.LANCZOS)))


def test_fixed_point_weights_round_half_away_from_zero():
    one = 1 << resample.PRECISION_BITS
    assert resample.fixed(0.5 / one) == 1 and resample.fixed(-0.5 / one) == -1
    assert resample.fixed(0.49 / one) == 0 and resample.fixed(1.0) == one
    assert resample.clip8(-5 << resample.PRECISION_BITS) == 0 and resample.clip8(300 << resample.PRECISION_BITS) == 255
