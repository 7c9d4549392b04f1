"""Structure queries of :class:`~bgl.dgl.heterograph.DGLGraph`: degrees, edge lists, lookups.

Every query is vectorised over its ids (sorts, searches, bincounts over the relation's COO or
cached CSC / CSR); none loops over nodes or edges in Python.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError, is_all
from bgl.dgl.relation import row_positions


def _ids(ids, device) -> tuple[torch.Tensor, bool]:
    """(int64 tensor of ``ids``, whether ``ids`` was one int)."""
    if isinstance(ids, int) or (isinstance(ids, torch.Tensor) and ids.dim() == 0):
        return torch.tensor([int(ids)], device=device), True
    return torch.as_tensor(ids, device=device).long().view(-1), False


def check_node_ids(ids: torch.Tensor, count: int, what: str = "node") -> None:
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= count):
        bad = ids[(ids < 0) | (ids >= count)][0]
        raise DGLError(f"Expect all {what} IDs to be in [0, {count}), got {int(bad)}.")


class GraphQueries:
    """Mixin: the structure queries DGL's training and inference code calls."""

    def in_degrees(self, v=None, etype=None):
        """In-degree of dst nodes ``v`` (all by default) in ``etype``: a tensor of the graph's
        idtype, or an int for one node."""
        rel = self._relation(etype)
        deg = rel.in_degrees()
        return self._pick(deg, v, rel.num_dst)

    def out_degrees(self, u=None, etype=None):
        """Out-degree of src nodes ``u`` (all by default) in ``etype`` (tensor, or int for one)."""
        rel = self._relation(etype)
        return self._pick(rel.out_degrees(), u, rel.num_src)

    @property
    def is_multigraph(self) -> bool:
        """True when some relation has two edges with the same end nodes (one sort of each relation's
        ``src * num_dst + dst`` keys)."""
        for rel in self._rels.values():
            if rel.num_edges > 1:
                src, dst = rel.coo()
                keys = torch.sort(src.long() * max(rel.num_dst, 1) + dst.long()).values
                if bool((keys[1:] == keys[:-1]).any()):
                    return True
        return False

    def _pick(self, values: torch.Tensor, ids, count: int):
        if is_all(ids):
            return values.to(self.idtype)
        idx, single = _ids(ids, values.device)
        check_node_ids(idx, count)
        out = values[idx].to(self.idtype)
        return int(out[0]) if single else out

    def all_edges(self, form="uv", order="eid", etype=None):
        """Every edge: ``form`` "uv" -> (src, dst), "eid" -> ids, "all" -> (src, dst, eid);
        ``order`` "eid" (edge-id order) or "srcdst" (sorted by src, then dst)."""
        if form not in ("uv", "eid", "all"):
            raise DGLError(f'Invalid form: {form!r}. Must be "all", "uv" or "eid".')
        if order not in ("eid", "srcdst"):
            raise DGLError(f'Invalid order: {order!r}. Must be "eid" or "srcdst".')
        rel = self._relation(etype)
        src, dst = rel.coo()
        eid = torch.arange(rel.num_edges, device=src.device, dtype=self.idtype)
        if order == "srcdst" and rel.num_edges:
            key = src.long() * max(rel.num_dst, 1) + dst.long()
            perm = torch.sort(key, stable=True).indices
            src, dst, eid = src[perm], dst[perm], eid[perm]
        return self._form(form, src.to(self.idtype), dst.to(self.idtype), eid)

    @staticmethod
    def _form(form, src, dst, eid):
        if form == "uv":
            return src, dst
        if form == "eid":
            return eid
        return src, dst, eid

    def find_edges(self, eid, etype=None):
        """(src, dst) of the edges ``eid``; DGLError naming an id out of range."""
        rel = self._relation(etype)
        src, dst = rel.coo()
        idx, _ = _ids(eid, src.device)
        check_node_ids(idx, rel.num_edges, "edge")
        return src[idx].to(self.idtype), dst[idx].to(self.idtype)

    def in_edges(self, v, form="uv", etype=None):
        """Edges into the dst nodes ``v`` (edge-id order), in ``form``."""
        return self._edges_at(v, form, etype, incoming=True)

    def out_edges(self, u, form="uv", etype=None):
        """Edges out of the src nodes ``u`` (edge-id order), in ``form``."""
        return self._edges_at(u, form, etype, incoming=False)

    def _edges_at(self, nodes, form, etype, incoming: bool):
        """Edges at ``nodes`` as DGL lists them: node after node (in the given order), each
        node's edges in edge-id order (a range of the cached CSC / CSR per node)."""
        rel = self._relation(etype)
        adj = rel.csc() if incoming else rel.csr()
        count = rel.num_dst if incoming else rel.num_src
        idx = torch.arange(count, device=rel.device) if is_all(nodes) else _ids(nodes, rel.device)[0]
        check_node_ids(idx, count)
        pos = row_positions(adj.indptr, idx)
        eid = pos if adj.eids is None else adj.eids.long()[pos]
        src, dst = rel.coo()
        return self._form(form, src[eid].to(self.idtype), dst[eid].to(self.idtype), eid.to(self.idtype))

    def predecessors(self, v, etype=None):
        """Src nodes of the in-edges of ``v`` (one per edge, as DGL)."""
        return self.in_edges(v, etype=etype)[0]

    def successors(self, v, etype=None):
        """Dst nodes of the out-edges of ``v`` (one per edge, as DGL)."""
        return self.out_edges(v, etype=etype)[1]

    def _pair_lookup(self, u, v, etype):
        """(edge id or -1 for each pair, whether the input was one pair), via a search in the CSR."""
        rel = self._relation(etype)
        csr = rel.csr()
        us, single = _ids(u, csr.indptr.device)
        vs, _ = _ids(v, csr.indptr.device)
        if us.shape[0] == 1 and vs.shape[0] > 1:
            us = us.expand(vs.shape[0])
        if vs.shape[0] == 1 and us.shape[0] > 1:
            vs = vs.expand(us.shape[0])
        if us.shape[0] != vs.shape[0]:
            raise DGLError(f"u and v must have the same length, got {us.shape[0]} and {vs.shape[0]}.")
        check_node_ids(us, rel.num_src, "source node")
        check_node_ids(vs, rel.num_dst, "destination node")
        # one sorted key per edge (src, dst); searched once per pair
        src, dst = rel.coo()
        keys = src.long() * max(rel.num_dst, 1) + dst.long()
        sorted_keys, order = torch.sort(keys, stable=True)
        want = us * max(rel.num_dst, 1) + vs
        pos = torch.searchsorted(sorted_keys, want).clamp(max=max(rel.num_edges - 1, 0))
        found = sorted_keys[pos] == want if rel.num_edges else torch.zeros_like(want, dtype=torch.bool)
        eid = torch.where(found, order[pos] if rel.num_edges else want, torch.full_like(want, -1))
        return eid, single

    def has_edges_between(self, u, v, etype=None):
        """Whether an edge u -> v exists, per pair (bool tensor, or bool for one pair)."""
        eid, single = self._pair_lookup(u, v, etype)
        found = eid >= 0
        return bool(found[0]) if single else found

    has_edge_between = has_edges_between

    def edge_ids(self, u, v, return_uv=False, etype=None):
        """Id of the edge u -> v per pair (the smallest id among parallel edges); DGLError when one
        pair has no edge."""
        if return_uv:
            from bgl.dgl.base import not_built

            raise not_built("edge_ids(return_uv=True)", "use in_edges / out_edges with form='all'")
        eid, single = self._pair_lookup(u, v, etype)
        if bool((eid < 0).any()):
            i = int((eid < 0).nonzero()[0])
            raise DGLError(f"Trying to find the edge id of a non-existing edge (pair {i}).")
        return int(eid[0]) if single else eid.to(self.idtype)

    def adj_tensors(self, fmt: str, etype=None):
        """The relation's adjacency as DGL hands it out: ``"coo"`` -> (src, dst); ``"csr"`` /
        ``"csc"`` -> (indptr, indices, edge ids), the cached arrays themselves where they already
        hold the graph's idtype (built on first use; what bgl's loader reads from a graph)."""
        rel = self._relation(etype)
        if fmt == "coo":
            src, dst = rel.coo()
            return src.to(self.idtype), dst.to(self.idtype)
        if fmt not in ("csr", "csc"):
            raise DGLError(f'Invalid format: {fmt!r}. Must be "coo", "csr" or "csc".')
        adj = rel.csr() if fmt == "csr" else rel.csc()
        eids = torch.arange(adj.indices.shape[0], device=adj.indices.device) if adj.eids is None else adj.eids
        return adj.indptr.to(self.idtype), adj.indices.to(self.idtype), eids.to(self.idtype)

    def adj_external(self, transpose: bool = False, ctx=None, scipy_fmt=None, etype=None):
        """The relation's adjacency, source rows by destination columns (``transpose``: the other way), one
        entry of 1 per edge in edge-id order: a torch sparse COO tensor, or with ``scipy_fmt`` ("csr" / "coo")
        a SciPy matrix, as DGL's ``adj_external``."""
        rel = self._relation(etype)
        src, dst = rel.coo()
        rows, cols = (dst, src) if transpose else (src, dst)
        shape = (rel.num_dst, rel.num_src) if transpose else (rel.num_src, rel.num_dst)
        if scipy_fmt is None:
            out = torch.sparse_coo_tensor(torch.stack([rows.long(), cols.long()]),
                                          torch.ones(rows.shape[0], device=rows.device), shape)
            return out if ctx is None else out.to(ctx)
        if scipy_fmt not in ("csr", "coo"):
            raise DGLError(f"Invalid format: {scipy_fmt!r}. Must be 'csr' or 'coo'.")
        try:
            import scipy.sparse as sp
        except ImportError:
            raise DGLError("adj_external(scipy_fmt=...) needs SciPy (pip install scipy)") from None
        import numpy as np

        matrix = sp.coo_matrix((np.ones(rows.shape[0], np.int64), (rows.cpu().numpy(), cols.cpu().numpy())), shape=shape)
        return matrix.tocsr() if scipy_fmt == "csr" else matrix

    def adj(self, etype=None, eweight_name=None):
        """The relation's adjacency as a :class:`bgl.dgl.sparse.SparseMatrix` [num src, num dst], one nonzero
        per edge in edge-id order (parallel edges kept): value 1.0, or the edge field ``eweight_name``."""
        from bgl.dgl.sparse import spmatrix

        cet = self.to_canonical_etype(etype)
        src, dst = self.edges(etype=cet, order="eid")
        val = None if eweight_name is None else self.edges[cet].data[eweight_name]
        return spmatrix(torch.stack([src, dst]), val=val, shape=(self.num_nodes(cet[0]), self.num_nodes(cet[2])))

    def adjacency_matrix(self, etype=None):
        """``adj(etype)``: DGL 2.1's older name of it."""
        return self.adj(etype)

    def has_nodes(self, vid, ntype=None):
        """Whether each id is a node of ``ntype``."""
        idx, single = _ids(vid, self.device)
        found = (idx >= 0) & (idx < self.num_nodes(ntype))
        return bool(found[0]) if single else found
