"""DGL's generalized SDDMM: one value per edge from its source, destination and edge features.

The result is E x F by nature; the backward pass keeps only the operands and the COO index
arrays (no gathered copies), a chunk of edges at a time (:mod:`.edge_map`).
"""
from __future__ import annotations

from typing import Optional

import torch

from bgl.dgl.base import DGLError
from bgl.dgl.ops.edge_map import OPS, EdgeOpSum
from bgl.dgl.ops.operands import Operands, check_rows
from bgl.dgl.relation import Relation

TARGETS = {"u": "u", "src": "u", "v": "v", "dst": "v", "e": "e", "edge": "e"}


def edge_message(rel: Relation, op: str, lhs: Optional[torch.Tensor], rhs: Optional[torch.Tensor],
                 lhs_target: str = "u", rhs_target: str = "v", eids: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``op(lhs, rhs)`` for every edge (or only edges ``eids``), rows in edge-id order.

    Parameters
    ----------
    rel : the relation; op : add/sub/mul/div/dot/copy_lhs/copy_rhs
    lhs, rhs : tensors [rows, *feature] on ``"u"`` (source), ``"v"`` (destination) or ``"e"``
    eids : optional int tensor [k] of edges to compute (edge data is then read at those rows)

    Returns
    -------
    tensor [E or k, *broadcast feature shape]
    """
    if op not in OPS:
        raise DGLError(f"Binary operator {op!r} is not supported; use one of {OPS}.")
    lt, rt = TARGETS.get(lhs_target), TARGETS.get(rhs_target)
    if lt is None or rt is None:
        raise DGLError(f"Target must be one of u/v/e, got {lhs_target!r} and {rhs_target!r}.")
    src, dst = rel.coo()
    counts = {"u": rel.num_src, "v": rel.num_dst, "e": rel.num_edges}
    names = {"u": "source node", "v": "destination node", "e": "edge"}
    for data, target in ((lhs, lt), (rhs, rt)):
        if data is not None:
            check_rows(data, counts[target], names[target])
    if eids is None:
        index = {"u": src, "v": dst, "e": None}
        num = rel.num_edges
    else:
        eids = eids.to(src.device).long()
        index = {"u": src.index_select(0, eids), "v": dst.index_select(0, eids), "e": eids}
        num = int(eids.shape[0])
    ops = Operands(op, lhs, rhs)
    out = EdgeOpSum.apply(op, ops.lhs, ops.rhs, index[lt], index[rt], None, num, 0, ops.out_shape)
    return ops.finish(out)
