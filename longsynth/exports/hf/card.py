"""The dataset card (README.md) of an hf export: the YAML that ``datasets`` and the Hub read,
then the task's definition, parameters, splits and citations."""
from __future__ import annotations

import datasets
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from longsynth._version import __version__
from longsynth.escape import markdown, visible
from longsynth.exports.hf.arrow import LENGTH
from longsynth.exports.hf.layout import MARK, SPLIT_NAMES
from longsynth.store.manifest import law_text

LICENSE = "mit"  # the license longsynth is released under; the samples are its output

_DLR = """@article{gupta2022dlr,
  title   = {Simplifying and Understanding State Space Models with Diagonal Linear {RNN}s},
  author  = {Gupta, Ankit and Mehta, Harsh and Berant, Jonathan},
  journal = {arXiv preprint arXiv:2212.00768},
  year    = {2022}
}"""
_LRA = """@inproceedings{tay2021lra,
  title     = {Long Range Arena: A Benchmark for Efficient Transformers},
  author    = {Tay, Yi and Dehghani, Mostafa and Abnar, Samira and Shen, Yikang and Bahri, Dara and Pham, Philip
               and Rao, Jinfeng and Yang, Liu and Ruder, Sebastian and Metzler, Donald},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2021}
}"""
_PATHFINDER = """@inproceedings{linsley2018pathfinder,
  title     = {Learning long-range spatial dependencies with horizontal gated recurrent units},
  author    = {Linsley, Drew and Kim, Junkyung and Veerabadran, Vijay and Windolf, Charles and Serre, Thomas},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  year      = {2018}
}"""


def citations(task):
    """BibTeX of the papers that define the task: the DLR paper for its 13 tasks, LRA for
    classic ListOps, and Linsley et al. for the Pathfinder images; a task that names its
    own paper (``Task.citation``: the token tasks) that one."""
    if task.citation:
        return [task.citation]
    if task.name == "listops":
        return [_LRA]
    if task.family == "pathfinder":
        return [_DLR, _PATHFINDER]
    return [_DLR]


def _task_category(task, specs):
    if task.family == "pathfinder":
        return ["image-segmentation"]
    if task.family == "listops":
        return ["token-classification"] if specs["targets"].ragged else ["text-classification"]
    if task.family == "tokens":
        return ["text-generation"]
    return []


def _size_category(n):
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                         (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")):
        if n < limit:
            return label
    return "100M<n<1B"


def _feature_text(feat):
    if isinstance(feat, datasets.Image):
        return "Image (PNG, 8-bit gray)"
    return repr(feat)


def _shape_text(spec):
    dims = (["n"] if spec.ragged else []) + [str(d) for d in spec.shape]
    return f"[{', '.join(dims)}]" if dims else "scalar"


def dataset_card(dataset, feats, files, nbytes, sizes, preview, lengths=None):
    """README.md: the YAML that ``datasets`` and the Hub read, then the definition.
    ``lengths``: {longsynth split: (shortest, longest)} of the LENGTH column, where it has one."""
    task, m = dataset.task, dataset.manifest
    specs = task.keys(dataset.config)
    counts = {SPLIT_NAMES[s]: len(sp) for s, sp in dataset.splits.items() if len(sp)}
    split_bytes = {name: sum(nbytes[f.rel] for f in files if SPLIT_NAMES[f.split] == name) for name in counts}
    split_files = {name: [f.rel for f in files if SPLIT_NAMES[f.split] == name] for name in counts}
    data = DatasetCardData(
        license=LICENSE,
        pretty_name=f"longsynth {task.name}",
        size_categories=[_size_category(sum(counts.values()))],
        task_categories=_task_category(task, specs) or None,
        tags=["synthetic", "long-range", "longsynth", task.name],
    )
    splits = datasets.SplitDict()
    for name, n in counts.items():
        splits.add(datasets.SplitInfo(name=name, num_bytes=split_bytes[name], num_examples=n))
    info = datasets.DatasetInfo(features=feats, splits=splits, download_size=sum(sizes.values()),
                                dataset_size=sum(split_bytes.values()))
    DatasetInfosDict({"default": info}).to_dataset_card_data(data)
    MetadataConfigs(
        {"default": {"data_files": [{"split": name, "path": f"data/{name}-*.parquet"} for name in split_files]}}
    ).to_dataset_card_data(data)

    v = m["versions"]
    keys = "\n".join(f"| `{k}` | {_feature_text(feats[k])} | {spec.dtype} | {_shape_text(spec)} | {spec.doc} |"
                     for k, spec in specs.items())
    derived = LENGTH in feats and LENGTH not in specs
    if derived:
        keys += (f"\n| `{LENGTH}` | {_feature_text(feats[LENGTH])} | (derived) | scalar | the row's length, "
                 f"{markdown(task.row_length_definition or 'n')}; computed from `targets` as `longsynth info` counts "
                 f"it (-1: a row without a scored target), not stored, so no part of the digest |")
    lengths = lengths or {}
    length_head = " lengths |\n|---|---|---|---|---|---|" if derived else "\n|---|---|---|---|---|"
    length_note = (f" (the stored columns: `{LENGTH}` is derived). Lengths: the shortest and longest `{LENGTH}` "
                   "of the split; a test split longer than train's measures lengths never trained on." if derived
                   else ".")
    params = "\n".join(f"| `{k}` | {markdown(val)} |" for k, val in m["params"].items())
    split_rows = "\n".join(
        f"| {SPLIT_NAMES[s]} | {s} | {len(sp):,} | {len(split_files[SPLIT_NAMES[s]])} | `{m['splits'][s]['digest']}` |"
        + (f" {'-'.join(map(str, lengths[s])) if s in lengths else ''} |" if derived else "")
        for s, sp in dataset.splits.items() if len(sp))
    empty = [s for s, sp in dataset.splits.items() if not len(sp)]
    if empty:
        split_rows += f"\n\n{', '.join(empty)}: no samples, left out (`datasets` loads no empty split)."
    vocab = ""
    own = list(task.vocab(dataset.config)) if task.vocab is not None else None  # never the manifest's copy
    if own:
        vocab = ("\n## Vocabulary\n\nToken id -> token: "
                 + ", ".join(f"{i} `{t}`" for i, t in enumerate(own)) + ".\n")
    fixed = ""
    if m.get("fixed"):
        fixed = (f"\nDataset-level draws shared by every sample ({', '.join(markdown(k) for k in m['fixed'])}) are in "
                 f"`{MARK}` under `dataset.fixed`.\n")
    picture = "\n![the first samples](preview.png)\n" if preview else ""
    cite = "\n\n".join(citations(task))
    body = f"""
# longsynth {task.name}

{task.summary}.

{task.card}
{picture}
Generated by longsynth {markdown(v['longsynth'])} (task revision {markdown(m.get('task_revision', 1))}) with

    {visible(m['command'] or f"longsynth.store.generate({task.name!r}, ...)")}

{'' if m.get('stream') == 'imported' else f"Seed {markdown(m['seed'])}. "}{law_text(m)}
Exported with longsynth
{__version__} (`longsynth export DIR --format hf`).

## Loading

```python
from datasets import load_dataset
ds = load_dataset("PATH_OR_REPO")                  # DatasetDict: {', '.join(split_files)}
ds = ds.with_format("numpy")                       # arrays with their stored dtypes and shapes
stream = load_dataset("PATH_OR_REPO", split="train", streaming=True)
```

Row i of a split is sample i of that split (longsynth's `val` is `validation`).

## Features

| column | feature | stored dtype | shape | meaning |
|---|---|---|---|---|
{keys}
{vocab}
## Parameters

| parameter | value |
|---|---|
{params}
{fixed}
## Splits

The digest is longsynth's: SHA-256 over the SHA-256 of every sample in index order (keys
sorted, each as `key|dtype|shape|` and its bytes; `longsynth.store.sample_digest`), so it
can be recomputed from these rows{length_note}

| split | longsynth split | samples | files | digest |{length_head}
{split_rows}

Versions that generated the samples: longsynth {markdown(v['longsynth'])}, Python {markdown(v['python'])}, NumPy
{markdown(v['numpy'])}, Numba {markdown(v['numba'])}, h5py {markdown(v['h5py'])}, HDF5 {markdown(v['hdf5'])}.

## Citation

```bibtex
{cite}
```

## License

{LICENSE.upper()}, as longsynth, which generated the data.
"""
    return str(DatasetCard("---\n" + data.to_yaml() + "\n---\n" + body))
