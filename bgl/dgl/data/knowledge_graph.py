"""DGL's knowledge-graph datasets (``FB15k237Dataset``, ``FB15kDataset``, ``WN18Dataset``: R-GCN link prediction)
from DGL's raw files, nothing downloaded.

Files, in ``raw_dir/<name>_<hash>/`` (where DGL 2.1 extracts ``data.dgl.ai/dataset/<name>.tgz``; ``<name>``
is ``FB15k-237``, ``FB15k`` or ``wn18``): ``entities.dict`` and ``relations.dict`` (``id<TAB>name`` lines)
and ``train.txt`` / ``valid.txt`` / ``test.txt`` (``subject<TAB>relation<TAB>object`` lines).

``dataset[0]`` is DGL's one homogeneous graph: the triplets of train, valid, test grouped by relation in
the order relations first appear (file order within), then, with ``reverse`` (default), each of them
reversed with relation ``r + num_rels`` in the same order; ``edata`` ``train_edge_mask`` /
``valid_edge_mask`` / ``test_edge_mask`` (the forward triplets of each split), ``train_mask`` / ``val_mask`` /
``test_mask`` (both directions), ``etype`` (int64), and ``ndata["ntype"]`` (zeros).  ``num_nodes``,
``num_rels`` (forward relations) as DGL has them.  The text is split and looked up with NumPy, not a
Python loop over the triplets.
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLBuiltinDataset, fetch_or_refuse, require_files
from .utils import _get_dgl_url, extract_archive

FILES = ("entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt")


def _fields(path: str, width: int) -> np.ndarray:
    """The tab-separated fields of every line, as a ``[lines, width]`` array of str."""
    with open(path) as f:
        lines = f.read().splitlines()
    fields = "\t".join(lines).split("\t") if lines else []
    if len(fields) != width * len(lines):
        raise ValueError(f"{path}: every line should hold {width} tab-separated fields")
    return np.array(fields, dtype=np.str_).reshape(-1, width)


def _dictionary(path: str) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted names, their ids)`` of an ``id<TAB>name`` file (DGL's dict: a later line wins a name)."""
    rows = _fields(path, 2)
    names, last = np.unique(rows[::-1, 1], return_index=True)
    return names, rows[::-1, 0][last].astype(np.int64)


def _lookup(names: np.ndarray, ids: np.ndarray, wanted: np.ndarray, path: str) -> np.ndarray:
    """The ids of ``wanted`` names; KeyError (as DGL's dict lookup) naming the first unknown one."""
    if names.shape[0] == 0:
        if wanted.shape[0]:
            raise KeyError(f"{path}: {wanted[0]!r} is not in the dictionary")
        return np.zeros(0, np.int64)
    where = np.minimum(np.searchsorted(names, wanted), names.shape[0] - 1)
    unknown = np.flatnonzero(names[where] != wanted)
    if unknown.shape[0]:
        raise KeyError(f"{path}: {wanted[unknown[0]]!r} is not in the dictionary")
    return ids[where]


class KnowledgeGraphDataset(DGLBuiltinDataset):
    """One knowledge graph (module doc); DGL 2.1's arguments (``verbose`` defaults to True, as in DGL)."""

    def __init__(self, name: str, reverse: bool = True, raw_dir=None, force_reload: bool = False,
                 verbose: bool = True, transform: Optional[Callable] = None):
        self._name, self.reverse = name, reverse
        super().__init__(name, url=_get_dgl_url("dataset/") + f"{name}.tgz", raw_dir=raw_dir,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def download(self) -> None:
        archive = os.path.join(self.raw_dir, self.name + ".tgz")
        fetch_or_refuse(self.url, archive, self.raw_path, type(self).__name__)
        extract_archive(archive, self.raw_path)

    def process(self) -> None:
        from .. import graph

        require_files(self.raw_path, FILES, self.url, type(self).__name__)
        path = lambda name: os.path.join(self.raw_path, name)  # noqa: E731
        entities, relations = _dictionary(path("entities.dict")), _dictionary(path("relations.dict"))
        splits = []
        for part in ("train.txt", "valid.txt", "test.txt"):
            rows = _fields(path(part), 3)
            ids = [_lookup(*table, rows[:, k], path(part)) for k, table in enumerate((entities, relations, entities))]
            splits.append(np.stack(ids, axis=1).reshape(-1, 3))
        self._train, self._valid, self._test = splits
        self._num_nodes, self._num_rels = int(entities[0].shape[0]), int(relations[0].shape[0])
        if self.verbose:
            print(f"# entities: {self._num_nodes}")
            print(f"# relations: {self._num_rels}")
            for what, split in zip(("training", "validation", "testing"), splits):
                print(f"# {what} edges: {split.shape[0]}")
        triplets = np.concatenate(splits)
        if bool((triplets[:, 1] >= self._num_rels).any()):
            raise AssertionError("a relation id is not below the number of relations")
        settype = np.repeat(np.array([1, 2, 3]), [s.shape[0] for s in splits])
        uniq, first = np.unique(triplets[:, 1], return_index=True)
        rank = np.empty(uniq.shape[0], np.int64)
        rank[np.argsort(first)] = np.arange(uniq.shape[0])
        order = np.argsort(rank[np.searchsorted(uniq, triplets[:, 1])], kind="stable")  # relations by first use
        s, r, d, settype = triplets[order, 0], triplets[order, 1], triplets[order, 2], settype[order]
        forward = settype
        if self.reverse:
            s, d = np.concatenate([s, d]), np.concatenate([d, s])
            r = np.concatenate([r, r + self._num_rels])
            forward = np.concatenate([settype, np.zeros_like(settype)])
            settype = np.concatenate([settype, settype])
        g = graph((torch.from_numpy(s), torch.from_numpy(d)), num_nodes=self._num_nodes)
        for key, kind in (("train_edge_mask", 1), ("valid_edge_mask", 2), ("test_edge_mask", 3)):
            g.edata[key] = torch.from_numpy(forward == kind)
        for key, kind in (("train_mask", 1), ("val_mask", 2), ("test_mask", 3)):
            g.edata[key] = torch.from_numpy(settype == kind)
        g.edata["etype"] = torch.from_numpy(r.astype(np.int64))
        g.ndata["ntype"] = torch.zeros(self._num_nodes, dtype=torch.int64)
        self._g = g

    def __getitem__(self, idx):
        assert idx == 0, "This dataset has only one graph"
        return self._transformed(self._g)

    def __len__(self) -> int:
        return 1

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    @property
    def num_rels(self) -> int:
        return self._num_rels

    @property
    def save_name(self) -> str:
        return self.name + "_dgl_graph"


class FB15k237Dataset(KnowledgeGraphDataset):
    """FB15k-237 (14,541 entities, 237 relations; 272,115 / 17,535 / 20,466 triplets)."""

    def __init__(self, reverse: bool = True, raw_dir=None, force_reload: bool = False, verbose: bool = True,
                 transform: Optional[Callable] = None):
        super().__init__("FB15k-237", reverse, raw_dir, force_reload, verbose, transform)


class FB15kDataset(KnowledgeGraphDataset):
    """FB15k (14,951 entities, 1,345 relations; 483,142 / 50,000 / 59,071 triplets)."""

    def __init__(self, reverse: bool = True, raw_dir=None, force_reload: bool = False, verbose: bool = True,
                 transform: Optional[Callable] = None):
        super().__init__("FB15k", reverse, raw_dir, force_reload, verbose, transform)


class WN18Dataset(KnowledgeGraphDataset):
    """WN18 (40,943 entities, 18 relations; 141,442 / 5,000 / 5,000 triplets)."""

    def __init__(self, reverse: bool = True, raw_dir=None, force_reload: bool = False, verbose: bool = True,
                 transform: Optional[Callable] = None):
        super().__init__("wn18", reverse, raw_dir, force_reload, verbose, transform)
