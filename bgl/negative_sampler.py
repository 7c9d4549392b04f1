"""``bgl.negative_sampler``: DGL's negative samplers, seeded and reproducible, without DGL.

Same names, arguments and semantics as ``dgl.dataloading.negative_sampler``:

``PerSourceUniform(k)`` (alias ``Uniform``)
    For every positive edge ``(u, v)``, ``k`` pairs ``(u, w)`` with ``w`` uniform over all
    nodes ``[0, num_nodes)`` (a negative may happen to be an edge, as in DGL).
``GlobalUniform(k, exclude_self_loops=True, replace=False, redundancy=1.3)``
    ``k * len(edges)`` pairs ``(u, w)`` drawn uniformly over all node pairs that are *not*
    edges of the graph; self loops left out unless ``exclude_self_loops=False``, no pair
    twice unless ``replace=True``.  As DGL's, it may return fewer pairs than asked.

Randomness: pair ``j`` of a batch comes from counter ``j`` of a splitmix64 stream keyed
by the batch's sampling seed (:func:`bgl.sampler._edge_kernels.uniform_below`), the
same kind of stream the neighbour sampler uses, so negatives are a function of
(seed, positive edges) and need no graph server: uniform negatives need only the
node count, global-uniform ones the graph's edges to test candidates against -- a local
CSC, or, over graph servers, :class:`bgl.sampler.edge_check.ServerEdgeCheck` (the
candidates' destination rows asked of the servers that own them), with the same answers,
so the same negatives.

Inside ``bgl.DataLoader`` the loader calls :meth:`sample_pairs`; a sampler also
keeps DGL's callable form ``sampler(g, eids) -> (src, dst)`` over a DGLGraph.
"""
from __future__ import annotations

import numpy as np
import torch

from .sampler import _edge_kernels as EK
from .sampler.multilayer import thread_generator
from .sampler.ops import MASK64, splitmix64

__all__ = ["PerSourceUniform", "Uniform", "GlobalUniform"]


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"negative sampler k must be an int >= 1 (negatives per positive edge), got {k!r}")
    return int(k)


def check_num_nodes(num_nodes: int) -> int:
    """``num_nodes`` if a graph that size has negatives to draw (two nodes or more), else ValueError."""
    if num_nodes < 2:
        raise ValueError(f"negative sampling needs a graph with at least 2 nodes, got {num_nodes}")
    return int(num_nodes)


def uniform_draws(seed: int, first: int, count: int, num_nodes: int) -> np.ndarray:
    """int64 [count] node ids uniform in ``[0, num_nodes)``: counters ``first ..`` of stream ``seed``."""
    out = np.empty(count, np.int64)
    EK.uniform_below(np.uint64(int(seed) & MASK64), np.int64(first), np.int64(num_nodes), out)
    return out


def edges_exist(graph, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """int8 [n]: 1 where ``graph`` holds the edge ``src[j] -> dst[j]`` (a scan of row ``dst[j]``)."""
    if hasattr(graph, "edges_exist"):
        return graph.edges_exist(src, dst)
    out = np.empty(src.shape[0], np.int8)
    EK.has_edges(np.asarray(graph.indptr), np.asarray(graph.indices), src, dst, out)
    return out


class _NegativeSampler:
    """Shared by the samplers: DGL's ``(g, eids) -> (src, dst)`` on top of :meth:`sample_pairs`."""

    k: int
    needs_graph = False  # True: sample_pairs needs the graph's CSC (to avoid its edges)

    def sample_pairs(self, src: np.ndarray, dst: np.ndarray, num_nodes: int, seed: int, graph=None):
        raise NotImplementedError

    def __call__(self, g, eids):
        """DGL's call form over a DGLGraph (or a ``bgl.dgl`` graph): ``(src, dst)`` int64 tensors of the
        negative pairs; on a typed graph ``{etype: eids} -> {canonical etype: (src, dst)}``, each relation's
        pairs drawn among its own end types' nodes.

        Seeded from torch's RNG, so ``torch.manual_seed`` makes it reproducible as in DGL.
        """
        if isinstance(eids, dict):
            return {g.to_canonical_etype(k): self._pairs(g, g.to_canonical_etype(k), v) for k, v in eids.items()}
        return self._pairs(g, None, eids)

    def _pairs(self, g, cet, eids):
        """The negative pairs of edges ``eids`` of relation ``cet`` (None: a one-type graph's), :meth:`__call__`."""
        graph = None
        if self.needs_graph:
            if cet is not None:
                raise ValueError(f"{type(self).__name__} called on a typed graph is not built (it must avoid each "
                                 "relation's edges); use Uniform, or bgl.DataLoader's own link prediction")
            from .loader.graph_arrays import dglgraph_arrays

            graph = dglgraph_arrays(g, None, None)
        src, dst = g.find_edges(eids, etype=cet)
        seed = int(torch.randint(0, 2**62, (1,), generator=thread_generator()).item())
        num_nodes = g.num_nodes() if cet is None else g.num_nodes(cet[2])
        s, d = self.sample_pairs(src.numpy(), dst.numpy(), num_nodes, seed, graph=graph)
        return torch.from_numpy(s), torch.from_numpy(d)


class PerSourceUniform(_NegativeSampler):
    """``k`` negatives ``(u, w)`` per positive edge ``(u, v)``, ``w`` uniform over all nodes.

    Parameters
    ----------
    k : int >= 1, negatives per positive edge

    Raises
    ------
    ValueError
        ``k < 1``, or (when sampling) a graph with fewer than two nodes.
    """

    def __init__(self, k: int):
        self.k = _check_k(k)

    def sample_pairs(self, src, dst, num_nodes: int, seed: int, graph=None) -> tuple[np.ndarray, np.ndarray]:
        """Negative ``(src int64 [k * b], dst int64 [k * b])`` for positive edges ``src``/``dst`` [b]:
        each source repeated ``k`` times (DGL's layout), destinations drawn from stream ``seed``."""
        num_nodes = check_num_nodes(num_nodes)
        src = np.asarray(src, dtype=np.int64)
        return np.repeat(src, self.k), uniform_draws(seed, 0, src.shape[0] * self.k, num_nodes)

    def __repr__(self) -> str:
        return f"bgl.negative_sampler.{type(self).__name__}({self.k})"


Uniform = PerSourceUniform  # DGL keeps both names for the same sampler


class GlobalUniform(_NegativeSampler):
    """``k * b`` node pairs drawn uniformly from the pairs that are not edges (DGL semantics).

    Parameters
    ----------
    k : int >= 1, negatives per positive edge
    exclude_self_loops : leave out pairs ``(w, w)``
    replace : allow the same pair twice
    redundancy : candidates drawn per wanted pair (DGL's 1.3 by default); more candidates make
        a short result less likely on dense graphs

    Notes
    -----
    The result can hold fewer than ``k * b`` pairs (DGL's behaviour): candidates that are
    edges, self loops or repeats are dropped, never redrawn.
    """

    needs_graph = True

    def __init__(self, k: int, exclude_self_loops: bool = True, replace: bool = False, redundancy: float = 1.3):
        self.k = _check_k(k)
        if not redundancy >= 1.0:
            raise ValueError(f"redundancy must be >= 1.0, got {redundancy!r}")
        self.exclude_self_loops, self.replace, self.redundancy = bool(exclude_self_loops), bool(replace), redundancy

    def sample_pairs(self, src, dst, num_nodes: int, seed: int, graph=None) -> tuple[np.ndarray, np.ndarray]:
        """Negative ``(src, dst)`` int64 arrays of at most ``k * len(src)`` pairs.

        ``graph`` holds the edges the negatives must avoid: an object with ``indptr`` /
        ``indices`` (a store, GraphArrays), or one with ``edges_exist(src, dst) -> int8``
        (graph servers: :class:`bgl.sampler.edge_check.ServerEdgeCheck`).
        """
        return self.sample_typed_pairs(src, dst, num_nodes, num_nodes, seed, graph=graph)

    def sample_typed_pairs(self, src, dst, num_src: int, num_dst: int, seed: int, graph=None,
                           same_type: bool = True, trials: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Negative pairs of one edge type (DGL's ``global_uniform_negative_sampling(etype=)``): at most
        ``k * len(src)`` pairs, sources uniform in ``[0, num_src)``, destinations in ``[0, num_dst)``.

        ``graph`` answers ``edges_exist`` in these ids (on a typed graph: the edge type's edges only,
        :class:`bgl.sampler.edge_check.RelationEdges`); self loops are left out only when both ends
        are of one node type (``same_type``), as DGL does.  ``trials`` rounds of candidates at most,
        each round drawn from the next counters of the same streams and taken only while the pairs
        kept are fewer than asked (DGL retries a rejected candidate up to three times).  With
        ``num_src == num_dst``, ``same_type`` and one trial this is :meth:`sample_pairs`, draw for draw.
        """
        if same_type:
            check_num_nodes(num_src)
        elif min(num_src, num_dst) < 1:
            raise ValueError(f"negative sampling needs nodes at both ends, got {num_src} sources and "
                             f"{num_dst} destinations")
        if graph is None:
            raise ValueError("GlobalUniform needs the graph's edges to avoid them; use a local store or "
                             "DGLGraph, or PerSourceUniform / Uniform with graph servers")
        want = int(np.asarray(src).shape[0]) * self.k
        count = int(np.ceil(want * self.redundancy))
        kept_src, kept_dst = np.empty(0, np.int64), np.empty(0, np.int64)
        for t in range(trials):
            # two independent halves of one stream: candidate sources, then candidate destinations
            cand_src = uniform_draws(seed, t * count, count, num_src)
            cand_dst = uniform_draws(splitmix64(int(seed) & MASK64), t * count, count, num_dst)
            keep = np.ones(count, bool)
            if self.exclude_self_loops and same_type:
                keep &= cand_src != cand_dst
            keep &= edges_exist(graph, cand_src, cand_dst) == 0
            kept_src = np.concatenate([kept_src, cand_src[keep]]) if t else cand_src[keep]
            kept_dst = np.concatenate([kept_dst, cand_dst[keep]]) if t else cand_dst[keep]
            if not self.replace:
                _, first = np.unique(kept_src * np.int64(num_dst) + kept_dst, return_index=True)
                first.sort()
                kept_src, kept_dst = kept_src[first], kept_dst[first]
            if kept_src.shape[0] >= want:
                break
        return kept_src[:want], kept_dst[:want]

    def __repr__(self) -> str:
        return (f"bgl.negative_sampler.GlobalUniform({self.k}, exclude_self_loops={self.exclude_self_loops}, "
                f"replace={self.replace})")
