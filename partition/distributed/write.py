"""Writing a distributed partition: every node's row goes to the rank that writes its part.

After the engine and :func:`.graph.relabel`, each rank knows the new id and part of its own
nodes and the new ids of their in-neighbours.  Part k is written by rank ``k % R``: each rank
sends it the rows of its nodes in part k (new id, original id, in-degree, first in-edge id, label,
feature rows, split membership, node-array rows) and their in-edges (new source id, edge-array
rows, each node array's value at the source, read here from the store) in one
all-to-all per array, and the writer stores the part with :class:`bgl.store.StoreWriter`, the
same part-store format :func:`bgl.partition.format.write_partition` writes, and its slices of the partition's
``orig_ids.npy`` / ``orig_eids.npy`` (created by rank 0, filled in place by each writer).

Memory per writer: the parts it writes (their CSC, feature rows and edge arrays) plus what it
sends: about a 1/R share of the graph when P = R.  Original edge ids do not travel per edge: a
node's in-edges are consecutive in the store, so its first edge id does (8 B/node) and the writer
expands them.  Arrays go one at a time: :func:`ship` sends each
column in its destination order without a reordered copy (the exchange gathers each round's rows)
and releases it once sent; :func:`write_parts` gathers one edge column of a part at a time as the
part's store takes it.  Per in-edge a rank then holds the columns it sends or received (the new
source, 4 B while ids fit int32, plus edge arrays), 8 B of positions, and one column in flight.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bgl.schema import id_dtype_for
from bgl.store import GraphStore, StoreWriter

from .. import _kernels
from .exchange import Exchange
from .graph import Relabel, Slice
from ..format import ORIG_EIDS_FILE, ORIG_IDS_FILE

SPLIT_CHUNK = 1 << 24


def writer_of(parts: np.ndarray, num_ranks: int) -> np.ndarray:
    """The rank that writes each part (round-robin)."""
    return np.asarray(parts, np.int64) % num_ranks


def split_flags(store: GraphStore, lo: int, hi: int) -> tuple[list[str], np.ndarray]:
    """``(names, flags uint8 [hi-lo, S])``: which of this rank's nodes are in each split, from the
    split id lists read in chunks (no assumption that they are sorted)."""
    return membership(store.splits, lo, hi)


def membership(id_lists, lo: int, hi: int) -> tuple[list[str], np.ndarray]:
    """``(names, flags uint8 [hi-lo, S])`` of named id lists (``{name: ids}``, e.g. a store's splits):
    which ids in ``[lo, hi)`` each holds, read in chunks."""
    names = sorted(id_lists)
    flags = np.zeros((hi - lo, len(names)), np.uint8)
    for j, name in enumerate(names):
        ids = id_lists[name]
        for a in range(0, ids.shape[0], SPLIT_CHUNK):
            chunk = np.asarray(ids[a : a + SPLIT_CHUNK], np.int64)
            mine = chunk[(chunk >= lo) & (chunk < hi)]
            flags[mine - lo, j] = 1
    return names, flags


@dataclass
class Rows:
    """Node rows and their in-edges, nodes in order and each node's edges back to back."""

    nodes: dict[str, np.ndarray]
    edges: dict[str, np.ndarray]

    @property
    def indptr(self) -> np.ndarray:
        ptr = np.zeros(self.nodes["deg"].size + 1, np.int64)
        np.cumsum(self.nodes["deg"], out=ptr[1:])
        return ptr


def local_rows(store: GraphStore, sl: Slice, rel: Relabel, new_src: np.ndarray, flags: np.ndarray) -> Rows:
    """This rank's nodes as rows to ship (original-id order); ``flags`` from :func:`split_flags`."""
    # a node's in-edges are consecutive store edge ids: its first one travels, not one per edge
    nodes = {"new_id": rel.new_ids, "orig_id": np.arange(sl.lo, sl.hi, dtype=np.int64),
             "deg": np.diff(sl.indptr), "eid0": sl.edge_start + sl.indptr[:-1], "splits": flags}
    if store.label is not None:
        nodes["label"] = np.asarray(store.label[sl.lo : sl.hi])
    if store.feat is not None:
        nodes["feat"] = np.asarray(store.feat[sl.lo : sl.hi])
    if store.feat_encoded is not None:
        nodes["feat_encoded"] = np.asarray(store.feat_encoded[sl.lo : sl.hi])
    e0, e1 = sl.edge_start, sl.edge_start + sl.src.size
    # the part stores' dtype for ids (int32 while the graph's ids fit): 4 B/edge less to ship and hold
    edges = {"src": new_src.astype(id_dtype_for(store.num_nodes), copy=False)}
    for name, values in store.edata.items():
        edges[f"edata/{name}"] = np.asarray(values[e0:e1])
    for name, values in store.ndata.items():  # a node array, and its value at each in-edge's source
        nodes[f"ndata/{name}"] = np.asarray(values[sl.lo : sl.hi])
        edges[f"ndata/{name}"] = np.asarray(values)[np.asarray(store.indices[e0:e1])]
    return Rows(nodes, edges)


def ship(rows: Rows, bounds: np.ndarray, ex: Exchange) -> Rows:
    """Send every node row (and its edges) to the writer of its part; returns the rows received.

    ``rows`` is emptied as it goes: each column is released once sent (the caller must hold no
    other reference to its arrays for that to free memory)."""
    part = np.searchsorted(bounds, rows.nodes["new_id"], side="right") - 1
    dest = writer_of(part, ex.size)
    order = np.argsort(dest, kind="stable")
    deg = rows.nodes["deg"]
    node_counts = np.bincount(dest, minlength=ex.size).astype(np.int64)
    edge_counts = np.zeros(ex.size, np.int64)
    np.add.at(edge_counts, dest, deg)
    pos = np.empty(int(deg.sum()), np.int64)
    _kernels.row_positions(rows.indptr, order, pos)  # each node's edges, nodes in destination order
    del part, dest
    recv_nodes, recv_edges = ex.counts(node_counts), ex.counts(edge_counts)
    # sources' node and edge blocks arrive in the same source order, so each received node's
    # edges stay back to back after it
    edges = {k: ex.alltoallv(rows.edges.pop(k), edge_counts, recv_edges, pos) for k in list(rows.edges)}
    del pos
    nodes = {k: ex.alltoallv(rows.nodes.pop(k), node_counts, recv_nodes, order) for k in list(rows.nodes)}
    return Rows(nodes, edges)


def write_parts(store: GraphStore, got: Rows, rel: Relabel, work: Path, split_names: list[str],
                ex: Exchange, method: str, typed=None) -> np.ndarray:
    """Write the parts this rank owns from the rows it received; returns int64 [P, 2] with
    (num_edges, num_train) in the rows of the parts written here (zeros elsewhere).

    ``orig_ids.npy`` / ``orig_eids.npy`` must exist in ``work`` (rank 0 creates them); ``typed``
    (a typed store's :class:`.typed.TypedRows`) adds each part's typed arrays."""
    num_parts = rel.bounds.size - 1
    n = int(rel.bounds[-1])
    edge_bounds = np.zeros(num_parts + 1, np.int64)
    edges_per_part = _edges_per_part(got, rel.bounds, ex)
    np.cumsum(edges_per_part, out=edge_bounds[1:])
    result = np.zeros((num_parts, 2), np.int64)
    new_id = got.nodes["new_id"]
    for k in range(ex.comm.Get_rank(), num_parts, ex.size):
        s, e = int(rel.bounds[k]), int(rel.bounds[k + 1])
        mine = np.flatnonzero((new_id >= s) & (new_id < e))
        part, indptr = _take_lazily(got, mine[np.argsort(new_id[mine], kind="stable")])
        if not np.array_equal(part.nodes["new_id"], np.arange(s, e, dtype=np.int64)):
            raise RuntimeError(f"part {k}: received nodes do not cover new ids [{s}, {e})")
        write_slice(work / ORIG_IDS_FILE, s, part.nodes["orig_id"])
        _write_edge_ids(work / ORIG_EIDS_FILE, int(edge_bounds[k]), part.nodes["eid0"], part.nodes["deg"], indptr)
        # Each rank's store writers work in a directory of their own: writers sharing one directory
        # clean up after each other's dead runs, and one's scan can catch another's lock file in
        # the instant between its creation and its flock (bgl.output_dir.WorkDir), failing it.
        staging = work / f".rank-{ex.comm.Get_rank()}"
        num_train = _write_part_store(store, part, indptr, staging / f"part-{k}", s, n, split_names,
                                      name=f"{store.meta.name or 'graph'}-part{k}",
                                      extra={"partition_method": method, "part": k, "num_parts": num_parts},
                                      typed=typed)
        os.rename(staging / f"part-{k}", work / f"part-{k}")
        staging.rmdir()
        result[k] = (int(indptr[-1]), num_train)
    return result


class _TakenEdges(Mapping):
    """``{name: column[pos]}`` of a :class:`Rows`' edge columns, each gathered when read and not
    kept: a part's writer holds one edge column of the part at a time."""

    def __init__(self, edges: dict[str, np.ndarray], pos: np.ndarray):
        self._edges, self._pos = edges, pos

    def __getitem__(self, key: str) -> np.ndarray:
        return self._edges[key][self._pos]

    def __iter__(self):
        return iter(self._edges)

    def __len__(self) -> int:
        return len(self._edges)


def _take_lazily(rows: Rows, order: np.ndarray) -> tuple[Rows, np.ndarray]:
    """``rows`` with nodes in ``order`` (their edges follow, gathered only when read:
    :class:`_TakenEdges`), and the new node indptr.  When ``order`` takes every row as it stands
    (a writer of one part: what it received is that part, already in new-id order) the columns
    are the received arrays themselves, not copies."""
    if order.size == rows.nodes["deg"].size and np.array_equal(order, np.arange(order.size)):
        return rows, rows.indptr
    ptr = rows.indptr
    pos = np.empty(int(rows.nodes["deg"][order].sum()), np.int64)
    _kernels.row_positions(ptr, order, pos)
    taken = Rows({k: v[order] for k, v in rows.nodes.items()}, _TakenEdges(rows.edges, pos))
    return taken, taken.indptr


#: Edges whose ids :func:`_write_edge_ids` expands and writes at a time (bounds its buffer; a
#: chunk ends at a node's end, so one with more in-edges than this is a chunk of its own).
EID_CHUNK_EDGES = 1 << 22


def _write_edge_ids(path: Path, start: int, eid0: np.ndarray, deg: np.ndarray, indptr: np.ndarray) -> None:
    """A part's original edge ids (each node's ``deg`` ids from its ``eid0``, nodes in order) into
    rows ``start + indptr[0] ...`` of ``orig_eids.npy``, a chunk of edges at a time: 8 B per edge of
    a chunk, not of the part (the writer of the heaviest part holds most of the graph's edges)."""
    cuts = np.searchsorted(indptr, np.arange(0, int(indptr[-1]), EID_CHUNK_EDGES), side="right") - 1
    for a, b in zip(cuts, [*cuts[1:], deg.size]):
        if b <= a:
            continue
        ids = np.empty(int(indptr[b] - indptr[a]), np.int64)
        _kernels.row_ranges(eid0[a:b], deg[a:b], ids)
        write_slice(path, start + int(indptr[a]), ids)


def write_slice(path: Path, start: int, values: np.ndarray) -> None:
    """Write int64 ``values`` at rows ``[start, start + len)`` of the int64 ``.npy`` at ``path``
    (created whole by rank 0) with ``pwrite``: each writer touches exactly its bytes, where shared
    memory-mapped pages could write back a neighbour's rows on a network filesystem."""
    values = np.ascontiguousarray(values, np.int64)
    fd = os.open(path, os.O_WRONLY)
    try:
        size = os.fstat(fd).st_size
        shape = np.load(path, mmap_mode="r").shape  # reads the header only
        data_at = size - 8 * int(shape[0])
        view, done = memoryview(values).cast("B"), 0
        while done < len(view):
            done += os.pwrite(fd, view[done:], data_at + 8 * start + done)
    finally:
        os.close(fd)


def _edges_per_part(got: Rows, bounds: np.ndarray, ex: Exchange) -> np.ndarray:
    """In-edge count of each part, int64 [P] (every rank gets all of them)."""
    part = np.searchsorted(bounds, got.nodes["new_id"], side="right") - 1
    return ex.allreduce_sum(np.bincount(part, weights=got.nodes["deg"], minlength=bounds.size - 1).astype(np.int64))


def _write_part_store(store: GraphStore, part: Rows, indptr: np.ndarray, path: Path, node_start: int,
                      num_nodes_total: int, split_names: list[str], *, name: str, extra: dict,
                      typed=None) -> int:
    """One part store from its rows (new-id order); returns its training-node count."""
    num_train = 0
    with StoreWriter(path, indptr.size - 1, int(indptr[-1]), node_offset=node_start,
                     global_num_nodes=num_nodes_total, name=name, extra=extra) as w:
        w.save_array("indptr", indptr)
        w.save_array("indices", part.edges["src"])
        if "feat" in part.nodes:
            w.save_array("feat", part.nodes["feat"])
        if "feat_encoded" in part.nodes:
            w.save_array(f"feat.{store.feat_codec.name}", part.nodes["feat_encoded"])
        if store.feat_codec is not None:
            w.set_feat_codec(store.feat_codec, float32=store.feat is not None)
        for key in part.edges:  # by name: a part's edge columns are gathered when read
            if key.startswith("edata/"):
                values = part.edges[key]
                out = w.create_edge_array(key[len("edata/"):], values.shape, values.dtype)
                out[:] = values
                out.flush()
                del out, values
        for key, values in part.nodes.items():
            if key.startswith("ndata/"):
                w.save_node_array(key[len("ndata/"):], values, part.edges[key])
        if "label" in part.nodes:
            w.save_array("label", part.nodes["label"], num_classes=store.num_classes)
        elif store.num_classes:
            w.set_num_classes(store.num_classes)
        for j, split in enumerate(split_names):
            ids = part.nodes["new_id"][part.nodes["splits"][:, j] > 0]
            if split == "train":
                num_train = int(ids.size)
            w.save_array(f"{split}_idx", ids)
        if typed is not None:  # last: its schema and per-type codecs set the store's format version
            num_train = typed.write_part(w, int(extra["part"]), part)
    return num_train
