"""A directory of typed edge lists plus per-type node arrays (``bgl ingest DIR --format typed-edgelist``).

::

    DIR/nodes.json                          {"paper": 2708, "word": 1433}: node count per type (optional)
    DIR/edges/<src>__<rel>__<dst>.<ext>     one file per canonical edge type, TYPE-LOCAL ids:
                                            .txt/.csv/.tsv/.el/.edges (+ .gz): "src dst" per line
                                            (edge-list syntax: '#'/'%' comments, spaces/tabs/commas);
                                            .npy: integer [E, 2] or [2, E]
    DIR/edges/<src>__<rel>__<dst>.time.npy  with --edge-time-column: integer [E], the times of
                                            the .npy edge file beside it (optional otherwise)
    DIR/feat/<ntype>.npy                    [count, dim] features of that type, any numeric dtype (optional)
    DIR/label/<ntype>.npy                   integer [count], -1 = unlabelled (optional)
    DIR/split/<ntype>/<name>_idx.npy        TYPE-LOCAL ids of split <name> (train, val, test, ...)

A type's node count is its ``nodes.json`` entry, else its feature or label row count, else
its largest id in the edge files + 1.  With ``nodes.json`` every type must be listed there (an
edge file or array naming another type is refused, with the types there are).  Node types are
stored in sorted order and edge types in sorted canonical order, as DGL and OGB order them.
Text edge files are parsed once (numba, in blocks) into scratch files, 16 B per edge, then
streamed; ``.npy`` files are memory-mapped and streamed in place.  Every error names the
file, and for text the line: an id past its type's count, features whose rows are not the
type's count, a file name that is not ``src__rel__dst``.

Edge times (``edge_time_column=COL``, ``bgl ingest --edge-time-column COL``) are all or none:
every text file's column COL (an integer, e.g. unix seconds, as for an untyped edge list) and
every ``.npy`` file's sibling ``.time.npy``, so ids stay in their narrow dtype and a
``[2, E]`` array never has to be told from an ``[E, 3]`` one.  They become the store's int64
``timestamp`` edge array in CSC order (:mod:`bgl.sources.typed.csc`), 8 B per edge on disk, in
the parse scratch and in the fill buffer.  A missing column or a non-integer time is named with
its file and line; a ``.npy`` edge file without its ``.time.npy``, or times of the wrong length
or dtype, with the file.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from ...errors import IngestError
from ..csc_build import EdgeChunks
from ..readers.edgelist import CHUNK_BYTES, READ_EDGES, TIME_FILE, _unlink, parse_edge_file, scratch_edge_chunks
from .csc import TimeChunks
from .source import TypedSource, schema_of

log = logging.getLogger(__name__)

NODES_FILE = "nodes.json"
SEP = "__"
TEXT_SUFFIXES = (".txt", ".csv", ".tsv", ".el", ".edges", ".edgelist")
#: Suffix of a ``.npy`` edge file's times: ``edges/a__r__b.npy`` has its times in ``edges/a__r__b.time.npy``.
TIME_SUFFIX = ".time.npy"


def looks_typed_edgelist(path: Path) -> bool:
    """True for a directory holding an ``edges/`` directory (the layout above)."""
    return (path / "edges").is_dir()


def _edge_type_of(file: Path) -> tuple[tuple[str, str, str], str]:
    """(canonical edge type, kind "npy"/"text") of ``edges/<src>__<rel>__<dst>.<ext>``."""
    name = file.name
    stem = name[:-3] if name.endswith(".gz") else name
    kind = None
    if stem.endswith(".npy") and stem == name:
        kind, stem = "npy", stem[:-4]
    else:
        for suffix in TEXT_SUFFIXES:
            if stem.endswith(suffix):
                kind, stem = "text", stem[: -len(suffix)]
                break
    if kind is None:
        raise IngestError(f"{file}: an edge file must end in .npy or {', '.join(TEXT_SUFFIXES)} (optionally .gz)")
    parts = stem.split(SEP)
    if len(parts) != 3 or not all(parts):
        raise IngestError(f"{file}: an edge file is named <src type>{SEP}<relation>{SEP}<dst type>.<ext>, "
                          f"got {name!r}")
    return tuple(parts), kind


def _load_npy(file: Path, what: str) -> np.ndarray:
    try:
        return np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise IngestError(f"{file}: not a readable .npy {what}: {e}") from None


def _node_arrays(root: Path) -> tuple[dict, dict, dict]:
    """(feats, labels, splits) as memory-mapped arrays, keyed by the type their file names."""
    feats = {p.stem: _load_npy(p, "feature array") for p in sorted((root / "feat").glob("*.npy"))}
    labels = {p.stem: _load_npy(p, "label array") for p in sorted((root / "label").glob("*.npy"))}
    splits = {}
    if (root / "split").is_dir():
        for d in sorted(p for p in (root / "split").iterdir() if p.is_dir()):
            named = {}
            for f in sorted(d.glob("*_idx.npy")):
                ids = np.asarray(_load_npy(f, "split index array"))
                if ids.ndim != 1 or ids.dtype.kind not in "iu":
                    raise IngestError(f"{f}: split ids must be a 1-D integer array, got {ids.dtype} {ids.shape}")
                named[f.name[: -len("_idx.npy")]] = ids.astype(np.int64)
            splits[d.name] = named
    for nt, f in feats.items():
        if f.ndim != 2:
            raise IngestError(f"{root / 'feat' / nt}.npy: features must be 2-D [num_nodes, dim], got shape {f.shape}")
    for nt, y in labels.items():
        if y.ndim != 1 or y.dtype.kind not in "iu":
            raise IngestError(f"{root / 'label' / nt}.npy: labels must be a 1-D integer array, got {y.dtype} {y.shape}")
    return feats, labels, splits


def _declared_counts(root: Path) -> dict[str, int] | None:
    file = root / NODES_FILE
    if not file.exists():
        return None
    try:
        counts = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise IngestError(f"{file}: not valid JSON: {e}") from None
    if not isinstance(counts, dict) or not counts:
        raise IngestError(f"{file}: must map node type names to node counts, got {counts!r}")
    for nt, c in counts.items():
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise IngestError(f"{file}: node count of type {nt!r} must be an int >= 0, got {c!r}")
    return counts


def _npy_edge_chunks(arr: np.ndarray, file: Path) -> tuple[EdgeChunks, int]:
    if arr.ndim != 2 or 2 not in arr.shape or arr.dtype.kind not in "iu":
        raise IngestError(f"{file}: edges must be an integer array [E, 2] or [2, E], got {arr.dtype} {arr.shape}")
    cols = arr if arr.shape[0] == 2 else arr.T  # [2, E] as PyG's edge_index, else [E, 2]
    ne = int(cols.shape[1])

    def chunks():
        for s in range(0, ne, READ_EDGES):
            yield np.asarray(cols[0, s : s + READ_EDGES]), np.asarray(cols[1, s : s + READ_EDGES])

    return chunks, ne


def _npy_times(file: Path, num_edges: int) -> TimeChunks:
    """The times of the ``.npy`` edge file ``file`` ([E] integers in its sibling ``.time.npy``), chunked
    as :func:`_npy_edge_chunks` chunks the edges."""
    tfile = file.with_name(file.name[: -len(".npy")] + TIME_SUFFIX)
    if not tfile.is_file():
        raise IngestError(f"{file}: no edge times: edge_time_column (--edge-time-column) takes a .npy edge file's "
                          f"times from {tfile.name} beside it, integer [E] (every relation has times or none)")
    times = _load_npy(tfile, "edge time array")
    if times.shape != (num_edges,) or times.dtype.kind not in "iu" or times.dtype == np.uint64:
        raise IngestError(f"{tfile}: edge times must be an integer array [{num_edges}] (one per edge of "
                          f"{file.name}), got {times.dtype} {times.shape}")

    def chunks():
        for s in range(0, num_edges, READ_EDGES):
            yield np.asarray(times[s : s + READ_EDGES], np.int64)

    return chunks


def _scratch_times(file: Path, num_edges: int) -> TimeChunks:
    """The parsed times of a text edge file (int64 scratch), chunked as :func:`scratch_edge_chunks` chunks its edges."""
    def chunks():
        with open(file, "rb") as f:
            for s in range(0, num_edges, READ_EDGES):
                yield np.fromfile(f, np.int64, min(READ_EDGES, num_edges - s))

    return chunks


def _column_max(chunks: EdgeChunks) -> tuple[int, int]:
    hi = [-1, -1]
    for s, d in chunks():
        if s.size:
            hi = [max(hi[0], int(s.max())), max(hi[1], int(d.max()))]
    return hi[0], hi[1]


def read_typed_edgelist(root: Path, *, scratch_dir: Path, progress: bool = False, name: str | None = None,
                        chunk_bytes: int = CHUNK_BYTES, edge_time_column: int | None = None) -> TypedSource:
    """Read a typed edge-list directory (layout in the module docstring) into a :class:`TypedSource`;
    ``edge_time_column`` (0-based, >= 2): every relation's edge times (module docstring)."""
    col = edge_time_column
    if col is not None and (isinstance(col, bool) or not isinstance(col, int) or col < 2):
        raise IngestError(f"edge_time_column must be an int >= 2 (columns 0 and 1 are src and dst), got {col!r}")
    edge_dir = root / "edges"
    if not edge_dir.is_dir():
        raise IngestError(f"{root}: no edges/ directory (a typed edge list is DIR/edges/<src>{SEP}<rel>{SEP}<dst>.txt)")
    files = sorted(p for p in edge_dir.iterdir() if p.is_file() and not p.name.startswith("."))
    time_files = [p for p in files if p.name.endswith(TIME_SUFFIX)]
    files = [p for p in files if not p.name.endswith(TIME_SUFFIX)]
    for t in time_files:
        if not t.with_name(t.name[: -len(TIME_SUFFIX)] + ".npy").is_file():
            raise IngestError(f"{t}: edge times without their .npy edge file {t.name[: -len(TIME_SUFFIX)]}.npy")
    if time_files and col is None:
        log.warning("%s: %d .time.npy file(s) ignored: pass edge_time_column (--edge-time-column) to keep "
                    "edge times", edge_dir, len(time_files))
    if not files:
        raise IngestError(f"{edge_dir}: no edge files")
    typed = {}
    for f in files:
        canon, kind = _edge_type_of(f)
        if canon in typed:
            raise IngestError(f"{edge_dir}: edge type {canon} has two files, {typed[canon][0].name} and {f.name}")
        typed[canon] = (f, kind)
    declared = _declared_counts(root)
    feats, labels, splits = _node_arrays(root)
    named_by = {}  # node type -> the first file naming it
    for canon, (f, _) in typed.items():
        for nt in (canon[0], canon[2]):
            named_by.setdefault(nt, f)
    for kind, arrays in (("feat", feats), ("label", labels), ("split", splits)):
        for nt in arrays:
            named_by.setdefault(nt, root / kind / nt)
    if declared is not None:
        for nt, f in named_by.items():
            if nt not in declared:
                raise IngestError(f"{f}: names node type {nt!r}, which {root / NODES_FILE} does not list "
                                  f"(it has {sorted(declared)})")
    counts: dict[str, int | None] = {nt: None for nt in sorted({*named_by, *(declared or {})})}
    for nt in counts:
        for what, known in (("nodes.json", declared or {}), ("features", feats), ("labels", labels)):
            if nt not in known:
                continue
            c = known[nt] if what == "nodes.json" else int(known[nt].shape[0])
            if counts[nt] is None:
                counts[nt], source = c, what
            elif c != counts[nt]:
                file = root / ("feat" if what == "features" else "label") / f"{nt}.npy"
                raise IngestError(f"{file}: {c} rows, but node type {nt!r} has {counts[nt]} nodes ({source})")

    relations, origins, times, total, cleanup = [], [], [], 0, []
    inferred: dict[str, int] = {}
    for r, (canon, (f, kind)) in enumerate(sorted(typed.items())):
        src_t, _, dst_t = canon
        if kind == "npy":
            chunks, ne = _npy_edge_chunks(_load_npy(f, "edge array"), f)
            if col is not None:
                times.append(_npy_times(f, ne))
        else:
            work = scratch_dir / f"rel{r}"
            work.mkdir()
            sf, df, ne, _ = parse_edge_file(f, work, chunk_bytes=chunk_bytes, progress=progress, time_column=col,
                                            type_limits=((src_t, counts[src_t] or 0), (dst_t, counts[dst_t] or 0)))
            chunks = scratch_edge_chunks(sf, df, ne)
            cleanup += [lambda a=sf: _unlink(a), lambda b=df: _unlink(b), lambda c=work / TIME_FILE: _unlink(c)]
            if col is not None:
                times.append(_scratch_times(work / TIME_FILE, ne))
        if counts[src_t] is None or counts[dst_t] is None:
            hs, hd = _column_max(chunks)
            inferred[src_t] = max(inferred.get(src_t, 0), hs + 1)
            inferred[dst_t] = max(inferred.get(dst_t, 0), hd + 1)
        relations.append(chunks)
        origins.append(str(f))
        total += ne
    for nt, c in counts.items():
        if c is None:
            counts[nt] = inferred.get(nt, 0)
    schema = schema_of(counts, sorted(typed))
    return TypedSource(name or root.name, schema, relations, feats, labels, splits, num_edges_hint=total,
                       extra={"source": str(root), "format": "typed-edgelist",
                              "num_nodes_from": {nt: ("declared" if declared and nt in declared else "arrays or max id")
                                                 for nt in counts},
                              "edge_time_column": col},
                       origins=origins, cleanup=cleanup, times=times if col is not None else None)
