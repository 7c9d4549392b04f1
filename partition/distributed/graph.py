"""Each rank's slice of a store and the distributed CSR the engines take (``bgl partition --distributed``).

Rank r of R owns the original node range ``[vtxdist[r], vtxdist[r+1])``, cut so the ranks hold
about the same number of in-edges (a binary search in the memory-mapped ``indptr``: no rank
reads more of the store than its own rows).  It reads those rows' in-edges (the store's CSC), and
builds the symmetric adjacency ParMETIS-API engines want: its in-edge ``u -> v`` is ``u`` in
``v``'s list here and ``v`` in ``u``'s list on ``u``'s owner, which gets it through one
all-to-all; self-loops and repeats (an edge stored both ways) are dropped.

Memory per rank, for ``e`` local in-edges and ``m`` local nodes: the slice (8 B/node of
``indptr``; the in-neighbours stay the store's memory-mapped rows, 4 B/edge of page cache the kernel
can drop under pressure, while ids fit int32), one int64 key per pair while they are exchanged and
sorted (8 B/edge sent + 8 B/edge received, then 8 B per own and received pair together: about
16-24 B/edge at the peak, 36 B/edge of resident memory with the mapped rows it reads), and the CSR, which reuses the key array (8 B/entry of ``adjncy`` +
8 B/node of ``xadj``).  No array is as long as the whole graph.  Past ``MAX_KEY_NODES`` nodes (a
pair no longer fits one int64 key) the CSR is built from (row, column) pairs instead: 16 B/pair
and a lexsort, about 4 x 16 B/edge at the peak.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bgl.store import GraphStore

from .. import _kernels
from .exchange import Exchange

#: Most nodes for which every pair ``(u, v)`` fits one int64 key ``u * n + v`` (floor(sqrt(2^63 - 1))).
MAX_KEY_NODES = 3_037_000_499


@dataclass
class Slice:
    """One rank's rows of a whole-graph store.

    ``lo, hi`` : the original node range ``[lo, hi)``; ``vtxdist`` : int64 [R+1] all ranks' ranges;
    ``indptr`` : int64 [hi-lo+1] offsets from 0; ``src`` : int [e] in-neighbours (original ids:
    int64, or a store's int32 rows, memory-mapped, while its ids fit);
    ``edge_start`` : the store's CSC position of the first edge (edge ids are positions).
    """

    lo: int
    hi: int
    vtxdist: np.ndarray
    indptr: np.ndarray
    src: np.ndarray
    edge_start: int

    @property
    def num_nodes(self) -> int:
        return self.hi - self.lo

    def owner(self, ids: np.ndarray) -> np.ndarray:
        """The rank owning each original id: int64 like ``ids``."""
        return np.searchsorted(self.vtxdist, ids, side="right").astype(np.int64) - 1


def drop_mapped_pages(a: np.ndarray) -> None:
    """Take ``a``'s pages out of this process's resident set if it is a view of a read-only
    memory-mapped file (``madvise(MADV_DONTNEED)``; a later read faults them back in from the page
    cache or the file).  Anything else is left alone."""
    import mmap

    base = a
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    if base is None or not hasattr(base, "madvise") or a.size == 0:
        return
    start = a.ctypes.data - np.frombuffer(base, np.uint8).ctypes.data
    page = mmap.PAGESIZE
    first, last = -(-start // page) * page, (start + a.nbytes) // page * page  # whole pages inside ``a``
    if last > first:
        base.madvise(mmap.MADV_DONTNEED, first, last - first)


def split_ranges(indptr: np.ndarray, num_ranks: int) -> np.ndarray:
    """``vtxdist`` int64 [R+1]: contiguous node ranges of about equal in-edge counts, each
    non-empty while there are at least R nodes (a ParMETIS-API requirement)."""
    n = indptr.shape[0] - 1
    total = int(indptr[-1])
    targets = (np.arange(num_ranks + 1, dtype=np.float64) * total / num_ranks).astype(np.int64)
    vtx = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    return _nonempty(vtx, n, num_ranks)


def _nonempty(vtx: np.ndarray, n: int, num_ranks: int) -> np.ndarray:
    """``vtx`` from 0 to ``n`` with every range non-empty when there are at least R nodes."""
    vtx[0], vtx[-1] = 0, n
    if n >= num_ranks:
        for r in range(1, num_ranks):
            vtx[r] = max(vtx[r], vtx[r - 1] + 1)
        for r in range(num_ranks - 1, 0, -1):
            vtx[r] = min(vtx[r], vtx[r + 1] - 1)
    return vtx


def ranges_from_histogram(hist: np.ndarray, width: int, num_nodes: int, num_ranks: int) -> np.ndarray:
    """``vtxdist`` int64 [R+1] as :func:`split_ranges` cuts it, from a histogram of in-edge
    counts over buckets of ``width`` consecutive node ids (``hist`` int64 [B]): cuts fall on bucket
    bounds, so ranks learn their ranges without a per-node array."""
    cum = np.zeros(hist.size + 1, np.int64)
    np.cumsum(hist, out=cum[1:])
    vtx = np.minimum(split_ranges(cum, num_ranks) * int(width), num_nodes)
    return _nonempty(vtx, num_nodes, num_ranks)


def read_slice(store: GraphStore, rank: int, num_ranks: int) -> Slice:
    """This rank's rows of ``store``: its node range and their in-edges.  The in-neighbours are a
    view of the store's memory-mapped ``indices`` (its dtype), not a copy: read as they are used,
    they cost page cache the kernel can drop rather than 8 B/edge of the rank's own memory."""
    ip = store.indptr
    vtxdist = split_ranges(ip, num_ranks)
    lo, hi = int(vtxdist[rank]), int(vtxdist[rank + 1])
    ptr = np.array(ip[lo : hi + 1], np.int64)
    start = int(ptr[0])
    src = np.asarray(store.indices[start : int(ptr[-1])])
    return Slice(lo, hi, vtxdist, ptr - start, src, start)


def sorted_pairs(rows: np.ndarray, cols: np.ndarray, lo: int, n: int,
                 unique: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) sorted by row then column, repeats removed when ``unique`` (rows >= ``lo``,
    columns < ``n``): one int64 key per pair while ``(span of rows) * n`` fits, else a lexsort."""
    span = int(rows.max()) - lo + 1 if rows.size else 0
    if span * n < 2**62:
        key = (rows - lo) * n + cols
        key.sort()
        if unique and key.size:
            key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        return key // n + lo, key % n
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    if not unique:
        return rows, cols
    keep = np.ones(rows.size, bool)
    keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    return rows[keep], cols[keep]


def symmetric_csr(sl: Slice, ex: Exchange, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(xadj int64 [m+1], adjncy int64)`` of this rank's rows of the graph made undirected,
    without self-loops or repeats, neighbour ids global (original); collective over the ranks.

    Each pair travels and sorts as one int64 key: in-edge ``u -> v`` is ``u * n + v`` for ``u``'s
    owner (the keys sorted once are grouped by owner, whose ids are contiguous: no send order) and
    ``(v - lo) * n + u`` here; the sorted, de-duplicated keys become ``adjncy`` in place (``% n``)
    and ``xadj`` is where each row's keys begin.  Graphs past :data:`MAX_KEY_NODES` nodes take
    :func:`symmetric_csr_pairs` (the same result)."""
    n, m = int(num_nodes), sl.num_nodes
    if n > MAX_KEY_NODES:
        return symmetric_csr_pairs(sl, ex, n)
    src = np.asarray(sl.src)
    rev = np.empty(src.size, np.int64)
    rev.resize(_kernels.slice_keys(sl.indptr, src, sl.lo, n, rev, True), refcheck=False)
    rev.sort()
    cuts = np.searchsorted(rev, np.asarray(sl.vtxdist, np.int64) * n)
    send_counts = np.diff(cuts).astype(np.int64)
    got = ex.alltoallv(rev, send_counts, ex.counts(send_counts))
    del rev
    key = np.empty(src.size + got.size, np.int64)
    own = _kernels.slice_keys(sl.indptr, src, sl.lo, n, key, False)
    np.subtract(got, sl.lo * n, out=key[own : own + got.size])  # u's row here: (u - lo) * n + v
    key.resize(own + got.size, refcheck=False)
    del got
    key.sort()
    key.resize(_kernels.unique_sorted(key), refcheck=False)
    xadj = np.searchsorted(key, np.arange(m + 1, dtype=np.int64) * n).astype(np.int64)
    np.remainder(key, n, out=key)
    return xadj, key


def symmetric_csr_pairs(sl: Slice, ex: Exchange, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`symmetric_csr` from (row, column) pairs: for graphs whose pairs do not fit one int64
    key (16 B per pair, sorted with a lexsort)."""
    dst = np.repeat(np.arange(sl.lo, sl.hi, dtype=np.int64), np.diff(sl.indptr))
    ids = np.asarray(sl.src, np.int64)
    loop = ids == dst
    src, dst = ids[~loop], dst[~loop]
    del ids
    # u -> v also makes v a neighbour of u, which u's owner lists
    (rev_rows, rev_cols), _ = ex.route([src, dst], sl.owner(src))
    rows = np.concatenate([dst, rev_rows])
    cols = np.concatenate([src, rev_cols])
    del dst, src, rev_rows, rev_cols
    rows, cols = sorted_pairs(rows, cols, sl.lo, num_nodes)
    xadj = np.zeros(sl.num_nodes + 1, np.int64)
    np.cumsum(np.bincount(rows - sl.lo, minlength=sl.num_nodes), out=xadj[1:])
    return xadj, cols


@dataclass
class Relabel:
    """New ids of a distributed assignment, as :func:`partition.format.relabel` numbers them
    (stable by part, then original id): ``bounds`` int64 [P+1] (part k owns new ids
    ``[bounds[k], bounds[k+1])``), ``new_ids`` int64 [m] of this rank's nodes, ``counts`` int64 [R, P]
    nodes of each part on each rank."""

    bounds: np.ndarray
    new_ids: np.ndarray
    counts: np.ndarray


def relabel(part: np.ndarray, num_parts: int, ex: Exchange) -> Relabel:
    """New ids for this rank's nodes (``part`` int64 [m], in original-id order); collective.

    Ranks hold ascending original-id ranges, so inside part k the nodes of rank 0 come first, then
    rank 1's, ...: a node's new id is its part's start, plus the part's nodes on lower ranks, plus its
    position among this rank's nodes of the part."""
    rank = ex.comm.Get_rank()
    counts = ex.allgather(np.bincount(part, minlength=num_parts).astype(np.int64))
    bounds = np.zeros(num_parts + 1, np.int64)
    np.cumsum(counts.sum(axis=0), out=bounds[1:])
    base = bounds[:-1] + counts[:rank].sum(axis=0)
    order = np.argsort(part, kind="stable")
    first = np.zeros(num_parts + 1, np.int64)
    np.cumsum(counts[rank], out=first[1:])
    new_ids = np.empty(part.size, np.int64)
    ps = part[order]
    new_ids[order] = base[ps] + np.arange(part.size, dtype=np.int64) - first[ps]
    return Relabel(bounds, new_ids, counts)


#: Ids looked up per step when :func:`translate` maps ids to answers (bounds its temporaries).
TRANSLATE_CHUNK = 1 << 22


def ask_owners(uniq: np.ndarray, vtxdist: np.ndarray, lo: int, own_answers: np.ndarray, ex: Exchange) -> np.ndarray:
    """Each owner's answer for ``uniq`` (distinct original ids, sorted, any rank's), in ``uniq``'s order.

    Collective: every rank asks and answers (``own_answers`` [hi-lo]: this rank's answer per own
    node).  ``uniq`` sorted and the ranks' ranges ascending, grouping the ids by owner keeps their
    order, so the answers line up with ``uniq`` without a permutation.
    """
    owner = np.searchsorted(vtxdist, uniq, side="right").astype(np.int64) - 1
    (asked,), recv_counts = ex.route([uniq], owner)
    return ex.reply(own_answers[asked - lo], recv_counts)


def translate(ids: np.ndarray, sl: Slice, new_ids: np.ndarray, ex: Exchange, dtype=np.int64) -> np.ndarray:
    """New ids of original ``ids`` (any rank's nodes), as ``dtype`` (int64; int32 when the caller
    knows the graph's ids fit): each distinct id is asked of its owner once.

    Memory: a sorted copy of ``ids`` (their dtype) to find the distinct ones, the answers, and the
    result; each id finds its answer by binary search in chunks, not through a per-edge inverse."""
    uniq = np.unique(ids)
    answers = ask_owners(uniq, sl.vtxdist, sl.lo, new_ids, ex).astype(dtype, copy=False)
    out = np.empty(len(ids), dtype)
    for a in range(0, len(ids), TRANSLATE_CHUNK):
        out[a : a + TRANSLATE_CHUNK] = answers[np.searchsorted(uniq, ids[a : a + TRANSLATE_CHUNK])]
    return out
