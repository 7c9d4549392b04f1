"""DGL's structural transform objects (``dgl.transforms.KHopGraph``, ``LineGraph``, ``AddMetaPaths``, ``ToLevi``,
``SVDPE``) and ``dgl.svd_pe``.

The first three are DGL's objects over :mod:`bgl.dgl.derived_graphs` (same edges, same order, features shared);
``ToLevi`` is two index ranges; ``svd_pe`` builds the dense N x N adjacency (8 B per node pair, float64 as DGL's
SciPy call sees it) and its full SVD, O(N^3) time, as DGL's does: for small graphs (molecules, GraphGPS inputs).
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.convert import heterograph
from bgl.dgl.derived_graphs import khop_graph, line_graph, metapath_reachable_graph
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transform_modules import BaseTransform


def _restructured(g: DGLGraph, data: dict, copy_edata: bool) -> DGLGraph:
    """A graph of ``data``'s edges over ``g``'s node types and counts, ``g``'s node features shared, and its
    edge features where ``copy_edata`` (DGL's ``update_graph_structure``)."""
    out = heterograph(data, num_nodes_dict={nt: g.num_nodes(nt) for nt in g.ntypes}, idtype=g.idtype,
                      device=g.device)
    for nt in g.ntypes:
        out.nodes[nt].data.update(dict(g.nodes[nt].data))
    if copy_edata:
        for c in g.canonical_etypes:
            out.edges[c].data.update(dict(g.edges[c].data))
    return out


class LineGraph(BaseTransform):
    """:func:`~bgl.dgl.line_graph` with ``shared=True`` (``g``'s edge features become node features).

    Parameters
    ----------
    backtracking : False leaves out the edge ``(u, v) -> (v, u)``
    """

    def __init__(self, backtracking: bool = True):
        self.backtracking = backtracking

    def __call__(self, g: DGLGraph) -> DGLGraph:
        return line_graph(g, backtracking=self.backtracking, shared=True)


class KHopGraph(BaseTransform):
    """:func:`~bgl.dgl.khop_graph`: one edge per walk of length ``k`` (homogeneous graphs)."""

    def __init__(self, k: int):
        self.k = k

    def __call__(self, g: DGLGraph) -> DGLGraph:
        return khop_graph(g, self.k)


class AddMetaPaths(BaseTransform):
    """New edge types ``(first src type, name, last dst type)``, one per ``metapaths[name]`` (a list of
    canonical edge types), an edge ``u -> v`` once when the metapath leads from ``u`` to ``v`` (HAN's metapath
    graphs, :func:`~bgl.dgl.metapath_reachable_graph`); the graph's own edge types (and edge features) kept
    with ``keep_orig_edges``, node features kept either way.
    """

    def __init__(self, metapaths: dict, keep_orig_edges: bool = True):
        self.metapaths, self.keep_orig_edges = metapaths, keep_orig_edges

    def __call__(self, g: DGLGraph) -> DGLGraph:
        data = {}
        for name, metapath in self.metapaths.items():
            data[(metapath[0][0], name, metapath[-1][-1])] = metapath_reachable_graph(g, metapath).edges()
        if self.keep_orig_edges:
            for c in g.canonical_etypes:
                data[c] = g.edges(etype=c)
        return _restructured(g, data, copy_edata=self.keep_orig_edges)


class ToLevi(BaseTransform):
    """The Levi graph of a homogeneous graph: node types ``"edge"`` (one per edge, its features) and ``"node"``
    (``g``'s nodes, their features), edge ``i = (u, v)`` becoming ``u -> i`` (``"n2e"``) and ``i -> v``
    (``"e2n"``).  Deviation: DGL 2.1 counts the ``"node"`` type only up to the largest end id, leaving the
    features of trailing isolated nodes longer than the type; here the type has all of ``g``'s nodes."""

    def __call__(self, g: DGLGraph) -> DGLGraph:
        src, dst = g.edges()
        eids = torch.arange(g.num_edges(), dtype=g.idtype, device=g.device)
        levi = heterograph({("node", "n2e", "edge"): (src, eids), ("edge", "e2n", "node"): (eids, dst)},
                           num_nodes_dict={"edge": g.num_edges(), "node": g.num_nodes()}, idtype=g.idtype,
                           device=g.device)
        levi.nodes["edge"].data.update(dict(g.edata))
        levi.nodes["node"].data.update(dict(g.ndata))
        return levi


def svd_pe(g: DGLGraph, k: int, padding: bool = False, random_flip: bool = True) -> torch.Tensor:
    """SVD positional encodings (DGL's ``dgl.svd_pe``): ``[U_k sqrt(S_k), V_k sqrt(S_k)]``, float32 [N, 2k],
    of the dense adjacency ``A[u, v]`` = number of edges ``u -> v``; each row's sign flipped at random with
    ``random_flip`` (NumPy's global generator, one ``np.random.rand(N)`` as DGL draws), zero columns appended
    when ``k > N`` and ``padding``.  Singular vectors are defined up to sign (and within a repeated singular
    value, up to rotation): LAPACK builds may pick other signs than DGL's SciPy.  Dense: O(N^2) memory,
    O(N^3) time.

    Raises
    ------
    ValueError : ``k > N`` without ``padding``
    """
    n = g.num_nodes()
    if not padding and n < k:
        raise ValueError("The number of singular values k must be no greater than the number of nodes n, "
                         f"but got {k} and {n} respectively.")
    src, dst = (t.long().cpu() for t in g.edges())
    a = torch.zeros(n, n, dtype=torch.float64).index_put_((src, dst), torch.ones(src.shape[0], dtype=torch.float64),
                                                          accumulate=True)
    u, d, vh = torch.linalg.svd(a)
    m = min(n, k)
    root = d[:m].sqrt()
    encoding = torch.cat([u[:, :m] * root, vh[:m].t() * root], dim=1)
    if random_flip:
        sign = torch.from_numpy(2 * (np.random.rand(n) > 0.5) - 1).to(torch.float64)
        encoding = sign[:, None] * encoding
    encoding = encoding.to(torch.float32)
    if n < k:
        encoding = torch.cat([encoding, torch.zeros(n, 2 * (k - n), dtype=torch.float32)], dim=1)
    return encoding


class SVDPE(BaseTransform):
    """:func:`svd_pe` of the graph into ``ndata[feat_name]`` (in place; returns ``g``)."""

    def __init__(self, k: int, feat_name: str = "svd_pe", padding: bool = False, random_flip: bool = True):
        self.k, self.feat_name, self.padding, self.random_flip = k, feat_name, padding, random_flip

    def __call__(self, g: DGLGraph) -> DGLGraph:
        encoding = svd_pe(g, k=self.k, padding=self.padding, random_flip=self.random_flip)
        g.ndata[self.feat_name] = encoding.to(g.device)
        return g
