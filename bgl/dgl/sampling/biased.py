"""DGL's tag-biased neighbour sampling: ``dgl.sort_csr_by_tag`` / ``sort_csc_by_tag`` and
``dgl.sampling.sample_neighbors_biased``.

Sorting groups each node's out-edges (CSR) or in-edges (CSC) by the tag of the edge (or of the
neighbour) and records, per node, where each tag's run starts: ``offsets[i, t]:offsets[i, t + 1]`` are
node ``i``'s edges of tag ``t`` within its row.  Edge ids, ``g.edges()`` and the features are unchanged;
only the cached compressed adjacency's order changes, which is what the biased sampler reads.

The biased draw is DGL 2.1's: an edge of tag ``t`` weighs ``bias[t]``; without replacement a row
takes ``min(fanout, its positive-weight edges)`` edges drawn successively in proportion to the weights
(``fanout=-1``: all its positive-weight edges), with replacement ``fanout`` draws when it has any.  That
is exactly :func:`bgl.sampler.ops.sample_neighbors` with per-edge weights, so the draw is bgl's weighted
kernel (no new kernel): the weights in CSR / CSC order are ``bias`` gathered at each position's tag.
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import _INT32_MAX, Compressed, Relation, _narrow

from .neighbors import _frontier, _per_type, _sample_relation
from bgl.loader.graph_derivations import derivations_of, storage_key
from bgl.sampler import ops
from bgl.sampler.multilayer import draw_seed

TAG_TYPES = ("node", "edge")


def sort_csr_by_tag(g: DGLGraph, tag, tag_offset_name: str = "_TAG_OFFSET", tag_type: str = "node") -> DGLGraph:
    """A copy of ``g`` whose CSR lists each node's out-edges grouped by tag (``tag_type="node"``: the
    destination's tag, ``tag [num dst nodes]``; ``"edge"``: the edge's, ``tag [E]``), ascending, ties in
    edge-id order, as ``dgl.sort_csr_by_tag``.

    Returns
    -------
    DGLGraph sharing ``g``'s features, with ``srcdata[tag_offset_name]``: idtype ``[num src nodes,
    max tag + 2]``, row ``i``'s tag ``t`` edges at CSR positions ``indptr[i] + offsets[i, t]`` up to
    ``indptr[i] + offsets[i, t + 1]``.  One stable sort of the edges by (source, tag): O(E log E).

    Raises
    ------
    DGLError : more than one edge type, a negative tag; AssertionError : ``tag_type`` not node / edge,
        edge tags not one per edge (as DGL's)
    """
    return _sorted_by_tag(g, tag, tag_offset_name, tag_type, "out")


def sort_csc_by_tag(g: DGLGraph, tag, tag_offset_name: str = "_TAG_OFFSET", tag_type: str = "node") -> DGLGraph:
    """:func:`sort_csr_by_tag` of the in-edges: each node's CSC grouped by the tag of the source
    (``tag [num src nodes]``) or of the edge; the offsets in ``dstdata[tag_offset_name]``."""
    return _sorted_by_tag(g, tag, tag_offset_name, tag_type, "in")


def _sorted_by_tag(g: DGLGraph, tag, name: str, tag_type: str, edge_dir: str) -> DGLGraph:
    if len(g.canonical_etypes) > 1:
        raise DGLError("Only support homograph and bipartite graph")
    assert tag_type in TAG_TYPES, "tag_type should be either 'node' or 'edge'."
    (cet, rel), = g._rels.items()
    src, dst = rel.coo()
    own, other = (src, dst) if edge_dir == "out" else (dst, src)
    tag = torch.as_tensor(tag, device=g.device).long()
    if tag_type == "node":
        tag = tag[other.long()]
    assert tag.shape[0] == rel.num_edges
    if tag.numel() and int(tag.min()) < 0:
        raise DGLError(f"tags must be non-negative, got {int(tag.min())}.")
    num_tags = int(tag.max()) + 1 if tag.numel() else 0
    num_rows = rel.num_src if edge_dir == "out" else rel.num_dst
    # one key per edge: (row, tag), ties kept in edge-id order by the stable sort
    order = torch.sort(own.long() * max(num_tags, 1) + tag, stable=True).indices
    counts = torch.bincount(own.long() * num_tags + tag, minlength=num_rows * num_tags).view(num_rows, num_tags)
    offsets = torch.zeros(num_rows, num_tags + 1, dtype=torch.int64, device=g.device)
    torch.cumsum(counts, 1, out=offsets[:, 1:])
    indptr = torch.zeros(num_rows + 1, dtype=torch.int64, device=g.device)
    torch.cumsum(torch.bincount(own.long(), minlength=num_rows), 0, out=indptr[1:])
    fits = max(rel.num_edges, rel.num_src, rel.num_dst) <= _INT32_MAX  # compress()'s dtypes: no new kernel variant
    comp = Compressed(_narrow(indptr, fits), _narrow(other[order], fits), _narrow(order, fits))
    new = Relation(rel.num_src, rel.num_dst, src, dst)
    if edge_dir == "out":
        new._csr = comp
    else:
        new._csc = comp
    out = g.clone()
    out._rels = {cet: new}
    out.nodes[cet[0] if edge_dir == "out" else cet[2]].data[name] = offsets.to(g.idtype)
    return out


def sample_neighbors_biased(g: DGLGraph, nodes, fanout: int, bias, edge_dir: str = "in",
                            tag_offset_name: str = "_TAG_OFFSET", replace: bool = False, copy_ndata: bool = True,
                            copy_edata: bool = True, output_device=None) -> DGLGraph:
    """Up to ``fanout`` in-edges (``edge_dir="out"``: out-edges) of each of ``nodes``, an edge of tag ``t``
    drawn in proportion to ``bias[t]`` (module doc), from a graph sorted by :func:`sort_csc_by_tag`
    (``"in"``) or :func:`sort_csr_by_tag` (``"out"``).

    Parameters
    ----------
    g : a graph with one edge type; nodes : seed ids (tensor or list); fanout : int (-1 all)
    bias : non-negative floats [num tags] (tensor or list), one per tag of the sort
    tag_offset_name : the node field the sort wrote; replace, copy_ndata, copy_edata, output_device : as DGL's

    Returns
    -------
    DGLGraph of every node of ``g`` and the sampled edges, grouped by seed in the seeds' order,
    ``edata[dgl.EID]`` their ids in ``g`` (as :func:`bgl.dgl.sampling.sample_neighbors`).

    Cost: O(seeds + sampled edges) in the kernel, plus an O(E) gather of ``bias`` into CSR / CSC order
    per call (each position's tag is derived once per offsets tensor: O(E + nodes x tags)).

    Raises
    ------
    DGLError : ``edge_dir`` not in / out, ``bias`` not one per tag, offsets that do not describe the
        graph's sorted adjacency (not sorted in that direction), a seed out of range
    """
    if edge_dir not in ("in", "out"):
        raise DGLError("edge_dir can only be 'in' or 'out'")
    if len(g.canonical_etypes) > 1:
        raise DGLError("Only support homograph and bipartite graph")
    (cet, rel), = g._rels.items()
    offsets = g.nodes[cet[2] if edge_dir == "in" else cet[0]].data[tag_offset_name]
    bias = torch.as_tensor(bias).detach().cpu().to(torch.float64).view(-1)
    if offsets.dim() != 2 or offsets.shape[1] != bias.shape[0] + 1:
        raise DGLError(f"The sizes of tag offsets and bias do not match: {offsets.shape[-1]} offsets a node "
                       f"for {bias.shape[0]} tags.")
    seeds = _per_type(g, nodes, "nodes", g.ntypes, g.get_ntype_id)[cet[2] if edge_dir == "in" else cet[0]]
    fanout = ops.check_fanout(int(fanout))
    comp = rel.csc() if edge_dir == "in" else rel.csr()
    tags = _position_tags(g, comp, offsets, edge_dir)
    weights = ops._read_only(bias.numpy().astype(np.float32)[tags])  # float32: the weighted kernels' usual variant
    call_seed = draw_seed() if fanout >= 0 else 0
    picked, owner, other = _sample_relation(g, cet, rel, edge_dir, seeds, fanout, replace, call_seed, None, None,
                                            weights_of=lambda eids: weights)
    return _frontier(g, {cet: (picked, owner, other)}, edge_dir, copy_ndata, copy_edata, output_device)


def _position_tags(g: DGLGraph, comp: Compressed, offsets: torch.Tensor, edge_dir: str) -> np.ndarray:
    """The tag of each position of ``comp`` (int64 [E]) from the per-node tag offsets, kept while the
    offsets tensor and the adjacency are the same; DGLError when the offsets do not span each row."""
    off = offsets.detach().cpu().numpy()
    indptr = comp.indptr.cpu().numpy()

    def make() -> np.ndarray:
        degrees = np.diff(indptr)
        if off.shape[0] != degrees.shape[0] or (off.shape[0] and (
                (off[:, 0] != 0).any() or (off[:, -1] != degrees).any() or (np.diff(off, axis=1) < 0).any())):
            raise DGLError(f"The tag offsets do not describe the graph's {'CSC' if edge_dir == 'in' else 'CSR'}: "
                           f"sort it with sort_{'csc' if edge_dir == 'in' else 'csr'}_by_tag first.")
        runs = np.diff(off, axis=1).reshape(-1)
        return np.repeat(np.tile(np.arange(off.shape[1] - 1), off.shape[0]), runs)

    return derivations_of(g).kept(f"tags:{edge_dir}", (storage_key(off), storage_key(indptr)), make)
