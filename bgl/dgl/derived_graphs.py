"""Graphs derived from a graph's adjacency, as DGL 2.1's ``dgl.transforms.functional`` builds them:
``line_graph``, ``khop_adj`` / ``khop_graph``, ``metapath_reachable_graph``, ``laplacian_lambda_max``,
``block_to_graph``, ``to_bfloat16``, ``to_simple_graph``; and ``dgl.init``'s ``zero_initializer`` with the
graph's ``set_n_initializer`` / ``set_e_initializer`` (new rows get zeros, DGL's default).

Every pass is vectorised over edges (sorts, cumulative sums, ``repeat_interleave``); products of
adjacencies expand every pair of entries that meet and sum them per (row, column) in int64.
Costs: ``line_graph`` 8 B per output edge beyond the output itself (one int64 index), ``khop_*`` and
``metapath_reachable_graph`` ~40 B per pair of entries that meet in a product (``khop_adj`` is dense by definition: 4 B per node
pair).  Edge order: ``line_graph`` and ``khop_graph(g, 1)`` are DGL's exactly; for a product DGL's
order is whatever SciPy's sparse product leaves, here row-major (by source, then destination).
"""
from __future__ import annotations

import sys
import types

import torch

from bgl.dgl.base import DGLError, not_built
from bgl.dgl.convert import graph, heterograph
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transforms import _cast_features, to_simple


def _homogeneous(g: DGLGraph, what: str) -> None:
    if len(g.ntypes) != 1 or len(g.canonical_etypes) != 1:
        raise DGLError(f"{what}: only homogeneous graph is supported (one node type and one edge type)")


def _join(keys: torch.Tensor, bucket_of: torch.Tensor, num_buckets: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair ``(i, j)`` with ``keys[i] == bucket_of[j]``, as two int64 index tensors: ``i`` ascending and,
    within one ``i``, ``j`` ascending (a stable sort of ``bucket_of``).  The expansion behind both the line graph
    (an edge meets the out-edges of its destination) and a product of adjacencies (an entry (i, j) meets the
    entries of row j); 16 B per pair out, 8 B per item of ``bucket_of`` for its sort."""
    members = torch.sort(bucket_of, stable=True).indices  # each bucket's items, in id order
    starts = torch.zeros(num_buckets + 1, dtype=torch.int64)
    starts[1:] = torch.cumsum(torch.bincount(bucket_of, minlength=num_buckets), 0)
    fan = starts[keys + 1] - starts[keys]
    left = torch.repeat_interleave(torch.arange(keys.shape[0]), fan)
    first = torch.repeat_interleave(starts[keys] - (torch.cumsum(fan, 0) - fan), fan)
    return left, members[first + torch.arange(left.shape[0])]


def line_graph(g: DGLGraph, backtracking: bool = True, shared: bool = False) -> DGLGraph:
    """The line graph: a node per edge of ``g``; an edge from ``e1 = (u, v)`` to each ``e2 = (v, w)``, the
    ``e2`` of each ``e1`` in edge-id order (DGL's order), never an edge to itself (a self-loop); without
    ``backtracking`` no ``(u, v) -> (v, u)``.
    ``shared``: ``g``'s edge features become its node features (the same tensors)."""
    _homogeneous(g, "line_graph")
    src, dst = (t.to(torch.int64) for t in g.edges(order="eid"))
    e1, e2 = _join(dst, src, g.num_nodes())  # each edge, then the out-edges of its destination
    keep = e1 != e2  # a self-loop does not follow itself (DGL's rule, backtracking or not)
    if not backtracking:
        keep &= dst[e2] != src[e1]
    e1, e2 = e1[keep], e2[keep]
    lg = graph((e1.to(g.idtype), e2.to(g.idtype)), num_nodes=src.shape[0], idtype=g.idtype)
    if shared:
        for name, value in g.edata.items():
            lg.ndata[name] = value
    return lg


class _Counts:
    """A sparse (rows x cols) matrix as sorted COO: ``row``, ``col``, ``count`` [nnz] (int64 counts, or any
    dtype ``count`` comes in, e.g. float edge weights: differentiable in them), row-major, no repeated entry."""

    def __init__(self, row: torch.Tensor, col: torch.Tensor, count: torch.Tensor, shape: tuple):
        self.shape = shape
        key = row * shape[1] + col
        unique, inverse = torch.unique(key, sorted=True, return_inverse=True)
        self.count = count.new_zeros(unique.shape[0]).index_add(0, inverse, count)
        self.row, self.col = unique // shape[1], unique % shape[1]

    def __matmul__(self, other: "_Counts") -> "_Counts":
        """The product: every (i, j) x (j, k) pair of entries, expanded and summed per (i, k)."""
        left, right = _join(self.col, other.row, other.shape[0])
        return _Counts(self.row[left], other.col[right], self.count[left] * other.count[right],
                       (self.shape[0], other.shape[1]))


def _adjacency(g: DGLGraph, etype=None) -> _Counts:
    """``etype``'s edges as counts of (src, dst) (parallel edges add up)."""
    c = g.to_canonical_etype(etype) if etype is not None else g.canonical_etypes[0]
    src, dst = (t.to(torch.int64) for t in g.edges(order="eid", etype=c))
    return _Counts(src, dst, torch.ones(src.shape[0], dtype=torch.int64), (g.num_nodes(c[0]), g.num_nodes(c[2])))


def _power(adj: _Counts, k: int) -> _Counts:
    if int(k) < 1:
        raise DGLError(f"k must be a positive integer, got {k}")
    out = adj
    for _ in range(int(k) - 1):
        out = out @ adj
    return out


def khop_adj(g: DGLGraph, k: int) -> torch.Tensor:
    """Dense float32 ``A ** k`` with ``A[u, v]`` the number of edges ``u -> v`` (DGL's ``khop_adj``)."""
    _homogeneous(g, "khop_adj")
    walks = _power(_adjacency(g), k)
    out = torch.zeros(walks.shape, dtype=torch.float32)
    out[walks.row, walks.col] = walks.count.to(torch.float32)
    return out


def khop_graph(g: DGLGraph, k: int, copy_ndata: bool = True) -> DGLGraph:
    """A graph with one edge ``u -> v`` per walk of length ``k`` from ``u`` to ``v`` in ``g`` (DGL's
    ``khop_graph``); ``copy_ndata`` shares ``g``'s node features."""
    _homogeneous(g, "khop_graph")
    if int(k) == 1:  # DGL's A ** 1 is the adjacency as stored: every edge once, in id order
        src, dst = g.edges(order="eid")
    else:
        walks = _power(_adjacency(g), k)
        src, dst = torch.repeat_interleave(walks.row, walks.count), torch.repeat_interleave(walks.col, walks.count)
    out = graph((src.to(g.idtype), dst.to(g.idtype)), num_nodes=g.num_nodes(), idtype=g.idtype)
    if copy_ndata:
        for name, value in g.ndata.items():
            out.ndata[name] = value
    return out


def metapath_reachable_graph(g: DGLGraph, metapath) -> DGLGraph:
    """A graph with an edge ``u -> v`` (type ``"_E"``, once) when a path of ``g`` following the edge types
    ``metapath`` leads from ``u`` to ``v``: one node type when the path starts and ends at the same type,
    else a bipartite graph; the end types' node features are shared (DGL's ``metapath_reachable_graph``)."""
    if not metapath:
        raise DGLError("metapath must name at least one edge type")
    canonical = [g.to_canonical_etype(e) for e in metapath]
    for (_, _, a), (b, _, _) in zip(canonical, canonical[1:]):
        if a != b:
            raise DGLError(f"metapath {list(metapath)}: an edge type ending at {a!r} is followed by one starting "
                           f"at {b!r}")
    reach = _adjacency(g, canonical[0])
    for c in canonical[1:]:
        reach = reach @ _adjacency(g, c)
    rows, cols = reach.row, reach.col
    srctype, dsttype = canonical[0][0], canonical[-1][2]
    out = heterograph({(srctype, "_E", dsttype): (rows, cols)},
                      {srctype: g.num_nodes(srctype), dsttype: g.num_nodes(dsttype)})
    for ntype in dict.fromkeys((srctype, dsttype)):
        for name, value in g.nodes[ntype].data.items():
            out.nodes[ntype].data[name] = value
    return out


def laplacian_lambda_max(g: DGLGraph) -> list:
    """The largest eigenvalue of each graph's normalised symmetric Laplacian ``I - D^-1/2 A D^-1/2`` (``D``
    the in-degrees, clipped to 1), one per graph of a batch (DGL's ``laplacian_lambda_max``).  SciPy's
    ``eigs`` as DGL calls it where SciPy imports; otherwise a dense eigensolver."""
    from bgl.dgl.batching import unbatch

    out = []
    for part in unbatch(g):
        _homogeneous(part, "laplacian_lambda_max")
        n = part.num_nodes()
        src, dst = (t.to(torch.int64).numpy() for t in part.edges(order="eid"))
        norm = part.in_degrees().clamp(min=1).to(torch.float64).numpy() ** -0.5
        try:
            import scipy.sparse as sp
            from scipy.sparse.linalg import eigs
        except ImportError:
            adj = torch.zeros(n, n, dtype=torch.float64)
            adj.index_put_((torch.from_numpy(dst), torch.from_numpy(src)), torch.ones(src.shape[0], dtype=torch.float64),
                           accumulate=True)
            scale = torch.from_numpy(norm)
            lap = torch.eye(n, dtype=torch.float64) - scale[:, None] * adj * scale[None, :]
            values = torch.linalg.eigvals(lap)
            out.append(float(values[values.abs().argmax()].real) if n else 0.0)
            continue
        adj = sp.coo_matrix(([1.0] * src.shape[0], (dst, src)), shape=(n, n)).tocsr()
        diag = sp.diags(norm, dtype=float)
        lap = sp.eye(n) - diag @ adj @ diag
        out.append(float(eigs(lap, 1, which="LM", return_eigenvectors=False)[0].real))
    return out


def block_to_graph(block: DGLGraph) -> DGLGraph:
    """A block as an ordinary graph: each source type ``T`` becomes ``T_src``, each destination type ``T_dst``,
    the edges and every node and edge feature kept (DGL's ``block_to_graph``)."""
    if not block.is_block:
        raise DGLError("block_to_graph takes a block (a graph with separate source and destination nodes)")
    data = {(s + "_src", e, d + "_dst"): block.edges(order="eid", etype=(s, e, d))
            for s, e, d in block.canonical_etypes}
    counts = {**{t + "_src": block.num_src_nodes(t) for t in block.srctypes},
              **{t + "_dst": block.num_dst_nodes(t) for t in block.dsttypes}}
    out = heterograph(data, counts, idtype=block.idtype)
    for t in block.srctypes:
        out.nodes[t + "_src"].data.update(dict(block.srcnodes[t].data))
    for t in block.dsttypes:
        out.nodes[t + "_dst"].data.update(dict(block.dstnodes[t].data))
    for s, e, d in block.canonical_etypes:
        out.edges[(s + "_src", e, d + "_dst")].data.update(dict(block.edges[(s, e, d)].data))
    return out


def to_bfloat16(g: DGLGraph) -> DGLGraph:
    """``g`` with bfloat16 features (DGL's ``dgl.to_bfloat16``; other dtypes shared)."""
    return _cast_features(g, torch.bfloat16)


def to_simple_graph(g: DGLGraph) -> DGLGraph:
    """DGL's old name of :func:`bgl.dgl.to_simple` (with its defaults)."""
    return to_simple(g)


def zero_initializer(shape, dtype=torch.float32, ctx=None, id_range=None) -> torch.Tensor:
    """``dgl.init.zero_initializer``: zeros of ``shape`` (the rows a frame gains)."""
    return torch.zeros(shape, dtype=dtype, device=ctx)


init = types.ModuleType("bgl.dgl.init", "dgl.init: the frame initializers (zero_initializer, the default).")
init.zero_initializer = zero_initializer
sys.modules[init.__name__] = init


def _set_initializer(kind: str):
    def set_initializer(self, initializer, field=None, **type_arg) -> None:
        """New rows get zeros here (DGL's default, ``dgl.init.zero_initializer``); another initializer is refused."""
        if initializer is not zero_initializer:
            raise not_built(f"set_{kind}_initializer with an initializer other than dgl.init.zero_initializer",
                            "new nodes and edges get zeros; write the rows you add with g.ndata / g.edata")

    set_initializer.__name__ = f"set_{kind}_initializer"
    return set_initializer


DGLGraph.set_n_initializer = _set_initializer("n")
DGLGraph.set_e_initializer = _set_initializer("e")
DGLGraph.line_graph = line_graph
