"""Coarsening before the distributed engine (partition/distributed/coarsen.py): the label-propagation kernel
on a graph with a known answer, and the coarse distributed graph against a brute-force contraction,
on one rank (MPI's COMM_SELF) and on three (mpirun)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bgl.partition import _kernels
from bgl.partition.distributed import coarsen as dist_coarsen

pytestmark = pytest.mark.usefixtures("mpi")  # mpi4py, installed if missing (conftest)
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "NUMBA_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}


def symmetric_graph(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(xadj, adjncy)`` int64 of a random undirected graph: no self-loops or repeats, both directions;
    its last tenth of nodes isolated."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n * 9 // 10, m), rng.integers(0, n * 9 // 10, m)
    keep = a != b
    key = np.unique(np.concatenate([a[keep] * n + b[keep], b[keep] * n + a[keep]]))
    xadj = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(key // n, minlength=n), out=xadj[1:])
    return xadj, key % n


def brute_force(xadj, adjncy, vwgt, cluster):
    """The contraction by definition: {(cu, cv): fine entries between clusters cu != cv}, and each cluster's weight."""
    src = np.repeat(np.arange(xadj.size - 1), np.diff(xadj))
    edges: dict[tuple[int, int], int] = {}
    for u, v in zip(cluster[src].tolist(), cluster[adjncy].tolist()):
        if u != v:
            edges[(u, v)] = edges.get((u, v), 0) + 1
    return edges, np.bincount(cluster, weights=vwgt, minlength=int(cluster.max()) + 1).astype(np.int64)


def coarse_edges(xadj, adjncy, adjwgt) -> dict[tuple[int, int], int]:
    src = np.repeat(np.arange(xadj.size - 1), np.diff(xadj))
    return {(int(a), int(b)): int(w) for a, b, w in zip(src, adjncy, adjwgt)}


def test_label_propagation_finds_the_two_triangles_and_packs_the_isolated():
    """Triangles {0,1,2} and {3,4,5} joined by the edge 2-3, nodes 6 and 7 without edges; cap 3: each
    triangle is one cluster (the bridge cannot pull 3 into the full first one), the isolated pair another."""
    xadj = np.array([0, 2, 4, 7, 10, 12, 14, 14, 14], np.int64)
    adjncy = np.array([1, 2, 0, 2, 0, 1, 3, 2, 4, 5, 3, 5, 3, 4], np.int64)
    label = np.arange(8, dtype=np.int64)
    _kernels.local_label_propagation(xadj, adjncy, 0, 8, np.ones(8, np.int64), 3, np.arange(8, dtype=np.int64), 5,
                                     label)
    cluster = np.empty(8, np.int64)
    assert _kernels.compact_labels(label, cluster) == 3
    assert cluster.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    # cap 2: no triangle fits one cluster; every cluster is a pair or a single
    label = np.arange(8, dtype=np.int64)
    _kernels.local_label_propagation(xadj, adjncy, 0, 8, np.ones(8, np.int64), 2, np.arange(8, dtype=np.int64), 5,
                                     label)
    assert np.bincount(label).max() == 2


def test_neighbours_on_other_ranks_never_join_a_cluster():
    """Rank-local: a slice [10, 14) whose only edges go to ids outside it stays all singletons."""
    xadj = np.array([0, 2, 3, 4, 4], np.int64)
    adjncy = np.array([3, 20, 15, 9], np.int64)
    cluster, mc = dist_coarsen.local_clusters(xadj, adjncy, 10, 14, np.ones(4, np.int64), 10)
    assert mc == 4 and cluster.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clusters_stay_within_the_cap_and_are_deterministic(seed):
    n = 3000
    xadj, adjncy = symmetric_graph(n, 12000, seed)
    w = np.random.default_rng(seed).integers(1, 30, n)
    cap = 200
    cluster, mc = dist_coarsen.local_clusters(xadj, adjncy, 0, n, w, cap, seed=seed)
    weight = np.bincount(cluster, weights=w)
    size = np.bincount(cluster)
    assert np.all((weight <= cap) | (size == 1))
    assert mc < n // 4  # it does coarsen: ~7.7 entries per node, clusters of ~10 nodes
    again, _ = dist_coarsen.local_clusters(xadj, adjncy, 0, n, w, cap, seed=seed)
    assert np.array_equal(cluster, again)


@pytest.mark.parametrize("weighted", [False, True])
def test_one_rank_coarse_graph_is_the_brute_force_contraction(weighted):
    from mpi4py import MPI

    from bgl.partition.distributed.exchange import Exchange

    n = 2000
    xadj, adjncy = symmetric_graph(n, 8000, 5)
    vwgt = np.random.default_rng(5).integers(1, 9, n) if weighted else None
    c = dist_coarsen.coarsen(np.array([0, n], np.int64), xadj, adjncy, vwgt, 4, Exchange(MPI.COMM_SELF), seed=3)
    w = np.ones(n, np.int64) if vwgt is None else vwgt
    want_edges, want_vwgt = brute_force(xadj, adjncy, w, c.cluster)
    got = coarse_edges(c.xadj, c.adjncy, c.adjwgt)
    assert got == want_edges
    assert np.array_equal(c.vwgt, want_vwgt) and c.vwgt.sum() == w.sum()
    assert all(got[(b, a)] == wt for (a, b), wt in got.items())  # symmetric, and no self-loops
    assert c.cap == dist_coarsen.cluster_cap(w.sum(), 4) and np.all((c.vwgt <= c.cap) | (np.bincount(c.cluster) == 1))
    assert c.num_nodes < n // 3 and c.vtxdist.tolist() == [0, c.num_nodes]
    assert c.project(np.arange(c.num_nodes)).tolist() == c.cluster.tolist()


RANKS_SCRIPT = """\
import sys
import numpy as np
from mpi4py import MPI
sys.path.insert(0, sys.argv[1])
from test_dist_coarsen import brute_force, coarse_edges, symmetric_graph
from bgl.partition.distributed import coarsen as dist_coarsen
from bgl.partition.distributed.exchange import Exchange

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 2400
xadj, adjncy = symmetric_graph(n, 9000, 11)            # the whole graph, for the check; each rank takes its rows
vwgt = np.random.default_rng(11).integers(1, 6, n)
vtxdist = np.array([0, 700, 1500, n], np.int64)
lo, hi = int(vtxdist[rank]), int(vtxdist[rank + 1])
ex = Exchange(comm, round_bytes=256)                    # many exchange rounds
c = dist_coarsen.coarsen(vtxdist, xadj[lo:hi + 1] - xadj[lo], adjncy[xadj[lo]:xadj[hi]], vwgt[lo:hi], 3, ex, seed=7)
assert c.vtxdist[rank + 1] - c.vtxdist[rank] == c.num_nodes
parts = comm.gather((c.cluster + c.vtxdist[rank], c.xadj + 0, c.adjncy, c.adjwgt, c.vwgt, c.vtxdist), root=0)
if rank == 0:
    cluster = np.concatenate([p[0] for p in parts])
    assert all(np.array_equal(p[5], parts[0][5]) for p in parts)
    # clusters never span ranks
    for r in range(size):
        own = cluster[vtxdist[r]:vtxdist[r + 1]]
        assert own.min() >= parts[0][5][r] and own.max() < parts[0][5][r + 1]
    got, base = {}, 0
    for p in parts:
        for (a, b), w in coarse_edges(p[1], p[2], p[3]).items():
            got[(a + base, b)] = w
        base += p[1].size - 1
    want_edges, want_vwgt = brute_force(xadj, adjncy, vwgt, cluster)
    assert got == want_edges, "coarse edges"
    assert np.array_equal(np.concatenate([p[4] for p in parts]), want_vwgt)
    cap = dist_coarsen.cluster_cap(vwgt.sum(), 3)
    assert np.all((want_vwgt <= cap) | (np.bincount(cluster) == 1))
    assert base < n // 2
    print("OK", base)
"""


def test_coarse_graph_over_three_ranks_is_the_brute_force_contraction(tmp_path):
    import shutil

    if not shutil.which("mpirun"):
        pytest.skip("mpirun (openmpi-bin) is not installed")
    script = tmp_path / "ranks.py"
    script.write_text(RANKS_SCRIPT)
    done = subprocess.run(["mpirun", "--oversubscribe", "-n", "3", sys.executable, str(script),
                           str(Path(__file__).parent)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **MPI_ENV})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "OK" in done.stdout


def test_the_choice_is_checked_and_auto_coarsens_big_graphs_only():
    assert dist_coarsen.DEFAULT == "auto"
    assert dist_coarsen.resolve("on", 10, 2) and not dist_coarsen.resolve("off", 10**9, 2)
    assert not dist_coarsen.resolve("on", 10, 1)  # one part: no engine runs
    assert not dist_coarsen.resolve("auto", dist_coarsen.AUTO_MIN_NODES - 1, 4)
    assert dist_coarsen.resolve("auto", dist_coarsen.AUTO_MIN_NODES, 4)
    with pytest.raises(ValueError, match="coarsen must be one of auto, on, off, got 'yes'"):
        dist_coarsen.check_coarsen("yes")
