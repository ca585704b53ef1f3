"""regbench (docs/tasks/regbench.md): the kernel against its twin, and the law checked on generated rows:
every string a walk of the row's DFA, the stored DFA minimal and numbered as defined, and the counts at
their uniform laws."""
import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

import longsynth
import naive
from longsynth.cli.main import cli

CASES = [dict(), dict(vocab_size=6, max_num_nodes=4, max_outgoing_edges=4, min_num_in_context_examples=1,
                      max_num_in_context_examples=3, max_len_per_example=5),
         dict(vocab_size=28, max_num_nodes=30, max_outgoing_edges=8), dict(max_outgoing_edges=2, max_num_nodes=2),
         dict(input_seq_len=101)]  # the authors' character cut: 51 tokens
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345)]


@pytest.mark.parametrize("params", CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()) or "defaults")
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(params, key):
    seed, split, index = key
    got = longsynth.sample("regbench", index, seed=seed, split=split, **params)
    want = naive.regbench(seed, split, index, **params)
    for k in ("inputs", "targets", "dfa"):
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def _strings(x, y, sep):
    """The strings of a row (inputs, targets): its tokens are the inputs and the last scored target."""
    n = int((x != 0).sum())
    tokens = list(x[:n]) + ([int(y[n - 1])] if n and y[n - 1] != -100 else [])
    words, cur = [], []
    for t in tokens:
        if t == sep:
            words.append(cur)
            cur = []
        else:
            cur.append(int(t) - 1)
    return words + [cur]


def _table_dicts(table):
    return [{a: int(d) for a, d in enumerate(row) if d >= 0} for row in table if (row >= 0).any()]


def test_rows_are_walks_of_their_minimal_dfa_and_counts_follow_their_laws():
    b = longsynth.batch("regbench", 0, 600, seed=4)
    x, y, dfa = (b[k].astype(np.int64) for k in ("inputs", "targets", "dfa"))
    assert x.shape == (600, 948) and b["inputs"].dtype == np.int8 and dfa.shape == (600, 12, 18)
    counts, lengths, states = [], [], []
    for r in range(600):
        table = _table_dicts(dfa[r])
        states.append(len(table))
        # minimal and numbered as defined: minimising the stored DFA gives it back
        assert naive.minimal_dfa(len(table), table, 18) == table, r
        words = _strings(x[r], y[r], 19)
        counts.append(len(words))
        for w in words:
            lengths.append(len(w))
            q = 0
            for a in w:
                assert a in table[q], (r, w)
                q = table[q][a]
        n = int((x[r] != 0).sum())
        assert np.all(x[r, n:] == 0) and np.all(y[r, n:] == -100)
        assert np.all((y[r, :n] == -100) == (np.append(x[r, 1:n], -1) == 19) | (np.arange(n) == n - 1) & (y[r, n - 1]
                                                                                                            == -100))
    assert 1 <= min(states) and max(states) <= 12 and len(set(states)) > 5
    # strings a row uniform in 10..19, lengths in 1..49 (two-sided p-values above 1e-4)
    assert stats.chisquare(np.bincount(counts, minlength=20)[10:]).pvalue > 1e-4 and set(counts) <= set(range(10, 20))
    assert stats.chisquare(np.bincount(lengths, minlength=50)[1:]).pvalue > 1e-4 and set(lengths) <= set(range(1, 50))


def test_the_walk_takes_each_enabled_letter_alike():
    """At the start state of every row, the first letter of each string is uniform over the state's letters:
    the count of each letter's position in the state's sorted letters is flat."""
    b = longsynth.batch("regbench", 0, 3000, seed=9)
    pos = []
    for r in range(3000):
        table = _table_dicts(b["dfa"][r])
        first = sorted(table[0])
        if len(first) == 3:
            for w in _strings(b["inputs"][r].astype(np.int64), b["targets"][r].astype(np.int64), 19):
                pos.append(first.index(w[0]))
    assert len(pos) > 2000 and stats.chisquare(np.bincount(pos, minlength=3)).pvalue > 1e-4


@pytest.mark.parametrize("args, field", [
    (["--min-num-in-context-examples", "5", "--max-num-in-context-examples", "5"], "max_num_in_context_examples"),
    (["--max-outgoing-edges", "13"], "max_outgoing_edges"),
    (["--vocab-size", "5"], "max_outgoing_edges"),
    (["--vocab-size", "29"], "vocab_size"),
])
def test_bad_parameters_are_one_line(tmp_path, args, field):
    r = CliRunner().invoke(cli, ["gen", "regbench", *args, "-n", "10", "--out", str(tmp_path / "d")])
    lines = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert r.exit_code != 0 and len(lines) == 1 and field in lines[0] and "Traceback" not in r.output, r.output
    assert not (tmp_path / "d").exists()


def _law_p(b, want, key):
    """Chi-square p of our rows' histogram of ``key`` (states of the minimal DFA, or edges a state) against the
    authors' (tests/data/regbench_law.json, made by bench/regbench.py from their checkout)."""
    from scipy.stats import chi2_contingency

    ours = {}
    for table in b["dfa"]:
        live = table[(table >= 0).any(axis=1)]
        values = [len(live)] if key == "states" else list((live >= 0).sum(axis=1))
        for v in values:
            ours[str(int(v))] = ours.get(str(int(v)), 0) + 1
    cats = sorted(set(want) | set(ours), key=int)
    return chi2_contingency([[want.get(c, 0) for c in cats], [ours.get(c, 0) for c in cats]])[1]


def test_the_dfas_follow_the_authors_law():
    """3,000 of our DFAs against 3,000 of theirs: the states of the minimal DFA and the edges a state have the same
    histograms (chi-square p above 1e-3); the same test tells a law with one state fewer at most apart."""
    import json
    import os

    want = json.load(open(os.path.join(os.path.dirname(__file__), "data", "regbench_law.json")))["histograms"]
    b = longsynth.batch("regbench", 0, 3000, seed=11)
    assert _law_p(b, want["states"], "states") > 1e-3
    assert _law_p(b, want["degree"], "degree") > 1e-3
    assert _law_p(longsynth.batch("regbench", 0, 3000, seed=11, max_num_nodes=11), want["states"], "states") < 1e-6


def test_scoring_kernels_match_their_twins():
    """The n-gram predictor and the DFA accuracy against their twins (tests/naive/regbench.py), row by row."""
    from longsynth.generators.regbench import scoring

    b = longsynth.batch("regbench", 0, 8, seed=3, min_num_in_context_examples=3, max_num_in_context_examples=9,
                        max_len_per_example=15)
    fast = scoring.ngram_predictions(b["inputs"], 20)
    acc = scoring.dfa_accuracy(b["inputs"], b["targets"], b["dfa"], fast)
    noise = np.random.default_rng(1).integers(0, 20, size=fast.shape)  # predictions of every kind: '|', '.'
    acc_noise = scoring.dfa_accuracy(b["inputs"], b["targets"], b["dfa"], noise)
    for r in range(8):
        np.testing.assert_array_equal(fast[r], naive.regbench_ngram(b["inputs"][r], 20), err_msg=str(r))
        assert tuple(acc[r]) == naive.regbench_dfa_accuracy(b["inputs"][r], b["targets"][r], b["dfa"][r], fast[r], 20)
        assert tuple(acc_noise[r]) == naive.regbench_dfa_accuracy(b["inputs"][r], b["targets"][r], b["dfa"][r],
                                                                  noise[r], 20)


def test_the_ngram_is_the_authors():
    """Their ngram.py's most probable token at every position of 12 of our rows (tests/data/regbench_ngram.json,
    made by bench/regbench.py from their checkout): ours gives the same but at two exact ties, where letters of
    equal probability are told apart by their float sums' order (ours takes the first letter)."""
    import json
    import os

    from longsynth.generators.regbench import scoring

    fx = json.load(open(os.path.join(os.path.dirname(__file__), "data", "regbench_ngram.json")))
    b = longsynth.batch("regbench", 0, len(fx["rows"]), seed=0)
    ours = scoring.ngram_predictions(b["inputs"], 20)
    differ, total = [], 0
    for row in fx["rows"]:
        theirs = np.array(row["predictions"])
        total += len(theirs)
        assert np.all(ours[row["index"], len(theirs):] == 0)  # the padding
        differ += [(row["index"], int(i)) for i in np.flatnonzero(theirs != ours[row["index"], :len(theirs)])]
    assert total > 3000 and differ == [(3, 119), (10, 94)], differ


def test_the_ngram_control_tells_true_dfas_from_shuffled_ones():
    """A certificate of the data that needs no training: the in-context n-gram's predictions are letters the
    row's DFA allows at 0.93 of the scored positions, a uniformly random letter at 0.11; with each row's DFA
    given to the next row the n-gram falls below the random letter (the strings are no walks of it)."""
    from longsynth.generators.regbench import scoring

    b = longsynth.batch("regbench", 0, 400, seed=2)
    pred = scoring.ngram_predictions(b["inputs"], 20)
    rand = np.random.default_rng(0).integers(1, 19, size=pred.shape)

    def acc(dfa, p):
        a = scoring.dfa_accuracy(b["inputs"], b["targets"], dfa, p)
        return a[:, 0].sum() / a[:, 1].sum()

    true, chance, shuffled = acc(b["dfa"], pred), acc(b["dfa"], rand), acc(np.roll(b["dfa"], 1, axis=0), pred)
    assert true > 0.85 and 0.05 < chance < 0.2 and shuffled < chance, (true, chance, shuffled)
    assert acc(b["dfa"], np.where(b["targets"] < 0, 0, b["targets"])) == 1.0  # the true next letter: always allowed


def test_the_harness_scores_the_dfa_accuracy_as_scoring_does():
    """The evaluation pass of a DFA-accuracy protocol (RegBench's) on its evaluation batches: the true next tokens
    score 1, '|' everywhere 0, and random predictions what scoring.dfa_accuracy gives them."""
    import torch

    from longsynth.generators.regbench import scoring
    from longsynth.models_ref.evaluation.protocol import on_the_fly_sources, resolve
    from longsynth.models_ref.training.eval_pass import _batch_metrics, _exact

    proto = resolve("regbench", "tiny")
    cfg = proto.train_config(lr=1e-3, seed=0)
    _, val, _, _ = on_the_fly_sources(proto, 8)
    x, y, extras = next(iter(val()))
    assert x.shape == y.shape == extras["allowed"].shape and set(extras) == {"allowed"}
    b = longsynth.batch("regbench", 0, 8, seed=0, split="val")  # the same rows: batch 0 of val, seed 0
    assert np.array_equal(x.numpy(), b["inputs"]) and np.array_equal(y.numpy(), b["targets"])

    def score(pred):
        out = torch.nn.functional.one_hot(torch.as_tensor(pred).long(), 20).float()  # [B, T, 20]
        m, sums = _batch_metrics(out, y, dict(extras), cfg)
        return m["dfa_accuracy"], _exact(sums, cfg)

    truth = np.where(b["targets"] < 0, 0, b["targets"])
    assert score(truth)[0] == 1.0 and score(np.full(truth.shape, 19))[0] == 0.0
    rand = np.random.default_rng(0).integers(0, 20, size=truth.shape)
    acc, exact = score(rand)
    want = scoring.dfa_accuracy(b["inputs"], b["targets"], b["dfa"], rand).sum(axis=0)
    assert (exact["dfa_correct"], exact["dfa_count"]) == tuple(want) and acc == want[0] / want[1]


def test_evaluate_reports_the_dfa_accuracy(tmp_path):
    import json

    r = CliRunner().invoke(cli, ["evaluate", "attention", "--suite", "regbench", "--steps", "2", "--out",
                                 str(tmp_path / "ev")])
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "ev" / "report.json").read_text())
    assert report["rows"][0]["metric"] == "dfa_accuracy"
    text = (tmp_path / "ev" / "report.md").read_text()
    assert "| regbench | DFA accuracy |" in text
    # what never-trained predictors score on the same rows, so that a reader can place the model's figure
    import re

    ngram, letter = map(float, re.search(r"3-gram .*?\*\*([0-9.]+)\*\*, a uniformly random letter ([0-9.]+)",
                                         text).groups())
    assert ngram > 0.85 and 0.05 < letter < 0.2
    cert = report["runs"][0]
    assert cert["dfa_levels"]["ngram"] == pytest.approx(ngram, abs=5e-4)  # the report reads the certificate's
    # report.png draws both levels across the row's bars, where a reader compares the model's bar with them
    from longsynth.certificate import read_report
    from longsynth.models_ref.reports.report import Report

    data = read_report(str(tmp_path / "ev"))
    ax = Report(identity=data["model"], suite=data["suite"], scale=data["scale"], settings=data.get("settings") or {},
                runs=data["runs"]).figure().axes[0]
    drawn = {c.get_label(): c.get_segments()[0][0][0] for c in ax.collections
             if c.get_label().startswith(("the authors", "a uniformly"))}
    assert drawn == {"the authors' in-context 3-gram (never trained)": pytest.approx(ngram, abs=5e-4),
                     "a uniformly random letter": pytest.approx(letter, abs=5e-4)}
    # a stranger's report whose levels are no fractions is one line naming the field
    from longsynth.certificate import CertificateError

    cert["dfa_levels"]["ngram"] = 2.0
    (tmp_path / "ev" / "report.json").write_text(json.dumps(report))
    with pytest.raises(CertificateError, match="dfa_levels.ngram"):
        read_report(str(tmp_path / "ev"))
