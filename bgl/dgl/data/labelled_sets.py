"""DGL 2.1's fraud, fake-news and benchmarking-GNNs datasets from the files DGL downloads, nothing downloaded:

* ``FraudDataset`` (``FraudYelpDataset``, ``FraudAmazonDataset``): ``YelpChi.mat`` / ``Amazon.mat`` in
  ``raw_dir/<yelp|amazon>_<hash>/`` (read with SciPy's ``loadmat``): one node type (``review`` / ``user``), one
  edge type per relation matrix (``net_rsr``, ``net_rtr``, ``net_rur`` / ``net_upu``, ``net_usu``, ``net_uvu``,
  entries in stored order), ``ndata`` ``feature`` float32, ``label`` int64 and DGL's seeded random
  ``train_mask`` / ``val_mask`` / ``test_mask`` (Amazon's first 3,305 users in no split, as DGL).
* ``FakeNewsDataset``: UPFD's ``A.txt``, ``node_graph_id.npy``, ``graph_labels.npy``, ``train_idx.npy`` /
  ``val_idx.npy`` / ``test_idx.npy`` and ``new_<feature_name>_feature.npz`` (a SciPy sparse matrix, read with
  NumPy) in ``raw_dir/<gossipcop|politifact>_<hash>/``: one tree per news item, the subgraph of its nodes
  (``ndata`` / ``edata`` ``dgl.NID`` / ``dgl.EID``), cut in one pass over the edges; ``feature`` the dense
  matrix, graph masks.
* ``ZINCDataset``, ``CLUSTERDataset``, ``PATTERNDataset``: DGL ships these only as ``dgl.save_graphs`` files
  (``ZincDGL_<mode>.bin``, ``CLUSTER_<mode>.bin``, ``SBM_PATTERN_<mode>.bin``), a format bgl does not read.
  Rewritten in place in bgl's format (where DGL imports: ``bgl.dgl.data.save_graphs(p, *dgl.load_graphs(p))``)
  they load here under DGL's names; DGL's own file raises ValueError in one line saying so.

A missing file raises FileNotFoundError naming where to put it and the URL.  Nothing is cached.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, OneGraphDataset, require_files
from .graph_files import DGL_MAGIC, load_graphs
from .molecules import loadmat
from .utils import _get_dgl_url

__all__ = ["FraudDataset", "FraudYelpDataset", "FraudAmazonDataset", "FakeNewsDataset", "ZINCDataset",
           "CLUSTERDataset", "PATTERNDataset"]


class FraudDataset(OneGraphDataset):
    """A fraud-detection graph (module doc); DGL 2.1's arguments (``name`` ``"yelp"`` or ``"amazon"``)."""

    file_urls = {"yelp": "dataset/FraudYelp.zip", "amazon": "dataset/FraudAmazon.zip"}
    relations = {"yelp": ["net_rsr", "net_rtr", "net_rur"], "amazon": ["net_upu", "net_usu", "net_uvu"]}
    file_names = {"yelp": "YelpChi.mat", "amazon": "Amazon.mat"}
    node_name = {"yelp": "review", "amazon": "user"}
    _only_one = "This dataset has only one graph"

    def __init__(self, name, raw_dir=None, random_seed=717, train_size=0.7, val_size=0.1, force_reload=False,
                 verbose=True, transform: Optional[Callable] = None):
        assert name in ["yelp", "amazon"], "only supports 'yelp', or 'amazon'"
        self.seed, self.train_size, self.val_size = random_seed, train_size, val_size
        super().__init__(name=name, url=_get_dgl_url(self.file_urls[name]), raw_dir=raw_dir,
                         hash_key=(random_seed, train_size, val_size), force_reload=force_reload, verbose=verbose,
                         transform=transform)

    def process(self) -> None:
        from .. import heterograph

        require_files(self.raw_path, (self.file_names[self.name],), self.url, type(self).__name__)
        data = loadmat(os.path.join(self.raw_path, self.file_names[self.name]))
        nt = self.node_name[self.name]
        edges = {}
        for relation in self.relations[self.name]:
            adj = data[relation].tocoo()
            # DGL gets NumPy arrays here, so int64 ids whatever SciPy's index type
            edges[(nt, relation, nt)] = (torch.from_numpy(adj.row.astype(np.int64)),
                                         torch.from_numpy(adj.col.astype(np.int64)))
        g = heterograph(edges)
        g.ndata["feature"] = torch.tensor(np.asarray(data["features"].todense()), dtype=torch.float32)
        g.ndata["label"] = torch.tensor(data["label"].squeeze(), dtype=torch.int64)
        self._graph = g
        self._random_split(g.ndata["feature"], self.seed, self.train_size, self.val_size)

    @property
    def graph(self):
        return self._graph

    def __len__(self) -> int:
        return len(self.graph)  # DGL's: a DGLGraph has no len(), so TypeError as under DGL

    @property
    def num_classes(self) -> int:
        return 2

    def _random_split(self, x, seed=717, train_size=0.7, val_size=0.1) -> None:
        assert 0 <= train_size + val_size <= 1, ("The sum of valid training set size and validation set size must "
                                                 "between 0 and 1 (inclusive).")
        n = x.shape[0]
        index = np.arange(3305 if self.name == "amazon" else 0, n)
        index = np.random.RandomState(seed).permutation(index)
        k, n_train, n_val = len(index), int(train_size * len(index)), int(val_size * len(index))
        for key, part in (("train_mask", index[:n_train]), ("val_mask", index[k - n_val:]),
                          ("test_mask", index[n_train:k - n_val])):
            mask = np.zeros(n, dtype=np.bool_)
            mask[part] = True
            self._graph.ndata[key] = torch.from_numpy(mask)


class FraudYelpDataset(FraudDataset):
    """Yelp's spam reviews (45,954 nodes), :class:`FraudDataset` ``"yelp"``."""

    def __init__(self, raw_dir=None, random_seed=717, train_size=0.7, val_size=0.1, force_reload=False,
                 verbose=True, transform: Optional[Callable] = None):
        super().__init__("yelp", raw_dir, random_seed, train_size, val_size, force_reload, verbose, transform)


class FraudAmazonDataset(FraudDataset):
    """Amazon's fraudulent users (11,944 nodes), :class:`FraudDataset` ``"amazon"``."""

    def __init__(self, raw_dir=None, random_seed=717, train_size=0.7, val_size=0.1, force_reload=False,
                 verbose=True, transform: Optional[Callable] = None):
        super().__init__("amazon", raw_dir, random_seed, train_size, val_size, force_reload, verbose, transform)


def sparse_npz_dense(path: str) -> np.ndarray:
    """The dense matrix of a ``scipy.sparse.save_npz`` file (COO / CSR / CSC; duplicates summed, as
    ``todense``), read with NumPy, ``allow_pickle=False``."""
    with np.load(path, allow_pickle=False) as z:
        fmt = z["format"].item()
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        out = np.zeros(tuple(int(s) for s in z["shape"]), dtype=z["data"].dtype)
        if fmt == "coo":
            rows, cols = z["row"].astype(np.int64), z["col"].astype(np.int64)
        elif fmt in ("csr", "csc"):
            indptr = z["indptr"].astype(np.int64)
            major = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
            rows, cols = (major, z["indices"]) if fmt == "csr" else (z["indices"], major)
        else:
            raise ValueError(f"{path}: sparse format {fmt!r} (expected coo, csr or csc, as save_npz writes)")
        np.add.at(out, (rows, cols), z["data"])
    return out


class FakeNewsDataset(DGLBuiltinDataset):
    """UPFD's news-propagation trees (module doc); DGL 2.1's arguments.

    ``name`` ``"gossipcop"`` or ``"politifact"``; ``feature_name`` ``"bert"``, ``"content"``, ``"profile"`` or
    ``"spacy"``.  ``dataset[i]``: ``(tree, label)``; ``feature`` holds the node features of all trees.
    """

    file_urls = {"gossipcop": "dataset/FakeNewsGOS.zip", "politifact": "dataset/FakeNewsPOL.zip"}

    def __init__(self, name, feature_name, raw_dir=None, transform: Optional[Callable] = None):
        assert name in ["gossipcop", "politifact"], "Only supports 'gossipcop' or 'politifact'."
        url = _get_dgl_url(self.file_urls[name])
        assert feature_name in ["bert", "content", "profile", "spacy"], \
            "Only supports 'bert', 'content', 'profile', or 'spacy'"
        self.feature_name = feature_name
        super().__init__(name=name, url=url, raw_dir=raw_dir, transform=transform)

    def process(self) -> None:
        from .. import graph
        from ..base import EID, NID

        feature_file = "new_" + self.feature_name + "_feature.npz"
        names = ("graph_labels.npy", "node_graph_id.npy", "A.txt", "train_idx.npy", "val_idx.npy", "test_idx.npy",
                 feature_file)
        require_files(self.raw_path, names, self.url, type(self).__name__)
        path = lambda name: os.path.join(self.raw_path, name)  # noqa: E731
        self.labels = torch.from_numpy(np.load(path("graph_labels.npy"), allow_pickle=False))
        num_graphs = self.labels.shape[0]
        node_graph_id = np.load(path("node_graph_id.npy"), allow_pickle=False).astype(np.int64)
        edges = np.genfromtxt(path("A.txt"), delimiter=",", dtype=int).reshape(-1, 2)
        src, dst = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
        n = int(max(src.max(), dst.max())) + 1 if src.size else 0
        if node_graph_id.shape[0] > n:
            from ..base import DGLError

            raise DGLError(f"A.txt names {n} nodes but node_graph_id.npy has {node_graph_id.shape[0]}")
        gid = node_graph_id
        count = int(gid.max()) + 1
        in_tree = np.full(n, -1, np.int64)  # a node node_graph_id leaves out is in no tree
        in_tree[: gid.shape[0]] = gid
        # each node's id inside its tree: its rank among the nodes of the same tree (DGL's subgraph relabels so)
        order = np.argsort(gid, kind="stable")
        starts = np.concatenate([[0], np.cumsum(np.bincount(gid, minlength=count))])
        local = np.empty(gid.shape[0], np.int64)
        local[order] = np.arange(gid.shape[0]) - starts[gid[order]]
        # an edge stays when both ends are in one tree; by tree, then source, then edge id (DGL's CSR order)
        eids = np.flatnonzero((in_tree[src] == in_tree[dst]) & (in_tree[src] >= 0))
        eids = eids[np.lexsort((eids, src[eids], in_tree[src[eids]]))]
        ebounds = np.searchsorted(in_tree[src[eids]], np.arange(count + 1))
        self.graphs = []
        for i in range(count):
            nodes, e = order[starts[i]:starts[i + 1]], eids[ebounds[i]:ebounds[i + 1]]
            g = graph((torch.from_numpy(local[src[e]]), torch.from_numpy(local[dst[e]])), num_nodes=nodes.shape[0])
            g.ndata[NID], g.edata[EID] = torch.from_numpy(nodes), torch.from_numpy(e)
            self.graphs.append(g)
        for key in ("train", "val", "test"):
            mask = np.zeros(num_graphs, dtype=np.bool_)
            mask[np.load(path(f"{key}_idx.npy"), allow_pickle=False)] = True
            setattr(self, f"{key}_mask", torch.from_numpy(mask))
        self.feature = torch.from_numpy(sparse_npz_dense(path(feature_file)))

    @property
    def num_classes(self) -> int:
        return 2

    @property
    def num_graphs(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, i):
        g = self.graphs[i]
        return self._transformed(g), self.labels[i]

    def __len__(self) -> int:
        return len(self.graphs)


class _ConvertedBin(DGLBuiltinDataset):
    """A benchmarking-GNNs split from ``<save_path>/<_file % mode>`` rewritten in bgl's format (module doc)."""

    _file, _zip, _dgl_name = "", "", ""

    def __init__(self, mode="train", raw_dir=None, force_reload=False, verbose=False,
                 transform: Optional[Callable] = None):
        self.mode = mode
        super().__init__(name=self._dgl_name, url=_get_dgl_url(f"dataset/{self._zip}"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    @property
    def graph_path(self) -> str:
        return os.path.join(self.save_path, self._file.format(self.mode))

    def process(self) -> None:
        require_files(self.save_path, (self._file.format(self.mode),), self.url, type(self).__name__)
        with open(self.graph_path, "rb") as f:
            if f.read(8) == DGL_MAGIC:
                raise ValueError(f"{type(self).__name__}: {self.graph_path} is DGL's binary format, which bgl does "
                                 "not read; where DGL imports, rewrite it in place with "
                                 "bgl.dgl.data.save_graphs(p, *dgl.load_graphs(p)) for p that path")
        self._graphs, self._labels = load_graphs(self.graph_path)

    def __len__(self) -> int:
        return len(self._graphs)

    def __getitem__(self, idx):
        g = self._graphs[idx]
        return self._transformed(g)


class ZINCDataset(_ConvertedBin):
    """ZINC's 12,000 molecules (module doc): ``(graph, g_label)``; 28 atom types, 4 bond types."""

    _file, _zip, _dgl_name = "ZincDGL_{}.bin", "ZINC12k.zip", "zinc"

    @property
    def num_atom_types(self) -> int:
        return 28

    @property
    def num_bond_types(self) -> int:
        return 4

    def __getitem__(self, idx):
        return super().__getitem__(idx), self._labels["g_label"][idx]


class CLUSTERDataset(_ConvertedBin):
    """SBM CLUSTER's node-classification graphs (module doc), 6 classes."""

    _file, _zip, _dgl_name = "CLUSTER_{}.bin", "SBM_CLUSTER.zip", "cluster"

    @property
    def num_classes(self) -> int:
        return 6


class PATTERNDataset(_ConvertedBin):
    """SBM PATTERN's node-classification graphs (module doc), 2 classes."""

    _file, _zip, _dgl_name = "SBM_PATTERN_{}.bin", "SBM_PATTERN.zip", "pattern"

    def __init__(self, mode="train", raw_dir=None, force_reload=False, verbose=False,
                 transform: Optional[Callable] = None):
        assert mode in ["train", "valid", "test"]
        super().__init__(mode, raw_dir, force_reload, verbose, transform)

    @property
    def num_classes(self) -> int:
        return 2
