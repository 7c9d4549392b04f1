"""The typed frames of the wire protocol (:mod:`.protocol`): per-relation fanouts and node types.

Typed SAMPLE (``FLAG_TYPED``, flag bit 4, to a typed store's server): the request is
``[header, seeds, fanouts]``, ``fanouts`` int64 [R] raw, one per relation id of the
server's schema (-1 all, 0 none); :func:`typed_fanouts` checks each is >= -1 and, given
the server's R, the length; the header's ``fanout`` is 0.  After the fanouts come the frames of an untyped
SAMPLE, in its order and checked as it checks them: the edge names frame (``FLAG_EDGE_NAMES``;
line 0 the weights or bool mask every relation draws by, :mod:`.sampling`, further lines the edge
arrays whose rows of the sampled edges the reply carries), then the excluded
edges (sorted unique int64 CSC positions of the server's part; ``dtype1`` / ``len1`` describe
it): typed link prediction's seed edges and their reverses, never drawn; last the LABOR frame
(``FLAG_LABOR``: LABOR-0 over every relation's spans).  The reply sets the flag
too and adds an ``etypes`` frame (each neighbour's relation id, dtype code in the
header's ``field``) after ``nbrs``, then the edge data frames of an untyped reply (JSON spec,
one frame of rows per array) when the request named edge arrays.  A server that predates typed graphs refuses the
request ("unknown flag bits 0x10"); an untyped server refuses it by name.

Typed FEATURES: the header's 16-bit ``ntype`` (formerly reserved and checked to be 0,
so an older server refuses it naming the field) is the node type index + 1; the ids
are global ids of that type on the server, the rows that type's own width and dtype.

A leaf module (no import of :mod:`.protocol`), so the protocol's parser imports it.
"""
from __future__ import annotations

import numpy as np

from bgl.errors import ProtocolError

FLAG_TYPED = 16  # bit 3 stays unknown to every version
FLAG_REPLACE = 1
FLAG_EDGE_NAMES = 2  # protocol.py's: this leaf module does not import it
FLAG_LABOR = 4
MAX_RELATIONS = 1 << 16


def typed_fanouts(frames: list, flags: int, fanout: int, num_relations: int | None) -> np.ndarray:
    """The int64 [R] fanouts of a typed SAMPLE request's frames; ProtocolError naming what is wrong."""
    names, labor = bool(flags & FLAG_EDGE_NAMES), bool(flags & FLAG_LABOR)
    need = 3 + names + labor
    if len(frames) not in (need, need + 1):
        raise ProtocolError(f"typed SAMPLE needs {need} frames (header, seeds, fanouts{', edge names' if names else ''}"
                            f"{', LABOR' if labor else ''}) and maybe the excluded edges, got {len(frames)}")
    if fanout:
        raise ProtocolError(f"typed SAMPLE: the header fanout must be 0 (fanouts travel per relation), got {fanout}")
    buf = memoryview(frames[2].buffer if hasattr(frames[2], "buffer") else frames[2])
    if buf.nbytes % 8 or not 0 < buf.nbytes // 8 <= MAX_RELATIONS:
        raise ProtocolError(f"typed SAMPLE: fanouts frame of {buf.nbytes} bytes is not 1..{MAX_RELATIONS} int64")
    fanouts = np.frombuffer(buf, dtype="<i8").astype(np.int64)  # a copy: aligned, and R is small
    if num_relations is not None and fanouts.shape[0] != num_relations:
        raise ProtocolError(f"typed SAMPLE: {fanouts.shape[0]} fanouts for a graph of {num_relations} relations")
    if int(fanouts.min()) < -1:
        r = int(np.argmin(fanouts))
        raise ProtocolError(f"typed SAMPLE: fanout of relation {r} must be >= -1 (-1 = all), got {int(fanouts[r])}")
    return fanouts
