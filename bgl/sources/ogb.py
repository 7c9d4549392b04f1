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
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..errors import IngestError
from .edgelist import CHUNK_BYTES, iter_line_blocks, open_maybe_gzip, parse_edge_file, scratch_edge_chunks
from .graph_source import FeatureFill, GraphSource

SPLIT_FILES = {"train": "train", "val": "valid", "test": "test"}


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


def read_ogb(root: Path, *, scratch_dir: Path, split: str | None = None, progress: bool = False,
             name: str | None = None, chunk_bytes: int = CHUNK_BYTES) -> GraphSource:
    """Read an OGB raw node-property directory into a :class:`GraphSource`."""
    raw = root / "raw"
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

    label = None
    label_file = _find(raw, "node-label")
    if label_file is not None:
        lab = read_column(label_file, np.float64)
        if lab.size != n:
            raise IngestError(f"{label_file}: label row count mismatch: {lab.size} labels for {n} nodes "
                              "(multi-task labels are not supported)")
        label = np.where(np.isnan(lab), -1, lab).astype(np.int64)
        if np.any(label != np.where(np.isnan(lab), -1, lab)):
            raise IngestError(f"{label_file}: labels must be integer class ids")
    feat_file = _find(raw, "node-feat")
    feat = _feature_fill(feat_file, n) if feat_file is not None else None

    splits = None
    split_root = root / "split"
    if split_root.is_dir():
        names = sorted(p.name for p in split_root.iterdir() if p.is_dir())
        if split is None:
            if len(names) != 1:
                raise IngestError(f"{split_root}: several splits {names}; choose one with split=")
            split = names[0]
        if split not in names:
            raise IngestError(f"{split_root}: no split {split!r}; have {names}")
        splits = {}
        for ours, theirs in SPLIT_FILES.items():
            f = _find(split_root / split, theirs)
            if f is None:
                raise IngestError(f"{split_root / split}: missing {theirs}.csv.gz")
            ids = read_column(f, np.int64)
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
                bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
                raise IngestError(f"{f}: node id {bad} outside [0, {n})")
            splits[ours] = ids
    return GraphSource(
        name=name or root.name, num_nodes=n, edges=scratch_edge_chunks(src_f, dst_f, ne), num_edges_hint=ne,
        feat=feat, label=label, splits=splits, symmetrize_default=True,
        extra={"source": str(root), "format": "ogb", "split_name": split},
    )
