"""DGL's ``RedditDataset`` (GraphSAGE's Reddit posts graph) from the raw files DGL 2.1 downloads, nothing downloaded.

``RedditDataset(self_loop=False, raw_dir=None)`` reads ``reddit_data.npz`` (``feature``, ``label``,
``node_types``) and ``reddit[_self_loop]_graph.npz`` (a SciPy sparse matrix saved by ``save_npz``: read
here with NumPy) from ``raw_dir/reddit[_self_loop]_<hash>/``, where DGL 2.1 extracts
``data.dgl.ai/dataset/reddit[_self_loop].zip``, and gives DGL's graph: the matrix's entries as edges,
then DGL's RCMK node reordering and destination-sorted edges (:mod:`bgl.dgl.data.reorder`),
``ndata`` ``train_mask`` / ``val_mask`` / ``test_mask`` (bool: node type 1 / 2 / 3), ``feat`` (float32),
``label`` (int64), and ``edata["__orig__"]`` (the edge's id in the file; DGL's reordering leaves it there).
``num_classes`` is 41.  Without the files, FileNotFoundError names the folder to put them in.  Nothing is
cached on disk (DGL writes ``dgl_graph.bin`` beside the raw files; bgl reads the raw files each time).
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, require_files
from .utils import _get_dgl_url


def read_scipy_npz(path: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``(row, col, num_nodes)`` of a square matrix ``scipy.sparse.save_npz`` wrote, entries in the order DGL's
    ``from_scipy`` makes them edges (COO: as stored; CSR: row by row; CSC: column by column)."""
    with np.load(path, allow_pickle=False) as z:
        fmt = z["format"].item()
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        shape = tuple(int(s) for s in z["shape"])
        if fmt == "coo":
            row, col = z["row"].astype(np.int64), z["col"].astype(np.int64)
        elif fmt in ("csr", "csc"):
            indptr, indices = z["indptr"].astype(np.int64), z["indices"].astype(np.int64)
            major = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
            row, col = (major, indices) if fmt == "csr" else (indices, major)
        else:
            raise ValueError(f"{path}: sparse format {fmt!r} (expected coo, csr or csc, as save_npz writes)")
    if shape[0] != shape[1]:
        raise ValueError(f"{path}: a {shape[0]} x {shape[1]} matrix is not a graph's adjacency (DGL needs it square)")
    return row, col, shape[0]


class RedditDataset(DGLBuiltinDataset):
    """Reddit posts (232,965 nodes, 114,615,892 edges, 602 features, 41 classes), DGL 2.1's arguments
    (module doc).

    Parameters
    ----------
    self_loop : read ``reddit_self_loop_graph.npz`` (the graph with self-loops, DGL's other download)
    raw_dir : folder holding ``reddit[_self_loop]_<hash>/`` (default DGL's download folder)
    force_reload, verbose, transform : DGL's (``transform`` applied on every ``dataset[0]``)
    """

    def __init__(self, self_loop: bool = False, raw_dir=None, force_reload: bool = False, verbose: bool = False,
                 transform: Optional[Callable] = None):
        self._self_loop_str = "_self_loop" if self_loop else ""
        super().__init__(name=f"reddit{self._self_loop_str}",
                         url=_get_dgl_url(f"dataset/reddit{self._self_loop_str}.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        from .. import graph
        from .reorder import reorder_rcmk_dst

        graph_file = f"reddit{self._self_loop_str}_graph.npz"
        require_files(self.raw_path, (graph_file, "reddit_data.npz"), self.url, type(self).__name__)
        row, col, n = read_scipy_npz(os.path.join(self.raw_path, graph_file))
        with np.load(os.path.join(self.raw_path, "reddit_data.npz"), allow_pickle=False) as data:
            features, labels, node_types = data["feature"], data["label"], data["node_types"]
        perm, src, dst, old_eid = reorder_rcmk_dst(row, col, n)
        g = graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
        node_types = node_types[perm]
        for key, kind in (("train_mask", 1), ("val_mask", 2), ("test_mask", 3)):
            g.ndata[key] = torch.from_numpy(node_types == kind)
        g.ndata["feat"] = torch.from_numpy(np.ascontiguousarray(features[perm], dtype=np.float32))
        g.ndata["label"] = torch.from_numpy(np.ascontiguousarray(labels[perm], dtype=np.int64))
        g.edata["__orig__"] = torch.from_numpy(old_eid)
        self._graph = g
        self._print_info()

    def _print_info(self) -> None:
        if self.verbose:
            g = self._graph
            print("Finished data loading.")
            print(f"  NumNodes: {g.num_nodes()}")
            print(f"  NumEdges: {g.num_edges()}")
            print(f"  NumFeats: {g.ndata['feat'].shape[1]}")
            print(f"  NumClasses: {self.num_classes}")
            for what, key in (("Training", "train_mask"), ("Validation", "val_mask"), ("Test", "test_mask")):
                print(f"  Num{what}Samples: {int(g.ndata[key].sum())}")

    @property
    def num_classes(self) -> int:
        return 41

    def __getitem__(self, idx: int):
        if idx != 0:
            raise AssertionError("Reddit Dataset only has one graph")
        return self._transformed(self._graph)

    def __len__(self) -> int:
        return 1
