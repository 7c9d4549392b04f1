"""Wire protocol: header round trips and strict validation (in-process, no sockets)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgl.errors import ProtocolError, ServerError
from bgl.sampler import protocol as P
from bgl.sampler.server import GraphServer


@pytest.fixture(scope="module")
def server(random_store):
    """A GraphServer object used without sockets: ``handle(frames)`` is its whole request logic."""
    return GraphServer(random_store, token="secret")


def ask(server, frames, expect):
    return P.parse_reply(server.handle(frames), expect)


def error_of(server, frames) -> str:
    reply = server.handle(frames)
    h = P.unpack_header(reply[0])
    assert h.op == P.Op.ERROR, f"expected ERROR, got op {h.op}"
    return bytes(reply[1]).decode()


def test_header_roundtrip():
    h = P.Header(P.Op.SAMPLE, req_id=2**63 + 5, flags=1, dtype0=2, fanout=-1, seed=2**64 - 1, len0=7, width=1)
    assert P.unpack_header(h.pack()) == h
    assert P.peek_req_id(h.pack()) == 2**63 + 5


def test_valid_requests(server, random_store):
    seeds = np.array([4, 2, 9], np.int32)
    h, (counts, nbrs) = ask(server, P.sample_request(11, seeds, 3, False, 5), P.Op.SAMPLE)
    assert h.req_id == 11 and counts.dtype == np.int64 and nbrs.dtype == random_store.indices.dtype
    assert counts.tolist() == np.minimum(np.diff(random_store.indptr)[seeds], 3).tolist()
    _, (rows,) = ask(server, P.features_request(12, np.array([3, 1]), P.FIELD_FEAT), P.Op.FEATURES)
    assert np.array_equal(rows, np.asarray(random_store.feat)[[3, 1]])
    _, (labels,) = ask(server, P.features_request(13, np.array([3, 1]), P.FIELD_LABEL), P.Op.FEATURES)
    assert np.array_equal(labels, np.asarray(random_store.label)[[3, 1]])
    _, (info,) = ask(server, P.simple_request(P.Op.INFO, 14), P.Op.INFO)
    info = json.loads(bytes(info))
    assert (info["node_offset"], info["num_nodes"], info["feat_dim"], info["num_classes"]) == (0, 500, 16, 4)
    h, _ = ask(server, P.simple_request(P.Op.PING, 15), P.Op.PING)
    assert h.req_id == 15


def hdr(**kw) -> bytes:
    base = dict(op=P.Op.SAMPLE, req_id=9, dtype0=2, fanout=2, len0=1, width=1)
    base.update(kw)
    return P.Header(**base).pack()


ONE = np.array([1], np.int64).tobytes()


@pytest.mark.parametrize("frames, message", [
    ([b""], "header frame must be 60 bytes, got 0"),
    ([b"x" * 60], "bad magic"),
    ([hdr(version=9), ONE], "unsupported protocol version 9"),
    ([hdr(op=77), ONE], "unknown op 77"),
    ([hdr(op=P.Op.ERROR), ONE], "op ERROR is not a request"),
    ([hdr()], "SAMPLE needs 2 frames, got 1"),
    ([hdr(), ONE, ONE, ONE], "SAMPLE needs 2 frames, got 4"),
    ([hdr(), ONE, ONE], "excluded edges must be int64 (code 2), got code 0"),
    ([hdr(dtype1=2, len1=2), ONE, np.array([5, 3], np.int64).tobytes()], "sorted and unique"),
    ([hdr(dtype1=2, len1=2), ONE, np.array([3, 3], np.int64).tobytes()], "sorted and unique"),
    ([hdr(dtype1=2, len1=1), ONE, np.array([-4], np.int64).tobytes()], "excluded edge -4 is negative"),
    ([hdr(dtype1=2, len1=2), ONE, ONE], "frame has 8 bytes, header says 2"),
    ([hdr(dtype1=2, len1=1), ONE, np.array([10**9], np.int64).tobytes()], "excluded edges[0] = 1000000000 is outside"),
    ([hdr(len0=2), ONE], "frame has 8 bytes, header says 2"),
    ([hdr(len0=2**62), ONE], "exceed the per-request limit"),
    ([hdr(dtype0=3), ONE], "ids dtype code must be int32 (1) or int64 (2), got 3"),
    ([hdr(fanout=-2), ONE], "fanout must be >= -1 (-1 = all), got -2"),
    ([hdr(fanout=(1 << 21)), ONE], "fanout must be <="),
    ([hdr(flags=8), ONE], "unknown flag bits 0x8"),
    ([hdr(len1=1), ONE], "len1/dtype1 must be 0"),
    ([hdr(width=3), ONE], "width must be 1"),
    ([hdr(), np.array([500], np.int64).tobytes()], "seeds[0] = 500 is outside the owned id range [0, 500)"),
    ([hdr(), np.array([-7], np.int64).tobytes()], "seeds[0] = -7 is outside"),
    ([hdr(op=P.Op.FEATURES, fanout=0, field=2), ONE], "unknown field code 2"),
    ([hdr(op=P.Op.FEATURES, fanout=3), ONE], "flags/fanout/seed must be 0"),
    ([hdr(op=P.Op.PING, fanout=0, dtype0=0, len0=1, width=0)], "len0/width must be 0"),
    ([hdr(op=P.Op.SHUTDOWN, fanout=0, dtype0=6, len0=5, width=0), b"wrong"], "wrong token"),
    ([hdr(op=P.Op.SHUTDOWN, fanout=0, dtype0=6, len0=2, width=0), b"wrong"], "token frame must be uint8"),
])
def test_malformed_requests_get_clear_errors(server, frames, message):
    assert message in error_of(server, frames)
    assert not server._stop.is_set()


def test_a_sample_request_carries_the_edges_to_exclude(server, random_store):
    """The third frame's edges (CSC positions) are never drawn; everything else is sampled as without it."""
    indptr = np.asarray(random_store.indptr)
    seeds = np.array([4, 2, 9], np.int64)
    row = np.arange(indptr[2], indptr[3])
    exclude = row[:-1]  # all of node 2's in-edges but one
    frames = P.sample_request(3, seeds, -1, False, 5, exclude=exclude)
    assert len(frames) == 3 and P.parse_request(frames).exclude.tolist() == exclude.tolist()
    _, (counts, nbrs) = ask(server, frames, P.Op.SAMPLE)
    _, (plain_counts, plain_nbrs) = ask(server, P.sample_request(3, seeds, -1, False, 5), P.Op.SAMPLE)
    assert counts.tolist() == [plain_counts[0], 1, plain_counts[2]]
    assert nbrs[counts[0]] == random_store.indices[row[-1]]
    assert len(P.sample_request(3, seeds, 2, False, 5, exclude=np.empty(0, np.int64))) == 2


def test_huge_replace_request_is_refused(server):
    seeds = np.arange(500, dtype=np.int64)
    msg = error_of(server, P.sample_request(1, seeds, 1 << 20, True, 0))
    assert "more than the limit" in msg


def test_error_reply_raises_server_error(server):
    with pytest.raises(ServerError, match="unknown op 77"):
        ask(server, [hdr(op=77), ONE], P.Op.SAMPLE)
    with pytest.raises(ProtocolError, match="expected a FEATURES reply"):
        ask(server, P.simple_request(P.Op.PING, 1), P.Op.FEATURES)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=80), min_size=1, max_size=4))
def test_random_frames_never_crash(server, frames):
    reply = server.handle(frames)
    assert P.unpack_header(reply[0]).op in (P.Op.ERROR, P.Op.PING, P.Op.INFO)
    assert not server._stop.is_set()


def test_unsendable_dtype():
    with pytest.raises(ProtocolError, match="cannot be sent"):
        P.dtype_code(np.complex64)


@pytest.mark.parametrize("frames, message", [
    (lambda: P.sample_request(1, np.array([1]), 2, False, 0, "w")[:2], "SAMPLE needs 3 frames, got 2"),
    (lambda: P.sample_request(1, np.array([1]), 2, False, 0, "../etc")[:2] + [b"../etc"],
     "edge data name must be"),
    (lambda: P.sample_request(1, np.array([1]), 2, False, 0, None, ["a", "a"]), "edge arrays named twice"),
    (lambda: P.sample_request(1, np.array([1]), 2, False, 0, labor=(0, 1.5)), "LABOR mix must be -1"),
    (lambda: P.sample_request(1, np.array([1]), 2, True, 0, labor=(0, -1.0)), "LABOR samples without replacement"),
    (lambda: P.sample_request(1, np.array([1]), 2, False, 0, "w", labor=(0, -1.0)), "LABOR with edge weights"),
    (lambda: P.sample_request(1, np.array([1]), 2, False, 0, labor=(0, -1.0))[:2] + [b"short"],
     "LABOR frame must be 16 bytes"),
])
def test_edge_names_and_labor_frames_are_checked(frames, message):
    with pytest.raises(ProtocolError, match=message):
        P.parse_request(frames())


def test_edge_names_and_labor_round_trip():
    req = P.parse_request(P.sample_request(3, np.array([1, 2]), 4, False, 9, "w", ["f", "g"]))
    assert (req.weights, req.edge_data, req.labor) == ("w", ("f", "g"), None)
    req = P.parse_request(P.sample_request(3, np.array([1, 2]), 4, False, 9, None, ["f"], (77, 0.5)))
    assert (req.weights, req.edge_data, req.labor) == (None, ("f",), (77, 0.5))
    plain = P.sample_request(3, np.array([1, 2]), 4, False, 9)
    assert len(plain) == 2 and P.parse_request(plain).weights is None  # uniform requests unchanged


def test_excluded_edges_travel_with_the_edge_names_and_labor_frames():
    """One SAMPLE request may carry edge names, excluded edges and LABOR together; each is checked."""
    exclude = np.array([2, 5, 9], np.int64)
    frames = P.sample_request(3, np.array([1, 2]), 4, False, 9, None, ["f"], (7, 0.25), exclude=exclude)
    assert len(frames) == 5
    req = P.parse_request(frames)
    assert (req.edge_data, req.labor, req.exclude.tolist()) == (("f",), (7, 0.25), [2, 5, 9])
    req = P.parse_request(P.sample_request(3, np.array([1]), 4, False, 9, "w", exclude=exclude))
    assert (req.weights, req.exclude.tolist()) == ("w", [2, 5, 9])
    bad = P.sample_request(3, np.array([1]), 4, False, 9, None, ["f"], exclude=exclude)
    bad[3] = np.array([9, 5, 2], np.int64)
    with pytest.raises(ProtocolError, match="sorted and unique"):
        P.parse_request(bad)
    with pytest.raises(ProtocolError, match="SAMPLE needs 3 frames, got 5"):
        P.parse_request(bad + [b"x"])
