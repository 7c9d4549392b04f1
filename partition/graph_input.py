"""The views of a graph store that every partitioner reads."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bgl.store import GraphStore

from . import _kernels


@dataclass(frozen=True)
class GraphInput:
    """CSC adjacency plus the training mask of a whole-graph store.

    ``indptr`` int64 [n+1] and ``indices`` int32/int64 [e] are the store's
    memmaps (paged in on demand, never copied); ``is_train`` float64 [n] is 1.0
    on training nodes (float so kernels add it straight into loads).
    ``indices_file`` / ``indices_offset`` name where ``indices`` lives on disk
    (None for in-memory arrays); ``symmetric`` is True when the store was ingested with
    both directions of every edge (engines then skip the transpose) so whole-graph passes can read it in chunks with
    ``pread`` instead of mapping it: mapped pages count in the process's RSS,
    read buffers are freed after each chunk (:func:`iter_chunks`).
    A typed store's ``etype`` memmap and ``schema`` come along (None otherwise), so the
    remote-sample share of candidate assignments is measured by typed sampling.
    """

    num_nodes: int
    num_edges: int
    indptr: np.ndarray
    indices: np.ndarray
    is_train: np.ndarray
    indices_file: str | None = None
    indices_offset: int = 0
    symmetric: bool = False
    etype: np.ndarray | None = None
    schema: object = None

    @classmethod
    def from_store(cls, store: GraphStore) -> "GraphInput":
        """View a whole-graph store: its memmapped CSC and a float64 [n] training mask."""
        n = store.num_nodes
        is_train = np.zeros(n, np.float64)
        if "train" in store.splits:
            is_train[np.asarray(store.splits["train"])] = 1.0
        if store.is_typed:  # the train splits of the typed store's (target) types
            from .typed_parts import train_mask

            is_train = train_mask(store)
        idx = store.indices
        where = (str(idx.filename), int(idx.offset)) if isinstance(idx, np.memmap) and idx.filename else (None, 0)
        symmetric = bool(store.meta.extra.get("symmetrize"))
        return cls(n, store.num_edges, np.asarray(store.indptr), np.asarray(idx), is_train, *where, symmetric,
                   store.etype if store.is_typed else None, store.schema if store.is_typed else None)

    @property
    def num_train(self) -> int:
        """Number of training nodes."""
        return int(self.is_train.sum())

    def out_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The transposed adjacency (CSR of out-neighbours): ``(out_ptr int64 [n+1], out_idx [e])``."""
        return _kernels.transpose(self.indptr, self.indices, self.num_nodes)


def row_chunks(indptr: np.ndarray, max_edges: int = 1 << 24):
    """Yield ``(a, b)`` row ranges of about ``max_edges`` edges (at least one row each)."""
    n = indptr.shape[0] - 1
    a = 0
    while a < n:
        b = int(np.searchsorted(indptr, indptr[a] + max_edges, side="right")) - 1
        b = min(n, max(b, a + 1))
        yield a, b
        a = b


def iter_chunks(graph: GraphInput, max_edges: int = 1 << 24):
    """Yield ``(a, ptr, idx)`` for row ranges ``[a, b)``: ``ptr`` int64 [b-a+1] (global edge
    offsets) and ``idx`` the in-neighbours, read with ``os.pread`` when the store is on disk so
    a whole-graph pass holds one chunk (about 4-8 bytes x ``max_edges``), not the mapped file."""
    import os

    fd = os.open(graph.indices_file, os.O_RDONLY) if graph.indices_file else None
    try:
        item = graph.indices.dtype.itemsize
        for a, b in row_chunks(graph.indptr, max_edges):
            ptr = np.array(graph.indptr[a : b + 1], np.int64)
            lo, hi = int(ptr[0]), int(ptr[-1])
            if fd is None:
                idx = np.asarray(graph.indices[lo:hi])
            else:
                buf = bytearray((hi - lo) * item)
                view, got = memoryview(buf), 0
                while got < len(buf):
                    k = os.preadv(fd, [view[got:]], graph.indices_offset + lo * item + got)
                    if k <= 0:
                        raise OSError(f"{graph.indices_file}: short read at edge {lo}")
                    got += k
                idx = np.frombuffer(buf, graph.indices.dtype)
            yield a, ptr, idx
    finally:
        if fd is not None:
            os.close(fd)


def release_pages(*arrays: np.ndarray) -> None:
    """Drop the resident pages of memory-mapped arrays from this process (``MADV_DONTNEED``;
    the data stays in the page cache and is paged back in on the next access).

    Opening a store validates a sample of its indices, which maps most pages of a big
    ``indices.npy`` into the process; the engine's peak comes later, so those pages are let go
    first instead of counting twice in the peak RSS."""
    import mmap

    for arr in arrays:
        a = arr
        while a is not None and not isinstance(a, np.memmap):
            a = getattr(a, "base", None)
        mm = getattr(a, "_mmap", None)
        if mm is not None and hasattr(mm, "madvise"):
            mm.madvise(mmap.MADV_DONTNEED)
