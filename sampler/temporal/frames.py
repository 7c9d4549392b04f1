"""The temporal SAMPLE request of the wire protocol (:mod:`.protocol`) and a server's answer to it.

Temporal SAMPLE (``FLAG_TEMPORAL``, flag bit 5, alone) is exactly four frames::

    header   op SAMPLE, fanout, seed, field = strategy (0 uniform, 1 last),
             dtype0/len0 = the seeds' id dtype and count, dtype1 = int64 (2), len1 = len0
    seeds    int32/int64 [m] global ids the server owns
    times    int64 [m], each seed's time (the time of the subgraph it belongs to)
    name     UTF-8 name of the server's int64 edge array holding edge times (e.g. ``timestamp``), then,
             with node times, a NUL byte and the name of the store's int64 node array of times (the
             edge name may then be empty: node times only), then, with weights, a second NUL byte and
             the name of the edge array of weights (the node name may then be empty)

A typed store's servers take a fifth frame, ``fanouts`` int64 [R] (one per relation of its schema;
the header's fanout is then 0), and sample by :class:`~bgl.sampler.temporal.typed.TypedTemporalLayer`;
their reply's edge data has a third row frame, ``etype`` (int64 relation ids).

The reply is an ordinary SAMPLE reply with edge data (``counts``, ``nbrs``, then the spec and
two row frames): ``eid`` (int64, the drawn edges' CSC positions in the server's store) and
``time`` (int64, their times), so a client can number the edges and check them.  A server that
predates temporal sampling refuses the request ("unknown flag bits 0x20"), one that predates node
times or weights one naming them ("bad time array name").  Node times are the servers' own data, not sent: a
part filters by its stored copy of each in-edge's source time (``ndata/<name>.source.npy``, written
by ``bgl partition``), so it needs no other part's nodes, and a sample is the one the whole store's
node times give in process.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bgl.errors import ProtocolError

from .. import protocol as P

FLAG_TEMPORAL = 32
TIMES_CODE = 2  # int64
STRATEGY_NAMES = ("uniform", "last")  # the header's field
MAX_RELATIONS = 1 << 16  # a typed request's fanouts frame, at most (a schema's relation ids fit int16 or less)


@dataclass(frozen=True)
class TemporalRequest:
    """A validated temporal SAMPLE: header, read-only int64 seeds and times, strategy and time array name."""
    header: P.Header
    ids: np.ndarray
    times: np.ndarray
    strategy: str
    time_name: str | None
    fanouts: np.ndarray | None = None  # a typed request's int64 [R] relation fanouts
    node_time_name: str | None = None  # the store's node array of times
    prob_name: str | None = None  # the store's edge array of weights (drawn by weight among eligible edges)


def is_temporal(frame) -> bool:
    """Whether a request's header frame asks for temporal sampling (flag bit 5); False if unreadable."""
    mv = memoryview(frame.buffer if hasattr(frame, "buffer") else frame)
    return mv.nbytes == P.HEADER.size and bytes(mv[:4]) == P.MAGIC and bool(mv[6] & FLAG_TEMPORAL)


def temporal_request(req_id: int, seeds: np.ndarray, times: np.ndarray, fanout, strategy: str, seed: int,
                     time_name: str | None, node_time_name: str | None = None, prob_name: str | None = None) -> list:
    """Frames of a temporal SAMPLE for ``seeds`` (int32/int64 [m]) at ``times`` (int64 [m]); ``fanout``
    an int, or a typed store's int64 [R] relation fanouts (the fifth frame); ``node_time_name`` names
    the servers' node times (after a NUL in the name frame), ``prob_name`` their edge weights (after a
    second NUL)."""
    seeds = np.ascontiguousarray(seeds)
    typed = isinstance(fanout, np.ndarray)
    h = P.Header(P.Op.SAMPLE, req_id, FLAG_TEMPORAL, STRATEGY_NAMES.index(strategy), P.dtype_code(seeds.dtype),
                 TIMES_CODE, 0 if typed else int(fanout), int(seed) & ((1 << 64) - 1), seeds.shape[0], seeds.shape[0], 1)
    name = (time_name or "") + ("" if node_time_name is None and prob_name is None else "\0" + (node_time_name or ""))
    name += "" if prob_name is None else "\0" + prob_name
    frames = [h.pack(), seeds, np.ascontiguousarray(times, dtype="<i8"), name.encode("utf-8")]
    return frames + [np.ascontiguousarray(fanout, dtype="<i8")] if typed else frames


def parse_temporal_request(frames: list) -> TemporalRequest:
    """Validate a temporal SAMPLE's frames; ProtocolError naming the bad field or frame."""
    from bgl.schema import check_edge_name

    h = P.unpack_header(frames[0])
    if h.op != P.Op.SAMPLE or h.flags != FLAG_TEMPORAL:
        raise ProtocolError(f"temporal SAMPLE: op must be SAMPLE and flags exactly {FLAG_TEMPORAL:#x}, "
                            f"got op {h.op} flags {h.flags:#x}")
    if len(frames) not in (4, 5):
        raise ProtocolError(f"temporal SAMPLE needs 4 frames (header, seeds, times, name; a typed store's 5: "
                            f"fanouts), got {len(frames)}")
    if h.fanout < -1:
        raise ProtocolError(f"temporal SAMPLE: fanout must be >= -1 (-1 = all), got {h.fanout}")
    if h.field >= len(STRATEGY_NAMES):
        raise ProtocolError(f"temporal SAMPLE: unknown strategy code {h.field} (0 = uniform, 1 = last)")
    if h.dtype0 not in P.ID_CODES or h.dtype1 != TIMES_CODE:
        raise ProtocolError(f"temporal SAMPLE: ids must be int32/int64 and times int64, got codes {h.dtype0}/{h.dtype1}")
    if h.len0 != h.len1 or h.len0 > P.MAX_IDS:
        raise ProtocolError(f"temporal SAMPLE: {h.len0} seeds and {h.len1} times (at most {P.MAX_IDS}, one each)")
    if h.width != 1 or h.ntype:
        raise ProtocolError(f"temporal SAMPLE: width must be 1 and ntype 0, got {h.width}/{h.ntype}")
    ids = P.array_from_frame(frames[1], h.dtype0, h.len0, 1, "temporal SAMPLE seeds").astype(np.int64, copy=False)
    times = P.array_from_frame(frames[2], h.dtype1, h.len1, 1, "temporal SAMPLE times")
    name = bytes(memoryview(frames[3].buffer if hasattr(frames[3], "buffer") else frames[3]))
    if len(name) > P.MAX_EDGE_NAMES_BYTES:
        raise ProtocolError(f"temporal SAMPLE: time array name of {len(name)} bytes exceeds {P.MAX_EDGE_NAMES_BYTES}")
    try:
        parts = name.decode("utf-8").split("\0")
        if len(parts) > 3:
            raise ValueError(f"{len(parts)} NUL-separated names, at most 3 (edge times, node times, weights)")
        time_name = check_edge_name(parts[0]) if parts[0] or len(parts) == 1 else None
        node_time_name = check_edge_name(parts[1]) if len(parts) == 3 and parts[1] or len(parts) == 2 else None
        prob_name = check_edge_name(parts[2]) if len(parts) == 3 else None
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"temporal SAMPLE: bad time array name: {e}") from None
    ids.flags.writeable = False
    times.flags.writeable = False
    fanouts = None
    if len(frames) == 5:
        raw = memoryview(frames[4].buffer if hasattr(frames[4], "buffer") else frames[4])
        if raw.nbytes % 8 or not 0 < raw.nbytes // 8 <= MAX_RELATIONS:
            raise ProtocolError(f"temporal SAMPLE: a fanouts frame of {raw.nbytes} bytes is not 1..{MAX_RELATIONS} "
                                "int64 relation fanouts")
        fanouts = np.frombuffer(raw, dtype="<i8").astype(np.int64)
    return TemporalRequest(h, ids, times, STRATEGY_NAMES[h.field], time_name, fanouts, node_time_name, prob_name)


def layer_reply(req_id: int, counts, nbrs, eids, times, etypes=None) -> list:
    """A temporal SAMPLE's reply: a SAMPLE reply carrying the drawn edges' ``eid`` and ``time`` rows (and a
    typed store's ``etype``)."""
    rows = {"eid": eids, "time": times}
    if etypes is not None:
        rows["etype"] = etypes
    return P.sample_reply(req_id, counts, nbrs, rows)


def layer_for(store, parallel: bool = False):
    """The temporal layer of ``store``, typed or not (time orders built on first use): serial in a
    server's worker threads, ``parallel`` in a client's co-located reads."""
    if getattr(store, "is_typed", False):
        from .typed import TypedTemporalLayer

        return TypedTemporalLayer(store, parallel=parallel)
    from .sampling import TemporalLayer

    return TemporalLayer(store, parallel=parallel)


def serve(layer, frames: list) -> list:
    """A server's reply frames to a temporal SAMPLE, drawn by ``layer`` (a serial
    :class:`~bgl.sampler.temporal.sampling.TemporalLayer` over its store); ProtocolError / ValueError for a bad
    request (a time array of the wrong dtype too), which the server sends back as an ERROR reply."""
    req = parse_temporal_request(frames)
    h = req.header
    typed = hasattr(layer, "schema")
    if typed != (req.fanouts is not None):
        raise ProtocolError("temporal SAMPLE: a typed store takes relation fanouts (5 frames), an untyped one a "
                            "fanout (4 frames)")
    weights = {} if req.prob_name is None else {"prob_name": req.prob_name}  # a typed layer takes none
    try:
        counts, nbrs, eids, times, *etypes = layer(req.ids, req.times, req.fanouts if typed else h.fanout,
                                                   req.strategy, h.seed, time_name=req.time_name,
                                                   node_time_name=req.node_time_name, **weights)
    except TypeError as e:
        raise ValueError(str(e)) from None
    return layer_reply(h.req_id, counts, nbrs, eids, times, *etypes)
