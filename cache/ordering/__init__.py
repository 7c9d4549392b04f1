"""bgl.cache.ordering: the one home of epoch order (DGL's random shuffle and BGL's proximity order).

BGL's proximity order is one idea, BFS sequences from random roots,
interleaved, seen through two views:

- :mod:`~bgl.cache.ordering.store_order`: over a whole graph store (or any
  object with ``indptr``/``indices``), :func:`proximity_order`;
- :mod:`~bgl.cache.ordering.partition_order`: over a partition directory,
  part by part (:class:`PartitionOrder`), for trainers whose graph lives on
  graph servers.

It lives in the cache package because the order exists for the cache: a
FIFO cache hits when neighbouring batches need the same features.  The
DataLoader's order stage (:mod:`bgl.loader.stages.order`) uses both views.
"""
from .partition_order import PartitionOrder, env_partition_dir, local_csc
from .store_order import proximity_order, random_order

__all__ = ["PartitionOrder", "env_partition_dir", "local_csc", "proximity_order", "random_order"]
