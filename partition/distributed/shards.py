"""Edge-list shards for ``bgl ingest --distributed``: which rank reads which bytes, parsed in chunks.

A shard is a file matching the input glob (or a file of the input directory): SNAP-style text as
one-machine ``bgl ingest`` reads it (``src dst`` per line, space/tab/comma separated, ``#``/``%``
comments, columns after the second ignored, a first row of column names skipped in each file),
gzip text, a ``.npy`` integer array ``[E, 2]`` of ``(src, dst)`` rows, or Parquet (``.parquet``,
``.pq``; needs pyarrow) whose first two columns are the integer ``src`` and ``dst``.

Split: the shards' sizes (a ``.npy``'s or Parquet file's rows x 16 B) are laid end to end in name
order and cut into R equal byte ranges.  Rank r reads the text lines that *start* in its range (a
line across a cut belongs to the range holding its first byte, so ranks need not agree on line
ends), the ``.npy`` rows and the Parquet row groups whose first row is in it, and the gzip files
that start in it (a gzip stream cannot be entered in the middle, so it is read whole by one rank).

Memory: one block of text (``chunk_bytes``) or one Parquet row group, and its ids (16 B per edge),
at a time.  An error
names the file and its line (counted by reading the file's bytes before the block: only when
there is an error), or a ``.npy`` file and its row.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from bgl.errors import IngestError
from bgl.sources import _parse_kernels as P
from bgl.sources.readers.edgelist import (CHUNK_BYTES, header_row, iter_line_blocks, open_maybe_gzip, raise_parse_error,
                                  raise_time_error)

TEXT, GZIP, NPY, PARQUET = "text", "gzip", "npy", "parquet"
PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class Shard:
    """One input file: ``kind`` (text, gzip, npy, parquet) and ``size``, its share of the split
    (bytes; a ``.npy``'s or Parquet file's rows x 16 B); ``groups`` : a Parquet file's row counts
    per row group."""

    path: Path
    kind: str
    size: int
    groups: tuple[int, ...] = ()


@dataclass(frozen=True)
class Piece:
    """What one rank reads of a shard: bytes ``[start, end)`` of a text file (lines starting there),
    rows ``[start, end)`` of a ``.npy``, row groups ``[start, end)`` of a Parquet file, or all of a
    gzip file."""

    shard: Shard
    start: int
    end: int


def list_shards(source: str | os.PathLike) -> list[Shard]:
    """The shards of ``source``: a glob pattern, one file, or a directory's files (not hidden), in
    name order.  IngestError naming ``source`` when nothing matches or a ``.npy`` is not ``[E, 2]`` ints."""
    text = str(source)
    if os.path.isdir(text):
        paths = sorted(p for p in Path(text).iterdir() if p.is_file() and not p.name.startswith("."))
    else:
        paths = sorted(Path(p) for p in glob.glob(text) if os.path.isfile(p))
    if not paths:
        raise IngestError(f"no edge-list shards match {text!r}")
    return [_shard(p) for p in paths]


def _shard(path: Path) -> Shard:
    if path.suffix in PARQUET_SUFFIXES:
        return _parquet_shard(path)
    if path.suffix == ".npy":
        try:
            arr = np.load(path, mmap_mode="r")  # the header only
        except (ValueError, OSError) as e:
            raise IngestError(f"{path}: not a readable .npy file: {e}") from None
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
            raise IngestError(f"{path}: a .npy shard must be an integer array [E, 2] of (src, dst) rows, "
                              f"got {arr.dtype} {list(arr.shape)}")
        return Shard(path, NPY, 16 * int(arr.shape[0]))
    with open(path, "rb") as f:
        magic = f.read(2)
    return Shard(path, GZIP if magic == b"\x1f\x8b" else TEXT, os.path.getsize(path))


def assign(shards: list[Shard], rank: int, num_ranks: int) -> list[Piece]:
    """Rank ``rank``'s pieces of ``shards`` (see the module docstring); over all ranks every line,
    row and gzip file is read exactly once."""
    total = sum(s.size for s in shards)
    a, b = total * rank // num_ranks, total * (rank + 1) // num_ranks
    pieces, at = [], 0
    for s in shards:
        lo, hi = max(a, at) - at, min(b, at + s.size) - at
        if s.kind == GZIP:
            if a <= at < b:
                pieces.append(Piece(s, 0, s.size))
        elif s.kind == NPY:
            first, last = -(-max(lo, 0) // 16), -(-max(hi, 0) // 16)  # rows whose first byte is in range
            if hi > lo and last > first:
                pieces.append(Piece(s, first, last))
        elif s.kind == PARQUET and s.groups:
            starts = 16 * np.concatenate([[0], np.cumsum(s.groups[:-1], dtype=np.int64)]).astype(np.int64)
            mine = np.flatnonzero((starts >= a - at) & (starts < b - at))  # groups whose first row is in range
            if mine.size:
                pieces.append(Piece(s, int(mine[0]), int(mine[-1]) + 1))
        elif hi > lo:
            pieces.append(Piece(s, lo, hi))
        at += s.size
    return pieces


def iter_edges(pieces: list[Piece], num_nodes: int, chunk_bytes: int = CHUNK_BYTES, time_column: int | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """``(src, dst, times)`` int64 chunks of ``pieces``, ids checked to be in ``[0, num_nodes)``;
    ``times`` is column ``time_column`` of each edge line (None without one; ``.npy`` shards have none).

    Raises IngestError ``"<file>:<line>: ..."`` (``"<file>: row <k>: ..."`` for a ``.npy``) for the
    first malformed line, negative id, id >= ``num_nodes`` or bad time met."""
    for piece in pieces:
        if piece.shard.kind == NPY:
            if time_column is not None:
                raise IngestError(f"{piece.shard.path}: a .npy shard has no edge time column (--edge-time-column)")
            yield from _npy_chunks(piece, num_nodes, max(1, chunk_bytes // 16))
            continue
        if piece.shard.kind == PARQUET:
            yield from _parquet_chunks(piece, num_nodes, time_column)
            continue
        for lines_before, block, first in _blocks(piece, chunk_bytes):
            yield _parse(piece.shard.path, block, first, lines_before, num_nodes, time_column)


def _parse(path: Path, block: bytes, first: bool, lines_before, num_nodes: int, time_column: int | None = None):
    """One block of whole lines -> ``(src, dst, times)``; ``lines_before`` : the file's lines before
    the block, or a callable counting them (called only for an error)."""
    if first:
        header = header_row(block)
        if header is not None:  # made a comment in place, so line numbers stay the file's
            block = block[: header[0]] + b"#" + block[header[0]:]
    cap = block.count(b"\n")
    src, dst = np.empty(cap, np.int64), np.empty(cap, np.int64)
    buf = np.frombuffer(block, np.uint8)
    ne, _, err, err_line, err_value = P.parse_edge_lines(buf, src, dst, num_nodes, -1, np.empty(0), -1)
    if err != P.OK:
        before = lines_before() if callable(lines_before) else lines_before
        raise_parse_error(path, block, before, err, err_line, err_value, num_nodes)
    times = None
    if time_column is not None:
        times = np.empty(ne, np.int64)
        _, bad_line = P.parse_int_column(buf, int(time_column), times)
        if bad_line >= 0:
            raise_time_error(path, block, lines_before() if callable(lines_before) else lines_before, bad_line,
                             int(time_column))
    return src[:ne], dst[:ne], times


def _blocks(piece: Piece, chunk_bytes: int):
    """``(lines_before, block, first)`` for each block of whole lines of ``piece``; ``first`` is
    True for a block at the file's start (where a column-name row may be)."""
    path = piece.shard.path
    if piece.shard.kind == GZIP:
        lines = 0
        with open_maybe_gzip(path) as f:
            for k, block in enumerate(iter_line_blocks(f, chunk_bytes)):
                yield lines, block, k == 0
                lines += block.count(b"\n")
        return
    with open(path, "rb") as f:
        for offset, block in _text_range(f, piece.start, piece.end, chunk_bytes):
            yield (lambda at=offset: _count_lines(path, at)), block, offset == 0


def _text_range(f, start: int, end: int, chunk_bytes: int):
    """``(offset, block)``: blocks of the whole lines that start in bytes ``[start, end)`` of ``f``,
    each ending with ``\\n``; ``offset`` is the block's first byte in the file."""
    pos = start
    if start > 0:
        f.seek(start - 1)
        pos = start - 1 + len(f.readline())  # past the line holding byte start - 1: not ours
    carry, carry_at = b"", pos
    while pos < end:
        data = f.read(min(chunk_bytes, end - pos))
        if not data:
            break
        pos += len(data)
        block = carry + data
        if pos >= end:  # the last line starts before `end` and may run past it
            if not block.endswith(b"\n"):
                block += f.readline()
            yield carry_at, block if block.endswith(b"\n") else block + b"\n"
            return
        cut = block.rfind(b"\n")
        if cut < 0:  # a line longer than a block: keep reading
            carry = block
            continue
        yield carry_at, block[: cut + 1]
        carry, carry_at = block[cut + 1 :], carry_at + cut + 1
    if carry:
        yield carry_at, carry + b"\n"


def _count_lines(path: Path, offset: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Newlines in the first ``offset`` bytes of ``path`` (for an error's line number)."""
    lines = 0
    with open(path, "rb") as f:
        while offset > 0:
            data = f.read(min(chunk_bytes, offset))
            if not data:
                break
            lines += data.count(b"\n")
            offset -= len(data)
    return lines


def _npy_chunks(piece: Piece, num_nodes: int, rows: int):
    arr = np.load(piece.shard.path, mmap_mode="r")
    for a in range(piece.start, piece.end, rows):
        chunk = np.asarray(arr[a : min(a + rows, piece.end)])
        _check_ids(piece.shard.path, a, chunk[:, 0], chunk[:, 1], num_nodes)
        yield chunk[:, 0].astype(np.int64), chunk[:, 1].astype(np.int64), None


def _check_ids(path: Path, first_row: int, src: np.ndarray, dst: np.ndarray, num_nodes: int) -> None:
    """IngestError ``"<file>: row <k>: ..."`` for the first row with an id outside ``[0, num_nodes)``."""
    bad = np.flatnonzero((src < 0) | (src >= num_nodes) | (dst < 0) | (dst >= num_nodes))
    if bad.size:
        k = int(bad[0])
        value = int(src[k]) if not 0 <= src[k] < num_nodes else int(dst[k])
        why = f"negative node id {value}" if value < 0 else f"node id {value} >= num_nodes {num_nodes}"
        raise IngestError(f"{path}: row {first_row + k}: {why}: {[int(src[k]), int(dst[k])]}")


def _pyarrow_parquet(path: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError as e:  # missing, or built for another numpy major version (it says which)
        raise IngestError(f"{path}: Parquet shards need pyarrow (pip install 'bgl[distributed]'): {e}") from None
    return pq


def _parquet_shard(path: Path) -> Shard:
    """A Parquet shard from its footer: row counts per row group, and a check of the id columns."""
    pq = _pyarrow_parquet(path)
    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as e:  # noqa: BLE001 - pyarrow raises its own types for a damaged file
        raise IngestError(f"{path}: not a readable Parquet file: {e}") from None
    schema = meta.schema.to_arrow_schema()
    if len(schema) < 2 or not all(_is_int(schema.field(j).type) for j in (0, 1)):
        raise IngestError(f"{path}: a Parquet shard's first two columns must be integer src and dst, got "
                          f"{', '.join(f'{f.name}: {f.type}' for f in list(schema)[:2])}")
    groups = tuple(meta.row_group(g).num_rows for g in range(meta.num_row_groups))
    return Shard(path, PARQUET, 16 * sum(groups), groups)


def _is_int(arrow_type) -> bool:
    import pyarrow.types as T

    return T.is_integer(arrow_type)


def _parquet_chunks(piece: Piece, num_nodes: int, time_column: int | None):
    """One row group at a time: ``(src, dst, times)``, nulls and bad ids named by file and row."""
    pq = _pyarrow_parquet(piece.shard.path)
    f = pq.ParquetFile(piece.shard.path)
    names = f.schema_arrow.names
    cols = [0, 1] + ([time_column] if time_column is not None else [])
    if time_column is not None and (time_column >= len(names) or not _is_int(f.schema_arrow.field(time_column).type)):
        raise IngestError(f"{piece.shard.path}: edge time column {time_column} missing or not integers")
    first_row = sum(piece.shard.groups[: piece.start])
    for g in range(piece.start, piece.end):
        table = f.read_row_group(g, columns=[names[j] for j in cols])
        arrays = []
        for j, column in zip(cols, table.columns):
            if column.null_count:
                raise IngestError(f"{piece.shard.path}: row group {g}: {column.null_count} null values in column "
                                  f"{j} ({names[j]!r})")
            arrays.append(column.to_numpy().astype(np.int64))
        _check_ids(piece.shard.path, first_row, arrays[0], arrays[1], num_nodes)
        first_row += piece.shard.groups[g]
        yield arrays[0], arrays[1], arrays[2] if time_column is not None else None
