"""What travels between the loader's stages: :class:`MiniBatch`, packed for cheap process hops.

When a minibatch crosses a process boundary its blocks' integer arrays are
packed into ONE int64 tensor, so torch's queue reduction moves one
shared-memory segment (plus one for features and one for labels) per batch
instead of three or four per layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch


@dataclass
class MiniBatch:
    """One batch as it moves through the stages.

    ``seeds`` int64 [batch] output node ids; ``blocks`` bgl blocks (DGL
    order: blocks[0] is the input layer); ``sample_seed`` the RNG seed of this
    batch's sampling (reproducible per epoch and index); ``cache_stats`` the
    fetch stage's cumulative cache counters after this batch.  For edge seeds
    (link prediction) the order stage's ``seeds`` are positions into the loader's
    seed-edge list; the sample stage replaces them with the batch's node seeds and
    sets ``edges`` (:class:`~bgl.loader.seeds.edges.EdgeBatch`).
    """

    epoch: int
    index: int
    seeds: torch.Tensor
    sample_seed: int
    blocks: Optional[list] = None
    cache_stats: Optional[dict] = None
    edges: Optional[Any] = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.blocks is not None:
            state["blocks"] = _pack_blocks(self.blocks)
            state["seeds"] = None  # == blocks[-1].dst_ids; one shared segment fewer per message
        return state

    def __setstate__(self, state: dict) -> None:
        if state.get("blocks") is not None:
            state["blocks"] = _unpack_blocks(state["blocks"])
            state["seeds"] = state["blocks"][-1].dst_ids
        self.__dict__.update(state)


def _pack_blocks(blocks: Sequence[Any]) -> dict:
    """All int64 arrays of all blocks (ids, CSC, int64 node data such as labels) in one tensor.

    Each shared-memory tensor costs a file-descriptor hand-over between the
    processes, so one int64 segment per batch (plus one per float feature
    array) keeps the per-message cost flat however many layers there are.
    """
    parts, layout, data = [], [], []
    for b in blocks:
        has_eids, has_etypes = b.edge_ids is not None, b.etypes is not None
        parts += [b.src_ids, b.indptr, b.indices] + ([b.edge_ids] if has_eids else []) + (
            [b.etypes] if has_etypes else [])
        layout.append((int(b.src_ids.shape[0]), int(b.num_dst), int(b.indices.shape[0]), has_eids, has_etypes))
        packed_data = []
        for side, d in (("src", b.srcdata), ("dst", b.dstdata), ("edge", b.edata)):
            kept = {}
            for key, value in d.items():
                # a typed graph's {ntype: rows} travels as it is (one tensor per type)
                if torch.is_tensor(value) and value.dtype == torch.int64 and value.dim() == 1 \
                        and value.device.type == "cpu":
                    parts.append(value)
                    packed_data.append((side, key, int(value.shape[0])))
                else:
                    kept[key] = value
            packed_data.append((side, None, kept))
        if b.edata:  # edge features (prefetch_edge_feats) travel as their own tensors
            packed_data.append(("edge", None, dict(b.edata)))
        data.append(packed_data)
    ints = torch.cat([p.to(torch.int64) for p in parts]) if parts else torch.empty(0, dtype=torch.int64)
    return {"ints": ints, "layout": layout, "data": data}


def _unpack_blocks(packed: dict) -> list:
    from ...blocks import Block

    ints, pos, out = packed["ints"], 0, []

    def take(n: int) -> torch.Tensor:
        nonlocal pos
        view = ints[pos:pos + n]  # views into the one shared segment: no copy
        pos += n
        return view

    for (num_src, num_dst, num_edges, has_eids, has_etypes), packed_data in zip(packed["layout"], packed["data"]):
        src_ids, indptr, indices = take(num_src), take(num_dst + 1), take(num_edges)
        edge_ids = take(num_edges) if has_eids else None
        etypes = take(num_edges) if has_etypes else None
        node_data = {"src": {}, "dst": {}, "edge": {}}
        for side, key, value in packed_data:
            if key is None:
                node_data[side].update(value)
            else:
                node_data[side][key] = take(value)
        out.append(Block(src_ids=src_ids, num_dst=num_dst, indptr=indptr, indices=indices,
                         edge_ids=edge_ids, srcdata=node_data["src"], dstdata=node_data["dst"],
                         edata=node_data["edge"], etypes=etypes))
    return out
