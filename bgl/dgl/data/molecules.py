"""DGL 2.1's molecule datasets from the files DGL downloads, nothing downloaded:

* ``QM9Dataset`` (``QM9``): ``raw_dir/qm9_eV.npz`` (``N`` atoms per molecule, ``R`` coordinates, ``Z`` atomic
  numbers, one array per target); ``dataset[i]`` builds molecule ``i``'s graph on access, as DGL does: the
  atom pairs no farther apart than ``cutoff`` (row by row), made bidirected; ``ndata`` ``R`` float32, ``Z``
  int64; the label float32 [len(label_keys)].
* ``QM9EdgeDataset`` (``QM9Edge``): ``raw_dir/qm9_edge.npz`` (``n_node``, ``n_edge``, ``node_attr``,
  ``node_pos``, ``edge_attr``, ``src``, ``dst``, ``targets``); ``ndata`` ``pos`` / ``attr``, ``edata``
  ``edge_attr`` float32; the label ``targets[i][label_keys]`` float32 ([1, 19] when ``label_keys`` is None:
  DGL indexes with None).  DGL rewrites that file with ``np.savez_compressed`` after a forced reload; bgl
  never writes it.
* ``QM7bDataset`` (``QM7b``): ``raw_dir/qm7b.mat`` (read with SciPy's ``loadmat``): per molecule the nonzero
  entries of its Coulomb matrix ``X[i]`` as edges (row by row, the diagonal as self-loops), ``edata["h"]``
  float32 [E, 1]; the 14 targets ``T`` float32.  The SHA-1 DGL checks after its download is not checked.

The ``.npz`` files are read with ``allow_pickle=False`` (only numeric arrays).  A missing file raises
FileNotFoundError naming where to put it and the URL.  Nothing is cached (DGL writes ``dgl_graph.bin``).
"""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np
import torch

from .dgl_dataset import DGLDataset
from .utils import _get_dgl_url, download

__all__ = ["QM9Dataset", "QM9", "QM9EdgeDataset", "QM9Edge", "QM7bDataset", "QM7b"]


def _npz(path: str, url: str) -> dict:
    """Every array of the ``.npz`` at ``path`` (FileNotFoundError naming ``url`` when it is not there)."""
    download(url, path=path)
    with np.load(path, allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


class QM9Dataset(DGLDataset):
    """QM9's 130,831 molecules, graphs by distance (module doc); DGL 2.1's arguments.

    Parameters
    ----------
    label_keys : the targets to predict (names of arrays in ``qm9_eV.npz``: ``mu``, ``alpha``, ``homo``, ...)
    cutoff : atoms no farther apart than this (Angstrom) are joined
    raw_dir : the folder holding ``qm9_eV.npz`` (default DGL's download folder)
    force_reload, verbose, transform : DGL's
    """

    def __init__(self, label_keys, cutoff=5.0, raw_dir=None, force_reload=False, verbose=False,
                 transform: Optional[Callable] = None):
        self.cutoff = cutoff
        self.label_keys = label_keys
        self._url = _get_dgl_url("dataset/qm9_eV.npz")
        super().__init__(name="qm9", url=self._url, raw_dir=raw_dir, force_reload=force_reload, verbose=verbose,
                         transform=transform)

    def process(self) -> None:
        data = _npz(os.path.join(self.raw_dir, "qm9_eV.npz"), self._url)
        self.N, self.R, self.Z = data["N"], data["R"], data["Z"]
        self.label = np.stack([data[key] for key in self.label_keys], axis=1)
        self.N_cumsum = np.concatenate([[0], np.cumsum(self.N)])

    @property
    def num_labels(self) -> int:
        return self.label.shape[1]

    @property
    def num_classes(self) -> int:
        return self.label.shape[1]

    @property
    def num_tasks(self) -> int:
        return self.label.shape[1]

    def __getitem__(self, idx):
        """``(graph, label)`` of molecule ``idx``: O(atoms^2) for the distances."""
        from .. import graph, to_bidirected

        label = torch.tensor(self.label[idx], dtype=torch.float32)
        lo, hi = self.N_cumsum[idx], self.N_cumsum[idx + 1]
        R = self.R[lo:hi]
        near = np.linalg.norm(R[:, None, :] - R[None, :, :], axis=-1) <= self.cutoff
        # DGL: csr_matrix(near) - eye(bool), row by row; bool minus is XOR
        u, v = np.nonzero(near ^ np.eye(int(self.N[idx]), dtype=bool))
        g = to_bidirected(graph((torch.from_numpy(u.astype(np.int32)), torch.from_numpy(v.astype(np.int32)))))
        g.ndata["R"] = torch.tensor(R, dtype=torch.float32)
        g.ndata["Z"] = torch.tensor(self.Z[lo:hi], dtype=torch.int64)
        g = self._transformed(g)
        return g, label

    def __len__(self) -> int:
        return self.label.shape[0]


class QM9EdgeDataset(DGLDataset):
    """QM9 with bond features (module doc); DGL 2.1's arguments.

    Parameters
    ----------
    label_keys : names of the targets (of :attr:`keys`); None: all 19, labels [1, 19]
    raw_dir : the folder holding ``qm9_edge.npz``; force_reload, verbose, transform : DGL's
    """

    keys = ["mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "U0", "U", "H", "G", "Cv", "U0_atom", "U_atom",
            "H_atom", "G_atom", "A", "B", "C"]
    map_dict = {key: i for i, key in enumerate(keys)}

    def __init__(self, label_keys=None, raw_dir=None, force_reload=False, verbose=True,
                 transform: Optional[Callable] = None):
        if label_keys is None:
            self.label_keys, self.num_labels = None, 19
        else:
            self.label_keys, self.num_labels = [self.map_dict[i] for i in label_keys], len(label_keys)
        self._url = _get_dgl_url("dataset/qm9_edge.npz")
        super().__init__(name="qm9Edge", raw_dir=raw_dir, url=self._url, force_reload=force_reload,
                         verbose=verbose, transform=transform)

    @property
    def npz_path(self) -> str:
        return f"{self.raw_dir}/qm9_edge.npz"

    def has_cache(self) -> bool:
        return os.path.exists(self.npz_path)

    def process(self) -> None:
        self.load()

    def load(self) -> None:
        data = _npz(self.npz_path, self._url)
        for key in ("n_node", "n_edge", "node_attr", "node_pos", "edge_attr", "targets", "src", "dst"):
            setattr(self, key, data[key])
        self.n_cumsum = np.concatenate([[0], np.cumsum(self.n_node)])
        self.ne_cumsum = np.concatenate([[0], np.cumsum(self.n_edge)])

    def __getitem__(self, idx):
        from .. import graph

        n0, n1, e0, e1 = self.n_cumsum[idx], self.n_cumsum[idx + 1], self.ne_cumsum[idx], self.ne_cumsum[idx + 1]
        g = graph((torch.from_numpy(self.src[e0:e1]), torch.from_numpy(self.dst[e0:e1])))
        g.ndata["pos"] = torch.tensor(self.node_pos[n0:n1], dtype=torch.float32)
        g.ndata["attr"] = torch.tensor(self.node_attr[n0:n1], dtype=torch.float32)
        g.edata["edge_attr"] = torch.tensor(self.edge_attr[e0:e1], dtype=torch.float32)
        label = torch.tensor(self.targets[idx][self.label_keys], dtype=torch.float32)
        g = self._transformed(g)
        return g, label

    def __len__(self) -> int:
        return self.n_node.shape[0]

    @property
    def num_tasks(self) -> int:
        return self.num_labels


def loadmat(path: str) -> dict:
    """SciPy's ``loadmat`` (ImportError in one line when SciPy is missing: bgl does not depend on it)."""
    try:
        from scipy import io
    except ImportError:
        raise ImportError(f"reading {path} needs SciPy (scipy.io.loadmat): pip install scipy") from None
    import inspect

    # SciPy >= 1.15 asks which sparse type to return (its default changes): the matrices DGL gets
    keep = {"spmatrix": True} if "spmatrix" in inspect.signature(io.loadmat).parameters else {}
    return io.loadmat(path, **keep)


class QM7bDataset(DGLDataset):
    """QM7b's 7,211 molecules (module doc); DGL 2.1's arguments (``raw_dir`` holds ``qm7b.mat``)."""

    _url = "http://deepchem.io.s3-website-us-west-1.amazonaws.com/datasets/qm7b.mat"
    _sha1_str = "4102c744bb9d6fd7b40ac67a300e49cd87e28392"

    def __init__(self, raw_dir=None, force_reload=False, verbose=False, transform: Optional[Callable] = None):
        super().__init__(name="qm7b", url=self._url, raw_dir=raw_dir, force_reload=force_reload, verbose=verbose,
                         transform=transform)

    def process(self) -> None:
        from .. import graph

        path = download(self.url, path=os.path.join(self.raw_dir, self.name + ".mat"))
        data = loadmat(path)
        self.label = torch.tensor(data["T"], dtype=torch.float32)
        feats = data["X"]
        # every molecule's nonzero entries at once: (molecule, row, col) in C order = row by row per molecule
        which, rows, cols = np.nonzero(feats[: self.label.shape[0]])
        values = torch.tensor(feats[which, rows, cols].reshape(-1, 1), dtype=torch.float32)
        bounds = np.searchsorted(which, np.arange(self.label.shape[0] + 1))
        self.graphs = []
        for i in range(self.label.shape[0]):
            lo, hi = bounds[i], bounds[i + 1]
            g = graph((torch.from_numpy(rows[lo:hi]), torch.from_numpy(cols[lo:hi])))
            g.edata["h"] = values[lo:hi]
            self.graphs.append(g)

    @property
    def num_tasks(self) -> int:
        return 14

    @property
    def num_labels(self) -> int:
        return 14

    @property
    def num_classes(self) -> int:
        return 14

    def __getitem__(self, idx):
        g = self.graphs[idx]
        return self._transformed(g), self.label[idx]

    def __len__(self) -> int:
        return len(self.graphs)


QM9 = QM9Dataset
QM9Edge = QM9EdgeDataset
QM7b = QM7bDataset
