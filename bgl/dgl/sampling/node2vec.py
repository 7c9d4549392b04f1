"""DGL's ``dgl.sampling.node2vec_random_walk``: node2vec's biased second-order walks on a one-type graph.

From node ``v``, reached from ``t``, a walk moves along out-edge ``v -> x`` with probability proportional
to the edge's weight (``prob``: an edge feature; default 1) times 1/p when ``x`` is ``t``, 1 when ``x`` has
an out-edge to ``t`` (DGL's test of "distance 1"), and 1/q otherwise; its first step is a plain (weighted)
draw.  A node without out-edges ends the walk (-1 after it).  As DGL's: ``traces`` ``[len(nodes),
walk_length + 1]`` of the graph's id type, seeds first, and with ``return_eids`` the edges taken
``[len(nodes), walk_length]``.  One numba pass (:func:`bgl.sampler._walk_kernels.node2vec_walks`) over the
relation's cached CSR; the draws are a pure function of a seed from torch's generator (``torch.manual_seed``
repeats them), where DGL draws with its own RNG: the same law, other walks.

Cost: the traces (8 B per walk and step, twice with the edges); per step O(deg(v) log deg(x)) for the
adjacency tests; once per graph structure the CSR's rows with ids sorted (8 B an edge), and with ``prob``
its weights in CSR order once per version of the weight tensor.
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.sampling.neighbors import ordered_weights
from bgl.loader.graph_derivations import derivations_of, storage_key
from bgl.sampler.multilayer import draw_seed


def node2vec_random_walk(g: DGLGraph, nodes, p: float, q: float, walk_length: int, prob=None,
                         return_eids: bool = False):
    """node2vec walks of ``walk_length`` steps from each of ``nodes`` (module doc).

    Parameters
    ----------
    g : a one-type ``bgl.dgl`` graph on the CPU
    nodes : int tensor (or list) [n] of seed node ids
    p : return parameter (> 0): 1/p weighs the step back to the previous node
    q : in-out parameter (> 0): 1/q weighs a step away from the previous node's neighbourhood
    walk_length : number of steps
    prob : name of a 1-D edge feature to weigh each edge by (non-negative), or None
    return_eids : also return the edges taken

    Returns
    -------
    traces : idtype tensor [n, walk_length + 1]; with ``return_eids``, ``(traces, eids [n, walk_length])``
    """
    if g.device.type != "cpu":
        raise DGLError("Graph must be on CPU.")
    if len(g.canonical_etypes) != 1 or len(g.ntypes) != 1:
        raise DGLError("node2vec_random_walk needs a homogeneous graph (one node type and one edge type).")
    if not (float(p) > 0 and float(q) > 0):
        raise DGLError(f"p and q must be positive, got p={p}, q={q}.")
    steps = int(walk_length)
    if steps < 0:
        raise DGLError(f"walk_length must be >= 0, got {walk_length}.")
    cet = g.canonical_etypes[0]
    if prob is not None and prob not in g._edge_frames[cet]:
        raise KeyError(prob)
    seeds = torch.as_tensor(nodes).view(-1)
    if seeds.dtype == torch.bool or seeds.is_floating_point():
        raise DGLError(f"nodes must be integer node ids, got {seeds.dtype}.")
    seeds = seeds.cpu().to(torch.int64)
    if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= g.num_nodes()):
        raise DGLError("Seed node ID exceeds the maximum number of nodes.")
    csr = g._rels[cet].csr()
    indptr = csr.indptr.cpu().numpy().astype(np.int64, copy=False)
    indices = csr.indices.cpu().numpy().astype(np.int64, copy=False)
    positions = csr.eids.cpu().numpy() if csr.eids is not None else None
    weights = ordered_weights(g, cet, "out", prob, positions)
    keep = derivations_of(g)
    key = (storage_key(csr.indptr.cpu().numpy()), storage_key(csr.indices.cpu().numpy()))
    sorted_rows = keep.kept("node2vec_sorted_rows", key, lambda: _rows_sorted(indptr, indices)) if keep is not None \
        else _rows_sorted(indptr, indices)
    from bgl.sampler._walk_kernels import node2vec_walks

    traces = np.empty((seeds.shape[0], steps + 1), np.int64)
    eids = np.empty((seeds.shape[0], steps), np.int64)
    node2vec_walks(indptr, indices, sorted_rows, positions if positions is not None else _NONE,
                   positions is not None, weights if weights is not None else _NO_WEIGHTS, weights is not None,
                   seeds.numpy(), np.float64(p), np.float64(q), np.uint64(draw_seed()), traces, eids)
    out = torch.from_numpy(traces).to(g.idtype)
    return (out, torch.from_numpy(eids).to(g.idtype)) if return_eids else out


_NO_WEIGHTS = np.empty(0, np.float64)
_NONE = np.empty(0, np.int64)


def _rows_sorted(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``indices`` with each CSR row's ids ascending (the kernel's binary-searched adjacency test), read-only."""
    rows = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    out = indices[np.lexsort((indices, rows))]
    out.setflags(write=False)
    return out
