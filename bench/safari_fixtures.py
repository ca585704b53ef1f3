"""Remake tests/data/safari_synthetics.npz by running safari's own generators.

    python bench/safari_fixtures.py /path/to/safari    # a checkout of HazyResearch/safari @ 02220c69

safari's code is run, never copied: its checkout goes on sys.path and its
``src/dataloaders/synthetics.py`` is imported. That module imports the repository's
``src.dataloaders.base`` (torchvision, einops and more, for other datasets); a stand-in
module with an empty ``SequenceDataset`` is registered instead, and the packages ``src``
and ``src.dataloaders`` without their ``__init__`` (which imports every dataset). Needs numpy, torch, tqdm.

Per case ``c``: ``c/params`` and ``c/tokens`` (int16 [count, length]): ``count`` calls of
``generate_assoc_recall`` / ``generate_induction_head`` on one ``np.random.default_rng(seed)``,
tokenised with safari's ``Tokenizer``, exactly as its data module makes each example before
de-duplicating. tests/test_safari.py checks ``longsynth.authors_stream`` against them, and
our law against theirs in distribution on the cases of 2,000 rows.
"""
import argparse
import os

import numpy as np

from longsynth import crosscheck as _authors

RECALL = {  # name: (vocab_size, input_seq_len, num_keys, allow_dot, count, seed)
    "ar-h3": (10, 20, 1, False, 2000, 0),
    "ar-safari": (20, 40, 1, False, 2000, 1),
    "ar-keys2-dot": (12, 30, 2, True, 64, 5),
    "ar-long": (30, 1024, 1, False, 8, 2),
}
INDUCTION = {  # name: (vocab_size, input_seq_len, induction_len, induction_num_triggers, count, seed)
    "ih-h3": (20, 30, 1, 1, 2000, 0),
    "ih-mamba": (16, 256, 1, 1, 64, 3),
    "ih-len3-trig4": (13, 50, 3, 4, 2000, 9),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("safari", help="path of a safari checkout (HazyResearch/safari @ 02220c69)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                  "safari_synthetics.npz"))
    args = ap.parse_args()
    syn = _authors.safari(args.safari)

    special = {"copy_prefix": "=>", "noop": "."}
    arrays = {}
    for name, (V, L, nk, dot, count, seed) in RECALL.items():
        vocab = syn.Vocab(V - len(special), special_vocabs=special)
        tok, rng = syn.Tokenizer(vocab), np.random.default_rng(seed)
        rows = [tok.tokenize(syn.generate_assoc_recall(vocab, L, nk, rng, allow_dot=dot))["input_ids"]
                for _ in range(count)]
        arrays[f"{name}/params"] = np.array([V, L, nk, int(dot), count, seed], dtype=np.int64)
        arrays[f"{name}/tokens"] = np.array(rows, dtype=np.int16)
        print(f"{name}: {count} rows of {len(rows[0])}")
    for name, (V, L, ilen, trig, count, seed) in INDUCTION.items():
        vocab = syn.Vocab(V - len(special), special_vocabs=special)
        tok, rng = syn.Tokenizer(vocab), np.random.default_rng(seed)
        rows = [tok.tokenize(syn.generate_induction_head(vocab, L, "=>", ilen, trig, rng))["input_ids"]
                for _ in range(count)]
        arrays[f"{name}/params"] = np.array([V, L, ilen, trig, count, seed], dtype=np.int64)
        arrays[f"{name}/tokens"] = np.array(rows, dtype=np.int16)
        print(f"{name}: {count} rows of {len(rows[0])}")
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {os.path.abspath(args.out)} ({os.path.getsize(args.out):,} bytes)")


if __name__ == "__main__":
    main()
