"""DGL's ``GINDataset`` (the GIN paper's graph-classification sets: MUTAG, PTC, NCI1, PROTEINS, COLLAB, IMDB*,
REDDIT*) from the GIN text files, nothing downloaded.

``GINDataset(name, self_loop, degree_as_nlabel=False, raw_dir=None)`` reads
``raw_dir/GINDataset/dataset/<name>/<name>.txt`` (where DGL 2.1 extracts the GIN repository's
``dataset.zip``): a line with the number of graphs, then per graph a line ``num_nodes label`` and per node a
line ``node_label num_neighbours neighbour...``.  ``dataset[i]`` is DGL's ``(graph, label)``: node ``j``'s
edges to its neighbours in file order (then ``j -> j`` when ``self_loop``), ``ndata["label"]`` (int64: node
labels numbered by first appearance, or in-degrees with ``degree_as_nlabel``), ``ndata["attr"]`` (float32
one-hot of those labels, DGL's choice of columns), graph labels numbered by first appearance (``labels``,
``gclasses`` = ``num_classes``), ``dim_nfeats``, ``nclasses``, ``N`` / ``n`` / ``m`` and the label dicts.

DGL's reading of a node line with fewer neighbours than announced keeps what is there and gives the
graph an empty ``attr`` ([n, 0]); a line with more tokens raises, as in DGL.  The file is parsed with
NumPy in one pass (tokens and their line numbers); the loop is over graphs only.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, require_files

URL = "https://raw.githubusercontent.com/weihua916/powerful-gnns/master/dataset.zip"


def _tokens(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, line_start, line_count)``: every whitespace-separated integer, and per line the index of its
    first token and its number of tokens."""
    raw = np.frombuffer(text.encode(), np.uint8)
    space = np.isin(raw, np.frombuffer(b" \t\r\n\x0b\x0c", np.uint8))
    starts = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))
    line_of_byte = np.concatenate([[0], np.cumsum(raw == 10)[:-1]]) if raw.shape[0] else np.zeros(0, np.int64)
    counts = np.bincount(line_of_byte[starts], minlength=int((raw == 10).sum()) + 1)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    values = np.array(text.split(), dtype=np.str_).astype(np.int64)
    return values, first, counts


def _first_seen(raw: np.ndarray) -> tuple[np.ndarray, dict]:
    """Ids of ``raw`` numbered by first appearance, and DGL's ``{raw: id}`` dict (in that order)."""
    uniq, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    rank = np.empty(uniq.shape[0], np.int64)
    rank[np.argsort(first)] = np.arange(uniq.shape[0])
    return rank[inverse.reshape(-1)], dict(zip(uniq[np.argsort(first)].tolist(), range(uniq.shape[0])))


class GINDataset(DGLBuiltinDataset):
    """One GIN dataset (module doc); DGL 2.1's arguments and attributes."""

    def __init__(self, name: str, self_loop: bool, degree_as_nlabel: bool = False, raw_dir=None,
                 force_reload: bool = False, verbose: bool = False, transform: Optional[Callable] = None):
        self._name = name
        self.ds_name = "nig"
        self.self_loop, self.degree_as_nlabel = self_loop, degree_as_nlabel
        self.graphs, self.labels = [], []
        self.glabel_dict, self.nlabel_dict, self.elabel_dict, self.ndegree_dict = {}, {}, {}, {}
        self.N = self.n = self.m = 0
        self.gclasses = self.nclasses = self.eclasses = self.dim_nfeats = 0
        self.nattrs_flag = self.nlabels_flag = False
        super().__init__(name=name, url=URL, hash_key=(name, self_loop, degree_as_nlabel), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    @property
    def raw_path(self) -> str:
        return os.path.join(self.raw_dir, "GINDataset")

    def download(self) -> None:
        from .dgl_dataset import fetch_or_refuse
        from .utils import extract_archive

        archive = os.path.join(self.raw_dir, "GINDataset.zip")
        fetch_or_refuse(self.url, archive, self.raw_path, type(self).__name__)
        extract_archive(archive, self.raw_path)

    def _file_path(self) -> str:
        return os.path.join(self.raw_dir, "GINDataset", "dataset", self.name, f"{self.name}.txt")

    def process(self) -> None:
        from .. import graph

        self.file = self._file_path()
        require_files(os.path.dirname(self.file), (f"{self.name}.txt",), self.url, type(self).__name__)
        with open(self.file) as f:
            values, first, counts = _tokens(f.read())
        self.N = int(values[first[0]])
        header = np.empty(self.N, np.int64)
        sizes = np.empty(self.N, np.int64)
        line = 1
        for i in range(self.N):  # each graph's header line says how many node lines follow
            if counts[line] != 2:
                raise ValueError(f"{self.file}: line {line + 1} should be 'num_nodes label', has {counts[line]} values")
            header[i], sizes[i] = line, values[first[line]]
            line += int(sizes[i]) + 1
        glabels, self.glabel_dict = _first_seen(values[first[header] + 1])
        node_start = np.concatenate([[0], np.cumsum(sizes)])
        node_lines = np.repeat(header + 1 - node_start[:-1], sizes) + np.arange(node_start[-1])
        off, cnt = first[node_lines], counts[node_lines]
        declared = values[off + 1]
        if bool((cnt > declared + 2).any()):
            raise ValueError("edge number is incorrect!")
        short = cnt < declared + 2  # DGL keeps the neighbours present and gives the graph an empty attr
        nlabels, self.nlabel_dict = _first_seen(values[off])
        num_nbrs = cnt - 2
        node_of_nbr = np.repeat(np.arange(node_start[-1]), num_nbrs)
        nbr = values[np.repeat(off + 2 - np.concatenate([[0], np.cumsum(num_nbrs)[:-1]]), num_nbrs)
                     + np.arange(node_of_nbr.shape[0])]
        graph_of_node = np.repeat(np.arange(self.N), sizes)
        src, dst = node_of_nbr, nbr + node_start[graph_of_node[node_of_nbr]]
        if self.self_loop:
            nodes = np.arange(node_start[-1])
            order = np.argsort(np.concatenate([src, nodes]), kind="stable")  # node j's self-loop after its neighbours
            src, dst = np.concatenate([src, nodes])[order], np.concatenate([dst, nodes])[order]
        edge_start = np.searchsorted(src, node_start)
        self.n = int(node_start[-1])
        self.m = int(declared.sum()) + (self.n if self.self_loop else 0)
        self.nlabels_flag = len(self.nlabel_dict) > 1
        node_label = torch.from_numpy(nlabels)
        if self.degree_as_nlabel and not short.any():
            node_label = torch.from_numpy(np.bincount(dst, minlength=self.n).astype(np.int64))
        for i in range(self.N):
            lo, hi, e0, e1 = int(node_start[i]), int(node_start[i + 1]), int(edge_start[i]), int(edge_start[i + 1])
            g = graph((torch.from_numpy(src[e0:e1] - lo), torch.from_numpy(dst[e0:e1] - lo)), num_nodes=hi - lo)
            num_short = int(short[lo:hi].sum())
            if num_short:
                if num_short != hi - lo:
                    raise ValueError(f"{self.file}: graph {i} has {num_short} of {hi - lo} node lines shorter than "
                                     "announced (DGL fails there too: attr rows must match the nodes)")
                g.ndata["attr"] = torch.zeros((hi - lo, 0), dtype=torch.float32)
                self.nattrs_flag = True
            g.ndata["label"] = node_label[lo:hi]
            self.graphs.append(g)
        self.labels = torch.from_numpy(glabels)
        if not self.nattrs_flag:
            self._one_hot_attr(node_label.numpy())
        self.gclasses, self.nclasses = len(self.glabel_dict), len(self.nlabel_dict)
        self.eclasses = len(self.elabel_dict)
        self.dim_nfeats = len(self.graphs[0].ndata["attr"][0])
        if self.verbose:
            print(f"Done. {self.N} graphs, {self.gclasses} classes, {self.n} nodes, {self.m} edges, "
                  f"{self.dim_nfeats} node features")

    def _one_hot_attr(self, node_label: np.ndarray) -> None:
        """DGL's one-hot ``attr``: columns from ``nlabel_dict`` when the labels present are its keys and run
        0..k-1, else from the order of Python's set of the labels (built graph by graph as DGL builds it)."""
        present: set = set()
        for g in self.graphs:
            present = present.union(set(g.ndata["label"].tolist()))
        present_list = list(present)
        if (all(label in self.nlabel_dict for label in present_list) and len(present_list) == max(present_list) + 1
                and min(present_list) == 0):
            label2idx = self.nlabel_dict
        else:
            label2idx = {label: i for i, label in enumerate(present_list)}
        keys = np.array(list(label2idx.keys()), np.int64)
        by_key = np.argsort(keys)
        column = np.array(list(label2idx.values()), np.int64)[by_key][np.searchsorted(keys[by_key], node_label)]
        attr = torch.zeros((node_label.shape[0], len(label2idx)), dtype=torch.float32)
        attr[torch.arange(node_label.shape[0]), torch.from_numpy(column)] = 1
        start = 0
        for g in self.graphs:
            g.ndata["attr"] = attr[start:start + g.num_nodes()]
            start += g.num_nodes()

    @property
    def num_classes(self) -> int:
        return self.gclasses

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, idx):
        g = self.graphs[idx]
        return self._transformed(g), self.labels[idx]
