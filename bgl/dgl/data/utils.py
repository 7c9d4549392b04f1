"""``dgl.data.utils`` without DGL: what DGL's example scripts import from it (``import bgl.dgl as dgl``, then
``from dgl.data.utils import ...`` reads ``bgl.dgl.data.utils``).

Nothing here reaches the network.  :func:`download` returns a file that is already where the script
asks for it (its SHA-1 checked when given) and otherwise raises one line naming the URL and the path to
put the file at, whatever ``overwrite`` says (DGL re-downloads by default; here there is nothing to
fetch it with).  :func:`save_tensors` / :func:`load_tensors` and :func:`save_graphs` / :func:`load_graphs`
write and read bgl's ``.npz`` form, never pickle; a file in DGL's own binary format is refused in one
line (move it with :func:`bgl.dgl.data.from_dgl` where DGL still imports).  ``save_info`` / ``load_info``
(DGL pickles there) are not provided: ``torch.save`` / ``torch.load(weights_only=True)`` or JSON instead.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
from itertools import accumulate
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from ...output_dir import write_npz_atomically
from ..base import DGLError
from .graph_files import DGL_MAGIC, load_graphs, save_graphs

__all__ = ["loadtxt", "download", "check_sha1", "extract_archive", "get_download_dir", "makedirs", "Subset",
           "split_dataset", "save_graphs", "load_graphs", "save_tensors", "load_tensors", "idx2mask",
           "generate_mask_tensor", "add_nodepred_split", "mask_nodes_by_property", "add_node_property_split"]

TENSORS_FORMAT = "bgl.dgl.tensors"


def _get_dgl_url(file_url: str) -> str:
    """The URL DGL would download ``file_url`` from (``$DGL_REPO`` or data.dgl.ai): scripts build the
    names of the files they expect with it."""
    repo = os.environ.get("DGL_REPO", "https://data.dgl.ai/")
    return (repo if repo.endswith("/") else repo + "/") + file_url


def get_download_dir() -> str:
    """DGL's download folder: ``$DGL_DOWNLOAD_DIR`` or ``~/.dgl`` (created if missing), where
    :func:`download` looks for the files a script asks for."""
    folder = os.environ.get("DGL_DOWNLOAD_DIR", os.path.join(os.path.expanduser("~"), ".dgl"))
    os.makedirs(folder, exist_ok=True)
    return folder


def makedirs(path: str) -> None:
    """``os.makedirs`` that accepts an existing folder (DGL's helper)."""
    try:
        os.makedirs(os.path.expanduser(os.path.normpath(path)))
    except OSError as e:
        if e.errno != errno.EEXIST or not os.path.isdir(path):
            raise


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 of the file's bytes is ``sha1_hash`` (hex), read 1 MiB at a time."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def download(url: str, path: str | None = None, overwrite: bool = True, sha1_hash: str | None = None,
             retries: int = 5, verify_ssl: bool = True, log: bool = True) -> str:
    """The local file DGL's ``download(url, path)`` would write: returned when it is there (and its SHA-1
    matches ``sha1_hash`` when given); otherwise ``FileNotFoundError`` naming the URL and where to put the
    file.  ``overwrite``, ``retries``, ``verify_ssl`` and ``log`` are accepted for DGL's signature."""
    name = url.split("/")[-1]
    if path is None:
        if not name:
            raise ValueError(f"cannot name a file after the URL {url!r}: pass path=")
        target = name
    else:
        path = os.path.expanduser(path)
        target = os.path.join(path, name) if os.path.isdir(path) else path
    if os.path.isfile(target) and (sha1_hash is None or check_sha1(target, sha1_hash)):
        return target
    why = "has another SHA-1 than expected" if os.path.isfile(target) else "is missing"
    raise FileNotFoundError(f"bgl.dgl downloads nothing and {target} {why}: fetch {url} and put it at "
                            f"{os.path.abspath(target)}")


def extract_archive(file: str, target_dir: str, overwrite: bool = True) -> None:
    """Unpack a ``.tar`` / ``.tar.gz`` / ``.tgz`` / ``.zip`` / ``.gz`` into ``target_dir`` (nothing when it exists and
    ``overwrite`` is False); a member that would land outside ``target_dir`` is refused before anything is
    written."""
    if os.path.exists(target_dir) and not overwrite:
        return
    os.makedirs(target_dir, exist_ok=True)
    root = os.path.realpath(target_dir)
    if file.endswith((".tar.gz", ".tar", ".tgz")):
        import tarfile

        with tarfile.open(file, "r") as archive:
            _inside(root, [m.name for m in archive.getmembers()], file)
            # tarfile's "data" filter (3.11.4+) also refuses links out of the folder and device files
            archive.extractall(target_dir, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    elif file.endswith(".gz"):
        import gzip
        import shutil

        with gzip.open(file, "rb") as src, open(os.path.join(target_dir, os.path.basename(file)[:-3]), "wb") as dst:
            shutil.copyfileobj(src, dst)
    elif file.endswith(".zip"):
        import zipfile

        with zipfile.ZipFile(file, "r") as archive:
            _inside(root, archive.namelist(), file)
            archive.extractall(target_dir)
    else:
        raise ValueError(f"Unrecognized file type: {file} (expected .tar, .tar.gz, .tgz, .zip or .gz)")


def _inside(root: str, names: Sequence[str], file: str) -> None:
    for name in names:
        where = os.path.realpath(os.path.join(root, name))
        if os.path.commonpath([root, where]) != root:
            raise ValueError(f"{file}: member {name!r} would be written outside {root}; nothing extracted")


def loadtxt(path: str, delimiter: str, dtype=None) -> np.ndarray:
    """A delimited text table as one array (DGL reads it with pandas when installed, as here)."""
    try:
        import pandas as pd
    except ImportError:
        return np.loadtxt(path, delimiter=delimiter)
    return pd.read_csv(path, delimiter=delimiter, header=None).values


class Subset:
    """``dataset[indices[i]]`` as item ``i`` (DGL's ``Subset``: what :func:`split_dataset` returns)."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, item):
        return self.dataset[self.indices[item]]

    def __len__(self) -> int:
        return len(self.indices)


def split_dataset(dataset, frac_list=None, shuffle: bool = False, random_state=None) -> list[Subset]:
    """Train / validation / test :class:`Subset` s of ``dataset`` in the fractions ``frac_list`` (default
    0.8 / 0.1 / 0.1; the last takes the remainder), consecutive or, with ``shuffle``, after
    ``np.random.RandomState(random_state).permutation``: the same subsets as DGL's for the same seed."""
    fractions = np.asarray([0.8, 0.1, 0.1] if frac_list is None else frac_list, dtype=np.float64)
    if not np.allclose(fractions.sum(), 1.0):
        raise AssertionError(f"Expect frac_list sum to 1, got {fractions.sum():.4f}")
    n = len(dataset)
    lengths = (n * fractions).astype(int)
    lengths[-1] = n - lengths[:-1].sum()
    order = np.random.RandomState(seed=random_state).permutation(n) if shuffle else np.arange(n)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(accumulate(lengths), lengths)]


def idx2mask(idx, length: int) -> np.ndarray:
    """A float64 array of ``length`` zeros with ones at ``idx`` (DGL's helper)."""
    mask = np.zeros(length)
    mask[idx] = 1
    return mask


def generate_mask_tensor(mask: np.ndarray) -> torch.Tensor:
    """``mask`` as a bool tensor (DGL's PyTorch backend)."""
    if not isinstance(mask, np.ndarray):
        raise AssertionError("input for generate_mask_tensor should be an numpy ndarray")
    return torch.tensor(mask, dtype=torch.bool)


def save_tensors(filename: str, tensor_dict: Mapping[str, torch.Tensor]) -> None:
    """Write ``{name: tensor}`` to ``filename`` as an ``.npz`` of plain arrays (no pickle), in place only once
    complete.  Names are kept as given; tensors keep their dtype (bfloat16 as its 16-bit pattern)."""
    if not isinstance(tensor_dict, Mapping):
        raise DGLError(f"save_tensors takes a dict of tensors, got {type(tensor_dict).__name__}")
    arrays, dtypes = {}, []
    for i, (name, value) in enumerate(tensor_dict.items()):
        if not isinstance(value, torch.Tensor):
            raise DGLError(f"save_tensors: {name!r} is a {type(value).__name__}, not a tensor")
        t = value.detach().cpu()
        dtypes.append([str(name), str(t.dtype).removeprefix("torch.")])
        arrays[f"t{i}"] = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
    meta = np.array(json.dumps({"format": TENSORS_FORMAT, "version": 1, "tensors": dtypes}))
    write_npz_atomically(filename, {"meta": meta, **arrays})


def load_tensors(filename: str, return_dgl_ndarray: bool = False) -> dict[str, torch.Tensor]:
    """The ``{name: tensor}`` :func:`save_tensors` wrote.  A file in DGL's own binary format is refused in one
    line (DGL's C++ serialisation: convert it where DGL imports)."""
    if return_dgl_ndarray:
        raise DGLError("return_dgl_ndarray=True: bgl.dgl has no DGL NDArray; tensors are returned")
    with open(filename, "rb") as f:
        head = f.read(8)
    if head == DGL_MAGIC or not head.startswith(b"PK"):
        raise DGLError(f"{filename} is not a bgl.dgl tensor file (DGL's own format is read only by DGL: where DGL "
                       "imports, load it with dgl.data.utils.load_tensors and save it with bgl.dgl.data.utils."
                       "save_tensors)")
    with np.load(filename, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != TENSORS_FORMAT:
            raise DGLError(f"{filename} is not a bgl.dgl tensor file (format {meta.get('format')!r})")
        out = {}
        for i, (name, dtype) in enumerate(meta["tensors"]):
            t = torch.from_numpy(data[f"t{i}"].copy())
            out[name] = t.view(torch.bfloat16) if dtype == "bfloat16" else t
    return out



# ---------------------------------------------------------------------------------------------- node splits
def add_nodepred_split(dataset, ratio, ntype=None) -> None:
    """New bool ``train_mask`` / ``val_mask`` / ``test_mask`` on every graph of ``dataset`` (node type ``ntype``):
    a ``np.random.shuffle`` of the node ids cut at ``int(n * ratio[i])``, the test part taking the rest (DGL's
    split for the same NumPy state).  ValueError when ``ratio`` is not three numbers."""
    if len(ratio) != 3:
        raise ValueError(f"Split ratio must be a float triplet but got {ratio}.")
    for i in range(len(dataset)):
        g = dataset[i]
        n = g.num_nodes(ntype)
        idx = np.arange(0, n)
        np.random.shuffle(idx)
        n_train, n_val = int(n * ratio[0]), int(n * ratio[1])
        parts = (idx[:n_train], idx[n_train:n_train + n_val], idx[n_train + n_val:])
        for key, part in zip(("train_mask", "val_mask", "test_mask"), parts):
            g.nodes[ntype].data[key] = generate_mask_tensor(idx2mask(part, n))


OOD_MASKS = ("in_train_mask", "in_valid_mask", "in_test_mask", "out_valid_mask", "out_test_mask")


def mask_nodes_by_property(property_values, part_ratios, random_seed=None) -> dict[str, torch.Tensor]:
    """DGL's out-of-distribution split (Bazhenov et al.): the nodes sorted by ``property_values`` (ties broken by
    a seeded permutation), the first three ``part_ratios`` shuffled together as in-distribution train / valid /
    test, the last two the out-of-distribution valid / test.  Returns ``{name: bool [n]}`` for the five
    :data:`OOD_MASKS`; the same masks as DGL's for the same ``random_seed``."""
    num_nodes = len(property_values)
    part_sizes = np.round(num_nodes * np.array(part_ratios)).astype(int)
    part_sizes[-1] -= np.sum(part_sizes) - num_nodes
    generator = np.random.RandomState(random_seed)
    permutation = generator.permutation(num_nodes)
    node_indices = np.arange(num_nodes)[permutation]
    ordered = node_indices[np.argsort(np.asarray(property_values)[permutation])]
    in_distribution = np.sum(part_sizes[:3])
    ordered[:in_distribution] = generator.permutation(ordered[:in_distribution])
    parts = np.split(ordered, np.cumsum(part_sizes))[:-1]
    return {name: generate_mask_tensor(idx2mask(part, num_nodes)) for name, part in zip(OOD_MASKS, parts)}


def add_node_property_split(dataset, part_ratios, property_name, ascending=True, random_seed=None) -> None:
    """:func:`mask_nodes_by_property` masks in ``ndata`` of every graph of ``dataset``, the property computed by
    networkx on the graph as an undirected simple graph: ``"popularity"`` (PageRank), ``"locality"``
    (PageRank personalised to the top node) or ``"density"`` (clustering coefficient), ascending or not.
    networkx is needed (ImportError in one line when missing); its PageRank costs a few passes over the edges."""
    assert property_name in ["popularity", "locality", "density"], \
        "The name of property has to be 'popularity', 'locality', or 'density'"
    assert len(part_ratios) == 5, "part_ratios must contain 5 values"
    try:
        import networkx as nx
    except ImportError:
        raise ImportError("add_node_property_split computes node properties with networkx, which is not installed: "
                          "pip install networkx") from None
    direction = -1 if ascending else 1
    for idx in range(len(dataset)):
        g = dataset[idx]
        graph_nx = nx.Graph(g.to_networkx())
        if property_name == "density":
            values = np.array(list(nx.algorithms.clustering(graph_nx).values()))
        else:
            values = np.array(list(nx.algorithms.pagerank(graph_nx).values()))
            if property_name == "locality":
                n = graph_nx.number_of_nodes()
                personalization = dict(zip(range(n), [0.0] * n))
                personalization[np.argmax(values)] = 1.0
                values = np.array(list(nx.algorithms.pagerank(graph_nx, personalization=personalization).values()))
        for name, mask in mask_nodes_by_property(direction * values, part_ratios, random_seed).items():
            g.ndata[name] = mask
