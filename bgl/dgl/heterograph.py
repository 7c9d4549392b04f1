"""``DGLGraph``: DGL's graph object (graphs, heterographs and blocks) in plain PyTorch.

One class for all three, as DGL has it.  A graph keeps, per canonical edge type, a
:class:`~bgl.dgl.relation.Relation` (COO in edge-id order, CSC / CSR cached on first use), and
per node / edge type a :class:`~bgl.dgl.frames.Frame` of features.  A block (``is_block``) has
separate source and destination node sets of its own counts; a graph whose relations join
different types can also be viewed one relation at a time (``g[etype]``), sharing the frames.
Structure queries live in :mod:`bgl.dgl.graph_queries`, message passing in
:mod:`bgl.dgl.message_passing`.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.frames import Frame
from bgl.dgl.graph_queries import GraphQueries
from bgl.dgl.message_passing import MessagePassing
from bgl.dgl.relation import Relation
from bgl.dgl.views import DataView, EdgeSpace, NodeSpace


class DGLGraph(GraphQueries, MessagePassing):
    """A graph of typed nodes and edges (DGL's ``DGLGraph``; build it with :func:`bgl.dgl.graph`,
    :func:`bgl.dgl.heterograph` or :func:`bgl.dgl.create_block`).

    Parameters
    ----------
    relations : {canonical etype (src type, relation, dst type): Relation}
    num_src : {node type: count} of the source side (every node type of a graph)
    num_dst : {node type: count} of a block's destination side; None for a graph
    idtype : torch.int32 / torch.int64, the dtype of the ids the graph hands out
    src_frames, dst_frames, edge_frames : optional frames to share (slices, scopes)
    """

    def __init__(self, relations: dict, num_src: dict, num_dst: Optional[dict] = None,
                 idtype: torch.dtype = torch.int64, src_frames: Optional[dict] = None,
                 dst_frames: Optional[dict] = None, edge_frames: Optional[dict] = None,
                 srctypes: Optional[list] = None, dsttypes: Optional[list] = None):
        self._is_block = num_dst is not None
        self._rels = dict(sorted(relations.items()))
        self._idtype = idtype
        if self._is_block:
            self._srctypes, self._dsttypes = sorted(num_src), sorted(num_dst)
            self._num_src, self._num_dst = dict(num_src), dict(num_dst)
        else:
            self._srctypes = srctypes if srctypes is not None else sorted(num_src)
            self._dsttypes = dsttypes if dsttypes is not None else sorted(num_src)
            self._num_src = self._num_dst = dict(num_src)
        self._src_frames = src_frames if src_frames is not None else \
            {nt: Frame(self._num_src[nt]) for nt in self._srctypes}
        if dst_frames is not None:
            self._dst_frames = dst_frames
        elif self._is_block:
            self._dst_frames = {nt: Frame(self._num_dst[nt]) for nt in self._dsttypes}
        else:
            self._dst_frames = self._src_frames if srctypes is None else \
                {nt: Frame(self._num_dst[nt]) for nt in self._dsttypes}
        self._edge_frames = edge_frames if edge_frames is not None else \
            {cet: Frame(rel.num_edges, "edges") for cet, rel in self._rels.items()}
        # a batch of graphs (bgl.dgl.batching): {ntype: nodes per graph}, {canonical etype: edges per graph}
        self._batch_num_nodes: Optional[dict] = None
        self._batch_num_edges: Optional[dict] = None

    # ----------------------------------------------------------------- types
    @property
    def is_block(self) -> bool:
        return self._is_block

    @property
    def ntypes(self) -> list:
        if self._is_block:
            return self._srctypes + self._dsttypes
        return sorted(set(self._srctypes) | set(self._dsttypes))

    @property
    def srctypes(self) -> list:
        return list(self._srctypes)

    @property
    def dsttypes(self) -> list:
        return list(self._dsttypes)

    @property
    def canonical_etypes(self) -> list:
        return list(self._rels)

    @property
    def etypes(self) -> list:
        return [cet[1] for cet in self._rels]

    @property
    def is_homogeneous(self) -> bool:
        return len(set(self.ntypes)) == 1 and len(self._rels) == 1

    @property
    def is_unibipartite(self) -> bool:
        return self._is_block or not set(self._srctypes) & set(self._dsttypes)

    @property
    def idtype(self) -> torch.dtype:
        return self._idtype

    @property
    def device(self) -> torch.device:
        rel = next(iter(self._rels.values()), None)
        return rel.device if rel is not None else torch.device("cpu")

    def to_canonical_etype(self, etype) -> tuple:
        """The (src type, relation, dst type) of ``etype`` (a name or a triple); DGLError when unknown."""
        if etype is None:
            if len(self._rels) != 1:
                raise DGLError("Edge type name must be specified if there are more than one edge types.")
            return next(iter(self._rels))
        if isinstance(etype, tuple):
            if etype not in self._rels:
                raise DGLError(f'Edge type "{etype}" does not exist.')
            return etype
        found = [cet for cet in self._rels if cet[1] == etype]
        if not found:
            raise DGLError(f'Edge type "{etype}" does not exist.')
        if len(found) > 1:
            raise DGLError(f'Edge type "{etype}" is ambiguous. Please use canonical edge type in the form of '
                           "(srctype, etype, dsttype)")
        return found[0]

    def get_etype_id(self, etype) -> int:
        return list(self._rels).index(self.to_canonical_etype(etype))

    def get_ntype_id(self, ntype) -> int:
        types = self.ntypes
        if ntype is None:
            if len(set(types)) != 1:
                raise DGLError("Node type name must be specified if there are more than one node types.")
            return 0
        if ntype not in types:
            raise DGLError(f'Node type "{ntype}" does not exist.')
        return types.index(ntype)

    def _relation(self, etype) -> Relation:
        return self._rels[self.to_canonical_etype(etype)]

    def _count(self, counts: dict, ntype, side: str) -> int:
        if ntype is None:
            return sum(counts.values())
        if ntype not in counts:
            raise DGLError(f'Node type "{ntype}" does not exist{" among the " + side + " types" if side else ""}.')
        return counts[ntype]

    # ----------------------------------------------------------------- counts
    def num_nodes(self, ntype=None) -> int:
        if self._is_block:
            return self.num_src_nodes(ntype) + self.num_dst_nodes(ntype)
        return self._count({**self._num_src, **self._num_dst}, ntype, "")

    def num_src_nodes(self, ntype=None) -> int:
        return self._count({nt: self._num_src[nt] for nt in self._srctypes}, ntype, "source")

    def num_dst_nodes(self, ntype=None) -> int:
        return self._count({nt: self._num_dst[nt] for nt in self._dsttypes}, ntype, "destination")

    def num_edges(self, etype=None) -> int:
        if etype is None:
            return sum(rel.num_edges for rel in self._rels.values())
        return self._relation(etype).num_edges

    number_of_nodes, number_of_edges = num_nodes, num_edges
    number_of_src_nodes, number_of_dst_nodes = num_src_nodes, num_dst_nodes

    # ----------------------------------------------------------------- data
    def _node_frames(self) -> dict:
        if self._is_block:
            raise DGLError("A block's source and destination nodes are separate sets: use srcdata / dstdata "
                           "(or srcnodes[ntype].data / dstnodes[ntype].data) instead of ndata / nodes.")
        return {**self._src_frames, **self._dst_frames}

    @property
    def ndata(self) -> DataView:
        return DataView(self._node_frames())

    @property
    def srcdata(self) -> DataView:
        return DataView(self._src_frames)

    @property
    def dstdata(self) -> DataView:
        return DataView(self._dst_frames)

    @property
    def edata(self) -> DataView:
        return DataView(self._edge_frames)

    @property
    def nodes(self) -> NodeSpace:
        return NodeSpace(self, "all")

    @property
    def srcnodes(self) -> NodeSpace:
        return NodeSpace(self, "src")

    @property
    def dstnodes(self) -> NodeSpace:
        return NodeSpace(self, "dst")

    @property
    def edges(self) -> EdgeSpace:
        return EdgeSpace(self)

    def _all_frames(self) -> list:
        seen, out = set(), []
        for frame in [*self._src_frames.values(), *self._dst_frames.values(), *self._edge_frames.values()]:
            if id(frame) not in seen:
                seen.add(id(frame))
                out.append(frame)
        return out

    @contextmanager
    def local_scope(self):
        """Writes of new or replaced features inside the ``with`` are undone at its end; in-place
        edits of existing tensors stay (DGL's semantics).  Costs a dict copy per type."""
        frames = self._all_frames()
        saved = [f.snapshot() for f in frames]
        for frame, columns in zip(frames, saved):
            frame.restore(dict(columns))
        try:
            yield self
        finally:
            for frame, columns in zip(frames, saved):
                frame.restore(columns)

    # ----------------------------------------------------------------- slicing
    def __getitem__(self, key) -> "DGLGraph":
        """The graph (or block) of one relation, sharing this graph's frames (writes show in both)."""
        cet = self.to_canonical_etype(key)
        src_t, _, dst_t = cet
        rels = {cet: self._rels[cet]}
        edges = {cet: self._edge_frames[cet]}
        if self._is_block:
            return DGLGraph(rels, {src_t: self._num_src[src_t]}, {dst_t: self._num_dst[dst_t]}, self._idtype,
                            {src_t: self._src_frames[src_t]}, {dst_t: self._dst_frames[dst_t]}, edges)
        if src_t == dst_t:
            return DGLGraph(rels, {src_t: self._num_src[src_t]}, None, self._idtype,
                            {src_t: self._src_frames[src_t]}, None, edges)
        return DGLGraph(rels, {src_t: self._num_src[src_t], dst_t: self._num_dst[dst_t]}, None, self._idtype,
                        {src_t: self._src_frames[src_t]}, {dst_t: self._dst_frames[dst_t]}, edges,
                        srctypes=[src_t], dsttypes=[dst_t])

    # ----------------------------------------------------------------- device, formats
    def to(self, device, **kwargs) -> "DGLGraph":
        """A copy of the structure and every feature on ``device`` (DGL's ``g.to``)."""
        moved = {}

        def move(frames: dict) -> dict:
            out = {}
            for key, frame in frames.items():
                if id(frame) not in moved:
                    moved[id(frame)] = frame.to(device, **kwargs)
                out[key] = moved[id(frame)]
            return out

        src = move(self._src_frames)
        dst = move(self._dst_frames)
        return self._rebuild({cet: rel.to(device) for cet, rel in self._rels.items()}, src, dst,
                             move(self._edge_frames))

    def _rebuild(self, rels, src_frames, dst_frames, edge_frames, idtype=None) -> "DGLGraph":
        plain = not self._is_block and self._srctypes == self._dsttypes and self._src_frames is self._dst_frames
        num_src = self._num_src if plain else {**self._num_src, **({} if self._is_block else self._num_dst)}
        out = DGLGraph(rels, num_src, self._num_dst if self._is_block else None, idtype or self._idtype,
                       src_frames, None if plain else dst_frames, edge_frames,
                       None if plain or self._is_block else self._srctypes,
                       None if plain or self._is_block else self._dsttypes)
        out._batch_num_nodes, out._batch_num_edges = self._batch_num_nodes, self._batch_num_edges  # same structure
        return out

    # ----------------------------------------------------------------- a batch of graphs (bgl/dgl/batching.py)
    @property
    def batch_size(self) -> int:
        """How many graphs ``dgl.batch`` joined into this one (1 for a graph never batched)."""
        return 1 if self._batch_num_nodes is None else int(next(iter(self._batch_num_nodes.values())).shape[0])

    def batch_num_nodes(self, ntype=None) -> torch.Tensor:
        """Nodes of ``ntype`` in each graph of the batch (int64 [batch_size])."""
        nt = self.ntypes[self.get_ntype_id(ntype)]
        if self._batch_num_nodes is None:
            return torch.tensor([self.num_nodes(nt)], dtype=torch.int64, device=self.device)
        return self._batch_num_nodes[nt]

    def batch_num_edges(self, etype=None) -> torch.Tensor:
        """Edges of ``etype`` in each graph of the batch (int64 [batch_size])."""
        cet = self.to_canonical_etype(etype)
        if self._batch_num_edges is None:
            return torch.tensor([self.num_edges(cet)], dtype=torch.int64, device=self.device)
        return self._batch_num_edges[cet]

    def set_batch_num_nodes(self, val) -> None:
        """Mark the graph as a batch with ``val`` nodes per graph (a tensor, or ``{ntype: tensor}``)."""
        counts = val if isinstance(val, dict) else {self.ntypes[self.get_ntype_id(None)]: val}
        self._batch_num_nodes = {nt: torch.as_tensor(counts[nt], dtype=torch.int64) for nt in self.ntypes}

    def set_batch_num_edges(self, val) -> None:
        """Mark the graph as a batch with ``val`` edges per graph (a tensor, or ``{etype: tensor}``)."""
        counts = val if isinstance(val, dict) else {self.to_canonical_etype(None): val}
        self._batch_num_edges = {self.to_canonical_etype(c): torch.as_tensor(n, dtype=torch.int64)
                                 for c, n in counts.items()}

    def cpu(self) -> "DGLGraph":
        return self.to("cpu")

    def _with_idtype(self, idtype) -> "DGLGraph":
        if idtype == self._idtype:
            return self
        rels = {}
        for cet, rel in self._rels.items():
            src, dst = rel.coo()
            rels[cet] = Relation(rel.num_src, rel.num_dst, src.to(idtype), dst.to(idtype))
        return self._rebuild(rels, self._src_frames, self._dst_frames, self._edge_frames, idtype)

    def int(self) -> "DGLGraph":
        """The graph with int32 ids (features shared)."""
        return self._with_idtype(torch.int32)

    def long(self) -> "DGLGraph":
        """The graph with int64 ids (features shared)."""
        return self._with_idtype(torch.int64)

    def astype(self, idtype: torch.dtype) -> "DGLGraph":
        """The graph with ``idtype`` ids (``torch.int32`` / ``torch.int64``; features shared)."""
        if idtype not in (torch.int32, torch.int64):
            raise DGLError(f"Expect idtype to be torch.int32 or torch.int64, got {idtype}.")
        return self._with_idtype(idtype)

    def formats(self, formats=None):
        """``{"created": [...], "not created": [...]}`` of the first relation (no argument); with
        ``formats``, this same graph (DGL restricts the formats; bgl builds each on demand)."""
        if formats is None:
            rel = next(iter(self._rels.values()))
            return rel.formats()
        return self

    def create_formats_(self) -> None:
        """Build COO, CSR and CSC of every relation now (before forking workers, as in DGL)."""
        for rel in self._rels.values():
            rel.create_formats_()

    def __repr__(self) -> str:
        if self.is_homogeneous and not self._is_block:
            return f"Graph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()})"
        if self._is_block and len(self._rels) == 1 and len(self._srctypes) == 1:
            return (f"Block(num_src_nodes={self.num_src_nodes()}, num_dst_nodes={self.num_dst_nodes()}, "
                    f"num_edges={self.num_edges()})")
        kind = "Block" if self._is_block else "Graph"
        return (f"{kind}(num_src_nodes={self._num_src}, num_dst_nodes={self._num_dst}, "
                f"num_edges={ {cet: rel.num_edges for cet, rel in self._rels.items()} })")
