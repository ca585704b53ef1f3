"""Redraw loops bounded by the configs that reach them (docs/tasks/safari.md, the config checks).

associative-recall with input_seq_len <= num_keys has no key-value pair, and without
allow_dot its query was redrawn among the present tuples forever, inside compiled code
that neither SIGTERM nor Ctrl-C stops. The config check now refuses it in one line, from
every way in: gen, gen --authors-stream, show, the API, OnTheFlyDataset, and a manifest
in a stranger's folder. Whatever could hang runs in a subprocess with a timeout, so a
regression fails here instead of hanging the suite.
"""
import hashlib
import json
import subprocess
import sys

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.store.manifest import generation_of

TIMEOUT = 120  # generous: a cold numba cache compiles the kernels first
NO_PAIR = ["--input-seq-len", "2", "--num-keys", "2"]
MESSAGE = "input_seq_len: must be >= num_keys + 1 = 3"


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "longsynth", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=cwd)


def _one_line(r):
    """The refusal: a non-zero exit, one 'Error:' line naming the bound, no traceback."""
    out = r.stdout + r.stderr
    lines = [x for x in out.splitlines() if x.startswith("Error:")]
    assert r.returncode != 0 and len(lines) == 1, out
    assert "Traceback" not in out and MESSAGE in lines[0], out
    return lines[0]


@pytest.mark.parametrize("extra", [[], ["--authors-stream"]], ids=["gen", "authors-stream"])
def test_gen_without_pairs_refused(tmp_path, extra):
    out = tmp_path / "ar"
    _one_line(_cli("gen", "associative-recall", *NO_PAIR, "-n", "10", *extra, "--out", str(out)))
    assert not (out / "manifest.json").exists()


def test_show_without_pairs_refused(tmp_path):
    _one_line(_cli("show", "associative-recall", *NO_PAIR, cwd=tmp_path))


def test_api_without_pairs_refused():
    code = """
import longsynth
from longsynth.errors import LongsynthError
from longsynth.torch import OnTheFlyDataset
p = dict(input_seq_len=2, num_keys=2)
calls = [lambda: longsynth.sample("associative-recall", 0, **p),
         lambda: longsynth.batch("associative-recall", 0, 4, **p),
         lambda: longsynth.authors_stream("associative-recall", 3, seed=0, **p),
         lambda: next(iter(OnTheFlyDataset("associative-recall", **p))),
         lambda: longsynth.sample("associative-recall", 0, input_seq_len=5, num_keys=5, vocab_size=6)]
for f in calls:
    try:
        f()
    except LongsynthError as e:
        assert str(e).startswith("input_seq_len: must be >= num_keys + 1"), e
    else:
        raise SystemExit("accepted")
print("refused")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and r.stdout.strip() == "refused", r.stdout + r.stderr


def test_check_bounds_the_pairs():
    t = longsynth.registry.get("associative-recall")
    for L, nk in ((2, 2), (3, 3), (19, 19)):
        with pytest.raises(LongsynthError, match=f"num_keys \\+ 1 = {nk + 1} .*got {L}$"):
            t.make_config(input_seq_len=L, num_keys=nk, vocab_size=4)
    with pytest.raises(LongsynthError, match="got 20$"):  # the preset's length counts too
        t.make_config(preset="h3", num_keys=20, vocab_size=4)
    t.make_config(input_seq_len=3, num_keys=2)  # one pair: the least that has an answer
    t.make_config(input_seq_len=2, num_keys=2, allow_dot=True)  # no pair, answer '.': nothing redrawn


def test_one_pair_queries_it():
    """At the bound (one pair), the query is that pair's key and the answer its value."""
    b = longsynth.batch("associative-recall", 0, 64, input_seq_len=3, num_keys=2, vocab_size=10)
    x = b["inputs"].astype(np.int64)
    assert x.shape == (64, 6)
    assert (x[:, 3] == 9).all() and (x[:, 4:6] == x[:, 0:2]).all()  # => then the pair's key
    assert (b["targets"][:, -1] == x[:, 2]).all()  # its value


def test_no_pair_with_allow_dot_answers_dot():
    b = longsynth.batch("associative-recall", 0, 16, input_seq_len=2, num_keys=2, vocab_size=10, allow_dot=True)
    assert b["inputs"].shape == (16, 3) and (b["targets"][:, -1] == 0).all()


def _hostile(root):
    """A dataset made with allow_dot (no pair, valid), then forged to say allow_dot off with
    every checksum, id and shard attribute made consistent: before the check, verify passed
    and verify --deep, show and open spun forever regenerating it."""
    r = CliRunner().invoke(cli, ["gen", "associative-recall", *NO_PAIR, "--allow-dot",
                                 "--splits", "train=20", "--out", str(root)])
    assert r.exit_code == 0, r.output
    m = json.loads((root / "manifest.json").read_text())
    m["params"]["allow_dot"] = False
    m["generation"] = generation_of(m)
    for rec in m["splits"]["train"]["shards"]:
        path = root / rec["file"]
        with h5py.File(path, "r+") as f:
            f.attrs["params"] = np.bytes_(json.dumps(m["params"], sort_keys=True))
            f.attrs["generation"] = np.bytes_(m["generation"])
        rec["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        rec["bytes"] = path.stat().st_size
    (root / "manifest.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    return root


@pytest.mark.parametrize("args", [["verify"], ["verify", "--deep"], ["show"], ["info"]],
                         ids=["verify", "deep", "show", "info"])
def test_hostile_manifest_refused(tmp_path, args):
    root = _hostile(tmp_path / "ar")
    _one_line(_cli(args[0], str(root), *args[1:], cwd=tmp_path))


def test_hostile_manifest_open_refused(tmp_path):
    root = _hostile(tmp_path / "ar")
    code = f"""
import longsynth
from longsynth.errors import LongsynthError
try:
    longsynth.open({str(root)!r})["train"][0]
except LongsynthError as e:
    print(e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and MESSAGE in r.stdout, r.stdout + r.stderr


# The other redraw loops at the edge their checks allow: each finishes (docs of the loops'
# termination: the comments at them). A subprocess, so that a loosened check cannot hang.
EDGES = [
    ("associative-recall", dict(input_seq_len=3, num_keys=2, vocab_size=2 + 2 * 32)),  # 1 pair among 32^2 tuples
    ("mad-fuzzy-recall", dict(vocab_size=7, seq_len=13, k_motif_size=3, v_motif_size=3)),  # motifs use every token
    ("mad-recall", dict(seq_len=4, noise_vocab_size=2, frac_noise=0.999999)),  # one slot, almost always noise
    ("mqar", dict(vocab_size=17, input_seq_len=16, num_kv_pairs=4, power_a=1e-6)),  # every slot, every key drawn
    ("mqar", dict(vocab_size=9, input_seq_len=8, num_kv_pairs=1, num_passes=3)),
]


def test_redraw_edges_finish():
    code = f"""
import longsynth
for task, p in {EDGES!r}:
    b = longsynth.batch(task, 0, 256, **p)
print("done")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stdout + r.stderr


def test_edges_are_the_edges():
    """One step past each edge above is refused in one line."""
    past = [
        ("associative-recall", dict(input_seq_len=2, num_keys=2), "input_seq_len"),
        ("mad-fuzzy-recall", dict(vocab_size=7, seq_len=13, k_motif_size=4, v_motif_size=3), "k_motif_size"),
        ("mad-fuzzy-recall", dict(vocab_size=7, seq_len=13, k_motif_size=3, v_motif_size=4), "v_motif_size"),
        ("mad-fuzzy-recall", dict(vocab_size=7, seq_len=12, k_motif_size=3, v_motif_size=3), "seq_len"),
        ("mad-recall", dict(seq_len=4, noise_vocab_size=2, frac_noise=1.0), "frac_noise"),
        ("mqar", dict(vocab_size=17, input_seq_len=16, num_kv_pairs=5), "num_kv_pairs"),
        ("mqar", dict(vocab_size=16, input_seq_len=16, num_kv_pairs=4), "vocab_size"),
    ]
    for task, p, name in past:
        with pytest.raises(LongsynthError, match=name):
            longsynth.registry.get(task).make_config(**p)
