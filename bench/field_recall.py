"""The authors' generators of the recall and copying tasks beside ours, in one run, one core.

    NUMBA_NUM_THREADS=1 python bench/field_recall.py --zoology PATH --safari PATH --s4 PATH

PATHs are checkouts of HazyResearch/zoology @ d88d6f54, HazyResearch/safari @ 02220c69 and
state-spaces/s4 @ e757cef5 (their code is run from there: longsynth/crosscheck.py). Per task and
setting, samples per second of
    theirs   the authors' generator as their training code calls it: zoology's
             multiquery_ar for a segment; safari's per-example function and tokenizer (its
             data module's generate_example, before de-duplication); S4's copying
             dataset item by item (CopyingTrainDataset) and as one batch (CopyingEvalDataset)
    authors  longsynth.authors_stream, the same rows
    ours     longsynth.batch, our per-sample law, into a reused buffer
and the ratios ours / theirs and authors / theirs. Everything runs on one thread (Numba
and torch). Prints a table; writes JSON (--out).
"""
import argparse
import json
import os
import sys
import time

import numba
import numpy as np

import longsynth
from longsynth.crosscheck import s4_copying, safari, zoology
from _common import finish, machine

MQAR = [(64, 4), (128, 8), (256, 16), (512, 64)]
RECALL = [("safari", {}), ("h3", {"preset": "h3"}), ("L1024", {"input_seq_len": 1024}),
          ("hyena-131k", {"preset": "hyena-131k"})]
INDUCTION = [("h3", {"preset": "h3"}), ("mamba", {"preset": "mamba"})]
COPYING = [("mamba", {}), ("L200-M10-A10", {"L": 200, "M": 10, "A": 10})]


def rate(make, n, seconds, cap=1 << 24):
    """Samples per second of make(n): n grows until one call takes ``seconds`` or reaches
    ``cap`` (memory); at the cap, calls repeat until ``seconds`` have passed."""
    while True:
        t = time.perf_counter()
        make(n)
        dt = time.perf_counter() - t
        if dt >= seconds:
            return n / dt
        if n >= cap:
            done, spent = n, dt
            while spent < seconds:
                t = time.perf_counter()
                make(n)
                spent += time.perf_counter() - t
                done += n
            return done / spent
        n = min(cap, max(n + 1, int(n * min(8.0, 1.3 * seconds / max(dt, 1e-6)))))


def rows_in(nbytes, task, params):
    """How many samples of ``task`` fit in ``nbytes`` as int64 inputs and targets (at least 1)."""
    t = longsynth.registry.get(task)
    L = t.keys(t.make_config(**params))["inputs"].shape[0]
    return max(1, nbytes // (16 * L))


def ours(task, params, seconds):
    """longsynth.batch filling one buffer of at most 64 MB (as gen fills its blocks) again and
    again, samples start, start + n, ...: made and touched before the timing."""
    t = longsynth.registry.get(task)
    per = sum(np.dtype(k.dtype).itemsize * int(np.prod(k.shape)) for k in t.keys(t.make_config(**params)).values())
    n = max(1, min(1 << 16, (64 << 20) // per))
    out = longsynth.batch(task, 0, n, **params)
    next_start = [n]

    def make(_):
        longsynth.batch(task, next_start[0], n, out=out, **params)
        next_start[0] += n

    return rate(make, n, seconds, cap=n)


def authors(task, params, seconds):
    return rate(lambda n: longsynth.authors_stream(task, n, seed=1, **params), 1, seconds,
                cap=rows_in(256 << 20, task, params))


def row(results, task, setting, theirs, ours_rate, authors_rate, note=""):
    r = {"task": task, "setting": setting, "theirs_per_s": theirs, "ours_per_s": ours_rate,
         "authors_stream_per_s": authors_rate, "ours_over_theirs": ours_rate / theirs,
         "authors_over_theirs": authors_rate / theirs}
    if note:
        r["theirs_is"] = note
    results["rows"].append(r)
    print(f"{task:19s} {setting:14s} theirs {theirs:10,.1f}/s  ours {ours_rate:12,.0f}/s ({ours_rate / theirs:7.0f}x)"
          f"  authors_stream {authors_rate:10,.1f}/s ({authors_rate / theirs:5.2f}x) {note}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoology", required=True)
    ap.add_argument("--safari", required=True)
    ap.add_argument("--s4", required=True)
    ap.add_argument("--seconds", type=float, default=2.0, help="least time per measurement")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "field_recall.json"))
    args = ap.parse_args()
    import torch

    numba.set_num_threads(1)
    torch.set_num_threads(1)
    results = {"machine": machine(torch=torch.__version__, numba_threads=numba.get_num_threads(),
                                  command=" ".join(sys.argv)), "rows": []}
    s = args.seconds

    multiquery_ar = zoology(args.zoology)
    for L, kv in MQAR:
        p = {"input_seq_len": L, "num_kv_pairs": kv}
        theirs = rate(lambda n: multiquery_ar(vocab_size=8192, num_examples=n, input_seq_len=L, seed=1,
                                              num_kv_pairs=kv, random_non_queries=False), 64, s,
                      cap=rows_in(256 << 20, "mqar", p))
        row(results, "mqar", f"L{L}-kv{kv}", theirs, ours("mqar", p, s), authors("mqar", p, s))

    syn = safari(args.safari)
    special = {"copy_prefix": "=>", "noop": "."}
    for task, settings in (("associative-recall", RECALL), ("induction-head", INDUCTION)):
        t = longsynth.registry.get(task)
        for name, p in settings:
            cfg = t.make_config(**p)
            vocab = syn.Vocab(cfg.vocab_size - 2, special_vocabs=special)
            tok, rng = syn.Tokenizer(vocab), np.random.default_rng(1)
            if task == "associative-recall":
                def one():
                    text = syn.generate_assoc_recall(vocab, cfg.input_seq_len, cfg.num_keys, rng,
                                                     allow_dot=cfg.allow_dot)
                    return tok.tokenize(text, return_tensor=True)
            else:
                def one():
                    text = syn.generate_induction_head(vocab, cfg.input_seq_len, "=>", cfg.induction_len,
                                                       cfg.induction_num_triggers, rng)
                    return tok.tokenize(text, return_tensor=True)
            theirs = rate(lambda n: [one() for _ in range(n)], 1, s)
            row(results, task, name, theirs, ours(task, p, s), authors(task, p, s))

    copying = s4_copying(args.s4)
    t = longsynth.registry.get("selective-copying")
    for name, p in COPYING:
        cfg = t.make_config(**p)
        train = copying.CopyingTrainDataset(cfg.L, cfg.M, cfg.A, samples=1 << 30, variable=True)
        cap = rows_in(256 << 20, "selective-copying", p)
        per_item = rate(lambda n: [train[i] for i in range(n)], 16, s, cap=cap)
        batch = rate(lambda n: copying.torch_copying_data(cfg.L, cfg.M, cfg.A, variable=True, batch_shape=(n,)), 16, s,
                     cap=cap)
        ours_rate, authors_rate = ours("selective-copying", p, s), authors("selective-copying", p, s)
        row(results, "selective-copying", name, per_item, ours_rate, authors_rate, "S4 item by item (train)")
        row(results, "selective-copying", name, batch, ours_rate, authors_rate, "S4 one batch (eval)")

    finish(results["machine"])
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
