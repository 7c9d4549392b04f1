"""DGL's ``LegacyTUDataset``: the TU benchmarks as DGL's older graph-classification examples (SAGPool, HGP-SL,
DiffPool) read them, from the same raw text files as :class:`bgl.dgl.data.TUDataset`, nothing downloaded.

What differs from ``TUDataset`` (as in DGL 2.1): every graph has ``ndata["feat"]`` (float32): the node
attributes when the dataset has them, else the one-hot node labels (width: the largest label + 1), else
ones of width ``hidden_size``; the graph labels are shifted to start at 0 but not renumbered
(``graph_labels`` int64 [num_graphs], ``num_labels`` = largest + 1) or are the float graph attributes;
``max_allow_node`` drops the graphs with more nodes (and sets ``max_num_node`` to it); ``use_pandas`` only
chose DGL's parser (the same integers); ``data_mode`` says where ``feat`` came from.  Each graph is the
subgraph its nodes induce (``ndata`` / ``edata`` ``dgl.NID`` / ``dgl.EID``; edges by source, then in
file order).  Files: ``raw_dir/<NAME>_<hash>/<NAME>/<NAME>_*.txt``, where DGL 2.1 extracts the zip.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, require_files
from .tu import URL


class LegacyTUDataset(DGLBuiltinDataset):
    """One TU dataset the legacy way (module doc); DGL 2.1's arguments and attributes."""

    _url = URL

    def __init__(self, name: str, use_pandas: bool = False, hidden_size: int = 10, max_allow_node=None,
                 raw_dir=None, force_reload: bool = False, verbose: bool = False,
                 transform: Optional[Callable] = None):
        self.hidden_size, self.max_allow_node, self.use_pandas = hidden_size, max_allow_node, use_pandas
        super().__init__(name=name, url=self._url.format(name), raw_dir=raw_dir,
                         hash_key=(name, use_pandas, hidden_size, max_allow_node), force_reload=force_reload,
                         verbose=verbose, transform=transform)

    def _file_path(self, category: str) -> str:
        return os.path.join(self.raw_path, self.name, f"{self.name}_{category}.txt")

    def process(self) -> None:
        from .. import graph
        from ..base import EID, NID

        folder = os.path.dirname(self._file_path("A"))
        require_files(folder, (f"{self.name}_A.txt", f"{self.name}_graph_indicator.txt"), self.url,
                      type(self).__name__)
        self.data_mode = None
        edges = np.loadtxt(self._file_path("A"), delimiter=",", dtype=np.int64, ndmin=2)
        edges = edges - edges.min()
        indicator = np.loadtxt(self._file_path("graph_indicator"), dtype=np.int64, ndmin=1)
        indicator = indicator - indicator.min()
        if os.path.exists(self._file_path("graph_labels")):
            labels = np.loadtxt(self._file_path("graph_labels"), dtype=np.int64, ndmin=1)
            labels = labels - labels.min()
            self.num_labels, graph_labels = labels.max() + 1, labels
        elif os.path.exists(self._file_path("graph_attributes")):
            self.num_labels, graph_labels = None, np.loadtxt(self._file_path("graph_attributes"), ndmin=1)
        else:
            raise FileNotFoundError(f"LegacyTUDataset: no {self.name}_graph_labels.txt nor "
                                    f"{self.name}_graph_attributes.txt in {folder}")
        num_graphs = int(indicator.max()) + 1
        node_order = np.argsort(indicator, kind="stable")  # each graph's nodes, ascending (DGL's np.where)
        node_start = np.searchsorted(indicator[node_order], np.arange(num_graphs + 1))
        local = np.empty(indicator.shape[0], np.int64)
        local[node_order] = np.arange(indicator.shape[0]) - np.repeat(node_start[:-1], np.diff(node_start))
        src, dst = edges[:, 0], edges[:, 1]
        graph_of_edge = indicator[src]
        inside = np.flatnonzero(graph_of_edge == indicator[dst])  # induced subgraphs: edges within one graph
        eids = inside[np.lexsort((src[inside], graph_of_edge[inside]))]  # by graph, then source, then file order
        edge_start = np.searchsorted(graph_of_edge[eids], np.arange(num_graphs + 1))
        self.max_num_node = int(np.diff(node_start).max())
        feat = self._features(indicator.shape[0])
        self.graph_lists = []
        for i in range(num_graphs):
            nodes = node_order[node_start[i]:node_start[i + 1]]
            e = eids[edge_start[i]:edge_start[i + 1]]
            g = graph((torch.from_numpy(local[src[e]]), torch.from_numpy(local[dst[e]])), num_nodes=nodes.shape[0])
            g.ndata[NID] = torch.from_numpy(nodes)
            g.edata[EID] = torch.from_numpy(e)
            g.ndata["feat"] = feat[torch.from_numpy(nodes)] if feat is not None else torch.ones(
                (nodes.shape[0], self.hidden_size), dtype=torch.float32)
            self.graph_lists.append(g)
        if feat is None:
            self.data_mode = "constant"
            if self.verbose:
                print(f"Use Constant one as Feature with hidden size {self.hidden_size}")
        if self.max_allow_node:
            keep = [i for i, g in enumerate(self.graph_lists) if g.num_nodes() <= self.max_allow_node]
            if self.verbose:
                print("original dataset length : ", len(self.graph_lists))
            self.graph_lists = [self.graph_lists[i] for i in keep]
            if self.verbose:
                print("after pruning graphs that are too big : ", len(self.graph_lists))
            graph_labels = graph_labels[np.asarray(keep, np.int64)]
            self.max_num_node = self.max_allow_node
        self.graph_labels = torch.from_numpy(np.ascontiguousarray(graph_labels))

    def _features(self, num_nodes: int) -> Optional[torch.Tensor]:
        """float32 ``feat`` of every node (node attributes over one-hot node labels), or None (constant)."""
        feat = None
        if os.path.exists(self._file_path("node_labels")):
            node_labels = np.loadtxt(self._file_path("node_labels"), dtype=np.int64, ndmin=1)
            node_labels = node_labels - node_labels.min()
            one_hot = np.zeros((node_labels.shape[0], node_labels.max() + 1))
            one_hot[np.arange(node_labels.shape[0]), node_labels] = 1
            feat, self.data_mode = torch.from_numpy(one_hot.astype(np.float32)), "node_label"
        else:
            print("No Node Label Data")
        if os.path.exists(self._file_path("node_attributes")):
            attr = np.loadtxt(self._file_path("node_attributes"), delimiter=",")
            attr = attr[:, None] if attr.ndim == 1 else attr
            feat, self.data_mode = torch.from_numpy(attr.astype(np.float32)), "node_attr"
        else:
            print("No Node Attribute Data")
        return feat

    def __getitem__(self, idx):
        g = self.graph_lists[idx]
        return self._transformed(g), self.graph_labels[idx]

    def __len__(self) -> int:
        return len(self.graph_lists)

    def statistics(self):
        return self.graph_lists[0].ndata["feat"].shape[1], self.num_labels, self.max_num_node

    @property
    def num_classes(self) -> int:
        return int(self.num_labels)
