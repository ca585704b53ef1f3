"""Classic Pathfinder (`pathfinder`): LRA's presets, the original generator's image
formation (checked against tests/naive/pathfinder.py's PIL twin), labels, and the release's splits."""
import json
import os

import numpy as np
import pytest

import longsynth
from longsynth import registry, store
from longsynth.errors import LongsynthError
from longsynth.generators.pathfinder import lra as lp
from longsynth.generators.pathfinder import process, records
import naive

TASK = "pathfinder"
HERE = os.path.dirname(__file__)


# ---------------------------------------------------------------- presets


@pytest.mark.parametrize("size,difficulty,expect", [
    # (contour_length, distractor_length, distractors): wrapper sections x LRA's N // (cl // 3)
    (32, "easy", (6, 2, 10)), (32, "medium", (9, 3, 6)), (32, "hard", (14, 4, 5)),
    (64, "hard", (14, 4, 5)), (128, "easy", (6, 2, 17)), (128, "hard", (14, 4, 8)),
    (256, "medium", (9, 3, 10)), (256, "hard", (14, 4, 7)),
])
def test_difficulty_presets(size, difficulty, expect):
    cfg = registry.get(TASK).make_config(size=size, difficulty=difficulty)
    assert (cfg.contour_length, cfg.distractor_length, cfg.distractors) == expect


def test_size_presets_are_lra_settings_blocks():
    """The values of LRA's Pathfinder32/64/128/256 docstrings (and the wrapper's defaults)."""
    c = registry.get(TASK).make_config(size=32)
    assert (c.paddle_length, c.paddle_thickness, c.margin_min, c.margin_max, c.continuity, c.seed_distance,
            c.marker_radius, c.antialias_scale, c.border) == (2, 0.5, 1, 1, 1.0, 7, 1.5, 2, 1)
    assert (c.contrast, c.distractor_contrast) == (1.5, 2.0)  # paddle 0.75 x snake 2; distractors: snake 2
    c = registry.get(TASK).make_config(size=128)  # Path-X
    assert (c.paddle_length, c.paddle_thickness, c.margin_min, c.margin_max, c.seed_distance, c.marker_radius,
            c.contrast, c.border) == (5, 1.5, 2, 3, 20, 3.0, 0.9, 1)
    c = registry.get(TASK).make_config(size=256)  # padding and seed_distance: the wrapper's defaults
    assert (c.border, c.seed_distance, c.marker_radius, c.margin_min) == (22, 27, 5.0, 3)
    assert not c.mark_distractors and c.distractor_tries == 5


def test_every_preset_field_can_be_set():
    cfg = registry.get(TASK).make_config(size=64, difficulty="hard", distractors=2, contrast=0.5, border=3)
    assert (cfg.distractors, cfg.contrast, cfg.border, cfg.contour_length) == (2, 0.5, 3, 14)
    with pytest.raises(LongsynthError, match="difficulty"):
        registry.get(TASK).make_config(difficulty="extreme")
    with pytest.raises(LongsynthError, match="size"):
        registry.get(TASK).make_config(size=512)


def test_release_counts_and_splits():
    t = registry.get(TASK)
    assert t.default_num_samples == 200_000
    assert store.default_splits(t.default_num_samples, t.split_percent) == {"train": 160_000, "val": 20_000,
                                                                            "test": 20_000}
    assert store.default_splits(1000) == {"train": 960, "val": 20, "test": 20}  # other tasks unchanged


# ---------------------------------------------------------------- images


@pytest.mark.parametrize("size,difficulty,n", [(32, "hard", 12), (32, "easy", 6), (64, "medium", 4)])
def test_images_equal_the_original_formation(size, difficulty, n):
    """Every image equals the PIL twin of the original generator's formation, redrawn from
    its stored dashes and markers (8-bit stamps, edge markers included, bytescale)."""
    cfg = registry.get(TASK).make_config(size=size, difficulty=difficulty)
    b = longsynth.batch(TASK, 0, n, seed=3, size=size, difficulty=difficulty)
    edge = 0
    for i in range(n):
        img, peak = naive.lra_pathfinder_compose(
            b["dashes"][i], b["marker_centers"][i], int(b["margin"][i]), cfg.paddle_length, cfg.paddle_thickness,
            cfg.antialias_scale, cfg.contrast, cfg.distractor_contrast, cfg.marker_radius, cfg.contour_length, size)
        assert np.array_equal(img, b["inputs"][i]), f"sample {i}: {np.argwhere(img != b['inputs'][i])[:5]}"
        assert np.float32(peak) == b["peak"][i]
        edge += int(np.any(np.minimum(b["marker_centers"][i], size - 1 - b["marker_centers"][i]) < 10))
    assert edge > 0  # markers near the frame's edge (PIL's renormalised filter) were exercised


def test_labels_markers_and_extras():
    n, cl = 400, 14
    b = longsynth.batch(TASK, 0, n, seed=0, size=32)
    assert b["targets"].dtype == np.uint8 and b["targets"].shape == (n,)
    assert np.array_equal(b["targets"].astype(bool), b["connected"])
    assert 0.44 < b["targets"].mean() < 0.56  # randint(2) per image, as theirs
    d, m = b["dashes"], b["marker_centers"]
    assert np.array_equal(m[:, 0], d[:, 0, :2])  # start marker: the marked path's first tail
    end = np.where(b["connected"][:, None], d[:, cl - 1, :2], d[:, 2 * cl - 1, :2])
    assert np.array_equal(m[:, 1], end)
    assert np.all(b["main_dashes"] == cl)
    assert np.all((b["distractors"] >= 0) & (b["distractors"] <= 5))
    # dropped distractors leave rows of -1, placed ones do not
    for i in range(n):
        rows = d[i, 2 * cl:].reshape(5, 4, 4)
        placed = int(b["distractors"][i])
        assert np.all(rows[placed:] == -1) and np.all(rows[:placed, :, 0] >= 0)


def test_dead_seed_orientations_never_start_a_path():
    """Theirs: cv2.dilate by a struct that leaves a frame corner without taps gives -inf, so
    that orientation can never seed a path (330 of 360 at 32 px). The first dash of every
    distractor and of the first main path must point at an orientation that can (the second
    main path is placed seed_distance away without that search, as theirs)."""
    cfg = registry.get(TASK).make_config(size=32)
    P, T = lp.params(cfg)
    assert int(T.seed_dead[0].sum()) == 330  # counted on cv2 by bench/lra_pathfinder_fidelity.py's run
    alive = {tuple(T.key[0, T.seed_stamp[0, d]]) for d in range(360) if not T.seed_dead[0, d]}
    dead_only = {tuple(T.key[0, T.seed_stamp[0, d]]) for d in range(360) if T.seed_dead[0, d]} - alive
    assert dead_only
    b = longsynth.batch(TASK, 0, 200, seed=1, size=32)
    firsts = [tuple(b["dashes"][i, 28 + 4 * k, 2:]) for i in range(200) for k in range(int(b["distractors"][i]))]
    assert len(firsts) > 100 and all(f in alive for f in firsts)
    assert all(tuple(b["dashes"][i, 0, 2:]) in alive or tuple(b["dashes"][i, 14, 2:]) in alive for i in range(200))
    # without the rule (the DLR renderer's behaviour) dead orientations do start paths
    P2 = P._replace(dead_seeds=False)
    W = records.workspace(P2, T)
    img, lab = np.zeros((200, 32, 32), np.uint8), np.zeros((200, 1, 1), np.uint8)
    dashes, markers = np.zeros((200, 48, 4), np.int32), np.zeros((200, 7, 2), np.int32)
    counts, peak = np.zeros((200, records.N_COUNTS), np.int32), np.zeros(200, np.float32)
    process.render_batch(1, 0, 0, P2, T, W, img, lab, dashes, markers, counts, peak)
    assert any(tuple(dashes[i, 0, 2:]) in dead_only for i in range(200))


def test_seg_renderer_switches():
    """pathfinder-seg: float stamps, one contrast, labels, and the dead seed orientations of
    the same cv2 rule in the DLR fork."""
    from longsynth.generators.pathfinder import seg as pf
    P, T = pf.params(registry.get("pathfinder-seg").make_config(size=128))
    assert (P.eight_bit, P.dead_seeds, P.labels, P.dcontrast) == (False, True, True, P.contrast)


def test_samples_are_pure_functions_of_the_index():
    a = longsynth.batch(TASK, 5, 3, seed=9, size=64, difficulty="easy")
    s = longsynth.sample(TASK, 6, seed=9, size=64, difficulty="easy")
    assert np.array_equal(a["inputs"][1], s["inputs"]) and int(a["targets"][1]) == int(s["targets"])
    other = longsynth.sample(TASK, 6, seed=10, size=64, difficulty="easy")
    assert not np.array_equal(other["inputs"], s["inputs"])


# ---------------------------------------------------------------- fidelity


REF = os.path.join(HERE, "data", "lra_pathfinder_original.json")


def test_statistics_match_the_original():
    """Means per image of our 32-px hard images within 3% of the original generator's 3,000
    (bench/lra_pathfinder_fidelity.py wrote their means to tests/data; on 12,000 of ours
    every ratio is within 0.3%)."""
    from longsynth.generators.pathfinder import fidelity

    ref = json.load(open(REF))["32-hard"]
    cfg = registry.get(TASK).make_config(size=32)
    b = longsynth.batch(TASK, 0, 1000, seed=0, size=32)
    ours = fidelity.summary(fidelity.plain(b["inputs"]), cfg.paddle_thickness)
    for k in fidelity.PLAIN_STATS:
        assert abs(ours[k] / ref[k] - 1) <= 0.03, (k, ours[k], ref[k])
    assert fidelity.tv_distance(ours["hist_nonzero"], ref["hist_nonzero"]) < 0.03


# ---------------------------------------------------------------- export


def _s4():
    import importlib.util

    spec = importlib.util.spec_from_file_location("s4_loader",
                                                  os.path.join(HERE, "..", "bench", "s4_pathfinder_loader.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_export_reads_with_the_s4_loader(tmp_path):
    """`export --format lra-pathfinder` writes the release layout; the S4 / DLR loader logic
    (bench/s4_pathfinder_loader.py) reads every image and label back, in export order."""
    pytest.importorskip("torch")
    from longsynth.exports import export

    root = tmp_path / "ds"
    store.generate(str(root), TASK, {"size": 32, "difficulty": "hard"}, seed=2,
                   splits={"train": 24, "val": 3, "test": 3}, shard_size=16)
    out = tmp_path / "lra" / "pathfinder32"
    export(str(root), "lra-pathfinder", str(out))
    meta = (out / "curv_contour_length_14" / "metadata" / "0.npy").read_text().splitlines()
    assert meta[0].split() == ["imgs/0", "sample_0.png", "0", meta[0].split()[3], "1.0", "14", "4", "2", "0.5", "1",
                               "1"]
    s4 = _s4()
    ds = s4.PathFinderDataset(str(out))
    assert len(ds) == 30
    tr, va, te = s4.splits(ds)
    assert (len(tr), len(va), len(te)) == (24, 3, 3)
    d = store.open(str(root))
    ours = [s for split in ("train", "val", "test") for s in d[split]]
    for i, s in enumerate(ours):
        x, y = ds[i]
        assert y == int(s["targets"])
        assert torch_equal(x, (np.asarray(s["inputs"], np.float32).reshape(-1, 1) / 255.0 - 0.5) / 0.5)
    d.close()
    # a second difficulty lands in its own folder; theirs reads it when asked to
    root2 = tmp_path / "ds2"
    store.generate(str(root2), TASK, {"size": 32, "difficulty": "easy"}, seed=2, num_samples=180)
    export(str(root2), "lra-pathfinder", str(out))
    assert (out / "curv_baseline" / "imgs" / "0" / "sample_172.png").exists()
    # their blacklist (an empty image of the release) drops our pathfinder32/curv_baseline sample 172
    assert len(s4.PathFinderDataset(str(out), diff_levels=("curv_baseline",))) == 179
    assert len(s4.PathFinderDataset(str(out))) == 30


def torch_equal(a, b):
    import torch

    return torch.equal(a, torch.from_numpy(np.asarray(b, dtype=np.float32)))


# ---------------------------------------------------------------- loader and validate


def test_encoding_and_validate_batches(tmp_path):
    """The pathfinder encoding keeps one label per image a scalar; validate's batches carry
    it as y [B, 1], which the model reads at its last position or from its pooled output."""
    torch = pytest.importorskip("torch")
    from longsynth.torch import ShardDataset, encode_batch
    from longsynth.models_ref.evaluation import protocol
    from longsynth.models_ref.protocols.registry import ARCHITECTURES

    root = str(tmp_path / "ds")
    store.generate(root, TASK, {"size": 32}, seed=1, splits={"train": 8, "val": 4, "test": 4})
    ds = ShardDataset(root, "train", encode=True)
    x, y = ds[0]
    assert x.shape == (1024, 1) and y.dim() == 0 and y.dtype == torch.int64
    raw = ShardDataset(root, "train", encode=False)
    xr, yr = raw[0]
    xb, yb = encode_batch("pathfinder", xr[None], yr[None])
    assert torch.equal(xb[0], x) and yb.shape == (1,) and int(yb[0]) == int(y)
    train, val, test = protocol.stored_sources(root, 4, 1)
    xs, ys = train(0)[:2]
    assert xs.shape == (4, 1024, 1) and ys.shape == (4, 1) and set(ys[:, 0].tolist()) <= {0, 1}
    labels = [int(ShardDataset(root, "val", encode=True)[i][1]) for i in range(4)]
    assert val()[0][1][:, 0].tolist() == labels  # evaluation batches in index order
    p, arch = protocol.resolve("lra-pathfinder", "paper"), ARCHITECTURES[("lra-pathfinder", "paper", "dlr")]
    assert (p.batch_size, arch["arch"]["n_layers"], arch["arch"]["H"], arch["lr"]) == (64, 6, 256, 4e-3)
    assert arch["arch"]["norm"] == "batch" and p.readout == "mean"  # S4's norm: batch, decoder.mode: pool


def test_validate_classic_pathfinder_writes_an_accuracy_certificate(tmp_path):
    """`validate` on a pathfinder dataset: the tiny preset's batch-normed, pooled binary
    classifier trains, its certificate holds accuracy over the evaluated test images and the
    DSS paper's LRA figure for comparison, and the checkpoint restores the batch-norm statistics."""
    pytest.importorskip("torch")
    from longsynth.models_ref.training.checkpoints import load_model
    from longsynth.models_ref.evaluation.validate import validate

    root = str(tmp_path / "ds")
    store.generate(root, TASK, {"size": 32}, seed=2, splits={"train": 64, "val": 32, "test": 32})
    r = validate(root, model="dlr", scale="tiny", steps=6, batch_size=8, report_dir=str(tmp_path / "rep"),
                 progress=False)
    m = json.loads((tmp_path / "rep" / "metrics.json").read_text())
    assert m["model_config"]["norm"] == "batch" and m["train_config"]["readout"] == "mean"
    assert (m["model_config"]["d_output"], m["primary_metric"], m["steps"]) == (2, "accuracy", 6)
    assert 0 <= m["test"]["accuracy"] <= 1 and m["test"]["exact"]["count"] == 32  # 4 batches of 8 images
    assert m["paper"] is None or m["paper"]["source"].startswith("DSS paper")
    model, _ = load_model(str(tmp_path / "rep" / "checkpoints" / "last.pt"))
    bn = model.blocks[0].norm
    assert type(bn).__name__ == "ChannelBatchNorm" and not bool((bn.running_var == 1).all())
    assert r["report_dir"] == str(tmp_path / "rep")


def test_steps_are_rounded_on_absolute_coordinates():
    """The original rounds up p + v on the absolute coordinate (translate_coord), and
    truncates p + offset for the circle's candidates: near 0 the float sum keeps a tiny v
    that far from 0 is lost, so an axis-aligned step moves a pivot one pixel more at p <= 3."""
    from longsynth.generators.pathfinder import process

    cfg = registry.get(TASK).make_config(size=32)
    P, T = lp.params(cfg)

    def translate(p, phi, dist):  # theirs, per axis
        return [int(np.ceil(p[0] + float(dist) * np.sin(phi))), int(np.ceil(p[1] + float(dist) * np.cos(phi)))]

    moved = 0
    for d in range(360):
        phi = (d - 180) * np.pi / 180
        back = phi + np.pi if phi + np.pi < np.pi else phi - np.pi
        for r, c in [(0, 0), (1, 2), (3, 3), (4, 30), (17, 9), (31, 31)]:
            head = translate((r, c), phi, cfg.paddle_length)
            pivot = translate(head, back, cfg.paddle_length + 1)
            assert list(process._head_pivot(T, 0, d, r, c)) == head + pivot
            far = process._head_pivot(T, 0, d, r + 64, c + 64)
            moved += [far[0] - 64, far[1] - 64] != head
    assert moved > 0  # the rule differs from rounding offsets apart from the position
    # every candidate a pivot in the frame can give has a row in the tables
    reach = T.reach[0]
    for p in range(cfg.size):
        for dy, dx in T.ray[0, :T.n_ray[0]]:
            assert T.qmap[0, int(np.floor(p + dy)) - p + reach, int(np.floor(p + dx)) - p + reach] >= 0
