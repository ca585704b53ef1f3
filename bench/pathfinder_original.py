"""Run the original Pathfinder generator (drewlinsley/pathfinder at ab9c130) with LRA's settings.

    python bench/pathfinder_original.py SRC SIZE DIFFICULTY N BATCH OUTROOT

SRC is a checkout of the original (``snakes.py``, ``snakes2.py``), run unchanged: this script
only supplies what Python 3 and today's libraries removed (SciPy 1.2's ``scipy.misc``
``imresize`` / ``imsave`` with their ``toimage`` / ``bytescale`` 8-bit conversion, written
here from their documented behaviour; ``numpy.float``, ``numpy.round_``) and a stand-in for
matplotlib (never drawn). It sets LRA's settings block for SIZE (the values of
``longsynth.generators.pathfinder.lra``; docs/tasks/pathfinder.md, "Classic Pathfinder"
cites their sources) and DIFFICULTY's dataset section, seeds NumPy's and Python's global
generators with BATCH, and writes N images to ``OUTROOT/<SIZE>/<difficulty folder>/``
(imgs/BATCH/, metadata/BATCH.npy), the layout ``bench/lra_pathfinder_fidelity.py`` reads.
Needs opencv-python-headless besides longsynth's dependencies.
"""
import os
import random
import sys
import types

import numpy as np
from PIL import Image


def bytescale(data, cmin=None, cmax=None, high=255, low=0):
    """SciPy 1.2: linear map of [cmin, cmax] (default: the data's range) to [low, high], clipped,
    + 0.5 and truncated to uint8; uint8 input unchanged."""
    data = np.asarray(data)
    if data.dtype == np.uint8:
        return data
    cmin = data.min() if cmin is None else cmin
    cmax = data.max() if cmax is None else cmax
    cscale = cmax - cmin
    cscale = 1 if cscale == 0 else cscale
    scale = float(high - low) / cscale
    return ((data - cmin) * scale + low).clip(low, high).__add__(0.5).astype(np.uint8)


def toimage(arr):
    """SciPy 1.2 for a 2-D array and no mode: the bytescaled array as an 8-bit image."""
    return Image.fromarray(bytescale(arr), mode="L")


def imresize(arr, size, interp="bilinear"):
    """SciPy 1.2: toimage, PIL resize to (rows, cols) = size (lanczos is PIL's filter 1), back to an array."""
    resample = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "cubic": 3}[interp]
    return np.asarray(toimage(arr).resize((size[1], size[0]), resample=resample))


def imsave(name, arr):
    toimage(arr).save(name)


def install_shims():
    import scipy

    misc = types.ModuleType("scipy.misc")
    misc.imresize, misc.imsave, misc.bytescale, misc.toimage = imresize, imsave, bytescale, toimage
    scipy.misc = misc
    sys.modules["scipy.misc"] = misc
    np.float = float
    np.round_ = np.round
    plt = types.ModuleType("matplotlib.pyplot")
    mpl = types.ModuleType("matplotlib")
    mpl.pyplot = plt
    sys.modules.setdefault("matplotlib", mpl)
    sys.modules["matplotlib.pyplot"] = plt


class Args:
    """The wrapper's Args defaults that LRA's blocks leave alone, then the block's values."""


def lra_args(size, difficulty, n, batch, root):
    from longsynth.generators.pathfinder.lra import DIRS, SIZE_PRESETS, preset

    p, block = preset(size, difficulty), SIZE_PRESETS[size]
    a = Args()
    a.contour_path = os.path.join(root, str(size), DIRS[difficulty])
    a.batch_id, a.n_images = batch, n
    a.window_size = [size, size]
    a.padding = block["border"]
    a.antialias_scale = block["antialias_scale"]
    a.LABEL = 1
    a.seed_distance = block["seed_distance"]
    a.marker_radius = block["marker_radius"]
    a.contour_length = p["contour_length"]
    a.distractor_length = p["distractor_length"]
    a.num_distractor_snakes = p["distractors"]
    # main dashes: paddle contrast x snake contrast; distractors: the snake contrast
    a.snake_contrast_list = [block["distractor_contrast"]]
    a.paddle_contrast_list = [block["contrast"] / block["distractor_contrast"]]
    a.use_single_paddles = False
    a.max_target_contour_retrial = 4
    a.max_distractor_contour_retrial = 4
    a.max_paddle_retrial = 2
    a.continuity = block["continuity"]
    a.paddle_length = block["paddle_length"]
    a.paddle_thickness = block["paddle_thickness"]
    a.paddle_margin_list = list(range(block["margin_min"], block["margin_max"] + 1))
    a.pause_display = False
    a.save_images = True
    a.save_metadata = True
    a.segmentation_task = False
    a.segmentation_task_double_circle = False
    return a


def main():
    src, size, difficulty, n, batch, root = sys.argv[1:7]
    install_shims()
    sys.path.insert(0, os.path.abspath(src))
    import snakes2

    args = lra_args(int(size), difficulty, int(n), int(batch), root)
    np.random.seed(int(batch))
    random.seed(int(batch))
    snakes2.from_wrapper(args)


if __name__ == "__main__":
    main()
