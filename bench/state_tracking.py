"""Benchmark: word-problem, parity and modular-arithmetic against the authors' generators, one run.

    python bench/state_tracking.py WORD_PROBLEM UNLOCKING [--n N] [--json PATH]

WORD_PROBLEM and UNLOCKING are checkouts of jopetty/word-problem (8f910f92) and
automl/unlocking_state_tracking (df8f8407), as for bench/state_tracking_fixtures.py (same
dependencies). Theirs, single process:
- word problems: ``generate_data.main(group, k, samples=N)`` end to end (random.choices, the
  set, prefix products through abstract_algebra, the CSV written to a temporary folder);
- formal languages, two figures: their task function alone, one example per call with
  ``seed = base + i`` (what their OnlineTaskGenerate calls), and the item of their
  FormLangDataset (that call plus the masking and shift in torch), at the paper's settings
  (context 256; train lengths 3-40, test lengths 40-256).
Ours: the task's kernel with one Numba thread, after a warm-up call, for the same settings
and the same splits, in blocks of 8192 samples into reused buffers (as ``gen`` writes shards).
Rates are samples per CPU second of this process (the machine is shared);
``ratio`` is ours / theirs per core.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numba

from longsynth import registry
from longsynth.rng import split_code
from _common import finish, machine

WORD_PROBLEMS = [("A5", 16), ("S5", 16), ("A4_x_Z5", 16), ("Z60", 16), ("A5", 64)]
PAPER = {"context_length": 256, "min_sequence_length": 3, "max_sequence_length": 40}
PAPER_TEST = {"min_sequence_length": 40, "max_sequence_length": 256}
# name: (their synth_lang_type, their kwargs, our task, our params)
FORMAL = {
    "parity": ("parity", {"vocab_size": 3}, "parity", {}),
    "modular-arithmetic": ("modular_arithmetic", {"vocab_size": 10}, "modular-arithmetic", {}),
    "modular-arithmetic --brackets": ("modular_arithmetic_with_brackets", {"vocab_size": 12},
                                      "modular-arithmetic", {"brackets": True}),
}


def cpu_rate(fn, n):
    c0 = time.process_time()
    fn()
    return n / (time.process_time() - c0)


def ours(task, params, n, split="train", block=8192):
    """Blocks of ``block`` samples into one reused set of buffers, as the store's writer fills
    its shards (a fresh 100 MB array per call would time page faults, not the kernel)."""
    t = registry.get(task)
    cfg = t.make_config(**params)
    code = split_code(split)
    buffers = t.allocate(cfg, block)
    t.generate(cfg, 1, code, 0, 64, {}, buffers)  # compile / load the cache

    def run():
        for start in range(0, n, block):
            t.generate(cfg, 0, code, start, min(block, n - start), {}, buffers)
    return cpu_rate(run, n)


def their_word_problem(root, group, k, n):
    sys.path.insert(0, str(Path(root) / "src"))
    import generate_data

    with tempfile.TemporaryDirectory() as tmp:
        generate_data.main(group=group, k=k, samples=64, data_dir=Path(tmp), seed=1, overwrite=True)
        return cpu_rate(lambda: generate_data.main(group=group, k=k, samples=n, data_dir=Path(tmp), seed=0,
                                                   overwrite=True), n)


def their_formal(root, lang, kwargs, n, lengths):
    sys.path.insert(0, str(Path(root)))
    from xlstm.experiments.data.formal_language.formal_language_dataset import (
        FormLangDatasetConfig,
        FormLangDatasetGenerator,
    )
    from xlstm.experiments.data.formal_language.generate import GEN_FUNCS

    fn = GEN_FUNCS[lang]
    call_kwargs = dict(kwargs, context_length=PAPER["context_length"], **lengths)
    raw = cpu_rate(lambda: [fn(seed=1000 + i, **call_kwargs) for i in range(n)], n)
    cfg = FormLangDatasetConfig(synth_lang_type=lang, seed=42, enable_mask=True, count={"train": n, "validation": 1,
                                "test": 1}, **call_kwargs)
    train = FormLangDatasetGenerator(cfg).train_split
    item = cpu_rate(lambda: [train[i] for i in range(n)], n)
    return raw, item


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("word_problem")
    ap.add_argument("unlocking")
    ap.add_argument("--n", type=int, default=20000, help="samples per measurement of theirs (ours: 50x)")
    ap.add_argument("--json", default="bench/results/state_tracking.json")
    args = ap.parse_args()
    numba.set_num_threads(1)
    results = {"machine": machine(numba_threads=1), "n_theirs": args.n, "n_ours": 50 * args.n, "rows": []}
    for group, k in WORD_PROBLEMS:
        theirs = their_word_problem(args.word_problem, group, k, args.n)
        mine = ours("word-problem", {"group": group, "k": k}, 50 * args.n)
        row = {"task": "word-problem", "setting": f"{group} k={k}", "theirs_per_cpu_s": theirs,
               "ours_per_cpu_s": mine, "ratio": mine / theirs}
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
    for name, (lang, kwargs, task, params) in FORMAL.items():
        for split, lengths in (("train", {k: PAPER[k] for k in ("min_sequence_length", "max_sequence_length")}),
                               ("test", PAPER_TEST)):
            raw, item = their_formal(args.unlocking, lang, kwargs, args.n, lengths)
            mine = ours(task, params, 50 * args.n, split)
            row = {"task": name, "setting": f"{split} lengths {lengths['min_sequence_length']}-"
                   f"{lengths['max_sequence_length']}, context 256", "theirs_per_cpu_s": raw,
                   "theirs_loader_item_per_cpu_s": item, "ours_per_cpu_s": mine, "ratio": mine / raw,
                   "ratio_vs_loader_item": mine / item}
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
    finish(results["machine"])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
