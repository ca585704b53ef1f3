"""RegBench's rows, the authors' ``setup`` against ours, in one run and one process on one core; and the
statistics of both laws side by side (docs/tasks/regbench.md).

    pip install pythomata==0.3.2     # their DFA library (theirs only; longsynth never imports it)
    python bench/regbench.py CHECKOUT [--dfas 320] [--json PATH]

CHECKOUT is a checkout of berlino/seq_icl (9b9223d): its ``src/dataloaders/dfa.py`` is imported with a
stand-in for ``src.dataloaders.base`` (which needs torchvision and einops, and gives the data module
only its base class), and ``ICLDFADataModule(...).setup()`` is timed alone: DFAs drawn, minimised,
trimmed, split, their strings drawn, tokenised and padded. Ours: ``longsynth.batch("regbench", ...)``
for the same number of rows, Numba on one thread, after a warm-up batch; and their own rows replayed
(``longsynth.authors_dataset(..., hash_seed=0)``: the script runs itself under PYTHONHASHSEED=0), checked
equal to the rows their setup() made in this process. Best of three each. Then
the two laws' statistics over the same number of rows: states of the minimal DFA, edges a state,
strings a row, letters a string, tokens a row.
"""
import argparse
import sys
import time
import types

import numpy as np

import longsynth
from _common import finish, machine, write_json

DEFAULTS = dict(vocab_size=20, max_num_nodes=12, min_num_in_context_examples=10, max_num_in_context_examples=20,
                max_outgoing_edges=4, max_len_per_example=50, input_seq_len=4096)


def their_module(checkout):
    """Their ``src/dataloaders/dfa.py``, loaded alone: its package's ``__init__`` imports every loader of
    theirs (torchvision, einops, ...), and ``src.dataloaders.base`` only gives it a base class."""
    import importlib.util
    import os

    for name in ("src", "src.dataloaders"):
        sys.modules.setdefault(name, types.ModuleType(name))
    base = types.ModuleType("src.dataloaders.base")
    base.SequenceDataset = type("SequenceDataset", (), {})
    sys.modules["src.dataloaders.base"] = base
    spec = importlib.util.spec_from_file_location("seq_icl_dfa", os.path.join(checkout, "src", "dataloaders",
                                                                              "dfa.py"))
    dfa = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dfa)
    return dfa


def theirs(dfa, n, seed=0):
    """(seconds of setup, the data module) for n rows: n - n // 10 training DFAs and n // 10 held out."""
    dm = dfa.ICLDFADataModule(num_examples=n - n // 10, num_test_examples=n // 10, seed=seed, **DEFAULTS)
    t = time.perf_counter()
    dm.setup()
    return time.perf_counter() - t, dm


def ours(n):
    t = time.perf_counter()
    b = longsynth.batch("regbench", 0, n, seed=0)
    return time.perf_counter() - t, b


def ours_authors(n, seed=0):
    """(seconds, rows) of longsynth's replay of ``theirs(dfa, n, seed)`` under this process's hash seed."""
    import os

    from longsynth.generators.regbench import authors

    authors._POOLS.clear()  # each run draws its DFAs anew (a data set's splits share them)
    t = time.perf_counter()
    rows = longsynth.authors_dataset("regbench", {"train": n - n // 10, "test": n // 10 // 2,
                                                  "val": n // 10 - n // 10 // 2},
                                     seed=seed, hash_seed=int(os.environ["PYTHONHASHSEED"]), **DEFAULTS)
    return time.perf_counter() - t, rows


def same_rows(dm, rows):
    """Their setup()'s splits equal our replay's, ours wider only by padding."""
    for s in ("train", "test", "val"):
        x, y = dm.dataset[s].inputs.numpy(), dm.dataset[s].targets.numpy()
        w = x.shape[1]
        if not (np.array_equal(rows[s]["inputs"][:, :w], x) and np.array_equal(rows[s]["targets"][:, :w], y)
                and (rows[s]["inputs"][:, w:] == 0).all()):
            return False
    return True


def their_stats(dm):
    states, degree, strings, letters, tokens = [], [], [], [], []
    for split in ("train", "test", "val"):
        ds = dm.dataset[split]
        x = ds.inputs
        for d in ds.dfas:
            tf = d.dfa._transition_function
            states.append(len(tf))
            degree += [len(v) for v in tf.values()]
        for row in x.numpy():
            n = int((row != 0).sum()) + 1
            tokens.append(n)
            words = "".join(dm.vocab.vocab[t] for t in row[: n - 1]).split("|")
            strings.append(len(words))
            letters += [len(w) for w in words[:-1]]  # the last string lost its last letter to the shift
    return dict(states=states, degree=degree, strings=strings, letters=letters, tokens=tokens)


def our_stats(b):
    states, degree, strings, letters, tokens = [], [], [], [], []
    for x, table in zip(b["inputs"].astype(np.int64), b["dfa"]):
        live = table[(table >= 0).any(axis=1)]
        states.append(len(live))
        degree += list((live >= 0).sum(axis=1))
        n = int((x != 0).sum()) + 1
        tokens.append(n)
        words = "".join("|" if t == 19 else "a" for t in x[: n - 1]).split("|")
        strings.append(len(words))
        letters += [len(w) for w in words[:-1]]
    return dict(states=states, degree=degree, strings=strings, letters=letters, tokens=tokens)


def their_ngram(checkout, dfa, rows):
    """Their in-context n-gram (ngram.py, order 3 with backoff, as train.py calls it) on our first ``rows`` rows
    of seed 0: its most probable token at each position, beside ours; the predictions, the agreement, times."""
    import importlib.util
    import os

    from longsynth.generators.regbench import scoring

    spec = importlib.util.spec_from_file_location("seq_icl_ngram", os.path.join(checkout, "ngram.py"))
    ng = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ng)
    vocab = dfa.Vocab(DEFAULTS["vocab_size"] - 2, {"seperator": "|", "noop": "."})
    b = longsynth.batch("regbench", 0, rows, seed=0)
    scoring.ngram_predictions(b["inputs"][:1], DEFAULTS["vocab_size"])  # compile
    t = time.perf_counter()
    ours = scoring.ngram_predictions(b["inputs"], DEFAULTS["vocab_size"])
    ours_s = time.perf_counter() - t
    out, agree, positions, theirs_s = [], 0, 0, 0.0
    for r in range(rows):
        x = b["inputs"][r]
        n = int((x != 0).sum())
        t = time.perf_counter()
        probs = ng.predict_with_n_gram_back_off("".join(vocab.vocab[v] for v in x[:n]), N=3, global_vocab=vocab,
                                                backoff=True, addone=False, uniform=False)
        theirs_s += time.perf_counter() - t
        pred = probs.argmax(-1)
        agree += int((pred == ours[r, :n]).sum())
        positions += n
        out.append({"index": r, "predictions": pred.tolist()})
    return {"rows": out, "agree": agree, "positions": positions, "theirs_s": theirs_s, "ours_s": ours_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="a checkout of berlino/seq_icl")
    ap.add_argument("--dfas", type=int, default=320, help="rows (DFAs) each side")
    ap.add_argument("--json", default="bench/results/regbench.json", help="where the results go")
    ap.add_argument("--fixtures", default=None,
                    help="also write their histograms and n-gram predictions into this folder (tests/data: "
                         "regbench_law.json and regbench_ngram.json, which tests/test_regbench.py reads)")
    ap.add_argument("--ngram-rows", type=int, default=12, help="rows of ours their n-gram predicts (O(L^2) a row)")
    args = ap.parse_args()
    import os

    if os.environ.get("PYTHONHASHSEED") != "0":  # their rows depend on it: run under a declared one
        os.execve(sys.executable, [sys.executable, *sys.argv], dict(os.environ, PYTHONHASHSEED="0"))
    from numba import set_num_threads

    set_num_threads(1)
    dfa = their_module(args.checkout)
    results = {"machine": machine(), "dfas": args.dfas}
    ours(8)  # compile (or load) the kernels
    t_theirs, dm = min((theirs(dfa, args.dfas) for _ in range(3)), key=lambda r: r[0])
    t_ours, b = min((ours(args.dfas) for _ in range(3)), key=lambda r: r[0])
    ours_authors(8)
    t_auth, rows = min((ours_authors(args.dfas) for _ in range(3)), key=lambda r: r[0])
    same = same_rows(dm, rows)
    results.update(theirs_s=t_theirs, ours_s=t_ours, theirs_per_dfa_ms=1e3 * t_theirs / args.dfas,
                   ours_per_dfa_us=1e6 * t_ours / args.dfas, ratio=t_theirs / t_ours, authors_s=t_auth,
                   authors_per_dfa_us=1e6 * t_auth / args.dfas, authors_ratio=t_theirs / t_auth,
                   authors_identical=same)
    print(f"{args.dfas} rows: their setup {t_theirs:.3f} s ({1e3 * t_theirs / args.dfas:.2f} ms a DFA), ours "
          f"{t_ours * 1e3:.2f} ms ({1e6 * t_ours / args.dfas:.1f} us a DFA): {t_theirs / t_ours:,.0f}x")
    print(f"their rows replayed (PYTHONHASHSEED=0): {t_auth * 1e3:.1f} ms ({1e6 * t_auth / args.dfas:.1f} us a DFA): "
          f"{t_theirs / t_auth:,.0f}x; {'identical to' if same else 'DIFFERENT from'} their setup()'s rows")
    # the laws side by side, over more rows than the timing
    n = max(args.dfas, 3000)
    _, dm = theirs(dfa, n, seed=1)
    a, o = their_stats(dm), our_stats(longsynth.batch("regbench", 0, n, seed=1))
    results["stats"] = {}
    print(f"{'statistic':28s} {'theirs':>16s} {'ours':>16s}")
    for k in a:
        row = {"theirs_mean": float(np.mean(a[k])), "ours_mean": float(np.mean(o[k])),
               "theirs_std": float(np.std(a[k])), "ours_std": float(np.std(o[k])),
               "theirs_range": [int(min(a[k])), int(max(a[k]))], "ours_range": [int(min(o[k])), int(max(o[k]))]}
        results["stats"][k] = row
        print(f"{k:28s} {row['theirs_mean']:8.3f} ± {row['theirs_std']:5.2f} {row['ours_mean']:8.3f} ± "
              f"{row['ours_std']:5.2f}   ranges {row['theirs_range']} {row['ours_range']}")
    from scipy import stats

    cats = np.arange(1, 13)
    ta, to = [np.array([(np.array(s["states"]) == c).sum() for c in cats]) for s in (a, o)]
    keep = (ta + to) > 0
    results["states_chi2_p"] = float(stats.chi2_contingency(np.stack([ta[keep], to[keep]]))[1])
    print(f"states of the minimal DFA, theirs against ours: chi-square p = {results['states_chi2_p']:.3g}")
    ngram = their_ngram(args.checkout, dfa, args.ngram_rows)
    results["ngram"] = {k: v for k, v in ngram.items() if k != "rows"}
    print(f"their n-gram on {args.ngram_rows} of our rows: {ngram['agree']:,} of {ngram['positions']:,} predictions "
          f"the same as ours; {ngram['theirs_s']:.1f} s against {1e3 * ngram['ours_s']:.2f} ms "
          f"({ngram['theirs_s'] / ngram['ours_s']:,.0f}x)")
    if args.fixtures:
        import os

        hist = {k: {str(v): int(c) for v, c in zip(*np.unique(a[k], return_counts=True))}
                for k in ("states", "degree", "strings")}
        write_json(os.path.join(args.fixtures, "regbench_law.json"), {
            "source": f"berlino/seq_icl @ 9b9223d, ICLDFADataModule(num_examples={n - n // 10}, num_test_examples="
                      f"{n // 10}, seed=1).setup(), icl_dfa.yaml's defaults, pythomata 0.3.2 (bench/regbench.py)",
            "rows": n, "histograms": hist})
        write_json(os.path.join(args.fixtures, "regbench_ngram.json"), {
            "source": "berlino/seq_icl @ 9b9223d, ngram.py predict_with_n_gram_back_off(row, N=3, backoff=True, "
                      "addone=False, uniform=False), argmax a position, on longsynth.batch('regbench', 0, ROWS, "
                      "seed=0)'s rows (bench/regbench.py)", "rows": ngram["rows"]})
    finish(results["machine"])
    write_json(args.json, results)


if __name__ == "__main__":
    main()
