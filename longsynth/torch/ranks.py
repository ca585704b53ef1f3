"""Rank and world size (given, or torch.distributed's), and the sampler whose order is a
pure function of (seed, epoch) on any number of ranks."""
from __future__ import annotations

from torch.utils.data import DistributedSampler

from longsynth.errors import LongsynthError


def seeded_sampler(dataset, *, seed, shuffle=True, drop_last=False, rank=None, world_size=None):
    """A DistributedSampler whose epoch-e order is a pure function of (seed, e).

    Call ``sampler.set_epoch(e)`` before each epoch. Rank and world size come from
    torch.distributed when it is initialised, else from the arguments (default 0 of 1),
    so the same code shuffles reproducibly on one process and on many.
    """
    rank, world_size = _rank_world(rank, world_size)
    return DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed,
                              drop_last=drop_last)


def _rank_world(rank, world_size):
    if (rank is None) != (world_size is None):
        raise LongsynthError("rank, world_size: give both or neither")
    if rank is None:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise LongsynthError(f"world_size: must be an integer >= 1, got {world_size!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
        raise LongsynthError(f"rank: must be an integer in [0, {world_size - 1}], got {rank!r}")
    return rank, world_size
