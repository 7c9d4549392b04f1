"""User-defined message / reduce / apply functions: DGL's ``EdgeBatch`` and ``NodeBatch``.

A reduce UDF sees a ``mailbox`` of shape [nodes, degree, *]: the dst nodes are bucketed by
in-degree and the UDF runs once per distinct degree (never once per node), as DGL does; within
a node's mailbox the messages are in edge-id order.
"""
from __future__ import annotations

from collections.abc import Mapping

import torch

from bgl.dgl.base import DGLError


class _Rows(Mapping):
    """Lazy ``frame[key][ids]`` (one gather per field actually read)."""

    def __init__(self, frame: Mapping, ids):
        self._frame, self._ids, self._cache = frame, ids, {}

    def __getitem__(self, key):
        if key not in self._cache:
            value = self._frame[key]
            self._cache[key] = value if self._ids is None else value.index_select(0, self._ids.to(value.device))
        return self._cache[key]

    def __iter__(self):
        return iter(self._frame)

    def __len__(self):
        return len(self._frame)


class EdgeBatch:
    """The edges a message / edge UDF runs on: ``src``, ``dst``, ``data`` field mappings."""

    def __init__(self, graph, eids, etype, src_ids, dst_ids, src_frame, dst_frame, edge_frame):
        self._graph, self._eid, self._etype = graph, eids, etype
        self._src_ids, self._dst_ids = src_ids, dst_ids
        self.src = _Rows(src_frame, src_ids)
        self.dst = _Rows(dst_frame, dst_ids)
        self.data = _Rows(edge_frame, None if eids is None else eids)

    def edges(self):
        """(src ids, dst ids, edge ids) of the batch."""
        eid = self._eid if self._eid is not None else torch.arange(self._src_ids.shape[0], device=self._src_ids.device)
        return self._src_ids, self._dst_ids, eid

    def batch_size(self) -> int:
        return int(self._src_ids.shape[0])

    def __len__(self) -> int:
        return self.batch_size()

    @property
    def canonical_etype(self):
        return self._etype


class NodeBatch:
    """The nodes a reduce / apply UDF runs on: ``data`` (their features), ``mailbox`` (reduce)."""

    def __init__(self, graph, nodes: torch.Tensor, ntype: str, data: Mapping, mailbox=None):
        self._graph, self._nodes, self._ntype = graph, nodes, ntype
        self.data, self.mailbox = data, mailbox

    def nodes(self) -> torch.Tensor:
        return self._nodes

    def batch_size(self) -> int:
        return int(self._nodes.shape[0])

    def __len__(self) -> int:
        return self.batch_size()

    @property
    def ntype(self):
        return self._ntype


def _check_result(result, rows: int, who: str) -> dict:
    if not isinstance(result, Mapping):
        raise DGLError(f"The {who} function must return a dict of tensors, got {type(result).__name__}.")
    for key, value in result.items():
        if not isinstance(value, torch.Tensor) or value.shape[0] != rows:
            raise DGLError(f"The {who} function returned {key!r} with {getattr(value, 'shape', value)}, "
                           f"expected a tensor of {rows} rows.")
    return dict(result)


def run_edge_udf(graph, rel, etype, func, eids, src_frame, dst_frame, edge_frame) -> dict:
    """``func(EdgeBatch)`` over edges ``eids`` (None: all, in edge-id order)."""
    src, dst = rel.coo()
    if eids is not None:
        src, dst = src.index_select(0, eids), dst.index_select(0, eids)
    batch = EdgeBatch(graph, eids, etype, src.long(), dst.long(), src_frame, dst_frame, edge_frame)
    return _check_result(func(batch), int(src.shape[0]), "message")


def run_reduce_udf(graph, rel, ntype, func, messages: dict, dst_frame, node_ids=None) -> dict:
    """``func(NodeBatch)`` once per distinct in-degree > 0; zero-in-degree nodes get zeros.  ``node_ids``:
    what ``nodes.nodes()`` reports per dst node (default its position)."""
    csc = rel.csc()
    indptr = csc.indptr.long()
    deg = indptr[1:] - indptr[:-1]
    out: dict[str, torch.Tensor] = {}
    for d in torch.unique(deg[deg > 0]).tolist():
        nodes = (deg == d).nonzero().view(-1)
        pos = indptr[nodes].unsqueeze(1) + torch.arange(d, device=nodes.device)
        eids = pos if csc.eids is None else csc.eids.long()[pos]
        mailbox = {k: v[eids] for k, v in messages.items()}
        batch = NodeBatch(graph, nodes if node_ids is None else node_ids[nodes], ntype, _Rows(dst_frame, nodes),
                          mailbox)
        result = _check_result(func(batch), int(nodes.shape[0]), "reduce")
        for key, value in result.items():
            if key not in out:
                out[key] = torch.zeros((rel.num_dst, *value.shape[1:]), dtype=value.dtype, device=value.device)
            out[key] = out[key].index_copy(0, nodes, value)
    return out


def run_node_udf(graph, ntype, func, nodes: torch.Tensor, data: Mapping) -> dict:
    """``func(NodeBatch)`` over ``nodes`` with ``data`` (an apply function)."""
    return _check_result(func(NodeBatch(graph, nodes, ntype, data)), int(nodes.shape[0]), "apply")
