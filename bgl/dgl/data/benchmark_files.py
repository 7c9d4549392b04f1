"""DGL 2.1's single-graph node-classification benchmarks read from the raw files DGL downloads, nothing downloaded:

* ``CoraFullDataset``, ``AmazonCoBuyComputerDataset``, ``AmazonCoBuyPhotoDataset``, ``CoauthorCSDataset``,
  ``CoauthorPhysicsDataset``: the GNN-benchmark ``<name>.npz`` (``adj_*``, ``attr_*`` or ``attr_matrix``,
  ``labels_*`` or ``labels``) in ``raw_dir/<name>_<hash>/``; the adjacency made bidirected and simple, then
  DGL's RCMK node order and destination-sorted edges.  Read with ``allow_pickle=False``: only the numeric
  arrays are touched (the files' ``idx_to_node`` / ``class_names`` object arrays, which would need pickle,
  are never read).
* ``WikiCSDataset``: ``data.json`` (links, features, labels, the 20 train / val / stopping masks and the test
  mask), bidirected, reordered as above.
* ``FlickrDataset`` / ``YelpDataset``: GraphSAINT's ``adj_full.npz`` (a SciPy sparse matrix, read with NumPy),
  ``feats.npy``, ``class_map.json``, ``role.json``; DGL's RCMK reordering only with ``reorder=True``.

The graphs, fields, dtypes and masks are DGL's for the same files (a reordered graph keeps DGL's
``edata["__orig__"]``, each edge's id before the reordering).  Without the files, FileNotFoundError in
one line names the folder to put them in and the URL.  Nothing is cached (DGL writes ``dgl_graph*.bin``).
"""
from __future__ import annotations

import json
import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import OneGraphDataset, named_subclass, require_files
from .reddit import read_scipy_npz
from .synthetic import reordered_graph
from .utils import _get_dgl_url

__all__ = ["GNNBenchmarkDataset", "CoraFullDataset", "AmazonCoBuyComputerDataset", "AmazonCoBuyPhotoDataset",
           "CoauthorCSDataset", "CoauthorPhysicsDataset", "WikiCSDataset", "FlickrDataset", "YelpDataset", "CoraFull",
           "AmazonCoBuy", "Coauthor"]


class _OneGraphFiles(OneGraphDataset):
    """One graph read from ``raw_path``."""

    _only_one = "This dataset has only one graph"

    def _need(self, *names: str) -> None:
        require_files(self.raw_path, names, self.url, type(self).__name__)


def _csr_rows(indptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))


def _dense(z, prefix: str) -> np.ndarray:
    """The dense matrix of the CSR arrays ``<prefix>_data / _indices / _indptr / _shape`` (duplicates summed,
    as SciPy's ``todense``)."""
    out = np.zeros(tuple(int(s) for s in z[f"{prefix}_shape"]), dtype=z[f"{prefix}_data"].dtype)
    np.add.at(out, (_csr_rows(z[f"{prefix}_indptr"]), z[f"{prefix}_indices"].astype(np.int64)), z[f"{prefix}_data"])
    return out


def _bidirected(src: np.ndarray, dst: np.ndarray, num_nodes=None) -> tuple[np.ndarray, np.ndarray, int]:
    """DGL's ``to_bidirected(graph((src, dst)))``: both directions, simple, node count max id + 1 unless given."""
    from .. import graph, to_bidirected

    g = to_bidirected(graph((torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))),
                            num_nodes=num_nodes))
    s, d = g.edges()
    return s.numpy(), d.numpy(), g.num_nodes()


class GNNBenchmarkDataset(_OneGraphFiles):
    """One of the GNN-benchmark graphs (Shchur et al.) from ``raw_path/<name>.npz`` (module doc).

    ``dataset[0]``: ``ndata["feat"]`` float32, ``ndata["label"]`` int64.  DGL 2.1's arguments.
    """

    def __init__(self, name: str, raw_dir=None, force_reload: bool = False, verbose: bool = False,
                 transform: Optional[Callable] = None):
        super().__init__(name=name, url=_get_dgl_url("dataset/" + name + ".zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        self._need(self.name + ".npz")
        with np.load(os.path.join(self.raw_path, self.name + ".npz"), allow_pickle=False) as z:
            keys = set(z.files)
            row, col = _csr_rows(z["adj_indptr"]), z["adj_indices"].astype(np.int64)
            attr = _dense(z, "attr") if "attr_data" in keys else z["attr_matrix"] if "attr_matrix" in keys else None
            labels = (_dense(z, "labels") if "labels_data" in keys else z["labels"] if "labels" in keys else None)
        src, dst, n = _bidirected(row, col)
        ndata = {"feat": torch.as_tensor(np.asarray(attr), dtype=torch.float32),
                 "label": torch.as_tensor(np.asarray(labels), dtype=torch.int64)}
        for key, value in ndata.items():
            if value.shape[0] != n:
                from ..base import DGLError

                raise DGLError(f"{self.name}.npz: {key} has {value.shape[0]} rows but the graph has {n} nodes")
        self._graph = reordered_graph(src, dst, n, ndata)
        if self.verbose:
            g = self._graph
            print(f"  NumNodes: {g.num_nodes()}\n  NumEdges: {g.num_edges()}\n  NumFeats: {g.ndata['feat'].shape[-1]}"
                  f"\n  NumbClasses: {self.num_classes}")

    @property
    def num_classes(self) -> int:
        raise NotImplementedError


def _benchmark(cls_name: str, name: str, classes: int, what: str) -> type:
    return named_subclass(GNNBenchmarkDataset, cls_name, name, f"{what} (DGL 2.1's ``{cls_name}``, {classes} classes) "
                          f"from ``{name}.npz`` (module doc).", num_classes=property(lambda self: classes))


CoraFullDataset = _benchmark("CoraFullDataset", "cora_full", 70, "Cora's full citation graph")
CoauthorCSDataset = _benchmark("CoauthorCSDataset", "coauthor_cs", 15, "Microsoft Academic's CS co-authors")
CoauthorPhysicsDataset = _benchmark("CoauthorPhysicsDataset", "coauthor_physics", 5,
                                    "Microsoft Academic's physics co-authors")
AmazonCoBuyComputerDataset = _benchmark("AmazonCoBuyComputerDataset", "amazon_co_buy_computer", 10,
                                        "Amazon's co-purchased computers")
AmazonCoBuyPhotoDataset = _benchmark("AmazonCoBuyPhotoDataset", "amazon_co_buy_photo", 8,
                                     "Amazon's co-purchased photo products")


class WikiCSDataset(_OneGraphFiles):
    """Wiki-CS (11,701 nodes, 10 classes) from ``data.json`` (module doc), DGL 2.1's arguments.

    ``dataset[0]``: ``feat`` float32, ``label`` int64, ``train_mask`` / ``val_mask`` / ``stopping_mask`` bool
    [n, 20] (one column per split), ``test_mask`` bool [n].
    """

    def __init__(self, raw_dir=None, force_reload=False, verbose=False, transform: Optional[Callable] = None):
        super().__init__(name="wiki_cs", url=_get_dgl_url("dataset/wiki_cs.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        self._need("data.json")
        with open(os.path.join(self.raw_path, "data.json")) as f:
            data = json.load(f)
        lengths = np.fromiter((len(js) for js in data["links"]), np.int64, len(data["links"]))
        src = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), lengths)
        dst = np.fromiter((j for js in data["links"] for j in js), np.int64, int(lengths.sum()))
        src, dst, n = _bidirected(src, dst)
        ndata = {"feat": torch.tensor(np.array(data["features"]), dtype=torch.float32),
                 "label": torch.tensor(np.array(data["labels"]), dtype=torch.int64)}
        for key in ("train_masks", "val_masks", "stopping_masks"):
            ndata[key[:-1]] = torch.from_numpy(np.ascontiguousarray(np.array(data[key], dtype=bool).T))
        ndata["test_mask"] = torch.from_numpy(np.array(data["test_mask"], dtype=bool))
        self._graph = reordered_graph(src, dst, n, ndata)

    @property
    def num_classes(self) -> int:
        return 10


class FlickrDataset(_OneGraphFiles):
    """GraphSAINT's Flickr (89,250 nodes, 7 classes) from its raw files (module doc), DGL 2.1's arguments.

    ``dataset[0]``: ``feat`` float32, ``label`` int64 (-1 for a node ``class_map.json`` leaves out),
    ``train_mask`` / ``val_mask`` / ``test_mask`` bool from ``role.json``'s ``tr`` / ``va`` / ``te``.
    """

    _dgl_name, _classes = "flickr", 7

    def __init__(self, raw_dir=None, force_reload=False, verbose=False, transform: Optional[Callable] = None,
                 reorder: bool = False):
        self._reorder = reorder
        super().__init__(name=self._dgl_name, url=_get_dgl_url(f"dataset/{self._dgl_name}.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        from .. import graph

        self._need("adj_full.npz", "feats.npy", "class_map.json", "role.json")
        src, dst, n = read_scipy_npz(os.path.join(self.raw_path, "adj_full.npz"))
        features = np.load(os.path.join(self.raw_path, "feats.npy"), allow_pickle=False)
        y = [-1] * features.shape[0]
        with open(os.path.join(self.raw_path, "class_map.json")) as f:
            for key, item in json.load(f).items():
                y[int(key)] = item
        with open(os.path.join(self.raw_path, "role.json")) as f:
            role = json.load(f)
        ndata = {"feat": torch.tensor(features, dtype=torch.float32),
                 "label": torch.tensor(np.array(y), dtype=torch.int64)}
        for key, part in (("train_mask", "tr"), ("val_mask", "va"), ("test_mask", "te")):
            mask = np.zeros(features.shape[0], dtype=bool)
            mask[role[part]] = True
            ndata[key] = torch.from_numpy(mask)
        if self._reorder:
            self._graph = reordered_graph(src, dst, n, ndata)
        else:
            self._graph = graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
            for key, value in ndata.items():
                self._graph.ndata[key] = value

    @property
    def num_classes(self) -> int:
        return self._classes


class YelpDataset(FlickrDataset):
    """GraphSAINT's Yelp (716,847 nodes, 100 labels): Flickr's files and fields, ``label`` int64 [n, 100]
    (multi-label, as ``class_map.json`` lists it)."""

    _dgl_name, _classes = "yelp", 100


class CoraFull(CoraFullDataset):
    """DGL's deprecated name of :class:`CoraFullDataset` (keyword arguments only, as DGL's)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


def AmazonCoBuy(name: str):  # noqa: N802 (DGL's deprecated factory)
    """DGL's deprecated factory: ``"computers"`` or ``"photo"``, DGL's default arguments."""
    if name not in ("computers", "photo"):
        raise ValueError('Dataset name should be "computers" or "photo".')
    return AmazonCoBuyComputerDataset() if name == "computers" else AmazonCoBuyPhotoDataset()


def Coauthor(name: str):  # noqa: N802 (DGL's deprecated factory)
    """DGL's deprecated factory: ``"cs"`` or ``"physics"``, DGL's default arguments."""
    if name not in ("cs", "physics"):
        raise ValueError('Dataset name should be "cs" or "physics".')
    return CoauthorCSDataset() if name == "cs" else CoauthorPhysicsDataset()
