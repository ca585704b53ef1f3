"""Remake tests/data/mad_authors.npz by running MAD's own generators (athms/mad-lab @ 0f49a452).

    git clone https://github.com/athms/mad-lab /tmp/mad-lab && git -C /tmp/mad-lab checkout 0f49a452
    python bench/mad_fixtures.py --mad /tmp/mad-lab

Two kinds of case, each stored with its parameters (JSON, key ``cases``):
  "stream"   [generate_<task>_instance(rng=rng, is_training=(split == "train"), **params) for _ in
             range(count)] with rng = np.random.default_rng(seed) after np.random.seed(seed), per split
             (what longsynth's authors stream must equal);
  "dataset"  MAD's mad.data.generate_data with the keyword arguments MADConfig.instance_fn_kwargs builds
             (one rng for the training and then the test set; memorization's map from the same seed),
             after np.random.seed(seed) as its train.py does.
MAD's instances.py needs only NumPy; generate_data imports torch, pandas and tqdm. Nothing of MAD's
code is kept: only the arrays it made.
"""
import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from longsynth.crosscheck import MAD_FUNCTIONS as FUNCTIONS


# (task, MAD's keyword arguments: our config's fields, seed, count per split)
STREAM_CASES = [
    ("mad-recall", dict(vocab_size=16, seq_len=128, multi_query=True, noise_vocab_size=0, frac_noise=0.0), 12345, 6),
    ("mad-recall", dict(vocab_size=16, seq_len=64, multi_query=False, noise_vocab_size=0, frac_noise=0.0), 7, 6),
    ("mad-recall", dict(vocab_size=32, seq_len=64, multi_query=True, noise_vocab_size=16, frac_noise=0.6), 3, 6),
    ("mad-noisy-recall", dict(vocab_size=32, seq_len=128, multi_query=True, noise_vocab_size=16, frac_noise=0.2),
     12345, 6),
    ("mad-noisy-recall", dict(vocab_size=48, seq_len=64, multi_query=False, noise_vocab_size=16, frac_noise=0.4),
     11, 6),
    ("mad-fuzzy-recall", dict(vocab_size=16, seq_len=128, multi_query=True, k_motif_size=3, v_motif_size=3,
                              noise_vocab_size=0, frac_noise=0.0), 12345, 4),
    ("mad-fuzzy-recall", dict(vocab_size=32, seq_len=64, multi_query=True, k_motif_size=2, v_motif_size=3,
                              noise_vocab_size=0, frac_noise=0.0), 5, 4),
    ("mad-fuzzy-recall", dict(vocab_size=16, seq_len=48, multi_query=False, k_motif_size=3, v_motif_size=2,
                              noise_vocab_size=0, frac_noise=0.0), 9, 4),
    ("mad-fuzzy-recall", dict(vocab_size=24, seq_len=64, multi_query=True, k_motif_size=2, v_motif_size=2,
                              noise_vocab_size=4, frac_noise=0.3), 13, 4),
    ("mad-selective-copying", dict(vocab_size=16, seq_len=256, num_tokens_to_copy=16), 12345, 6),
    ("mad-selective-copying", dict(vocab_size=32, seq_len=40, num_tokens_to_copy=8), 2, 6),
    ("mad-compression", dict(vocab_size=16, seq_len=32, noise_vocab_size=0, frac_noise=0.0), 12345, 6),
    ("mad-compression", dict(vocab_size=24, seq_len=32, noise_vocab_size=4, frac_noise=0.3), 4, 6),
    ("mad-memorization", dict(vocab_size=256, seq_len=32, noise_vocab_size=0, frac_noise=0.0, kv_map_seed=12345),
     12345, 6),
    ("mad-memorization", dict(vocab_size=64, seq_len=16, noise_vocab_size=8, frac_noise=0.3, kv_map_seed=8), 6, 6),
]

# (task, MADConfig fields of the baseline, seed, num_train_examples, num_test_examples)
DATASET_CASES = [
    ("mad-recall", dict(vocab_size=16, seq_len=128, multi_query=True), 12345, 5, 4),
    ("mad-fuzzy-recall", dict(vocab_size=16, seq_len=128, multi_query=True, k_motif_size=3, v_motif_size=3),
     12345, 3, 3),
    ("mad-selective-copying", dict(vocab_size=16, seq_len=256, num_tokens_to_copy=16), 12345, 4, 3),
    ("mad-memorization", dict(vocab_size=256, seq_len=32), 12345, 4, 3),
    # MADConfig draws the map over vocab_size - 1 tokens, noise tokens included
    ("mad-memorization", dict(vocab_size=64, seq_len=16, noise_vocab_size=8, frac_noise=0.3), 6, 4, 3),
    ("mad-noisy-recall", dict(vocab_size=32, seq_len=64, noise_vocab_size=16, frac_noise=0.2), 11, 5, 4),
]


def load(mad, relpath, name):
    spec = importlib.util.spec_from_file_location(name, Path(mad) / relpath)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def stream_case(instances, task, params, seed, count):
    fn = getattr(instances, FUNCTIONS[task])
    out = {}
    for split in ("train", "test"):
        rng = np.random.default_rng(seed)
        np.random.seed(seed)
        pairs = [fn(rng=rng, is_training=(split == "train"), **params) for _ in range(count)]
        out[split] = (np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))
    return out


def dataset_case(instances, generate_data, task, fields, *, seed, n_train, n_test):
    """MADConfig.instance_fn_kwargs for these fields (MADConfig's defaults elsewhere), then generate_data."""
    kw = dict(vocab_size=16, seq_len=128, k_motif_size=1, v_motif_size=1, frac_noise=0.0, noise_vocab_size=0,
              num_tokens_to_copy=0, multi_query=True)
    kw.update(fields)
    kw["rng"] = np.random.default_rng(seed)
    kw["kv_map"] = (instances.generate_kv_map(vocab_size=kw["vocab_size"] - 1, k_motif_size=1, v_motif_size=1,
                                              seed=seed) if task == "mad-memorization" else None)
    np.random.seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        data = generate_data(instance_fn=getattr(instances, FUNCTIONS[task]), instance_fn_kwargs=kw,
                             train_data_path=f"{tmp}/train", test_data_path=f"{tmp}/test",
                             num_train_examples=n_train, num_test_examples=n_test, num_workers=0, verbose=False)
    return {s: (np.asarray(data[s].inputs), np.asarray(data[s].targets)) for s in ("train", "test")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mad", required=True, help="path of a checkout of athms/mad-lab at 0f49a452")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/data/mad_authors.npz"))
    args = ap.parse_args()
    instances = load(args.mad, "mad/data/instances.py", "mad_instances")
    generate_data = load(args.mad, "mad/data/dataset.py", "mad_dataset").generate_data
    arrays, cases = {}, []
    for i, (task, params, seed, count) in enumerate(STREAM_CASES):
        for split, (x, y) in stream_case(instances, task, params, seed, count).items():
            arrays[f"{i}/{split}/inputs"], arrays[f"{i}/{split}/targets"] = x.astype(np.int16), y.astype(np.int16)
        cases.append(dict(kind="stream", task=task, params=params, seed=seed, count=count))
    for j, (task, fields, seed, n_train, n_test) in enumerate(DATASET_CASES, start=len(cases)):
        for split, (x, y) in dataset_case(instances, generate_data, task, fields, seed=seed, n_train=n_train,
                                                 n_test=n_test).items():
            arrays[f"{j}/{split}/inputs"], arrays[f"{j}/{split}/targets"] = x.astype(np.int16), y.astype(np.int16)
        cases.append(dict(kind="dataset", task=task, params=fields, seed=seed, num_train_examples=n_train,
                          num_test_examples=n_test))
    arrays["cases"] = np.array(json.dumps(cases))
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {args.out}: {len(cases)} cases, {Path(args.out).stat().st_size} bytes")


if __name__ == "__main__":
    main()
