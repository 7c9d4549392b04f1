"""DGL's ``TUDataset`` (graph classification: MUTAG, PROTEINS, NCI1, ...) from the TU benchmark's raw text files.

``dataset = TUDataset("MUTAG", raw_dir=...); g, label = dataset[i]`` gives what DGL 2.1 gives: graph ``i``
as the subgraph its nodes induce in the file's one big graph (edges by source, then in file order, as DGL's
induced subgraphs list them; ``ndata[dgl.NID]`` / ``edata[dgl.EID]`` the big graph's ids),
``ndata["node_labels"]`` / ``ndata["node_attr"]`` and ``edata["edge_labels"]`` as DGL 2.1 reads them with
pandas installed (2-D columns of the text files: int64 where every value is an integer, else float64;
labels shifted to start at 0; edge attributes under ``edata["node_labels"]``, DGL's name for them), the
graph labels renumbered ``0..C-1`` (``[num_graphs, 1]``, ``num_classes``), or the float graph attributes
when the dataset has no labels, ``max_num_node``.

Files: ``<NAME>_A.txt``, ``<NAME>_graph_indicator.txt``, ``<NAME>_graph_labels.txt`` (or
``_graph_attributes``) and the optional node / edge files, read from ``raw_dir/<NAME>_<hash>/<NAME>/`` (where
DGL 2.1 extracts ``https://www.chrsmrrs.com/graphkerneldatasets/<NAME>.zip``), ``raw_dir/<NAME>/<NAME>/`` or
``raw_dir/<NAME>/``; ``raw_dir`` defaults to DGL's folder.  Nothing is downloaded or cached: without the files, FileNotFoundError names the
zip and the folder.  A graph is made when first asked for (its nodes are one run of the big graph's, its
edges one run of the edges sorted by graph): 8 B per node and 24 B per edge for the arrays, not a graph
object per graph up front.
"""
from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch

from .citation import default_raw_dir

URL = "https://www.chrsmrrs.com/graphkerneldatasets/{}.zip"
# file part -> (where, DGL's field name); edge attributes land in edata["node_labels"], as in DGL 2.1
FIELDS = {"node_labels": ("ndata", "node_labels"), "node_attributes": ("ndata", "node_attr"),
          "edge_labels": ("edata", "edge_labels"), "edge_attributes": ("edata", "node_labels")}


class TUDataset:
    """Graphs and labels of one TU benchmark dataset (module doc)."""

    def __init__(self, name: str, raw_dir=None, force_reload: bool = False, verbose: bool = False,
                 transform: Optional[Callable] = None):
        self.name, self._transform = name, transform
        folder = _find_folder(Path(raw_dir) if raw_dir is not None else default_raw_dir(), name)
        read = lambda part: _read(folder / f"{name}_{part}.txt")  # noqa: E731
        edges = read("A").astype(np.int64).reshape(-1, 2)
        edges -= edges.min()
        indicator = read("graph_indicator").astype(np.int64).reshape(-1)
        indicator -= indicator.min()
        if (folder / f"{name}_graph_labels.txt").is_file():
            raw = read("graph_labels").astype(np.int64)
            labels = np.unique(raw, return_inverse=True)[1].reshape(raw.shape)  # 0..C-1, rows of one column
            self.num_labels = int(labels.max()) + 1
            self.graph_labels = torch.from_numpy(labels.astype(np.int64))
        elif (folder / f"{name}_graph_attributes.txt").is_file():
            self.num_labels = None
            self.graph_labels = torch.from_numpy(read("graph_attributes").astype(np.float64))
        else:
            raise FileNotFoundError(f"{folder}: no {name}_graph_labels.txt nor {name}_graph_attributes.txt")
        num_graphs = int(indicator.max()) + 1
        if bool((np.diff(indicator) < 0).any()):
            raise ValueError(f"{folder / f'{name}_graph_indicator.txt'}: graphs' nodes are not in one run each")
        self._node_start = np.searchsorted(indicator, np.arange(num_graphs + 1))  # graph i: nodes [start[i], start[i+1])
        self.max_num_node = int(np.diff(self._node_start).max()) if num_graphs else 0
        edge_graph = indicator[edges[:, 0]]
        if bool((indicator[edges[:, 1]] != edge_graph).any()):
            raise ValueError(f"{folder / f'{name}_A.txt'}: an edge joins nodes of two graphs")
        self._edge_order = np.argsort(edge_graph, kind="stable")  # each graph's edges in file order
        self._edge_start = np.searchsorted(edge_graph[self._edge_order], np.arange(num_graphs + 1))
        self._edges = edges
        self._fields: dict = {"ndata": {}, "edata": {}}
        for part, (where, key) in FIELDS.items():
            path = folder / f"{name}_{part}.txt"
            if path.is_file():
                values = read(part)
                self._fields[where][key] = torch.from_numpy(values - values.min() if "label" in part else values)
        self._graphs: dict = {}
        if verbose:
            print(f"{name}: {num_graphs} graphs, {indicator.shape[0]} nodes, {edges.shape[0]} edges")

    def __len__(self) -> int:
        return int(self._node_start.shape[0]) - 1

    def __getitem__(self, idx: int):
        graph = self._graphs.get(idx)
        if graph is None:
            graph = self._graphs[idx] = self._graph(int(idx))
        return (graph if self._transform is None else self._transform(graph)), self.graph_labels[idx]

    def _graph(self, i: int):
        from .. import convert
        from ..base import EID, NID

        if not 0 <= i < len(self):
            raise IndexError(f"graph index {i} outside [0, {len(self)})")
        lo, hi = int(self._node_start[i]), int(self._node_start[i + 1])
        eids = torch.from_numpy(self._edge_order[self._edge_start[i]:self._edge_start[i + 1]])
        eids = eids[torch.sort(torch.from_numpy(self._edges[:, 0])[eids], stable=True).indices]  # DGL's: by source
        ends = torch.from_numpy(self._edges)[eids] - lo
        g = convert.graph((ends[:, 0], ends[:, 1]), num_nodes=hi - lo)
        for key, column in self._fields["ndata"].items():
            g.ndata[key] = column[lo:hi]
        g.ndata[NID] = torch.arange(lo, hi)
        for key, column in self._fields["edata"].items():
            g.edata[key] = column[eids]
        g.edata[EID] = eids
        return g

    @property
    def graph_lists(self) -> list:
        return [self[i][0] if self._transform is None else self._graph(i) for i in range(len(self))]

    @property
    def num_classes(self):
        return self.num_labels

    def statistics(self):
        return self[0][0].ndata["feat"].shape[1], self.num_labels, self.max_num_node


def dgl_folder(name: str) -> str:
    """The folder DGL 2.1 unzips ``<name>.zip`` into under ``raw_dir``: the name and 8 hex digits of its URL's SHA-1."""
    return f"{name}_{hashlib.sha1(URL.format(name).encode('utf-8')).hexdigest()[:8]}"


def _find_folder(raw_dir: Path, name: str) -> Path:
    places = (raw_dir / dgl_folder(name) / name, raw_dir / name / name, raw_dir / name)
    for folder in places:
        if (folder / f"{name}_A.txt").is_file():
            return folder
    raise FileNotFoundError(f"TUDataset {name!r}: no {name}_A.txt in {', '.join(str(p) for p in places)}; "
                            f"unzip {URL.format(name)} into {raw_dir / name} (bgl.dgl downloads nothing)")


def _read(path: Path) -> np.ndarray:
    """A TU text file's rows (comma-separated numbers) as DGL 2.1 reads them with pandas installed: a 2-D
    array, int64 when every value is an integer, else float64."""
    text = path.read_text()
    integers = not any(mark in text for mark in ".eEnN")  # pandas' inference: a decimal point, exponent or nan
    return np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2, dtype=np.int64 if integers else np.float64)
