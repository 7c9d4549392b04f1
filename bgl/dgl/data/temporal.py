"""DGL 2.1's temporal graphs from the files DGL downloads, nothing downloaded:

* ``BitcoinOTCDataset`` (``BitcoinOTC``): ``raw_dir/bitcoinotc_<hash>/bitcoinotc.csv`` (``source,target,rating,
  time``; extracted from ``raw_dir/bitcoinotc.csv.gz`` when only that is there).  Node ids shifted so the
  smallest is 0, time in steps of 14 days; graph ``i`` holds every edge of steps ``<= i``, in file order, for
  ``i`` below the last step (DGL leaves the last step out), ``edata["h"]`` the rating int64 [E, 1].
* ``GDELTDataset`` (``GDELT``) and ``ICEWS18Dataset`` (``ICEWS18``): ``<mode>.txt`` (``subject<TAB>relation
  <TAB>object<TAB>time``) in ``raw_dir/GDELT_<hash>/`` / ``raw_dir/ICEWS18_<hash>/``; time in steps of 15 and 24;
  graph ``t`` holds the facts of steps up to ``start + t``, ``edata["rel_type"]`` int64 [E, 1].  GDELT builds
  graph ``t`` on access (as DGL does), ICEWS18 all at once.

Each graph's nodes are ids 0 to the largest id among its edges (DGL's ``graph((src, dst))``).  Each graph
costs one pass over the rows (a NumPy mask).  Nothing is cached (DGL writes ``dgl_graph.bin`` /
``<mode>_info.pkl``).  A missing file raises FileNotFoundError naming where to put it and the URL.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, fetch_or_refuse, require_files
from .utils import _get_dgl_url, extract_archive, loadtxt

__all__ = ["BitcoinOTCDataset", "BitcoinOTC", "GDELTDataset", "GDELT", "ICEWS18Dataset", "ICEWS18"]


def _snapshot(data: np.ndarray, mask: np.ndarray, src: int, dst: int, what: int, key: str):
    """The graph of ``data``'s rows under ``mask``: edges ``src`` -> ``dst`` columns, ``edata[key]`` column
    ``what`` as int64 [E, 1]."""
    from .. import graph

    rows = data[mask]
    g = graph((torch.from_numpy(rows[:, src].copy()), torch.from_numpy(rows[:, dst].copy())))
    g.edata[key] = torch.from_numpy(rows[:, what].reshape(-1, 1).astype(np.int64))
    return g


class _Temporal(DGLBuiltinDataset):
    @property
    def is_temporal(self) -> bool:
        return True


class BitcoinOTCDataset(_Temporal):
    """Bitcoin OTC's who-trusts-whom network over time (module doc); DGL 2.1's arguments."""

    _url = "https://snap.stanford.edu/data/soc-sign-bitcoinotc.csv.gz"
    _sha1_str = "c14281f9e252de0bd0b5f1c6e2bae03123938641"

    def __init__(self, raw_dir=None, force_reload=False, verbose=False, transform: Optional[Callable] = None):
        super().__init__(name="bitcoinotc", url=self._url, raw_dir=raw_dir, force_reload=force_reload,
                         verbose=verbose, transform=transform)

    def download(self) -> None:
        archive = fetch_or_refuse(self.url, os.path.join(self.raw_dir, self.name + ".csv.gz"), self.raw_path,
                                  type(self).__name__)
        extract_archive(archive, self.raw_path)

    def process(self) -> None:
        require_files(self.save_path, (self.name + ".csv",), self.url, type(self).__name__)
        data = np.loadtxt(os.path.join(self.save_path, self.name + ".csv"), delimiter=",").astype(np.int64)
        data[:, 0:2] = data[:, 0:2] - data[:, 0:2].min()
        delta = 14 * 24 * 3600.0
        time_index = np.around((data[:, 3] - data[:, 3].min()) / delta).astype(np.int64)
        self._graphs = [_snapshot(data, time_index <= i, 0, 1, 2, "h") for i in range(time_index.max())]

    @property
    def graphs(self) -> list:
        return self._graphs

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, item):
        return self._transformed(self.graphs[item])


class GDELTDataset(_Temporal):
    """GDELT's events (module doc); ``mode`` ``"train"`` / ``"valid"`` / ``"test"``, DGL 2.1's arguments."""

    def __init__(self, mode="train", raw_dir=None, force_reload=False, verbose=False,
                 transform: Optional[Callable] = None):
        mode = mode.lower()
        assert mode in ["train", "valid", "test"], "Mode not valid."
        self.mode = mode
        self.num_nodes = 23033
        super().__init__(name="GDELT", url=_get_dgl_url("dataset/gdelt.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        require_files(self.raw_path, (self.mode + ".txt",), self.url, type(self).__name__)
        self.data = loadtxt(os.path.join(self.raw_path, self.mode + ".txt"), delimiter="\t").astype(np.int64)
        self.time_index = np.floor(self.data[:, 3] / 15).astype(np.int64)
        self._start_time, self._end_time = self.time_index.min(), self.time_index.max()

    @property
    def start_time(self):
        return self._start_time

    @property
    def end_time(self):
        return self._end_time

    def __getitem__(self, t):
        if t >= len(self) or t < 0:
            raise IndexError("Index out of range")
        g = _snapshot(self.data, self.time_index <= t + self.start_time, 0, 2, 1, "rel_type")
        return self._transformed(g)

    def __len__(self) -> int:
        return self._end_time - self._start_time + 1


class ICEWS18Dataset(_Temporal):
    """ICEWS18's events (module doc); ``mode`` ``"train"`` / ``"valid"`` / ``"test"``, DGL 2.1's arguments."""

    def __init__(self, mode="train", raw_dir=None, force_reload=False, verbose=False,
                 transform: Optional[Callable] = None):
        mode = mode.lower()
        assert mode in ["train", "valid", "test"], "Mode not valid"
        self.mode = mode
        super().__init__(name="ICEWS18", url=_get_dgl_url("dataset/icews18.zip"), raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def process(self) -> None:
        require_files(self.save_path, (self.mode + ".txt",), self.url, type(self).__name__)
        data = loadtxt(os.path.join(self.save_path, f"{self.mode}.txt"), delimiter="\t").astype(np.int64)
        time_index = np.floor(data[:, 3] / 24).astype(np.int64)
        start, end = time_index[time_index != -1].min(), time_index.max()
        self._graphs = [_snapshot(data, time_index <= i, 0, 2, 1, "rel_type") for i in range(start, end + 1)]

    def __getitem__(self, idx):
        return self._transformed(self._graphs[idx])

    def __len__(self) -> int:
        return len(self._graphs)


BitcoinOTC = BitcoinOTCDataset
GDELT = GDELTDataset
ICEWS18 = ICEWS18Dataset
