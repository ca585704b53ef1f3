"""Remake tests/data/mqar_zoology.npz by running zoology's own ``multiquery_ar``.

    python bench/mqar_fixtures.py /path/to/zoology    # a checkout of HazyResearch/zoology @ d88d6f54

zoology's code is run, never copied: its checkout is put on sys.path. Its package imports
``wandb`` (for logging, unused by the generator); a stand-in empty module is registered
when wandb is not installed. Needs numpy, torch and pydantic.

The file holds, per case ``c`` of CASES: ``c/params`` (vocab_size, input_seq_len,
num_kv_pairs, num_passes, count, seed; power_a is 0.01), ``c/inputs`` and ``c/labels``
(int16), for tests/test_mqar.py: ``longsynth.authors_stream`` must equal them exactly
(CASES with count >= 2,000 also feed the statistics test of the default law); and
``pipeline/...``: the segments of zoology's own ``prepare_data`` (PIPELINE), which
``zoology_segment_seeds`` must seed.
"""
import argparse
import os

import numpy as np

from longsynth import crosscheck as _authors

CASES = {  # name: (vocab_size, input_seq_len, num_kv_pairs, num_passes, count, seed)
    "tiny": (20, 16, 2, 1, 16, 0),
    "fig2-64": (8192, 64, 4, 1, 2000, 0),
    "fig2-128-seed10": (8192, 128, 8, 1, 64, 10),
    "fig2-512": (8192, 512, 64, 1, 24, 3),
    "v1000": (1000, 96, 8, 1, 32, 7),
    "odd-vocab": (301, 80, 10, 1, 40, 123),
    "stats-256": (8192, 256, 16, 1, 2000, 1),
}


# zoology's prepare_data over a DataConfig of these segments (random_non_queries off, as
# mqar_configs_random_false.py): (vocab_size, input_seq_len, num_kv_pairs, count) each, seed 123
PIPELINE = {"train": [(64, 32, 2, 20), (128, 64, 4, 12)], "test": [(64, 32, 2, 8), (64, 32, 4, 8), (128, 64, 8, 6)]}


def pipeline(zoology, arrays):
    """``pipeline/{split}/{j}/inputs|labels|params``: segment j of zoology's own prepare_data."""
    _authors.zoology(zoology)
    from zoology.config import DataConfig
    from zoology.data.multiquery_ar import MQARConfig
    from zoology.data.utils import prepare_data

    configs = {split: [MQARConfig(vocab_size=V, input_seq_len=L, num_kv_pairs=kv, num_examples=n,
                                  random_non_queries=False) for V, L, kv, n in segs]
               for split, segs in PIPELINE.items()}
    loaders = prepare_data(DataConfig(train_configs=configs["train"], test_configs=configs["test"], batch_size=4))
    for split, loader in zip(("train", "test"), loaders):
        for j, seg in enumerate(loader.dataset.segments):
            arrays[f"pipeline/{split}/{j}/params"] = np.array(PIPELINE[split][j], dtype=np.int64)
            arrays[f"pipeline/{split}/{j}/inputs"] = seg.inputs.numpy().astype(np.int16)
            arrays[f"pipeline/{split}/{j}/labels"] = seg.labels.numpy().astype(np.int16)
    print(f"pipeline: {len(PIPELINE['train'])} train and {len(PIPELINE['test'])} test segments (DataConfig seed 123)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("zoology", help="path of a zoology checkout (HazyResearch/zoology @ d88d6f54)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                  "mqar_zoology.npz"))
    args = ap.parse_args()
    multiquery_ar = _authors.zoology(args.zoology)

    arrays = {}
    for name, (V, L, kv, passes, count, seed) in CASES.items():
        seg = multiquery_ar(vocab_size=V, num_examples=count, input_seq_len=L, seed=seed, power_a=0.01,
                            num_kv_pairs=kv, num_passes=passes, random_non_queries=False)
        arrays[f"{name}/params"] = np.array([V, L, kv, passes, count, seed], dtype=np.int64)
        arrays[f"{name}/inputs"] = seg.inputs.numpy().astype(np.int16)
        arrays[f"{name}/labels"] = seg.labels.numpy().astype(np.int16)
        print(f"{name}: {count} rows of {L}")
    pipeline(args.zoology, arrays)
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {os.path.abspath(args.out)} ({os.path.getsize(args.out):,} bytes)")


if __name__ == "__main__":
    main()
