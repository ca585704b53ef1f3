"""PyTorch data layer: shard and on-the-fly datasets, encodings, workers, ranks, resuming."""
import json
import multiprocessing
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import torch  # a test dependency: its absence must fail, not skip
from torch.utils.data import DataLoader

import longsynth
from longsynth.errors import LongsynthError
from registered import registered
from longsynth.store import generate
from longsynth.task import KeySpec, Ragged, Task, param
from longsynth.torch import (
    IGNORE_INDEX,
    PAD_ID,
    OnTheFlyDataset,
    ShardDataset,
    encode_batch,
    encoder,
    pad_collate,
    positional_channels,
    seeded_sampler,
)

L = 64
N_TRAIN = 44

# more workers than this VM's 2 cores is the point of some tests
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


def forkserver():
    """Workers forked from a fresh server process (never ran a Numba kernel): fork-safe, and
    faster to start than spawn because the server has torch and longsynth imported."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["longsynth.torch", "longsynth.generators.atomic.noise"])
    return ctx


@pytest.fixture(scope="module")
def cumsum_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cumsum")
    generate(root, "cumsum", {"L": L}, splits={"train": N_TRAIN, "val": 6}, shard_size=16, workers=1)
    return root


# ---------------------------------------------------------------- a test-only ListOps-like task


@dataclass(frozen=True)
class ToyListOpsConfig:
    n: int = param(12, "longest sample", lo=2)


def _toy_keys(cfg):
    return {
        "inputs": KeySpec("uint8", (), ragged=True),
        "targets": KeySpec("int8", (), ragged=True),
        "root": KeySpec("int8", ()),
    }


def _toy_block(cfg, seed, split, start, count, fixed):
    toks, tags, offsets, roots = [], [], [0], []
    for i in range(start, start + count):
        rng = np.random.default_rng([seed, split, i])
        n = int(rng.integers(2, cfg.n + 1))
        tok = rng.integers(1, 16, n).astype(np.uint8)
        tag = np.where(rng.random(n) < 0.5, -1, rng.integers(0, 10, n)).astype(np.int8)
        toks.append(tok)
        tags.append(tag)
        offsets.append(offsets[-1] + n)
        roots.append(tag[-1])
    offsets = np.array(offsets, dtype=np.int64)
    return {
        "inputs": Ragged(np.concatenate(toks), offsets),
        "targets": Ragged(np.concatenate(tags), offsets),
        "root": np.array(roots, dtype=np.int8),
    }


TOY = Task(name="toy-listops", config=ToyListOpsConfig, summary="test-only ragged token task",
           keys=_toy_keys, block=_toy_block, family="listops")


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory):
    with registered(TOY):
        root = tmp_path_factory.mktemp("toy")
        generate(root, TOY.name, {}, splits={"train": 9}, workers=1)
        yield root


@dataclass(frozen=True)
class ToyPathfinderConfig:
    M: int = param(4, "image side", lo=2)


def _toy_pf_keys(cfg):
    return {
        "inputs": KeySpec("uint8", (cfg.M, cfg.M)),
        "targets": KeySpec("uint8", (cfg.M, cfg.M)),
        "connected": KeySpec("bool", ()),
    }


def _toy_pf_fill(cfg, seed, split, start, out, fixed):
    for b in range(out["inputs"].shape[0]):
        rng = np.random.default_rng([seed, split, start + b])
        out["inputs"][b] = rng.integers(0, 256, (cfg.M, cfg.M), dtype=np.uint8)
        out["targets"][b] = rng.integers(0, 3, (cfg.M, cfg.M), dtype=np.uint8)
        out["connected"][b] = bool(rng.integers(0, 2))


TOY_PF = Task(name="toy-pathfinder", config=ToyPathfinderConfig, summary="test-only uint8 image task",
              keys=_toy_pf_keys, fill=_toy_pf_fill, family="pathfinder")


@pytest.fixture(scope="module")
def toy_pf_dir(tmp_path_factory):
    with registered(TOY_PF):
        root = tmp_path_factory.mktemp("toypf")
        generate(root, TOY_PF.name, {}, splits={"train": 10}, shard_size=4, workers=1)
        yield root


# ---------------------------------------------------------------- encodings, hand-computed


def test_positional_channels_hand_computed():
    expect = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.float32)
    np.testing.assert_allclose(positional_channels(4), expect, atol=1e-7)
    x = np.array([[0.5], [-1.0], [0.25], [0.75]], dtype=np.float32)
    y = np.arange(4, dtype=np.float32)[:, None]
    ex, ey = encoder("atomic")(x, y)
    assert ex.dtype == torch.float32 and ex.shape == (4, 3)
    np.testing.assert_array_equal(ex[:, 0].numpy(), x[:, 0])
    np.testing.assert_allclose(ex[:, 1:].numpy(), expect, atol=1e-7)
    assert torch.equal(ey, torch.from_numpy(y))
    off, _ = encoder("atomic", positional=False)(x, y)
    assert off.shape == (4, 1)


def test_pathfinder_encoding_hand_computed():
    img = np.array([[0, 255], [51, 128]], dtype=np.uint8)
    lab = np.array([[0, 1], [2, 0]], dtype=np.uint8)
    x, y = encoder("pathfinder")(img, lab)
    assert x.dtype == torch.float32 and x.shape == (4, 1)
    np.testing.assert_allclose(x[:, 0].numpy(), [-1.0, 1.0, -0.6, 1 / 255], rtol=1e-6)
    assert x[0, 0] == -1.0 and x[1, 0] == 1.0
    assert y.dtype == torch.int64 and y.tolist() == [0, 1, 2, 0]
    xp, _ = encoder("pathfinder", positional=True)(img, lab)
    assert xp.shape == (4, 3)
    np.testing.assert_allclose(xp[:, 1:].numpy(), positional_channels(4), atol=1e-7)
    # every pixel value: the float64 formula rounded to float32
    allp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    xa, _ = encoder("pathfinder")(allp, allp)
    expect = ((np.arange(256) / 255.0 - 0.5) / 0.5).astype(np.float32)
    np.testing.assert_array_equal(xa[:, 0].numpy(), expect)
    # a batch axis is kept
    xb, yb = encoder("pathfinder")(np.stack([img, img]), np.stack([lab, lab]))
    assert xb.shape == (2, 4, 1) and yb.shape == (2, 4)


def test_listops_ignore_index_and_padding():
    enc = encoder("listops")
    a = enc(np.array([3, 5, 1], np.uint8), np.array([-1, -1, 4], np.int8))
    b = enc(np.array([2, 4], np.uint8), np.array([-1, 7], np.int8))
    assert a[0].dtype == torch.int64 and a[1].dtype == torch.int64
    assert a[1].tolist() == [IGNORE_INDEX, IGNORE_INDEX, 4] and IGNORE_INDEX == -100
    x, y, lengths = pad_collate([a, b])
    assert x.tolist() == [[3, 5, 1], [2, 4, PAD_ID]]
    # the padding id is no token: 0 would read as `[MIN`
    assert PAD_ID == len(longsynth.vocab("listops-subtrees")) == 15
    assert y.tolist() == [[-100, -100, 4], [-100, 7, -100]]
    assert lengths.tolist() == [3, 2]
    # classic ListOps: one scalar target per sample
    c = enc(np.array([1, 2], np.uint8), np.int8(7))
    d = enc(np.array([3], np.uint8), np.int8(2))
    assert c[1].dim() == 0 and c[1].dtype == torch.int64
    x, y, lengths = pad_collate([c, d])
    assert x.tolist() == [[1, 2], [3, PAD_ID]] and y.tolist() == [7, 2] and lengths.tolist() == [2, 1]
    with pytest.raises(ValueError, match="positional"):
        encoder("listops", positional=True)
    with pytest.raises(ValueError, match="family"):
        encoder("vision")


def test_encode_batch_equals_loader_encoding():
    rng = np.random.default_rng(11)
    img = rng.integers(0, 256, (3, 8, 8), dtype=np.uint8)
    lab = rng.integers(0, 3, (3, 8, 8), dtype=np.uint8)
    atom_x = rng.standard_normal((3, 16, 2)).astype(np.float32)
    atom_y = rng.standard_normal((3, 4, 1)).astype(np.float32)
    tok = rng.integers(0, 16, (3, 10), dtype=np.uint8)
    tag = np.where(rng.random((3, 10)) < 0.5, -1, rng.integers(0, 10, (3, 10))).astype(np.int8)
    for family, x, y, positional in [("pathfinder", img, lab, None), ("pathfinder", img, lab, True),
                                     ("atomic", atom_x, atom_y, None), ("atomic", atom_x, atom_y, False),
                                     ("listops", tok, tag, None)]:
        ex, ey = encode_batch(family, torch.from_numpy(x), torch.from_numpy(y), positional)
        for b in range(3):
            lx, ly = encoder(family, positional)(x[b], y[b])
            assert ex[b].dtype == lx.dtype and ey[b].dtype == ly.dtype
            assert torch.equal(ex[b], lx) and torch.equal(ey[b], ly), family
    padded = torch.tensor([[3, -100], [-1, 2]], dtype=torch.int8)
    assert encode_batch("listops", padded, padded)[1].tolist() == [[3, -100], [-100, 2]]


# ---------------------------------------------------------------- stored datasets


def test_shard_dataset_equals_numpy_samples(cumsum_dir):
    ds = ShardDataset(cumsum_dir)
    raw = ShardDataset(cumsum_dir, encode=False)
    off = ShardDataset(cumsum_dir, positional=False)
    store = longsynth.open(cumsum_dir)["train"]
    assert len(ds) == N_TRAIN and len(ShardDataset(cumsum_dir, split="val")) == 6
    for i in (0, 15, 16, N_TRAIN - 1):
        s = longsynth.sample("cumsum", i, seed=0, L=L)
        np.testing.assert_array_equal(store[i]["inputs"], s["inputs"])
        x, y = ds[i]
        assert x.shape == (L, 3) and x.dtype == torch.float32
        np.testing.assert_array_equal(x[:, :1].numpy(), s["inputs"])
        np.testing.assert_array_equal(x[:, 1:].numpy(), positional_channels(L))
        np.testing.assert_array_equal(y.numpy(), s["targets"])
        rx, ry = raw[i]
        assert torch.equal(rx, torch.from_numpy(s["inputs"])) and torch.equal(ry, torch.from_numpy(s["targets"]))
        assert torch.equal(off[i][0], rx)
    vx, _ = ShardDataset(cumsum_dir, split="val")[2]
    np.testing.assert_array_equal(vx[:, :1].numpy(), longsynth.sample("cumsum", 2, seed=0, split="val", L=L)["inputs"])


def test_shard_dataset_listops_family(toy_dir):
    ds = ShardDataset(toy_dir, extras=True)
    raw = longsynth.open(toy_dir)["train"]
    for i in range(len(ds)):
        x, y, extras = ds[i]
        s = raw[i]
        assert torch.equal(x, torch.from_numpy(s["inputs"].astype(np.int64)))
        expect = np.where(s["targets"] < 0, -100, s["targets"]).astype(np.int64)
        assert torch.equal(y, torch.from_numpy(expect))
        assert extras["index"] == i and extras["root"].shape == () and int(extras["root"]) == int(s["root"])
        rx, ry = ShardDataset(toy_dir, encode=False)[i]
        assert rx.dtype == torch.uint8 and ry.dtype == torch.int8 and torch.equal(ry, torch.from_numpy(s["targets"]))
    loader = DataLoader(ds, batch_size=4, collate_fn=pad_collate)
    x, y, lengths, extras = next(iter(loader))
    assert [e["index"] for e in extras] == [0, 1, 2, 3]
    for b in range(4):
        n = int(lengths[b])
        assert n == len(raw[b]["inputs"])
        assert torch.equal(x[b, :n], ds[b][0]) and torch.equal(y[b, :n], ds[b][1])
        assert (x[b, n:] == PAD_ID).all() and (y[b, n:] == -100).all()


def test_shard_dataset_pathfinder_family(toy_pf_dir):
    ds = ShardDataset(toy_pf_dir, extras=True)
    raw = longsynth.open(toy_pf_dir)["train"]
    x, y, extras = ds[5]
    s = raw[5]
    assert x.shape == (16, 1) and y.shape == (16,) and y.dtype == torch.int64
    np.testing.assert_array_equal(x[:, 0].numpy(), ((s["inputs"].ravel() - 127.5) / 127.5).astype(np.float32))
    np.testing.assert_array_equal(y.numpy(), s["targets"].ravel())
    assert extras["connected"].shape == () and bool(extras["connected"]) == bool(s["connected"])
    assert extras["index"] == 5
    rx, ry = ShardDataset(toy_pf_dir, encode=False)[5]
    assert rx.dtype == torch.uint8 and rx.shape == (4, 4) and torch.equal(ry, torch.from_numpy(s["targets"]))
    with pytest.raises(ValueError, match="encode=True"):
        ShardDataset(toy_pf_dir, encode=False, positional=True)
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    batches = list(loader)
    assert [b[2]["index"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert torch.equal(batches[1][0][1], x)
    assert batches[1][2]["connected"].dtype == torch.bool and batches[1][2]["connected"].shape == (4,)


@pytest.mark.parametrize("workers, context", [(0, None), (2, "forkserver"), (4, "fork")])
def test_every_index_once_per_epoch(cumsum_dir, workers, context):
    ds = ShardDataset(cumsum_dir, extras=True)
    ds[0]
    assert ds.split._files  # handles open in the parent: forked workers must not use them
    sampler = seeded_sampler(ds, seed=7)
    # forkserver workers unpickle the dataset (as spawn ones do); fork ones inherit its handles
    loader = DataLoader(ds, batch_size=5, sampler=sampler, num_workers=workers, persistent_workers=workers > 0,
                        multiprocessing_context=forkserver() if context == "forkserver" else context)
    orders = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        seen = []
        for x, y, extras in loader:
            assert x.shape[1:] == (L, 3)
            seen += extras["index"].tolist()
        assert sorted(seen) == list(range(N_TRAIN))
        assert seen == list(sampler)  # the seeded order, whatever the worker count
        orders.append(seen)
    assert orders[0] != orders[1]
    again = seeded_sampler(ds, seed=7)
    again.set_epoch(1)
    assert list(again) == orders[1]


def test_seeded_sampler_splits_ranks(cumsum_dir):
    ds = ShardDataset(cumsum_dir)
    parts = []
    for rank in range(2):
        s = seeded_sampler(ds, seed=3, rank=rank, world_size=2)
        s.set_epoch(4)
        parts.append(list(s))
    assert not set(parts[0]) & set(parts[1])
    assert set(parts[0]) | set(parts[1]) == set(range(N_TRAIN))
    with pytest.raises(ValueError, match="both"):
        seeded_sampler(ds, seed=3, rank=0)


def test_pickled_dataset_reopens_its_files(cumsum_dir):
    import pickle

    ds = ShardDataset(cumsum_dir)
    first = ds[3]
    assert ds.split._files  # handles open in this process
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.split._files == {}
    assert torch.equal(clone[3][0], first[0])


# ---------------------------------------------------------------- on-the-fly streams


def _collect(ds, workers, context=None):
    loader = DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context=context)
    return list(loader)


def test_onthefly_workers_and_ranks_never_repeat(cumsum_dir):
    steps, bs, world = 7, 4, 2
    seen = []
    batches = {}
    for rank in range(world):
        ds = OnTheFlyDataset("cumsum", L=L, batch_size=bs, steps=steps, extras=True, rank=rank, world_size=world)
        out = _collect(ds, 3, forkserver())
        assert len(out) == steps == len(ds)
        for step, (x, y, extras) in enumerate(out):
            idx = extras["index"].tolist()
            assert idx == ds.indices(step).tolist()  # delivered in step order
            seen += idx
            batches.update({i: (x[b], y[b]) for b, i in enumerate(idx)})
    assert len(seen) == len(set(seen))
    assert sorted(seen) == list(range(steps * world * bs))
    # the same samples as the stored dataset and longsynth.batch at those indices
    stored = ShardDataset(cumsum_dir)
    for i in range(N_TRAIN):
        assert torch.equal(batches[i][0], stored[i][0]) and torch.equal(batches[i][1], stored[i][1])
    ref = longsynth.batch("cumsum", 0, len(seen), seed=0, L=L)
    for i, (x, y) in batches.items():
        np.testing.assert_array_equal(x[:, :1].numpy(), ref["inputs"][i])
        np.testing.assert_array_equal(y.numpy(), ref["targets"][i])


def test_onthefly_resume_continues_the_stream():
    full = _collect(OnTheFlyDataset("cumsum", L=L, batch_size=3, steps=9, seed=5, split="val"), 0)
    resumed = OnTheFlyDataset("cumsum", L=L, batch_size=3, steps=9, seed=5, split="val", start=4)
    assert len(resumed) == 5
    tail = _collect(resumed, 2, "spawn")
    assert len(tail) == 5
    for (a, b), (c, d) in zip(full[4:], tail):
        assert torch.equal(a, c) and torch.equal(b, d)
    other = OnTheFlyDataset("cumsum", L=L, batch_size=3, steps=9, seed=5, split="val")
    assert other.state_dict(6) == json.loads(json.dumps(resumed.state_dict(6)))  # checkpoint-friendly
    other.load_state_dict(resumed.state_dict(6))
    again = _collect(other, 0)
    assert len(again) == 3 and torch.equal(again[0][0], full[6][0])
    with pytest.raises(ValueError, match="seed"):
        OnTheFlyDataset("cumsum", L=L, batch_size=3, seed=6, split="val").load_state_dict(resumed.state_dict(1))
    endless = iter(OnTheFlyDataset("cumsum", L=L, batch_size=3, seed=5, split="val", start=8))
    assert torch.equal(next(endless)[0], full[8][0])
    assert torch.equal(next(endless)[0][0, :, :1], torch.from_numpy(
        longsynth.sample("cumsum", 27, seed=5, split="val", L=L)["inputs"]))
    with pytest.raises(TypeError):
        len(OnTheFlyDataset("cumsum", L=L))


@pytest.mark.parametrize("step", [None, "3", 2.5, True, -1, [1]])
def test_onthefly_state_with_a_step_that_is_no_count_is_another_stream(step):
    """A state whose step is missing, not an int, or negative is one LongsynthError line, as a state of another
    stream is (step None had raised TypeError from int())."""
    ds = OnTheFlyDataset("cumsum", L=L, batch_size=2)
    with pytest.raises(LongsynthError, match=r"^state: another stream \(its step is"):
        ds.load_state_dict({**ds.state_dict(0), "step": step})
    with pytest.raises(LongsynthError, match="another stream"):
        ds.load_state_dict({k: v for k, v in ds.state_dict(0).items() if k != "step"})
    with pytest.raises(LongsynthError, match="another stream"):
        ds.load_state_dict([("step", 0)])
    ds.load_state_dict({**ds.state_dict(0), "step": np.int64(3)})
    assert ds.start == 3


def test_onthefly_default_fork_workers_work_after_a_kernel_ran():
    """The DataLoader's default (fork) workers still work after the parent ran a Numba kernel
    (importing longsynth picks a fork-safe threading layer, not OpenMP's)."""
    import numba

    longsynth.batch("cumsum", 0, 64, L=L)  # the parent has now run a parallel kernel
    assert numba.threading_layer() != "omp"  # importing longsynth picked a fork-safe layer
    ds = OnTheFlyDataset("cumsum", L=L, batch_size=2, steps=6, extras=True)
    out = _collect(ds, 2, "fork")
    assert [b[2]["index"].tolist() for b in out] == [[2 * s, 2 * s + 1] for s in range(6)]
    ref = longsynth.batch("cumsum", 0, 12, L=L)
    np.testing.assert_array_equal(torch.cat([b[1] for b in out]).numpy(), ref["targets"])


def test_onthefly_forced_openmp_fork_is_a_clear_error():
    code = ("import numba; numba.config.THREADING_LAYER = 'omp'\n"
            "import longsynth\n"
            "from torch.utils.data import DataLoader\n"
            "from longsynth.torch import OnTheFlyDataset\n"
            "longsynth.batch('cumsum', 0, 4, L=16)\n"
            "try:\n"
            "    list(DataLoader(OnTheFlyDataset('cumsum', L=16, batch_size=2, steps=2), batch_size=None,\n"
            "                    num_workers=1, multiprocessing_context='fork'))\n"
            "except RuntimeError as e:\n"
            "    print('raised:', 'spawn' in str(e))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if "omp" in r.stderr and "unavailable" in r.stderr:  # no OpenMP runtime: nothing to guard
        return
    assert "raised: True" in r.stdout, r.stdout + r.stderr


def test_onthefly_rank_is_read_when_iteration_starts(monkeypatch):
    """A stream built before init_process_group still splits over the ranks."""
    import torch.distributed as dist

    ds = OnTheFlyDataset("cumsum", L=L, batch_size=2, steps=3, extras=True)  # built before
    assert (ds.rank, ds.world_size) == (0, 1)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    for workers, context in ((0, None), (2, "fork")):  # forked workers see the parent's group
        out = _collect(ds, workers, context)
        assert [b[2]["index"].tolist() for b in out] == [[2, 3], [6, 7], [10, 11]]
    clone = __import__("pickle").loads(__import__("pickle").dumps(ds))  # what spawn workers get
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    assert (clone.rank, clone.world_size) == (1, 2) and (ds.rank, ds.world_size) == (0, 1)
    assert ds.state_dict(0)["world_size"] == 1


def test_onthefly_rejects_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        OnTheFlyDataset("cumsum", batch_size=0)
    with pytest.raises(ValueError, match="steps"):
        OnTheFlyDataset("cumsum", start=5, steps=2)
    with pytest.raises(ValueError, match="^length: not a parameter of cumsum; the stream's number of steps is steps="):
        OnTheFlyDataset("cumsum", length=4)  # the stream's count was once named length



def test_onthefly_refuses_steps_past_the_last_index():
    """start was checked >= 0 only: start 2**63 ended in Numba's TypingError, start 2**61 at batch_size 4 served
    rows at index 2**63, which sample() and batch() refuse. Refused in one line as batch() refuses them, at
    construction for the first step and at each step a rank or a longer run reaches."""
    from longsynth.errors import LongsynthError

    for start, batch_size in ((2**63, 2), (2**61, 4)):
        with pytest.raises(LongsynthError, match=r"^start: step [\d,]+ at batch_size \d .* past the last index "
                                                 r"9,223,372,036,854,775,807 \(2\^63 - 1\)$"):
            OnTheFlyDataset("cumsum", L=8, start=start, batch_size=batch_size)
    last = OnTheFlyDataset("cumsum", L=8, start=2**62 - 1, batch_size=2, extras=True)  # its first step is the last
    x, y, extras = next(iter(last))
    assert extras["index"].tolist() == [2**63 - 2, 2**63 - 1]
    assert np.array_equal(x[1, :, :1].numpy(), longsynth.sample("cumsum", 2**63 - 1, L=8)["inputs"])
    with pytest.raises(LongsynthError, match="^step: step 4,611,686,018,427,387,904 at batch_size 2"):
        last.batch(2**62)
    with pytest.raises(LongsynthError, match="^step: step 4,611,686,018,427,387,904 at batch_size 2"):
        list(iter(last))  # the endless stream stops at the last index in one line, not past it
    ranked = OnTheFlyDataset("cumsum", L=8, start=2**62 - 1, batch_size=2, rank=1, world_size=2)
    with pytest.raises(LongsynthError, match=r"\(rank 1 of 2\) reads samples"):
        next(iter(ranked))

def test_a_chomsky_tasks_length_is_its_own_not_the_streams():
    """length= is the task's input length, as longsynth.batch reads it: rows of that length, the stream endless."""
    import longsynth

    ds = OnTheFlyDataset("chomsky-parity-check", length=64, batch_size=2, encode=False)
    x, y = ds.batch(0)
    want = longsynth.batch("chomsky-parity-check", 0, 2, length=64)
    assert x.shape == want["inputs"].shape and (x.numpy() == want["inputs"]).all()
    assert ds.steps is None and ds.params["min_length"] == ds.params["max_length"] == 64
    with pytest.raises(ValueError, match="rank"):
        OnTheFlyDataset("cumsum", rank=2, world_size=2)
    with pytest.raises(ValueError, match="not a parameter"):
        OnTheFlyDataset("cumsum", C=3)


# ---------------------------------------------------------------- no torch in the core


def test_import_longsynth_does_not_import_torch(tmp_path):
    code = f"""
import json, sys
import longsynth
from longsynth.errors import LongsynthError
from longsynth.store import generate
longsynth.sample("cumsum", 0, L=8)
longsynth.batch("cumsum", 0, 2, L=8)
generate({str(tmp_path / "d")!r}, "cumsum", {{"L": 8}}, num_samples=3, workers=1)
longsynth.open({str(tmp_path / "d")!r})["train"][0]
print(json.dumps(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    check = subprocess.run([sys.executable, "-c", "import sys, longsynth.torch; print('torch' in sys.modules)"],
                           capture_output=True, text=True, check=True)
    assert check.stdout.strip() == "True"  # the probe can see torch when it is imported
