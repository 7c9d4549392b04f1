"""Message passing of :class:`~bgl.dgl.heterograph.DGLGraph`: ``update_all``, ``apply_edges``,
``multi_update_all``, ``apply_nodes``, and on part of the graph ``send_and_recv`` / ``pull`` / ``push``.

A builtin message with a builtin reducer is one fused :func:`bgl.dgl.ops.spmm.message_reduce`
call (``copy_u`` + ``sum`` is a sparse-dense matmul, no E x F message); a builtin message with
a UDF reducer, or a UDF message with a builtin reducer, materialises the messages once, as DGL
does; UDFs run through :mod:`bgl.dgl.udf`.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError, is_all, not_built
from bgl.dgl.function import BinaryMessageFunction, BuiltinFunction, CopyMessageFunction, ReduceFunction
from bgl.dgl.ops.sddmm import edge_message
from bgl.dgl.ops.spmm import message_reduce
from bgl.dgl.udf import run_edge_udf, run_node_udf, run_reduce_udf

_OP_NAMES = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "dot": "dot"}


def _operands(graph, mfunc, cet):
    """(op, lhs, rhs, lhs target, rhs target) of a builtin message on relation ``cet``."""
    frames = {"u": graph._src_frames[cet[0]], "v": graph._dst_frames[cet[2]], "e": graph._edge_frames[cet]}
    names = {"u": "source node", "v": "destination node", "e": "edge"}

    def read(target, field):
        frame = frames[target]
        if field not in frame:
            raise DGLError(f"Cannot find {names[target]} feature {field!r} for relation {cet}; "
                           f"it has {list(frame)}.")
        return frame[field]

    if isinstance(mfunc, CopyMessageFunction):
        if mfunc.target == "u":
            return "copy_lhs", read("u", mfunc.in_field), None, "u", "e"
        return "copy_rhs", None, read("e", mfunc.in_field), "u", "e"
    if isinstance(mfunc, BinaryMessageFunction):
        return (_OP_NAMES[mfunc.binary_op], read(mfunc.lhs, mfunc.lhs_field), read(mfunc.rhs, mfunc.rhs_field),
                mfunc.lhs, mfunc.rhs)
    raise DGLError(f"Unknown builtin message function {mfunc!r}.")


def _replace_inf(t: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isinf(t), torch.zeros_like(t), t)


def _first_extreme(stacked: torch.Tensor, how: str) -> torch.Tensor:
    """``stacked.amax(0)`` (``how`` max) or ``amin(0)``, its gradient to the first part reaching
    it (a NaN part counts as reaching a NaN), where amax's would be split among tied parts."""
    value = stacked.amax(0) if how == "max" else stacked.amin(0)
    hit = (stacked == value) | (stacked != stacked)
    first = hit.to(torch.uint8).argmax(0, keepdim=True)  # argmax: the first of equal maxima
    return stacked.gather(0, first).squeeze(0)


class MessagePassing:
    """Mixin: DGL's message passing entry points."""

    def _reduce_relation(self, cet, mfunc, rfunc, raw: bool = False, node_ids=None, typed: bool = False) -> dict:
        """{out field: tensor [num dst nodes of cet]} of one relation (max/min keep ±inf if ``raw``;
        ``node_ids``: the dst ids a reduce UDF's ``nodes.nodes()`` reports; ``typed``: part of a
        heterograph's ``update_all`` over several relations, DGL's typed kernel)."""
        rel = self._rels[cet]
        msg_builtin, red_builtin = isinstance(mfunc, BuiltinFunction), isinstance(rfunc, BuiltinFunction)
        if red_builtin and not isinstance(rfunc, ReduceFunction):
            raise DGLError(f"{rfunc!r} is not a reduce function.")
        if msg_builtin and red_builtin:
            op, lhs, rhs, lt, rt = _operands(self, mfunc, cet)
            out = message_reduce(rel, op, rfunc.reduce_op, lhs, rhs, lt, rt, typed=typed)
        else:
            if msg_builtin:
                op, lhs, rhs, lt, rt = _operands(self, mfunc, cet)
                messages = {mfunc.out_field: edge_message(rel, op, lhs, rhs, lt, rt)}
            else:
                messages = run_edge_udf(self, rel, cet, mfunc, None, self._src_frames[cet[0]],
                                        self._dst_frames[cet[2]], self._edge_frames[cet])
            if not red_builtin:
                return run_reduce_udf(self, rel, cet[2], rfunc, messages, self._dst_frames[cet[2]], node_ids)
            if rfunc.msg_field not in messages:
                raise DGLError(f"The message function produced {list(messages)}, not the reducer's "
                               f"{rfunc.msg_field!r}.")
            out = message_reduce(rel, "copy_rhs", rfunc.reduce_op, None, messages[rfunc.msg_field], "u", "e")
        if rfunc.reduce_op in ("max", "min") and not raw:
            out = _replace_inf(out)
        return {rfunc.out_field: out}

    def _apply_and_store(self, ntype, ndata: dict, apply_node_func) -> None:
        frame = self._dst_frames[ntype]
        if apply_node_func is not None:
            merged = {**frame, **ndata}
            nodes = torch.arange(frame.num_rows, device=self.device)
            ndata = run_node_udf(self, ntype, apply_node_func, nodes, merged)
        for key, value in ndata.items():
            frame[key] = value

    def update_all(self, message_func, reduce_func, apply_node_func=None, etype=None):
        """Send a message along every edge, reduce them at every destination node, then apply
        ``apply_node_func``; results land in ``dstdata`` (DGL's semantics: 0 where a node has no
        in-edge; with several relations and builtins, the reducer also merges the relations)."""
        if len(self._rels) == 1 or etype is not None:
            cet = self.to_canonical_etype(etype)
            self._apply_and_store(cet[2], self._reduce_relation(cet, message_func, reduce_func), apply_node_func)
            return
        if not isinstance(message_func, BuiltinFunction) or not isinstance(reduce_func, BuiltinFunction):
            raise DGLError("User defined functions are not yet supported in update_all for heterogeneous graphs. "
                           "Please use multi_update_all instead.")
        if reduce_func.reduce_op == "mean":
            raise NotImplementedError("Cannot set both intra-type and inter-type reduce operators as 'mean' "
                                      "using update_all. Please use multi_update_all instead.")
        self._merge_relations({cet: (message_func, reduce_func) for cet in self._rels}, reduce_func.reduce_op,
                              apply_node_func, typed=True)

    def multi_update_all(self, etype_dict, cross_reducer, apply_node_func=None):
        """``update_all`` per relation (``{etype: (message_func, reduce_func)}``), merged across the
        relations into each node type by ``cross_reducer`` (sum / min / max / mean / stack)."""
        if cross_reducer not in ("sum", "min", "max", "mean", "stack"):
            raise DGLError(f"Invalid cross type reducer {cross_reducer!r}; use sum, min, max, mean or stack.")
        funcs = {}
        for etype, args in etype_dict.items():
            if len(args) == 3:
                raise not_built("multi_update_all with a per-relation apply function",
                                "pass apply_node_func to multi_update_all")
            funcs[self.to_canonical_etype(etype)] = args
        self._merge_relations(funcs, cross_reducer, apply_node_func)

    def _merge_relations(self, funcs: dict, cross: str, apply_node_func, typed: bool = False) -> None:
        """Each relation reduced, then merged per dst type by ``cross``.  Ties of max / min across
        relations, as DGL: ``typed`` (``update_all``: DGL's typed kernel runs the relations in
        etype order, a strict compare) the first relation's; else (``multi_update_all``) torch's
        ``max(dim=0)`` over the relations in the dict's order, as DGL's ``reduce_dict_data``."""
        per_type: dict = {}
        items = sorted(funcs.items()) if typed or cross == "stack" else funcs.items()
        for cet, (mfunc, rfunc) in items:
            raw = cross in ("max", "min") and isinstance(rfunc, ReduceFunction) and rfunc.reduce_op == cross
            per_type.setdefault(cet[2], []).append(self._reduce_relation(cet, mfunc, rfunc, raw=raw, typed=typed))
        for ntype, results in per_type.items():
            merged = {}
            for key in results[0]:
                parts = [r[key] for r in results if key in r]
                if cross == "sum":
                    value = torch.stack(parts).sum(0)
                elif cross == "mean":
                    value = torch.stack(parts).mean(0)
                elif cross == "stack":
                    value = torch.stack(parts, 1)
                elif typed:
                    value = _replace_inf(_first_extreme(torch.stack(parts), cross))
                else:
                    stacked = torch.stack(parts)
                    value = _replace_inf((stacked.max(0) if cross == "max" else stacked.min(0))[0])
                merged[key] = value
            self._apply_and_store(ntype, merged, apply_node_func)

    def apply_edges(self, func, edges=None, etype=None):
        """Compute a feature per edge (all, or ids ``edges``) into ``edata``: a builtin such as
        ``fn.u_dot_v('h', 'h', 's')`` (one fused SDDMM) or a UDF over an ``EdgeBatch``."""
        cets = list(self._rels) if etype is None and len(self._rels) > 1 else [self.to_canonical_etype(etype)]
        for cet in cets:
            rel = self._rels[cet]
            eids = None if is_all(edges) else self._edge_id_arg(edges, cet)
            if isinstance(func, BuiltinFunction):
                op, lhs, rhs, lt, rt = _operands(self, func, cet)
                result = {func.out_field: edge_message(rel, op, lhs, rhs, lt, rt, eids)}
            else:
                result = run_edge_udf(self, rel, cet, func, eids, self._src_frames[cet[0]],
                                      self._dst_frames[cet[2]], self._edge_frames[cet])
            frame = self._edge_frames[cet]
            for key, value in result.items():
                frame.set_rows(key, None if eids is None else eids, value)

    def _edge_id_arg(self, edges, cet) -> torch.Tensor:
        if isinstance(edges, tuple) and len(edges) == 2:
            return torch.as_tensor(self.edge_ids(edges[0], edges[1], etype=cet), device=self.device).long().view(-1)
        from bgl.dgl.graph_queries import _ids, check_node_ids

        eids, _ = _ids(edges, self.device)
        check_node_ids(eids, self._rels[cet].num_edges, "edge")
        return eids

    def apply_nodes(self, func, v=None, ntype=None):
        """``func(NodeBatch)`` on nodes ``v`` (all by default) of ``ntype``; results into its data."""
        nt = self.ntypes[self.get_ntype_id(ntype)] if ntype is None else ntype
        frame = {**self._src_frames, **self._dst_frames}[nt]
        nodes = torch.arange(frame.num_rows, device=self.device) if is_all(v) else \
            torch.as_tensor(v, device=self.device).long().view(-1)
        from bgl.dgl.udf import _Rows

        result = run_node_udf(self, nt, func, nodes, _Rows(frame, None if is_all(v) else nodes))
        for key, value in result.items():
            frame.set_rows(key, None if is_all(v) else nodes, value)

    def send_and_recv(self, edges, message_func, reduce_func, apply_node_func=None, etype=None):
        """Send messages along ``edges`` only (edge ids, a ``(u, v)`` pair of node ids, or ``ALL``), reduce
        them at the nodes they reach and apply ``apply_node_func`` there; other nodes keep their data (a new
        field is 0 there), as DGL's.  Parallel or repeated edges each send a message."""
        cet = self.to_canonical_etype(etype)
        eids = torch.arange(self._rels[cet].num_edges, device=self.device) if is_all(edges) else \
            self._edge_id_arg(edges, cet)
        if eids.numel() == 0:
            return
        src, dst = self._rels[cet].coo()
        self._recv(cet, src[eids], dst[eids], eids, None, message_func, reduce_func, apply_node_func)

    def pull(self, v, message_func, reduce_func, apply_node_func=None, etype=None):
        """Reduce the messages of every in-edge of nodes ``v`` into ``v`` (apply ``apply_node_func`` on all of
        ``v``); a node of ``v`` without in-edges gets 0 from sum / mean / a UDF reducer and -inf / inf from
        max / min (0 when no node of ``v`` has an in-edge), as DGL's."""
        from bgl.dgl.graph_queries import _ids, check_node_ids

        cet = self.to_canonical_etype(etype)
        nodes, _ = _ids(v, self.device)
        if nodes.numel() == 0:
            return
        check_node_ids(nodes, self._rels[cet].num_dst, "destination node")
        src, dst, eids = self.in_edges(nodes, form="all", etype=cet)
        self._recv(cet, src.long(), dst.long(), eids.long(), nodes, message_func, reduce_func, apply_node_func)

    def push(self, u, message_func, reduce_func, apply_node_func=None, etype=None):
        """:meth:`send_and_recv` over the out-edges of nodes ``u``."""
        eids = self.out_edges(u, form="eid", etype=etype)
        self.send_and_recv(eids, message_func, reduce_func, apply_node_func, etype=etype)

    def _recv(self, cet, src, dst, eids, receivers, mfunc, rfunc, afunc) -> None:
        """Message passing on the compute block of edges ``eids`` (DGL's compute graph: its source nodes
        the edges' sources, its destinations ``receivers`` or the edges' destinations; fields gathered when
        read), results written into the receiving rows of this graph's destination frame."""
        from bgl.dgl.relation import Relation

        srcs, local_src = torch.unique(src, return_inverse=True)
        if receivers is None:
            dsts, local_dst = torch.unique(dst, return_inverse=True)
        else:
            dsts = torch.unique(receivers)
            local_dst = torch.searchsorted(dsts, dst)
        rel = Relation(srcs.shape[0], dsts.shape[0], local_src, local_dst)
        block = type(self)({cet: rel}, {cet[0]: srcs.shape[0]}, {cet[2]: dsts.shape[0]}, idtype=self.idtype,
                           src_frames={cet[0]: self._src_frames[cet[0]].rows_on_read(srcs)},
                           dst_frames={cet[2]: self._dst_frames[cet[2]].rows_on_read(dsts)},
                           edge_frames={cet: self._edge_frames[cet].rows_on_read(eids)})
        # DGL's reduction on the compute block keeps max / min's -inf / inf, except on a block without edges
        # (a UDF's nodes.nodes() reports this graph's node ids, as DGL's)
        ndata = block._reduce_relation(cet, mfunc, rfunc, raw=eids.numel() > 0, node_ids=dsts)
        if afunc is not None:
            ndata = run_node_udf(block, cet[2], afunc, dsts, {**block._dst_frames[cet[2]], **ndata})
        frame = self._dst_frames[cet[2]]
        for key, value in ndata.items():
            frame.set_rows(key, dsts, value)
