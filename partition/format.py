"""The partition directory: writer and reader (:class:`PartitionBook`).

Layout::

    partition.json   {"format": "bgl-partition", "version": 1, "method", "params",
                      "num_parts", "num_nodes", "num_edges",
                      "parts": [{"part", "store", "node_start", "node_end",
                                 "num_nodes", "num_edges", "num_train"}, ...],
                      "metrics": {...}}
    orig_ids.npy     int64 [num_nodes]: new id -> original id
    orig_eids.npy    int64 [num_edges]: new edge id -> original edge id (the store's CSC position)
    part-<k>/        a PART graph store (bgl.store): rows for new ids
                     [node_start, node_end), in-edges with neighbour ids in new
                     global ids, features/labels/splits of the owned nodes, and
                     the edge arrays (edata/) of those in-edges, rows in part CSC order,
                     the node arrays (ndata/) of the owned nodes, and per node array the
                     value of each in-edge's source (ndata/<name>.source.npy, part CSC order)

A partition of a typed store is version 2: partition.json adds ``"schema"`` (the whole
graph's node and edge types) and ``"type_bounds"`` (int [P*T + 1]: part k, type t owns new ids
``[type_bounds[k*T + t], type_bounds[k*T + t + 1])``), and each part is a typed store of its
owned nodes (:mod:`.typed_parts`).

Nodes are relabelled so part k owns the contiguous new-id range
``[bounds[k], bounds[k+1])`` (new ids in stable (part, original id) order):
"who owns v" is then a ``searchsorted`` over P+1 bounds instead of an
n-long lookup table on every server and trainer.  Edges are numbered the same
way: part k's CSC position p is new edge id ``edge_bounds[k] + p`` (running sum
of the parts' ``num_edges``), and ``orig_eids.npy`` maps it back to the source
store's edge id, so link-prediction seed edges and ``reverse_eids`` survive
partitioning (8 bytes per edge; a partition written before it existed has none).

The directory is built in a hidden, locked work dir next to ``<out>`` and
renamed into place only when complete, so an interrupted run leaves no output
directory; ``overwrite`` replaces only a bgl partition directory
(``bgl.output_dir``).
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from bgl.errors import PartitionFormatError, StoreFormatError
from bgl.output_dir import PARTITION, WorkDir, check_output, remove_stale, replace_output
from bgl.store import GraphStore, StoreWriter, read_json

from . import _kernels
from .typed_parts import TypedBook, type_bounds, write_part_types

log = logging.getLogger(__name__)

FORMAT_NAME = PARTITION.format  # "bgl-partition"
FORMAT_VERSION = 1
# A partition of a typed store is version 2 (schema + type_bounds, typed part stores), so a bgl
# that knows only version 1 refuses it naming the version (partition/typed_parts.py).
TYPED_FORMAT_VERSION = 2
META_FILE = "partition.json"
ORIG_IDS_FILE = "orig_ids.npy"
ORIG_EIDS_FILE = "orig_eids.npy"
WRITE_CHUNK_EDGES = 1 << 24
WRITE_CHUNK_ROWS = 1 << 20


def _part_written_hook(k: int) -> None:
    """Called after part ``k``'s store is complete (tests raise here to simulate a crash)."""


def relabel(part_of: np.ndarray, num_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """``(orig_ids int64 [n], bounds int64 [P+1])``: new ids in stable (part, original id) order."""
    orig_ids = np.argsort(part_of, kind="stable").astype(np.int64)
    bounds = np.zeros(num_parts + 1, np.int64)
    np.cumsum(np.bincount(part_of, minlength=num_parts), out=bounds[1:])
    return orig_ids, bounds


def _row_chunks(indptr: np.ndarray, max_edges: int, max_rows: int):
    """Yield ``(a, b)`` row ranges holding at most ~max_edges edges and max_rows rows."""
    n = indptr.shape[0] - 1
    a = 0
    while a < n:
        b = int(np.searchsorted(indptr, indptr[a] + max_edges, side="right")) - 1
        b = min(n, a + max_rows, max(b, a + 1))
        yield a, b
        a = b


def _write_part(store: GraphStore, path: Path, rows: np.ndarray, new_of: np.ndarray, node_start: int,
                num_nodes_total: int, name: str, extra: Mapping[str, Any],
                orig_eids: np.ndarray | None = None) -> tuple[int, int]:
    """Write one PART store for original ids ``rows`` (sorted); returns (num_edges, num_train).

    ``orig_eids`` (a view of this part's slice of the partition's new -> original edge ids)
    receives each written edge's original CSC position.
    """
    src_ptr = np.asarray(store.indptr)
    deg = src_ptr[rows + 1] - src_ptr[rows]
    indptr = np.zeros(rows.size + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    num_edges = int(indptr[-1])
    num_train = 0
    with StoreWriter(path, rows.size, num_edges, node_offset=node_start,
                     global_num_nodes=num_nodes_total, name=name, extra=extra) as w:
        w.save_array("indptr", indptr)
        out = w.create_array("indices", (num_edges,), w.id_dtype)
        src_idx = np.asarray(store.indices)
        for a, b in _row_chunks(indptr, WRITE_CHUNK_EDGES, WRITE_CHUNK_ROWS):
            buf = np.empty(int(indptr[b] - indptr[a]), w.id_dtype)
            _kernels.gather_rows(src_ptr, src_idx, rows[a:b], new_of, buf)
            out[indptr[a] : indptr[b]] = buf
            if orig_eids is not None:
                orig_eids[indptr[a]:indptr[b]] = (np.arange(indptr[a], indptr[b], dtype=np.int64)
                                                  + np.repeat(src_ptr[rows[a:b]] - indptr[a:b], deg[a:b]))
        out.flush()
        del out
        # each part carries the rows its store has: float32, encoded (bgl/codec: feat.<codec>.npy), or both
        for name, arr in (("feat", store.feat), (f"feat.{getattr(store.feat_codec, 'name', '')}", store.feat_encoded)):
            if arr is None:
                continue
            feat = w.create_array(name, (rows.size, arr.shape[1]), arr.dtype)
            for a in range(0, rows.size, WRITE_CHUNK_ROWS):
                feat[a : a + WRITE_CHUNK_ROWS] = arr[rows[a : a + WRITE_CHUNK_ROWS]]
            feat.flush()
            del feat
        if store.feat_codec is not None:
            w.set_feat_codec(store.feat_codec, float32=store.feat is not None)
        _write_part_edge_data(store, w, rows, indptr)
        _write_part_node_data(store, w, rows, indptr)
        if store.is_typed:
            num_train = write_part_types(store, w, rows, indptr, new_of, node_start)
        if store.label is not None:
            w.save_array("label", np.asarray(store.label)[rows], num_classes=store.num_classes)
        elif store.num_classes:
            w.set_num_classes(store.num_classes)
        lo, hi = node_start, node_start + rows.size
        for split_name, ids in store.splits.items():
            new = new_of[np.asarray(ids)]
            mine = np.sort(new[(new >= lo) & (new < hi)])
            if split_name == "train":
                num_train = int(mine.size)
            w.save_array(f"{split_name}_idx", mine)
    return num_edges, num_train


def _write_part_edge_data(store: GraphStore, w: StoreWriter, rows: np.ndarray, indptr: np.ndarray) -> None:
    """Each edge array of ``store``, restricted to the in-edges of ``rows``, in the part's CSC order."""
    src_ptr = np.asarray(store.indptr)
    for name, values in store.edata.items():
        out = w.create_edge_array(name, (int(indptr[-1]),) + values.shape[1:], values.dtype)
        for a, b in _row_chunks(indptr, WRITE_CHUNK_EDGES, WRITE_CHUNK_ROWS):
            pos = np.empty(int(indptr[b] - indptr[a]), np.int64)
            _kernels.row_positions(src_ptr, rows[a:b], pos)
            out[indptr[a] : indptr[b]] = values[pos]
        out.flush()
        del out


def _write_part_node_data(store: GraphStore, w: StoreWriter, rows: np.ndarray, indptr: np.ndarray) -> None:
    """Each node array of ``store``: the part's own rows, and the value of each of its in-edges' sources
    (``ndata/<name>.source.npy``), so a server filters by node times without asking the part that owns
    a neighbour: one chunked pass over the part's edges, ``itemsize`` B per part edge (8 for times)."""
    src_ptr, src_idx = np.asarray(store.indptr), store.indices
    for name, values in store.ndata.items():
        values = np.asarray(values)  # random reads by source id: ``itemsize`` B a node in memory
        out = w.create_node_source(name, (int(indptr[-1]),) + values.shape[1:], values.dtype)
        for a, b in _row_chunks(indptr, WRITE_CHUNK_EDGES, WRITE_CHUNK_ROWS):
            pos = np.empty(int(indptr[b] - indptr[a]), np.int64)
            _kernels.row_positions(src_ptr, rows[a:b], pos)
            out[indptr[a] : indptr[b]] = values[np.asarray(src_idx[pos])]
        out.flush()
        del out
        w.save_node_array(name, values[rows])


def check_out_dir(out_dir: str | os.PathLike, overwrite: bool, inputs=()) -> Path:
    """Refuse ``out_dir`` unless it is absent, or ``overwrite`` and it is a bgl partition directory
    (FileExistsError naming it and why; see ``bgl.output_dir``).  ``inputs`` (the source store) may
    not be ``out_dir`` or lie inside it."""
    return check_output(out_dir, PARTITION, overwrite, inputs)


def write_partition(store: GraphStore, part_of: np.ndarray, num_parts: int, out_dir: str | os.PathLike, *,
                    method: str, params: Mapping[str, Any] | None = None,
                    metrics: Mapping[str, Any] | None = None, overwrite: bool = False) -> "PartitionBook":
    """Relabel, split and write a partition directory atomically.

    Parameters
    ----------
    store : whole-graph store (node_offset 0)
    part_of : int [num_nodes] in [0, num_parts)
    out_dir : target directory; built in a hidden work dir next to it and renamed when complete

    Returns the opened :class:`PartitionBook`.
    """
    out = check_out_dir(out_dir, overwrite, inputs=[store.path])
    part_of = np.asarray(part_of, dtype=np.int64)
    n = store.num_nodes
    if part_of.shape != (n,):
        raise ValueError(f"part_of must have shape ({n},), got {part_of.shape}")
    if n and (int(part_of.min()) < 0 or int(part_of.max()) >= num_parts):
        raise ValueError(f"part_of values must be in [0, {num_parts}), got [{part_of.min()}, {part_of.max()}]")
    remove_stale(out.absolute().parent)  # what killed earlier writers left here
    work = WorkDir(out, "tmp")
    tmp = work.path
    try:
        orig_ids, bounds = relabel(part_of, num_parts)
        new_of = np.empty(n, np.int64)
        new_of[orig_ids] = np.arange(n, dtype=np.int64)
        parts = []
        orig_eids = np.lib.format.open_memmap(tmp / ORIG_EIDS_FILE, mode="w+", dtype=np.int64,
                                              shape=(store.num_edges,))
        edge_start = 0
        for k in range(num_parts):
            s, e = int(bounds[k]), int(bounds[k + 1])
            ne, nt = _write_part(store, tmp / f"part-{k}", orig_ids[s:e], new_of, s, n,
                                 name=f"{store.meta.name or 'graph'}-part{k}",
                                 extra={"partition_method": method, "part": k, "num_parts": num_parts},
                                 orig_eids=orig_eids[edge_start:])
            edge_start += ne
            parts.append({"part": k, "store": f"part-{k}", "node_start": s, "node_end": e,
                          "num_nodes": e - s, "num_edges": ne, "num_train": nt})
            _part_written_hook(k)
        orig_eids.flush()
        del orig_eids
        np.save(tmp / ORIG_IDS_FILE, orig_ids, allow_pickle=False)
        meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "method": method,
                "params": dict(params or {}), "num_parts": num_parts, "num_nodes": n,
                "num_edges": store.num_edges, "source_store": str(store.path), "parts": parts,
                "metrics": dict(metrics or {})}
        if store.is_typed:
            meta.update(version=TYPED_FORMAT_VERSION, schema=store.schema.to_dict(),
                        type_bounds=type_bounds(store.schema, orig_ids, bounds).tolist())
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        open_partition(tmp)  # never rename an inconsistent partition into place
        replace_output(work, out, PARTITION, overwrite)
    except BaseException:
        work.remove()
        raise
    return open_partition(out)


class PartitionBook(TypedBook):
    """A read-only view of a partition directory.

    Attributes
    ----------
    path : the directory; meta : the parsed ``partition.json``
    num_parts : P; num_nodes, num_edges : of the whole graph
    bounds : int64 [P+1]; part k owns new ids ``[bounds[k], bounds[k+1])``
    orig_ids : int64 [num_nodes] memmap, new id -> original id
    edge_bounds : int64 [P+1]; part k holds new edge ids ``[edge_bounds[k], edge_bounds[k+1])``
    orig_eids : int64 [num_edges] memmap, new edge id -> original edge id (None for a partition
        written without one)
    schema, type_bounds : a typed partition's whole-graph GraphSchema and int64 [P*T + 1] type
        bounds (None for an untyped one); typed views in :class:`~.typed_parts.TypedBook`
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        meta_path = self.path / META_FILE
        if not self.path.is_dir():
            what = "is a file, not a partition directory" if self.path.exists() else "partition directory does not exist"
            raise PartitionFormatError(f"{self.path}: {what}")
        meta = read_json(meta_path, PartitionFormatError, "missing (incomplete or not a partition dir)")
        self.meta = self._check_meta(meta, meta_path)
        self.num_parts = int(meta["num_parts"])
        self.num_nodes = int(meta["num_nodes"])
        self.num_edges = int(meta["num_edges"])
        self.bounds = np.array([p["node_start"] for p in meta["parts"]] + [self.num_nodes], np.int64)
        ids_path = self.path / ORIG_IDS_FILE
        try:
            self.orig_ids = np.load(ids_path, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise PartitionFormatError(f"{ids_path}: missing") from None
        except (ValueError, OSError) as e:
            raise PartitionFormatError(f"{ids_path}: unreadable or truncated: {e}") from None
        if self.orig_ids.shape != (self.num_nodes,) or self.orig_ids.dtype != np.int64:
            raise PartitionFormatError(
                f"{ids_path}: expected int64 [{self.num_nodes}], got {self.orig_ids.dtype} {list(self.orig_ids.shape)}")
        self.edge_bounds = np.zeros(self.num_parts + 1, np.int64)
        np.cumsum([int(p["num_edges"]) for p in meta["parts"]], out=self.edge_bounds[1:])
        eids_path = self.path / ORIG_EIDS_FILE
        self.orig_eids = None
        if eids_path.is_file():
            try:
                self.orig_eids = np.load(eids_path, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError) as e:
                raise PartitionFormatError(f"{eids_path}: unreadable or truncated: {e}") from None
            if self.orig_eids.shape != (int(self.edge_bounds[-1]),) or self.orig_eids.dtype != np.int64:
                raise PartitionFormatError(f"{eids_path}: expected int64 [{int(self.edge_bounds[-1])}], got "
                                           f"{self.orig_eids.dtype} {list(self.orig_eids.shape)}")
        for k in range(self.num_parts):
            if not (self.part_path(k) / "meta.json").is_file():
                raise PartitionFormatError(f"{self.part_path(k)}: part store {k} missing")
        self._stores: dict[int, GraphStore] = {}
        self.schema, self.type_bounds = self._typed_meta(meta, meta_path)

    def _typed_meta(self, meta: dict, where: Path):
        """(schema, type_bounds) of a version-2 partition, (None, None) for version 1."""
        if meta["version"] != TYPED_FORMAT_VERSION:
            return None, None
        from bgl.schema import GraphSchema

        try:
            schema = GraphSchema.from_dict(meta["schema"], where)
            tb = np.asarray(meta["type_bounds"], np.int64)
        except (KeyError, TypeError, ValueError, StoreFormatError) as e:
            raise PartitionFormatError(f"{where}: bad typed partition metadata: {e}") from None
        T = len(schema.node_types)
        if (schema.num_nodes != self.num_nodes or tb.shape != (self.num_parts * T + 1,)
                or np.any(np.diff(tb) < 0) or not np.array_equal(tb[::T], self.bounds)):
            raise PartitionFormatError(f"{where}: type_bounds {tb.tolist()[:8]}... do not tile the parts "
                                       f"{self.bounds.tolist()} into {T} node types")
        return schema, tb

    @staticmethod
    def _check_meta(meta: Any, where: Path) -> dict:
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise PartitionFormatError(f"{where}: not a bgl partition (format={got!r})")
        if meta.get("version") not in (FORMAT_VERSION, TYPED_FORMAT_VERSION):
            raise PartitionFormatError(
                f"{where}: unsupported partition version {meta.get('version')!r}, expected "
                f"{FORMAT_VERSION} or {TYPED_FORMAT_VERSION} (typed)")
        missing = {"method", "num_parts", "num_nodes", "num_edges", "parts"} - set(meta)
        if missing:
            raise PartitionFormatError(f"{where}: lacks {sorted(missing)}")
        P, n = meta["num_parts"], meta["num_nodes"]
        if not isinstance(P, int) or P < 1:
            raise PartitionFormatError(f"{where}: num_parts must be an int >= 1, got {P!r}")
        if not isinstance(n, int) or n < 0:
            raise PartitionFormatError(f"{where}: num_nodes must be an int >= 0, got {n!r}")
        parts = meta["parts"]
        if not isinstance(parts, list) or len(parts) != P:
            raise PartitionFormatError(f"{where}: 'parts' must list {P} parts, got {parts if not isinstance(parts, list) else len(parts)!r}")
        expect = 0
        for k, p in enumerate(parts):
            if not isinstance(p, dict) or p.get("part") != k:
                raise PartitionFormatError(f"{where}: parts[{k}] must be an object with part={k}, got {p!r}")
            s, e = p.get("node_start"), p.get("node_end")
            if s != expect or not isinstance(e, int) or e < s:
                raise PartitionFormatError(
                    f"{where}: part {k} range [{s}, {e}) is not contiguous (expected to start at {expect})")
            if p.get("store") != f"part-{k}":
                raise PartitionFormatError(f"{where}: part {k} store must be 'part-{k}', got {p.get('store')!r}")
            expect = e
        if expect != n:
            raise PartitionFormatError(f"{where}: part ranges end at {expect}, num_nodes is {n}")
        return meta

    # ---------------------------------------------------------------- lookups
    def owner(self, ids) -> np.ndarray:
        """Part owning each new id: int64 array shaped like ``ids``; ValueError if out of range."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.num_nodes):
            bad = ids[(ids < 0) | (ids >= self.num_nodes)].flat[0]
            raise ValueError(f"node id {int(bad)} outside [0, {self.num_nodes})")
        return np.searchsorted(self.bounds, ids, side="right").astype(np.int64) - 1

    def part_path(self, k: int) -> Path:
        """Directory of part ``k``'s store; IndexError for ``k`` outside ``[0, num_parts)``."""
        if not 0 <= k < self.num_parts:
            raise IndexError(f"part {k} outside [0, {self.num_parts})")
        return self.path / self.meta["parts"][k]["store"]

    def part_store(self, k: int) -> GraphStore:
        """The PART store of part k (opened once, cached)."""
        if k not in self._stores:
            try:
                store = GraphStore(self.part_path(k))
            except StoreFormatError as e:
                raise PartitionFormatError(f"{self.path}: part {k}: {e}") from None
            s, e = int(self.bounds[k]), int(self.bounds[k + 1])
            if (store.node_offset, store.num_nodes, store.global_num_nodes) != (s, e - s, self.num_nodes):
                raise PartitionFormatError(
                    f"{self.part_path(k)}: owns [{store.node_offset}, {store.node_offset + store.num_nodes}) of "
                    f"{store.global_num_nodes}, partition.json says [{s}, {e}) of {self.num_nodes}")
            self._stores[k] = store
        return self._stores[k]

    def split(self, name: str) -> np.ndarray:
        """All new ids of one split (``train``/``val``/``test``), sorted: int64 [m]."""
        return np.concatenate([np.asarray(self.part_store(k).split(name)) for k in range(self.num_parts)])

    @property
    def metrics(self) -> dict:
        """A copy of ``partition.json['metrics']`` (empty dict when absent)."""
        return dict(self.meta.get("metrics") or {})

    def __repr__(self) -> str:
        return f"PartitionBook({str(self.path)!r}, method={self.meta['method']!r}, parts={self.num_parts})"


def open_partition(path: str | os.PathLike) -> PartitionBook:
    """Open and validate a partition directory; raises :class:`PartitionFormatError` naming the problem."""
    return PartitionBook(path)
