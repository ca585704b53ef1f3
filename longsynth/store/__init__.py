"""Sharded HDF5 datasets: crash-safe writing, resuming, reading and verification.

Layout of a dataset directory (see docs/format.md):
    manifest.json          configuration, versions, per-split counts, shards, digests
    README.md              dataset card
    {split}-{k:05d}.h5     shard k of a split: samples start..start+count-1

Every shard is written to a temporary name, flushed, fsynced, hashed and renamed; the
manifest is rewritten atomically (tmp + rename) after each finished shard. Rerunning
the same ``generate`` keeps the shards whose SHA-256 matches the manifest and redoes the
rest, so a killed run finishes byte-identical to an uninterrupted one.

This package is the public face; the work is split along its seams:
    layout    file names, keys, digests, shard sizing
    manifest  planning (shard jobs), sizes, the directory lock, manifest and card
    shards    write_shard: one job in, one shard record out
    pool      the local executor (this process or a pool of spawned processes)
    cluster   the Dask executor (imports ``distributed`` only when used)
    build     generate: lock, plan, run an executor, keep the manifest
    read      open / Dataset / Split with checked reads
    checks    verify, info, certificates
    schema    the manifest, validated field by field (docs/format.md, "manifest.json")
    identity  a shard's identity and layout, checked when it is opened

Atomic and staged writes and file hashing (``longsynth.files``) and confinement - plain
names, regular files opened without following links, bounded JSON (``longsynth.safe``) -
sit below the store, shared with the exporters (``longsynth.exports``), which read
datasets through this package.
"""
from longsynth.errors import DamagedDataError, LongsynthError, MissingKeyError
from longsynth.rng import SPLITS, split_code
from longsynth.store.layout import (BLOCK_BYTES, CARD, CHECK_KEY, COMPRESSIONS, DIGEST_KEY, FORMAT, FORMAT_VERSION,
                                    LOCK, MANIFEST, MAX_COUNT, OURS_RE, RAGGED_ROWS, SHARD_BYTES, SHARD_RE, TMP_RE,
                                    block_digests, default_shard_size, sample_bytes, sample_digest)
from longsynth.store.manifest import (DirLock, ShardJob, config_of, dataset_card, default_splits, estimate_bytes,
                                      human, parse_splits, plan, progress_of, read_manifest, versions)
from longsynth.store.shards import write_shard
from longsynth.store.pool import LocalPool
from longsynth.store.read import Dataset, Split, open
from longsynth.store.build import Plan, dry_run, generate
from longsynth.store.checks import check, info, latest_certificate, verify


def connect(address, timeout=None):
    """A ``distributed.Client`` for a Dask scheduler address or scheduler file, for
    ``generate(..., client=)`` (longsynth.store.cluster.connect; needs longsynth[dask])."""
    from longsynth.store import cluster

    return cluster.connect(address, timeout)


__all__ = [
    "BLOCK_BYTES", "CARD", "CHECK_KEY", "COMPRESSIONS", "DIGEST_KEY", "DamagedDataError", "Dataset", "DirLock",
    "FORMAT", "FORMAT_VERSION", "LOCK", "LocalPool", "LongsynthError", "MANIFEST", "MAX_COUNT", "MissingKeyError",
    "OURS_RE", "Plan", "RAGGED_ROWS", "SHARD_BYTES", "SHARD_RE", "SPLITS", "ShardJob", "Split", "TMP_RE",
    "block_digests", "check", "config_of", "connect", "dataset_card", "default_shard_size", "default_splits",
    "dry_run", "estimate_bytes", "generate", "human", "info", "latest_certificate", "open", "parse_splits", "plan",
    "progress_of", "read_manifest", "sample_bytes", "sample_digest", "split_code", "verify", "versions", "write_shard",
]
