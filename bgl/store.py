"""On-disk graph store: one directory of ``.npy`` arrays plus ``meta.json``.

Every array opens with ``np.load(mmap_mode='r')`` so a store larger than RAM
opens instantly and pages in only what a sampler touches.  The adjacency is
CSC (row ``v`` of ``indptr``/``indices`` lists the *in*-neighbours of ``v``),
because DGL samples a node's in-edges to build message-flow graphs.

A store may own a slice of a larger graph (a partition part): it then holds
rows for global ids ``[node_offset, node_offset + num_nodes)`` while
``indices`` and the split arrays hold *global* ids in
``[0, global_num_nodes)``.  A whole-graph store has ``node_offset == 0`` and
``global_num_nodes == num_nodes``.

Stores are written into a hidden work directory next to ``<dir>`` and renamed
into place, so a store is either complete or absent, never half-written;
``overwrite=True`` replaces only an existing bgl store (``bgl.output_dir``).

Layout::

    meta.json        format, version, counts, dtypes, split sizes
    indptr.npy       int64 [num_nodes + 1]
    indices.npy      int32 or int64 [num_edges]  (int32 while global ids fit)
    feat.npy         [num_nodes, feat_dim]  (optional)
    label.npy        int64 [num_nodes]  (optional, -1 = unlabelled)
    <split>_idx.npy  int64 [n]  for each split name (train, val, test, ...)
    edata/<name>.npy [num_edges, ...]  named per-edge arrays in CSC edge order (bgl.schema)
    ndata/<name>.npy [num_nodes, ...]  named per-node arrays, e.g. node times (bgl.node_arrays)
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from . import schema as E
from .errors import StoreFormatError
from .output_dir import PARTITION, STORE, WorkDir, check_output, kind_of, remove_stale, replace_output

# The meta.json fields and versions live in bgl/schema.py; these names are re-exported.
from .node_arrays import NodeArrays, NodeArrayWriter, load_node_arrays
from .schema import (CHECK_CHUNK, FORMAT_NAME, FORMAT_VERSION, FULL_CHECK_MAX_EDGES, META_FILE,  # noqa: F401
                         SUPPORTED_VERSIONS, TYPED_FORMAT_VERSION, CODEC_FORMAT_VERSION, StoreMeta,
                     id_dtype_for)


class GraphStore(E.EdgeArrays, NodeArrays):
    """A read-only, memory-mapped graph store directory.

    Parameters
    ----------
    path : directory written by :func:`write_store` or :class:`StoreWriter`.
    validate : ``"auto"`` (full index check up to ``FULL_CHECK_MAX_EDGES``
        edges, sampled beyond), ``"full"``, or ``"none"``.

    Raises
    ------
    StoreFormatError
        naming the file and the problem, if anything is missing or inconsistent.
    """

    def __init__(self, path: str | os.PathLike, validate: str = "auto"):
        self.path = Path(path)
        if not self.path.is_dir():
            what = "is a file, not a graph store directory" if self.path.exists() else "graph store directory does not exist"
            raise StoreFormatError(f"{self.path}: {what}")
        meta_path = self.path / META_FILE
        if not meta_path.exists() and kind_of(self.path) is PARTITION:
            raise StoreFormatError(f"{self.path}: is a bgl partition directory, not a graph store; "
                                   f"give one of its parts ({self.path / 'part-0'}, ...)")
        raw = read_json(meta_path, StoreFormatError, "missing (incomplete or not a graph store)")
        if not isinstance(raw, dict):
            raise StoreFormatError(f"{meta_path}: expected a JSON object")
        meta = StoreMeta.from_dict(raw, meta_path)
        if meta.global_num_nodes < 0:
            meta = StoreMeta(**{**meta.to_dict(), "global_num_nodes": meta.num_nodes})
        self.meta = meta

        n, e = meta.num_nodes, meta.num_edges
        self.indptr = self._load("indptr", (n + 1,), np.int64)
        self.indices = self._load("indices", (e,), np.dtype(meta.id_dtype))
        self.feat = None
        if meta.feat_dim > 0 and meta.feat_float32:
            self.feat = self._load("feat", (n, meta.feat_dim), np.dtype(meta.feat_dtype or "float32"))
        self.feat_codec, self.feat_encoded = self._load_encoded_feat()
        self.label = self._load("label", (n,), np.int64) if meta.has_label else None
        self.splits = {name: self._load(f"{name}_idx", (size,), np.int64) for name, size in meta.splits.items()}
        self._load_typed()
        self.edata = E.load_edge_arrays(meta_path, meta.edata, e, self._load)
        self.ndata, self.ndata_source = load_node_arrays(meta_path, meta.ndata, n, e, self._load)
        if validate != "none":
            self.validate(full=(validate == "full") or e <= FULL_CHECK_MAX_EDGES)

    # ------------------------------------------------------------------ loading
    def _load(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        file = self.path / f"{name}.npy"
        try:
            arr = np.load(file, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise StoreFormatError(f"{file}: missing") from None
        except (ValueError, OSError) as e:
            raise StoreFormatError(f"{file}: unreadable or truncated: {e}") from None
        if arr.shape != shape:
            raise StoreFormatError(f"{file}: shape {arr.shape}, meta.json says {shape}")
        if arr.dtype != np.dtype(dtype):
            raise StoreFormatError(f"{file}: dtype {arr.dtype}, expected {np.dtype(dtype)}")
        return arr

    def _load_encoded_feat(self) -> tuple:
        """(codec, encoded rows) of a version 3 store (``feat.<codec>.npy``, bgl/codec), else (None, None)."""
        if self.meta.feat_codec is None or self.meta.schema is not None:  # a typed store's: per type, _load_typed
            return None, None
        from .codec.rows import RowCodec

        try:
            codec = RowCodec.from_dict(self.meta.feat_codec)
        except (TypeError, ValueError) as e:
            raise StoreFormatError(f"{self.path / META_FILE}: feat_codec: {e}") from None
        if codec.dim != self.meta.feat_dim:
            raise StoreFormatError(f"{self.path / META_FILE}: feat_codec is for {codec.dim} columns, "
                                   f"feat_dim is {self.meta.feat_dim}")
        return codec, self._load(f"feat.{codec.name}", (self.meta.num_nodes, codec.row_width), codec.row_dtype)

    @property
    def feat_dtype_name(self) -> str | None:
        """dtype name of the decoded feature rows (``feat.npy``'s, or meta.json's for a store holding only
        encoded rows), None without features."""
        if self.feat is not None:
            return self.feat.dtype.name
        return (self.meta.feat_dtype or "float32") if self.feat_codec is not None else None

    @property
    def feat_rows(self):
        """The feature rows this store serves: the encoded ones (``feat.<codec>.npy``) when it has a
        codec (decoded once per batch by the loader's transfer stage), else ``feat``; None without features."""
        return self.feat_encoded if self.feat_codec is not None else self.feat

    def _load_typed(self) -> None:
        """The schema, and for a typed store its ``etype`` and per-type feature/label/split arrays."""
        from .schema import open_typed_arrays

        (self.schema, self.etype, self.type_feat, self.type_label, self.type_splits, self.type_feat_codec,
         self.type_feat_encoded) = open_typed_arrays(self.meta, self.path / META_FILE, self._load)

    @property
    def is_typed(self) -> bool:
        """True for a store with several node or edge types (format version 2)."""
        return self.meta.schema is not None

    def validate(self, full: bool = True) -> None:
        """Check the CSC invariants; ``full=False`` samples the index range check.

        Raises ``StoreFormatError`` naming the file and the first bad position.
        """
        m = self.meta
        ip = self.indptr
        if ip[0] != 0 or ip[-1] != m.num_edges:
            raise StoreFormatError(
                f"{self.path / 'indptr.npy'}: must start at 0 and end at num_edges={m.num_edges}, "
                f"got {int(ip[0])}..{int(ip[-1])}"
            )
        for start in range(0, m.num_nodes, CHECK_CHUNK):
            chunk = np.asarray(ip[start : start + CHECK_CHUNK + 1])
            bad = np.flatnonzero(np.diff(chunk) < 0)
            if bad.size:
                raise StoreFormatError(
                    f"{self.path / 'indptr.npy'}: not monotonic at node {start + int(bad[0])}"
                )
        hi = m.global_num_nodes
        idx = self.indices
        if full:
            chunks = (np.asarray(idx[s : s + CHECK_CHUNK]) for s in range(0, m.num_edges, CHECK_CHUNK))
            starts = range(0, m.num_edges, CHECK_CHUNK)
        else:
            rng = np.random.default_rng(0)
            pos = np.sort(rng.integers(0, m.num_edges, size=1 << 20))
            chunks = iter([np.asarray(idx[:CHECK_CHUNK]), np.asarray(idx[-CHECK_CHUNK:]), np.asarray(idx[pos])])
            starts = [0, max(0, m.num_edges - CHECK_CHUNK), -1]
        for start, chunk in zip(starts, chunks):
            if chunk.size and (int(chunk.min()) < 0 or int(chunk.max()) >= hi):
                bad = int(np.flatnonzero((chunk < 0) | (chunk >= hi))[0])
                where = f"edge {start + bad}" if start >= 0 else "a sampled edge"
                raise StoreFormatError(
                    f"{self.path / 'indices.npy'}: node id {int(chunk[bad])} at {where} "
                    f"outside [0, {hi})"
                )
        lo, top = m.node_offset, m.node_offset + m.num_nodes
        for name, arr in self.splits.items():
            if arr.size and (int(arr.min()) < lo or int(arr.max()) >= top):
                raise StoreFormatError(f"{self.path / f'{name}_idx.npy'}: ids outside owned range [{lo}, {top})")
        if self.label is not None and m.num_classes and self.label.size:
            if int(self.label.max()) >= m.num_classes or int(self.label.min()) < -1:
                raise StoreFormatError(
                    f"{self.path / 'label.npy'}: labels outside [-1, {m.num_classes}) (num_classes in meta.json)"
                )

    # --------------------------------------------------------------- accessors
    @property
    def num_nodes(self) -> int:
        """Rows this store owns (the whole graph unless it is a partition part)."""
        return self.meta.num_nodes

    @property
    def num_edges(self) -> int:
        """In-edges stored for the owned rows."""
        return self.meta.num_edges

    @property
    def node_offset(self) -> int:
        """Global id of row 0 (0 for a whole-graph store)."""
        return self.meta.node_offset

    @property
    def global_num_nodes(self) -> int:
        """Size of the global id space that ``indices`` and split ids live in."""
        return self.meta.global_num_nodes

    @property
    def feat_dim(self) -> int:
        """Feature width (0 when the store has no features)."""
        return self.meta.feat_dim

    @property
    def num_classes(self) -> int:
        """Number of label classes (0 when unlabelled)."""
        return self.meta.num_classes

    def split(self, name: str) -> np.ndarray:
        """Ids of one split (``train``/``val``/``test``); KeyError lists the ones present."""
        if name not in self.splits:
            raise KeyError(f"store {self.path} has no split {name!r}; it has {sorted(self.splits)}")
        return self.splits[name]

    train_idx = property(lambda self: self.split("train"), doc="Training node ids (global ids, int64).")
    val_idx = property(lambda self: self.split("val"), doc="Validation node ids (global ids, int64).")
    test_idx = property(lambda self: self.split("test"), doc="Test node ids (global ids, int64).")

    def in_degrees(self) -> np.ndarray:
        """In-degree of every owned row, int64 [num_nodes] (one pass over indptr)."""
        return np.diff(self.indptr)

    def summary(self) -> dict[str, Any]:
        """Counts and degree statistics for ``bgl info`` (one O(nodes) pass over indptr)."""
        deg = self.in_degrees()
        return {
            "path": str(self.path),
            "name": self.meta.name,
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
            "node_offset": self.node_offset,
            "global_num_nodes": self.global_num_nodes,
            "in_degree_min": int(deg.min()) if deg.size else 0,
            "in_degree_mean": float(deg.mean()) if deg.size else 0.0,
            "in_degree_max": int(deg.max()) if deg.size else 0,
            "feat_dim": self.feat_dim,
            "feat_dtype": self.meta.feat_dtype,
            "feat_codec": None if self.feat_codec is None else self.feat_codec.to_dict(),
            "num_classes": self.num_classes,
            "splits": dict(self.meta.splits),
            "edata": {k: dict(v) for k, v in self.meta.edata.items()},
            "ndata": {k: dict(v) for k, v in self.meta.ndata.items()},
        }

    def __repr__(self) -> str:
        return (
            f"GraphStore({str(self.path)!r}, nodes={self.num_nodes}, edges={self.num_edges}, "
            f"feat_dim={self.feat_dim}, splits={dict(self.meta.splits)})"
        )


def open_store(path: str | os.PathLike, validate: str = "auto") -> GraphStore:
    """Open a graph store directory (see :class:`GraphStore`)."""
    return GraphStore(path, validate=validate)


class StoreWriter(E.EdgeArrayWriter, NodeArrayWriter):
    """Writes a store into a hidden, locked work dir next to ``path`` and renames it into place on
    success; ``overwrite=True`` replaces only a bgl store (FileExistsError naming anything else).

    Use as a context manager.  Large arrays are created as ``.npy`` memmaps
    with :meth:`create_array` and filled in chunks, so writers never need the
    whole graph in RAM.  On any exception the temp directory is removed and
    nothing appears at ``path``.

    Example::

        with StoreWriter(out, num_nodes=n, num_edges=e) as w:
            ip = w.create_array("indptr", (n + 1,), np.int64)
            ...
            w.save_array("label", labels, num_classes=7)
        store = w.store
    """

    def __init__(self, path: str | os.PathLike, num_nodes: int, num_edges: int, *,
                 node_offset: int = 0, global_num_nodes: int | None = None,
                 name: str = "", extra: Mapping[str, Any] | None = None, overwrite: bool = False):
        # Only a bgl store is replaced; anything else at ``path`` is refused (bgl.output_dir).
        self.path = check_output(path, STORE, overwrite)
        self._overwrite = overwrite
        self._work: WorkDir | None = None
        self.tmp: Path | None = None
        g = num_nodes if global_num_nodes is None else global_num_nodes
        self._meta: dict[str, Any] = dict(
            num_nodes=int(num_nodes), num_edges=int(num_edges), id_dtype=id_dtype_for(g).name,
            node_offset=int(node_offset), global_num_nodes=int(g), splits={}, edata={}, ndata={}, name=name,
            extra=dict(extra or {}),
        )
        self.store: GraphStore | None = None

    def __enter__(self) -> "StoreWriter":
        remove_stale(self.path.absolute().parent)  # what killed earlier writers left here
        self._work = WorkDir(self.path, "tmp")
        self.tmp = self._work.path
        return self

    @property
    def id_dtype(self) -> np.dtype:
        """dtype that ``indices`` must be written in (int32 while global ids fit)."""
        return np.dtype(self._meta["id_dtype"])

    def create_array(self, name: str, shape: tuple[int, ...], dtype) -> np.memmap:
        """A writable ``.npy`` memmap in the temp dir, to be filled in chunks."""
        self._note_array(name, shape, dtype)
        return np.lib.format.open_memmap(self.tmp / f"{name}.npy", mode="w+", dtype=dtype, shape=shape)

    def save_array(self, name: str, array: np.ndarray, *, num_classes: int | None = None) -> None:
        """Write a whole in-memory array (``indptr``, ``indices``, ``feat``, ``label``, ``<split>_idx``)."""
        array = np.asarray(array)
        if name == "indices":
            array = array.astype(self.id_dtype, copy=False)
        elif name in ("indptr", "label") or name.endswith("_idx"):
            array = array.astype(np.int64, copy=False)
        self._note_array(name, array.shape, array.dtype)
        if name == "label" and num_classes is not None:
            self._meta["num_classes"] = int(num_classes)
        np.save(self.tmp / f"{name}.npy", array, allow_pickle=False)

    def set_num_classes(self, num_classes: int) -> None:
        """Record the class count when labels are written in chunks rather than by ``save_array``."""
        self._meta["num_classes"] = int(num_classes)

    def save_typed(self, relpath: str, array: np.ndarray) -> None:
        """Write a typed store's array at ``relpath`` (``etype``, ``feat/<type>``, ...), no meta bookkeeping:
        :func:`bgl.sources.typed.source.write_typed_source` puts the schema in the meta with :meth:`set_schema`."""
        file = self.tmp / f"{relpath}.npy"
        file.parent.mkdir(parents=True, exist_ok=True)
        np.save(file, np.asarray(array), allow_pickle=False)

    def create_typed(self, relpath: str, shape: tuple[int, ...], dtype) -> np.memmap:
        """A writable ``.npy`` memmap at ``relpath`` of a typed store (``feat/<type>``, ...), filled in chunks."""
        file = self.tmp / f"{relpath}.npy"
        file.parent.mkdir(parents=True, exist_ok=True)
        return np.lib.format.open_memmap(file, mode="w+", dtype=dtype, shape=tuple(shape))

    def set_feat_codec(self, codec, float32: bool) -> None:
        """Make this a store of encoded feature rows (format version 3): ``feat.<codec>.npy`` written by the
        caller; ``float32`` says whether ``feat.npy`` is written too (:mod:`bgl.codec`)."""
        self._meta.update(feat_codec=codec.to_dict(), feat_float32=bool(float32), feat_dim=codec.dim,
                          version=CODEC_FORMAT_VERSION)
        self._meta.setdefault("feat_dtype", "float32")

    def set_schema(self, schema: Mapping[str, Any], **extra: Any) -> None:
        """Make this a typed store (format version 2) with ``schema`` (``GraphSchema.to_dict()``); ``extra``
        adds to ``meta.extra`` what the build learned while writing (the self-loops and repeats it kept)."""
        self._meta["schema"] = dict(schema)
        self._meta["version"] = TYPED_FORMAT_VERSION
        self._meta["extra"].update(extra)

    def _note_array(self, name: str, shape, dtype) -> None:
        if name == "feat":
            if len(shape) != 2:
                raise ValueError(f"feat must be 2-D [num_nodes, dim], got shape {tuple(shape)}")
            self._meta["feat_dim"] = int(shape[1])
            self._meta["feat_dtype"] = np.dtype(dtype).name
        elif name == "label":
            self._meta["has_label"] = True
        elif name.endswith("_idx"):
            self._meta["splits"][name[: -len("_idx")]] = int(shape[0])

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._work.remove()
            return
        try:
            if self._meta.get("has_label") and not self._meta.get("num_classes"):
                label = np.load(self.tmp / "label.npy", mmap_mode="r")
                self._meta["num_classes"] = int(label.max()) + 1 if label.size else 0
            meta = StoreMeta(**self._meta)
            (self.tmp / META_FILE).write_text(json.dumps(meta.to_dict(), indent=2))
            GraphStore(self.tmp)  # never rename an inconsistent store into place
            replace_output(self._work, self.path, STORE, self._overwrite)
        except BaseException:
            self._work.remove()
            raise
        self.store = GraphStore(self.path, validate="none")


def read_json(path: Path, error: type[Exception], missing: str) -> Any:
    """The JSON value in ``path``; ``error`` naming the file when it is absent (``missing`` says
    what that means) or not valid JSON.  One reader for every metadata file bgl opens."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: {missing}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{path}: not valid JSON: {e}") from None


def write_store(path: str | os.PathLike, indptr: np.ndarray, indices: np.ndarray, *,
                feat: np.ndarray | None = None, label: np.ndarray | None = None,
                splits: Mapping[str, np.ndarray] | None = None, num_classes: int | None = None,
                edata: Mapping[str, np.ndarray] | None = None, ndata: Mapping[str, np.ndarray] | None = None,
                ndata_source: Mapping[str, np.ndarray] | None = None, node_offset: int = 0,
                global_num_nodes: int | None = None, name: str = "",
                extra: Mapping[str, Any] | None = None, overwrite: bool = False) -> GraphStore:
    """Write an in-memory CSC graph (plus optional features, labels, splits) as a store, atomically.

    Parameters
    ----------
    indptr, indices : int [num_nodes + 1] and int [num_edges] (global ids): the CSC
    feat : [num_nodes, dim]
    label : int [num_nodes], -1 = unlabelled
    splits : {"train": int64 [n], ...} node ids (global ids)
    edata : {name: [num_edges, ...]} per-edge arrays in CSC edge order
    ndata : {name: [num_nodes, ...]} per-node arrays
    ndata_source : a part's {name: [num_edges, ...]}, each in-edge's source value (bgl.node_arrays)

    Returns
    -------
    GraphStore
    """
    indptr = np.asarray(indptr)
    n = indptr.shape[0] - 1
    with StoreWriter(path, n, int(np.asarray(indices).shape[0]), node_offset=node_offset,
                     global_num_nodes=global_num_nodes, name=name, extra=extra, overwrite=overwrite) as w:
        w.save_array("indptr", indptr)
        w.save_array("indices", indices)
        if feat is not None:
            w.save_array("feat", feat)
        if label is not None:
            w.save_array("label", label, num_classes=num_classes)
        for split_name, ids in (splits or {}).items():
            w.save_array(f"{split_name}_idx", ids)
        for edge_name, values in (edata or {}).items():
            w.save_edge_array(edge_name, values)
        w.save_node_arrays(ndata, ndata_source)
    assert w.store is not None
    return w.store
