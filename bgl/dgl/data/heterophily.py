"""DGL 2.1's heterophilous-graph datasets from the raw files DGL downloads, nothing downloaded:

* ``RomanEmpireDataset``, ``AmazonRatingsDataset``, ``MinesweeperDataset``, ``TolokersDataset``,
  ``QuestionsDataset`` (Platonov et al.): ``raw_dir/<name>_<hash>/<name>.npz`` (``edges``, ``node_features``,
  ``node_labels``, ``train_masks`` / ``val_masks`` / ``test_masks`` [10, n]), read with ``allow_pickle=False``;
  the graph bidirected and simple, masks [n, 10], ``num_classes`` the count of distinct labels.
* ``ChameleonDataset``, ``SquirrelDataset``, ``CornellDataset``, ``TexasDataset``, ``WisconsinDataset``
  (Geom-GCN's splits) and ``ActorDataset``: ``out1_node_feature_label.txt``, ``out1_graph_edges.txt`` (each
  line ``dst<TAB>src``: the edge runs from the second column to the first, as DGL reads it) and the ten
  ``<name>_split_0.6_0.2_<i>.npz``; masks bool [n, 10].  Actor's features are the listed word indices as a
  0/1 float32 matrix.

Fields and dtypes are DGL's for the same files; the heterophilous edges are read as int64 (DGL keeps the
file's integer type as the graph's id type; the published files hold int64).  The text files are parsed by
NumPy (one pass, no per-line Python), and, as DGL does, their first line (a header) and their last line
(empty after the final newline) are skipped.  A missing file raises FileNotFoundError naming where to put it
and the URL.
"""
from __future__ import annotations

import io
import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import OneGraphDataset, named_subclass, require_files
from .utils import _get_dgl_url

__all__ = ["HeterophilousGraphDataset", "RomanEmpireDataset", "AmazonRatingsDataset", "MinesweeperDataset",
           "TolokersDataset", "QuestionsDataset", "GeomGCNDataset", "ChameleonDataset", "SquirrelDataset",
           "CornellDataset", "TexasDataset", "WisconsinDataset", "ActorDataset"]


class _OneGraph(OneGraphDataset):
    @property
    def num_classes(self) -> int:
        return self._num_classes


class HeterophilousGraphDataset(_OneGraph):
    """One of the heterophilous graphs of Platonov et al. from ``<name>.npz`` (module doc); DGL 2.1's arguments.
    ``name`` is lower-cased with ``-`` as ``_`` (``"roman-empire"`` reads ``roman_empire.npz``)."""

    def __init__(self, name: str, raw_dir=None, force_reload=False, verbose=True, transform: Optional[Callable] = None):
        name = name.lower().replace("-", "_")
        url = f"https://github.com/yandex-research/heterophilous-graphs/raw/main/data/{name}.npz"
        super().__init__(name=name, url=url, raw_dir=raw_dir, force_reload=force_reload, verbose=verbose,
                         transform=transform)

    def download(self) -> None:
        require_files(self.raw_path, (f"{self.name}.npz",), self.url, type(self).__name__)

    def process(self) -> None:
        from .. import graph, to_bidirected

        self.download()
        with np.load(os.path.join(self.raw_path, f"{self.name}.npz"), allow_pickle=False) as data:
            edges = data["edges"].astype(np.int64)
            labels = torch.from_numpy(data["node_labels"])
            ndata = {"feat": torch.from_numpy(data["node_features"]), "label": labels}
            for key in ("train", "val", "test"):
                ndata[f"{key}_mask"] = torch.from_numpy(np.ascontiguousarray(data[f"{key}_masks"].T))
        self._num_classes = len(labels.unique())
        self._graph = to_bidirected(graph((torch.from_numpy(edges[:, 0]), torch.from_numpy(edges[:, 1])),
                                      num_nodes=len(labels)))
        for key, value in ndata.items():
            self._graph.ndata[key] = value


def _heterophilous(cls_name: str, name: str, what: str) -> type:
    return named_subclass(HeterophilousGraphDataset, cls_name, name, f"{what} (DGL 2.1's ``{cls_name}``) from "
                          f"``{name.replace('-', '_')}.npz`` (module doc).")


RomanEmpireDataset = _heterophilous("RomanEmpireDataset", "roman-empire", "Roman Empire's Wikipedia word graph")
AmazonRatingsDataset = _heterophilous("AmazonRatingsDataset", "amazon-ratings", "Amazon product co-purchases")
MinesweeperDataset = _heterophilous("MinesweeperDataset", "minesweeper", "A Minesweeper grid")
TolokersDataset = _heterophilous("TolokersDataset", "tolokers", "Toloka workers")
QuestionsDataset = _heterophilous("QuestionsDataset", "questions", "Yandex Q users")


def _body(path: str) -> str:
    """The file's lines after the first and before the last, as DGL's ``read().split("\\n")[1:-1]``."""
    with open(path) as f:
        return "\n".join(f.read().split("\n")[1:-1])


def _edges(raw_path: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(src, dst)`` int64 of ``out1_graph_edges.txt`` (each line ``dst<TAB>src``)."""
    table = np.loadtxt(io.StringIO(_body(os.path.join(raw_path, "out1_graph_edges.txt"))), dtype=np.int64,
                       delimiter="\t", ndmin=2)
    return torch.from_numpy(table[:, 1].copy()), torch.from_numpy(table[:, 0].copy())


class GeomGCNDataset(_OneGraph):
    """One of Geom-GCN's graphs from its text files and ten splits (module doc); DGL 2.1's arguments.

    ``dataset[0]``: ``feat`` float32, ``label`` int64, ``train_mask`` / ``val_mask`` / ``test_mask`` bool
    [n, 10]; ``num_classes`` the largest label + 1.
    """

    def __init__(self, name: str, raw_dir=None, force_reload=False, verbose=True, transform=None):
        super().__init__(name=name, url=_get_dgl_url(f"dataset/{name}.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def _split_files(self) -> list[str]:
        return [f"{self.name}_split_0.6_0.2_{i}.npz" for i in range(10)]

    def _nodes(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(feat, label)`` of ``out1_node_feature_label.txt`` (``id<TAB>f1,...,fk<TAB>label``, rows in id
        order as DGL assumes)."""
        body = _body(os.path.join(self.raw_path, "out1_node_feature_label.txt")).replace("\t", ",")
        table = np.loadtxt(io.StringIO(body), dtype=np.float64, delimiter=",", ndmin=2)
        return torch.tensor(table[:, 1:-1], dtype=torch.float32), torch.from_numpy(table[:, -1].astype(np.int64))

    def process(self) -> None:
        from .. import graph

        require_files(self.raw_path, ["out1_node_feature_label.txt", "out1_graph_edges.txt"] + self._split_files(),
                      self.url, type(self).__name__)
        features, labels = self._nodes()
        self._num_classes = int(labels.max()) + 1
        src, dst = _edges(self.raw_path)
        self._graph = graph((src, dst), num_nodes=features.shape[0])
        self._graph.ndata["feat"] = features
        self._graph.ndata["label"] = labels
        masks = {"train_mask": [], "val_mask": [], "test_mask": []}
        for name in self._split_files():
            with np.load(os.path.join(self.raw_path, name), allow_pickle=False) as split:
                for key, found in masks.items():
                    found.append(torch.from_numpy(split[key]))
        for key, found in masks.items():
            self._graph.ndata[key] = torch.stack(found, dim=1).bool()


def _geom(cls_name: str, name: str, what: str) -> type:
    return named_subclass(GeomGCNDataset, cls_name, name, f"{what} (DGL 2.1's ``{cls_name}``) from Geom-GCN's files "
                          f"in ``{name}_<hash>/`` (module doc).")


ChameleonDataset = _geom("ChameleonDataset", "chameleon", "Wikipedia's chameleon pages")
SquirrelDataset = _geom("SquirrelDataset", "squirrel", "Wikipedia's squirrel pages")
CornellDataset = _geom("CornellDataset", "cornell", "WebKB's Cornell pages")
TexasDataset = _geom("TexasDataset", "texas", "WebKB's Texas pages")
WisconsinDataset = _geom("WisconsinDataset", "wisconsin", "WebKB's Wisconsin pages")


class ActorDataset(GeomGCNDataset):
    """Geom-GCN's actor co-occurrence graph (module doc; DGL 2.1's arguments): ``feat`` float32 0/1 [n, w]
    (``w`` the largest listed word index + 1), ``label`` int64 placed by node id."""

    def __init__(self, raw_dir=None, force_reload=False, verbose=True, transform: Optional[Callable] = None):
        super().__init__("actor", raw_dir, force_reload, verbose, transform)

    def _nodes(self) -> tuple[torch.Tensor, torch.Tensor]:
        body = _body(os.path.join(self.raw_path, "out1_node_feature_label.txt"))
        fields = body.replace("\n", "\t").split("\t")
        ids = np.array(fields[0::3], dtype=np.int64)
        words = fields[1::3]
        counts = np.char.count(np.array(words), ",") + 1
        cols = torch.from_numpy(np.array(",".join(words).split(","), dtype=np.int64))
        rows = torch.from_numpy(np.repeat(ids, counts))
        labels = torch.empty(ids.shape[0], dtype=torch.long)
        labels[torch.from_numpy(ids)] = torch.from_numpy(np.array(fields[2::3], dtype=np.int64))
        features = torch.zeros(ids.shape[0], int(cols.max()) + 1)
        features[rows, cols] = 1.0
        return features, labels
