"""Stream a graph store into a ParHIP binary graph file, the input KaMinPar reads.

The engine wants an undirected graph without self-loops or repeated edges; a
store holds directed in-edges (CSC).  The file is written in row chunks:

1. (directed stores only) the out-neighbour CSR is built by counting + filling,
   chunk by chunk: ``out_ptr`` int64 (8 B/node) + ``out_idx`` (4 B/edge with 32-bit ids);
   a store ingested with ``symmetrize`` already holds both directions and skips this.
2. a counting pass gives each node's undirected degree (deduplicated through a
   position-marker array, int64 8 B/node) -> the offsets section;
3. a filling pass writes each chunk's neighbour ids (32-bit where n < 2^32) and,
   optionally, edge weights (32-bit) at their place in the file.

Memory: 8 (marks) + 8 (degrees) + 8 (is_train of GraphInput) + optional 4-8 B/node of
weights, + 4 B/edge for a directed store's transpose, + one chunk (about 16M edges:
~200 MB); store pages are read with ``pread`` and never stay mapped.

File layout (all little-endian): ``version, n, m`` (u64 each; version bits set = 32-bit
or absent field: 1 no edge weights, 2 no node weights, 4 32-bit offsets, 8 32-bit ids,
16 32-bit node weights, 32 32-bit edge weights), offsets ``[n+1]`` as byte positions of
each row in the file, neighbour ids ``[m]``, node weights ``[n]``, edge weights ``[m]``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _kernels
from .graph_input import GraphInput, iter_chunks

HEADER_BYTES = 24
CHUNK_EDGES = 1 << 24


@dataclass(frozen=True)
class ParhipFile:
    """What :func:`write_parhip` wrote: path, undirected node/edge counts (edges counted in
    both directions, as the file stores them), and whether weights are present."""

    path: Path
    num_nodes: int
    num_edges: int
    node_weighted: bool
    edge_weighted: bool

    @property
    def nbytes(self) -> int:
        """Size of the file in bytes."""
        return self.path.stat().st_size


def parhip_bytes(num_nodes: int, num_edges: int, node_weights: bool, edge_weights: bool) -> int:
    """File size for ``num_edges`` undirected entries: 8 B/node offsets, 4 B/entry ids,
    4 B/node and 4 B/entry when weighted."""
    return (HEADER_BYTES + 8 * (num_nodes + 1) + 4 * num_edges + (4 * num_nodes if node_weights else 0)
            + (4 * num_edges if edge_weights else 0))


def _out_csr(graph: GraphInput) -> tuple[np.ndarray, np.ndarray]:
    """Out-neighbour CSR of the store, built chunk by chunk (8 B/node + id bytes/edge)."""
    n = graph.num_nodes
    out_ptr = np.zeros(n + 1, np.int64)
    for _, _, idx in iter_chunks(graph, CHUNK_EDGES):
        _kernels.out_degree_add(idx, out_ptr[1:])
    np.cumsum(out_ptr, out=out_ptr)
    fill = out_ptr[:-1].copy()
    out_idx = np.empty(graph.num_edges, np.uint32 if n < 2**32 else np.int64)
    for a, ptr, idx in iter_chunks(graph, CHUNK_EDGES):
        _kernels.transpose_fill(ptr, idx, a, fill, out_idx)
    return out_ptr, out_idx


def write_parhip(graph: GraphInput, path: str | os.PathLike, *, symmetric: bool,
                 node_weights: np.ndarray | None = None, crossings: np.ndarray | None = None,
                 weight_scale: float = 1.0, weight_levels: int = 8) -> ParhipFile:
    """Write ``graph`` made undirected to ``path`` (a ParHIP binary file).

    Parameters
    ----------
    graph : CSC view of a whole-graph store
    symmetric : the store already holds every edge in both directions (skip the transpose)
    node_weights : int [n] >= 1, or None
    crossings : float [n] expected sampled draws per in-edge of each node, or None; the
        weight of {u, v} is ``crossings[v]`` (if u -> v is stored) + ``crossings[u]`` (if
        v -> u), quantized to ``1 + min(levels - 1, floor(w / weight_scale))``
    """
    n = graph.num_nodes
    if n >= 2**32:
        raise ValueError(f"{n} nodes: ParHIP files here use 32-bit node ids")
    path = Path(path)
    out_ptr, out_idx = (np.zeros(1, np.int64), np.zeros(1, np.uint32)) if symmetric else _out_csr(graph)
    has_out = not symmetric
    has_w = crossings is not None
    cross = np.asarray(crossings, np.float64) if has_w else np.zeros(1)
    mark = np.full(n, -1, np.int64)
    deg = np.zeros(n, np.int64)
    dummy_nbr, dummy_wt = np.zeros(1, np.uint32), np.zeros(1, np.float64)
    pos = 0
    for a, ptr, idx in iter_chunks(graph, CHUNK_EDGES):
        pos += _kernels.symmetric_rows(ptr, idx, a, out_ptr, out_idx, has_out, mark, pos, cross, False,
                                       dummy_nbr, dummy_wt, True, deg[a : a + ptr.size - 1])
    m = pos
    version = (0 if has_w else 1) | (0 if node_weights is not None else 2) | 8 | 16 | 32
    ids_at = HEADER_BYTES + 8 * (n + 1)
    nw_at = ids_at + 4 * m
    ew_at = nw_at + (4 * n if node_weights is not None else 0)
    with open(path, "wb") as f:
        f.write(np.array([version, n, m], np.uint64).tobytes())
        offsets = np.empty(n + 1, np.uint64)
        offsets[0] = 0
        np.cumsum(deg, out=offsets[1:])
        del deg
        offsets *= np.uint64(4)
        offsets += np.uint64(ids_at)
        f.write(offsets.tobytes())
        del offsets
        mark[:] = -1
        pos = 0
        for a, ptr, idx in iter_chunks(graph, CHUNK_EDGES):
            rows = ptr.size - 1
            cap = int(ptr[-1] - ptr[0]) + (int(out_ptr[a + rows] - out_ptr[a]) if has_out else 0)
            nbr = np.empty(max(cap, 1), np.uint32)
            wt = np.empty(max(cap, 1) if has_w else 1, np.float64)
            k = _kernels.symmetric_rows(ptr, idx, a, out_ptr, out_idx, has_out, mark, pos, cross, has_w,
                                        nbr, wt, False, np.empty(rows, np.int64))
            os.pwrite(f.fileno(), nbr[:k].tobytes(), ids_at + 4 * pos)
            if has_w:
                q = np.empty(k, np.int32)
                _kernels.quantize_levels(wt[:k], float(weight_scale), int(weight_levels), q)
                os.pwrite(f.fileno(), q.tobytes(), ew_at + 4 * pos)
            pos += k
        if node_weights is not None:
            nw = np.asarray(node_weights)
            if nw.shape != (n,) or (n and int(nw.min()) < 1):
                raise ValueError(f"node_weights must be int >= 1 of shape ({n},)")
            os.pwrite(f.fileno(), nw.astype(np.int32).tobytes(), nw_at)
        f.truncate(ew_at + (4 * m if has_w else 0))
    return ParhipFile(path, n, m, node_weights is not None, has_w)


def read_parhip(path: str | os.PathLike) -> dict:
    """Read a ParHIP file written by :func:`write_parhip` back into arrays (tests, small graphs):
    ``{"xadj" int64 [n+1], "adjncy" uint32 [m], "vwgt" int32 [n] | None, "adjwgt" int32 [m] | None}``."""
    raw = np.fromfile(path, np.uint8)
    version, n, m = (int(x) for x in raw[:24].view(np.uint64))
    ids_at = HEADER_BYTES + 8 * (n + 1)
    offsets = raw[HEADER_BYTES:ids_at].view(np.uint64).astype(np.int64)
    xadj = (offsets - ids_at) // 4
    adjncy = raw[ids_at : ids_at + 4 * m].view(np.uint32)
    at = ids_at + 4 * m
    vwgt = adjwgt = None
    if not version & 2:
        vwgt = raw[at : at + 4 * n].view(np.int32)
        at += 4 * n
    if not version & 1:
        adjwgt = raw[at : at + 4 * m].view(np.int32)
    return {"xadj": xadj, "adjncy": adjncy, "vwgt": vwgt, "adjwgt": adjwgt}
