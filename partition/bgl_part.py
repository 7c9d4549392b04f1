"""BGL's partitioner: BFS coarsening into blocks, greedy multi-hop block placement, refinement.

After BGL (Liu et al., NSDI '23), section "Graph partition": METIS-quality
locality for sampling at a fraction of METIS's time and memory, by
coarsening the graph into connected blocks with a multi-source BFS and then
placing whole blocks, so the expensive decisions are made on a graph that is
orders of magnitude smaller.

1. Coarsening.  Each round picks unassigned nodes as BFS sources at rate
   ``r`` (starting at ``0.5 / block_size``, doubling each round); a capped
   multi-source BFS grows one block per source over the undirected graph.
   After ``rounds`` rounds, leftovers (isolated nodes, small components,
   unreached pockets) are grouped by connected component in BFS order and cut
   into blocks of ``block_size``.
2. Assignment.  Blocks, largest first, go to the part maximising
   (edges to blocks already there + beta * 2-hop term) x
   (1 - node_load/cap)^alpha x (1 - train_load/train_cap)^alpha, with
   caps = ``capacity`` x the average, so nodes and training nodes stay balanced.
3. Refinement.  Boundary blocks, then boundary nodes, move to the neighbouring
   part holding most of their edges when that lowers the cut and keeps both
   loads within [(2 - capacity) x avg, capacity x avg].

Every pass is O(nodes + edges) (block placement is O(block edges x parts)).
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import numpy as np

from . import _kernels
from .graph_input import GraphInput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BglParams:
    """Knobs of the BGL partitioner (defaults used by the CLI and the benchmark).

    block_size : max nodes per block; 0 = automatic, ``n / (parts * 128)`` clamped to [8, 65536]
    rounds : BFS rounds before the leftover pass (the source rate doubles each round)
    capacity : a part may hold up to ``capacity`` x the average nodes (and training nodes)
    placement : ``"grow"`` (region growing by neighbour weight, default) or ``"score"``
        (blocks largest first, each to the part maximising neighbour weight x room left)
    fill : block placement uses only this share of the capacity slack (the rest is for refinement)
    recursive : P > 2 by recursive bisection (better locality, log P passes) instead of one P-way pass
    alpha : exponent of the room-left factor (higher = stronger balancing pressure)
    beta : weight of the 2-hop term
    restream_passes : sweeps re-placing every block with the greedy score (0 disables)
    block_passes, node_passes : refinement sweeps (0 disables)
    """

    block_size: int = 0
    rounds: int = 6
    capacity: float = 1.1
    alpha: float = 1.0
    beta: float = 0.5
    placement: str = "grow"
    fill: float = 0.2
    recursive: bool = True
    restream_passes: int = 0
    block_passes: int = 3
    node_passes: int = 3

    def to_dict(self) -> dict:
        return asdict(self)


def auto_block_size(num_nodes: int, num_parts: int) -> int:
    """~128 blocks per part: enough blocks for the greedy to balance, big enough to keep locality."""
    return int(min(65536, max(8, num_nodes // (num_parts * 128))))


def bfs_blocks(graph: GraphInput, out_ptr: np.ndarray, out_idx: np.ndarray, block_size: int,
               rounds: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Coarsen into blocks of at most ``block_size`` nodes: ``(block int64 [n], num_blocks)``."""
    n = graph.num_nodes
    block = np.full(n, -1, np.int64)
    block_sizes = np.zeros(n + 1, np.int64)  # at most n blocks
    queue = np.empty(n, np.int64)
    next_block = 0
    rate = 0.5 / block_size
    for r in range(rounds):
        free = np.flatnonzero(block == -1)
        if free.size == 0:
            break
        take = rng.random(free.size) < rate
        sources = free[take]
        next_block = _kernels.bfs_grow_blocks(graph.indptr, graph.indices, out_ptr, out_idx, block,
                                              block_sizes, sources, next_block, block_size, queue)
        log.debug("bgl round %d: rate %.2g, %d sources, %d blocks, %d nodes left",
                  r, rate, sources.size, next_block, int((block == -1).sum()))
        rate = min(1.0, rate * 2)
    next_block = _kernels.leftover_blocks(graph.indptr, graph.indices, out_ptr, out_idx, block,
                                          block_sizes, next_block, block_size, queue)
    return block, int(next_block)


def _kway(graph: GraphInput, shares: np.ndarray, capacity: float, p: BglParams,
          rng: np.random.Generator) -> np.ndarray:
    """One k-way BGL pass (coarsen, place, refine) with part k targeting ``shares[k]`` of the
    nodes and training nodes and holding at most ``capacity`` x that target."""
    n = graph.num_nodes
    k = shares.size
    out_ptr, out_idx = graph.out_edges()
    block_size = p.block_size or auto_block_size(n, int(round(1 / shares.min())))
    block, num_blocks = bfs_blocks(graph, out_ptr, out_idx, block_size, p.rounds, rng)
    bptr, members = _kernels.group_by(block, num_blocks)
    bsize = np.diff(bptr).astype(np.float64)
    num_train = graph.num_train
    btrain = (np.bincount(block, weights=graph.is_train, minlength=num_blocks) if num_train
              else np.zeros(num_blocks))  # no train nodes: the train factor stays 1
    adj_ptr, adj, weight = _kernels.block_adjacency(graph.indptr, graph.indices, out_ptr, out_idx,
                                                    block, bptr, members, num_blocks)
    del members
    log.debug("bgl: %d nodes -> %d blocks (max %d nodes), %d block edges", n, num_blocks, block_size, adj.size)

    avg_n = shares * n
    avg_t = shares * max(num_train, 1)
    # +1 keeps a tiny part feasible when capacity x average rounds below one more node
    cap_n = np.maximum(capacity * avg_n, avg_n + 1)
    cap_t = np.maximum(capacity * avg_t, avg_t + 1)
    low_n = (2.0 - capacity) * avg_n
    low_t = (2.0 - capacity) * avg_t if num_train else np.full(k, -np.inf)
    # Placement fills parts only to `fill` of the slack, leaving the rest for refinement:
    # with every part already at its cap no improving move would be legal.
    fill = 1.0 + (capacity - 1.0) * p.fill
    fill_n = np.maximum(fill * avg_n, avg_n + 1)
    fill_t = np.maximum(fill * avg_t, avg_t + 1)

    if p.placement == "grow":
        # regions start from the largest blocks (random among equal sizes)
        seed_order = np.lexsort((rng.random(num_blocks), -bsize)).astype(np.int64)
        block_part, aff = _kernels.grow_assign(seed_order, adj_ptr, adj, weight, bsize, btrain, k,
                                               fill_n, fill_t)
        order = seed_order
    else:
        # largest blocks first, so small ones can fill what is left; equal sizes (most blocks
        # hit the cap) in BFS order of the block graph, so neighbours are placed close in time
        rank = _kernels.bfs_rank(adj_ptr, adj, int(rng.integers(num_blocks)))
        order = np.lexsort((rank, -bsize)).astype(np.int64)
        block_part, aff = _kernels.greedy_assign(order, adj_ptr, adj, weight, bsize, btrain, k,
                                                 fill_n, fill_t, p.alpha, p.beta)
    _kernels.rebalance_blocks(adj_ptr, adj, weight, aff, block_part, bsize, btrain, k, cap_n, cap_t)
    if p.restream_passes:
        _kernels.restream_blocks(order, adj_ptr, adj, weight, aff, block_part, bsize, btrain,
                                 k, fill_n, fill_t, p.alpha, p.restream_passes)
    if p.block_passes:
        _kernels.refine_blocks(adj_ptr, adj, weight, aff, block_part, bsize, btrain, k,
                               cap_n, cap_t, low_n, low_t, p.block_passes)
    del aff, adj_ptr, adj, weight
    part_of = block_part[block]
    del block
    if p.node_passes:
        _kernels.refine_nodes(graph.indptr, graph.indices, out_ptr, out_idx, part_of,
                              graph.is_train, k, cap_n, cap_t, low_n, low_t, p.node_passes)
    return part_of


def _subgraph(graph: GraphInput, nodes: np.ndarray) -> GraphInput:
    """The subgraph induced by ``nodes`` (sorted), relabelled 0..len(nodes)-1."""
    local_of = np.full(graph.num_nodes, -1, np.int64)
    local_of[nodes] = np.arange(nodes.size)
    ptr, idx = _kernels.induced_subgraph(graph.indptr, graph.indices, nodes, local_of)
    return GraphInput(int(nodes.size), int(idx.size), ptr, idx, graph.is_train[nodes])


def _recursive(graph: GraphInput, num_parts: int, capacity: float, p: BglParams,
               rng: np.random.Generator) -> np.ndarray:
    """Recursive bisection: split into ceil/floor halves of the parts, then recurse."""
    if num_parts == 1:
        return np.zeros(graph.num_nodes, np.int64)
    left = num_parts // 2
    shares = np.array([left, num_parts - left], np.float64) / num_parts
    side = _kway(graph, shares, capacity, p, rng)
    part_of = np.empty(graph.num_nodes, np.int64)
    for s, (offset, parts) in enumerate(((0, left), (left, num_parts - left))):
        nodes = np.flatnonzero(side == s)
        if parts == 1:
            part_of[nodes] = offset
        else:
            sub = _subgraph(graph, nodes)
            part_of[nodes] = offset + _recursive(sub, parts, capacity, p, rng)
            del sub
    return part_of


def bgl_partition(graph: GraphInput, num_parts: int, seed: int = 0, **params) -> np.ndarray:
    """Partition with the BGL algorithm (see module docstring).

    Parameters
    ----------
    graph : the store's CSC and training mask
    num_parts : P >= 1
    seed : seeds the choice of BFS sources
    **params : fields of :class:`BglParams`

    Returns
    -------
    part_of : int64 [n] in [0, P)

    Notes
    -----
    With ``recursive=True`` (default) P > 2 parts come from recursive bisection, each level
    getting capacity ``capacity ** (1 / levels)`` so the overall bound stays ``capacity``.
    A graph without training nodes is partitioned balancing nodes only (with a warning).
    """
    p = BglParams(**params)
    n = graph.num_nodes
    if num_parts == 1:
        return np.zeros(n, np.int64)
    if graph.num_train == 0:
        log.warning("bgl: store has no training nodes; balancing nodes only")
    rng = np.random.default_rng(seed)
    if p.recursive and num_parts > 2:
        levels = int(np.ceil(np.log2(num_parts)))
        return _recursive(graph, num_parts, p.capacity ** (1.0 / levels), p, rng)
    return _kway(graph, np.full(num_parts, 1.0 / num_parts), p.capacity, p, rng)
