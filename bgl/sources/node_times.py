"""Node times for ``bgl ingest --node-time [NTYPE=]FILE``: read, checked, kept as a store's node array.

A node-time file gives one integer time per node (e.g. unix seconds) in node id order: a ``.npy``
of integers (at most int64) of shape ``[num_nodes]``, or a text file with one time per line
(blank lines and ``#``/``%`` comments skipped, so the k-th time line is node k's; gzip read by its
magic bytes), parsed by the edge list's own integer kernel so large times are not rounded through
float64.  A typed graph takes one file per node type (``NTYPE=FILE``, every type or none), in
TYPE-LOCAL ids, concatenated in the store's type order (global ids).  The times become the store's
int64 node array (default name ``timestamp``; :mod:`bgl.node_arrays`), 8 B a node, which
temporal samplers read with ``node_timestamp_attr_name=``.

Every file is parsed before the edges are read, and its length checked against the graph before
anything is written: a bad file is one :class:`~bgl.errors.IngestError` naming it (and for text
the line), and no store appears.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import IngestError

DEFAULT_NODE_TIME_NAME = "timestamp"
READ_BYTES = 1 << 24


def parse_node_time_args(values: str | Sequence[str] | Mapping[str, str] | None) -> dict[str | None, Path]:
    """``{ntype or None: file}`` of ``--node-time`` values: ``FILE`` (an untyped graph's, key None) or
    ``NTYPE=FILE`` (one per node type); a mapping is taken as ``{ntype: file}``.  IngestError for a mix
    of both forms or a node type given twice."""
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return {str(k): Path(v) for k, v in values.items()}
    if isinstance(values, (str, Path)):
        values = [values]
    out: dict[str | None, Path] = {}
    for value in map(str, values):
        ntype, sep, file = value.partition("=")
        if not sep or "/" in ntype or Path(value).exists():
            ntype, file = None, value
        if ntype in out:
            raise IngestError(f"--node-time: {'node type ' + repr(ntype) if ntype else 'a file'} given twice "
                              f"({out[ntype]} and {file})")
        out[ntype] = Path(file)
    if None in out and len(out) > 1:
        raise IngestError(f"--node-time: give one FILE (untyped graph) or NTYPE=FILE per node type, not both: "
                          f"{[str(v) for v in values]}")
    return out


def read_node_times(path: str | Path) -> np.ndarray:
    """int64 [n] times of ``path`` (``.npy`` or text, see the module docstring); IngestError naming the file
    (and line) for a missing file, a non-integer or 2-D ``.npy``, or a line that is not an integer."""
    path = Path(path)
    if not path.is_file():
        raise IngestError(f"{path}: node time file does not exist")
    if path.suffix == ".npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as e:
            raise IngestError(f"{path}: unreadable .npy node times: {e}") from None
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.dtype == np.uint64:
            raise IngestError(f"{path}: node times must be a 1-D integer array of at most int64, got "
                              f"{arr.dtype} {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.int64)
    return _read_text_times(path)


def _read_text_times(path: Path) -> np.ndarray:
    from . import _parse_kernels as P
    from .readers.edgelist import iter_line_blocks, open_maybe_gzip

    parts, lines_before = [], 0
    with open_maybe_gzip(path) as f:
        for block in iter_line_blocks(f, READ_BYTES):
            buf = np.frombuffer(block, dtype=np.uint8)
            out = np.empty(block.count(b"\n"), np.int64)
            count, bad = P.parse_int_column(buf, 0, out)
            if bad >= 0:
                lines = block.split(b"\n", bad + 1)
                text = lines[bad].decode("utf-8", "replace").strip()[:80] if bad < len(lines) else ""
                raise IngestError(f"{path}:{lines_before + bad + 1}: node time is not an integer of at most "
                                  f"18 digits: {text!r}")
            parts.append(out[:count])
            lines_before += block.count(b"\n")
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def read_all(files: Mapping[str | None, Path]) -> dict[str | None, np.ndarray]:
    """Each file of :func:`parse_node_time_args` read (before any edge is: a bad file fails early)."""
    return {ntype: read_node_times(file) for ntype, file in files.items()}


def node_time_array(times: Mapping[str | None, np.ndarray], files: Mapping[str | None, Path], schema=None,
                    num_nodes: int | None = None) -> np.ndarray:
    """The store's int64 [num_nodes] node times over global ids: an untyped graph's one file (``schema``
    None, ``num_nodes`` nodes), or a typed graph's per-type files in ``schema``'s type order.  IngestError
    naming the file for a wrong length, the types for a missing or unknown one, and the form that fits
    for an untyped file given to a typed graph or the reverse."""
    if schema is None:
        if None not in times:
            raise IngestError(f"--node-time NTYPE=FILE is for a typed graph; this one has one node type: give "
                              f"--node-time FILE ({sorted(times)})")
        arr = times[None]
        if arr.shape[0] != num_nodes:
            raise IngestError(f"{files[None]}: {arr.shape[0]} node times, the graph has {num_nodes} nodes (an edge "
                              f"list's node count is its largest id + 1 unless --num-nodes declares it)")
        return arr
    if None in times:
        raise IngestError(f"{files[None]}: a typed graph takes node times per node type, --node-time NTYPE=FILE "
                          f"for each of {schema.ntypes}")
    unknown = sorted(set(times) - set(schema.ntypes))
    missing = [t for t in schema.ntypes if t not in times]
    if unknown or missing:
        raise IngestError(f"--node-time: every node type needs its times, the graph's are {schema.ntypes}"
                          + (f"; unknown {unknown}" if unknown else "") + (f"; missing {missing}" if missing else ""))
    for t in schema.node_types:
        if times[t.name].shape[0] != t.count:
            raise IngestError(f"{files[t.name]}: {times[t.name].shape[0]} node times, node type {t.name!r} has "
                              f"{t.count} nodes")
    return np.concatenate([times[t] for t in schema.ntypes])
