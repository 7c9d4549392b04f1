"""Readers for ``.npz`` datasets: shchur/gnn-benchmark files and plain CSR matrices.

gnn-benchmark (Cora, CiteSeer, ...): ``adj_data/adj_indices/adj_indptr/adj_shape``
(CSR adjacency, stored *directed*: row ``i`` lists ``j`` for edge ``i -> j``),
``attr_*`` (CSR features) or ``attr_matrix`` (dense), ``labels``.

Plain CSR (e.g. scipy ``save_npz`` output, the PubMed adjacency):
``data/indices/indptr/shape`` (+ optional ``format``), optional ``labels``
and ``feat``/``features`` (dense).

Files open with ``allow_pickle=False``: the object arrays some files carry
(``node_names``, ``class_names``) are never read.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from ...errors import IngestError
from ..csc_build import array_chunks
from ..graph_source import GraphSource


def open_npz(path: Path) -> dict[str, np.ndarray]:
    """Load every non-object array of an npz; IngestError naming the file if it is damaged."""
    if not path.exists():
        raise IngestError(f"{path}: no such file")
    if path.is_dir():
        raise IngestError(f"{path}: is a directory, not an npz file")
    if not zipfile.is_zipfile(path):
        # np.load would take a non-zip file for a pickle (or a lone .npy): say what it really is.
        raise IngestError(f"{path}: not a valid npz file (an npz is a zip archive of .npy arrays; this file "
                          "is not a zip archive, or it is truncated)")
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {}
            for key in z.files:
                try:
                    out[key] = z[key]
                except ValueError as e:
                    if "allow_pickle" in str(e):
                        continue  # object array (names); not needed and never unpickled
                    raise
            return out
    except FileNotFoundError:
        raise IngestError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise IngestError(f"{path}: unreadable or truncated npz: {e}") from None


def npz_kind(keys) -> str | None:
    """``"gnn-benchmark"`` / ``"csr-npz"`` / None from an npz's key set."""
    keys = set(keys)
    if {"adj_indptr", "adj_indices"} <= keys or "adj_matrix" in keys:
        return "gnn-benchmark"
    if {"indptr", "indices", "shape"} <= keys:
        return "csr-npz"
    return None


def csr_to_coo(indptr, indices, data, shape, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate a CSR matrix and return its nonzero entries as (row, col) int64 arrays."""
    indptr = np.asarray(indptr).astype(np.int64, copy=False)
    indices = np.asarray(indices).astype(np.int64, copy=False)
    rows, cols = (int(x) for x in np.asarray(shape).reshape(-1)[:2])
    if indptr.shape != (rows + 1,):
        raise IngestError(f"{where}: indptr has {indptr.size} entries, shape {rows}x{cols} needs {rows + 1}")
    if indptr[0] != 0 or indptr[-1] != indices.size or np.any(np.diff(indptr) < 0):
        raise IngestError(
            f"{where}: indptr must rise from 0 to len(indices)={indices.size}, got {int(indptr[0])}..{int(indptr[-1])}"
        )
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= cols):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise IngestError(f"{where}: column index {bad} outside [0, {cols})")
    row = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
    if data is not None:
        data = np.asarray(data)
        if data.shape != indices.shape:
            raise IngestError(f"{where}: data has {data.size} entries, indices {indices.size}")
        keep = data != 0  # explicit zeros are not edges
        if not keep.all():
            return row[keep], indices[keep]
    return row, indices


def _dense_from_csr(z: dict, prefix: str, where: str) -> np.ndarray:
    shape = tuple(int(x) for x in z[f"{prefix}_shape"])
    data = z.get(f"{prefix}_data")
    row, col = csr_to_coo(z[f"{prefix}_indptr"], z[f"{prefix}_indices"], None, shape, where)
    out = np.zeros(shape, np.float32)
    out[row, col] = 1.0 if data is None else np.asarray(data, np.float32)
    return out


def read_gnn_benchmark(path: Path) -> GraphSource:
    """Read a gnn-benchmark ``.npz`` (``adj_matrix`` or ``adj_data/indices/indptr/shape``, optional
    ``attr_*`` and 1-D ``labels``) into a :class:`GraphSource`; :class:`IngestError` names a missing
    key or bad shape.
    """
    z = open_npz(path)
    where = str(path)
    if "adj_matrix" in z:
        adj = np.asarray(z["adj_matrix"])
        if adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
            raise IngestError(f"{where}: adj_matrix must be square, got shape {adj.shape}")
        src, dst = (a.astype(np.int64) for a in np.nonzero(adj))
        n = adj.shape[0]
    else:
        for key in ("adj_data", "adj_indices", "adj_indptr", "adj_shape"):
            if key not in z:
                raise IngestError(f"{where}: gnn-benchmark npz lacks {key!r}")
        shape = [int(x) for x in z["adj_shape"]]
        if len(shape) != 2 or shape[0] != shape[1]:
            raise IngestError(f"{where}: adjacency must be square, got adj_shape {shape}")
        n = shape[0]
        src, dst = csr_to_coo(z["adj_indptr"], z["adj_indices"], z["adj_data"], shape, f"{where} (adj)")
    if "attr_matrix" in z:
        feat = np.asarray(z["attr_matrix"], np.float32)
    elif "attr_indptr" in z:
        feat = _dense_from_csr(z, "attr", f"{where} (attr)")
    else:
        feat = None
    label = None
    if "labels" in z:
        label = np.asarray(z["labels"])
        if label.ndim != 1:
            raise IngestError(f"{where}: labels must be 1-D (single-label), got shape {label.shape}")
    elif "labels_indptr" in z:
        raise IngestError(f"{where}: multi-label (CSR) labels are not supported")
    return GraphSource(
        name=path.stem, num_nodes=n, edges=array_chunks(src, dst), num_edges_hint=int(src.size),
        feat=feat, label=label, symmetrize_default=True,  # stored directed; GNN benchmarks use it undirected
        extra={"source": str(path), "format": "gnn-benchmark"},
    )


def read_csr_npz(path: Path) -> GraphSource:
    """Read a ``scipy.sparse.save_npz`` square CSR/CSC adjacency into a :class:`GraphSource` (no
    features or labels); :class:`IngestError` names a bad format or shape.
    """
    z = open_npz(path)
    where = str(path)
    fmt = z["format"].item() if "format" in z else "csr"  # scipy.sparse.save_npz writes b"csr"
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
    if fmt not in ("csr", "csc"):
        raise IngestError(f"{where}: sparse format {fmt!r} not supported (csr or csc)")
    shape = [int(x) for x in np.asarray(z["shape"]).reshape(-1)]
    if len(shape) != 2 or shape[0] != shape[1]:
        raise IngestError(f"{where}: adjacency must be square, got shape {shape}")
    n = shape[0]
    a, b = csr_to_coo(z["indptr"], z["indices"], z.get("data"), shape, where)
    # CSR row i lists targets of edge i -> j; CSC column j lists sources of edge i -> j.
    src, dst = (a, b) if fmt == "csr" else (b, a)
    label = None
    for key in ("labels", "label", "y"):
        if key in z:
            label = np.asarray(z[key])
            break
    feat = None
    for key in ("feat", "features", "attr_matrix", "x"):
        if key in z:
            feat = np.asarray(z[key])
            break
    return GraphSource(
        name=path.stem, num_nodes=n, edges=array_chunks(src, dst), num_edges_hint=int(src.size),
        feat=feat, label=label, symmetrize_default=True,
        extra={"source": str(path), "format": "csr-npz"},
    )
