"""SNAP-style edge lists: ``src dst`` per line, ``#`` comments, plain text or gzip.

The file is parsed once, in byte blocks, by a numba kernel; parsed ids go to
two int64 scratch files, which the CSC builder then streams twice.  Memory
stays at one text block plus one parsed block whatever the file size.
Node ids are used as given: ``num_nodes`` is ``max id + 1`` unless declared.

A column-name row (CollegeMsg's ``src dst time``) is skipped when it is the first line that is
not blank or a comment and *every* field of it is non-numeric (:func:`header_row`); a line with
any numeric field is data, so a damaged edge line still fails naming its file and line.

SNAP files state their direction in the leading comment block ("# Undirected
graph: ...", "# Directed graph ..."); :func:`header_direction` reads it (only
the first comment lines, at most 64 KiB) and an undirected file is then
symmetrized by default, since SNAP writes each undirected edge once.
"""
from __future__ import annotations

import gzip
import logging
import os
import re
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

from ...errors import IngestError
from .. import _parse_kernels as P
from ..graph_source import GraphSource

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 26  # 64 MiB of text per parse call
READ_EDGES = 1 << 22  # edges per chunk when streaming the scratch files
WEIGHT_FILE = "weight.f32"
#: Edge array name of the weight column (``--edge-weight-column``) in the store.
WEIGHT_NAME = "weight"
TIME_FILE = "time.i64"
#: Edge array name of the time column (``--edge-time-column``) in the store: int64, 8 B per edge.
TIME_NAME = "timestamp"

_MESSAGES = {
    P.ERR_MALFORMED: "malformed line (expected two integer node ids)",
    P.ERR_MISSING: "malformed line (only one column; expected 'src dst')",
    P.ERR_OVERFLOW: "node id with more than 18 digits",
    P.ERR_WEIGHT: "edge weight column missing or not a decimal number",
}


HEADER_BYTES = 1 << 16  # the leading comment block read for a direction statement
_DIRECTION = re.compile(rb"\b(undirected|directed)\b", re.IGNORECASE)
_NUMBER = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_FIELDS = re.compile(rb"[ \t\r,]+")


def header_row(block: bytes) -> tuple[int, str] | None:
    """``(offset, text)`` of a column-name row at the start of ``block`` (a file's first lines), or None.

    The row is the first line that is not blank or a ``#``/``%`` comment, and only when every one of
    its fields is non-numeric (``src dst time``, ``FromNodeId,ToNodeId``): users expect such a header
    to be read as names, and no edge line looks like it.  ``offset`` is its first non-blank byte.
    """
    pos = 0
    while pos < len(block):
        end = block.find(b"\n", pos)
        end = len(block) if end < 0 else end
        line = block[pos:end]
        stripped = line.lstrip(b" \t\r")
        if stripped and not stripped.startswith((b"#", b"%")):
            fields = [f for f in _FIELDS.split(stripped) if f]
            if fields and not any(_NUMBER.fullmatch(f) for f in fields):
                return pos + len(line) - len(stripped), stripped.decode("utf-8", "replace").strip()
            return None
        pos = end + 1
    return None


def header_direction(path: Path) -> str | None:
    """``"undirected"``, ``"directed"`` or None: what the file's leading ``#``/``%`` comments say.

    Only the comment lines before the first edge are read (at most
    :data:`HEADER_BYTES`); the first line naming a direction decides, as in
    SNAP's ``# Undirected graph (each unordered pair of nodes is saved once)``.
    """
    with open_maybe_gzip(path) as f:
        try:
            head = f.read(HEADER_BYTES)
        except (EOFError, OSError, zlib.error) as e:
            raise IngestError(f"{path}: truncated or corrupt compressed file: {e}") from None
    for line in head.split(b"\n"):
        line = line.strip()
        if not line:
            continue
        if not line.startswith((b"#", b"%")):
            return None
        m = _DIRECTION.search(line)
        if m:
            return m.group(1).decode().lower()
    return None


def open_maybe_gzip(path: Path) -> BinaryIO:
    """Binary reader for ``path``, transparently gunzipping (by magic bytes, not name)."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def iter_line_blocks(f: BinaryIO, chunk_bytes: int) -> Iterator[bytes]:
    """Yield blocks of whole lines (each ending with ``\\n``) from a binary stream."""
    carry = b""
    while True:
        try:
            block = f.read(chunk_bytes)
        except (EOFError, OSError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
            raise IngestError(f"{getattr(f, 'name', f)}: truncated or corrupt compressed file: {e}") from None
        if not block:
            if carry:
                yield carry + b"\n"
            return
        block = carry + block
        cut = block.rfind(b"\n")
        if cut < 0:
            carry = block  # a line longer than the block: keep reading
            continue
        carry = block[cut + 1 :]
        yield block[: cut + 1]


def parse_edge_file(path: Path, scratch_dir: Path, *, num_nodes: int | None = None,
                    chunk_bytes: int = CHUNK_BYTES, progress: bool = False,
                    weight_column: int | None = None, time_column: int | None = None,
                    type_limits: tuple[tuple[str, int], tuple[str, int]] | None = None) -> tuple[Path, Path, int, int]:
    """Parse an edge-list file into ``src.i64``/``dst.i64`` scratch files.

    ``weight_column`` (0-based, >= 2): also parse that column's number of every line into
    ``weight.f32`` (float32, 4 B per edge) in the same directory; ``time_column`` likewise parses
    that column's integers into ``time.i64`` (int64, 8 B per edge).  ``type_limits``: the
    ``(node type, count)`` of the source and of the destination column of a typed edge list
    (count 0 = not checked), replacing ``num_nodes``; an id past its type's count is reported
    with its line, its type and the count.

    A first row of column names is skipped (:func:`header_row`).

    Returns
    -------
    (src_file, dst_file, num_edges, max_id) with ``max_id = -1`` for no edges.

    Raises
    ------
    IngestError
        ``"<file>:<line>: ..."`` for the first malformed line, negative id,
        or id >= ``num_nodes``.
    """
    from tqdm import tqdm

    src_file, dst_file = scratch_dir / "src.i64", scratch_dir / "dst.i64"
    wcol = -1 if weight_column is None else int(weight_column)
    tcol = -1 if time_column is None else int(time_column)
    limit = int(num_nodes) if num_nodes else 0
    dst_limit = -1
    if type_limits is not None:
        limit, dst_limit = int(type_limits[0][1]), int(type_limits[1][1])
    lines_before = 0
    total = 0
    max_id = -1
    size = os.path.getsize(path)
    with open_maybe_gzip(path) as f, open(src_file, "wb") as fs, open(dst_file, "wb") as fd, \
            open(scratch_dir / WEIGHT_FILE if wcol >= 0 else os.devnull, "wb") as fw, \
            open(scratch_dir / TIME_FILE if tcol >= 0 else os.devnull, "wb") as ft, \
            tqdm(total=size, unit="B", unit_scale=True, desc=f"parse {path.name}", disable=not progress, leave=False) as bar:
        raw = getattr(f, "fileobj", None) or f
        for block_no, block in enumerate(iter_line_blocks(f, chunk_bytes)):
            header = header_row(block) if block_no == 0 else None
            if header is not None:
                # made a comment in place, so the kernels skip it and line numbers stay the file's
                log.info("%s: first row %r read as column names", path, header[1])
                block = block[: header[0]] + b"#" + block[header[0]:]
            cap = block.count(b"\n")
            src = np.empty(cap, np.int64)
            dst = np.empty(cap, np.int64)
            weight = np.empty(cap if wcol >= 0 else 0, np.float64)
            buf = np.frombuffer(block, dtype=np.uint8)
            ne, nl, err, err_line, err_value = P.parse_edge_lines(buf, src, dst, limit, wcol, weight, dst_limit)
            if err != P.OK:
                raise_parse_error(path, block, lines_before, err, err_line, err_value, limit, type_limits)
            if tcol >= 0 and ne:
                times = np.empty(ne, np.int64)
                nt, bad_line = P.parse_int_column(buf, tcol, times)
                if bad_line >= 0:
                    raise_time_error(path, block, lines_before, bad_line, tcol)
                times[:nt].tofile(ft)
            lines_before += nl
            if ne:
                src, dst = src[:ne], dst[:ne]
                max_id = max(max_id, int(src.max()), int(dst.max()))
                src.tofile(fs)
                dst.tofile(fd)
                if wcol >= 0:
                    weight[:ne].astype(np.float32).tofile(fw)
                total += ne
            bar.n = min(size, raw.tell()) if hasattr(raw, "tell") else bar.n
            bar.refresh()
    return src_file, dst_file, total, max_id


def raise_parse_error(path: Path, block: bytes, lines_before: int, err: int, err_line: int,
                       err_value: int, limit: int, type_limits=None) -> None:
    lineno = lines_before + err_line + 1
    lines = block.split(b"\n", err_line + 1)
    text = lines[err_line].decode("utf-8", "replace").strip() if err_line < len(lines) else ""
    if len(text) > 80:
        text = text[:77] + "..."
    if err == P.ERR_NEGATIVE:
        msg = f"negative node id {err_value}"
    elif err in (P.ERR_RANGE, P.ERR_RANGE_DST) and type_limits is not None:
        end = int(err == P.ERR_RANGE_DST)
        ntype, count = type_limits[end]
        msg = f"{('source', 'destination')[end]} id {err_value} >= {count}, the node count of type {ntype!r}"
    elif err in (P.ERR_RANGE, P.ERR_RANGE_DST):
        msg = f"node id {err_value} >= num_nodes {limit}"
    else:
        msg = _MESSAGES.get(err, f"parse error {err}")
    raise IngestError(f"{path}:{lineno}: {msg}: {text!r}")


def raise_time_error(path: Path, block: bytes, lines_before: int, line: int, col: int) -> None:
    lines = block.split(b"\n", line + 1)
    text = lines[line].decode("utf-8", "replace").strip()[:80] if line < len(lines) else ""
    raise IngestError(f"{path}:{lines_before + line + 1}: edge time column {col} missing or not an integer: {text!r}")


def scratch_edge_chunks(src_file: Path, dst_file: Path, num_edges: int, chunk: int = READ_EDGES):
    """:data:`~bgl.sources.csc_build.EdgeChunks` that streams the two scratch files with plain reads."""

    def chunks():
        with open(src_file, "rb") as fs, open(dst_file, "rb") as fd:
            for start in range(0, num_edges, chunk):
                count = min(chunk, num_edges - start)
                yield np.fromfile(fs, np.int64, count), np.fromfile(fd, np.int64, count)

    return chunks


def read_edgelist(path: Path, *, scratch_dir: Path, num_nodes: int | None = None,
                  chunk_bytes: int = CHUNK_BYTES, progress: bool = False, name: str | None = None,
                  edge_weight_column: int | None = None, edge_time_column: int | None = None) -> GraphSource:
    """Read an edge-list file (edge ``src -> dst`` per line) into a :class:`GraphSource`.

    ``edge_weight_column`` (0-based; 2 is the column after ``src dst``): that column's
    numbers become the store's ``weight`` edge array (float32, CSC order).  ``edge_time_column``
    likewise: its integers (e.g. unix seconds) become the ``timestamp`` edge array (int64, 8 B per
    edge), the edge times of temporal sampling (:mod:`bgl.sampler.temporal.sampling`).

    ``symmetrize_default`` follows the header (:func:`header_direction`):
    True for "undirected", else False (an edge list keeps its direction);
    ``extra["header_direction"]`` records what the header said.
    """
    if not path.is_file():
        raise IngestError(f"{path}: no such file")
    if num_nodes is not None and num_nodes <= 0:
        raise IngestError(f"num_nodes must be > 0, got {num_nodes}")
    for what, col in (("edge_weight_column", edge_weight_column), ("edge_time_column", edge_time_column)):
        if col is not None and (isinstance(col, bool) or not isinstance(col, int) or col < 2):
            raise IngestError(f"{what} must be an int >= 2 (columns 0 and 1 are src and dst), got {col!r}")
    src_file, dst_file, ne, max_id = parse_edge_file(path, scratch_dir, num_nodes=num_nodes,
                                                     chunk_bytes=chunk_bytes, progress=progress,
                                                     weight_column=edge_weight_column,
                                                     time_column=edge_time_column)
    weight_file, time_file = scratch_dir / WEIGHT_FILE, scratch_dir / TIME_FILE
    edata = {}
    for col, name, file, dtype in ((edge_weight_column, WEIGHT_NAME, weight_file, np.float32),
                                   (edge_time_column, TIME_NAME, time_file, np.int64)):
        if col is not None:
            edata[name] = np.memmap(file, dtype, "r", shape=(ne,)) if ne else np.zeros(0, dtype)
    n = int(num_nodes) if num_nodes else max_id + 1
    if n <= 0:
        raise IngestError(f"{path}: no edges found (and no num_nodes given)")
    log.info("%s: %d edges, %d nodes", path, ne, n)
    direction = header_direction(path)
    base = path.name
    for suffix in (".gz", ".txt", ".tsv", ".csv", ".el", ".edges", ".edgelist"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    return GraphSource(
        name=name or base, num_nodes=n, edges=scratch_edge_chunks(src_file, dst_file, ne),
        num_edges_hint=ne, symmetrize_default=direction == "undirected", edata=edata or None,
        extra={"source": str(path), "format": "edgelist", "header_direction": direction,
               "num_nodes_from": "num_nodes" if num_nodes else "max id",
               "edge_weight_column": edge_weight_column, "edge_time_column": edge_time_column},
        cleanup=[lambda: _unlink(src_file), lambda: _unlink(dst_file), lambda: _unlink(weight_file),
                 lambda: _unlink(time_file)],
    )


def _unlink(p: Path) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass
