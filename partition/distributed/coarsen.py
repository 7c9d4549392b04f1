"""Coarsen each rank's slice before the distributed engine (``--coarsen``, issue #43).

ParHIP holds 70-80 B per local CSR entry on top of bgl's 8 B (R-MAT 22 over 4 ranks:
2.6-3.0 GiB per rank, 1.2-1.35x one machine's ``--method bgl`` for the whole graph;
bench/results/partition.md), so the size of the graph it is handed is what bounds a rank.  bgl
therefore does the first coarsening level itself, as dKaMinPar and ParHIP's own first level do,
but without the engine's per-entry structures:

1. **rank-local size-constrained label propagation** (:func:`bgl.partition._kernels.local_label_propagation`):
   every own vertex starts alone and, a few rounds, joins the neighbouring cluster (neighbours on
   this rank only) it has most edges to, while the cluster's vertex weight stays within
   ``total / (parts * CAP_FACTOR)``: small enough that the engine can still balance parts of
   ``total / parts`` within a few percent.  Vertices without neighbours are packed together.
   Clusters never span ranks, so the coarse graph's ``vtxdist`` is the ranks' cluster counts;
2. **contraction**: the coarse ids of the ghosts (remote neighbours) come from their owners in one
   exchange (each distinct ghost asked once); every fine entry between two clusters becomes one
   int64 key ``(own cluster, coarse neighbour)``, sorted and counted: the counts are the coarse
   edge weights (summed multiplicities), intra-cluster entries are dropped (no self-loops), and
   the coarse vertex weights are the clusters' summed weights;
3. the engine partitions the coarse graph with both weights, and each fine vertex takes its
   cluster's part (:meth:`CoarseGraph.project`).

Memory per rank while coarsening, on top of the fine CSR (8 B/entry + 8 B/node): the keys (8 B
per entry, reused as the coarse ``adjncy``), their counts (8 B per entry, cut to the coarse
entries), the ghost entries' ids while their distinct ones are found (1 B per entry of mask, 8 B per
remote entry, then 16 B per distinct ghost with its coarse id), and ~48 B per local node of labels,
weights and temporaries: at most ~25 B per entry, against the engine's 70-80.  The fine CSR is
freed before the engine runs; the engine then holds the coarse graph (8 B per coarse node for the
clusters, 16 B per coarse entry of ``adjncy`` and ``adjwgt``, 16 B per coarse node of ``xadj`` and
``vwgt``) and its own structures for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ``--coarsen`` choices: ``auto`` (on from :data:`AUTO_MIN_NODES` nodes), ``on``, ``off``.
CHOICES = ("auto", "on", "off")
DEFAULT = CHOICES[0]
#: ``auto`` coarsens graphs of at least this many nodes: from R-MAT 18 (2^18 nodes) up it was measured
#: better on every count (R-MAT 18/20/22: peak per rank 0.4-0.66x, share 1-2 % lower, engine 3-13x faster;
#: bench/results/partition.md, 2026-12-04); below it the engine's input is small anyway, and such graphs
#: keep the uncoarsened answer earlier releases gave.
AUTO_MIN_NODES = 1 << 18
#: A cluster weighs at most ``total weight / (parts * CAP_FACTOR)``: parts are then made of at
#: least ~CAP_FACTOR clusters, fine enough for the engine's 3 % balance target.
CAP_FACTOR = 40
#: Label-propagation rounds (it stops earlier once no vertex moves).
ROUNDS = 5


def check_coarsen(coarsen: str) -> str:
    """``coarsen`` if it is one of :data:`CHOICES`; ValueError naming them otherwise."""
    if coarsen not in CHOICES:
        raise ValueError(f"coarsen must be one of {', '.join(CHOICES)}, got {coarsen!r}")
    return coarsen


def resolve(coarsen: str, num_nodes: int, num_parts: int) -> bool:
    """Whether to coarsen: ``on``/``off`` as asked, ``auto`` from :data:`AUTO_MIN_NODES` nodes;
    never for one part (no engine runs)."""
    check_coarsen(coarsen)
    if num_parts == 1:
        return False
    return coarsen == "on" or (coarsen == "auto" and num_nodes >= AUTO_MIN_NODES)


@dataclass
class CoarseGraph:
    """This rank's slice of the coarse distributed CSR, and its fine vertices' clusters.

    ``vtxdist`` int64 [R+1] coarse node ranges; ``xadj`` int64 [mc+1]; ``adjncy`` int64 [k] global
    coarse ids (symmetric over ranks, no self-loops); ``adjwgt`` int64 [k] fine entries between the
    two clusters; ``vwgt`` int64 [mc] summed fine vertex weights; ``cluster`` int64 [m] each own fine
    vertex's local coarse id; ``cap`` the cluster weight bound it was built with.
    """

    vtxdist: np.ndarray
    xadj: np.ndarray
    adjncy: np.ndarray
    adjwgt: np.ndarray
    vwgt: np.ndarray
    cluster: np.ndarray
    cap: int

    @property
    def num_nodes(self) -> int:
        return self.xadj.size - 1

    def project(self, coarse_part: np.ndarray) -> np.ndarray:
        """Each own fine vertex's part (int64 [m]) from its cluster's (``coarse_part`` int64 [mc])."""
        return np.asarray(coarse_part, np.int64)[self.cluster]


def cluster_cap(total_weight: int, num_parts: int, factor: int = CAP_FACTOR) -> int:
    """The most a cluster may weigh (at least 1)."""
    return max(1, int(total_weight) // (int(num_parts) * int(factor)))


def local_clusters(xadj: np.ndarray, adjncy: np.ndarray, lo: int, hi: int, vwgt: np.ndarray, cap: int, *,
                   seed: int = 0, rounds: int = ROUNDS) -> tuple[np.ndarray, int]:
    """``(cluster int64 [m], mc)``: each own vertex's cluster (dense local ids ``0..mc-1``, numbered
    by first vertex) from size-constrained label propagation over own neighbours; deterministic for
    ``seed`` (the visiting order is a seeded permutation)."""
    from .. import _kernels  # numba: loaded when a rank coarsens, not for ``--help``

    m = hi - lo
    label = np.arange(m, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(m).astype(np.int64)
    _kernels.local_label_propagation(xadj, adjncy, int(lo), int(hi), np.ascontiguousarray(vwgt, np.int64),
                                     int(cap), order, int(rounds), label)
    del order
    cluster = np.empty(m, np.int64)
    mc = _kernels.compact_labels(label, cluster)
    return cluster, int(mc)


def coarsen(vtxdist: np.ndarray, xadj: np.ndarray, adjncy: np.ndarray, vwgt: np.ndarray | None, num_parts: int,
            ex, *, seed: int = 0, rounds: int = ROUNDS, cap_factor: int = CAP_FACTOR) -> CoarseGraph:
    """This rank's :class:`CoarseGraph` of the fine distributed CSR (collective over ``ex``).

    Parameters
    ----------
    vtxdist : int64 [R+1] fine node ranges; xadj : int64 [m+1]; adjncy : int64 global fine ids
        (symmetric, no self-loops, no repeats: :func:`.graph.symmetric_csr`)
    vwgt : int64 [m] vertex weights >= 1, or None (1 each: ``--balance nodes``)
    num_parts : the engine's P (sets the cluster cap with ``cap_factor``)
    ex : the ranks' :class:`~.exchange.Exchange`
    """
    from .. import _kernels
    from .graph import MAX_KEY_NODES

    rank = ex.comm.Get_rank()
    lo, hi = int(vtxdist[rank]), int(vtxdist[rank + 1])
    m = hi - lo
    weights = np.ones(m, np.int64) if vwgt is None else np.ascontiguousarray(vwgt, np.int64)
    total = int(ex.allreduce_sum(np.array([weights.sum()], np.int64))[0])
    cap = cluster_cap(total, num_parts, cap_factor)
    cluster, mc = local_clusters(xadj, adjncy, lo, hi, weights, cap, seed=seed + rank, rounds=rounds)
    counts = ex.allgather(np.array([mc], np.int64)).ravel()
    coarse_dist = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=coarse_dist[1:])
    nc, base = int(coarse_dist[-1]), int(coarse_dist[rank])
    if nc > MAX_KEY_NODES:
        raise ValueError(f"--coarsen: {nc} coarse nodes do not fit one int64 key per pair; use --coarsen off")
    ghost_ids, ghost_coarse = _ghost_clusters(adjncy, lo, hi, vtxdist, cluster + base, ex)
    key = np.empty(adjncy.size, np.int64)
    k = _kernels.coarse_keys(xadj, adjncy, lo, hi, cluster, base, ghost_ids, ghost_coarse, nc, key)
    del ghost_ids, ghost_coarse
    key.resize(k, refcheck=False)
    key.sort()
    adjwgt = np.empty(k, np.int64)
    k = _kernels.count_sorted(key, adjwgt)
    key.resize(k, refcheck=False)
    adjwgt.resize(k, refcheck=False)
    cxadj = np.searchsorted(key, np.arange(mc + 1, dtype=np.int64) * nc).astype(np.int64)
    np.remainder(key, nc, out=key)
    cvwgt = np.zeros(mc, np.int64)
    _kernels.sum_by_cluster(cluster, weights, cvwgt)
    return CoarseGraph(coarse_dist, cxadj, key, adjwgt, cvwgt, cluster, cap)


def _ghost_clusters(adjncy: np.ndarray, lo: int, hi: int, vtxdist: np.ndarray, own_coarse: np.ndarray,
                    ex) -> tuple[np.ndarray, np.ndarray]:
    """``(ghost_ids, their coarse ids)``, both int64 sorted by fine id: every distinct remote
    neighbour in ``adjncy``, asked of its owner once (``own_coarse`` int64 [m]: this rank's answer
    for its own vertices)."""
    from .graph import ask_owners

    ghosts = np.unique(adjncy[(adjncy < lo) | (adjncy >= hi)])
    return ghosts, ask_owners(ghosts, vtxdist, lo, own_coarse, ex).astype(np.int64, copy=False)


def summary(fine_nodes: int, fine_entries: int, coarse: CoarseGraph | None, ex) -> dict | None:
    """Per-rank sizes for ``metrics["distributed"]["coarsen"]`` (collective; None when not coarsened
    on every rank: the choice is the same on all of them)."""
    if coarse is None:
        return None
    rows = ex.allgather(np.array([fine_nodes, fine_entries, coarse.num_nodes, coarse.adjncy.size], np.int64))
    return {"cluster_cap": int(coarse.cap), "fine_nodes_per_rank": rows[:, 0].tolist(),
            "fine_entries_per_rank": rows[:, 1].tolist(), "coarse_nodes_per_rank": rows[:, 2].tolist(),
            "coarse_entries_per_rank": rows[:, 3].tolist()}
