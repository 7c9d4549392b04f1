"""DGL's ``PPIDataset`` (GAT's inductive protein-protein interaction graphs) from DGL's raw files, without
networkx and without downloading.

``PPIDataset(mode)`` reads ``<mode>_graph.json`` (networkx node-link data), ``<mode>_feats.npy``,
``<mode>_labels.npy`` and ``<mode>_graph_id.npy`` from ``raw_dir/ppi_<hash>/``, where DGL 2.1 extracts
``data.dgl.ai/dataset/ppi.zip``, and gives DGL's graphs: ``graph`` is the whole file's graph (every link in
both directions, as networkx's ``DiGraph`` of the undirected graph lists them: nodes in the file's order,
each node's neighbours in the order the links first name the pair; node ids by sorted ``id``), and
``dataset[i]`` the subgraph of graph id ``lo + i`` (train 1-20, valid 21-22, test 23-24): ``ndata``
``dgl.NID``, ``feat`` and ``label`` (float32, 121 labels per node), ``edata`` ``dgl.EID``.
``num_classes`` / ``num_labels`` are 121.  The JSON's links become arrays without a Python loop over them.
"""
from __future__ import annotations

import json
import os
from operator import itemgetter
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, require_files
from .utils import _get_dgl_url

GRAPH_IDS = {"train": (1, 21), "valid": (21, 23), "test": (23, 25)}


def node_link_edges(data: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """``(src, dst, num_nodes)`` of DGL's ``from_networkx(nx.DiGraph(node_link_graph(data)))`` for an undirected,
    non-multi node-link graph (module doc for the order)."""
    if data.get("directed", False) or data.get("multigraph", True) is not False:
        raise ValueError("PPI graph JSON: expected an undirected graph with \"multigraph\": false, as DGL's files are")
    nodes, links = data["nodes"], data["links"] if "links" in data else data["edges"]  # newer networkx: "edges"
    ids = np.fromiter(map(itemgetter("id"), nodes), dtype=np.int64, count=len(nodes))
    sorted_ids = np.sort(ids)
    new_id = np.searchsorted(sorted_ids, ids)  # networkx's ordering="sorted" relabelling
    position = np.empty(len(nodes), np.int64)
    position[new_id] = np.arange(len(nodes))  # each node's place in the file's node order
    s = np.searchsorted(sorted_ids, np.fromiter(map(itemgetter("source"), links), np.int64, len(links)))
    t = np.searchsorted(sorted_ids, np.fromiter(map(itemgetter("target"), links), np.int64, len(links)))
    # each link enters both endpoints' neighbour dicts at its position (a self-loop once), in link order
    keep = np.stack([np.ones(s.shape[0], bool), s != t], axis=1).reshape(-1)
    u, v = np.stack([s, t], axis=1).reshape(-1)[keep], np.stack([t, s], axis=1).reshape(-1)[keep]
    when = np.repeat(np.arange(len(links)), 2)[keep]
    n = len(nodes)
    keys, first = np.unique(u * n + v, return_index=True)
    order = np.lexsort((when[first], position[keys // n]))
    keys = keys[order]
    return keys // n, keys % n, n


class PPIDataset(DGLBuiltinDataset):
    """One split of PPI (module doc); DGL 2.1's arguments.

    Parameters
    ----------
    mode : ``"train"`` (20 graphs), ``"valid"`` (2) or ``"test"`` (2)
    raw_dir, force_reload, verbose, transform : DGL's
    """

    def __init__(self, mode: str = "train", raw_dir=None, force_reload: bool = False, verbose: bool = False,
                 transform: Optional[Callable] = None):
        assert mode in ["train", "valid", "test"]
        self.mode = mode
        super().__init__(name="ppi", url=_get_dgl_url("dataset/ppi.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        from .. import graph
        from ..base import EID, NID

        parts = ("graph.json", "labels.npy", "feats.npy", "graph_id.npy")
        require_files(self.save_path, [f"{self.mode}_{p}" for p in parts], self.url, type(self).__name__)
        path = lambda part: os.path.join(self.save_path, f"{self.mode}_{part}")  # noqa: E731
        with open(path("graph.json")) as f:
            src, dst, n = node_link_edges(json.load(f))
        self._labels, self._feats = np.load(path("labels.npy")), np.load(path("feats.npy"))
        self.graph = graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
        graph_id = np.load(path("graph_id.npy"))
        lo, hi = GRAPH_IDS[self.mode]
        by_source = np.argsort(src, kind="stable")
        self.graphs = []
        for g_id in range(lo, hi):
            nodes = np.flatnonzero(graph_id == g_id)
            local = np.full(n, -1, np.int64)
            local[nodes] = np.arange(nodes.shape[0])
            eids = by_source[(local[src[by_source]] >= 0) & (local[dst[by_source]] >= 0)]
            g = graph((torch.from_numpy(local[src[eids]]), torch.from_numpy(local[dst[eids]])),
                      num_nodes=nodes.shape[0])
            g.ndata[NID] = torch.from_numpy(nodes)
            g.edata[EID] = torch.from_numpy(eids)
            g.ndata["feat"] = torch.from_numpy(self._feats[nodes].astype(np.float32))
            g.ndata["label"] = torch.from_numpy(self._labels[nodes].astype(np.float32))
            self.graphs.append(g)

    @property
    def num_labels(self) -> int:
        return 121

    @property
    def num_classes(self) -> int:
        return 121

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, item):
        g = self.graphs[item]
        return self._transformed(g)


class LegacyPPIDataset(PPIDataset):
    """DGL's older PPI: ``dataset[i]`` is ``(graph, graph.ndata["feat"], graph.ndata["label"])``."""

    def __getitem__(self, item):
        g = super().__getitem__(item)
        return g, g.ndata["feat"], g.ndata["label"]
