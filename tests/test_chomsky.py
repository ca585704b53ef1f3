"""The Chomsky-hierarchy tasks (docs/tasks/chomsky.md): kernels against the twins of
tests/naive_chomsky.py, batch against samples, the row layout, the documented examples, bad
configs in one line, gen and verify --deep through the command line, golden digests, and our
definitions and laws against the authors' samplers (tests/data/chomsky_authors.npz, made by
bench/chomsky_fixtures.py; no JAX needed here)."""
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import registry
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.store import sample_digest

import naive_chomsky as nc

FIXTURES = Path(__file__).parent / "data" / "chomsky_authors.npz"
TASKS = list(nc.SIZES)  # the authors' names, hyphenated; ours are chomsky-<name>
LENGTHS = [dict(min_length=1, max_length=40), dict(min_length=1, max_length=6), dict(min_length=1, max_length=1),
           dict(min_length=2, max_length=2), dict(min_length=3, max_length=3), dict(min_length=41, max_length=90)]
EXTRA = {  # beyond the defaults: every parameter that changes a kernel's path
    "modular-arithmetic": [dict(modulus=2, operators="+"), dict(modulus=7, operators="-*"),
                           dict(modulus=13, operators="*_", max_length=30), dict(operators="++-", max_length=20)],
    "modular-arithmetic-brackets": [dict(mult=False), dict(modulus=2), dict(modulus=12, min_length=30, max_length=60)],
    "solve-equation": [dict(modulus=3), dict(modulus=11, min_length=30, max_length=60)],
    "reverse-string": [dict(vocab_size=1), dict(vocab_size=3), dict(vocab_size=200, max_length=20)],
    "duplicate-string": [dict(vocab_size=3), dict(vocab_size=200, max_length=20)],
    "odds-first": [dict(vocab_size=4), dict(vocab_size=1)],
    "bucket-sort": [dict(vocab_size=1), dict(vocab_size=2), dict(vocab_size=16, max_length=60),  # the kernel's
                    dict(vocab_size=17, max_length=60), dict(vocab_size=130, max_length=20)],  # two paths meet at 16
    "stack-manipulation": [dict(score_padding=True)],
    "binary-addition": [dict(score_padding=True), dict(min_length=120, max_length=200)],
    "binary-multiplication": [dict(score_padding=True), dict(min_length=120, max_length=200)],
    "compute-sqrt": [dict(min_length=60, max_length=70), dict(min_length=127, max_length=131),
                     dict(min_length=300, max_length=300)],
}
CASES = [(t, p) for t in TASKS for p in LENGTHS + EXTRA.get(t, [])]


def _id(case):
    task, params = case
    return task + "-" + "-".join(f"{k}={v}" for k, v in params.items())


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_kernel_matches_twin(case):
    task, params = case
    for split, index in itertools.product(("train", "test"), (0, 5, 17)):
        got = longsynth.sample("chomsky-" + task, index, seed=11, split=split, **params)
        want = nc.sample(task, 11, split, index, **params)
        for key in want:
            assert got[key].dtype == want[key].dtype, key
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{task} {params} {split} {index} {key}")


@pytest.mark.parametrize("task", TASKS)
def test_batch_is_samples_and_deterministic(task):
    name = "chomsky-" + task
    b = longsynth.batch(name, 7, 9, seed=5, split="val", max_length=12)
    again = longsynth.batch(name, 7, 9, seed=5, split="val", max_length=12)
    other = longsynth.batch(name, 7, 9, seed=6, split="val", max_length=12)
    for key in ("inputs", "targets"):
        np.testing.assert_array_equal(b[key], again[key])
        for i in range(9):
            np.testing.assert_array_equal(b[key][i], longsynth.sample(name, 7 + i, seed=5, split="val",
                                                                      max_length=12)[key])
    assert not np.array_equal(b["inputs"], other["inputs"])


@pytest.mark.parametrize("task", TASKS)
def test_row_layout(task):
    """inputs: x, o(n) empty tokens E = I, padding I + 1; targets: -100 on x and the padding,
    output classes under the empty tokens; ids within vocab_size; the width of max_length."""
    t = registry.get("chomsky-" + task)
    cfg = t.make_config()
    insize, outsize, out_len = nc.SIZES[task][:3]
    p = dict(nc.DEFAULTS.get(task, {}))
    e, v = insize(p), t.vocab_size(cfg)
    assert v == max(e + 2, outsize(p))
    b = longsynth.batch("chomsky-" + task, 0, 400, seed=1)
    x, y = b["inputs"].astype(int), b["targets"].astype(int)
    assert b["inputs"].dtype == np.int8 and x.shape == y.shape == (400, t.keys(cfg)["inputs"].shape[0])
    lengths = []
    for row, tgt in zip(x, y):
        n = int(np.argmax(row == e))
        o = out_len(n)
        lengths.append(n)
        assert (row[:n] < e).all() and (row[n:n + o] == e).all() and (row[n + o:] == e + 1).all()
        assert (tgt[:n] == -100).all() and (tgt[n + o:] == -100).all()
        assert ((tgt[n:n + o] >= 0) & (tgt[n:n + o] < outsize(p)) | (tgt[n:n + o] == -100)).all()
        assert tgt[n] != -100  # the first output is always scored
    hi = 39 if task == "modular-arithmetic" else 40
    assert min(lengths) == 1 and max(lengths) == hi


def test_lengths_are_uniform():
    b = longsynth.batch("chomsky-reverse-string", 0, 4000, seed=2, min_length=3, max_length=10)
    n = (b["inputs"] < 2).sum(axis=1)
    counts = np.bincount(n, minlength=11)[3:]
    assert counts.sum() == 4000 and np.abs(counts - 500).max() < 5 * np.sqrt(500)


EXAMPLES = [  # docs/tasks/chomsky.md's examples: task, params, x, the authors' output (0s after END included)
    ("even-pairs", {}, [0, 0, 1, 1, 1, 0], [0]),
    ("parity-check", {}, [1, 0, 1, 0, 1, 0, 0], [1]),
    ("cycle-navigation", {}, [2, 0, 1, 0, 0], [3]),
    ("modular-arithmetic", {}, [3, 7, 4, 5, 2], [4]),
    ("modular-arithmetic-brackets", {}, [8, 2, 7, 8, 6, 3, 9, 9], [4]),
    ("reverse-string", {}, [0, 1, 1, 0, 1], [1, 0, 1, 1, 0]),
    ("solve-equation", {}, [7, 3, 6, 7, 9, 8, 8, 10, 1], [2]),
    ("stack-manipulation", {}, [0, 1, 1, 0, 4, 2, 2], [1, 1, 0, 2, 0, 0, 0, 0]),
    ("binary-addition", {}, [0, 0, 1, 2, 0, 1, 1, 0, 1], [0, 1, 0, 1, 1, 2, 0, 0, 0, 0]),
    ("binary-multiplication", {}, [0, 0, 1, 2, 0, 1, 1, 0, 1], [0, 0, 0, 1, 1, 0, 1, 2, 0]),
    ("compute-sqrt", {}, [1, 0, 0, 1, 0, 1], [1, 1, 0]),
    ("duplicate-string", {}, [1, 0, 1], [1, 0, 1, 1, 0, 1]),
    ("missing-duplicate-string", {}, [0, 1, 1, 0, 0, 2, 1, 0], [1]),
    ("missing-duplicate-string", {}, [1, 0, 1, 1, 2, 1, 3], [0]),
    ("odds-first", {}, [0, 0, 1, 1, 0, 1, 0, 1], [0, 1, 1, 1, 0, 1, 0, 0]),
    ("bucket-sort", {}, [1, 0, 2, 0, 4, 1, 1, 2], [0, 0, 1, 1, 1, 2, 2, 4]),
]


@pytest.mark.parametrize("task,params,x,y", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_documented_examples(task, params, x, y):
    got, scored = nc.answer(task, x, **params)
    assert got == y
    assert scored == (y.index(2) + 1 if task in ("stack-manipulation", "binary-addition",
                                                  "binary-multiplication") else len(y))


def test_stack_example_row_from_the_kernel():
    """The docs' stack example as a stored row: found among the kernel's samples of length 7."""
    b = longsynth.batch("chomsky-stack-manipulation", 0, 30000, seed=0, length=7)
    hits = np.flatnonzero((b["inputs"][:, :7] == [0, 1, 1, 0, 4, 2, 2]).all(axis=1))
    assert hits.size > 0  # probability 1/6 * 2^-4 * 3^-3 = 1/2592 a sample
    for i in hits:
        assert b["inputs"][i, 7:].tolist() == [5] * 8
        assert b["targets"][i].tolist() == [-100] * 7 + [1, 1, 0, 2] + [-100] * 4


@pytest.mark.parametrize("task,params,message", [
    ("even-pairs", dict(min_length=5, max_length=4), "min_length"),
    ("even-pairs", dict(min_length=0), "min_length"),
    ("parity-check", dict(max_length=1 << 17), "max_length"),
    ("binary-multiplication", dict(max_length=10000), "max_length"),
    ("compute-sqrt", dict(min_length=9000, max_length=9000), "min_length"),
    ("modular-arithmetic", dict(operators="+/"), "operators"),
    ("modular-arithmetic", dict(operators=""), "operators"),
    ("modular-arithmetic", dict(modulus=1), "modulus"),
    ("modular-arithmetic-brackets", dict(mult=1), "mult"),
    ("solve-equation", dict(modulus=0), "modulus"),
    ("bucket-sort", dict(vocab_size=0), "vocab_size"),
    ("reverse-string", dict(length=0), "length"),
    ("reverse-string", dict(length=5, max_length=9),
     "length: 5 sets min_length, max_length, test_min_length and test_max_length to it, but max_length"),
    ("reverse-string", dict(width=5), "width: not a parameter"),
])
def test_bad_parameters_one_line(task, params, message):
    with pytest.raises(LongsynthError, match=message) as err:
        registry.get("chomsky-" + task).make_config(**params)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- the command line and the store


@pytest.mark.parametrize("task", TASKS)
def test_gen_and_verify_deep(task, tmp_path):
    out = tmp_path / task
    runner = CliRunner()
    r = runner.invoke(cli, ["gen", "chomsky-" + task, "--min-length", "1", "--max-length", "40", "-n", "60",
                            "--workers", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["verify", str(out), "--deep"])
    assert r.exit_code == 0 and "regenerated and identical" in r.output, r.output
    ds = longsynth.open(str(out))
    s = ds["train"][3]
    want = longsynth.sample("chomsky-" + task, 3, seed=0, split="train", min_length=1, max_length=40)
    assert all(np.array_equal(s[k], want[k]) for k in ("inputs", "targets"))
    ds.close()


# the test split's lengths at the training ones keep the rows 12 inputs wide, as when the digests were taken:
# the train split's draws did not change when the test split got its own lengths
SMALL = dict(min_length=1, max_length=12, test_min_length=1, test_max_length=12)
GOLDEN = {  # sample_digest hex of samples 0, 9 and 4 (seed 2023, train, SMALL)
    "even-pairs": ["20b0ab1e331b558d01c472001d6c8f0ee5363d11d400daf396295264186526d0",
                  "04d1f949beb516942b637601757e0972e288fc0cba400b04e24bbfd03c6bb1e6",
                  "38e670d83b810fc02792fd01acd3a8f70fb76145bca0652981edf32a468e2617"],
    "parity-check": ["20b0ab1e331b558d01c472001d6c8f0ee5363d11d400daf396295264186526d0",
                    "04d1f949beb516942b637601757e0972e288fc0cba400b04e24bbfd03c6bb1e6",
                    "d2bb2f86a023a4c1ef9984b17727f677ed75e628b5effef13c358cb188dc0cdb"],
    "cycle-navigation": ["9eb7f711f04bad098f211bbd7adc0ae12f20ce1195cc0819fd24322b405570c5",
                        "c1e65cbb8924a140e0e8d2e4502d631ba580aebf7cdf6060ebff92195ef19b39",
                        "5f70471742d0931a02324cb0bd602d9a189ee6ba0c93e9e2fb84fb0f66ffaabe"],
    "modular-arithmetic": ["50017b528907d5875b8c45ca4a82c62598dcc729acbb1ec320c687f898515d37",
                          "5b9f616d9c85552d8dbacab4ffc6e650f20b6b0fbe9f920469c5edd37da52e3a",
                          "6163c6c9e4cc7bfcdbd580ab176c536cff8e359ef41b85fdf75040e7c75cec8d"],
    "modular-arithmetic-brackets": ["4102d40d2caed01e8982f860068c6d5f00db9c68efefeed547512e86a5eba9df",
                                   "acfa105d6ddeaafd54b3e3713580f6921a85875c2735960b0dc6b49a8b6bed5a",
                                   "74a4cbd02b8059ba0e14d12b7da4c274b05af60bb0b816f4a0fb7ff767d1d0fd"],
    "reverse-string": ["39aa92ced06fb2929e2abd1541d3b5fc210996e596e1ffe892d51442486d0d40",
                      "33cee3c69ce4c43a99b55f25795f9d0082f2cf063c851ad3cc382720021c62f6",
                      "6c94d0f974225850c1740a5ccbe8a5f51455cbd2c834f06f8ac6e0fad6bca211"],
    "solve-equation": ["9287aa87fce113891e97774a7ed9f8a68b3e557f97fbcaca390690a4ed80a61e",
                      "b78c5a54974e881c829e30bad6a3d148c95a0a51717827158bf6a60bbe0896ca",
                      "4e61813d570f508361cbd38fe6e9f33e32f6ee4ff8016b3912e891d094707793"],
    "stack-manipulation": ["0e47810aa763bf127c642e2e8c2739f1ce8294905096ac8fc75bdc6a41f2d2da",
                          "83284c35d9f61bd5f785736b3e2bcedc9e90843e3e5ce9524cc156fca923a34e",
                          "b1575c41448c39666343149e9bbd4dae50b48076daca735703d351fea59b8e23"],
    "binary-addition": ["932955fe08d9a87fbf2dfdf7a3144a3cdc08eac5536840d988a3a722de7ab574",
                       "f29c8f0e6f842c7c6147dbc222d72e6bd1e6f93581ab38301d9bd1451e33f046",
                       "485d0a1ba1abad977cc7a8e66954fc5bf7415593b49bdbe4bcb27d728661d826"],
    "binary-multiplication": ["f9b7b0bc163a0d17e627e5237b41d511c3b38446a811b65276a038b4508be34f",
                             "f6f353c66feaede1cf56932e87109135812a60ef2e6e9f91d9a067e1da1af5a1",
                             "e3139d9f3a125e01753a9f7b102384eb94921b4f06a3d95122c812fbf6ebff7d"],
    "compute-sqrt": ["741f725a7ff289df671845e780009921cca9e988ea1b9b1d3f4283b755a75a05",
                    "bbcb793d660afd33e593a8776e2c150f4a9717c2631b0e577389004b709c2a11",
                    "94db4941cb8692ae7aa41760eb9cbd083033eeb411b5583a819dbcc0f978d845"],
    "duplicate-string": ["e5bf466a937aa8bbd37fd53117a3ca589eaf5aba4254350661da69d56179c616",
                        "1c121317de6ceacb829334905c067955e21eabf037919f657930c71344846ec4",
                        "1355fb5d510fdd94399ab4fb9a732ee149026b6968bb9af491dd31a349b21edc"],
    "missing-duplicate-string": ["e202beb230d3700d7b855b7518e3c85b6b1543485f54adf4433214d575461fee",
                                "0a05931e0a52ea5a62fbcf23e8a6ed44c7ff84106da48b1950228663472225b1",
                                "4ab81bb7c1bbc2941c1a6af5cf7e4055e0bdb8b91eed77635864c86088515314"],
    "odds-first": ["be81d0028ba1635294a0302a70f02d019dfa6d0840483991e7c48e451bd5c64d",
                  "33cee3c69ce4c43a99b55f25795f9d0082f2cf063c851ad3cc382720021c62f6",
                  "b0c90bbf1c8d3aac7f9d52d3659928c6613668b1cf7b2f20433d15d97a9d5ea7"],
    "bucket-sort": ["606950a718e17c6bc59de8bb8d0680836605d69ffa06867656bb58929bd69ebd",
                   "a129edafa26b89d23c079c657d9318fc9c07925a33625eec17d1883b49d3277a",
                   "ff751271e5c2562ee627ba8acdef9e73e5eb5a3b915f6664c0af0a58df1d3026"],
}


@pytest.mark.parametrize("task", TASKS)
def test_golden_digests(task):
    got = [sample_digest(longsynth.sample("chomsky-" + task, i, seed=2023, split="train", **SMALL)).hex()
           for i in (0, 9, 4)]
    assert got == GOLDEN[task]


# ---------------------------------------------------------------- the authors' samplers


@pytest.fixture(scope="module")
def authors():
    data = np.load(FIXTURES)
    return data, json.loads(bytes(data["meta"]).decode())


@pytest.mark.parametrize("task", TASKS)
def test_our_definition_answers_their_inputs(authors, task):
    data, meta = authors
    for n in meta["pair_lengths"]:
        xs, ys = data[f"pairs/{task}/{n}/input"], data[f"pairs/{task}/{n}/output"]
        for x, y in zip(xs, ys):
            got, _ = nc.answer(task, x)
            assert got == y.tolist(), (task, n, x.tolist())


@pytest.mark.parametrize("task", TASKS)
def test_our_law_is_theirs(authors, task):
    """At each length, how often each class sits at each input and output position: ours (2,000
    samples) and theirs (4,000) agree within 5 standard errors of the difference, cell by cell."""
    data, meta = authors
    ours_n, theirs_n = 2000, meta["law"]
    name = "chomsky-" + task
    extra = dict(score_padding=True) if "score_padding" in nc.DEFAULTS.get(task, {}) else {}
    for n in meta["law_lengths"]:
        b = longsynth.batch(name, 0, ours_n, seed=9, min_length=n, max_length=n, **extra)
        theirs_x, theirs_y = data[f"law/{task}/{n}/input"], data[f"law/{task}/{n}/output"]
        m, o = theirs_x.shape[0], theirs_y.shape[0]
        x, y = b["inputs"][:, :m].astype(int), b["targets"][:, m:m + o].astype(int)
        for ours, theirs, what in ((x, theirs_x, "input"), (y, theirs_y, "output")):
            mine = np.stack([np.bincount(ours[:, t], minlength=theirs.shape[1]) for t in range(ours.shape[1])])
            assert mine.shape == theirs.shape, (task, n, what)
            p1, p2 = mine / ours_n, theirs / theirs_n
            p = (mine + theirs) / (ours_n + theirs_n)
            tol = 5 * np.sqrt(p * (1 - p) * (1 / ours_n + 1 / theirs_n)) + 1e-9
            bad = np.argwhere(np.abs(p1 - p2) > tol)
            assert bad.size == 0, (task, n, what, bad[:5].tolist(), p1[tuple(bad[0])], p2[tuple(bad[0])])


def _run_before_x(x, m):
    """solve-equation: how many non-numbers stand just before 'x' (cyclically, in the expression)."""
    e = list(x[:-2])
    j, k = e.index(m + 4), 0
    while k < len(e) and e[(j - 1 - k) % len(e)] >= m:
        k += 1
    return k


def _left_length(x, m):
    """modular-arithmetic-brackets (n >= 5): the length of e1 in ( e1 op e2 )."""
    if x[1] == m + 1:
        return 2
    if x[1] != m + 3:
        return 1
    depth = 0
    for i in range(1, len(x)):
        depth += int(x[i] == m + 3) - int(x[i] == m + 4)
        if depth == 0:
            return i
    raise AssertionError(x)


def _depth(x, m):
    return int(np.max(np.cumsum((x == m + 3).astype(int) - (x == m + 4))))


STRUCTURE = {  # task -> features of a sample's input whose law the per-position counts do not pin down
    "solve-equation": [_run_before_x],
    "modular-arithmetic-brackets": [_left_length, _depth],
}


@pytest.mark.parametrize("task", sorted(STRUCTURE))
def test_our_structure_is_theirs(authors, task):
    """The histograms of STRUCTURE's features over RAW samples of theirs and as many of ours agree
    within 5 standard errors at every value (the place of 'x', the split and depth of the brackets)."""
    data, meta = authors
    count, name = meta["raw"], "chomsky-" + task
    for n in meta["raw_lengths"]:
        ours = longsynth.batch(name, 0, count, seed=4, min_length=n, max_length=n)["inputs"][:, :n].astype(int)
        theirs = data[f"raw/{task}/{n}/input"].astype(int)
        for feature in STRUCTURE[task]:
            f1, f2 = ([feature(x, 5) for x in rows] for rows in (ours, theirs))
            p1, p2 = (np.bincount(f, minlength=n + 1)[:n + 1] / count for f in (f1, f2))
            p = (p1 + p2) / 2
            tol = 5 * np.sqrt(p * (1 - p) * 2 / count) + 1e-9
            assert (np.abs(p1 - p2) <= tol).all(), (task, n, feature.__name__, p1, p2)


def test_length_beside_a_disagreeing_min_or_max_length_is_refused(tmp_path):
    """length sets min_length = max_length: given beside a bound that is the default's value (40), it was
    taken and both recorded; now refused in one line wherever a config is made (gen, batch), while a bound
    equal to it, or length alone, is accepted."""
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    r = CliRunner().invoke(cli, ["gen", "chomsky-reverse-string", "--length", "64", "--max-length", "40", "-n", "4",
                                 "--out", str(tmp_path / "d")])
    assert r.exit_code != 0 and ("length: 64 sets min_length, max_length, test_min_length and test_max_length to it, "
                                 "but max_length is 40") in r.output
    assert not (tmp_path / "d").exists()
    with pytest.raises(LongsynthError, match="but min_length is 1"):
        longsynth.batch("chomsky-bucket-sort", 0, 1, length=7, min_length=1)
    assert longsynth.batch("chomsky-reverse-string", 0, 1, length=7, max_length=7)["inputs"].shape == (1, 14)


def test_the_authors_stream_refusal_of_a_split_says_how_to_write_one():
    with pytest.raises(LongsynthError, match=r"longsynth gen: --splits train=N\)$"):
        longsynth.authors_stream("chomsky-reverse-string", 4, seed=0, split="val", length=8)


@pytest.mark.parametrize("task", ["parity-check", "reverse-string", "binary-addition"])
def test_the_test_split_is_at_the_papers_test_lengths(task):
    """A split named test is at lengths never trained on (the paper's 41-500) unless asked otherwise; train
    and val at 1-40; every split's rows one width; ``length`` sets every split's lengths."""
    name = "chomsky-" + task
    t = registry.get(name)
    lengths = longsynth.stats.row_lengths(t, t.make_config())
    test = longsynth.batch(name, 0, 600, seed=3, split="test")
    n = lengths(test["targets"])
    assert n.min() >= 41 and n.max() <= 500 and n.max() > 400
    for split in ("train", "val"):
        b = longsynth.batch(name, 0, 600, seed=3, split=split)
        m = lengths(b["targets"])
        assert m.min() >= 1 and m.max() == 40 and b["inputs"].shape == test["inputs"].shape
    mine = longsynth.batch(name, 0, 50, seed=3, split="test", test_min_length=60, test_max_length=70)
    assert set(lengths(mine["targets"])) <= set(range(60, 71))
    one = longsynth.batch(name, 0, 20, seed=3, split="test", length=9)
    assert set(lengths(one["targets"])) == {9} and one["inputs"].shape[1] == t.keys(t.make_config(length=9))[
        "inputs"].shape[0]
    with pytest.raises(LongsynthError, match="test_min_length: 90 exceeds test_max_length = 80"):
        longsynth.batch(name, 0, 1, split="test", test_min_length=90, test_max_length=80)


def test_info_shows_each_splits_lengths(tmp_path):
    from longsynth import store

    root = tmp_path / "d"
    store.generate(str(root), "chomsky-parity-check", {}, seed=0, splits={"train": 200, "val": 20, "test": 200},
                   workers=1)
    got = store.info(str(root))["lengths"]
    assert got["train"]["min"] >= 1 and got["train"]["max"] <= 40 and got["test"]["min"] >= 41
    r = CliRunner().invoke(cli, ["info", str(root)])
    assert r.exit_code == 0 and "length" in r.output and "41" in r.output, r.output
