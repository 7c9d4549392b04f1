"""Raw Planetoid files (Yang et al. 2016; the Kipf & Welling GCN split).

A dataset ``NAME`` is eight files ``ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}``:
Python-2 pickles of scipy CSR matrices (features), numpy one-hot arrays
(labels) and a dict of adjacency lists, plus a text file of test node ids.

These are pickles, so they are read only from local files the user names,
through an unpickler that admits the handful of classes the files use and
nothing else; CSR matrices are rebuilt from their raw arrays, so scipy is
not needed.

Node layout (the standard one): rows of ``allx`` are nodes ``0..len(allx)-1``;
row ``j`` of ``tx`` is node ``test.index[j]``.  CiteSeer's test ids have
gaps (isolated nodes without features): those nodes get zero features and
label -1.  Split: train = the first ``len(y)`` nodes, val = the next 500,
test = the test ids.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import IngestError
from .csc_build import array_chunks
from .graph_source import GraphSource

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
NUM_VAL = 500


class _PickledCSR:
    """Stand-in for ``scipy.sparse.csr_matrix`` that keeps only its pickled state."""

    def __setstate__(self, state):
        self.state = state

    def to_dense(self, where: str) -> np.ndarray:
        st = {k.decode() if isinstance(k, bytes) else k: v for k, v in self.state.items()}
        try:
            data, indices, indptr = st["data"], st["indices"], st["indptr"]
            rows, cols = (int(x) for x in st.get("_shape", st.get("shape")))
        except (KeyError, TypeError) as e:
            raise IngestError(f"{where}: pickled sparse matrix lacks {e}") from None
        indptr = np.asarray(indptr, np.int64)
        if indptr.shape != (rows + 1,) or indptr[-1] != len(indices):
            raise IngestError(f"{where}: inconsistent sparse matrix (indptr {indptr.shape}, shape {rows}x{cols})")
        out = np.zeros((rows, cols), np.float32)
        row = np.repeat(np.arange(rows), np.diff(indptr))
        out[row, np.asarray(indices, np.int64)] = np.asarray(data, np.float32)
        return out


_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),  # files pickled under numpy 2
    ("collections", "defaultdict"), ("collections", "OrderedDict"),
    ("__builtin__", "list"), ("builtins", "list"), ("__builtin__", "dict"), ("builtins", "dict"),
    ("__builtin__", "set"), ("builtins", "set"), ("copy_reg", "_reconstructor"), ("copyreg", "_reconstructor"),
    ("__builtin__", "object"), ("builtins", "object"),
}
_CSR_NAMES = {("scipy.sparse.csr", "csr_matrix"), ("scipy.sparse._csr", "csr_matrix"),
              ("scipy.sparse", "csr_matrix")}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _CSR_NAMES:
            return _PickledCSR
        if (module, name) in _ALLOWED:
            if module == "__builtin__":
                module = "builtins"
            if module == "copy_reg":
                module = "copyreg"
            return super().find_class(module, name)
        raise IngestError(f"refusing to unpickle {module}.{name}: not part of the Planetoid format")


def _load(prefix: Path, part: str):
    path = Path(f"{prefix}.{part}")
    try:
        with open(path, "rb") as f:
            return _SafeUnpickler(f, encoding="latin1").load()
    except FileNotFoundError:
        raise IngestError(f"{path}: missing (Planetoid needs ind.NAME.{{{','.join(PARTS)},test.index}})") from None
    except IngestError as e:
        raise IngestError(f"{path}: {e}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
        raise IngestError(f"{path}: unreadable or truncated pickle: {e}") from None


def csr_arrays(obj, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """``(data, indices, indptr, shape)`` of a pickled CSR matrix (dtype as stored); a dense 2-D array
    is returned in CSR form too.  IngestError for anything else."""
    if isinstance(obj, _PickledCSR):
        st = {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.state.items()}
        try:
            shape = tuple(int(x) for x in st.get("_shape", st.get("shape")))
            return np.asarray(st["data"]), np.asarray(st["indices"], np.int64), np.asarray(st["indptr"], np.int64), shape
        except (KeyError, TypeError) as e:
            raise IngestError(f"{where}: pickled sparse matrix lacks {e}") from None
    arr = np.asarray(obj)
    if arr.ndim != 2:
        raise IngestError(f"{where}: expected a 2-D matrix, got shape {arr.shape}")
    rows, cols = np.nonzero(arr)
    indptr = np.zeros(arr.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=arr.shape[0]), out=indptr[1:])
    return arr[rows, cols], cols.astype(np.int64), indptr, arr.shape


def _dense(obj, where: str) -> np.ndarray:
    if isinstance(obj, _PickledCSR):
        return obj.to_dense(where)
    arr = np.asarray(obj)
    if arr.ndim != 2:
        raise IngestError(f"{where}: expected a 2-D matrix, got shape {arr.shape}")
    return arr.astype(np.float32)


def _labels(onehot, where: str) -> np.ndarray:
    onehot = np.asarray(onehot)
    if onehot.ndim != 2:
        raise IngestError(f"{where}: expected one-hot labels [n, classes], got shape {onehot.shape}")
    lab = onehot.argmax(axis=1).astype(np.int64)
    lab[onehot.max(axis=1) <= 0] = -1  # rows without a class (CiteSeer has a few)
    return lab


def resolve_prefix(path: Path, name: str | None = None) -> Path:
    """``DIR`` (+ ``name``) or ``DIR/ind.NAME`` -> the ``DIR/ind.NAME`` prefix."""
    if path.is_dir():
        if name is None:
            names = sorted(p.name[len("ind."):-len(".graph")] for p in path.glob("ind.*.graph"))
            if len(names) != 1:
                raise IngestError(f"{path}: holds Planetoid datasets {names}; choose one with name=")
            name = names[0]
        return path / f"ind.{name}"
    return path


@dataclass(frozen=True)
class RawPlanetoid:
    """The eight files of one dataset as stored, before any library's layout of them.

    Attributes
    ----------
    where : the ``DIR/ind.NAME`` prefix, for error messages
    x, y, tx, ty, allx, ally : the unpickled objects (CSR stand-ins or arrays; see :func:`csr_arrays`)
    test_index : int64 [t], ``test.index`` in file order
    keys : int64 [k], the adjacency dict's keys in its order; lens : int64 [k], each list's length
    nbrs : int64 [sum(lens)], the lists concatenated
    """

    where: str
    x: object
    y: object
    tx: object
    ty: object
    allx: object
    ally: object
    test_index: np.ndarray
    keys: np.ndarray
    lens: np.ndarray
    nbrs: np.ndarray


def read_raw(prefix: Path) -> RawPlanetoid:
    """Read ``<prefix>.{x,y,tx,ty,allx,ally,graph,test.index}`` (pickles through the restricted
    unpickler); IngestError naming a missing or unreadable file, or a graph that is not a dict.

    Shared by bgl's own layout (:func:`read_planetoid`) and DGL's (:mod:`bgl.dgl.data`), which
    differ in what they make of the same files, not in how they read them.
    """
    prefix = Path(prefix)
    where = str(prefix)
    x, y, tx, ty, allx, ally, graph = (_load(prefix, p) for p in PARTS)
    index_file = Path(f"{prefix}.test.index")
    try:
        test_index = np.loadtxt(index_file, dtype=np.int64, ndmin=1)
    except FileNotFoundError:
        raise IngestError(f"{index_file}: missing") from None
    except ValueError as e:
        raise IngestError(f"{index_file}: not a list of integer node ids: {e}") from None
    if not isinstance(graph, dict):
        raise IngestError(f"{where}.graph: expected a dict of adjacency lists, got {type(graph).__name__}")
    # Adjacency lists are Python objects already; flattening them is O(entries) once.
    keys = np.fromiter(graph.keys(), np.int64, len(graph))
    lens = np.fromiter((len(v) for v in graph.values()), np.int64, len(graph))
    nbrs = np.fromiter((int(w) for v in graph.values() for w in v), np.int64, int(lens.sum()))
    return RawPlanetoid(where, x, y, tx, ty, allx, ally, test_index, keys, lens, nbrs)


def read_planetoid(path: Path, *, name: str | None = None) -> GraphSource:
    """Read a Planetoid dataset into a :class:`GraphSource` that keeps the standard split."""
    prefix = resolve_prefix(Path(path), name)
    raw = read_raw(prefix)
    where, test_index, y, ty = raw.where, raw.test_index, raw.y, raw.ty
    allx, tx, ally = _dense(raw.allx, f"{where}.allx"), _dense(raw.tx, f"{where}.tx"), raw.ally
    num_classes = int(np.asarray(ally).shape[-1]) if np.asarray(ally).ndim == 2 else 0
    ally, ty, y = _labels(ally, f"{where}.ally"), _labels(ty, f"{where}.ty"), _labels(y, f"{where}.y")
    if allx.shape[0] != ally.shape[0] or tx.shape[0] != ty.shape[0] or tx.shape[0] != test_index.size:
        raise IngestError(
            f"{where}: row count mismatch: allx {allx.shape[0]}, ally {ally.shape[0]}, "
            f"tx {tx.shape[0]}, ty {ty.shape[0]}, test.index {test_index.size}"
        )
    if allx.shape[1] != tx.shape[1]:
        raise IngestError(f"{where}: allx has {allx.shape[1]} feature columns, tx {tx.shape[1]}")
    if test_index.size and int(test_index.min()) < allx.shape[0]:
        raise IngestError(f"{where}.test.index: test id {int(test_index.min())} overlaps allx rows [0, {allx.shape[0]})")

    keys, src, dst = raw.keys, np.repeat(raw.keys, raw.lens), raw.nbrs
    n = max(allx.shape[0], int(test_index.max()) + 1 if test_index.size else 0,
            int(keys.max()) + 1 if keys.size else 0, int(dst.max()) + 1 if dst.size else 0)
    if dst.size and int(min(dst.min(), keys.min())) < 0:
        raise IngestError(f"{where}.graph: negative node id {int(min(dst.min(), keys.min()))}")

    feat = np.zeros((n, allx.shape[1]), np.float32)
    feat[: allx.shape[0]] = allx
    feat[test_index] = tx
    label = np.full(n, -1, np.int64)
    label[: ally.shape[0]] = ally
    label[test_index] = ty
    num_train = y.shape[0]
    splits = {
        "train": np.arange(num_train, dtype=np.int64),
        "val": np.arange(num_train, min(num_train + NUM_VAL, allx.shape[0]), dtype=np.int64),
        "test": np.sort(test_index),
    }
    return GraphSource(
        name=prefix.name[len("ind."):] if prefix.name.startswith("ind.") else prefix.name,
        num_nodes=n, edges=array_chunks(src, dst), num_edges_hint=int(src.size),
        feat=feat, label=label, num_classes=num_classes, splits=splits, symmetrize_default=True,
        extra={"source": where, "format": "planetoid", "missing_test_nodes": int(n - allx.shape[0] - test_index.size)},
    )
