"""pathfinder-seg: image-level checks of the definition in docs/tasks/pathfinder.md (never the renderer's internals).

Most checks run on 128 px batches; a few 256 / 512 images cover the other presets.
"""
import json
import os
import pickle

import numpy as np
import pytest

import longsynth
from longsynth import exports, registry, store
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
    assert (c.paddle_length, c.distractors, c.antialias_scale, c.marker_radius) == (22, 3, 3, 9.0)
    assert (c.distractor_tries, c.exact_restarts) == (5, True)  # the authors' laws
    # a resolved config resolves to itself (the manifest stores resolved values)
    t = registry.get(TASK)
    import dataclasses

    assert t.make_config(**dataclasses.asdict(c)) == c


@pytest.mark.parametrize("params, field", [
    (dict(size=100), "size"),
    (dict(margin_min=4, margin_max=3), "margin_min"),
    (dict(paddle_thickness=1.3), "paddle_thickness"),  # times antialias_scale 2 is not whole
    (dict(paddle_length=60), "paddle_length"),
    (dict(continuity=0.5), "continuity"),
    (dict(bogus=1), "bogus"),
])
def test_bad_parameters_are_rejected(params, field):
    with pytest.raises(ValueError, match=field):
        registry.get(TASK).make_config(**params)


def test_impossible_request_raises_instead_of_dropping_paths():
    with pytest.raises(ValueError, match="^distractors: could not place every distractor"):
        longsynth.sample(TASK, 0, seed=0, size=128, distractors=400, distractor_tries=0)
    with pytest.raises(ValueError, match="^contour_length: the two main paths"):
        longsynth.sample(TASK, 0, seed=0, size=128, contour_length=200, exact_restarts=False)


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
def test_images_and_labels_equal_the_naive_composition(batches, size):
    """Given the drawn geometry (dashes, markers), the image and labels are exactly what the
    authors' image formation gives (tests/naive/pathfinder.py draws every dash with PIL)."""
    cfg = cfg_of(size)
    for s in list(rows(batches[size]))[:3]:
        img, tgt, peak = naive.pathfinder_compose(
            s["dashes"], s["marker_centers"], int(s["margin"]), bool(s["connected"]), cfg.paddle_length,
            cfg.paddle_thickness, cfg.antialias_scale, cfg.contrast, cfg.marker_radius, cfg.contour_length, size)
        assert np.array_equal(img, s["inputs"])
        assert np.array_equal(tgt, s["targets"])
        assert np.isclose(peak, s["peak"], rtol=1e-6)


def _paths(s, cfg):
    """Dash lists of each path: (back end, front end) in pixels, in drawing order."""
    d = np.asarray(s["dashes"], dtype=np.float64)
    aa = cfg.antialias_scale
    n, k = cfg.contour_length, cfg.distractor_length
    bounds = [(0, n), (n, 2 * n)] + [(2 * n + i * k, 2 * n + (i + 1) * k) for i in range(int(s["distractors"]))]
    out = []
    for a, b in bounds:
        path = []
        for q in range(a, b):
            start, end = d[q, :2], d[q, :2] + d[q, 2:] / aa
            # a path's first dash is drawn forwards from its tail, later ones backwards from their head
            path.append((start, end) if q == a else (end, start))
        out.append(path)
    return out


@pytest.mark.parametrize("size", SIZES)
def test_paths_follow_the_dash_rules(batches, size):
    """docs/tasks/pathfinder.md: dashes of paddle_length; each next dash starts about 2 margin beyond the
    previous one's front (the pivot sits margin beyond it, the circle of radius
    paddle_length + margin about the pivot); turns at most pi / (2 continuity)."""
    cfg = cfg_of(size)
    turn_max = np.pi / (2 * cfg.continuity)
    for s in rows(batches[size]):
        m = int(s["margin"])
        for path in _paths(s, cfg):
            for back, front in path:
                assert abs(np.hypot(*(front - back)) - cfg.paddle_length) <= 1.0
            for (b0, f0), (b1, f1) in zip(path, path[1:]):
                assert np.hypot(*(b1 - f0)) <= 2 * m + 3.0  # + ceil roundings of pivot and ends
                u, v = f0 - b0, f1 - b1
                turn = np.arccos(np.clip(u @ v / np.hypot(*u) / np.hypot(*v), -1, 1))
                assert turn <= turn_max + 0.3  # + the rounding of dash ends to (sub)pixels


@pytest.mark.parametrize("size", SIZES)
def test_markers_sit_on_path_ends(batches, size):
    """Start marker on the marked path's tail; end marker on the head of the same path
    (connected) or of the other; each distractor's marker just behind its tail."""
    cfg = cfg_of(size)
    n = cfg.contour_length
    for s in rows(batches[size]):
        d, mk = np.asarray(s["dashes"]), np.asarray(s["marker_centers"])
        assert mk[0].tolist() == d[0, :2].tolist()
        last = n - 1 if s["connected"] else 2 * n - 1
        assert mk[1].tolist() == d[last, :2].tolist()
        placed = int(s["distractors"])
        for i in range(placed):
            tail = d[2 * n + i * cfg.distractor_length, :2]
            assert np.hypot(*(mk[2 + i] - tail)) <= int(s["margin"]) + 3.0  # + two ceil roundings per axis
        assert (mk[2 + placed:] == -1).all()  # dropped distractors carry no marker
        for r, c in mk[:2 + placed]:  # a marker is drawn there: a bright disk (the peak of the image is a marker's)
            assert s["inputs"][r, c] >= 128
            assert s["inputs"][max(r - 1, 0):r + 2, max(c - 1, 0):c + 2].max() >= 200


@pytest.mark.parametrize("size", SIZES)
def test_counts_are_what_was_drawn(batches, size):
    cfg = cfg_of(size)
    for s in rows(batches[size]):
        assert s["main_dashes"].tolist() == [cfg.contour_length] * 2
        k = int(s["distractors"])  # the authors' rule drops a distractor after 5 failed tries
        assert cfg.distractors // 2 <= k <= cfg.distractors
        drawn = 2 * cfg.contour_length + k * cfg.distractor_length
        assert (np.asarray(s["dashes"])[:drawn, :2] >= 0).all() and (np.asarray(s["dashes"])[drawn:] == -1).all()
        assert (np.asarray(s["marker_centers"])[:2 + k] >= 0).all()
        assert cfg.margin_min <= int(s["margin"]) <= cfg.margin_max


def test_the_authors_dropping_rule_drops_and_marks_rows():
    """distractor_tries=5 (theirs): some distractors are dropped in a crowded frame, counted,
    their rows set to -1, and the image still equals its naive composition."""
    cfg = cfg_of(128, distractors=40, distractor_tries=5)
    b = longsynth.batch(TASK, 0, 12, seed=1, size=128, distractors=40, distractor_tries=5)
    placed = b["distractors"]
    assert placed.min() < 40 and placed.max() > 16
    for s in rows(b):
        k = int(s["distractors"])
        assert (s["dashes"][2 * 14 + 4 * k:] == -1).all() and (s["dashes"][:2 * 14 + 4 * k, :2] >= 0).all()
        assert (s["marker_centers"][2 + k:] == -1).all()
    s = next(rows(b))
    img, tgt, _ = naive.pathfinder_compose(
        s["dashes"], s["marker_centers"], int(s["margin"]), bool(s["connected"]), cfg.paddle_length,
        cfg.paddle_thickness, cfg.antialias_scale, cfg.contrast, cfg.marker_radius, cfg.contour_length, 128)
    assert np.array_equal(img, s["inputs"]) and np.array_equal(tgt, s["targets"])


def test_unmarked_distractors_give_two_markers():
    s = longsynth.sample(TASK, 3, seed=0, size=128, mark_distractors=False, distractor_tries=0)
    assert s["marker_centers"].shape == (2, 2)
    assert int(s["distractors"]) == 16  # every distractor placed


# ---------------------------------------------------------------- statistics against the authors'

# Written by ``python bench/fidelity.py --authors DIR --write-reference tests/data/pathfinder_authors.json``
# from 144 / 76 / 32 images of the authors' generator (128 / 256 / 512 px). With the
# authors' laws (the default) every mean of ours is within 1% of theirs on 576 / 304 / 128
# images (docs/tasks/pathfinder.md); BAND allows for the scatter of STAT_COUNTS images.
AUTHORS = os.path.join(os.path.dirname(__file__), "data", "pathfinder_authors.json")
BAND = {"nonzero": 0.05, "bright": 0.06, "components": 0.05, "markers": 0.05, "labelled": 0.06,
        "distinct": 0.02, "faint_labelled": 0.04, "lit_mean": 0.03, "tip_to_tip": 0.06, "max": 0.0}
STAT_COUNTS = {128: 240, 256: 64, 512: 64}


def _ours_vs_theirs(size, n, **params):
    from longsynth.generators.pathfinder import fidelity

    with open(AUTHORS) as f:
        ref = json.load(f)[str(size)]
    cfg = cfg_of(size, **params)
    b = longsynth.batch(TASK, 0, n, seed=5, size=size, **params)
    ours = fidelity.summary(fidelity.ours(list(rows(b)), cfg.contour_length), cfg.paddle_thickness)
    return ours, ref, b


@pytest.mark.parametrize("size", SIZES)
def test_statistics_match_the_authors(size):
    from longsynth.generators.pathfinder import fidelity

    n = STAT_COUNTS[size]
    ours, ref, b = _ours_vs_theirs(size, n)
    for k, band in BAND.items():
        assert abs(ours[k] / ref[k] - 1) <= band, (k, ours[k], ref[k])
    assert fidelity.tv_distance(ours["hist_nonzero"], ref["hist_nonzero"]) <= 0.05
    assert abs(b["connected"].mean() - 0.5) <= 4 * np.sqrt(0.25 / n)


def test_placing_every_distractor_adds_ink():
    """distractor_tries=0 (every distractor placed, the faster option) puts ink, bright
    components and marker disks 8-13% above theirs; the labels do not move. The default
    (their dropping rule) keeps about 14.2 of 16."""
    ours, ref, b = _ours_vs_theirs(128, 240, distractor_tries=0)
    for k in ("nonzero", "bright", "components", "markers"):
        assert ours[k] / ref[k] - 1 >= 0.05, (k, ours[k], ref[k])
    assert abs(ours["labelled"] / ref["labelled"] - 1) <= 0.05
    assert (b["distractors"] == 16).all()
    assert 13.0 <= longsynth.batch(TASK, 0, 120, seed=5, size=128)["distractors"].mean() <= 15.5


# ---------------------------------------------------------------- identity and storage

GOLDEN = {  # sample_digest of samples 0 and 1, seed 0, train (revision 3)
    128: ["b43f06ace9e5871e24e34cf1c1298a0b3d0d41f082213e4259c09a90756c8c3e",
          "d851ec6aed0eb3938be73bf59e1195f5e3c197fa4569f3379b082128422bc657"],
    256: ["452a927fa2a330517d8bd8112fbfed3720b55bd078d2263ee617d1ac422e20eb",
          "17d6cd8a6e68711582c9c2fa4dc02351daa8c37623bbc94d05733eb63b56943d"],
    512: ["ebb0f27811a1e6eb5d4805c1bd7731f4a8dfc50fbc9ecd9a65e69b519a7d0aac",
          "555bc9ac849cf2e2bfc6c3492e61b3686663659e217cee5e14b81842a18a191a"],
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
    exports.writer("dlr-pathfinder")(ds, str(out), seen.append)
    assert sum(seen) == 8
    from PIL import Image

    meta = np.load(out / "metadata" / "0.npy")
    assert meta.shape == (8, 11)  # their 11 columns
    flat = [(split, i) for split, sp in ds.splits.items() for i in range(len(sp))]
    cfg = ds.config
    for i, row in enumerate(meta.tolist()):
        assert row[:3] == ["imgs/0", f"sample_{i}.png", str(i)]  # their batch folder and numbering
        assert row[4:9] == [str(cfg.continuity), str(cfg.contour_length), str(cfg.distractor_length),
                            str(cfg.paddle_length), str(cfg.paddle_thickness)]
        split, j = flat[i]
        s = ds[split][j]
        assert row[9] == str(int(s["margin"])) and row[10] == "1"
        img = np.asarray(Image.open(out / row[0] / row[1]).convert("L"))
        assert np.array_equal(img, s["inputs"])
        assert int(row[3]) == int(bool(s["connected"]))
        with open(out / row[0].replace("imgs/", "paths/") / row[1].replace(".png", ".pkl"), "rb") as f:
            d = pickle.load(f)
        assert set(d) == {"segs", "origin_tips", "terminal_tips", "marker_indices", "image_size"}
        assert all(a.dtype == np.uint8 for seg in d["segs"] for a in seg)  # theirs up to 256 px
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
        assert list(d["origin_tips"][o]) == s["marker_centers"][0].tolist()
        assert list(d["terminal_tips"][t]) == s["marker_centers"][1].tolist()
    ds.close()


def test_export_mixes_with_theirs_and_a_failure_leaves_nothing(tmp_path, monkeypatch):
    from longsynth.exports import dlr_pathfinder

    root = tmp_path / "ds"
    store.generate(str(root), TASK, {"size": 128}, seed=4, splits={"train": 3}, shard_size=3, workers=1)
    out = tmp_path / "dlr"
    (out / "metadata").mkdir(parents=True)
    np.save(out / "metadata" / "39.npy", np.array([["imgs/39", "sample_0.png", "0", "1"]]))  # one of their 40 batches
    exports.export(str(root), "dlr-pathfinder", str(out))
    assert sorted(os.listdir(out / "metadata")) == ["39.npy", "40.npy"]  # ours continue after theirs
    assert sorted(os.listdir(out / "imgs" / "40")) == ["sample_0.png", "sample_1.png", "sample_2.png"]
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))

    calls = []

    def failing(sample, cfg):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return export_record(sample, cfg)

    export_record = dlr_pathfinder.export_record
    monkeypatch.setattr(dlr_pathfinder, "export_record", failing)
    with pytest.raises(OSError):
        exports.export(str(root), "dlr-pathfinder", str(out))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before  # no trace of the failed export


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
