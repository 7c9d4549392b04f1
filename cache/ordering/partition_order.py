"""BGL's proximity order over a partition dir, one part at a time, never the whole graph.

A trainer under ``bgl launch`` samples through graph servers, but it can read
the partition dir (launch requires the same path on every host).  Each part
store holds its owned nodes' in-edges with GLOBAL neighbour ids and owns the
contiguous range ``[node_start, node_end)``.  So the proximity order is built
per part, on a compact local CSC that keeps only the edges inside the part:

1. :func:`local_csc` drops neighbours outside the part's range and shifts the
   rest to local ids (one vectorised pass over the part's edges, in chunks);
2. :func:`bgl.cache.ordering.store_order.proximity_order` orders the part's training ids
   on that view (BFS sequences from random roots, interleaved);
3. :func:`concat_parts` joins the parts' orders, parts in a random order.

Why per part: a batch whose seeds sit in one part asks one server for most of
its neighbours, and the BFS locality inside a part is what feeds the feature
cache; edges that leave the part only matter for sampling, not for ordering.
Only parts that own some of the given ids are read, so a DDP rank whose share
is one part's training nodes reads one part.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

log = logging.getLogger(__name__)

# Edges per pass when building a local view: bounds the temporaries (a bool
# mask and an int64 running count per edge) to ~36 MB whatever the part size.
DEFAULT_CHUNK_EDGES = 1 << 22


@dataclass(frozen=True)
class LocalView:
    """One part's CSC restricted to its own nodes, in local ids (what ``proximity_order`` walks).

    Attributes
    ----------
    indptr : int64 [m + 1]
    indices : int32 [e_in] (int64 when m >= 2**31): local ids in ``[0, m)``
    node_start : global id of local node 0
    """

    indptr: np.ndarray
    indices: np.ndarray
    node_start: int

    @property
    def num_nodes(self) -> int:
        """Nodes of the part (``indptr.shape[0] - 1``)."""
        return int(self.indptr.shape[0]) - 1

    @property
    def num_edges(self) -> int:
        """Edges kept inside the part (``indices.shape[0]``)."""
        return int(self.indices.shape[0])


def _row_chunks(indptr: np.ndarray, chunk_edges: int) -> np.ndarray:
    """Row boundaries int64 [c + 1] such that each chunk holds about ``chunk_edges`` edges (>= 1 row)."""
    m = indptr.shape[0] - 1
    total = int(indptr[-1]) - int(indptr[0])
    if m == 0:
        return np.zeros(1, np.int64)
    targets = int(indptr[0]) + np.arange(0, max(total, 1), chunk_edges, dtype=np.int64)
    starts = np.searchsorted(indptr[:-1], targets, side="right") - 1
    return np.unique(np.concatenate([np.clip(starts, 0, m), [0, m]])).astype(np.int64)


def local_csc(indptr, indices, node_start: int, node_end: int,
              chunk_edges: int = DEFAULT_CHUNK_EDGES) -> LocalView:
    """Keep the in-edges whose neighbour lies in ``[node_start, node_end)``, as local ids.

    Parameters
    ----------
    indptr : int64 [m + 1] CSC row pointers of the part's owned nodes (m = node_end - node_start).
    indices : int [e] in-neighbours, GLOBAL ids (may be a memmap; read chunk by chunk).
    node_start, node_end : the part's owned global id range.
    chunk_edges : edges per pass (bounds temporary memory).

    Returns
    -------
    LocalView with int64 indptr [m + 1] and local indices (int32 when they fit).

    Raises
    ------
    ValueError
        when ``indptr`` does not have ``node_end - node_start + 1`` entries or ``chunk_edges < 1``.
    """
    indptr = np.asarray(indptr)
    m = int(node_end) - int(node_start)
    if m < 0 or indptr.shape != (m + 1,):
        raise ValueError(f"indptr must have node_end - node_start + 1 = {m + 1} entries for range "
                         f"[{node_start}, {node_end}), got shape {indptr.shape}")
    if isinstance(chunk_edges, bool) or not isinstance(chunk_edges, (int, np.integer)) or chunk_edges < 1:
        raise ValueError(f"chunk_edges must be an int >= 1, got {chunk_edges!r}")
    id_dtype = np.int32 if m < 2**31 - 1 else np.int64
    out_indptr = np.zeros(m + 1, np.int64)
    pieces = []
    kept_before = 0
    rows = _row_chunks(indptr, int(chunk_edges))
    for r0, r1 in zip(rows[:-1], rows[1:]):
        e0, e1 = int(indptr[r0]), int(indptr[r1])
        nb = np.asarray(indices[e0:e1])
        keep = (nb >= node_start) & (nb < node_end)
        # running count of kept edges: row r's new end is the count up to its old end
        kept_upto = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        out_indptr[r0 + 1:r1 + 1] = kept_before + kept_upto[np.asarray(indptr[r0 + 1:r1 + 1]) - e0]
        pieces.append((nb[keep] - node_start).astype(id_dtype, copy=False))
        kept_before += int(kept_upto[-1])
    out_indices = np.concatenate(pieces) if pieces else np.empty(0, id_dtype)
    return LocalView(indptr=out_indptr, indices=out_indices, node_start=int(node_start))


def concat_parts(orders: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Concatenate per-part orders, the parts in a random order (new each epoch).

    Why not interleave the parts batch by batch: then consecutive batches
    would come from different parts and share few input nodes, which is what
    the FIFO cache lives on.  Concatenated, every batch but the one at each
    part boundary stays inside one part, and consecutive batches continue the
    same part's interleaved BFS sequences.  (Under ``bgl launch`` with as many
    trainers as parts, each rank's share is about one part anyway.)

    Parameters
    ----------
    orders : list of int64 [t_k] arrays (disjoint ids)
    rng : numpy Generator (the epoch's)

    Returns
    -------
    int64 [sum t_k]: every id of every order exactly once.
    """
    if not orders:
        return np.empty(0, np.int64)
    return np.concatenate([np.asarray(orders[k], dtype=np.int64) for k in rng.permutation(len(orders))])


class PartitionOrder:
    """Per-epoch proximity orders of some training ids, computed part by part from a partition dir.

    Parameters
    ----------
    partition_dir : a ``bgl partition`` output dir (readable by this process).
    ids : int64 [t] distinct global (new) ids to order, e.g. this DDP rank's share.
    num_sequences : BFS sequences interleaved inside each part.
    chunk_edges : edges per pass when building the local views.

    Notes
    -----
    The local views of the parts that own some of ``ids`` are built on the
    first :meth:`epoch_order` and kept for the object's life (one build per
    loader, not per epoch).

    Raises
    ------
    ValueError
        for ids outside the partition's node range (naming the id)
    bgl.errors.PartitionFormatError
        for an invalid partition dir
    """

    def __init__(self, partition_dir: str | os.PathLike, ids, num_sequences: int,
                 chunk_edges: int = DEFAULT_CHUNK_EDGES):
        from ...partition.format import open_partition

        self._book = open_partition(partition_dir)
        self.bounds = np.asarray(self._book.bounds, dtype=np.int64)
        ids = np.asarray(ids, dtype=np.int64)
        # A typed partition's loader speaks the ORIGINAL store's global ids (type offset + per-type id);
        # the BFS runs over the parts' new ids, and the order goes back through orig_ids.
        self._typed = self._book.schema is not None and not self._book.schema.is_homogeneous
        if self._typed:
            ids = self._book.to_new_global(ids)
        owner = self._book.owner(ids)
        by_part = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=self._book.num_parts)
        cuts = np.concatenate([[0], np.cumsum(counts)])
        # Local ids per part (a loop over parts, not nodes).
        self._local_ids = {int(k): ids[by_part[cuts[k]:cuts[k + 1]]] - self.bounds[k]
                           for k in np.flatnonzero(counts)}
        self.num_ids = int(ids.shape[0])
        self.num_sequences = num_sequences
        self.chunk_edges = chunk_edges
        self._views: dict[int, LocalView] = {}

    @property
    def parts(self) -> list[int]:
        """Parts that own some of the ids (only these are read)."""
        return sorted(self._local_ids)

    def view(self, k: int) -> LocalView:
        """Part ``k``'s local view, built once."""
        if k not in self._views:
            store = self._book.part_store(k)
            self._views[k] = local_csc(store.indptr, store.indices, int(self.bounds[k]),
                                       int(self.bounds[k + 1]), self.chunk_edges)
            log.debug("part %d local view: %d nodes, %d of %d edges inside the part", k,
                      self._views[k].num_nodes, self._views[k].num_edges, store.num_edges)
        return self._views[k]

    def epoch_order(self, seed: int) -> np.ndarray:
        """This epoch's order of the ids: int64 [t], each id once; a new ``seed`` gives a new order."""
        from .store_order import proximity_order

        rng = np.random.default_rng(seed)
        part_seeds = rng.integers(0, 2**62, size=max(self.parts, default=0) + 1)
        orders = []
        for k in self.parts:
            local = proximity_order(self.view(k), self._local_ids[k], self.num_sequences, int(part_seeds[k]))
            orders.append(np.asarray(local, dtype=np.int64) + self.bounds[k])
        order = concat_parts(orders, rng)
        return np.asarray(self._book.orig_ids)[order] if self._typed else order


def env_partition_dir() -> Optional[str]:
    """The partition dir named by ``BGL_PARTITION`` (set by ``bgl launch``), or None when unset/empty."""
    value = os.environ.get("BGL_PARTITION", "").strip()
    return value or None
