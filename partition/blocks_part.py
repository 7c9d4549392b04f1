"""The BFS-block partitioner (the first `bgl` method, now `--method blocks`): BFS coarsening into blocks, greedy block placement, refinement.

After BGL (Liu et al., NSDI '23), section "Graph partition": locality close
to METIS for sampling at a fraction of METIS's time and memory, by
coarsening the graph into connected blocks with multi-source BFS and making
the placement decisions on the much smaller block graph.

1. Coarsening.  Each round picks unassigned vertices as BFS sources at a rate
   starting at ``0.5 / block_size`` and doubling each round; a capped
   multi-source BFS grows one block per source over the undirected graph.
   After ``rounds`` rounds, leftovers (isolated nodes, small components,
   unreached pockets) are grouped by connected component in BFS order and cut
   into blocks; vertices still alone (leaves of hubs on skewed graphs) are packed
   by their heaviest neighbour's block, so coarsening keeps shrinking.  A few sweeps of size-capped label propagation then move block
   borders onto sparse cuts.  The block graph (edge weights = node edges
   between blocks) is coarsened again the same way until about
   ``coarse_per_part`` x P blocks remain, so blocks are small at the bottom
   (good borders) and few at the top (cheap placement).
2. Placement on the coarsest block graph: region growing (each part in turn
   takes the unplaced block with the most edges into it) or the score greedy
   (largest blocks first, each to the part maximising neighbour weight x room
   left); both stop a part at ``1 + fill x (capacity - 1)`` of its average so
   refinement keeps room to move.  Parts balance nodes and training nodes.
3. Refinement, coarsest level to nodes: blocks above a cap are moved out
   cheapest first, then boundary blocks (and finally boundary nodes) move to
   the neighbouring part holding most of their edges when that lowers the cut
   and keeps both loads within [(2 - capacity), capacity] x average.

Each level is O(vertices + edges) and the levels shrink geometrically, so the
whole run is linear in the graph; memory is the symmetric adjacency plus
O(n x P) for the node-to-part affinities.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import numpy as np

from . import _kernels
from .graph_input import GraphInput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BlocksParams:
    """Knobs of the BGL partitioner (defaults used by the CLI and the benchmark).

    block_size : max nodes per first-level block (small blocks keep borders on sparse cuts)
    coarsen_factor : max vertex weight of a block at higher levels, in average vertex weights
    coarse_per_part : stop coarsening at about this many blocks per part
    rounds : BFS rounds per level before the leftover pass (the source rate doubles each round)
    smooth_passes : label-propagation sweeps on block borders per level (0 = raw BFS blocks)
    placement : ``"grow"`` (region growing, default) or ``"score"`` (largest first, best score)
    alpha, beta : room-left exponent and 2-hop weight of the ``"score"`` placement
    capacity : a part may hold up to ``capacity`` x the average nodes (and training nodes)
    fill : placement uses only this share of the capacity slack; the rest is for refinement
    refine_passes : refinement sweeps per level (0 disables)
    """

    block_size: int = 8
    coarsen_factor: float = 6.0
    coarse_per_part: int = 32
    rounds: int = 6
    smooth_passes: int = 3
    placement: str = "grow"
    alpha: float = 1.0
    beta: float = 0.5
    capacity: float = 1.1
    fill: float = 0.2
    refine_passes: int = 4

    def __post_init__(self):
        if self.placement not in ("grow", "score"):
            raise ValueError(f"placement must be 'grow' or 'score', got {self.placement!r}")
        if self.capacity < 1.0:
            raise ValueError(f"capacity must be >= 1.0, got {self.capacity}")
        if self.block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {self.block_size}")

    def to_dict(self) -> dict:
        """The parameters as a JSON-ready dict (stored in ``partition.json``)."""
        return asdict(self)


@dataclass
class Level:
    """One level of the hierarchy: symmetric CSR ``ptr``/``adj`` with edge weights ``wt`` and
    vertex weights ``vn`` (nodes) and ``vt`` (training nodes), all float64 except the CSR."""

    ptr: np.ndarray
    adj: np.ndarray
    wt: np.ndarray
    vn: np.ndarray
    vt: np.ndarray

    @property
    def n(self) -> int:
        """Number of vertices of this level."""
        return self.ptr.size - 1


def node_level(graph: GraphInput) -> Level:
    """Level 0: the store's graph made undirected (deduplicated, no self-loops), unit weights."""
    out_ptr, out_idx = graph.out_edges()
    ptr, adj = _kernels.symmetric_adjacency(graph.indptr, graph.indices, out_ptr, out_idx, graph.num_nodes)
    del out_ptr, out_idx
    return Level(ptr, adj, np.ones(adj.size, np.float32), np.ones(graph.num_nodes), graph.is_train)


def bfs_blocks(level: Level, cap: float, rounds: int, smooth_passes: int,
               rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Group a level's vertices into connected blocks of vertex weight <= ``cap``:
    ``(block int64 [n], num_blocks)`` with blocks numbered 0..num_blocks-1."""
    n = level.n
    block = np.full(n, -1, np.int64)
    bw = np.zeros(n + 1, np.float64)
    queue = np.empty(n, np.int64)
    next_block = 0
    rate = 0.5 * float(level.vn.mean()) / cap if n else 1.0
    for _ in range(rounds):
        free = np.flatnonzero(block == -1)
        if free.size == 0:
            break
        sources = free[rng.random(free.size) < rate]
        next_block = _kernels.wbfs_grow(level.ptr, level.adj, level.vn, block, bw, sources, next_block, cap, queue)
        rate = min(1.0, rate * 2)
    next_block = _kernels.wleftover(level.ptr, level.adj, level.vn, block, bw, next_block, cap, queue)
    block, next_block = _kernels.regroup_singletons(level.ptr, level.adj, level.wt, level.vn, block,
                                                    next_block, cap)
    bw = np.bincount(block, weights=level.vn, minlength=len(bw))
    if smooth_passes:
        _kernels.wsmooth(level.ptr, level.adj, level.wt, level.vn, block, bw, cap, smooth_passes)
        block, next_block = _kernels.compact_labels(block, next_block)
    return block, int(next_block)


def coarsen(level: Level, cap: float, p: BlocksParams, rng: np.random.Generator) -> tuple[Level, np.ndarray]:
    """The block graph of ``level`` and the vertex -> block map."""
    block, nb = bfs_blocks(level, cap, p.rounds, p.smooth_passes, rng)
    bptr, members = _kernels.group_by(block, nb)
    cptr, cadj, cw = _kernels.contract(level.ptr, level.adj, level.wt, block, bptr, members, nb)
    vn = np.bincount(block, weights=level.vn, minlength=nb)
    vt = np.bincount(block, weights=level.vt, minlength=nb)
    return Level(cptr, cadj, cw, vn, vt), block


def blocks_partition(graph: GraphInput, num_parts: int, seed: int = 0, **params) -> np.ndarray:
    """Partition with the BGL algorithm (see module docstring).

    Parameters
    ----------
    graph : the store's CSC and training mask
    num_parts : P >= 1
    seed : seeds the choice of BFS sources and placement tie-breaks
    **params : fields of :class:`BlocksParams`

    Returns
    -------
    part_of : int64 [n] in [0, P)

    Notes
    -----
    A graph without training nodes is partitioned balancing nodes only (with a warning).
    """
    p = BlocksParams(**params)
    n = graph.num_nodes
    if num_parts == 1:
        return np.zeros(n, np.int64)
    k = int(num_parts)
    rng = np.random.default_rng(seed)
    num_train = graph.num_train
    if num_train == 0:
        log.warning("bgl: store has no training nodes; balancing nodes only")

    levels = [node_level(graph)]
    maps: list[np.ndarray] = []
    target = max(p.coarse_per_part * k, 2 * k)
    cap = float(p.block_size)
    while levels[-1].n > target:
        lv = levels[-1]
        # blocks stay well below a part's size so placement can balance them
        cap = min(cap, max(1.0, n / (k * 8.0)))
        coarse, block = coarsen(lv, max(cap, float(lv.vn.max())), p, rng)
        log.debug("bgl: level %d: %d -> %d vertices (cap %.0f)", len(maps), lv.n, coarse.n, cap)
        if coarse.n > 0.85 * lv.n:  # no longer shrinking (e.g. a star, or blocks at the cap)
            break
        levels.append(coarse)
        maps.append(block)
        cap = float(coarse.vn.mean()) * p.coarsen_factor
    top = levels[-1]
    log.info("bgl: %d levels, coarsest %d blocks, %d block edges", len(levels), top.n, top.adj.size)

    avg_n = np.full(k, n / k)
    avg_t = np.full(k, max(num_train, 1) / k)
    cap_n = np.maximum(p.capacity * avg_n, avg_n + 1)
    cap_t = np.maximum(p.capacity * avg_t, avg_t + 1) if num_train else np.full(k, np.inf)
    low_n = (2.0 - p.capacity) * avg_n
    low_t = (2.0 - p.capacity) * avg_t if num_train else np.full(k, -np.inf)
    fill = 1.0 + (p.capacity - 1.0) * p.fill
    fill_n = np.maximum(fill * avg_n, avg_n + 1)
    fill_t = np.maximum(fill * avg_t, avg_t + 1) if num_train else np.full(k, np.inf)

    order = np.lexsort((rng.random(top.n), -top.vn)).astype(np.int64)  # largest first
    if p.placement == "grow":
        part, aff = _kernels.grow_assign(order, top.ptr, top.adj, top.wt, top.vn, top.vt, k, fill_n, fill_t)
    else:
        part, aff = _kernels.greedy_assign(order, top.ptr, top.adj, top.wt, top.vn, top.vt, k,
                                           fill_n, np.where(np.isinf(fill_t), 1.0, fill_t), p.alpha, p.beta)
    for i in range(len(levels) - 1, -1, -1):
        lv = levels[i]
        if i < len(levels) - 1:
            part = part[maps[i]]
            aff = _kernels.part_affinity(lv.ptr, lv.adj, lv.wt, part, k)
        _kernels.rebalance_blocks(lv.ptr, lv.adj, lv.wt, aff, part, lv.vn, lv.vt, k, cap_n, cap_t)
        if p.refine_passes:
            _kernels.refine_blocks(lv.ptr, lv.adj, lv.wt, aff, part, lv.vn, lv.vt, k,
                                   cap_n, cap_t, low_n, low_t, p.refine_passes)
        levels[i] = None  # free as we go down
    return part.astype(np.int64, copy=False)
