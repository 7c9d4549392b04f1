"""Epoch orders of the training nodes: DGL's random shuffle and BGL's proximity order.

Why proximity: a FIFO cache hits when the next batches need what recent
batches fetched.  BFS visits neighbourhoods one after another, so batches
cut from a BFS sequence share many sampled neighbours.  A single BFS would
make batches too alike (and every epoch the same), which hurts convergence;
BGL therefore runs several BFS sequences from random roots, rotates each by
a different offset and interleaves them, so a batch mixes a few regions
while each region still advances batch by batch, and every epoch (new seed)
differs.
"""
from __future__ import annotations

import numpy as np

from .._kernels import bfs_train_order, interleave_chunks


def random_order(train_ids, seed: int) -> np.ndarray:
    """A uniform random permutation of ``train_ids`` (DGL's ``shuffle=True``), int64."""
    return np.random.default_rng(seed).permutation(np.asarray(train_ids, dtype=np.int64))


def proximity_order(graph, train_ids, num_sequences: int = 4, seed: int = 0, chunk: int = 1) -> np.ndarray:
    """BGL's proximity-aware order of ``train_ids`` for one epoch.

    Parameters
    ----------
    graph : anything with CSC ``indptr`` int64 [n + 1] and ``indices`` [e] arrays
        (a :class:`~bgl.store.GraphStore`, also a partition part: then
        ``node_offset`` is honoured and edges leaving the part are ignored).
        In-neighbours serve as adjacency; for BFS locality the direction
        hardly matters and ingested graphs are usually symmetric.
    train_ids : int [t] distinct (global) node ids to order.
    num_sequences : BFS sequences interleaved (BGL uses a few; 1 = plain BFS).
    seed : a new seed per epoch gives a new order.
    chunk : ids taken from one sequence per turn of the interleave.  1 mixes
        the sequences element-wise (each batch spans every sequence's
        frontier); the loader's ``batch_size`` makes each batch one
        contiguous stretch of a single BFS sequence.

    Returns
    -------
    int64 [t]: every training id exactly once.

    Each sequence starts a BFS at a random training node and, whenever the
    BFS runs dry, restarts from the next random training node not yet
    visited, so disconnected training nodes are covered too.
    """
    if isinstance(num_sequences, bool) or not isinstance(num_sequences, (int, np.integer)) or num_sequences < 1:
        raise ValueError(f"num_sequences must be an int >= 1, got {num_sequences!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be an int >= 1, got {chunk!r}")
    indptr = np.asarray(graph.indptr)
    indices = np.asarray(graph.indices)
    n = indptr.shape[0] - 1
    offset = int(getattr(graph, "node_offset", 0) or 0)
    train = np.asarray(train_ids, dtype=np.int64)
    t = train.shape[0]
    if t == 0:
        return train.copy()
    local = train - offset
    lo, hi = int(local.min()), int(local.max())
    if lo < 0 or hi >= n:
        bad = int(train[np.argmax((local < 0) | (local >= n))])
        raise ValueError(f"training node id {bad} outside the graph's nodes [{offset}, {offset + n})")
    is_train = np.zeros(n, dtype=np.bool_)
    is_train[local] = True
    if int(is_train.sum()) != t:
        raise ValueError(f"train_ids contain duplicates ({t - int(is_train.sum())} repeated)")
    rng = np.random.default_rng(seed)
    queue = np.empty(n, dtype=np.int32 if n < 2**31 - 1 else np.int64)
    visited = np.zeros(n, dtype=np.uint8)
    seqs = np.empty((num_sequences, t), dtype=np.int64)
    for s in range(num_sequences):
        roots = rng.permutation(local)
        seq = bfs_train_order(indptr, indices, offset, roots, is_train, t, queue, visited)
        # Every root is a training node and every unvisited one restarts the BFS, so seq covers all.
        if seq.shape[0] != t:  # pragma: no cover - guarded by the kernel's restart rule
            raise RuntimeError(f"BFS covered {seq.shape[0]} of {t} training nodes")
        # Spread the starting points of the sequences over the BFS order.
        seqs[s] = np.roll(seq, -((s * t) // num_sequences))
    order = interleave_chunks(seqs, int(chunk), visited)
    return order + offset
