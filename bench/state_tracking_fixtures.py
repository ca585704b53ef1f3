"""Remake tests/data/state_tracking_authors.npz by running the authors' own generators.

    python bench/state_tracking_fixtures.py WORD_PROBLEM UNLOCKING [OUT]

WORD_PROBLEM is a checkout of jopetty/word-problem (8f910f92; its ``src/generate_data.py`` is
run unchanged through its ``main``, which needs polars, fire, pyrootutils and
jopetty/abstract_algebra 94226a08 installed); UNLOCKING a checkout of
automl/unlocking_state_tracking (df8f8407; ``xlstm/experiments/data/formal_language``'s
``FormLangDatasetGenerator`` with the paper's yaml settings, which needs torch and
torchmetrics). Nothing of theirs is copied: the script imports their modules from the
checkouts and stores what they return. docs/tasks/state-tracking.md, "Fixtures", says how.

Stored arrays (all int64): ``wp/<case>/input`` and ``wp/<case>/target`` [count, k], the CSV
columns; ``fl/<case>/<split>/inputs`` and ``.../targets`` [count, context_length - 1], their
loader's (input, target) pairs with their ignore index -1 as it is. The cases are listed in
WORD_PROBLEM_CASES and FORMAL_CASES (the test reads the parameters from the same names
stored in the file's ``meta`` JSON).
"""
import csv
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "state_tracking_authors.npz"

# name: (their group string, k, samples, seed)
WORD_PROBLEM_CASES = {
    "S3_k3": ("S3", 3, 150, 7),  # 216 distinct sequences: the set's de-duplication is busy
    "A5_k6": ("A5", 6, 200, 0),
    "S5_k5": ("S5", 5, 120, 11),
    "A4xZ5_k5": ("A4_x_Z5", 5, 100, 3),
    "Z60_k4": ("Z60", 4, 100, 5),
    "S3xZ2_k8": ("S3_x_Z2", 8, 50, 1),
}

_SHORT = {"context_length": 64, "min_sequence_length": 3, "max_sequence_length": 20,
          "test_min_sequence_length": 20, "test_max_sequence_length": 64}
_PAPER = {"context_length": 256, "min_sequence_length": 3, "max_sequence_length": 40,
          "test_min_sequence_length": 40, "test_max_sequence_length": 256}
# name: (their synth_lang_type, our task, our parameters, count per split, seed)
FORMAL_CASES = {
    "parity_paper": ("parity", "parity", {"vocab_size": 3, **_PAPER}, 40, 42),
    "parity_v5": ("parity", "parity", {"vocab_size": 5, **_SHORT}, 30, 7),
    "modular_paper": ("modular_arithmetic", "modular-arithmetic", {"vocab_size": 10, **_PAPER}, 40, 42),
    "modular_v8": ("modular_arithmetic", "modular-arithmetic", {"vocab_size": 8, **_SHORT}, 30, 3),
    "brackets_paper": ("modular_arithmetic_with_brackets", "modular-arithmetic",
                       {"vocab_size": 12, "brackets": True, **_PAPER}, 40, 42),
    "brackets_mult": ("modular_arithmetic_with_brackets", "modular-arithmetic",
                      {"vocab_size": 15, "brackets": True, "mult": True, **_SHORT}, 30, 9),
}
SPLITS = {"train": "train", "val": "validation", "test": "test"}  # ours: theirs


def word_problems(root, arrays, meta):
    sys.path.insert(0, str(Path(root) / "src"))
    import generate_data

    with tempfile.TemporaryDirectory() as tmp:
        for name, (group, k, samples, seed) in WORD_PROBLEM_CASES.items():
            generate_data.main(group=group, k=k, samples=samples, data_dir=Path(tmp), seed=seed, overwrite=True)
            with open(Path(tmp) / f"{group}={k}.csv") as f:
                rows = list(csv.DictReader(f))
            arrays[f"wp/{name}/input"] = np.array([r["input"].split() for r in rows], dtype=np.int64)
            arrays[f"wp/{name}/target"] = np.array([r["target"].split() for r in rows], dtype=np.int64)
            meta["wp"][name] = {"group": group, "k": k, "count": samples, "seed": seed}


def formal_languages(root, arrays, meta):
    sys.path.insert(0, str(Path(root)))
    from xlstm.experiments.data.formal_language.formal_language_dataset import (
        FormLangDatasetConfig,
        FormLangDatasetGenerator,
    )

    for name, (lang, task, params, count, seed) in FORMAL_CASES.items():
        test = {"min_sequence_length": params["test_min_sequence_length"],
                "max_sequence_length": params["test_max_sequence_length"]}
        kwargs = {"synth_lang_type": lang, "vocab_size": params["vocab_size"], "seed": seed, "enable_mask": True,
                  "context_length": params["context_length"], "min_sequence_length": params["min_sequence_length"],
                  "max_sequence_length": params["max_sequence_length"],
                  "count": {"train": count, "validation": count, "test": count},
                  "subpar": {"validation": dict(test), "test": dict(test)}}
        if params.get("mult"):
            kwargs["mult"] = True
        gen = FormLangDatasetGenerator(FormLangDatasetConfig(**kwargs))
        parts = {"train": gen.train_split, "validation": gen.validation_split["validation"],
                 "test": gen.test_split["test"]}
        for ours, theirs in SPLITS.items():
            pairs = [parts[theirs][i] for i in range(count)]
            arrays[f"fl/{name}/{ours}/inputs"] = np.stack([p[0].numpy() for p in pairs]).astype(np.int64)
            arrays[f"fl/{name}/{ours}/targets"] = np.stack([p[1].numpy() for p in pairs]).astype(np.int64)
        meta["fl"][name] = {"task": task, "params": params, "count": count, "seed": seed}


def main(word_problem_root, unlocking_root, out=OUT):
    arrays, meta = {}, {"wp": {}, "fl": {},
                        "sources": {"word-problem": "jopetty/word-problem@8f910f92 src/generate_data.py",
                                    "formal-language": "automl/unlocking_state_tracking@df8f8407 "
                                    "xlstm/experiments/data/formal_language"}}
    word_problems(word_problem_root, arrays, meta)
    formal_languages(unlocking_root, arrays, meta)
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}: {len(arrays) - 1} arrays, {Path(out).stat().st_size} bytes")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
