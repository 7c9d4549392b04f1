"""Edge seeds: the link-prediction seed kind, flowing through the node pipeline's stages.

A link-prediction loader's items are seed *edges*.  They travel the same
order -> sample -> fetch -> transfer chain as node seeds; only two steps know
they are edges:

* the order stage cuts positions into the seed-edge list ``[0, n)`` into batches
  (random, or BGL's proximity order by the BFS position of each edge's
  destination: :func:`edge_order`);
* the sample stage turns a batch of positions into its node seeds with
  :meth:`EdgeSeeds.batch` -- the endpoints of the positive edges and of the
  negatives drawn for them, compacted in DGL's order -- and samples their blocks
  with the seed edges (and their reverses) excluded inside the sampler.

Fetch is unchanged (the input rows of ``blocks[0]``, so the cache sees the rows of
positive and negative endpoints alike) and transfer builds DGL's
``(input_nodes, pair_graph, neg_pair_graph, blocks)``.

How edges are numbered (an edge id is what the user passes and what ``EID`` holds):

* a graph store: the edge at CSC position ``p`` (``indices[p] -> v`` for ``p`` in row
  ``v``) has id ``p``; a store's CSC is built once and never reordered, so ids are
  stable for the store's life;
* a DGLGraph: its own edge ids (:func:`bgl.dgl.real_dgl.graph_reader.find_edges`; the sampler maps
  CSC positions to them through the graph's CSC edge-id view).

Cost: 24 bytes per seed edge (id and both endpoints, looked up once before anything
starts), plus 8 bytes per edge of the graph for ``reverse_eids`` when given.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from ...sampler.ops import MASK64, layer_seed, relabel


def negative_seed(sample_seed: int) -> int:
    """The negatives' stream of a batch: apart from its blocks' per-layer streams (layers are >= 0)."""
    return layer_seed(sample_seed, MASK64)


def negatives_graph(sampler, negative):
    """What a batch's negatives ask whether an edge exists: the sampler's local store, or, over graph
    servers, the servers themselves (:class:`~bgl.sampler.edge_check.ServerEdgeCheck`) when the
    negative sampler needs the graph (``GlobalUniform``); None otherwise.  The sample stage and the
    ``presample`` cache's presampled epoch ask it alike, so both draw the same negatives."""
    graph = getattr(sampler, "store", None)
    if graph is None and getattr(negative, "needs_graph", False):
        from ...sampler.edge_check import ServerEdgeCheck

        graph = ServerEdgeCheck(sampler)
    return graph


@dataclass
class EdgeBatch:
    """One batch of seed edges after sampling, in the compacted id space of its node seeds.

    ``node_ids`` int64 [u]: the batch's node seeds (= ``blocks[-1].dst_ids``), positive
    and negative endpoints in DGL's compact order; ``eids`` int64 [b] the seed edges;
    ``pos_src`` / ``pos_dst`` int64 [b] and ``neg_src`` / ``neg_dst`` int64 [q] (or None)
    local ids into ``node_ids``.
    """

    eids: torch.Tensor
    node_ids: torch.Tensor
    pos_src: torch.Tensor
    pos_dst: torch.Tensor
    neg_src: Optional[torch.Tensor] = None
    neg_dst: Optional[torch.Tensor] = None

    def to(self, device, non_blocking: bool = False) -> "EdgeBatch":
        """A copy with every tensor on ``device``."""
        def mv(t):
            return None if t is None else t.to(device, non_blocking=non_blocking)

        return EdgeBatch(*(mv(t) for t in (self.eids, self.node_ids, self.pos_src, self.pos_dst,
                                           self.neg_src, self.neg_dst)))


class PairGraph:
    """bgl's pair graph: the batch's positive (or negative) edges over its node seeds, without DGL.

    The part of a ``DGLGraph`` a link-prediction scorer uses: ``edges()`` (local src, dst),
    ``num_nodes()``, ``num_edges()``, ``ndata["_ID"]`` (global node ids, the same tensor as
    ``blocks[-1].dst_ids``) and, for positive pairs, ``edata["_ID"]`` (the seed edge ids).
    """

    def __init__(self, src: torch.Tensor, dst: torch.Tensor, node_ids: torch.Tensor,
                 edge_ids: Optional[torch.Tensor] = None):
        self._src, self._dst = src, dst
        self.ndata = {"_ID": node_ids}
        self.edata = {} if edge_ids is None else {"_ID": edge_ids}

    def edges(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(src, dst) int64 [num_edges] local ids into ``ndata["_ID"]``."""
        return self._src, self._dst

    def num_nodes(self) -> int:
        return int(self.ndata["_ID"].shape[0])

    def num_edges(self) -> int:
        return int(self._src.shape[0])

    def __repr__(self) -> str:
        return f"PairGraph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()})"


def pair_graphs(batch: EdgeBatch) -> tuple:
    """``(pair_graph,)`` or ``(pair_graph, neg_pair_graph)`` of a batch, as :class:`PairGraph` s."""
    pos = PairGraph(batch.pos_src, batch.pos_dst, batch.node_ids, batch.eids)
    if batch.neg_src is None:
        return (pos,)
    return pos, PairGraph(batch.neg_src, batch.neg_dst, batch.node_ids)


def compact(*id_arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Unique ids in order of first appearance across ``id_arrays`` (DGL's ``compact_graphs``
    order), and each array as local ids into them.

    One pass through the sampler's hash relabel (:func:`bgl.sampler.ops.relabel`, no dst nodes
    given): 0.04 ms for a Cora link-prediction batch's 2,048 endpoint ids, where the
    ``np.unique`` + ``argsort`` of first positions it replaced took 0.75 ms.  Costs a fresh
    table of 32-64 bytes per id per call, nothing per node of the graph.
    """
    cat = np.concatenate(id_arrays) if id_arrays else _NO_IDS
    nodes, local = relabel(_NO_IDS, cat)
    out, start = [], 0
    for a in id_arrays:
        out.append(local[start:start + a.shape[0]])
        start += a.shape[0]
    return nodes, out


_NO_IDS = np.empty(0, np.int64)


@dataclass(frozen=True, eq=False)
class EdgeSeeds:
    """A loader's seed edges and what to do with each batch of them (picklable: stage processes).

    Parameters
    ----------
    eids, src, dst : int64 [n] seed edge ids and their endpoints (global node ids)
    num_nodes : node count of the graph (range of uniform negatives)
    exclude : None | ``"self"`` | ``"reverse_id"`` | a user's callable as a
        :class:`~bgl.loader.seeds.typed_callables.UserExclude`
    reverse_eids : int64 [num_edges] or None (checked for ``"reverse_id"``)
    negative : a ``bgl.negative_sampler``, a user's callable as a
        :class:`~bgl.loader.seeds.typed_callables.UserNegatives`, or None
    node_order : ``"first"`` (DGL's ``compact_graphs`` order) or ``"sorted"`` (PyG's ``unique()``)
    schema : the graph's one-type :class:`~bgl.schema.GraphSchema`, what a user's callables are
        checked against (set when there is one)
    """

    eids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    num_nodes: int
    exclude: Optional[str] = None
    reverse_eids: Optional[np.ndarray] = None
    negative: Any = None
    node_order: str = "first"
    schema: Any = None

    def excluded(self, eids: np.ndarray) -> Optional[np.ndarray]:
        """Sorted unique edge ids the batch's blocks must not contain (None: nothing excluded); a
        user's callable is asked with the batch's seed edges."""
        if self.exclude is None:
            return None
        if not isinstance(self.exclude, str):
            return self.exclude.positions(self.schema, {0: eids})
        if self.exclude == "reverse_id":
            eids = np.concatenate([eids, self.reverse_eids[eids]])
        return np.unique(eids)

    def batch(self, positions: np.ndarray, seed: int, graph=None) -> tuple[EdgeBatch, Optional[np.ndarray]]:
        """The :class:`EdgeBatch` of seed-edge ``positions`` and the edge ids to exclude.

        Negatives come from stream ``seed`` (the batch's sampling seed); ``graph`` (a local
        store's CSC) is needed by ``GlobalUniform`` only.
        """
        eids, src, dst = self.eids[positions], self.src[positions], self.dst[positions]
        squash = compact if self.node_order == "first" else sorted_compact
        if self.negative is None:
            nodes, (ls, ld) = squash(src, dst)
            neg = (None, None)
        else:
            if getattr(self.negative, "draw", None) is not None:  # a user's callable
                ns, nd = self.negative.draw(self.schema, {0: eids}, seed).get(0, (_NO_IDS, _NO_IDS))
            else:
                ns, nd = self.negative.sample_pairs(src, dst, self.num_nodes, seed, graph=graph)
            nodes, (ls, ld, lns, lnd) = squash(src, dst, ns, nd)
            neg = (torch.from_numpy(lns), torch.from_numpy(lnd))
        batch = EdgeBatch(torch.from_numpy(eids), torch.from_numpy(nodes), torch.from_numpy(ls),
                          torch.from_numpy(ld), *neg)
        return batch, self.excluded(eids)


def sorted_compact(*id_arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Like :func:`compact`, the unique ids in ascending order (PyG's ``seed.unique()``)."""
    cat = np.concatenate(id_arrays)
    uniq, inverse = np.unique(cat, return_inverse=True)
    bounds = np.cumsum([0] + [a.shape[0] for a in id_arrays])
    inverse = inverse.reshape(-1).astype(np.int64)
    return uniq, [inverse[bounds[i]:bounds[i + 1]] for i in range(len(id_arrays))]


def store_endpoints(store, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` int64 of a store's edges ``eids`` (CSC positions): ``src = indices[eid]``,
    ``dst`` = the row holding position ``eid`` (one binary search over ``indptr`` each)."""
    indptr = np.asarray(store.indptr)
    dst = np.searchsorted(indptr, eids, side="right").astype(np.int64) - 1 + int(store.node_offset)
    src = np.asarray(store.indices[eids], dtype=np.int64)
    return src, dst


def partition_endpoints(book, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` int64 (new node ids) of a partition's edges ``eids``.

    A partition numbers its edges part after part: part ``k``'s CSC position ``p`` is edge
    ``edge_bounds[k] + p``, ``edge_bounds`` the running sum of the parts' ``num_edges`` in
    ``partition.json`` (what a graph client computes from the servers' INFO, so servers and
    trainer agree); ``book.orig_eids`` maps these ids to the source store's.  Each part store
    is read for its own edges only.
    """
    bounds = book.edge_bounds
    part = np.searchsorted(bounds, eids, side="right") - 1
    src, dst = np.empty_like(eids), np.empty_like(eids)
    for k in np.unique(part):
        sel = part == k
        src[sel], dst[sel] = store_endpoints(book.part_store(int(k)), eids[sel] - bounds[k])
    return src, dst


def edge_order(node_order: np.ndarray, edge_nodes: np.ndarray) -> np.ndarray:
    """Positions ``[0, n)`` of seed edges sorted by where their node ``edge_nodes[i]`` sits in
    ``node_order`` (a proximity order of the unique ``edge_nodes``); ties keep seed order."""
    uniq = np.unique(edge_nodes)
    where = np.empty(uniq.shape[0], np.int64)
    where[np.searchsorted(uniq, node_order)] = np.arange(node_order.shape[0])
    return np.argsort(where[np.searchsorted(uniq, edge_nodes)], kind="stable").astype(np.int64)


def reverse_edge_ids(graph) -> np.ndarray:
    """``reverse_eids`` for ``exclude="reverse_id"``: the id of each edge's reverse ``v -> u``.

    ``graph`` is a whole store (ids = CSC positions) or a :class:`~bgl.partition.PartitionBook`
    (the partition's edge ids, its parts' CSCs concatenated).  An edge whose reverse is not in
    the graph maps to itself.  In memory, for graphs that fit: ~40 bytes per edge while it runs
    (keys, their sort order and the answer).
    """
    if hasattr(graph, "edge_bounds"):  # a partition: parts in order, new node ids
        stores = [graph.part_store(k) for k in range(graph.num_parts)]
        counts = np.concatenate([np.diff(np.asarray(s.indptr)) for s in stores])
        src = np.concatenate([np.asarray(s.indices, dtype=np.int64) for s in stores])
        n = int(graph.num_nodes)
    else:
        counts = np.diff(np.asarray(graph.indptr))
        src = np.asarray(graph.indices, dtype=np.int64)
        n = int(graph.num_nodes)
    dst = np.repeat(np.arange(n, dtype=np.int64), counts)
    key = dst * n + src
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    want = src * n + dst
    pos = np.minimum(np.searchsorted(sorted_key, want), max(sorted_key.shape[0] - 1, 0))
    found = sorted_key[pos] == want if sorted_key.shape[0] else np.zeros(0, bool)
    return np.where(found, order[pos], np.arange(key.shape[0], dtype=np.int64)).astype(np.int64)
