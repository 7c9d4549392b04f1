"""DGL's ``AsNodePredDataset``: any dataset whose graph has node labels, seen as a node-prediction
task with ``train_idx`` / ``val_idx`` / ``test_idx`` (DGL's GraphSAGE example reads these); and
``AsGraphPredDataset``: a dataset of ``(graph, label)`` pairs as a graph-prediction task.

The graph is cloned (structure shared, feature dicts copied) so the wrapped dataset is left as it
was.  Nothing is saved to disk, unlike DGL's (which caches the split under ``save_dir``): the split
costs one pass over the masks.
"""
from __future__ import annotations

import json
import os

import numpy as np
import torch

from ...output_dir import write_file_atomically, write_npz_atomically
from .dgl_dataset import DGLDataset


class AsNodePredDataset:
    """DGL 2.1's ``dgl.data.AsNodePredDataset`` over ``bgl.dgl`` datasets.

    Parameters
    ----------
    dataset : a dataset whose ``dataset[0]`` is a graph with ``label`` on ``target_ntype`` (and, when
        ``split_ratio`` is None, bool ``train_mask`` / ``val_mask`` / ``test_mask``); an OGB-style dataset
        (``get_idx_split()``, ``dataset[0] == (graph, label)``) is read as DGL reads it
    split_ratio : (train, val, test) fractions: new masks from a shuffle of ``np.random`` (as DGL's)
    target_ntype : the node type to predict on a typed graph
    **kwargs : DGL's ``DGLDataset`` arguments (``raw_dir``, ``save_dir``, ``force_reload``, ``verbose``,
        ``transform``): accepted; only ``transform`` acts (on ``dataset[0]``)

    Attributes
    ----------
    train_idx, val_idx, test_idx : int64 [n_*] node ids of the target type
    num_classes : the wrapped dataset's ``num_classes``, else the number of distinct labels

    Raises
    ------
    ValueError : no ``label``, a missing mask without ``split_ratio``, or a ratio that is not three numbers
    """

    def __init__(self, dataset, split_ratio=None, target_ntype=None, **kwargs):
        self.dataset, self.split_ratio, self.target_ntype = dataset, split_ratio, target_ntype
        self._transform = kwargs.get("transform")
        self.verbose = bool(kwargs.get("verbose", True))
        if hasattr(dataset, "get_idx_split"):
            g, label = dataset[0]
            self.g = g.clone()
            self.g.ndata["label"] = torch.as_tensor(label).reshape(g.num_nodes())
        else:
            self.g = dataset[0].clone()
        data = self.g.nodes[target_ntype].data
        if "label" not in data:
            raise ValueError(f"AsNodePredDataset: the graph has no 'label' on node type {target_ntype!r}")
        if split_ratio is None:
            if hasattr(dataset, "get_idx_split"):
                self._masks_from_ids(dataset.get_idx_split())
            for mask in ("train_mask", "val_mask", "test_mask"):
                if mask not in data:
                    raise ValueError(f"AsNodePredDataset: {mask} is not provided; pass split_ratio to make the masks")
        else:
            self._masks_from_ratio(split_ratio)
        self.train_idx = torch.nonzero(data["train_mask"], as_tuple=True)[0]
        self.val_idx = torch.nonzero(data["val_mask"], as_tuple=True)[0]
        self.test_idx = torch.nonzero(data["test_mask"], as_tuple=True)[0]
        self.num_classes = getattr(dataset, "num_classes", None)
        if self.num_classes is None:
            self.num_classes = int(torch.unique(data["label"]).numel())

    def _masks_from_ids(self, split: dict) -> None:
        n = self.g.num_nodes(self.target_ntype)
        for key, mask in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
            flags = torch.zeros(n, dtype=torch.bool)
            flags[torch.as_tensor(split[key]).long()] = True
            self.g.nodes[self.target_ntype].data[mask] = flags

    def _masks_from_ratio(self, ratio) -> None:
        if len(ratio) != 3:
            raise ValueError(f"Split ratio must be a float triplet but got {ratio}.")
        n = self.g.num_nodes(self.target_ntype)
        order = np.arange(n)
        np.random.shuffle(order)
        n_train, n_val, n_test = (int(n * r) for r in ratio)
        parts = (order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:n_train + n_val + n_test])
        for ids, mask in zip(parts, ("train_mask", "val_mask", "test_mask")):
            flags = torch.zeros(n, dtype=torch.bool)
            flags[torch.from_numpy(ids)] = True
            self.g.nodes[self.target_ntype].data[mask] = flags

    @property
    def name(self) -> str:
        return f"{getattr(self.dataset, 'name', 'dataset')}-as-nodepred"

    def __getitem__(self, idx: int):
        if idx != 0:
            raise IndexError(f"AsNodePredDataset holds one graph; index {idx} is out of range")
        return self.g if self._transform is None else self._transform(self.g)

    def __len__(self) -> int:
        return 1


class AsGraphPredDataset(DGLDataset):
    """DGL 2.1's ``dgl.data.AsGraphPredDataset``: a dataset of ``(graph, label)`` pairs as a graph-prediction task.

    Parameters
    ----------
    dataset : ``dataset[i] == (graph, label)``; its split is read from ``get_idx_split()`` (OGB) or its
        ``train_mask`` / ``val_mask`` / ``test_mask`` when ``split_ratio`` is None
    split_ratio : (train, val, _) fractions: a new split from ``np.random.permutation`` (as DGL's)
    **kwargs : :class:`DGLDataset`'s (``raw_dir``, ``save_dir``, ``force_reload``, ``verbose``, ``transform``)

    Attributes
    ----------
    train_idx, val_idx, test_idx : int64 graph indices
    num_classes : the dataset's (None without); num_tasks : the dataset's, else 1
    node_feat_size, edge_feat_size : width of ``ndata`` / ``edata["feat"]`` of the first graph (None without)

    Like DGL's, the split is cached as JSON and ``.npz`` (no pickle) in ``save_path``
    (``<save_dir>/<name>-as-graphpred``), so a later run with the same ``split_ratio`` gets the same split.
    """

    def __init__(self, dataset, split_ratio=None, **kwargs):
        self.dataset, self.split_ratio = dataset, split_ratio
        super().__init__(dataset.name + "-as-graphpred", hash_key=(split_ratio, dataset.name, "graphpred"), **kwargs)

    def process(self) -> None:
        from ..base import DGLError

        if self.split_ratio is None:
            if hasattr(self.dataset, "get_idx_split"):
                split = self.dataset.get_idx_split()
                self.train_idx, self.val_idx, self.test_idx = split["train"], split["valid"], split["test"]
            else:
                try:
                    self.train_idx, self.val_idx, self.test_idx = (
                        torch.nonzero(torch.as_tensor(getattr(self.dataset, m)), as_tuple=True)[0]
                        for m in ("train_mask", "val_mask", "test_mask"))
                except AttributeError:
                    raise DGLError("The input dataset does not have default train/val/test split. Please specify "
                                   "split_ratio to generate the split.") from None
        else:
            if self.verbose:
                print("Generating train/val/test split...")
            train_ratio, val_ratio, _ = self.split_ratio
            num_graphs = len(self.dataset)
            num_train, num_val = int(num_graphs * train_ratio), int(num_graphs * val_ratio)
            idx = np.random.permutation(num_graphs)
            self.train_idx = torch.tensor(idx[:num_train])
            self.val_idx = torch.tensor(idx[num_train:num_train + num_val])
            self.test_idx = torch.tensor(idx[num_train + num_val:])
        self.num_classes = getattr(self.dataset, "num_classes", None)
        self.num_tasks = getattr(self.dataset, "num_tasks", 1)

    def _cache_file(self, kind: str) -> str:
        return os.path.join(self.save_path, f"{kind}_{self.hash}.{'json' if kind == 'info' else 'npz'}")

    def has_cache(self) -> bool:
        return os.path.isfile(self._cache_file("info"))

    def load(self) -> None:
        with open(self._cache_file("info")) as f:
            info = json.load(f)
        if info["split_ratio"] != self.split_ratio:
            raise ValueError("Provided split ratio is different from the cached file. Re-process the dataset.")
        self.split_ratio, self.num_tasks, self.num_classes = info["split_ratio"], info["num_tasks"], info["num_classes"]
        with np.load(self._cache_file("split"), allow_pickle=False) as split:
            self.train_idx, self.val_idx, self.test_idx = (torch.from_numpy(split[k].copy())
                                                           for k in ("train_idx", "val_idx", "test_idx"))

    def save(self) -> None:
        # The split first, the info file (what has_cache looks for) last, each renamed in once complete: an
        # interrupted save leaves no cache a later run would read half of.
        os.makedirs(self.save_path, exist_ok=True)
        write_npz_atomically(self._cache_file("split"), {k: np.asarray(getattr(self, k))
                                                         for k in ("train_idx", "val_idx", "test_idx")})
        info = json.dumps({"split_ratio": self.split_ratio, "num_tasks": self.num_tasks,
                           "num_classes": self.num_classes}).encode()
        write_file_atomically(self._cache_file("info"), lambda f: f.write(info))

    def __getitem__(self, idx):
        return self.dataset[idx]

    def __len__(self) -> int:
        return len(self.dataset)

    @property
    def node_feat_size(self):
        g = self[0][0]
        return g.ndata["feat"].shape[-1] if "feat" in g.ndata else None

    @property
    def edge_feat_size(self):
        g = self[0][0]
        return g.edata["feat"].shape[-1] if "feat" in g.edata else None


def negative_sample(g, num_samples: int) -> np.ndarray:
    """DGL's ``negative_sample``: int64 [2, <= num_samples] node pairs that are no edge of ``g`` and no self-loop,
    from ``np.random.randint`` draws (DGL's redundancy more than asked, ``np.unique`` of the pairs, so sorted);
    fewer than asked when too many draws hit edges.  Costs one existence check per drawn pair."""
    num_nodes = g.num_nodes()
    sample_size = int(num_samples * (1 + _redundancy(num_samples, g.num_edges(), num_nodes ** 2)))
    edges = np.unique(np.random.randint(0, num_nodes, size=(2, sample_size)), axis=1)
    exists = g.has_edges_between(torch.from_numpy(edges[0]), torch.from_numpy(edges[1])).numpy()
    edges = edges[:, ~((edges[0] == edges[1]) | exists)]
    return edges[:, :num_samples] if edges.shape[1] >= num_samples else edges


def _redundancy(k_hat: int, num_edges: int, num_pairs: int, r: int = 3) -> float:
    """DGL's ``_calc_redundancy``, with NumPy's polynomial roots as DGL computes them (so the sample size, an
    ``int`` of it, is DGL's to the last bit)."""
    from numpy.polynomial import Polynomial

    p_m = num_edges / num_pairs
    p_k = 1 - p_m
    root = Polynomial([k_hat ** 2, -p_k * (2 * k_hat + r ** 2 * p_m), p_k ** 2]).roots()[-1]
    return root / k_hat - 1.0


class AsLinkPredDataset(DGLDataset):
    """DGL 2.1's ``dgl.data.AsLinkPredDataset``: the first graph of ``dataset`` as a link-prediction task.

    Parameters
    ----------
    dataset : ``dataset[0]`` a homogeneous graph (with ``ndata["feat"]`` when ``split_ratio`` is given); with
        ``split_ratio`` None, its ``get_edge_split()`` (OGB's ``source_node`` / ``target_node`` /
        ``target_node_neg`` or ``edge`` / ``edge_neg`` layouts) gives the split
    split_ratio : (train, val, test) fractions of the edges, drawn with ``np.random.permutation`` as DGL's
    neg_ratio : negative pairs per validation / test edge (:func:`negative_sample`)
    **kwargs : :class:`DGLDataset`'s

    Attributes
    ----------
    train_graph : the graph of the training edges (all nodes, ``feat`` kept); ``val_edges`` / ``test_edges`` :
    ``((pos_src, pos_dst), (neg_src, neg_dst))`` int64 tensors (OGB's arrays as given); ``feat_size``.

    The same split as DGL's for the same NumPy state.  Nothing is cached (DGL saves the split as its binary
    graph file): drawing it costs one permutation of the edges and the negative draws.
    """

    def __init__(self, dataset, split_ratio=None, neg_ratio=3, **kwargs):
        self.g = dataset[0]
        self.num_nodes = self.g.num_nodes()
        self.dataset, self.split_ratio, self.neg_ratio = dataset, split_ratio, neg_ratio
        super().__init__(dataset.name + "-as-linkpred", hash_key=(neg_ratio, split_ratio, dataset.name, "linkpred"),
                         **kwargs)

    def process(self) -> None:
        if self.split_ratio is None:
            assert hasattr(self.dataset, "get_edge_split"), ("dataset doesn't have get_edge_split method, please "
                                                             "specify split_ratio and neg_ratio to generate the split")
            split = self.dataset.get_edge_split()
            self._train_graph = self.g
            self._val_edges, self._test_edges = (self._ogb_edges(split[part]) for part in ("valid", "test"))
            return
        assert self.neg_ratio is not None, "Need to specify neg_ratio"
        from .. import graph as make_graph

        g = self.dataset[0]
        n = g.num_edges()
        src, dst = (t.numpy() for t in g.edges())
        n_train, n_val = int(n * self.split_ratio[0]), int(n * self.split_ratio[1])
        n_test = int(n * self.split_ratio[2])
        idx = np.random.permutation(n)
        train, val, test = idx[:n_train], idx[n_train:n_train + n_val], idx[n_train + n_val:]
        neg_src, neg_dst = negative_sample(g, self.neg_ratio * (n_val + n_test))
        cut = self.neg_ratio * n_val

        def pairs(s, d):
            return torch.from_numpy(np.ascontiguousarray(s)), torch.from_numpy(np.ascontiguousarray(d))

        self._val_edges = pairs(src[val], dst[val]), pairs(neg_src[:cut], neg_dst[:cut])
        self._test_edges = pairs(src[test], dst[test]), pairs(neg_src[cut:], neg_dst[cut:])
        self._train_graph = make_graph(pairs(src[train], dst[train]), num_nodes=self.num_nodes)
        self._train_graph.ndata["feat"] = g.ndata["feat"]

    @staticmethod
    def _ogb_edges(part: dict):
        if "source_node" in part:
            src, neg = part["source_node"], part["target_node_neg"]
            negatives = (np.repeat(src, neg.shape[-1]), np.reshape(neg, -1))
            return (src, part["target_node"]), negatives
        pos, neg = part["edge"], part["edge_neg"]
        return (pos[:, 0], pos[:, 1]), (neg[:, 0], neg[:, 1])

    @property
    def feat_size(self) -> int:
        return self._train_graph.ndata["feat"].shape[-1]

    @property
    def train_graph(self):
        return self._train_graph

    @property
    def val_edges(self):
        return self._val_edges

    @property
    def test_edges(self):
        return self._test_edges

    def __getitem__(self, idx):
        return self.g

    def __len__(self) -> int:
        return 1
