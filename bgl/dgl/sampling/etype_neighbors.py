"""DGL's ``dgl.sampling.sample_etype_neighbors``: per-edge-type fanouts on a homogeneous graph whose edge ids
are grouped by type (the form ``dgl.to_homogeneous`` and DistDGL's partitions give).

Edge ``e`` is of type ``t`` when ``etype_offset[t] <= e < etype_offset[t + 1]``.  For each type, every seed
draws up to ``fanout[t]`` of its in-edges (``edge_dir="out"``: out-edges) of that type (-1: all of them),
uniformly, with or without ``replace``: :func:`~bgl.dgl.sampling.sample_neighbors`'s draw with the type's
edges as its only candidates.  The frontier is ``sample_neighbors``'s (every node, ``edata[dgl.EID]``, the
fields), its edges seed by seed and each seed's type by type, as DGL's.  ``prob`` is not built (DGL 2.1 asks one array per edge
type of it, its semantics undocumented): say which draw you need.
Cost per call: O(seeds + sampled edges) per type, plus once per graph structure and ``etype_offset`` each
edge's type in CSC / CSR order (1 B an edge per type).
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import DGLError, not_built
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.sampling.neighbors import EDGE_DIRS, _frontier, _sample_relation
from bgl.loader.graph_derivations import derivations_of, storage_key
from bgl.sampler import ops
from bgl.sampler.multilayer import draw_seed
from bgl.sampler.typed.sampling import MASK64, relation_seed


def sample_etype_neighbors(g: DGLGraph, nodes, etype_offset, fanout, edge_dir: str = "in", prob=None,
                           replace: bool = False, copy_ndata: bool = True, copy_edata: bool = True,
                           etype_sorted: bool = False, _dist_training: bool = False, output_device=None) -> DGLGraph:
    """Up to ``fanout[t]`` edges of each type ``t`` at each of ``nodes`` (module doc).

    Parameters
    ----------
    g : a one-type ``bgl.dgl`` graph on the CPU, its edge ids grouped by type
    nodes : int tensor [n] of seed ids (or a one-entry dict)
    etype_offset : list of int [T + 1]: the first edge id of each type, then the number of edges
    fanout : int tensor [T]: edges per seed and type (-1: all)
    edge_dir, replace, copy_ndata, copy_edata, output_device : as ``sample_neighbors``'s
    etype_sorted, _dist_training : DGL's hints (ignored)
    """
    del etype_sorted, _dist_training
    if g.device.type != "cpu":
        raise DGLError("The graph should be in cpu.")
    if not torch.is_tensor(fanout):
        raise DGLError("The fanout should be a tensor")
    if prob is not None:
        raise not_built("sample_etype_neighbors(prob=...)", "sample_neighbors(prob=...) on the typed graph")
    if edge_dir not in EDGE_DIRS:
        raise DGLError(f"edge_dir must be 'in' or 'out', got {edge_dir!r}.")
    if len(g.canonical_etypes) != 1 or len(g.ntypes) != 1:
        raise DGLError("sample_etype_neighbors needs a graph of one node type and one edge type.")
    if isinstance(nodes, dict):
        if len(nodes) != 1:
            raise AssertionError("The input graph should not have node types")
        nodes = next(iter(nodes.values()))
    seeds = torch.as_tensor(nodes).view(-1).long()
    fanouts = [ops.check_fanout(int(f)) for f in fanout.view(-1).tolist()]
    offsets = np.asarray([int(o) for o in etype_offset], np.int64)
    cet = g.canonical_etypes[0]
    if offsets.shape[0] != len(fanouts) + 1 or offsets[0] != 0 or offsets[-1] != g.num_edges() \
            or np.any(np.diff(offsets) < 0):
        raise DGLError(f"etype_offset must rise from 0 to the number of edges ({g.num_edges()}) with one entry more "
                       f"than fanout ({len(fanouts)}), got {list(offsets)}.")
    call_seed = draw_seed()
    keep = derivations_of(g)
    parts = []
    for t, fan in enumerate(fanouts):
        def of_type(eids, t=t):  # the draw's weights: a mask of type t's edges, in CSC / CSR order
            kind = f"etype_mask:{edge_dir}:{t}:{offsets.tobytes().hex()}"
            make = lambda: ops._read_only(ops.weights_form(_type_mask(eids, offsets, t, g.num_edges()),  # noqa: E731
                                                           g.num_edges(), "etype"))
            key = storage_key(eids) if eids is not None else ("positions", g.num_edges())
            return make() if keep is None else keep.kept(kind, key, make)
        parts.append(_sample_relation(g, cet, g._rels[cet], edge_dir, seeds, fan, replace,
                                      relation_seed(call_seed, t) & MASK64, None, None, weights_of=of_type))
    picked = [torch.cat([p[i] for p in parts]) for i in range(3)]
    # DGL's order: seed by seed (first place of the seed in ``nodes``), each seed's edges type by type
    types = torch.cat([torch.full((p[0].shape[0],), t, dtype=torch.int64) for t, p in enumerate(parts)])
    ranked, first = torch.sort(seeds.to(picked[1].device), stable=True)
    place = first[torch.searchsorted(ranked, picked[1])]
    order = torch.sort(place * len(fanouts) + types, stable=True).indices
    return _frontier(g, {cet: tuple(x[order] for x in picked)}, edge_dir, copy_ndata, copy_edata, output_device)


def _type_mask(eids, offsets: np.ndarray, t: int, num_edges: int) -> np.ndarray:
    """bool [e]: whether the edge at each CSC / CSR position (ids ``eids``; None: positions are ids) is of type t."""
    ids = np.arange(num_edges, dtype=np.int64) if eids is None else np.asarray(eids, np.int64)
    return (ids >= offsets[t]) & (ids < offsets[t + 1])
