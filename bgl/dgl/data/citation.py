"""DGL's citation datasets (``CoraGraphDataset``, ``CiteseerGraphDataset``, ``PubmedGraphDataset``) from local files.

``dataset = CoraGraphDataset(); g = dataset[0]`` gives the graph DGL 2.1 gives: the same edges in
the same order, ``ndata`` ``train_mask`` / ``val_mask`` / ``test_mask`` (bool), ``label`` (int64),
``feat`` (float32, row-normalised), and ``dataset.num_classes`` (how the raw files become those
arrays: :mod:`bgl.dgl.data.citation_layout`).

Where the files are read from, in this order (``raw_dir`` defaults to DGL's: ``$DGL_DOWNLOAD_DIR``
or ``~/.dgl``):

1. ``raw_dir/<name>_<hash>/ind.<name>.*``: where DGL 2.1 extracts its download (``<name>`` is
   DGL's: ``cora_v2``, ``citeseer``, ``pubmed``), so a machine that once ran DGL needs nothing new;
2. ``raw_dir/<name>/ind.<name>.*``;
3. ``raw_dir/ind.<name>.*`` or ``raw_dir/ind.<cora|citeseer|pubmed>.*``: the Planetoid files as
   their repository and PyG's ``raw/`` folder name them.

Nothing is downloaded.  Without the files, Cora comes from the copy embedded in bgl
(:mod:`bgl.dgl.data.embedded_cora`, the same arrays); the other two raise FileNotFoundError
saying where to put them.  Nothing is cached on disk either (reading takes well under a second),
so ``force_reload`` changes nothing; ``verbose`` logs the statistics DGL prints.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Callable, Optional

import torch

from .citation_layout import CitationArrays, read_citation

log = logging.getLogger(__name__)

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
DGL_NAMES = {"cora": "cora_v2", "citeseer": "citeseer", "pubmed": "pubmed"}


def default_raw_dir() -> Path:
    """DGL's download folder: ``$DGL_DOWNLOAD_DIR``, else ``~/.dgl`` (not created)."""
    return Path(os.environ.get("DGL_DOWNLOAD_DIR", Path.home() / ".dgl"))


def dgl_folder_name(dgl_name: str) -> str:
    """The folder DGL 2.1 extracts ``<dgl_name>.zip`` into: the name and 8 hex digits of its URL's SHA-1
    (the URL honours ``$DGL_REPO`` as DGL's does)."""
    repo = os.environ.get("DGL_REPO", "https://data.dgl.ai/")
    url = (repo if repo.endswith("/") else repo + "/") + f"dataset/{dgl_name}.zip"
    return f"{dgl_name}_{hashlib.sha1(url.encode('utf-8')).hexdigest()[:8]}"


def find_raw_files(raw_dir: Path, name: str) -> Optional[Path]:
    """The ``.../ind.<name>`` prefix of the first complete set of raw files under ``raw_dir`` (module
    doc for the places looked at), or None."""
    dgl_name = DGL_NAMES[name]
    candidates = [raw_dir / dgl_folder_name(dgl_name) / f"ind.{dgl_name}", raw_dir / dgl_name / f"ind.{dgl_name}",
                  raw_dir / f"ind.{dgl_name}", raw_dir / f"ind.{name}"]
    for prefix in candidates:
        if all(Path(f"{prefix}.{part}").is_file() for part in PARTS):
            return prefix
    return None


class CitationGraphDataset:
    """One of DGL's citation graphs (DGL 2.1's ``CitationGraphDataset`` arguments).

    Parameters
    ----------
    name : ``"cora"``, ``"citeseer"`` or ``"pubmed"``
    raw_dir : folder holding the raw Planetoid files (module doc: where they are looked for)
    force_reload : accepted for DGL's signature; nothing is cached, so every load reads the files
    verbose : log the dataset's statistics
    reverse_edge : True: every citation in both directions (DGL's default); False: once
    transform : callable applied to the graph on every ``dataset[0]``
    reorder : DGL's ``reorder_graph`` of the graph: RCMK node order, edges by destination (DGL's call)

    Raises
    ------
    ValueError for an unknown name; FileNotFoundError (citeseer, pubmed) when
    the raw files are nowhere under ``raw_dir``; :class:`bgl.errors.IngestError` for a bad file.
    """

    def __init__(self, name: str, raw_dir=None, force_reload: bool = False, verbose: bool = True,
                 reverse_edge: bool = True, transform: Optional[Callable] = None, reorder: bool = False):
        key = str(name).lower()
        if key not in DGL_NAMES:
            raise ValueError(f"unknown citation dataset {name!r}; expected one of {sorted(DGL_NAMES)}")
        self._name = DGL_NAMES[key]
        self._raw_dir = Path(raw_dir) if raw_dir is not None else default_raw_dir()
        self._reverse_edge = bool(reverse_edge)
        self._transform = transform
        self.verbose = bool(verbose)
        prefix = find_raw_files(self._raw_dir, key)
        if prefix is None:
            if key != "cora" or not self._reverse_edge:
                raise FileNotFoundError(self._missing_files_message(key))
            from .embedded_cora import embedded_cora

            log.info("%s: no raw files under %s; using the Cora copy embedded in bgl (the same arrays)",
                     type(self).__name__, self._raw_dir)
            self._source = "embedded"
            arrays = embedded_cora()
        else:
            self._source = str(prefix)
            arrays = read_citation(prefix, key, self._reverse_edge)
        self._num_classes = arrays.num_classes
        self._g = _to_graph(arrays)
        if reorder:  # DGL's call: nodes in reverse Cuthill-McKee order, edges grouped by destination, no ids kept
            from ..transform_classes.reorder import reorder_graph

            self._g = reorder_graph(self._g, node_permute_algo="rcmk", edge_permute_algo="dst", store_ids=False)
        if self.verbose:
            self._log_statistics()

    def _missing_files_message(self, key: str) -> str:
        dgl_name = DGL_NAMES[key]
        where = self._raw_dir / dgl_name
        why = "" if self._reverse_edge else " (the embedded copy has reverse edges; reverse_edge=False needs them)"
        return (f"{type(self).__name__}: no raw files ind.{dgl_name}.{{{','.join(PARTS)}}} under {self._raw_dir}"
                f"{why}; bgl does not download: put the Planetoid files (DGL's data.dgl.ai/dataset/{dgl_name}.zip "
                f"or the Planetoid repository's data/) in {where}")

    def _log_statistics(self) -> None:
        g = self._g
        log.info("%s from %s: %d nodes, %d edges, %d features, %d classes, %d/%d/%d train/val/test nodes",
                 self._name, self._source, g.num_nodes(), g.num_edges(), g.ndata["feat"].shape[1],
                 self._num_classes, int(g.ndata["train_mask"].sum()), int(g.ndata["val_mask"].sum()),
                 int(g.ndata["test_mask"].sum()))

    # ------------------------------------------------------------ DGL's dataset surface
    def __getitem__(self, idx: int):
        if idx != 0:
            raise IndexError(f"{type(self).__name__} has one graph (index 0), got index {idx!r}")
        return self._g if self._transform is None else self._transform(self._g)

    def __len__(self) -> int:
        return 1

    @property
    def name(self) -> str:
        """DGL's name of the dataset (``"cora_v2"`` for Cora, as DGL 2.1 names it)."""
        return self._name

    @property
    def num_classes(self) -> int:
        return self._num_classes

    @property
    def num_labels(self) -> int:
        """DGL's older name of :attr:`num_classes`."""
        return self._num_classes

    @property
    def raw_dir(self) -> str:
        return str(self._raw_dir)

    @property
    def raw_path(self) -> str:
        """Where the raw files were read from (``"embedded"`` for the Cora copy in bgl)."""
        return self._source

    @property
    def reverse_edge(self) -> bool:
        return self._reverse_edge

    def __repr__(self) -> str:
        return f'Dataset("{self._name}", num_graphs=1, source={self._source})'


def _to_graph(arrays: CitationArrays):
    """A ``bgl.dgl`` graph of the arrays, ndata in DGL's order (masks, label, feat)."""
    from .. import graph

    g = graph((torch.from_numpy(arrays.src), torch.from_numpy(arrays.dst)), num_nodes=arrays.num_nodes)
    g.ndata["train_mask"] = torch.from_numpy(arrays.train_mask)
    g.ndata["val_mask"] = torch.from_numpy(arrays.val_mask)
    g.ndata["test_mask"] = torch.from_numpy(arrays.test_mask)
    g.ndata["label"] = torch.from_numpy(arrays.label)
    g.ndata["feat"] = torch.from_numpy(arrays.feat)
    return g


class CoraGraphDataset(CitationGraphDataset):
    """Cora (2,708 papers, 10,556 directed citations, 1,433 features, 7 classes; 140/500/1000 split);
    DGL 2.1's arguments.  Without raw files, the copy embedded in bgl."""

    def __init__(self, raw_dir=None, force_reload: bool = False, verbose: bool = True, reverse_edge: bool = True,
                 transform: Optional[Callable] = None, reorder: bool = False):
        super().__init__("cora", raw_dir, force_reload, verbose, reverse_edge, transform, reorder)


class CiteseerGraphDataset(CitationGraphDataset):
    """CiteSeer (3,327 papers, 9,228 directed citations, 3,703 features, 6 classes; 120/500/1000 split);
    DGL 2.1's arguments."""

    def __init__(self, raw_dir=None, force_reload: bool = False, verbose: bool = True, reverse_edge: bool = True,
                 transform: Optional[Callable] = None, reorder: bool = False):
        super().__init__("citeseer", raw_dir, force_reload, verbose, reverse_edge, transform, reorder)


class PubmedGraphDataset(CitationGraphDataset):
    """PubMed (19,717 papers, 88,651 directed citations, 500 features, 3 classes; 60/500/1000 split);
    DGL 2.1's arguments."""

    def __init__(self, raw_dir=None, force_reload: bool = False, verbose: bool = True, reverse_edge: bool = True,
                 transform: Optional[Callable] = None, reorder: bool = False):
        super().__init__("pubmed", raw_dir, force_reload, verbose, reverse_edge, transform, reorder)
