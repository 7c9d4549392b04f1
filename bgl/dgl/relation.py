"""One relation's edges: COO in edge-id order, with CSC and CSR built on first use and cached.

What a DGL unit graph holds, as plain torch tensors.  Costs per edge: the COO pair (2 ids of the
graph's idtype), plus, once built, CSC (src index + edge id, int32 while they fit, and an int64
``indptr`` entry per dst node) and likewise CSR when a backward pass or ``out_degrees`` needs it.
A relation whose edges already come sorted by destination (every sampled block) keeps no CSC
edge-id array: its CSC order is its edge-id order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

_INT32_MAX = 2**31 - 1


@dataclass
class Compressed:
    """A compressed adjacency (CSC over dst nodes, or CSR over src nodes).

    Attributes
    ----------
    indptr : int32/int64 tensor [num_rows + 1], row ``i``'s edges at ``indptr[i]:indptr[i + 1]``
    indices : int32/int64 tensor [E], the other endpoint of each edge (same dtype as ``indptr``)
    eids : int tensor [E] edge id of each position, or ``None`` when positions are edge ids
    """

    indptr: torch.Tensor
    indices: torch.Tensor
    eids: Optional[torch.Tensor]

    def to(self, device) -> "Compressed":
        return Compressed(self.indptr.to(device), self.indices.to(device),
                          None if self.eids is None else self.eids.to(device))


def _narrow(t: torch.Tensor, fits: bool) -> torch.Tensor:
    return t.to(torch.int32) if fits else t.to(torch.int64)


def compress(rows: torch.Tensor, cols: torch.Tensor, num_rows: int, num_cols: int) -> Compressed:
    """Edges grouped by ``rows`` (stable: edge-id order within a row), as a :class:`Compressed`.

    One stable sort of the row ids (skipped when they are already sorted), one ``bincount``.
    """
    num_edges = rows.shape[0]
    fits = max(num_edges, num_cols, num_rows) <= _INT32_MAX
    if rows.device.type == "cpu" and num_edges >= COUNTING_MIN_EDGES and not bool((rows[1:] >= rows[:-1]).all()):
        return _counting_compress(rows, cols, num_rows, fits)
    counts = torch.bincount(rows.long(), minlength=num_rows) if num_edges else \
        torch.zeros(num_rows, dtype=torch.int64, device=rows.device)
    indptr = torch.zeros(num_rows + 1, dtype=torch.int64, device=rows.device)
    torch.cumsum(counts, 0, out=indptr[1:])
    if num_edges == 0 or bool((rows[1:] >= rows[:-1]).all()):
        return Compressed(_narrow(indptr, fits), _narrow(cols, fits), None)
    order = torch.sort(rows, stable=True).indices
    return Compressed(_narrow(indptr, fits), _narrow(cols[order], fits), _narrow(order, fits))


def row_positions(indptr: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Positions ``indptr[r] .. indptr[r + 1] - 1`` of each of ``rows`` (repeats allowed), row after row, int64:
    what a compressed layout holds for those rows, gathered in one pass (no loop over rows)."""
    indptr = indptr.long()
    starts = indptr[rows]
    sizes = indptr[rows + 1] - starts
    offsets = torch.cumsum(sizes, 0) - sizes
    return torch.arange(int(sizes.sum()), device=indptr.device) - torch.repeat_interleave(offsets - starts, sizes)


# CPU relations of at least this many edges are grouped by a counting sort (O(E), numba) instead of
# torch's sort: 10M edges in ~0.2 s instead of 0.87 s, and no int64 sort keys and order of every edge.
COUNTING_MIN_EDGES = 1 << 16


def _counting_compress(rows: torch.Tensor, cols: torch.Tensor, num_rows: int, fits: bool) -> Compressed:
    """:func:`compress` of CPU edges not sorted by row, by :func:`bgl.sources._csc_kernels.group_by_row`:
    8 B a row for the offsets (and 8 B of scratch while it runs), the other end and the edge id in 4 B
    each where they fit (else 8)."""
    from bgl.sources._csc_kernels import group_by_row

    out_type = torch.int32 if fits else torch.int64
    indptr = torch.empty(num_rows + 1, dtype=torch.int64)
    out_cols = torch.empty(rows.shape[0], dtype=out_type)
    out_eids = torch.empty(rows.shape[0], dtype=out_type)
    group_by_row(rows.contiguous().numpy(), cols.contiguous().numpy(), indptr.numpy(),
                 torch.empty(num_rows, dtype=torch.int64).numpy(), out_cols.numpy(), out_eids.numpy())
    return Compressed(_narrow(indptr, fits), out_cols, out_eids)


class Relation:
    """The edges of one canonical edge type, between ``num_src`` and ``num_dst`` nodes.

    Parameters
    ----------
    num_src, num_dst : node counts of the relation's source and destination types
    src, dst : int tensors [E] in edge-id order, or ``None`` when ``csc`` is given
    csc : a :class:`Compressed` over the dst nodes (a sampled block's own CSC, kept as given:
        zero copy); the COO is then built from it on first use
    """

    def __init__(self, num_src: int, num_dst: int, src: Optional[torch.Tensor] = None,
                 dst: Optional[torch.Tensor] = None, csc: Optional[Compressed] = None):
        self.num_src, self.num_dst = int(num_src), int(num_dst)
        self._src, self._dst = src, dst
        self._csc, self._csr = csc, None
        if src is None and csc is None:
            raise ValueError("a relation needs its COO (src, dst) or its CSC")

    @property
    def num_edges(self) -> int:
        return int(self._src.shape[0] if self._src is not None else self._csc.indices.shape[0])

    @property
    def device(self) -> torch.device:
        return (self._src if self._src is not None else self._csc.indices).device

    def coo(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(src, dst) int tensors [E] in edge-id order."""
        if self._src is None:
            csc = self._csc
            deg = csc.indptr[1:] - csc.indptr[:-1]
            dst = torch.repeat_interleave(torch.arange(self.num_dst, device=deg.device), deg.long())
            src = csc.indices.long()
            if csc.eids is not None:  # positions -> edge-id order
                order = torch.empty_like(csc.eids, dtype=torch.int64)
                order[csc.eids.long()] = torch.arange(order.shape[0], device=order.device)
                src, dst = src[order], dst[order]
            self._src, self._dst = src, dst
        return self._src, self._dst

    def csc(self) -> Compressed:
        """In-edges grouped by destination (what a reduction over in-edges reads)."""
        if self._csc is None:
            self._csc = compress(self._dst, self._src, self.num_dst, self.num_src)
        return self._csc

    def csr(self) -> Compressed:
        """Out-edges grouped by source (what the backward pass of a reduction reads)."""
        if self._csr is None:
            src, dst = self.coo()
            self._csr = compress(src, dst, self.num_src, self.num_dst)
        return self._csr

    def in_degrees(self) -> torch.Tensor:
        indptr = self.csc().indptr
        return (indptr[1:] - indptr[:-1]).long()

    def out_degrees(self) -> torch.Tensor:
        if self._src is not None and self._csr is None:
            return torch.bincount(self._src.long(), minlength=self.num_src)
        indptr = self.csr().indptr
        return (indptr[1:] - indptr[:-1]).long()

    def formats(self) -> dict[str, list[str]]:
        made = [name for name, f in (("coo", self._src), ("csr", self._csr), ("csc", self._csc)) if f is not None]
        return {"created": made, "not created": [f for f in ("coo", "csr", "csc") if f not in made]}

    def create_formats_(self) -> None:
        self.coo()
        self.csr()
        self.csc()

    def to(self, device) -> "Relation":
        rel = Relation(self.num_src, self.num_dst,
                       None if self._src is None else self._src.to(device),
                       None if self._dst is None else self._dst.to(device),
                       None if self._csc is None else self._csc.to(device))
        rel._csr = None if self._csr is None else self._csr.to(device)
        return rel

    def reversed(self) -> "Relation":
        """The relation with every edge turned around (CSC and CSR swap roles, zero copy)."""
        src, dst = self.coo()
        rel = Relation(self.num_dst, self.num_src, dst, src, self._csr)
        rel._csr = self._csc
        return rel
