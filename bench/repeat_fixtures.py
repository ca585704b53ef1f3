"""Remake tests/data/repeat_authors.npz by running the authors' own data code.

    python bench/repeat_fixtures.py CHECKOUT [OUT]

CHECKOUT is a checkout of sjelassi/transformers_ssm_copy (1188c47); its
``synthetic_exps/data_utils.py`` is imported unchanged (it needs torch). For each case the script
seeds ``np.random.seed(s); random.seed(s)``, builds their ``CopyDataset`` (train) or
``EvalCopyDataset`` (test) with the case's parameters, and stores the batches it returns
(``input_ids`` and ``mask``, int64 [rows, context_len]), batch after batch. A case whose code
raises stores the rows made before it and the row that raised (``fails_at``; -1 when none did).
Nothing of theirs is copied: the script imports their module from the checkout.
docs/tasks/repeat.md, "Their rows", says how the tests read it.
"""
import json
import random
import sys
import types
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "repeat_authors.npz"
TASK = {"copy": "copy", "prefix": "prefix_ngram", "suffix": "suffix_ngram", "duplicate": "duplicate_ngram"}
_DEFAULT = dict(vocab_size=26, n_gram=3, length_answer=0, context_len=220, min_len=5, max_len=20)
# name: (task, split, parameters over _DEFAULT, seed, batches, batch size)
CASES = {
    "copy_train": ("copy", "train", {}, 0, 3, 8),
    "copy_test": ("copy", "test", dict(min_len=10), 1, 3, 8),
    "copy_answer": ("copy", "train", dict(vocab_size=7, length_answer=4, context_len=100, min_len=8, max_len=12), 5,
                    4, 5),  # their check adds n_gram to length_answer even for copy: min_len must pass 7
    "prefix_train": ("prefix", "train", dict(min_len=7), 2, 3, 8),
    "prefix_test": ("prefix", "test", dict(n_gram=2, min_len=10), 3, 3, 8),
    "prefix_small": ("prefix", "train", dict(vocab_size=3, n_gram=2, length_answer=2, context_len=64, min_len=7,
                                             max_len=14), 11, 4, 4),
    "suffix_train": ("suffix", "train", dict(length_answer=3, min_len=9), 4, 3, 8),
    "suffix_long": ("suffix", "test", dict(vocab_size=5, n_gram=4, context_len=1100, min_len=300, max_len=500), 7, 2,
                    8),
    "duplicate_test": ("duplicate", "test", dict(min_len=10), 6, 3, 8),
    "duplicate_pool": ("duplicate", "test", dict(vocab_size=3, n_gram=2, context_len=60, min_len=7, max_len=12), 8, 3,
                       8),
    "duplicate_set": ("duplicate", "test", dict(n_gram=2, context_len=130, min_len=40, max_len=60), 9, 2, 8),
    "prefix_defaults_fail": ("prefix", "train", {}, 12, 8, 8),  # n = 5 leaves one window: randint(0, 0)
    "suffix_no_unique": ("suffix", "test", dict(vocab_size=2, n_gram=1, min_len=20), 13, 4, 8),
}


def run(module, task, split, params, seed, batches, batch_size):
    p = {**_DEFAULT, **params}
    tokenizer, to_token, _ = module.get_tokenizer(types.SimpleNamespace(vocab_size=p["vocab_size"]))
    common = dict(vocab_size=p["vocab_size"], n_gram=p["n_gram"], length_answer=p["length_answer"],
                  sequence_length=p["context_len"], min_length=p["min_len"], max_length=p["max_len"],
                  batch_size=batch_size)
    if split == "train":
        data = module.CopyDataset(tokenizer, train_task=TASK[task], **common)
    else:
        data = module.EvalCopyDataset(tokenizer, to_token, eval_task=TASK[task], **common)
    np.random.seed(seed)
    random.seed(seed)
    ids, masks, fails_at = [], [], -1
    for b in range(batches):
        try:
            batch = data[b]
        except (ValueError, NameError):
            # a batch draws its rows one after another: the rows before the one that raised are lost with it, so
            # the row is found by rerunning the stream row by row
            fails_at = _failing_row(module, data, seed, b, batch_size)
            break
        ids.append(batch["input_ids"].numpy().astype(np.int64))
        masks.append(batch["mask"].numpy().astype(np.int64))
    C = p["context_len"]
    ids = np.concatenate(ids) if ids else np.zeros((0, C), np.int64)
    masks = np.concatenate(masks) if masks else np.zeros((0, C), np.int64)
    return ids, masks, fails_at, p


def _failing_row(module, data, seed, batch, batch_size):
    """The stream's row that raised: a dataset of batch size 1 reseeded, row after row."""
    data.batch_size = 1
    np.random.seed(seed)
    random.seed(seed)
    for r in range((batch + 1) * batch_size):
        try:
            data[r]
        except (ValueError, NameError):
            return r
    raise AssertionError("the failure did not recur row by row")


def main():
    checkout = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    sys.path.insert(0, str(checkout / "synthetic_exps"))
    import data_utils

    arrays, meta = {}, {}
    for name, (task, split, params, seed, batches, batch_size) in CASES.items():
        ids, masks, fails_at, p = run(data_utils, task, split, params, seed, batches, batch_size)
        arrays[f"{name}/input_ids"], arrays[f"{name}/mask"] = ids, masks
        meta[name] = {"task": task, "split": split, "params": p, "seed": seed, "fails_at": fails_at}
        print(f"{name}: {ids.shape[0]} rows" + (f", fails at row {fails_at}" if fails_at >= 0 else ""))
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
