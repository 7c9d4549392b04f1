"""bgl wire protocol: ZeroMQ multipart messages, a fixed binary header plus raw array frames.

Frame 0 is a little-endian header (``HEADER``, 60 bytes)::

    magic    4s  b"BGLW"
    version  u8  PROTOCOL_VERSION
    op       u8  Op
    flags    u8  bit 0 = replace, bit 1 = edge names frame follows, bit 2 = LABOR, bit 4 = typed (SAMPLE)
    field    u8  FEATURES field: 0 = feat, 1 = label; typed SAMPLE reply: dtype code of its etypes frame
    dtype0   u8  dtype code of frame 1 (DTYPES)
    dtype1   u8  dtype code of frame 2
    ntype    u16 FEATURES of one node type: its index + 1 (0 = untyped; was "reserved" = 0)
    req_id   u64 echoed in the reply, so clients match out-of-order replies
    fanout   i64 SAMPLE fanout (-1 = all)
    seed     u64 SAMPLE RNG seed
    len0     u64 elements (rows for 2-D) in frame 1
    len1     u64 elements in frame 2
    width    u64 columns of frame 1 (FEATURES reply), else 1 / 0

Frames 1.. are raw C-order array bytes, read zero-copy with ``np.frombuffer``.

A SAMPLE request may carry a third frame (``dtype1`` int64, ``len1`` ids): edges the
server must never draw (link prediction's seed edges and their reverses), as CSC
positions of the server's own store, sorted and unique (:func:`parse_request` checks
both, the server checks the range).  This frame comes after the edge names frame (if any) and before the LABOR frame (if any);
the header's ``len1``/``dtype1`` always describe it (0/0 without it).  Two-frame SAMPLE
requests are unchanged.

Weighted sampling and edge data (``FLAG_EDGE_NAMES``): a SAMPLE request may
carry a third frame of edge-array names, UTF-8, one per line (its own byte
length, at most ``MAX_EDGE_NAMES_BYTES``): line 0 names the edge weights (or bool mask) to sample by
(empty = uniform), further lines name edge arrays whose rows of the sampled
edges the reply carries (a block's ``edata``).  Such a reply then has a JSON
frame ``[{"name", "dtype", "shape"}, ...]`` after ``nbrs`` and one frame of
rows per array; an old server refuses the flag bit ("unknown flag bits").

LABOR (``FLAG_LABOR``): the request's last frame is 16 bytes, ``<Qd``: a second
seed and the mix in [0, 1) of its variates (``batch_dependency``; -1 = none); the server
keeps each edge by its source node's shared variate (:mod:`._labor_kernels`).

Typed SAMPLE (flag bit 4) and FEATURES of one node type (``ntype``): :mod:`.typed.frames`.

=========  ===========================  ========================================
op         request frames               reply frames
=========  ===========================  ========================================
SAMPLE     seeds (int32/int64)          counts (int64 [len0]), nbrs ([len1])
           [+ edge names (uint8 utf-8)] [+ edge spec (JSON), one frame of rows per edge array]
           [+ excluded edges (int64)]
           [+ LABOR (<Qd)]
FEATURES   ids (int32/int64)            rows ([len0, width], feat dtype / int64)
INFO       -                            JSON bytes (uint8 [len0])
PING       -                            - (op PING)
SHUTDOWN   token (uint8 utf-8)          - (op SHUTDOWN), then the server stops
ERROR      -                            message (uint8 utf-8)
=========  ===========================  ========================================

Nothing is ever pickled.  :func:`parse_request` checks every field and raises
:class:`~bgl.errors.ProtocolError` with a message naming the bad value; the
server sends that message back as an ERROR reply.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import struct
from dataclasses import dataclass

import numpy as np

from bgl.errors import ProtocolError

from .typed.frames import FLAG_TYPED, typed_fanouts

MAGIC = b"BGLW"
PROTOCOL_VERSION = 1
HEADER = struct.Struct("<4sBBBBBBHQqQQQQ")
assert HEADER.size == 60
FLAG_REPLACE = 1
FLAG_EDGE_NAMES = 2
FLAG_LABOR = 4
LABOR_FRAME = struct.Struct("<Qd")  # seed2 (batch_dependency), mix in [0, 1)
MAX_EDGE_NAMES_BYTES = 4096
FIELD_FEAT, FIELD_LABEL = 0, 1
# A request may name at most this many ids (and a reply carry this many rows);
# larger batches must be split by the caller.  Bounds a server's memory per request.
MAX_IDS = 1 << 26
MAX_TOKEN_BYTES = 1024


class Op(enum.IntEnum):
    """Operation codes of the header's ``op`` byte."""
    SAMPLE = 1
    FEATURES = 2
    INFO = 3
    PING = 4
    SHUTDOWN = 5
    ERROR = 6


DTYPES: dict[int, np.dtype] = {
    1: np.dtype("<i4"), 2: np.dtype("<i8"), 3: np.dtype("<f4"), 4: np.dtype("<f8"),
    5: np.dtype("<f2"), 6: np.dtype("u1"), 7: np.dtype("i1"), 8: np.dtype("<i2"),
    9: np.dtype("<u2"), 10: np.dtype("<u4"), 11: np.dtype("<u8"), 12: np.dtype("?"),
}
DTYPE_CODES: dict[np.dtype, int] = {v: k for k, v in DTYPES.items()}
ID_CODES = (1, 2)
# Frames each request op must carry (header included); SAMPLE may add the excluded edges.
REQUEST_FRAMES = {Op.SAMPLE: 2, Op.FEATURES: 2, Op.INFO: 1, Op.PING: 1, Op.SHUTDOWN: 2}
EXCLUDE_CODE = 2  # int64
KNOWN_FLAGS = FLAG_REPLACE | FLAG_EDGE_NAMES | FLAG_LABOR | FLAG_TYPED


@dataclass(frozen=True)
class Header:
    """Fields of the fixed header frame (see the module docstring for the layout)."""
    op: int
    req_id: int = 0
    flags: int = 0
    field: int = 0
    dtype0: int = 0
    dtype1: int = 0
    fanout: int = 0
    seed: int = 0
    len0: int = 0
    len1: int = 0
    width: int = 0
    version: int = PROTOCOL_VERSION
    ntype: int = 0  # typed FEATURES: node type index + 1

    def pack(self) -> bytes:
        """The header as ``HEADER.size`` little-endian bytes (frame 0)."""
        return HEADER.pack(MAGIC, self.version, self.op, self.flags, self.field, self.dtype0, self.dtype1, self.ntype,
                           self.req_id, self.fanout, self.seed, self.len0, self.len1, self.width)


def dtype_code(dtype) -> int:
    """Wire code of ``dtype`` (big-endian input mapped to little-endian); ProtocolError for a dtype the
    wire cannot carry.
    """
    dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).byteorder == ">" else np.dtype(dtype)
    try:
        return DTYPE_CODES[dt]
    except KeyError:
        raise ProtocolError(f"dtype {dt} cannot be sent on the wire") from None


def unpack_header(buf) -> Header:
    """Parse frame 0; ProtocolError on wrong size, magic or version."""
    mv = memoryview(buf)
    if mv.nbytes != HEADER.size:
        raise ProtocolError(f"header frame must be {HEADER.size} bytes, got {mv.nbytes}")
    (magic, version, op, flags, field, d0, d1, ntype, req_id, fanout, seed, len0, len1, width) = HEADER.unpack(mv)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {magic!r}, expected {MAGIC!r}")
    h = Header(op, req_id, flags, field, d0, d1, fanout, seed, len0, len1, width, version, ntype)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"unsupported protocol version {version}, expected {PROTOCOL_VERSION}")
    return h


def peek_req_id(buf) -> int:
    """Best-effort request id of a possibly malformed header (0 if unreadable), for ERROR replies."""
    mv = memoryview(buf)
    if mv.nbytes >= HEADER.size and bytes(mv[:4]) == MAGIC:
        return struct.unpack_from("<Q", mv, 12)[0]
    return 0


def array_from_frame(frame, code: int, length: int, width: int = 1, what: str = "array") -> np.ndarray:
    """Zero-copy view of a frame as ``DTYPES[code]`` [length] (or [length, width]), size-checked."""
    if code not in DTYPES:
        raise ProtocolError(f"{what}: unknown dtype code {code}")
    dt = DTYPES[code]
    buf = memoryview(frame.buffer if hasattr(frame, "buffer") else frame)
    expect = length * max(width, 1) * dt.itemsize
    if buf.nbytes != expect:
        raise ProtocolError(f"{what}: frame has {buf.nbytes} bytes, header says {length} x {max(width, 1)} {dt} = {expect}")
    arr = np.frombuffer(buf, dtype=dt)
    if arr.ctypes.data % dt.itemsize:
        arr = arr.copy()  # numba kernels want aligned data; zmq frames are usually aligned
    return arr.reshape(length, width) if width > 1 else arr


@dataclass(frozen=True)
class Request:
    """A validated request: its header, the id array (SAMPLE/FEATURES) or the token bytes (SHUTDOWN)."""
    header: Header
    ids: np.ndarray | None = None  # SAMPLE seeds / FEATURES ids (int64 or int32)
    token: bytes = b""
    exclude: np.ndarray | None = None  # SAMPLE: sorted unique int64 CSC positions never to draw
    weights: str | None = None  # SAMPLE: edge array to sample by (None = uniform)
    edge_data: tuple[str, ...] = ()  # SAMPLE: edge arrays whose sampled rows the reply carries
    labor: tuple[int, float] | None = None  # SAMPLE: LABOR's (seed2, mix); None = neighbour sampling
    fanouts: np.ndarray | None = None  # typed SAMPLE: int64 [R] per-relation fanouts


def encode_edge_names(weights: str | None, edge_data=()) -> bytes:
    """The names frame of a SAMPLE request: the weights' name (or empty), then one edge array a line."""
    return "\n".join([weights or "", *edge_data]).encode("utf-8")


def decode_edge_names(frame) -> tuple[str | None, tuple[str, ...]]:
    """``(weights or None, edge arrays)`` of a names frame; ProtocolError naming a bad name."""
    from bgl.schema import check_edge_name

    try:
        lines = bytes(frame).decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise ProtocolError("SAMPLE: edge names frame is not UTF-8") from None
    try:
        weights = check_edge_name(lines[0]) if lines[0] else None
        edge_data = tuple(check_edge_name(name) for name in lines[1:])
    except ValueError as e:
        raise ProtocolError(f"SAMPLE: {e}") from None
    if len(set(edge_data)) != len(edge_data):
        raise ProtocolError(f"SAMPLE: edge arrays named twice: {list(edge_data)}")
    return weights, edge_data


def parse_request(frames: list, num_relations: int | None = None) -> Request:
    """Validate a request's frames (header first, no routing id); ProtocolError names the problem.

    ``num_relations``: the serving store's relation count, which a typed SAMPLE's fanouts frame
    must match (None: any length >= 1).
    """
    if not frames:
        raise ProtocolError("empty message")
    h = unpack_header(frames[0])
    try:
        op = Op(h.op)
    except ValueError:
        raise ProtocolError(f"unknown op {h.op}") from None
    if op not in REQUEST_FRAMES:
        raise ProtocolError(f"op {op.name} is not a request")
    if h.flags & ~KNOWN_FLAGS:
        raise ProtocolError(f"unknown flag bits {h.flags:#x}")
    if h.ntype and op is not Op.FEATURES:
        raise ProtocolError(f"{op.name}: the ntype header field must be 0, got {h.ntype}")
    if op is Op.SAMPLE and h.flags & FLAG_TYPED:  # [header, seeds, fanouts, ...]: the fanouts, then as plain
        fanouts = typed_fanouts(frames, h.flags, h.fanout, num_relations)
        plain = parse_request([dataclasses.replace(h, flags=h.flags & ~FLAG_TYPED).pack(), frames[1], *frames[3:]])
        return dataclasses.replace(plain, header=h, fanouts=fanouts)
    names = op is Op.SAMPLE and bool(h.flags & FLAG_EDGE_NAMES)
    labor = op is Op.SAMPLE and bool(h.flags & FLAG_LABOR)
    needed = REQUEST_FRAMES[op] + names + labor
    excluding = op is Op.SAMPLE and len(frames) == needed + 1
    if len(frames) != needed and not excluding:
        raise ProtocolError(f"{op.name} needs {needed} frames, got {len(frames)}")
    if names:
        size = memoryview(frames[2].buffer if hasattr(frames[2], "buffer") else frames[2]).nbytes
        if size > MAX_EDGE_NAMES_BYTES:
            raise ProtocolError(f"SAMPLE: edge names frame of {size} bytes exceeds {MAX_EDGE_NAMES_BYTES}")
    if excluding:  # the other frames are checked as in a request without it, the excluded edges here
        exclude = _excluded_edges(h, frames[2 + names])
        plain = dataclasses.replace(h, len1=0, dtype1=0)
        req = parse_request([plain.pack(), *frames[1:2 + names], *frames[3 + names:]])
        return dataclasses.replace(req, header=h, exclude=exclude)
    if h.len1 or h.dtype1:
        raise ProtocolError(f"{op.name}: len1/dtype1 must be 0 in a request, got {h.len1}/{h.dtype1}")
    if op is not Op.SAMPLE and (h.flags or h.fanout or h.seed):
        raise ProtocolError(f"{op.name}: flags/fanout/seed must be 0, got {h.flags}/{h.fanout}/{h.seed}")
    if op is not Op.FEATURES and h.field:
        raise ProtocolError(f"{op.name}: field must be 0, got {h.field}")
    if op in (Op.INFO, Op.PING) and (h.len0 or h.width):
        raise ProtocolError(f"{op.name}: len0/width must be 0, got {h.len0}/{h.width}")
    if op is Op.SAMPLE and h.fanout < -1:
        raise ProtocolError(f"SAMPLE: fanout must be >= -1 (-1 = all), got {h.fanout}")
    if op in (Op.SAMPLE, Op.FEATURES):
        if h.dtype0 not in ID_CODES:
            raise ProtocolError(f"{op.name}: ids dtype code must be int32 (1) or int64 (2), got {h.dtype0}")
        if h.len0 > MAX_IDS:
            raise ProtocolError(f"{op.name}: {h.len0} ids exceed the per-request limit {MAX_IDS}")
        if op is Op.FEATURES and h.field not in (FIELD_FEAT, FIELD_LABEL):
            raise ProtocolError(f"FEATURES: unknown field code {h.field} (0 = feat, 1 = label)")
        if h.width != 1:
            raise ProtocolError(f"{op.name}: width must be 1 for an id array, got {h.width}")
        # read-only int64 whatever the frame: the kernels' one variant loaded before ready (kernel_warmup.py)
        ids = array_from_frame(frames[1], h.dtype0, h.len0, 1, f"{op.name} ids").astype(np.int64, copy=False)
        ids.flags.writeable = False
        weights, edge_data, labor_args = None, (), None
        if names:
            weights, edge_data = decode_edge_names(memoryview(frames[2].buffer if hasattr(frames[2], "buffer")
                                                              else frames[2]))
        if labor:
            labor_args = parse_labor_frame(frames[-1])
            if weights is not None:
                raise ProtocolError(f"SAMPLE: LABOR with edge weights ({weights!r}) is not supported")
            if h.flags & FLAG_REPLACE:
                raise ProtocolError("SAMPLE: LABOR samples without replacement; the replace flag must be 0")
        return Request(h, ids=ids, weights=weights, edge_data=edge_data, labor=labor_args)
    if op is Op.SHUTDOWN:
        tok = memoryview(frames[1].buffer if hasattr(frames[1], "buffer") else frames[1])
        if tok.nbytes > MAX_TOKEN_BYTES:
            raise ProtocolError(f"SHUTDOWN token of {tok.nbytes} bytes exceeds {MAX_TOKEN_BYTES}")
        if h.dtype0 != 6 or h.len0 != tok.nbytes:
            raise ProtocolError(f"SHUTDOWN: token frame must be uint8 (6) of len0={h.len0} bytes, "
                                f"got code {h.dtype0} and {tok.nbytes} bytes")
        return Request(h, token=bytes(tok))
    return Request(h)


def _excluded_edges(h: Header, frame) -> np.ndarray:
    """The third SAMPLE frame as sorted unique int64 edge positions; ProtocolError otherwise."""
    if h.dtype1 != EXCLUDE_CODE:
        raise ProtocolError(f"SAMPLE: excluded edges must be int64 (code {EXCLUDE_CODE}), got code {h.dtype1}")
    if h.len1 > MAX_IDS:
        raise ProtocolError(f"SAMPLE: {h.len1} excluded edges exceed the per-request limit {MAX_IDS}")
    exclude = array_from_frame(frame, h.dtype1, h.len1, 1, "SAMPLE excluded edges")
    if exclude.shape[0] > 1 and not bool(np.all(exclude[1:] > exclude[:-1])):
        raise ProtocolError("SAMPLE: excluded edges must be sorted and unique")
    if exclude.shape[0] and int(exclude[0]) < 0:
        raise ProtocolError(f"SAMPLE: excluded edge {int(exclude[0])} is negative")
    return exclude


# ------------------------------------------------------------------ builders
def parse_labor_frame(frame) -> tuple[int, float]:
    """``(seed2, mix)`` of a LABOR frame; ProtocolError unless 16 bytes with ``mix`` -1 or in [0, 1)."""
    buf = memoryview(frame.buffer if hasattr(frame, "buffer") else frame)
    if buf.nbytes != LABOR_FRAME.size:
        raise ProtocolError(f"SAMPLE: LABOR frame must be {LABOR_FRAME.size} bytes, got {buf.nbytes}")
    seed2, mix = LABOR_FRAME.unpack(buf)
    if not (0.0 <= mix < 1.0 or mix == -1.0):
        raise ProtocolError(f"SAMPLE: LABOR mix must be -1 (none) or in [0, 1), got {mix}")
    return int(seed2), float(mix)


def sample_request(req_id: int, seeds: np.ndarray, fanout: int, replace: bool, seed: int,
                   weights: str | None = None, edge_data=(), labor: tuple[int, float] | None = None,
                   exclude: np.ndarray | None = None) -> list:
    """Frames of a SAMPLE request for ``seeds`` (int32/int64 [m]); ``seed`` is taken modulo 2**64.

    ``weights`` names the edge array to sample by, ``edge_data`` the edge arrays whose rows of
    the sampled edges the reply should carry; ``labor`` = ``(seed2, mix)`` asks for LABOR
    sampling; ``exclude`` (sorted unique int64 CSC positions of the server's store) adds the
    frame of edges never to draw (None or empty: no such frame).  With none of them the request
    is the plain two frames.
    """
    seeds = np.ascontiguousarray(seeds)
    names = encode_edge_names(weights, edge_data) if weights or edge_data else None
    n_excl = 0 if exclude is None else int(exclude.shape[0])
    flags = (FLAG_REPLACE if replace else 0) | (FLAG_EDGE_NAMES if names is not None else 0) \
        | (FLAG_LABOR if labor is not None else 0)
    h = Header(Op.SAMPLE, req_id, flags, 0, dtype_code(seeds.dtype), EXCLUDE_CODE if n_excl else 0,
               int(fanout), int(seed) & ((1 << 64) - 1), seeds.shape[0], n_excl, 1)
    frames = [h.pack(), seeds] + ([names] if names is not None else [])
    if n_excl:
        frames.append(np.ascontiguousarray(exclude, dtype="<i8"))
    if labor is not None:
        frames.append(LABOR_FRAME.pack(int(labor[0]) & ((1 << 64) - 1), float(labor[1])))
    return frames


def features_request(req_id: int, ids: np.ndarray, field: int, ntype: int = -1) -> list:
    """Frames of a FEATURES request for ``ids`` (int32/int64 [m]), ``field`` FIELD_FEAT/FIELD_LABEL, ``ntype`` >= 0: its rows."""
    ids = np.ascontiguousarray(ids)
    return [Header(Op.FEATURES, req_id, 0, field, dtype_code(ids.dtype), len0=ids.shape[0], width=1,
                   ntype=ntype + 1).pack(), ids]


def simple_request(op: Op, req_id: int, payload: bytes | None = None) -> list:
    """Frames of an INFO/PING request, or SHUTDOWN with the token as ``payload`` bytes."""
    frames = [Header(op, req_id, len0=0 if payload is None else len(payload),
                     dtype0=0 if payload is None else 6).pack()]
    if payload is not None:
        frames.append(payload)
    return frames


def sample_reply(req_id: int, counts: np.ndarray, nbrs: np.ndarray, edge_rows=None) -> list:
    """Frames of a SAMPLE reply: counts int64 [m] and neighbours [e] (sum(counts) == e), then, when
    ``edge_rows`` ({name: [e, ...]}) is given, its JSON spec frame and one frame of rows per array."""
    h = Header(Op.SAMPLE, req_id, dtype0=dtype_code(counts.dtype), dtype1=dtype_code(nbrs.dtype),
               len0=counts.shape[0], len1=nbrs.shape[0], width=1)
    frames = [h.pack(), counts, nbrs]
    if edge_rows is not None:
        rows = {k: np.ascontiguousarray(v) for k, v in edge_rows.items()}
        spec = [{"name": k, "dtype": dtype_code(v.dtype), "shape": list(v.shape)} for k, v in rows.items()]
        frames += [json.dumps(spec).encode(), *rows.values()]
    return frames


def parse_edge_rows(frames: list, num_edges: int) -> dict[str, np.ndarray]:
    """The ``{name: rows [num_edges, ...]}`` frames after a SAMPLE reply's ``nbrs``; ProtocolError if malformed."""
    try:
        spec = json.loads(bytes(memoryview(frames[0].buffer if hasattr(frames[0], "buffer") else frames[0])))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"SAMPLE reply: edge spec frame is not JSON: {e}") from None
    if not isinstance(spec, list) or len(spec) != len(frames) - 1:
        raise ProtocolError(f"SAMPLE reply: edge spec lists {spec!r:.80} for {len(frames) - 1} row frames")
    out = {}
    for entry, frame in zip(spec, frames[1:]):
        if not isinstance(entry, dict) or not isinstance(entry.get("shape"), list) or not entry["shape"] \
                or entry["shape"][0] != num_edges or not all(isinstance(x, int) and x >= 0 for x in entry["shape"]):
            raise ProtocolError(f"SAMPLE reply: bad edge spec {entry!r:.80} for {num_edges} edges")
        width = int(np.prod(entry["shape"][1:], dtype=np.int64))
        rows = array_from_frame(frame, entry.get("dtype"), num_edges * width, 1, f"edge data {entry.get('name')!r}")
        out[str(entry.get("name"))] = rows.reshape(entry["shape"])
    return out


def features_reply(req_id: int, field: int, rows: np.ndarray) -> list:
    """Frames of a FEATURES reply: ``rows`` [m] or [m, width] (sent C-contiguous)."""
    width = rows.shape[1] if rows.ndim == 2 else 1
    h = Header(Op.FEATURES, req_id, field=field, dtype0=dtype_code(rows.dtype), len0=rows.shape[0], width=width)
    return [h.pack(), np.ascontiguousarray(rows)]


def error_reply(req_id: int, message: str) -> list:
    """Frames of an ERROR reply carrying ``message`` (UTF-8, cut to 4096 bytes)."""
    msg = message.encode("utf-8", "replace")[:4096]
    return [Header(Op.ERROR, req_id, dtype0=6, len0=len(msg)).pack(), msg]


# -------------------------------------------------------------- reply parsing
def parse_reply(frames: list, expect: Op) -> tuple[Header, list[np.ndarray]]:
    """Check a reply to an ``expect`` request; ERROR replies raise ServerError with the message."""
    from bgl.errors import ServerError

    h = unpack_header(frames[0])
    if h.op == Op.ERROR:
        msg = bytes(memoryview(frames[1].buffer if hasattr(frames[1], "buffer") else frames[1])) if len(frames) > 1 else b""
        raise ServerError(msg.decode("utf-8", "replace"))
    if h.op != expect:
        raise ProtocolError(f"expected a {expect.name} reply, got op {h.op}")
    if expect is Op.SAMPLE and h.flags & FLAG_TYPED:  # counts, nbrs, etypes (dtype code in field)[, edge data]
        if len(frames) < 4 or len(frames) == 5:
            raise ProtocolError(f"typed SAMPLE reply needs 4 frames (or more with edge data), got {len(frames)}")
        arrays = [array_from_frame(f, c, n, 1, w) for f, c, n, w in zip(
            frames[1:4], (h.dtype0, h.dtype1, h.field), (h.len0, h.len1, h.len1), ("counts", "nbrs", "etypes"))]
        return h, arrays + ([parse_edge_rows(frames[4:], h.len1)] if len(frames) > 4 else [])
    if expect is Op.SAMPLE:
        if len(frames) < 3 or len(frames) == 4:
            raise ProtocolError(f"SAMPLE reply needs 3 frames (or more with edge data), got {len(frames)}")
        arrays = [array_from_frame(frames[1], h.dtype0, h.len0, 1, "counts"),
                  array_from_frame(frames[2], h.dtype1, h.len1, 1, "nbrs")]
        if len(frames) > 3:
            arrays.append(parse_edge_rows(frames[3:], h.len1))
        return h, arrays
    if expect is Op.FEATURES:
        if len(frames) != 2:
            raise ProtocolError(f"FEATURES reply needs 2 frames, got {len(frames)}")
        return h, [array_from_frame(frames[1], h.dtype0, h.len0, h.width, "rows")]
    if expect is Op.INFO:
        if len(frames) != 2:
            raise ProtocolError(f"INFO reply needs 2 frames, got {len(frames)}")
        return h, [array_from_frame(frames[1], 6, h.len0, 1, "info")]
    return h, []
