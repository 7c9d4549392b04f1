"""OGB node-property-prediction raw layout (``ogbn-*`` as downloaded and unzipped).

::

    ROOT/raw/edge.csv.gz            "src,dst" per line (edge src -> dst)
    ROOT/raw/num-node-list.csv.gz   node count (optional; else max id + 1)
    ROOT/raw/node-feat.csv.gz       one comma-separated float row per node (optional)
    ROOT/raw/node-label.csv.gz      one class id per line, "nan" = unlabelled (optional)
    ROOT/split/<name>/{train,valid,test}.csv.gz   one node id per line (optional)

``.csv`` files without ``.gz`` work as well.  Edges and features are streamed
in blocks (features straight into the store's memmap), so ``ogbn-papers100M``
sized inputs do not have to fit in RAM.  OGB stores undirected graphs once
per edge and GNNs use ``ogbn-arxiv`` symmetrized, so ``symmetrize``
defaults to True.

The heterogeneous layout (ogbn-mag: ``raw/num-node-dict.csv.gz``,
``raw/relations/<src>___<rel>___<dst>/edge.csv.gz``, per-type ``node-feat/``,
``node-label/`` and ``split/<scheme>/<type>/``) is read by :func:`read_ogb_hetero`
into a typed store, with the same parsers.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ...errors import IngestError
from .edgelist import CHUNK_BYTES, _unlink, iter_line_blocks, open_maybe_gzip, parse_edge_file, scratch_edge_chunks
from ..graph_source import FeatureFill, GraphSource

SPLIT_FILES = {"train": "train", "val": "valid", "test": "test"}
HETERO_NODE_COUNTS = "num-node-dict"  # the file that makes a raw directory heterogeneous
RELATION_SEP = "___"


def _find(base: Path, stem: str) -> Path | None:
    for suffix in (".csv.gz", ".csv"):
        p = base / f"{stem}{suffix}"
        if p.exists():
            return p
    return None


# an empty or whitespace-only field: at the start, between two commas, or at the end
_EMPTY_FIELD = re.compile(r"(?:^|,)[ \t\r\x0b\x0c]*(?:,|$)")


def _parse_numbers(block: bytes, dtype, where: str, first_line: int) -> np.ndarray:
    """All comma/newline-separated numbers of a block of whole lines."""
    # One character per byte ("replace" keeps lengths), so offsets in text are offsets in block.
    text = block.decode("ascii", "replace").replace("\n", ",").rstrip(", \t\r\x0b\x0c")
    # np.fromstring reads an empty or whitespace-only field as -1 without complaint:
    # a blank line inside a split or label file would silently become node -1.
    empty = _EMPTY_FIELD.search(text)
    if empty:
        offset = empty.start() + (text[empty.start()] == ",")
        line = first_line + block.count(b"\n", 0, offset) + 1
        raise IngestError(f"{where}:{line}: empty value (blank line or empty field)")
    with warnings.catch_warnings():
        # numpy warns (and returns a short array) on text it cannot parse; make that an error.
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.fromstring(text, dtype=dtype, sep=",")
        except (DeprecationWarning, ValueError):
            pass
    # Locate the first bad line for the message (rare path, so a Python loop is fine).
    for k, line in enumerate(block.split(b"\n")):
        try:
            [float(v) for v in line.split(b",") if v.strip()] if line.strip() else None
        except ValueError:
            raise IngestError(f"{where}:{first_line + k + 1}: not a number: {line[:80]!r}") from None
    raise IngestError(f"{where}: could not parse numbers near line {first_line + 1}")


# the bytes ``bytes.strip()`` removes: a line of only these counts as blank
_WHITESPACE = np.frombuffer(b" \t\n\r\x0b\x0c", np.uint8)


def _count_nonblank_lines(block: bytes) -> int:
    """Lines of ``block`` (split at b"\n") holding a non-whitespace byte; vectorised, as a block
    may be many MB.  Equals ``sum(1 for ln in block.split(b"\n") if ln.strip())``."""
    arr = np.frombuffer(block, np.uint8)
    is_nl = arr == ord("\n")
    keep = is_nl | ~np.isin(arr, _WHITESPACE)
    seq = is_nl[keep]  # True = line end, False = a non-blank byte; blank bytes dropped
    if seq.size == 0:
        return 0
    # a line is non-blank iff it has a non-blank byte right at its start in ``seq``
    return int(not seq[0]) + int(np.count_nonzero(seq[:-1] & ~seq[1:]))


def read_column(path: Path, dtype=np.float64) -> np.ndarray:
    """A one-number-per-line file as a 1-D array (split ids, labels)."""
    parts, lines = [], 0
    with open_maybe_gzip(path) as f:
        for block in iter_line_blocks(f, CHUNK_BYTES):
            vals = _parse_numbers(block, dtype, str(path), lines)
            nl = block.count(b"\n")
            if vals.size != nl and vals.size != _count_nonblank_lines(block):
                raise IngestError(f"{path}: expected one value per line near line {lines + 1}")
            parts.append(vals)
            lines += nl
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _feature_fill(path: Path, num_nodes: int) -> FeatureFill:
    with open_maybe_gzip(path) as f:
        first = f.readline()
    dim = len([v for v in first.split(b",") if v.strip()])
    if dim == 0:
        raise IngestError(f"{path}: first line has no feature values")

    def fill(out: np.ndarray) -> None:
        row = 0
        with open_maybe_gzip(path) as f:
            for block in iter_line_blocks(f, CHUNK_BYTES):
                vals = _parse_numbers(block, np.float32, str(path), row)
                if vals.size % dim:
                    raise IngestError(f"{path}: a row near line {row + 1} does not have {dim} values")
                k = vals.size // dim
                if row + k > num_nodes:
                    raise IngestError(f"{path}: feature row count mismatch: more than {num_nodes} rows for {num_nodes} nodes")
                out[row : row + k] = vals.reshape(k, dim)
                row += k
        if row != num_nodes:
            raise IngestError(f"{path}: feature row count mismatch: {row} rows for {num_nodes} nodes")

    return FeatureFill(dim=dim, fill=fill)


def _read_labels(label_file: Path, n: int) -> np.ndarray:
    """int64 [n] class ids of a one-label-per-line file ("nan" = unlabelled = -1)."""
    lab = read_column(label_file, np.float64)
    if lab.size != n:
        raise IngestError(f"{label_file}: label row count mismatch: {lab.size} labels for {n} nodes "
                          "(multi-task labels are not supported)")
    label = np.where(np.isnan(lab), -1, lab).astype(np.int64)
    if np.any(label != np.where(np.isnan(lab), -1, lab)):
        raise IngestError(f"{label_file}: labels must be integer class ids")
    return label


def _split_dir(root: Path, split: str | None) -> Path | None:
    """``root/split/<name>``: the one there is, or ``split``; None without a ``split/`` directory."""
    split_root = root / "split"
    if not split_root.is_dir():
        return None
    names = sorted(p.name for p in split_root.iterdir() if p.is_dir())
    if split is None:
        if len(names) != 1:
            raise IngestError(f"{split_root}: several splits {names}; choose one with split=")
        split = names[0]
    if split not in names:
        raise IngestError(f"{split_root}: no split {split!r}; have {names}")
    return split_root / split


def _read_split(split_dir: Path, n: int) -> dict[str, np.ndarray]:
    """{"train", "val", "test"} ids of ``split_dir/{train,valid,test}.csv.gz``, each checked against ``[0, n)``."""
    splits = {}
    for ours, theirs in SPLIT_FILES.items():
        f = _find(split_dir, theirs)
        if f is None:
            raise IngestError(f"{split_dir}: missing {theirs}.csv.gz")
        ids = read_column(f, np.int64)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise IngestError(f"{f}: node id {bad} outside [0, {n})")
        splits[ours] = ids
    return splits


def looks_ogb(root: Path) -> bool:
    """True for an OGB raw directory, homogeneous (``raw/edge.csv.gz``) or heterogeneous
    (``raw/num-node-dict.csv.gz``)."""
    return _find(root / "raw", "edge") is not None or _find(root / "raw", HETERO_NODE_COUNTS) is not None


def read_ogb(root: Path, *, scratch_dir: Path, split: str | None = None, progress: bool = False,
             name: str | None = None, chunk_bytes: int = CHUNK_BYTES) -> GraphSource:
    """Read an OGB raw node-property directory into a :class:`GraphSource` (a :class:`TypedSource`
    for the heterogeneous layout, :func:`read_ogb_hetero`)."""
    raw = root / "raw"
    if _find(raw, HETERO_NODE_COUNTS) is not None:
        return read_ogb_hetero(root, scratch_dir=scratch_dir, split=split, progress=progress, name=name,
                               chunk_bytes=chunk_bytes)
    edge_file = _find(raw, "edge")
    if edge_file is None:
        raise IngestError(f"{root}: no raw/edge.csv.gz")
    n = None
    nn_file = _find(raw, "num-node-list")
    if nn_file is not None:
        counts = read_column(nn_file, np.int64)
        if counts.size != 1 or counts[0] <= 0:
            raise IngestError(f"{nn_file}: expected one positive node count, got {counts[:4].tolist()}")
        n = int(counts[0])
    src_f, dst_f, ne, max_id = parse_edge_file(edge_file, scratch_dir, num_nodes=n,
                                               chunk_bytes=chunk_bytes, progress=progress)
    n = n or max_id + 1
    if n <= 0:
        raise IngestError(f"{edge_file}: no edges and no num-node-list")

    label_file = _find(raw, "node-label")
    label = _read_labels(label_file, n) if label_file is not None else None
    feat_file = _find(raw, "node-feat")
    feat = _feature_fill(feat_file, n) if feat_file is not None else None

    splits = None
    split_dir = _split_dir(root, split)
    if split_dir is not None:
        split = split_dir.name
        splits = _read_split(split_dir, n)
    return GraphSource(
        name=name or root.name, num_nodes=n, edges=scratch_edge_chunks(src_f, dst_f, ne), num_edges_hint=ne,
        feat=feat, label=label, splits=splits, symmetrize_default=True,
        extra={"source": str(root), "format": "ogb", "split_name": split},
    )


# ------------------------------------------------------------------ heterogeneous layout (ogbn-mag)
def _small_table(path: Path) -> list[list[str]]:
    """The comma-separated rows of a small metadata file (type lists, counts), blank lines dropped."""
    with open_maybe_gzip(path) as f:
        text = f.read().decode("utf-8", "replace")
    return [[v.strip() for v in line.split(",")] for line in text.splitlines() if line.strip()]


def _type_counts(path: Path) -> dict[str, int]:
    """``num-node-dict.csv.gz``: a header row of node types, then one row of counts (one graph)."""
    rows = _small_table(path)
    if len(rows) != 2 or len(rows[0]) != len(rows[1]):
        raise IngestError(f"{path}: expected a header of node types and one row of counts, got {len(rows)} rows "
                          "(graph-level datasets with several graphs are not supported)")
    counts = {}
    for nt, c in zip(*rows):
        try:
            counts[nt] = int(float(c))
        except ValueError:
            raise IngestError(f"{path}: node count of type {nt!r} is not a number: {c!r}") from None
        if counts[nt] < 0:
            raise IngestError(f"{path}: node count of type {nt!r} is negative: {c}")
    return counts


def _type_flags(path: Path | None, types: list[str]) -> list[str]:
    """The types a ``nodetype-has-*.csv.gz`` (header of types, one row of True/False) marks True;
    every type when the file is absent."""
    if path is None:
        return types
    rows = _small_table(path)
    if len(rows) != 2:
        raise IngestError(f"{path}: expected a header of node types and one row of True/False")
    return [nt for nt, flag in zip(*rows) if flag.lower() in ("true", "1")]


def _triplets(raw: Path) -> list[tuple[str, str, str]]:
    """Canonical edge types from ``triplet-type-list.csv.gz`` (else the ``relations/`` directory names), sorted."""
    listed = _find(raw, "triplet-type-list")
    if listed is not None:
        rows = _small_table(listed)
        bad = [r for r in rows if len(r) != 3]
        if bad:
            raise IngestError(f"{listed}: each row must be 'src,rel,dst', got {bad[0]}")
        return sorted(tuple(r) for r in rows)
    rel_dir = raw / "relations"
    if not rel_dir.is_dir():
        raise IngestError(f"{raw}: no relations/ directory and no triplet-type-list.csv.gz")
    out = []
    for d in sorted(p for p in rel_dir.iterdir() if p.is_dir()):
        parts = d.name.split(RELATION_SEP)
        if len(parts) != 3:
            raise IngestError(f"{d}: a relation directory is named <src>{RELATION_SEP}<rel>{RELATION_SEP}<dst>")
        out.append(tuple(parts))
    return sorted(out)


def read_ogb_hetero(root: Path, *, scratch_dir: Path, split: str | None = None, progress: bool = False,
                    name: str | None = None, chunk_bytes: int = CHUNK_BYTES):
    """OGB's heterogeneous raw layout (ogbn-mag), as ``ogb.io.read_csv_heterograph_raw`` reads it::

        ROOT/raw/num-node-dict.csv.gz                       header of node types, one row of counts
        ROOT/raw/triplet-type-list.csv.gz                   "src,rel,dst" per edge type (optional)
        ROOT/raw/relations/<src>___<rel>___<dst>/edge.csv.gz       "src,dst" TYPE-LOCAL ids per line
        ROOT/raw/relations/<src>___<rel>___<dst>/num-edge-list.csv.gz   its edge count (checked)
        ROOT/raw/node-feat/<type>/node-feat.csv.gz          one float row per node of that type
        ROOT/raw/nodetype-has-label.csv.gz                  which types are labelled (optional)
        ROOT/raw/node-label/<type>/node-label.csv.gz        one class id per line
        ROOT/split/<scheme>/<type>/{train,valid,test}.csv.gz   TYPE-LOCAL ids

    Types and edge types are in sorted order (OGB's and DGL's).  Every relation is kept in its
    stored direction (ogbn-mag's models add reverses: ``add_reverse=True``).  Returns a
    :class:`~bgl.sources.typed.source.TypedSource`; an id past its type's count is reported with
    its file and line.
    """
    from ..typed.source import TypedSource, schema_of

    raw = root / "raw"
    counts_file = _find(raw, HETERO_NODE_COUNTS)
    counts = dict(sorted(_type_counts(counts_file).items()))
    ntypes = list(counts)
    triplets = _triplets(raw)
    relations, origins, total, cleanup = [], [], 0, []
    for r, (h, rel, t) in enumerate(triplets):
        for nt in (h, t):
            if nt not in counts:
                raise IngestError(f"{raw / 'relations' / RELATION_SEP.join((h, rel, t))}: node type {nt!r} is not in "
                                  f"{counts_file} (it has {ntypes})")
        d = raw / "relations" / RELATION_SEP.join((h, rel, t))
        edge_file = _find(d, "edge")
        if edge_file is None:
            raise IngestError(f"{d}: no edge.csv.gz")
        work = scratch_dir / f"rel{r}"
        work.mkdir()
        sf, df, ne, _ = parse_edge_file(edge_file, work, chunk_bytes=chunk_bytes, progress=progress,
                                        type_limits=((h, counts[h]), (t, counts[t])))
        cleanup += [lambda a=sf: _unlink(a), lambda b=df: _unlink(b)]
        listed = _find(d, "num-edge-list")
        if listed is not None:
            declared = read_column(listed, np.int64)
            if int(declared.sum()) != ne:
                raise IngestError(f"{edge_file}: {ne} edges, but {listed} says {int(declared.sum())}")
        relations.append(scratch_edge_chunks(sf, df, ne))
        origins.append(str(edge_file))
        total += ne
    feats = {}
    for nt in ntypes:
        f = _find(raw / "node-feat" / nt, "node-feat")
        if f is not None:
            feats[nt] = _feature_fill(f, counts[nt])
    labels = {}
    for nt in _type_flags(_find(raw, "nodetype-has-label"), ntypes):
        f = _find(raw / "node-label" / nt, "node-label")
        if f is not None:
            labels[nt] = _read_labels(f, counts[nt])
    splits = {}
    split_dir = _split_dir(root, split)
    if split_dir is not None:
        present = sorted(p.name for p in split_dir.iterdir() if p.is_dir())
        for nt in _type_flags(_find(split_dir, "nodetype-has-split"), present):
            if nt not in counts:
                raise IngestError(f"{split_dir / nt}: node type {nt!r} is not in {counts_file} (it has {ntypes})")
            splits[nt] = _read_split(split_dir / nt, counts[nt])
    return TypedSource(name or root.name, schema_of(counts, triplets), relations, feats, labels, splits,
                       num_edges_hint=total, origins=origins, cleanup=cleanup,
                       extra={"source": str(root), "format": "ogb-hetero",
                              "split_name": None if split_dir is None else split_dir.name})
