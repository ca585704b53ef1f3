"""PyTorch data layer: stored shards, on-the-fly streams, and the paper's input encodings.

This is the only longsynth package that imports torch (``import longsynth`` never does).

    from longsynth.torch import ShardDataset, OnTheFlyDataset, pad_collate, seeded_sampler

* :class:`ShardDataset` - map-style dataset over one split of a stored dataset directory.
  HDF5 files are opened lazily in the process that reads them (each DataLoader worker opens
  its own handles: an HDF5 handle does not survive a fork; docs/pytorch.md), and ``ds[i]`` reads sample i only.
* :class:`OnTheFlyDataset` - iterable stream of freshly generated batches for tasks with a
  ``batch`` kernel (the atomic tasks): batch ``s`` of rank ``r`` holds the samples with
  indices ``(s * world_size + r) * batch_size + [0, batch_size)``, so no two workers or
  ranks ever yield the same index, and a run resumes from its step counter exactly.
* Encodings (``encode=True``), chosen by the task's ``family`` field:

  ========== ============================================== ================================
  family     x                                              y
  ========== ============================================== ================================
  atomic     float32 [T, c+2]: task channels, then           float32 as stored
             cos(2 pi i/T), sin(2 pi i/T) (``positional``)
  pathfinder float32 [M*M, 1]: (p/255 - 0.5)/0.5 row-major   int64 [M*M] (labels 0, 1, 2;
                                                             classic pathfinder: int64 scalar)
             (+ the two positional channels with
             ``positional=True``, T = M*M)
  listops    int64 [n] token ids                             int64 [n], -1 -> -100
                                                             (classic listops: int64 scalar)
  tokens     int64 [L] token ids                             int64 [L] as stored (-100: not scored)
  ========== ============================================== ================================

  ``encode=False`` returns the stored arrays as tensors, unchanged; :func:`encode_batch`
  then applies the same encoding to a batch on the GPU (6x fewer bytes for Pathfinder).

Modules: ``encodings`` (the per-family encodings above, in NumPy and in torch ops),
``shards`` (:class:`ShardDataset`, :func:`pad_collate`), ``ranks`` (:func:`seeded_sampler`
and the rank / world size rule) and ``streams`` (:class:`OnTheFlyDataset`). Every name is
imported from ``longsynth.torch``; imports here are absolute, so ``torch`` is always the
real PyTorch.
"""
from longsynth.generators.listops.tree import PAD_ID  # 15: one past the ListOps vocabulary
from longsynth.torch.encodings import BATCH_ENCODINGS as BATCH_ENCODINGS
from longsynth.torch.encodings import ENCODINGS as ENCODINGS
from longsynth.torch.encodings import IGNORE_INDEX, encode_batch, encoder, positional_channels
from longsynth.torch.encodings import PRIMARY as PRIMARY
from longsynth.torch.encodings import AtomicEncoding as AtomicEncoding
from longsynth.torch.encodings import ListOpsEncoding as ListOpsEncoding
from longsynth.torch.encodings import PathfinderEncoding as PathfinderEncoding
from longsynth.torch.encodings import TokensEncoding as TokensEncoding
from longsynth.torch.ranks import seeded_sampler
from longsynth.torch.shards import ShardDataset, pad_collate
from longsynth.torch.streams import OnTheFlyDataset

__all__ = [
    "IGNORE_INDEX",
    "PAD_ID",
    "OnTheFlyDataset",
    "ShardDataset",
    "encode_batch",
    "encoder",
    "pad_collate",
    "positional_channels",
    "seeded_sampler",
]
