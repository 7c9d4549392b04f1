"""DGL 2.1's explanation benchmarks (GNNExplainer's ``BAShapeDataset``, ``BACommunityDataset``,
``TreeCycleDataset``, ``TreeGridDataset``), generated as DGL generates them, nothing cached.

Each follows DGL's algorithm call for call: the base graph from networkx (``barabasi_albert_graph`` or
``balanced_tree``), motifs appended with their anchor edges, then ``perturb_ratio`` of the edge count in
random new edges drawn one at a time with ``np.random.randint`` (rejecting parallel edges and self-loops),
then DGL's RCMK node order and destination-sorted edges (:mod:`bgl.dgl.data.reorder`).  So with the same
``seed`` (and the same networkx and NumPy), the graph, ``label`` (int64), ``feat`` and ``edata["__orig__"]``
(each edge's id before the reordering, which DGL's reordering leaves) are DGL's exactly;
with ``seed=None`` both draw from the global ``random`` / ``np.random`` states, as DGL's do.  The random
edges are drawn in a Python loop (DGL's rejection order must be kept to give its graph): one
``searchsorted`` over the sorted edge keys per draw, about ``perturb_ratio`` draws per edge.

``BA2MotifDataset`` is refused: DGL's only source for it is a pickle file, which bgl never unpickles.
networkx is needed (an ImportError in one line names it when missing).  Unlike DGL, nothing is saved
under ``raw_dir``: generating takes milliseconds, and DGL's cache ignores ``seed`` (a second call with
another seed returns the first graph), which bgl's does not repeat.
"""
from __future__ import annotations

import math
import random
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import OneGraphDataset

__all__ = ["BAShapeDataset", "BACommunityDataset", "TreeCycleDataset", "TreeGridDataset"]


def import_networkx(who: str):
    """networkx, or ImportError in one line naming it and ``who`` needs it."""
    try:
        import networkx
    except ImportError:
        raise ImportError(f"{who} generates its graph with networkx, which is not installed: pip install networkx"
                          ) from None
    return networkx


def add_random_edges(src: list, dst: list, n: int, perturb_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """DGL's perturbation: ``int(E * perturb_ratio)`` new edges, each the first ``np.random.randint`` pair that
    is no self-loop and no edge yet (checked against the sorted ``u * n + v`` keys and the edges added)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    num_real = src.shape[0]
    max_ratio = (n * (n - 1) - num_real) / num_real
    assert perturb_ratio <= max_ratio, "perturb_ratio cannot exceed {:.4f}".format(max_ratio)
    keys = np.sort(src * n + dst)
    added_src, added_dst, added = [], [], set()
    for _ in range(int(num_real * perturb_ratio)):
        while True:
            u = np.random.randint(0, n)
            v = np.random.randint(0, n)
            key = int(u) * n + int(v)
            pos = np.searchsorted(keys, key)
            if u != v and key not in added and not (pos < keys.shape[0] and keys[pos] == key):
                break
        added.add(key)
        added_src.append(u)
        added_dst.append(v)
    return (np.concatenate([src, np.asarray(added_src, np.int64)]),
            np.concatenate([dst, np.asarray(added_dst, np.int64)]))


def reordered_graph(src: np.ndarray, dst: np.ndarray, n: int, ndata: dict):
    """A ``bgl.dgl`` graph in DGL's ``reorder_graph(..., "rcmk", "dst", store_ids=False)`` order, ``ndata``
    permuted with its nodes, ``edata["__orig__"]`` each edge's id before (DGL's reordering leaves it)."""
    from .. import graph
    from .reorder import reorder_rcmk_dst

    perm, s, d, old_eid = reorder_rcmk_dst(src, dst, n)
    g = graph((torch.from_numpy(s), torch.from_numpy(d)), num_nodes=n)
    index = torch.from_numpy(perm)
    for key, value in ndata.items():
        g.ndata[key] = value[index]
    g.edata["__orig__"] = torch.from_numpy(old_eid)  # left by DGL's reordering, as on Reddit
    return g


def _attach_motifs(src: list, dst: list, labels: list, n: int, num_motifs: int, motif, motif_labels, extra=None):
    """Append ``num_motifs`` copies of ``motif`` (edges of nodes 0..k-1) after node ``n``, each joined to its
    anchor ``motif_id * floor(n / num_motifs)`` by the edge (first motif node, anchor); ``extra(first, anchor)``
    may add more edges (TreeCycle's random second link).  Returns the new node count."""
    spacing = math.floor(n / num_motifs)
    size = len(motif_labels)
    for motif_id in range(num_motifs):
        src.extend(int(a) + n for a, _ in motif)
        dst.extend(int(b) + n for _, b in motif)
        labels.extend(motif_labels)
        anchor = int(motif_id * spacing)
        src.append(n)
        dst.append(anchor)
        if extra is not None:
            extra(src, dst, n, anchor)
        n += size
    return n


class _OneGraphDataset(OneGraphDataset):
    """One generated graph, no URL, nothing saved."""

    def __init__(self, name: str, raw_dir, force_reload: bool, verbose: bool, transform):
        super().__init__(name=name, url=None, raw_dir=raw_dir, force_reload=force_reload, verbose=verbose,
                         transform=transform)


def ba_shape_graph(num_base_nodes, num_base_edges_per_node, num_motifs, perturb_ratio, seed):
    """BA-Shapes as DGL builds it: ``(src, dst, n, labels)`` before the reordering."""
    nx = import_networkx("BAShapeDataset")
    base = nx.barabasi_albert_graph(num_base_nodes, num_base_edges_per_node, seed)
    edges = np.asarray(list(base.edges()), np.int64).reshape(-1, 2)
    src, dst = edges[:, 0].tolist(), edges[:, 1].tolist()
    labels = [0] * num_base_nodes
    house = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 0), (4, 1)]
    n = _attach_motifs(src, dst, labels, num_base_nodes, num_motifs, house, [1, 1, 2, 2, 3])
    if seed is not None:
        np.random.seed(seed)
    src, dst = add_random_edges(src, dst, n, perturb_ratio)
    return src, dst, n, torch.tensor(labels, dtype=torch.int64)


class BAShapeDataset(_OneGraphDataset):
    """A Barabási-Albert graph with house motifs (DGL 2.1's arguments and defaults; module doc).

    ``dataset[0]``: ``ndata["label"]`` int64 (0 base, 1-3 house positions), ``ndata["feat"]`` float32 ones [n, 1];
    ``num_classes`` 4.
    """

    def __init__(self, num_base_nodes=300, num_base_edges_per_node=5, num_motifs=80, perturb_ratio=0.01, seed=None,
                 raw_dir=None, force_reload=False, verbose=True, transform: Optional[Callable] = None):
        self.num_base_nodes, self.num_base_edges_per_node = num_base_nodes, num_base_edges_per_node
        self.num_motifs, self.perturb_ratio, self.seed = num_motifs, perturb_ratio, seed
        super().__init__("BA-SHAPES", raw_dir, force_reload, verbose, transform)

    def process(self) -> None:
        src, dst, n, labels = ba_shape_graph(self.num_base_nodes, self.num_base_edges_per_node, self.num_motifs,
                                             self.perturb_ratio, self.seed)
        self._graph = reordered_graph(src, dst, n, {"label": labels, "feat": torch.ones(n, 1)})

    @property
    def num_classes(self) -> int:
        return 4


class BACommunityDataset(_OneGraphDataset):
    """Two BA-Shapes graphs joined by ``num_inter_edges`` random edges, Gaussian features (DGL 2.1's arguments).

    ``dataset[0]``: ``ndata["label"]`` int64 (the second graph's labels + 4), ``ndata["feat"]`` float64 [n, 10]
    (DGL's dtype: NumPy's normal draws as they are); ``num_classes`` 8.
    """

    def __init__(self, num_base_nodes=300, num_base_edges_per_node=4, num_motifs=80, perturb_ratio=0.01,
                 num_inter_edges=350, seed=None, raw_dir=None, force_reload=False, verbose=True,
                 transform: Optional[Callable] = None):
        self.num_base_nodes, self.num_base_edges_per_node = num_base_nodes, num_base_edges_per_node
        self.num_motifs, self.perturb_ratio = num_motifs, perturb_ratio
        self.num_inter_edges, self.seed = num_inter_edges, seed
        super().__init__("BA-COMMUNITY", raw_dir, force_reload, verbose, transform)

    def process(self) -> None:
        if self.seed is not None:
            random.seed(self.seed)
            np.random.seed(self.seed)
        halves = []
        for _ in range(2):  # DGL builds two BAShapeDataset graphs, unseeded, from the global states
            src, dst, n, labels = ba_shape_graph(self.num_base_nodes, self.num_base_edges_per_node,
                                                 self.num_motifs, self.perturb_ratio, None)
            halves.append(reordered_graph(src, dst, n, {"label": labels}))
        g1, g2 = halves
        n = g1.num_nodes()
        inter_src = np.random.randint(0, n, (self.num_inter_edges,))
        inter_dst = np.random.randint(n, 2 * n, (self.num_inter_edges,))
        (s1, d1), (s2, d2) = g1.edges(), g2.edges()
        src = np.concatenate([s1.numpy(), s2.numpy() + n, inter_src.astype(np.int64)])
        dst = np.concatenate([d1.numpy(), d2.numpy() + n, inter_dst.astype(np.int64)])
        label = torch.cat([g1.ndata["label"], g2.ndata["label"] + 4])
        rest_mu, rest_sigma = [0.0] * 8, [1.0] * 8
        feat1 = np.random.multivariate_normal(np.array([-1.0] * 2 + rest_mu),
                                              np.diag(np.array([0.5] * 2 + rest_sigma)), n)
        feat2 = np.random.multivariate_normal(np.array([1.0] * 2 + rest_mu),
                                              np.diag(np.array([0.5] * 2 + rest_sigma)), n)
        feat = torch.from_numpy(np.concatenate([feat1, feat2]))
        self._graph = reordered_graph(src, dst, 2 * n, {"label": label, "feat": feat})

    @property
    def num_classes(self) -> int:
        return 8


class _TreeMotifs(_OneGraphDataset):
    """A balanced binary tree of ``tree_height`` with ``num_motifs`` motifs (:meth:`_motif`) attached, the
    random edges added: DGL's TreeCycle / TreeGrid steps in DGL's order."""

    def process(self) -> None:
        nx = import_networkx(type(self).__name__)
        if self.seed is not None:
            np.random.seed(self.seed)
        tree = nx.balanced_tree(r=2, h=self.tree_height)
        edges = np.asarray(list(tree.edges()), np.int64).reshape(-1, 2)
        src, dst, n = edges[:, 0].tolist(), edges[:, 1].tolist(), tree.number_of_nodes()
        labels = [0] * n
        motif, motif_labels, extra = self._motif(nx)
        n = _attach_motifs(src, dst, labels, n, self.num_motifs, motif, motif_labels, extra)
        src, dst = add_random_edges(src, dst, n, self.perturb_ratio)
        self._graph = reordered_graph(src, dst, n, {"label": torch.tensor(labels, dtype=torch.int64),
                                                    "feat": torch.ones(n, 1)})

    @property
    def num_classes(self) -> int:
        return 2


def _second_link(src: list, dst: list, first: int, anchor: int) -> None:
    """TreeCycle's coin flip: half the cycles get a second edge to a node near their anchor."""
    if np.random.random() > 0.5:
        a = np.random.randint(1, 4)
        b = np.random.randint(1, 4)
        src.append(first + int(a))
        dst.append(anchor + int(b))


class TreeCycleDataset(_TreeMotifs):
    """A binary tree with 6-cycles attached (DGL 2.1's arguments; module doc).

    ``dataset[0]``: ``ndata["label"]`` int64 (1 on cycle nodes), ``ndata["feat"]`` float32 ones [n, 1];
    ``num_classes`` 2.  As in DGL, each cycle has six nodes whatever ``cycle_size`` says (it only sets the
    labels' count and the node stride).
    """

    def __init__(self, tree_height=8, num_motifs=60, cycle_size=6, perturb_ratio=0.01, seed=None, raw_dir=None,
                 force_reload=False, verbose=True, transform: Optional[Callable] = None):
        self.tree_height, self.num_motifs, self.cycle_size = tree_height, num_motifs, cycle_size
        self.perturb_ratio, self.seed = perturb_ratio, seed
        super().__init__("TREE-CYCLES", raw_dir, force_reload, verbose, transform)

    def _motif(self, nx):
        return [(i, i + 1) for i in range(5)] + [(5, 0)], [1] * self.cycle_size, _second_link


class TreeGridDataset(_TreeMotifs):
    """A binary tree with ``grid_size`` x ``grid_size`` grids attached (DGL 2.1's arguments; module doc).

    ``dataset[0]``: ``ndata["label"]`` int64 (1 on grid nodes), ``ndata["feat"]`` float32 ones [n, 1];
    ``num_classes`` 2.
    """

    def __init__(self, tree_height=8, num_motifs=80, grid_size=3, perturb_ratio=0.1, seed=None, raw_dir=None,
                 force_reload=False, verbose=True, transform: Optional[Callable] = None):
        self.tree_height, self.num_motifs, self.grid_size = tree_height, num_motifs, grid_size
        self.perturb_ratio, self.seed = perturb_ratio, seed
        super().__init__("TREE-GRIDS", raw_dir, force_reload, verbose, transform)

    def _motif(self, nx):
        grid = nx.convert_node_labels_to_integers(nx.grid_graph([self.grid_size, self.grid_size]), first_label=0)
        return list(grid.edges()), [1] * grid.number_of_nodes(), None
