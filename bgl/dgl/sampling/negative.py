"""DGL's ``dgl.sampling.global_uniform_negative_sampling``: node pairs of one relation that are not its edges.

As DGL 2.1's: ``num_samples x (1 + r)`` candidate pairs, sources uniform over the relation's source type and
destinations over its destination type, where ``r`` is DGL's redundancy (enough candidates that, three
standard deviations below the mean, ``num_samples`` of them are not edges); a candidate that is an edge (or
a self loop, with ``exclude_self_loops`` and one node type at both ends) is drawn again, up to three times,
then dropped; without ``replace`` the survivors are sorted by ``(dst, src)`` and repeats dropped; the first
``num_samples`` are returned (so fewer when too few survive).  Draws come from torch's generator.

Cost: O(candidates x log) for the sort, plus each candidate's test against its destination's in-edges on
the relation's cached CSC.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from bgl.dgl.heterograph import DGLGraph
from bgl.sampler.multilayer import thread_generator

TRIALS = 3  # DGL's attempts per candidate


def global_uniform_negative_sampling(g: DGLGraph, num_samples: int, exclude_self_loops: bool = True,
                                     replace: bool = False, etype=None, redundancy=None):
    """At most ``num_samples`` pairs ``(src, dst)`` of relation ``etype`` that are not edges (module doc).

    Parameters
    ----------
    g : a ``bgl.dgl`` graph
    num_samples : the number of pairs wanted
    exclude_self_loops : leave out ``(v, v)`` (only when both ends are of one node type)
    replace : allow a pair twice (else they are unique, sorted by ``(dst, src)``)
    etype : the relation (default: the graph's first)
    redundancy : ignored, as in DGL 2.1 (it computes its own)

    Returns
    -------
    ``(src, dst)``: tensors of the graph's id type, [k] with k <= ``num_samples``
    """
    from bgl.negative_sampler import edges_exist

    cet = g.to_canonical_etype(etype if etype is not None else g.canonical_etypes[0])
    num_src, num_dst = g.num_nodes(cet[0]), g.num_nodes(cet[2])
    no_loops = bool(exclude_self_loops) and cet[0] == cet[2]
    want = int(num_samples)
    count = int(want * (1.0 + _redundancy(want, g.num_edges(cet), num_src * num_dst)))
    csc = g._rels[cet].csc()
    graph = _Compressed(csc.indptr.cpu().numpy().astype(np.int64, copy=False), csc.indices.cpu().numpy())
    src, dst = np.full(count, -1, np.int64), np.full(count, -1, np.int64)
    todo = np.arange(count)
    for _ in range(TRIALS):
        if todo.shape[0] == 0 or num_src == 0 or num_dst == 0:
            break
        u = torch.randint(0, num_src, (todo.shape[0],), generator=thread_generator()).numpy()
        v = torch.randint(0, num_dst, (todo.shape[0],), generator=thread_generator()).numpy()
        ok = edges_exist(graph, u, v) == 0
        if no_loops:
            ok &= u != v
        src[todo[ok]], dst[todo[ok]] = u[ok], v[ok]
        todo = todo[~ok]
    found = src >= 0
    src, dst = src[found], dst[found]
    if not replace:
        pairs = np.unique(dst * np.int64(max(num_src, 1)) + src)  # sorted by (dst, src), repeats dropped
        src, dst = pairs % max(num_src, 1), pairs // max(num_src, 1)
    return (torch.from_numpy(src[:want]).to(g.idtype).to(g.device),
            torch.from_numpy(dst[:want]).to(g.idtype).to(g.device))


class _Compressed:
    """A relation's CSC as :func:`bgl.negative_sampler.edges_exist` reads it (``indptr`` / ``indices``)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray):
        self.indptr, self.indices = indptr, indices


def _redundancy(want: int, num_edges: int, num_pairs: int, r: float = 3.0) -> float:
    """DGL's redundancy: the larger root ``N`` of ``want = N p - r sqrt(N p (1 - p))`` (``p`` the share of
    pairs that are not edges), as ``N / want - 1``."""
    if want <= 0 or num_pairs <= 0:
        return 0.0
    p_edge = num_edges / num_pairs
    p_free = 1.0 - p_edge
    if p_free <= 0.0:
        return 0.0  # every pair is an edge: nothing to find
    a, b, c = p_free ** 2, -p_free * (2 * want + r ** 2 * p_edge), float(want) ** 2
    root = (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)
    return root / want - 1.0
