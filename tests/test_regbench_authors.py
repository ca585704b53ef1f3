"""regbench's authors' rows under a declared hash seed (docs/tasks/regbench.md, "The authors' rows"): NumPy's
draws and CPython's set orders replayed, each against the real thing, and the rows against fixtures made by
running berlino/seq_icl's setup() under PYTHONHASHSEED (bench/regbench_fixtures.py)."""
import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.generators.regbench import cpython_sets as cs
from longsynth.generators.regbench import numpy_draws as nd
from longsynth.generators.regbench.authors import string_hashes

FIXTURES = os.path.join(os.path.dirname(__file__), "data", "regbench_authors.npz")


def _state(s):
    st = nd.new_state()
    nd.seed(nd.entropy_words(s), st)
    return st


@pytest.mark.parametrize("s", [0, 1, 42, 2**32 - 1, 2**32, 2**40 + 5, 123456789012345678901234567890])
def test_the_draws_are_numpys(s):
    """default_rng(s): the raw outputs, then integers, integers(0, 2^32), choice(n, k, replace=False) and
    shuffle of a list in a random mix, against NumPy's own generator, value for value."""
    st = _state(s)
    assert [nd.next64(st) for _ in range(8)] == list(np.random.PCG64(s).random_raw(8))
    rng, st, mix = np.random.default_rng(s), _state(s), np.random.default_rng(s + 1)
    for _ in range(400):
        kind = int(mix.integers(0, 4))
        if kind == 0:
            lo = int(mix.integers(0, 50))
            hi = lo + int(mix.integers(1, 30))
            want, got = rng.integers(lo, hi), nd.integers(st, lo, hi)
        elif kind == 1:
            want, got = rng.integers(0, 2**32), nd.integers(st, 0, 2**32)
        elif kind == 2:
            n = int(mix.integers(1, 30))
            k = int(mix.integers(0, n + 1))
            want = list(rng.choice(n, size=k, replace=False))
            out = np.zeros(k, dtype=np.int64)
            nd.choice_distinct(st, n, k, out)
            got = list(out)
        else:
            n = int(mix.integers(1, 40))
            want, out = list(range(n)), np.arange(n)
            rng.shuffle(want)
            nd.shuffle_list(st, out)
            got = list(out)
        assert want == got, kind


def _ids(values):
    uniq = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(uniq)}
    return uniq, index, np.array([index[v] for v in values], dtype=np.int64), \
        np.array([hash(v) for v in values], dtype=np.int64)


def _order(keys, uniq):
    return [uniq[i] for i in cs.elements(keys)]


@pytest.mark.parametrize("trial", range(40))
def test_set_orders_are_cpythons(trial):
    """Sets of ints and of int pairs built from a list, copied, unioned with one element, deep-copied with
    removals and added to after them iterate in the order CPython's do; tuple and frozenset hashes are
    Python's, str items included."""
    r = np.random.default_rng(trial)
    n = int(r.integers(0, 200))
    if trial % 2:
        values = [(int(a), int(b)) for a, b in r.integers(0, 14, size=(n, 2))]
    else:
        values = [int(v) for v in r.integers(0, 2**61 - 2 if trial % 4 == 0 else 40, size=n)]
    uniq, index, ids, hs = _ids(values)
    real = set(values)
    k, h, m = cs.from_list(ids, hs)
    assert _order(k, uniq) == list(real)
    extra = 2**61 - 3 - trial
    uniq2 = uniq + [extra]
    ek, eh, em = cs.from_list(np.array([len(uniq)]), np.array([hash(extra)]))
    kc, hc, mc = cs.copy(k, h, m)
    assert _order(kc, uniq) == list(set(real))
    ku, hu, mu = cs.copy(kc, hc, mc)
    ku, hu = cs.merge(ku, hu, mu, ek, eh, em)
    assert _order(ku, uniq2) == list(set(real).union({extra}))
    if n:
        gone = [v for v in real if r.random() < 0.3]
        deep = copy.deepcopy(real)
        for v in gone:
            deep.remove(v)
        order = cs.elements(k)
        k2, h2, m2 = cs.from_list(order, np.array([hash(uniq[i]) for i in order], dtype=np.int64))
        for v in gone:
            cs.remove(k2, h2, m2, index[v], hash(v))
        assert _order(k2, uniq) == list(deep)
        for v in values[: 5]:  # re-added after removals: a removed slot on the probe is reused
            deep.add(v)
            k2, h2 = cs.add(k2, h2, m2, index[v], hash(v))
        assert _order(k2, uniq) == list(deep)
        fs = frozenset(values)
        assert cs.frozenset_hash(np.array([hash(v) for v in fs], dtype=np.int64), len(fs)) == hash(fs)
    items = tuple(values[:7]) + ("a", "sink")
    assert cs.tuple_hash(np.array([hash(v) for v in items], dtype=np.int64), len(items)) == hash(items)


@pytest.mark.parametrize("hash_seed", [0, 3, 4294967295])
def test_the_letters_order_as_in_a_python_with_that_hash_seed(hash_seed):
    """The alphabet set and the states with "sink" of a Python started with PYTHONHASHSEED=H iterate in the
    order replayed from ``string_hashes(H)``; H 0 and 3 give other orders, so the hashes are not this process's."""
    letters = "hacfqbdr"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["PYTHONHASHSEED"] = str(hash_seed)
    out = subprocess.run([sys.executable, "-c", "print(''.join(set('hacfqbdr'))); "
                          "print(*set(list(set(range(9)))).union({'sink'}))"],
                         env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    hashes = string_hashes(hash_seed, 18)
    ids = np.array([ord(c) - 97 for c in letters])
    k, _, _ = cs.from_list(ids, hashes[ids])
    assert "".join(chr(97 + i) for i in cs.elements(k)) == out[0]
    ints = np.arange(9)
    k0, h0, m0 = cs.from_list(ints, ints)
    k1, h1, m1 = cs.copy(*cs.copy(k0, h0, m0))
    sk, sh, sm = cs.from_list(np.array([9]), np.array([hashes[-1]]))
    k1, h1 = cs.merge(k1, h1, m1, sk, sh, sm)
    assert " ".join("sink" if i == 9 else str(i) for i in cs.elements(k1)) == out[1]
    assert not np.array_equal(string_hashes(0, 18), string_hashes(3, 18))


def _fixtures():
    z = np.load(FIXTURES)
    return z, json.loads(str(z["cases"]))


def _counts(case):
    return {"train": case["n"], "test": case["m"] // 2, "val": case["m"] - case["m"] // 2}


@pytest.mark.parametrize("i", range(3))
def test_the_authors_rows_equal_their_setup(i):
    """authors_dataset under a hash seed: every split's inputs and targets equal setup()'s (run under that
    PYTHONHASHSEED), wider only by padding, and each row's table is its DFA's."""
    z, cases = _fixtures()
    case = cases[i]
    got = longsynth.authors_dataset("regbench", _counts(case), seed=case["seed"], hash_seed=case["hash_seed"],
                                    **case["params"])
    for s in ("train", "test", "val"):
        want = z[f"{i}/{s}/inputs"]
        w = want.shape[1]
        np.testing.assert_array_equal(got[s]["inputs"][:, :w], want)
        np.testing.assert_array_equal(got[s]["targets"][:, :w], z[f"{i}/{s}/targets"])
        assert (got[s]["inputs"][:, w:] == 0).all() and (got[s]["targets"][:, w:] == -100).all()
        np.testing.assert_array_equal(got[s]["dfa"], z[f"{i}/{s}/dfa"])


def test_the_hash_seed_changes_their_rows():
    """Fixtures 0 and 1: one seed, hash seeds 0 and 1, other rows in every split (what the hash seed does)."""
    z, cases = _fixtures()
    assert cases[0]["seed"] == cases[1]["seed"] and cases[0]["hash_seed"] != cases[1]["hash_seed"]
    for s in ("train", "test", "val"):
        a, b = z[f"0/{s}/inputs"], z[f"1/{s}/inputs"]
        assert a.shape != b.shape or not np.array_equal(a, b), s


def test_gen_writes_them_and_verify_deep_draws_them_again(tmp_path):
    z, cases = _fixtures()
    case = cases[2]
    c = _counts(case)
    out = tmp_path / "d"
    args = ["gen", "regbench", "--authors-stream", "--hash-seed", str(case["hash_seed"]), "--seed", str(case["seed"]),
            "--splits", ",".join(f"{s}={n}" for s, n in c.items()), "--out", str(out)]
    for k, v in case["params"].items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    m = json.load(open(out / "manifest.json"))
    assert m["stream"] == "authors-pipeline" and m["params"]["hash_seed"] == case["hash_seed"]
    card = (out / "README.md").read_text()  # what the rows are: not MAD's one stream through train, val, test
    assert "PYTHONHASHSEED set to the `hash_seed`" in card and "order train, val, test" not in card
    ds = longsynth.open(str(out))
    for s in c:
        want = z[f"2/{s}/inputs"]
        rows = np.stack([ds.splits[s][i]["inputs"] for i in range(c[s])])
        np.testing.assert_array_equal(rows[:, : want.shape[1]], want)
        np.testing.assert_array_equal(np.stack([ds.splits[s][i]["dfa"] for i in range(c[s])]), z[f"2/{s}/dfa"])
    ds.close()
    r = CliRunner().invoke(cli, ["verify", str(out), "--deep"])
    assert r.exit_code == 0 and "regenerated and identical" in r.output, r.output


@pytest.mark.parametrize("call,line", [
    (lambda: longsynth.batch("regbench", 0, 2, seed=0, hash_seed=3), "read by the authors' stream only"),
    (lambda: longsynth.authors_dataset("regbench", {"train": 4, "test": 1, "val": 1}, seed=0),
     "depend on the PYTHONHASHSEED"),
    (lambda: longsynth.authors_dataset("regbench", {"train": 4, "test": 2, "val": 1}, seed=0, hash_seed=0),
     "test = num_test_examples // 2"),
    (lambda: longsynth.authors_dataset("regbench", {"train": 1, "test": 5, "val": 5}, seed=0, hash_seed=0),
     "test + val <= 9 x train"),
    (lambda: longsynth.authors_stream("regbench", 3, seed=0, split="test", hash_seed=0), "one pool of DFAs"),
    (lambda: longsynth.authors_dataset("regbench", {"train": 4}, seed=0, hash_seed=2**32), "hash_seed"),
])
def test_refusals_are_one_line(call, line):
    with pytest.raises(LongsynthError) as e:
        call()
    assert line in str(e.value) and "\n" not in str(e.value)


def test_gen_of_our_rows_refuses_a_hash_seed_before_writing(tmp_path):
    r = CliRunner().invoke(cli, ["gen", "regbench", "--hash-seed", "1", "-n", "4", "--out", str(tmp_path / "d")])
    assert r.exit_code != 0 and "read by the authors' stream only" in r.output and not (tmp_path / "d").exists()


FAKE = r'''
import json
import os

import numpy as np

HERE = os.path.dirname(__file__)


class _Tensor:
    def __init__(self, a):
        self.a = a

    def numpy(self):
        return self.a


class _Split:
    def __init__(self, inputs, targets):
        keep = max(1, int((inputs != 0).any(axis=0).nonzero()[0].max(initial=0)) + 1)  # padded to the longest
        self.inputs, self.targets = _Tensor(inputs[:, :keep]), _Tensor(targets[:, :keep])


class ICLDFADataModule:
    """A stand-in for their data module: the rows of the call the test expects (our replay under its hash seed,
    precomputed by the test beside this file), other rows for any other arguments or PYTHONHASHSEED; one row
    changed on request. It imports neither torch nor longsynth: a child Python that did took seconds a run."""

    def __init__(self, num_examples, num_test_examples, seed, **kw):
        self.call = dict(kw, num_examples=num_examples, num_test_examples=num_test_examples, seed=seed)

    def setup(self):
        with open(os.path.join(HERE, "expected.json")) as f:
            expected = json.load(f)
        rows = dict(np.load(os.path.join(HERE, "rows.npz")))
        if self.call != expected["call"] or os.environ.get("PYTHONHASHSEED") != expected["hash_seed"]:
            rows = {k: np.where(v > 0, v % 18 + 1, v) for k, v in rows.items()}  # as another hash seed would
        if os.path.exists(os.path.join(HERE, "CHANGE")):
            rows["val/inputs"][1, 2] += 1
        self.dataset = {s: _Split(rows[s + "/inputs"], rows[s + "/targets"]) for s in ("train", "test", "val")}
'''


def test_verify_authors_runs_their_setup_under_the_manifests_hash_seed(tmp_path):
    """verify --authors runs the checkout's setup() in a child Python started with the dataset's hash seed (a
    stand-in checkout here, whose rows are our replay under hash seed 77 for the dataset's arguments only if it
    was started with PYTHONHASHSEED=77 and called with them): equal, then a changed row found."""
    out = tmp_path / "d"
    r = CliRunner().invoke(cli, ["gen", "regbench", "--authors-stream", "--hash-seed", "77", "--splits",
                                 "train=6,test=2,val=2", "--out", str(out), "--max-len-per-example", "6"])
    assert r.exit_code == 0, r.output
    params = json.loads((out / "manifest.json").read_text())["params"]
    assert params.pop("hash_seed") == 77
    rows = longsynth.authors_dataset("regbench", {"train": 6, "test": 2, "val": 2}, seed=0, hash_seed=77, **params)
    fake = tmp_path / "checkout" / "src" / "dataloaders"
    fake.mkdir(parents=True)
    (fake / "dfa.py").write_text(FAKE)
    np.savez(fake / "rows.npz", **{f"{s}/{k}": v for s in rows for k, v in rows[s].items()})
    call = dict(params, num_examples=6, num_test_examples=4, seed=0)  # their test and val: halves of it
    (fake / "expected.json").write_text(json.dumps({"call": call, "hash_seed": "77"}))
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(tmp_path / "checkout")])
    assert r.exit_code == 0 and "all 10 rows equal" in r.output, r.output
    (fake / "CHANGE").write_text("")
    from longsynth import crosscheck

    crosscheck._REGBENCH_RUNS.clear()
    r = CliRunner().invoke(cli, ["verify", str(out), "--authors", str(tmp_path / "checkout")])
    assert r.exit_code != 0 and "val[1]: inputs differs" in r.output, r.output
