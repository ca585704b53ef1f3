"""Repeat After Me's rows, theirs against ours, in one run; and how often their lookup query is ambiguous.

    python bench/repeat_speed.py CHECKOUT [--json PATH]

CHECKOUT is a checkout of sjelassi/transformers_ssm_copy (1188c47): its ``synthetic_exps/data_utils.py``
makes their rows (``EvalCopyDataset`` for one example a row, ``CopyDataset`` for packed rows), timed
around the dataset's ``__getitem__`` alone; ours are ``longsynth.batch`` at the same parameters
(Numba's threads: every core), after a warm-up batch. Each pair is timed in turn, best of three.
Then their own test rows (10-20 letters; at the defaults, 26 letters and n_gram 3, and at 4 letters
and n_gram 2) are read back: the share whose query occurs more than once in the string (their
uniqueness check asks only that some n-gram of their list be alone, and the query may be any of
the list's but the last).
"""
import argparse
import random
import sys
import time
import types
from pathlib import Path

import numpy as np

import longsynth
from _common import finish, machine, write_json

# name: (their task, our task, their dataset, parameters (min_len, max_len: of the split), rows)
CASES = {
    "suffix lookup, 300-500 letters, one a row": ("suffix_ngram", "repeat-suffix-ngram", "eval",
                                                  dict(n_gram=3, context_len=1100, min_len=300, max_len=500), 400),
    "copy, packed rows of 220 characters": ("copy", "repeat-copy", "train",
                                            dict(n_gram=0, context_len=220, min_len=5, max_len=20), 4000),
    "prefix lookup, packed rows of 220": ("prefix_ngram", "repeat-prefix-ngram", "train",
                                          dict(n_gram=3, context_len=220, min_len=7, max_len=20), 2000),
}


def theirs(du, task, dataset, p, rows):
    tokenizer, to_token, _ = du.get_tokenizer(types.SimpleNamespace(vocab_size=26))
    common = dict(vocab_size=26, n_gram=p["n_gram"], length_answer=0, sequence_length=p["context_len"],
                  min_length=p["min_len"], max_length=p["max_len"], batch_size=8)
    data = (du.EvalCopyDataset(tokenizer, to_token, eval_task=task, **common) if dataset == "eval"
            else du.CopyDataset(tokenizer, train_task=task, **common))
    np.random.seed(0)
    random.seed(0)
    t0 = time.perf_counter()
    for b in range(rows // 8):
        data[b]
    return (time.perf_counter() - t0) / (rows // 8 * 8)


def ours(task, dataset, p, rows):
    split = "test" if dataset == "eval" else "train"
    which = "eval" if dataset == "eval" else "train"
    params = {"context_len": p["context_len"], f"min_{which}_len": p["min_len"], f"max_{which}_len": p["max_len"]}
    if task != "repeat-copy":
        params["n_gram"] = p["n_gram"]
        other = "train" if which == "eval" else "eval"
        params[f"min_{other}_len"], params[f"max_{other}_len"] = p["min_len"], p["max_len"]
    longsynth.batch(task, 0, 64, split=split, **params)  # compile and warm
    t0 = time.perf_counter()
    longsynth.batch(task, 0, rows, split=split, **params)
    return (time.perf_counter() - t0) / rows


def ambiguity(du, vocab_size, n_gram, rows=20_000):
    """Share of their suffix-lookup test queries (10-20 letters) found more than once in the string."""
    tokenizer, to_token, _ = du.get_tokenizer(types.SimpleNamespace(vocab_size=vocab_size))
    data = du.EvalCopyDataset(tokenizer, to_token, vocab_size=vocab_size, n_gram=n_gram, length_answer=0,
                              eval_task="suffix_ngram", sequence_length=220, min_length=10, max_length=20,
                              batch_size=rows)
    np.random.seed(0)
    random.seed(0)
    twice = 0
    for text in data[0]["input"]:
        s, rest = text[1:].split("|")
        q = rest[:n_gram]
        twice += sum(s[i : i + n_gram] == q for i in range(len(s) - n_gram + 1)) > 1
    return twice / rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", help="a checkout of sjelassi/transformers_ssm_copy")
    ap.add_argument("--json", default="bench/results/repeat_speed.json", help="where the results are written")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.checkout) / "synthetic_exps"))
    import data_utils as du

    results = {"machine": machine(), "cases": {}}
    print("| rows | theirs | ours | ratio |\n|---|---|---|---|")
    for name, (task, our_task, dataset, p, rows) in CASES.items():
        t, o = [], []
        for _ in range(3):
            t.append(theirs(du, task, dataset, p, rows))
            o.append(ours(our_task, dataset, p, rows * 20))
        t, o = min(t), min(o)
        results["cases"][name] = {"theirs_s_per_row": t, "ours_s_per_row": o, "ratio": t / o}
        print(f"| {name} | {t * 1e3:.3f} ms | {o * 1e6:.2f} us | {t / o:,.0f}x |", flush=True)
    for vocab_size, n_gram in ((26, 3), (4, 2)):
        share = ambiguity(du, vocab_size, n_gram)
        results[f"ambiguous_query_share_v{vocab_size}_n{n_gram}"] = share
        print(f"their suffix-lookup test queries (vocab_size {vocab_size}, n_gram {n_gram}, 10-20 letters) found "
              f"more than once in the string: {share:.2%}")
    finish(results["machine"])
    write_json(args.json, results)


if __name__ == "__main__":
    main()
