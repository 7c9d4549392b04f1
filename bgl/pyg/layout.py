"""PyG's batch layout (``n_id``, ``edge_index``, ``e_id``, per-hop counts) from bgl blocks.

Shared by every ``bgl.pyg`` loader (node, link, temporal); split from :mod:`bgl.pyg.loader`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from ..blocks import Block
from ._kernels import write_hop_edges

_NO_IDS = np.empty(0, np.int64)  # write_hop_edges' "no edge ids"


def blocks_to_pyg(blocks: Sequence[Block]) -> dict[str, Any]:
    """PyG's layout of one sampled batch from bgl blocks (``blocks[-1]`` holds the seeds).

    Block ``l``'s src ids are a prefix of ``blocks[0].src_ids``, so local ids
    agree across blocks and ``n_id = blocks[0].src_ids``.  Hop ``h`` (block
    ``L - h``) contributes the in-edges of the nodes it newly reached: dst
    positions ``[blocks[L-h+1].num_dst, blocks[L-h].num_dst)``.

    On the CPU the batch's ``edge_index`` and ``e_id`` are one numba pass per hop over
    its sampled edges (:func:`_pyg_layout_cpu`): ``torch.repeat_interleave`` and
    ``torch.cat`` took 3/4 of the PyG loader's data path on Cora (profiled, batch 256,
    fanouts 10,10), and each scalar read of a torch tensor (``int(indptr[lo])``) costs
    microseconds a NumPy read does not.  Device batches stay on their device
    (:func:`_pyg_layout_torch`).
    """
    if blocks[0].indptr.device.type == "cpu":
        return _pyg_layout_cpu(blocks)
    return _pyg_layout_torch(blocks)


def _hop_spans(blocks: Sequence[Block], indptrs: Sequence) -> list[tuple]:
    """``(block, indptr, lo, hi, a, e)`` per hop, seeds' hop first: the hop's block, its CSC
    offsets (``indptrs[l]`` for block ``l``: NumPy views on the CPU, where a scalar read of a
    tensor costs microseconds, else the tensors), the dst positions ``[lo, hi)`` the hop
    reached first and their edges ``[a, e)``."""
    num_layers = len(blocks)
    spans = []
    for layer in reversed(range(num_layers)):
        b, indptr = blocks[layer], indptrs[layer]
        lo = blocks[layer + 1].num_dst if layer + 1 < num_layers else 0
        spans.append((b, indptr, lo, b.num_dst, int(indptr[lo]), int(indptr[b.num_dst])))
    return spans


def _layout_fields(blocks: Sequence[Block], spans: list[tuple], edge_index: torch.Tensor) -> dict[str, Any]:
    """The fields both layouts share around their ``edge_index``, edge arrays' rows included."""
    out = {"n_id": blocks[0].src_ids, "batch_size": int(blocks[-1].num_dst), "edge_index": edge_index,
           "num_sampled_nodes": [blocks[-1].num_dst] + [b.num_src - b.num_dst for b, *_ in spans],
           "num_sampled_edges": [e - a for *_, a, e in spans]}
    for key in blocks[0].edata:
        out[key] = torch.cat([b.edata[key][a:e] for b, _, _, _, a, e in spans])
    return out


def _pyg_layout_torch(blocks: Sequence[Block]) -> dict[str, Any]:
    """:func:`blocks_to_pyg` by torch ops on the blocks' own device (a GPU batch stays there)."""
    spans = _hop_spans(blocks, [b.indptr for b in blocks])
    srcs = [b.indices[a:e] for b, _, _, _, a, e in spans]
    dsts = [torch.repeat_interleave(torch.arange(lo, hi, device=ip.device), ip[lo + 1:hi + 1] - ip[lo:hi])
            for _, ip, lo, hi, _, _ in spans]
    out = _layout_fields(blocks, spans, torch.stack([torch.cat(srcs), torch.cat(dsts)]).to(torch.int64))
    if all(b.edge_ids is not None for b in blocks):
        out["e_id"] = torch.cat([b.edge_ids[a:e] for b, _, _, _, a, e in spans])
    return out


def _pyg_layout_cpu(blocks: Sequence[Block]) -> dict[str, Any]:
    """:func:`blocks_to_pyg` for CPU blocks: one :func:`write_hop_edges` pass per hop (same fields, same values)."""
    spans = _hop_spans(blocks, [b.indptr.numpy() for b in blocks])
    edge_index = np.empty((2, sum(e - a for *_, a, e in spans)), np.int64)
    with_eids = all(b.edge_ids is not None for b in blocks)
    e_id = np.empty(edge_index.shape[1], np.int64) if with_eids else _NO_IDS
    pos = 0
    for b, indptr, lo, hi, _, _ in spans:
        pos = write_hop_edges(indptr, b.indices.numpy(), b.edge_ids.numpy() if with_eids else _NO_IDS,
                              lo, hi, edge_index, e_id, pos)
    out = _layout_fields(blocks, spans, torch.from_numpy(edge_index))
    if with_eids:
        out["e_id"] = torch.from_numpy(e_id)
    return out
