"""ListOps-Subtrees and classic ListOps: exactness, independent evaluation, storage, export."""
import csv
import io
import os

import numpy as np
import pytest
from scipy import stats

import longsynth
from longsynth import exports, registry, store
from longsynth.generators.listops import show as listops_show
from longsynth.generators.listops import tasks as lo
from longsynth.generators.listops import tree
from longsynth.rng import stream
from longsynth.task import Ragged, unpack

import naive

SMALL = {"min_length": 40, "max_length": 120, "max_args": 5, "max_depth": 6}
LEVEL = 1e-3  # significance level of every distribution test (seeded, so results are stable)


def samples(task, params, count, start=0, split="train", seed=0):
    t, cfg, seed, code, fixed = longsynth.api.resolve(task, seed, split, params)
    block = t.generate(cfg, seed, code, start, count, fixed)
    return [unpack(block, i) for i in range(count)]


def check_against_evaluator(task, s, params):
    cfg = registry.get(task).make_config(**params)
    ev = naive.listops_evaluate(s["inputs"])
    assert cfg.min_length < ev["length"] < cfg.max_length
    assert int(s["length"]) == ev["length"] == s["inputs"].shape[0]
    assert s["heights"].tolist() == ev["heights"]
    assert s["operators"].tolist() == ev["operators"]
    assert max(ev["heights"]) <= cfg.max_depth - 1
    assert int(s["template"]) == ev["template"]
    if task == "listops-subtrees":
        assert s["targets"].tolist() == ev["targets"]
        assert int(s["root"]) == ev["root"]
    else:
        assert s["targets"].shape == () and int(s["targets"]) == ev["root"]


# ---------------------------------------------------------------- definition


def test_vocab_is_fixed_and_ordered():
    assert longsynth.vocab("listops-subtrees") == naive.LISTOPS_VOCAB
    assert longsynth.vocab("listops") == naive.LISTOPS_VOCAB
    assert len(tree.VOCAB) == 15


def test_worked_example_from_tasks_md():
    text = "[MAX 2 6 [MED [SM 3 1 6 ] 8 3 ] 4 5 ]"
    ids = [naive.LISTOPS_VOCAB.index(w) for w in text.split()]
    ev = naive.listops_evaluate(ids)
    tags = " ".join("-" if v < 0 else str(v) for v in ev["targets"])
    assert tags == "- - - - - - - - 0 - - 3 - - 6"
    assert ev["heights"] == [1, 2, 3]
    assert [naive.LISTOPS_VOCAB[o] for o in ev["operators"]] == ["[SM", "[MED", "[MAX"]
    assert ev["lengths"] == [5, 9, 15] and ev["closes"] == [8, 11, 14] and ev["root"] == 6
    shown = listops_show.render(ids, ev["targets"]).split("\n")
    assert shown[0].split() == text.split()
    for word, tag in zip(text.split(), shown[1].split()):
        assert shown[0].index(word) >= 0 and len(tag) == 1
    # each tag starts in the same column as its token
    cols_tok = [i for i, c in enumerate(shown[0]) if c != " " and (i == 0 or shown[0][i - 1] == " ")]
    cols_tag = [i for i, c in enumerate(shown[1]) if c != " " and (i == 0 or shown[1][i - 1] == " ")]
    assert cols_tok == cols_tag


def test_operator_values_from_digit_counts():
    """The kernel's `]` value (from its arguments' digit counts) against the definition."""
    rng = np.random.default_rng(0)
    for _ in range(500):
        args = rng.integers(0, 10, size=rng.integers(2, 17)).tolist()
        hist = np.bincount(args, minlength=10).astype(np.int64)
        for op in range(4):
            got = tree._close_value(op, len(args), hist, 0)
            assert got == naive.listops_apply(op, args), (op, args)
    assert naive.listops_apply(2, [0, 3]) == 1 == int(np.median([0, 3]))


@pytest.mark.parametrize("task", ["listops-subtrees", "listops"])
def test_evaluator_agrees_on_generated_samples(task):
    for params, count in [(SMALL, 200), ({"min_length": 200, "max_length": 400}, 100)]:
        for s in samples(task, params, count, split="val", seed=3):
            check_against_evaluator(task, s, params)
    for s in samples(task, {}, 2, start=1000, seed=11):  # the task's default (paper / LRA) setting
        check_against_evaluator(task, s, {})


def test_sample_is_pure_function_of_key():
    a = samples("listops-subtrees", SMALL, 12, start=5)
    for i in (0, 7, 11):
        b = longsynth.sample("listops-subtrees", 5 + i, **SMALL)
        assert store.sample_digest(a[i]) == store.sample_digest(b)
    c = samples("listops-subtrees", SMALL, 3, start=5, split="test")
    assert store.sample_digest(a[0]) != store.sample_digest(c[0])


def test_length_pass_and_shape_pass_draw_identically():
    """The popcount length pass consumes exactly the documented node-by-node draws."""
    for mn, mx, args, depth in [(40, 120, 5, 6), (7000, 8180, 9, 15), (500, 2000, 10, 10),
                                (4, 30, 2, 4), (2, 5, 3, 2), (4, 12, 4, 3), (30, 400, 16, 6),
                                (30, 400, 7, 6), (100, 3000, 3, 12)]:
        cfg = lo.ListOpsConfig(mn, mx, args, depth)
        cap = tree.caps(mx, args, depth)
        kids = np.empty(mx, dtype=np.uint8)
        starts = np.zeros(depth + 1, dtype=np.int64)
        accepted = 0
        for index in range(40):
            sa, sb = stream(1, 1, index), stream(1, 1, index)
            for _ in range(2000):
                na = tree.attempt_length(sa, mn, mx, args, depth, cap)
                nb = tree.attempt_shape(sb, mn, mx, args, depth, cap, kids, starts)
                assert na == nb and np.array_equal(sa, sb)
                if na:
                    accepted += 1
                    assert cfg.min_length < na < cfg.max_length
                    break
        assert accepted > 0


@pytest.mark.parametrize("task, params, indices", [
    ("listops-subtrees", SMALL, range(12)),
    ("listops-subtrees", {"min_length": 4, "max_length": 30, "max_args": 2, "max_depth": 4}, range(6)),
    ("listops-subtrees", {"min_length": 10, "max_length": 90, "max_args": 3, "max_depth": 5}, range(6)),
    ("listops-subtrees", {"min_length": 30, "max_length": 400, "max_args": 16, "max_depth": 5}, range(6)),
    ("listops", {}, range(3)),
    ("listops-subtrees", {}, [0]),
])
def test_tokens_match_naive_twin_of_the_draw_order(task, params, indices):
    """Every token equals the pure-Python twin written from the documented draw order."""
    _, cfg, seed, code, _ = longsynth.api.resolve(task, 3, "val", params)
    args = (cfg.min_length, cfg.max_length, cfg.max_args, cfg.max_depth)
    for i in indices:
        got = longsynth.sample(task, i, seed=3, split="val", **params)["inputs"]
        assert got.tolist() == naive.listops_sample(seed, code, i, *args), i


def test_upper_bound_caps_are_longest_subtrees():
    """cap[d] + 1 is the length of the full tree below depth d (every node an operator with
    max_args arguments), clipped at max_length: the early rejection bound is attained."""
    for args, depth, mx in [(9, 15, 8180), (3, 5, 10_000), (2, 4, 100)]:
        cap = tree.caps(mx, args, depth)
        for d in range(1, depth + 1):
            full = 1
            for _ in range(depth - d):
                full = 2 + args * full
            assert cap[d] + 1 == min(full, mx)


# ---------------------------------------------------------------- distribution


def _stats_of(tokens_list):
    """(root operator, root arity, height, length) of each token sequence."""
    out = []
    for tok in tokens_list:
        tok = np.asarray(tok)
        step = np.where(tok < 4, 1, np.where(tok == 4, -1, 0))
        depth_before = np.concatenate([[0], np.cumsum(step)[:-1]])
        arity = int(np.sum((depth_before == 1) & (tok != 4)))
        out.append((int(tok[0]), arity, None, tok.shape[0]))
    return out


def _joint_table(a, b, min_expected=5.0):
    """2 x K contingency table over joint categories, sparse cells merged into one."""
    keys = sorted(set(a) | set(b))
    ca = np.array([a.count(k) for k in keys], dtype=np.float64)
    cb = np.array([b.count(k) for k in keys], dtype=np.float64)
    expected = (ca + cb) * min(ca.sum(), cb.sum()) / (ca.sum() + cb.sum())
    keep = expected >= min_expected
    table = np.array([np.append(ca[keep], ca[~keep].sum()), np.append(cb[keep], cb[~keep].sum())])
    return table[:, table.sum(axis=0) > 0]


def _categories(rows, cfg):
    bins = np.linspace(cfg.min_length, cfg.max_length, 5)
    return [(op, ar, h, int(np.searchsorted(bins, n))) for op, ar, h, n in rows]


@pytest.fixture(scope="module")
def small_draws():
    n = 20000
    t, cfg, seed, code, fixed = longsynth.api.resolve("listops-subtrees", 7, "train", SMALL)
    p = tree.generate_padded(cfg, seed, code, 0, n)
    toks = [p["tokens"][i, : p["lengths"][i]] for i in range(n)]
    ours = [(op, ar, int(p["heights"][i, p["ncloses"][i] - 1]), n_)
            for i, (op, ar, _, n_) in enumerate(_stats_of(toks))]
    ref, drawn = naive.listops_reference(2024, n, **SMALL)
    return cfg, ours, int(p["attempts"].sum()), ref, drawn


def test_joint_distribution_matches_plain_rejection(small_draws):
    """Root operator x root arity x height x length quartile: chi-square at LEVEL, plus KS on length."""
    cfg, ours, _, ref, _ = small_draws
    table = _joint_table(_categories(ours, cfg), _categories(ref, cfg))
    chi2, pval, dof, _ = stats.chi2_contingency(table)
    assert dof > 50 and pval > LEVEL, (chi2, dof, pval)
    for j in range(4):  # each marginal on its own
        t = _joint_table([r[j] for r in ours], [r[j] for r in ref])
        assert stats.chi2_contingency(t)[1] > LEVEL, j
    assert stats.ks_2samp([r[3] for r in ours], [r[3] for r in ref]).pvalue > LEVEL


def test_distribution_test_has_power(small_draws):
    """The same statistic rejects a reference with one more level of depth (a plausible bug)."""
    cfg, ours, _, _, _ = small_draws
    wrong, _ = naive.listops_reference(5, 20000, 40, 120, 5, 7)
    table = _joint_table(_categories(ours, cfg), _categories(wrong, cfg))
    assert stats.chi2_contingency(table)[1] < 1e-6


def test_length_law_and_acceptance_match_exact_dp(small_draws):
    cfg, ours, attempts, ref, drawn = small_draws
    law = lo.length_law(cfg)
    window = np.arange(cfg.min_length + 1, cfg.max_length)
    probs = law[window] / law[window].sum()
    keep = probs * len(ours) >= 5
    for rows in (ours, ref):
        counts = np.bincount([r[3] for r in rows], minlength=cfg.max_length)[window]
        obs = np.append(counts[keep], counts[~keep].sum())
        exp = np.append(probs[keep], probs[~keep].sum()) * len(rows)
        assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > LEVEL
    p = lo.acceptance(cfg)
    for n_trees in (attempts, drawn):  # attempts until n acceptances: negative binomial
        z = (n_trees - len(ours) / p) / (np.sqrt(len(ours) * (1 - p)) / p)
        assert abs(z) < 4, z


def test_dp_law_is_a_distribution():
    cfg = lo.ListOpsConfig(4, 1 << 14, 3, 8)  # window wide enough to hold every tree of depth <= 8
    law = lo.length_law(cfg)
    assert abs(law.sum() - 1.0) < 1e-9 and law[1] == 0.75
    assert law[4] == pytest.approx(0.25 * 0.5 * 0.75**2)


# ---------------------------------------------------------------- config


@pytest.mark.parametrize("params, field", [
    ({"min_length": 10, "max_length": 11}, "min_length"),
    ({"min_length": 4, "max_length": 7, "max_args": 2, "max_depth": 5}, "max_length"),  # lengths are 1 mod 3
    ({"min_length": 5000, "max_length": 6000, "max_args": 3, "max_depth": 5}, "max_length"),
    ({"max_depth": 1}, "max_depth"),
    ({"max_args": 1}, "max_args"),
])
def test_bad_configs_are_refused(params, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        longsynth.sample("listops-subtrees", 0, **params)


# ---------------------------------------------------------------- storage, audit, export

GOLDEN = {
    "listops-subtrees": [
        "a18d7c4b4458539672f1ccf17639cef68e57f28da5223aaf4b3e129105dc0bd7",
        "d663bb5d2184de9f2fff0ed124f055a4ae1ec68a2183bc924a753f6c1aa94bec",
    ],
    "listops": [
        "ea9b627c17071b0511818dd2294e4b6ae7361ae35b5670e400e3e604e0099f16",
        "e19e028cb41f1df0b54c40e16241d80a5cc3a314ef941742bcc436cc372ecafe",
    ],
}


@pytest.mark.parametrize("task", ["listops-subtrees", "listops"])
def test_golden_digests(task):
    got = [store.sample_digest(longsynth.sample(task, i, seed=0)).hex() for i in range(2)]
    assert got == GOLDEN[task]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds")
    out = {}
    for task in ("listops-subtrees", "listops"):
        d = str(root / task)
        store.generate(d, task, SMALL, seed=5, splits={"train": 300, "val": 40, "test": 40},
                       shard_size=128, workers=1)
        out[task] = d
    return out


@pytest.mark.parametrize("task", ["listops-subtrees", "listops"])
def test_stored_equals_sample(stored, task):
    ds = longsynth.open(stored[task])
    assert ds.manifest["vocab"] == naive.LISTOPS_VOCAB
    for split, idx in [("train", [0, 127, 128, 299]), ("val", [0, 39]), ("test", [17])]:
        for i in idx:
            a = ds[split][i]
            b = longsynth.sample(task, i, seed=5, split=split, **SMALL)
            assert store.sample_digest(a) == store.sample_digest(b)
    assert store.verify(stored[task], deep=True) == []


def test_audit_counts_template_clashes(stored, tmp_path):
    ds = longsynth.open(stored["listops-subtrees"])
    templates = []
    for split in ("train", "val", "test"):
        for s in ds[split]:
            ev = naive.listops_evaluate(s["inputs"])
            templates.append(tuple(t for t in s["inputs"].tolist() if t < 5))
            assert ev["template"] == int(s["template"])
    audit = ds.manifest["audit"]
    assert audit["templates"] == 380
    assert audit["clashes"] == 380 - len(set(templates))
    # a tiny window forces clashes: the audit finds them and confirms the templates are equal
    d = str(tmp_path / "tiny")
    store.generate(d, "listops-subtrees", {"min_length": 4, "max_length": 9}, seed=1,
                   splits={"train": 150, "val": 20, "test": 20}, workers=1)
    tiny = longsynth.open(d)
    tpl = [tuple(t for t in tiny[sp][i]["inputs"].tolist() if t < 5) for sp in ("train", "val", "test")
           for i in range(len(tiny[sp]))]
    audit = tiny.manifest["audit"]
    assert audit["clashes"] == 190 - len(set(tpl)) > 0
    assert audit["distinct"] == len(set(tpl))
    assert audit["examples"] and all(e["same_template"] for e in audit["examples"])
    a, b = audit["examples"][0]["a"], audit["examples"][0]["b"]
    ta = [t for t in tiny[a[0]][a[1]]["inputs"].tolist() if t < 5]
    tb = [t for t in tiny[b[0]][b[1]]["inputs"].tolist() if t < 5]
    assert ta == tb


def _read_tsv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t"))


def test_export_subtrees_parses_back(stored, tmp_path):
    ds = longsynth.open(stored["listops-subtrees"])
    seen = []
    exports.writer("lra-tsv")(ds, str(tmp_path), seen.append)
    assert sum(seen) == 380
    with open(tmp_path / "subtrees_val.tsv", "rb") as f:
        raw = f.read()
    assert raw.startswith(b"Source\tTarget\tSubTreeEvals\t") and raw.count(b"\r\n") == 41  # csv module's CRLF
    again = io.StringIO(newline="")
    csv.writer(again, delimiter="\t").writerows(_read_tsv(tmp_path / "subtrees_val.tsv"))
    assert again.getvalue().encode() == raw  # byte for byte what csv.writer writes
    row_id = 0
    for split in ("train", "val", "test"):
        rows = _read_tsv(tmp_path / f"subtrees_{split}.tsv")
        assert rows[0] == ["Source", "Target", "SubTreeEvals", "SubTreeLengths", "SubTreeHeights",
                           "SubTreeOps", "SubTreeInds", "Id"]
        assert len(rows) - 1 == len(ds[split])
        for i, row in enumerate(rows[1:]):
            s = ds[split][i]
            words = row[0].split()
            assert "(" not in words and ")" not in words
            ids = [naive.LISTOPS_VOCAB.index(w) for w in words]
            assert ids == s["inputs"].tolist()
            ev = naive.listops_evaluate(ids)
            assert int(row[1]) == ev["root"]
            assert [int(v) for v in row[2].split()] == [ev["targets"][c] for c in ev["closes"]]
            assert [int(v) for v in row[3].split()] == ev["lengths"]
            assert [int(v) for v in row[4].split()] == ev["heights"]
            assert row[5].split() == [naive.LISTOPS_VOCAB[o] for o in ev["operators"]]
            assert [int(v) for v in row[6].split()] == ev["closes"]
            assert words[int(row[6].split()[-1])] == "]" and int(row[3].split()[-1]) == len(words)
            assert int(row[7]) == row_id
            row_id += 1


def test_export_classic_parses_back(stored, tmp_path):
    ds = longsynth.open(stored["listops"])
    exports.writer("lra-tsv")(ds, str(tmp_path), None)
    assert sorted(os.listdir(tmp_path)) == ["basic_test.tsv", "basic_train.tsv", "basic_val.tsv"]
    for split in ("train", "val", "test"):
        rows = _read_tsv(tmp_path / f"basic_{split}.tsv")
        assert rows[0] == ["Source", "Target"] and len(rows) - 1 == len(ds[split])
        for i, (source, target) in enumerate(rows[1:]):
            ids = [naive.LISTOPS_VOCAB.index(w) for w in source.split()]
            assert ids == ds[split][i]["inputs"].tolist()
            assert int(target) == naive.listops_evaluate(ids)["root"] == int(ds[split][i]["targets"])


# ---------------------------------------------------------------- previews and blocks


def test_show_and_show_dataset(stored, tmp_path):
    from PIL import Image

    task = registry.get("listops-subtrees")
    ss = samples("listops-subtrees", SMALL, 2)
    heads = task.show(ss, task.make_config(**SMALL), str(tmp_path / "s.png"))
    assert heads.splitlines() == [line for line in heads.splitlines() if line.startswith("sample ")]  # summaries only
    assert Image.open(tmp_path / "s.png").size[0] > 100
    task.show(ss, task.make_config(**SMALL), str(tmp_path / "s.txt"))  # the expressions, as text
    text = (tmp_path / "s.txt").read_text()
    first = text.split("\n")[1:3]
    tokens = [tree.VOCAB[t] for t in ss[0]["inputs"].tolist()]
    assert first[0].split() == tokens[: len(first[0].split())]
    classic = registry.get("listops")
    cs = samples("listops", SMALL, 1)
    ctext = classic.show(cs, classic.make_config(**SMALL), None)
    assert f"root value {int(cs[0]['targets'])}," in ctext.split("\n")[0]
    classic.show(cs, classic.make_config(**SMALL), str(tmp_path / "c.txt"))
    ctext = (tmp_path / "c.txt").read_text()
    assert ctext.rstrip("\n").split("\n")[-1].split()[-1] == str(int(cs[0]["targets"]))  # tag under the last `]`
    ds = longsynth.open(stored["listops-subtrees"])
    summary = task.show_dataset(ds, "train", str(tmp_path / "h.png"))
    assert summary.startswith("train: 300 samples")
    assert Image.open(tmp_path / "h.png").size[1] > 100


def test_block_layout_and_size():
    t, cfg, seed, code, fixed = longsynth.api.resolve("listops-subtrees", 0, "train", SMALL)
    block = t.generate(cfg, seed, code, 0, 17, fixed)
    assert set(block) == set(t.keys(cfg))
    for k, spec in t.keys(cfg).items():
        col = block[k]
        if spec.ragged:
            assert isinstance(col, Ragged) and col.offsets.shape == (18,) and col.values.dtype == spec.dtype
        else:
            assert col.shape == (17,) and col.dtype == spec.dtype
    assert np.array_equal(np.diff(block["inputs"].offsets), block["length"])
    assert np.array_equal(np.diff(block["heights"].offsets), np.diff(block["operators"].offsets))


@pytest.mark.parametrize("task", ["listops-subtrees", "listops"])
def test_torch_loader_reads_listops(stored, task):
    import torch

    from longsynth.torch import ShardDataset

    ds = ShardDataset(stored[task], split="val")
    raw = longsynth.open(stored[task])["val"]
    for i in (0, 19, 39):
        x, y = ds[i]
        ev = naive.listops_evaluate(raw[i]["inputs"])
        assert x.dtype == torch.int64 and x.tolist() == raw[i]["inputs"].tolist()
        if task == "listops-subtrees":
            assert y.tolist() == [-100 if v < 0 else v for v in ev["targets"]]
        else:
            assert y.shape == () and int(y) == ev["root"]
