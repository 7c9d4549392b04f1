"""Hand a bgl block to PyTorch Geometric's layers: ``(x_src, x_dst), edge_index, (n_src, n_dst)``.

PyG's bipartite-capable layers (``SAGEConv``, ``GATConv``, ``GATv2Conv``, ``GraphConv``,
``GINConv``...) take ``conv((x_src, x_dst), edge_index, size=(n_src, n_dst))``; ``GCNConv`` does
not (it normalises by degrees of one node set) and must not be given a block.
"""
from __future__ import annotations

from typing import Union

import torch
from torch import Tensor


def block_sizes(block) -> tuple[int, int]:
    """(num src nodes, num dst nodes) of a ``bgl.dgl`` block or a core :class:`bgl.blocks.Block`."""
    if callable(getattr(block, "num_src_nodes", None)):
        return int(block.num_src_nodes()), int(block.num_dst_nodes())
    return int(block.num_src), int(block.num_dst)


def to_pyg(block, feat: Union[Tensor, tuple]) -> tuple[tuple[Tensor, Tensor], Tensor, tuple[int, int]]:
    """PyG's bipartite inputs of one relation's block.

    Parameters
    ----------
    block : a one-relation ``bgl.dgl`` block (``block[etype]`` of a typed one) or a core bgl Block
    feat : float [num_src, d] (its first ``num_dst`` rows are the dst features), or a
        (src [num_src, d_src], dst [num_dst, d_dst]) pair

    Returns
    -------
    ((x_src, x_dst), edge_index int64 [2, num_edges] of local (src, dst) ids, (n_src, n_dst));
    ``x_dst`` is a view of ``x_src`` when one tensor is given (no copy).
    """
    canonical = getattr(block, "canonical_etypes", None)  # a bgl.dgl block's relations
    typed_core_block = torch.is_tensor(getattr(block, "etypes", None))  # a core Block's per-edge types
    if typed_core_block or (canonical is not None and len(canonical) != 1):
        raise ValueError("to_pyg takes one relation; slice a typed block first: block[etype]")
    n_src, n_dst = block_sizes(block)
    if isinstance(feat, tuple):
        x_src, x_dst = feat
    else:
        x_src, x_dst = feat, feat[:n_dst]
    if x_src.shape[0] != n_src or x_dst.shape[0] != n_dst:
        raise ValueError(f"block has {n_src} src / {n_dst} dst nodes but features have "
                         f"{x_src.shape[0]} src / {x_dst.shape[0]} dst rows")
    src, dst = block.edges()
    edge_index = torch.stack([src.long(), dst.long()]).to(x_src.device)
    return (x_src, x_dst), edge_index, (n_src, n_dst)
