"""DGL 2.1's small generated datasets: ``KarateClubDataset``, ``MiniGCDataset``, ``SBMMixtureDataset``.

Nothing is downloaded or cached.  Each makes what DGL makes, with the same library calls in the same order:

* ``KarateClubDataset``: networkx's ``karate_club_graph()`` (Zachary's club, shipped with networkx, as DGL
  reads it), both directions of each of its 78 edges, ``label`` int64 (1: not Mr. Hi's club).
* ``MiniGCDataset``: DGL's eight graph families (cycle, star, wheel, lollipop, hypercube, grid, clique,
  circular ladder) drawn with ``np.random`` after ``np.random.seed(seed)``, from networkx, with self-loops;
  the same graphs and labels as DGL's for the same seed.  ``save_graph`` is accepted; nothing is written.
* ``SBMMixtureDataset``: stochastic block models drawn with SciPy's ``sparse.random`` (DGL's call), their
  line graphs (no backtracking), in-degrees and first edge endpoints.  DGL 2.1 hands its ``rng`` to nobody
  (each block model draws from a fresh, unseeded ``RandomState``): bgl draws from ``rng`` when given, so a
  seeded ``rng`` (with seeded ``np.random`` / ``random`` for ``pq``) repeats a dataset; without it, as DGL.

networkx (and SciPy for the SBM) are needed: a missing one is named in one ImportError line.
"""
from __future__ import annotations

import math
import random
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLDataset
from .synthetic import import_networkx

__all__ = ["KarateClubDataset", "KarateClub", "MiniGCDataset", "SBMMixtureDataset", "SBMMixture"]


class KarateClubDataset(DGLDataset):
    """Zachary's karate club (34 nodes, 156 directed edges, 2 classes), DGL 2.1's arguments (module doc)."""

    def __init__(self, transform: Optional[Callable] = None):
        super().__init__(name="karate_club", transform=transform)

    def process(self) -> None:
        from .. import from_networkx

        club = import_networkx("KarateClubDataset").karate_club_graph()
        g = from_networkx(club)
        g.ndata["label"] = torch.tensor([club.nodes[i]["club"] != "Mr. Hi" for i in club.nodes], dtype=torch.int64)
        self._graph = g
        self._data = [g]

    @property
    def num_classes(self) -> int:
        return 2

    def __getitem__(self, idx: int):
        assert idx == 0, "This dataset has only one graph"
        return self._transformed(self._graph)

    def __len__(self) -> int:
        return 1


KarateClub = KarateClubDataset


class MiniGCDataset(DGLDataset):
    """DGL's toy graph-classification set: ``num_graphs`` graphs of ``min_num_v`` to ``max_num_v - 1`` nodes
    in 8 classes, ``dataset[i] == (graph, label)`` (int64 label; module doc).  DGL 2.1's arguments."""

    def __init__(self, num_graphs: int, min_num_v: int, max_num_v: int, seed=0, save_graph: bool = True,
                 force_reload: bool = False, verbose: bool = False, transform: Optional[Callable] = None):
        self.num_graphs, self.min_num_v, self.max_num_v = num_graphs, min_num_v, max_num_v
        self.seed, self.save_graph = seed, save_graph
        super().__init__(name="minigc", hash_key=(num_graphs, min_num_v, max_num_v, seed),
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        from .. import add_self_loop, from_networkx

        nx = import_networkx("MiniGCDataset")
        if self.seed is not None:
            np.random.seed(self.seed)
        share = self.num_graphs // 8
        graphs, labels = [], []
        for label, make in enumerate(self._families(nx)):
            count = share if label < 7 else self.num_graphs - len(graphs)
            for _ in range(count):
                graphs.append(make(np.random.randint(self.min_num_v, self.max_num_v)))
                labels.append(label)
        self.graphs = [add_self_loop(from_networkx(g)) for g in graphs]
        self.labels = torch.tensor(labels, dtype=torch.int64)

    def _families(self, nx):
        """DGL's generators in label order; each takes the node count drawn for it (and draws what else it needs
        from ``np.random`` in DGL's order)."""
        def lollipop(num_v):
            path_len = np.random.randint(2, num_v // 2)
            return nx.lollipop_graph(m=num_v - path_len, n=path_len)

        def grid(num_v):
            assert num_v >= 4, ("We require a grid graph to contain at least two rows and two columns, thus 4 "
                                "nodes, got {:d} nodes".format(num_v))
            n_rows = np.random.randint(2, num_v // 2)
            return nx.convert_node_labels_to_integers(nx.grid_graph([n_rows, num_v // n_rows]))

        return (nx.cycle_graph, lambda v: nx.star_graph(v - 1), nx.wheel_graph, lollipop,
                lambda v: nx.convert_node_labels_to_integers(nx.hypercube_graph(int(math.log(v, 2)))), grid,
                nx.complete_graph, lambda v: nx.circular_ladder_graph(v // 2))

    @property
    def num_classes(self) -> int:
        return 8

    def __getitem__(self, idx):
        g = self.graphs[idx]
        return self._transformed(g), self.labels[idx]

    def __len__(self) -> int:
        return len(self.graphs)


def sbm(n_blocks: int, block_size: int, p: float, q: float, rng=None):
    """DGL's ``sbm``: a symmetric SciPy adjacency of ``n_blocks`` blocks, within-block density ``p / n`` and
    across ``q / n``, each upper block drawn by ``scipy.sparse.random`` from ``rng`` (a fresh RandomState
    when None)."""
    try:
        import scipy.sparse as sparse
    except ImportError:
        raise ImportError("SBMMixtureDataset draws its graphs with SciPy, which is not installed: pip install scipy"
                          ) from None
    n = n_blocks * block_size
    p, q = p / n, q / n
    rng = np.random.RandomState() if rng is None else rng
    rows, cols = [], []
    for i in range(n_blocks):
        for j in range(i, n_blocks):
            block = sparse.random(block_size, block_size, p if i == j else q, random_state=rng,
                                  data_rvs=lambda k: np.ones(k))
            rows.append(block.row + i * block_size)
            cols.append(block.col + j * block_size)
    rows, cols = np.hstack(rows), np.hstack(cols)
    a = sparse.coo_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n, n))
    return sparse.triu(a) + sparse.triu(a, 1).transpose()


class SBMMixtureDataset(DGLDataset):
    """Graphs from a mixture of stochastic block models (line-graph GNN's data), DGL 2.1's arguments.

    ``dataset[i] == (graph, line_graph, graph_in_degrees, line_graph_in_degrees, first_endpoints)``
    (degrees float32); :meth:`collate_fn` batches them as DGL's does.  ``rng``: a ``np.random.RandomState``
    the block models are drawn from (module doc: DGL ignores it).  ``pq`` is ``"Appendix_C"`` (p, q drawn
    as in the paper's appendix C from ``np.random`` and ``random``) or a list of ``n_graphs`` pairs.
    """

    def __init__(self, n_graphs: int, n_nodes: int, n_communities: int, k: int = 2, avg_deg: float = 3,
                 pq="Appendix_C", rng=None):
        assert n_nodes % n_communities == 0
        self._n_graphs, self._n_nodes, self._n_communities = n_graphs, n_nodes, n_communities
        self._block_size = n_nodes // n_communities
        self._k, self._avg_deg, self._pq, self._rng = k, avg_deg, pq, rng
        super().__init__(name="sbmmixture", hash_key=(n_graphs, n_nodes, n_communities, k, avg_deg, pq, rng))

    def process(self) -> None:
        from .. import from_scipy

        pq = self._pq
        if type(pq) is list:
            assert len(pq) == self._n_graphs
        elif type(pq) is str:
            pq = [{"Appendix_C": self._appendix_c}[pq]() for _ in range(self._n_graphs)]
        else:
            raise RuntimeError(f"pq must be 'Appendix_C' or a list of (p, q) pairs, got {type(pq).__name__}")
        self._graphs = [from_scipy(sbm(self._n_communities, self._block_size, *x, rng=self._rng)) for x in pq]
        self._line_graphs = [g.line_graph(backtracking=False) for g in self._graphs]
        self._graph_degrees = [g.in_degrees().float() for g in self._graphs]
        self._line_graph_degrees = [lg.in_degrees().float() for lg in self._line_graphs]
        self._pm_pds = tuple(g.edges()[0] for g in self._graphs)

    def _appendix_c(self):
        q = np.random.uniform(0, self._avg_deg - math.sqrt(self._avg_deg))
        p = self._k * self._avg_deg - q
        return (p, q) if random.random() < 0.5 else (q, p)

    def __len__(self) -> int:
        return len(self._graphs)

    def __getitem__(self, idx):
        return (self._graphs[idx], self._line_graphs[idx], self._graph_degrees[idx], self._line_graph_degrees[idx],
                self._pm_pds[idx])

    def collate_fn(self, x):
        """A list of items as DGL batches them: two batched graphs, the degrees and endpoints concatenated
        (NumPy arrays, the endpoints offset by ``n_nodes`` per graph)."""
        from .. import batch

        g, lg, deg_g, deg_lg, pm_pd = zip(*x)
        return (batch(g), batch(lg), np.concatenate(deg_g, axis=0), np.concatenate(deg_lg, axis=0),
                np.concatenate([p + i * self._n_nodes for i, p in enumerate(pm_pd)], axis=0))


SBMMixture = SBMMixtureDataset
