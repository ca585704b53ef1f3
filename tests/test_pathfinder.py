"""pathfinder-seg: image-level checks of TASKS.md's definition (never the renderer's internals).

Most checks run on 128 px batches; a few 256 / 512 images cover the other presets.
"""
import os
import pickle

import numpy as np
import pytest

import longsynth
from longsynth import registry, store
from longsynth.store import sample_digest

import naive

TASK = "pathfinder-seg"
SIZES = (128, 256, 512)
COUNTS = {128: 200, 256: 16, 512: 6}  # images checked per preset in the structural tests


@pytest.fixture(scope="module")
def batches():
    return {size: longsynth.batch(TASK, 0, COUNTS[size], seed=11, size=size) for size in SIZES}


def cfg_of(size, **params):
    return registry.get(TASK).make_config(size=size, **params)


def rows(b):
    for i in range(b["inputs"].shape[0]):
        yield {k: v[i] for k, v in b.items()}


# ---------------------------------------------------------------- configuration


def test_presets_resolve_from_size():
    c = cfg_of(256)
    assert (c.paddle_length, c.paddle_thickness, c.margin_min, c.margin_max, c.continuity) == (8.0, 2.0, 4, 4, 2.2)
    assert (c.contour_length, c.distractor_length, c.distractors, c.seed_distance) == (16, 5, 16, 27.0)
    assert (c.marker_radius, c.antialias_scale, c.contrast, c.mark_distractors, c.border) == (4.2, 2, 1.0, True, 1)
    c = cfg_of(128)
    assert (c.margin_min, c.margin_max, c.contrast, c.paddle_thickness) == (2, 3, 0.9, 1.5)
    c = cfg_of(512, distractors=3)
    assert (c.paddle_length, c.distractors, c.antialias_scale, c.marker_radius) == (22.0, 3, 3, 9.0)
    # a resolved config resolves to itself (the manifest stores resolved values)
    t = registry.get(TASK)
    import dataclasses

    assert t.make_config(**dataclasses.asdict(c)) == c


@pytest.mark.parametrize("params, field", [
    (dict(size=100), "size"),
    (dict(margin_min=4, margin_max=3), "margin_min"),
    (dict(contrast=0.01, antialias_scale=8), "contrast"),
    (dict(continuity=0.5), "continuity"),
    (dict(bogus=1), "bogus"),
])
def test_bad_parameters_are_rejected(params, field):
    with pytest.raises(ValueError, match=field):
        registry.get(TASK).make_config(**params)


def test_impossible_request_raises_instead_of_dropping_paths():
    with pytest.raises(ValueError, match="distractors"):
        longsynth.sample(TASK, 0, seed=0, size=128, distractors=400)


# ---------------------------------------------------------------- labels and paths


@pytest.mark.parametrize("size", SIZES)
def test_labels_only_where_lit_and_class2_iff_connected(batches, size):
    b = batches[size]
    assert b["targets"].max() <= 2
    for s in rows(b):
        assert not np.any((s["targets"] > 0) & (s["inputs"] == 0))
        assert bool(np.any(s["targets"] == 2)) == bool(s["connected"])
        assert np.any(s["targets"] == 1)  # the other main path (or both when disconnected)


@pytest.mark.parametrize("size", SIZES)
def test_main_paths_form_exactly_two_groups(batches, size):
    """Joining pixels whose centres are at most margin + 1 apart (gaps between the dashes
    of a path) leaves exactly two groups, each of one class; connected images have one
    class-2 and one class-1 group."""
    for s in rows(batches[size]):
        mask = s["targets"] > 0
        pts, labels, count = naive.joined_groups(mask, int(s["margin"]) + 1)
        assert count == 2
        classes = s["targets"][pts[:, 0].astype(int), pts[:, 1].astype(int)]
        per_group = [set(classes[labels == g].tolist()) for g in range(2)]
        assert all(len(c) == 1 for c in per_group)
        expected = [{1}, {2}] if s["connected"] else [{1}, {1}]
        assert sorted(per_group, key=min) == expected


@pytest.mark.parametrize("size", SIZES)
def test_path_ends_lie_in_the_marker_disks(batches, size):
    """Connected: both ends of the class-2 path are inside the two main markers' disks.
    Disconnected: the start marker holds an end of one main path, the end marker an end
    of the other."""
    cfg = cfg_of(size)
    r = cfg.marker_radius
    for s in rows(batches[size]):
        m0, m1 = s["marker_centers"][0].astype(np.float64), s["marker_centers"][1].astype(np.float64)
        if s["connected"]:
            a, b = naive.path_ends(s["targets"] == 2, int(s["margin"]) + 1)
            d = lambda p, q: float(np.hypot(*(p - q)))  # noqa: E731
            assert min(max(d(a, m0), d(b, m1)), max(d(a, m1), d(b, m0))) <= r
        else:
            link = int(s["margin"]) + 1
            pts, labels, _ = naive.joined_groups(s["targets"] > 0, link)
            near = np.zeros((2, 2), dtype=bool)  # near[group, marker]: an end of group in marker disk
            for g in range(2):
                grp = np.zeros(s["targets"].shape, dtype=bool)
                grp[pts[labels == g, 0].astype(int), pts[labels == g, 1].astype(int)] = True
                for e in naive.path_ends(grp, link):
                    for k, m in enumerate((m0, m1)):
                        near[g, k] |= float(np.hypot(*(e - m))) <= r
            assert (near[0, 0] and near[1, 1]) or (near[0, 1] and near[1, 0])


@pytest.mark.parametrize("size", SIZES)
def test_markers_are_drawn_and_counted(batches, size):
    cfg = cfg_of(size)
    full = int(np.floor(255 * cfg.contrast + 0.5))
    M = cfg.size
    yy, xx = np.mgrid[0:M, 0:M]
    for s in rows(batches[size]):
        assert s["marker_centers"].shape == (2 + int(s["distractors"]), 2)
        assert int(s["distractors"]) == cfg.distractors
        assert s["main_dashes"].tolist() == [cfg.contour_length] * 2
        assert cfg.margin_min <= int(s["margin"]) <= cfg.margin_max
        for r, c in s["marker_centers"].astype(np.float64):
            inner = np.hypot(yy - r, xx - c) <= cfg.marker_radius - 0.75
            assert inner.sum() >= 1
            assert np.all(s["inputs"][inner] == full)


def test_unmarked_distractors_give_two_markers():
    s = longsynth.sample(TASK, 3, seed=0, size=128, mark_distractors=False)
    assert s["marker_centers"].shape == (2, 2)
    assert int(s["distractors"]) == 16


# ---------------------------------------------------------------- statistics per preset

# Measured on seed 5 (128: 400 images, 256: 40, 512: 12): lit 0.0742 / 0.0497 / 0.0686,
# components 91.5 / 111.8 / 95.5 (of 92 / 112 / 96 dashes: markers sit on dash starts),
# class 1 0.0137 / 0.0072 / 0.0106, class 2 0.0050 / 0.0031 / 0.0028. Bands: about +-12%
# (lit), at most the number of dashes (components), +-20-50% (class shares, which move
# with the connected fraction of few images).
BANDS = {
    # size: lit fraction, mean 8-connected components of lit pixels, class-1 share, class-2 share
    128: dict(lit=(0.066, 0.083), comps=(84, 92.5), c1=(0.0115, 0.0160), c2=(0.0038, 0.0062)),
    256: dict(lit=(0.044, 0.056), comps=(105, 112.5), c1=(0.0060, 0.0085), c2=(0.0022, 0.0040)),
    512: dict(lit=(0.061, 0.077), comps=(90, 96.5), c1=(0.0085, 0.0125), c2=(0.0015, 0.0045)),
}
STAT_COUNTS = {128: 400, 256: 40, 512: 12}


@pytest.mark.parametrize("size", SIZES)
def test_statistics_stay_in_bands(size):
    n = STAT_COUNTS[size]
    b = longsynth.batch(TASK, 0, n, seed=5, size=size)
    band = BANDS[size]
    lit = (b["inputs"] > 0).mean()
    comps = np.mean([naive.components8(b["inputs"][i] > 0) for i in range(n)])
    c1 = (b["targets"] == 1).mean()
    c2 = (b["targets"] == 2).mean()
    got = dict(lit=lit, comps=comps, c1=c1, c2=c2)
    for k, (lo, hi) in band.items():
        assert lo <= got[k] <= hi, (k, got[k])
    p = b["connected"].mean()
    assert abs(p - 0.5) <= 4 * np.sqrt(0.25 / n)
    # anti-aliasing: intermediate grey levels exist, the full level is 255 * contrast
    cfg = cfg_of(size)
    assert b["inputs"].max() == int(np.floor(255 * cfg.contrast + 0.5))
    assert len(np.unique(b["inputs"])) > 3


# ---------------------------------------------------------------- identity and storage

GOLDEN = {  # sample_digest of samples 0 and 1, seed 0, train
    128: ["ce9fcaeb1664c2c383be6b09978256940127c6931979041510d492167c7454fc",
          "aaf3990b39db438d1b30d8f4ac970b2f3569397190d02f6f00523344616c9f72"],
    256: ["dc50d135dcb61745d74ee3ccc599350b26d71efcc2ecaf7bbb73f18fc08152d5",
          "c9f6f75c4240f54e58586c505cd8e8b133e00793cd94aa2c1792f800b0af7512"],
    512: ["d9692610a4a3c4d36c2db1c37ef5cfe00b38ff285a8e67eefd395310f64d3dc1",
          "d47cbec78a8848d72554ab4638b2b2daf74814a66b493561ccb6bc6713bbc7b0"],
}


@pytest.mark.parametrize("size", SIZES)
def test_golden_digests(size):
    got = [sample_digest(longsynth.sample(TASK, i, seed=0, size=size)).hex() for i in range(2)]
    assert got == GOLDEN[size]


def test_sample_equals_batch_row_and_keys_differ():
    b = longsynth.batch(TASK, 5, 3, seed=2, size=128)
    for j in range(3):
        s = longsynth.sample(TASK, 5 + j, seed=2, size=128)
        assert sample_digest(s) == sample_digest({k: v[j] for k, v in b.items()})
    other = [longsynth.sample(TASK, 5, seed=2, size=128, split="val"), longsynth.sample(TASK, 5, seed=3, size=128),
             longsynth.sample(TASK, 6, seed=2, size=128)]
    assert len({sample_digest(s) for s in other} | {sample_digest({k: v[0] for k, v in b.items()})}) == 4


def test_stored_dataset_matches_api_and_export(tmp_path):
    root = tmp_path / "ds"
    store.generate(str(root), TASK, {"size": 128}, seed=4, splits={"train": 5, "val": 2, "test": 1},
                   shard_size=3, workers=1)
    ds = store.open(str(root))
    for split, sp in ds.splits.items():
        for i in range(len(sp)):
            assert sample_digest(sp[i]) == sample_digest(longsynth.sample(TASK, i, seed=4, split=split, size=128))
    assert store.verify(str(root), deep=True) == []

    out = tmp_path / "dlr"
    seen = []
    registry.get(TASK).exporters["dlr-pathfinder"](ds, str(out), seen.append)
    assert sum(seen) == 8
    from PIL import Image

    meta = np.load(out / "metadata" / "0.npy")
    assert meta.shape[0] == 8
    flat = [(split, i) for split, sp in ds.splits.items() for i in range(len(sp))]
    for row in meta.tolist():
        split, i = flat[int(row[2])]
        s = ds[split][i]
        img = np.asarray(Image.open(out / row[0] / row[1]).convert("L"))
        assert np.array_equal(img, s["inputs"])
        assert int(row[3]) == int(bool(s["connected"]))
        with open(out / row[0].replace("imgs/", "paths/") / row[1].replace(".png", ".pkl"), "rb") as f:
            d = pickle.load(f)
        assert set(d) == {"segs", "origin_tips", "terminal_tips", "marker_indices", "image_size"}
        _plain(d)
        # the authors' prepare_target: label mask = max over main paths of 1 + (both markers on it)
        o, t = d["marker_indices"]
        assert int(row[3]) == int(o == t)
        paths = []
        for k, inds in enumerate(d["segs"]):
            p = np.zeros(d["image_size"], dtype=np.int16)
            p[inds] = 1 + (o == t == k)
            paths.append(p)
        assert np.array_equal(np.maximum(*paths), s["targets"])
        assert np.allclose(d["origin_tips"][o], s["marker_centers"][0], atol=0.5)
        assert np.allclose(d["terminal_tips"][t], s["marker_centers"][1], atol=0.5)
    ds.close()


def _plain(x):
    """Only Python ints/floats/strs, tuples/lists/dicts of them, and numpy arrays."""
    if isinstance(x, dict):
        for k, v in x.items():
            assert type(k) is str
            _plain(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _plain(v)
    else:
        assert type(x) in (int, float, str) or type(x) is np.ndarray, type(x)


# ---------------------------------------------------------------- preview


def test_show_writes_image_and_three_colour_masks(tmp_path):
    from PIL import Image

    t = registry.get(TASK)
    cfg = cfg_of(128)
    samples = [longsynth.sample(TASK, i, seed=0, size=128) for i in range(4)]
    path = str(tmp_path / "grid.png")
    text = t.show(samples, cfg, path)
    assert text.count("\n") == 3 and ("disconnected" in text) == any(not s["connected"] for s in samples)
    img = np.asarray(Image.open(path).convert("RGB"))
    assert img.shape[0] >= 2 * 128 and img.shape[1] >= 4 * 2 * 128
    colours = {tuple(c) for c in img.reshape(-1, 3)[::7]}
    assert (150, 150, 150) in colours and (0, 0, 0) in colours and (255, 255, 255) in colours
    assert os.path.getsize(path) > 1000
