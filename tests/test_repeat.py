"""The "Repeat After Me" string tasks (docs/tasks/repeat.md): the kernel against its twin, the
definition read back from rows, the refusals, and the authors' rows (tests/data/repeat_authors.npz,
made by bench/repeat_fixtures.py running their data_utils.py)."""
import json
import os

import numpy as np
import pytest

import longsynth
import naive
from longsynth.errors import LongsynthError
from longsynth.store import sample_digest

TASKS = {"copy": "repeat-copy", "prefix": "repeat-prefix-ngram", "suffix": "repeat-suffix-ngram",
         "duplicate": "repeat-duplicate-ngram"}
CASES = [
    {},  # the authors' defaults
    dict(vocab_size=2, n_gram=1, min_train_len=3, max_train_len=4, min_eval_len=3, max_eval_len=3, context_len=12),
    dict(vocab_size=5, n_gram=2, length_answer=2, min_train_len=6, max_train_len=9, min_eval_len=7, max_eval_len=30,
         context_len=70),
    dict(vocab_size=26, n_gram=4, min_train_len=300, max_train_len=500, min_eval_len=300, max_eval_len=500,
         context_len=1100),
    dict(vocab_size=3, n_gram=5, min_train_len=8, max_train_len=8, min_eval_len=9, max_eval_len=11, context_len=31),
]
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345), (5, "test", 0)]


def _params(task, case):
    p = dict(case)
    if task == "copy":
        p.pop("n_gram", None)
    if task == "duplicate":
        for which in ("train", "eval"):
            p[f"min_{which}_len"] = max(p.get(f"min_{which}_len", 10), p.get("n_gram", 3) + 3 + p.get(
                "length_answer", 0))
            p[f"max_{which}_len"] = max(p[f"min_{which}_len"], p.get(f"max_{which}_len", 20))
        p["context_len"] = max(p.get("context_len", 220), 2 * max(p["max_train_len"], p["max_eval_len"]) + 3)
    return p


def _ids(p):
    return "-".join(f"{k[:3]}{v}" for k, v in p.items()) or "defaults"


@pytest.mark.parametrize("case", CASES, ids=_ids)
@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(task, case, key):
    seed, split, index = key
    p = _params(task, case)
    got = longsynth.sample(TASKS[task], index, seed=seed, split=split, **p)
    want = naive.repeat(task, seed, split, index, **p)
    for k in ("inputs", "targets"):
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize("task", ["prefix", "suffix"])
@pytest.mark.parametrize("index", range(6))
def test_the_authors_query_under_our_stream_matches_the_twin(task, index):
    p = dict(min_train_len=6, min_eval_len=6, ambiguous_query=True, vocab_size=3, n_gram=2)
    for split in ("train", "test"):
        got = longsynth.sample(TASKS[task], index, seed=3, split=split, **p)
        want = naive.repeat(task, 3, split, index, **p)
        np.testing.assert_array_equal(got["inputs"], want["inputs"])
        np.testing.assert_array_equal(got["targets"], want["targets"])


def _examples(inputs, targets, V):
    """(example ids, scored ids) of each whole example of a row: split at '$', the scored part read from the
    targets (the next character where scored)."""
    c = list(inputs) + [None]
    scored = {t + 1 for t in np.flatnonzero(targets != -100)}
    starts = [i for i, x in enumerate(inputs) if x == V] + [len(inputs)]
    out = []
    for a, b in zip(starts, starts[1:]):
        ex = [x for x in c[a:b] if x is not None and x != V + 3]
        if ex and ex[-1] == V + 2:  # a whole example ends with its '.'
            out.append((ex, [i - a for i in range(a, a + len(ex)) if i in scored]))
    return out


@pytest.mark.parametrize("task", list(TASKS))
def test_the_definition_read_back_from_rows(task):
    """Every whole example of 200 train and 200 test rows is what the page defines: the answer is the string
    (copy, duplicate) or what follows the query, which occurs once in the string (lookups); the scored
    characters are the answer and its '.'; a test row is one example of min_eval_len..max_eval_len letters."""
    V = 26
    seen = {"train": 0, "test": 0}
    for split in seen:
        b = longsynth.batch(TASKS[task], 0, 200, seed=1, split=split)
        x, y = b["inputs"].astype(np.int64), b["targets"].astype(np.int64)
        assert x.shape == (200, 219) and b["inputs"].dtype == np.int8
        for r in range(200):
            for ex, scored in _examples(x[r], y[r], V):
                seen[split] += 1
                bars = [i for i, v in enumerate(ex) if v == V + 1]
                if task == "prefix":
                    q, s, a = ex[1 : bars[0]], ex[bars[0] + 1 : bars[1]], ex[bars[1] + 1 : -1]
                    start = bars[1] + 1
                elif task == "suffix":
                    s, qa = ex[1 : bars[0]], ex[bars[0] + 1 : -1]
                    q, a = qa[:3], qa[3:]
                    start = bars[0] + 4
                else:
                    s, a = ex[1 : bars[0]], ex[bars[0] + 1 : -1]
                    start = bars[0] + 1
                lo, hi = (10, 20) if split == "test" else ((10 if task == "duplicate" else 5), 20)
                assert lo <= len(s) <= hi and all(0 <= v < V for v in s)
                if task in ("prefix", "suffix"):
                    at = [i for i in range(len(s) - 2) if s[i : i + 3] == q]
                    assert len(at) == 1 and at[0] < len(s) - 4 and a == s[at[0] + 3 :]
                else:
                    assert a == s
                assert scored == list(range(start, len(ex)))
            if split == "test":
                assert len(_examples(x[r], y[r], V)) == 1
    assert seen["train"] > 1000 and seen["test"] == 200


def test_duplicate_strings_hold_an_ngram_twice():
    """Every duplicate test string holds some 3-gram at least twice (the one that replaced another, or the two
    equal windows drawn; their windows never overlap); copy's uniform strings of 10-20 letters do in 0.5%."""
    b = longsynth.batch("repeat-duplicate-ngram", 0, 300, seed=2, split="test")
    x = b["inputs"].astype(np.int64)
    for r in range(300):
        s = list(x[r, 1 : list(x[r]).index(27)])
        windows = [tuple(s[i : i + 3]) for i in range(len(s) - 2)]
        assert len(set(windows)) < len(windows), r


@pytest.mark.parametrize("task,params,match", [
    ("repeat-prefix-ngram", dict(min_train_len=4), "min_train_len: an example of 4 letters leaves no room"),
    ("repeat-suffix-ngram", dict(ambiguous_query=True), "at least 6"),
    ("repeat-duplicate-ngram", dict(min_eval_len=5, max_eval_len=5), "two n-gram starts"),
    ("repeat-copy", dict(max_eval_len=200), "context_len: an example of max_eval_len = 200 letters takes up to 403"),
    ("repeat-copy", dict(min_train_len=30), "min_train_len: 30 exceeds max_train_len"),
])
def test_configs_without_room_are_refused_in_one_line(task, params, match):
    with pytest.raises(LongsynthError, match=match) as e:
        longsynth.sample(task, 0, **params)
    assert "\n" not in str(e.value)


def test_a_string_with_no_unique_ngram_in_reach_is_refused_naming_the_row():
    """Two letters and 1-grams in strings of 20: a letter found once is rare, 1,000 strings without one happen."""
    with pytest.raises(LongsynthError, match=r"row \d+: no string of 1000 drawn had an n-gram found once"):
        longsynth.batch("repeat-suffix-ngram", 0, 64, vocab_size=2, n_gram=1, min_train_len=20, max_train_len=20)


GOLDEN = {
    "repeat-copy": ["778d3db4ad70b6a511548124ce83e961b401388cdaeea689443d0ebdb8180dc3",
                   "5373e7de51ca53b66f1d909225b13300614ddc40bde9f3173ae4a44742bc7f34"],
    "repeat-prefix-ngram": ["3ef0f3f8e99214237d135be641a03d72ad63406c9b132c496a7a9039a76d0449",
                           "1d09af4c4e69c2748e528160f0433811261b14be364652d5507ec3b002a5a8fb"],
    "repeat-suffix-ngram": ["76005e92a14234da284a3764727975c8c57af0b002e76fa25fcea6f245da5532",
                           "f21aaf128d9b29cb69b951277bc3b27e6c37e4d38fc7529095afb58500d7e355"],
    "repeat-duplicate-ngram": ["5eb50af0d253e93054194008ade734a678a002e60d89c41c89f9769026fec464",
                              "1bd47780dce5c1c5f675f880823d7673976deedc0246891ffa5dbd031bfb316f"],
}


@pytest.mark.parametrize("task", list(TASKS.values()))
def test_golden_digests(task):
    got = [sample_digest(longsynth.sample(task, i, seed=2023)).hex() for i in (0, 9)]
    assert got == GOLDEN[task]


FIXTURE = os.path.join(os.path.dirname(__file__), "data", "repeat_authors.npz")


def _cases():
    z = np.load(FIXTURE)
    meta = json.loads(z["meta"].tobytes())
    return {name: (m, z[f"{name}/input_ids"], z[f"{name}/mask"]) for name, m in meta.items()}


CASES_AUTHORS = _cases()


def _ours(m):
    """Our task's parameters for a case of their code (min_len / max_len are the split's lengths)."""
    p = dict(m["params"])
    lo, hi = p.pop("min_len"), p.pop("max_len")
    for which in ("train", "eval"):  # the other split's range unread, but checked: the same
        p[f"min_{which}_len"], p[f"max_{which}_len"] = lo, hi
    if m["task"] == "copy":
        p.pop("n_gram")
    return p


@pytest.mark.parametrize("name", sorted(CASES_AUTHORS))
def test_authors_stream_is_their_datasets_rows(name):
    """authors_stream equals their CopyDataset (train) or EvalCopyDataset (test) batch after batch after
    np.random.seed(s); random.seed(s): inputs element for element and the same scored positions; where their
    code raised, ours refuses in one line at the same row, and the rows before it still hold."""
    m, ids, mask = CASES_AUTHORS[name]
    task, p = TASKS[m["task"]], _ours(m)
    rows = ids.shape[0]
    if rows:
        got = longsynth.authors_stream(task, rows, seed=m["seed"], split=m["split"], **p)
        np.testing.assert_array_equal(got["inputs"], ids[:, :-1])
        np.testing.assert_array_equal(got["targets"], np.where(mask[:, 1:] == 1, ids[:, 1:], -100))
    if m["fails_at"] >= 0:
        with pytest.raises(LongsynthError, match=f"the authors' code fails here: .*row {m['fails_at']} of the") as e:
            longsynth.authors_stream(task, m["fails_at"] + 1, seed=m["seed"], split=m["split"], **p)
        assert "\n" not in str(e.value)


def test_the_fixture_covers_both_of_pythons_sample_paths_and_every_task():
    """random.sample draws from a pool up to 21 n-grams and from a set of indices above: both are fixtures."""
    windows = {name: m["params"]["max_len"] - m["params"]["n_gram"] - 1 for name, (m, _, _) in CASES_AUTHORS.items()
               if m["task"] == "duplicate"}
    assert min(windows.values()) <= 21 < max(windows.values())
    assert {m["task"] for m, _, _ in CASES_AUTHORS.values()} == set(TASKS)
    assert {m["split"] for m, _, _ in CASES_AUTHORS.values()} == {"train", "test"}


@pytest.mark.parametrize("task,split,match", [("repeat-copy", "val", "no val"),
                                              ("repeat-duplicate-ngram", "train", "never train on duplicate")])
def test_authors_stream_refuses_what_they_never_made(task, split, match):
    with pytest.raises(LongsynthError, match=match):
        longsynth.authors_stream(task, 4, seed=0, split=split)


def test_authors_stream_refuses_what_their_dataset_refuses():
    """Their CopyDataset refuses a min_train_len not above n_gram + length_answer (copy's n_gram: their command
    line's 0); our own law takes the config (the lookups' own check already asks more)."""
    params = dict(length_answer=5, min_train_len=5)
    longsynth.sample("repeat-copy", 0, **params)
    with pytest.raises(LongsynthError, match="their CopyDataset refuses 5, not above n_gram"):
        longsynth.authors_stream("repeat-copy", 4, seed=0, split="train", **params)


def test_the_repeat_suite_runs_through_evaluate_and_tests_longer_strings(tmp_path):
    """evaluate --suite repeat: the three trained tasks, each tested on its test split (10-20 letters) and on
    strings of 30 and 40 letters, one example a row; a short run writes its certificate with both test sets."""
    import json

    from longsynth.models_ref.evaluation.plan import suite_tasks
    from longsynth.models_ref.evaluation.protocol import resolve
    from longsynth.models_ref.evaluation.sweep import Settings, evaluate

    assert suite_tasks("repeat", "tiny") == [(t, t) for t in ("repeat-copy", "repeat-prefix-ngram",
                                                               "repeat-suffix-ngram")]
    for task, _ in suite_tasks("repeat", "tiny"):
        protocol = resolve(task, "tiny", task=task)
        for n in (20, 30, 40):
            row = longsynth.sample(task, 0, split="test", **{**protocol.data, **protocol.test_sets[str(n)]})
            x = list(row["inputs"].astype(np.int64))
            bars = [i for i, v in enumerate(x) if v == 27]
            letters = bars[1] - bars[0] - 1 if task == "repeat-prefix-ngram" else bars[0] - 1
            assert x.count(26) == 1 and letters == n, (task, n, x)
    evaluate("gru", "repeat-copy", out=str(tmp_path), settings=Settings(steps=5), progress=False)
    (cert,) = [json.load(open(os.path.join(d, "metrics.json"))) for d, _, fs in os.walk(tmp_path / "runs")
               if "metrics.json" in fs]
    assert set(cert["test_sets"]) == {"20", "30", "40"}
    assert all(0 <= r["accuracy"] <= 1 for r in cert["test_sets"].values())
    assert all(0 <= r["exact"]["string_accuracy"] <= 1 for r in cert["test_sets"].values())
    report = (tmp_path / "report.md").read_text()
    assert "| string accuracy |" in report and "String accuracy: the share of test rows" in report
    rep = json.loads((tmp_path / "report.json").read_text())
    (row,) = rep["rows"]
    assert row["trained_at"] == 20 and row["length_param"] == "max_eval_len"
    assert [c["at"] for c in row["by_length"]] == [20, 30, 40]
    from longsynth.models_ref.reports.figures import _strings, _x_label

    assert _x_label([row]) == "test length: the task's max_eval_len (most letters of a test example)"  # not tokens
    chomsky = {"task": "chomsky-even-pairs", "length_param": "max_length", "by_length": [{"kind": "test length"}]}
    assert _x_label([chomsky]) == "test length: the task's test_max_length (longest input of the test split)"
    assert [x for x, _ in _strings(row)] == [20, 30, 40]


def test_string_and_character_accuracy_are_their_get_score():
    """The evaluation's string_metrics on six test rows predicted with row r's first r answer letters wrong and
    every '.' wrong: string accuracy 1/6 (row 0 alone), character accuracy the mean of each row's share of right
    letters, the '.' left out of both (their get_score reads the letters before it); the loss still scores it."""
    import torch

    from longsynth.models_ref.training.config import TrainConfig
    from longsynth.models_ref.training.eval_pass import _batch_metrics, _exact

    rows = longsynth.batch("repeat-suffix-ngram", 0, 6, split="test")
    y = torch.from_numpy(rows["targets"].astype(np.int64))  # [6, 219]
    pred = torch.where(y == -100, 0, y)
    shares = []
    for r in range(6):
        at = torch.nonzero((y[r] != -100) & (y[r] != 28)).flatten()  # the answer's letters, in order
        pred[r, at[:r]] = (y[r, at[:r]] + 1) % 26
        pred[r, y[r] == 28] = 0  # every '.' wrong
        shares.append(1 - min(r, len(at)) / len(at))
    logits = torch.nn.functional.one_hot(pred, 30).float()
    cfg = TrainConfig(steps=1, lr=1.0, objective="tokens", readout="positions", string_metrics=(28,))
    m, sums = _batch_metrics(logits, y, {}, cfg)
    exact = _exact(sums, cfg)
    for got in (m, exact):
        assert got["string_accuracy"] == pytest.approx(1 / 6) and got["char_accuracy"] == pytest.approx(np.mean(shares))
    letters = int(((y != -100) & (y != 28)).sum())
    assert exact["count"] == letters and exact["rows"] == 6
    plain = TrainConfig(steps=1, lr=1.0, objective="tokens", readout="positions")
    assert "string_accuracy" not in _exact(_batch_metrics(logits, y, {}, plain)[1], plain)
