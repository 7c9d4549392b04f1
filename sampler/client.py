"""Sampling client: talks to one graph server per partition part, never hangs.

At connect the client asks every server for INFO, learns the contiguous id
range each one owns and checks that together they cover ``[0, num_nodes)``
exactly; "who owns id v" is then a ``searchsorted`` over the range bounds.

A layer of a multi-layer sample sends one SAMPLE per owning server, all in
flight at once on DEALER sockets, and matches the replies by request id.
Because a row's sample depends only on ``(seed, global id)``, the result is
the same however the graph is partitioned (and equals ``LocalSampler``).
Every wait has a deadline: a silent server raises ``ServerUnavailable``.

Riding through a server restart: each socket's monitor reports a dropped
connection (a killed server's TCP connection closes).  The client then
closes that DEALER and opens a fresh one to the same address (so no reply
to a request of the old connection can ever arrive), and re-sends that
server's outstanding requests, backing off while it is not connected yet,
until the server is back or ``retry_timeout`` seconds have passed since
it went away; then ``ServerUnavailable`` as before.  A re-sent request is
the same request (samples depend only on seed and node id), so the batch
is the same batch, and a call either returns all of it or raises.  The
normal path costs nothing extra: no additional round trip, one
non-blocking check of each monitor per call.

Security: with :class:`~bgl.sampler.curve_keys.ClientKeys` (by default read
from ``$BGL_CURVE_DIR``, which ``bgl launch`` sets for its trainers) every
socket is a CURVE client: it checks the server's public key and proves its
own, and traffic is encrypted.  A client a CURVE server does not admit
never connects; it raises ``ServerUnavailable`` within its timeout, saying
the handshake was refused.
"""
from __future__ import annotations

import itertools
import json
import os
import time
from typing import Sequence

import numpy as np
import torch
import zmq

from bgl.blocks import Block
from bgl.errors import ProtocolError, ServerError, ServerUnavailable

from . import _kernels as K
from . import curve_keys, multilayer, ops
from . import protocol as P

# ``curve=FROM_ENV`` (the default): CURVE keys from $BGL_CURVE_DIR when it is set, else plaintext.
FROM_ENV = "env"

_HANDSHAKE_EVENTS = (zmq.EVENT_CONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                     | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
                     | zmq.EVENT_DISCONNECTED)
# Environment variable (``bgl launch`` sets it for its trainers) with the default ``retry_timeout``.
ENV_RETRY_TIMEOUT = "BGL_SERVER_RETRY_TIMEOUT"
# Back-off between sends to a server that is not connected (yet): first and longest sleep.
RETRY_BACKOFF_S = (0.005, 0.2)

# Payload bytes every SamplingClient of this process sent to / received from graph servers
# (ZeroMQ frame bodies; ZMTP framing, CURVE overhead and TCP headers not included).  One
# process-wide pair so a trainer can read what its inline loader's clients moved in an epoch.
_TRAFFIC = [0, 0]


def traffic() -> dict[str, int]:
    """``{"sent": bytes, "received": bytes}`` this process's clients exchanged with servers so far."""
    return {"sent": _TRAFFIC[0], "received": _TRAFFIC[1]}


def _frames_nbytes(frames) -> int:
    """Body bytes of a multipart message (bytes, numpy arrays or ``zmq.Frame`` s)."""
    return sum(memoryview(f.buffer if isinstance(f, zmq.Frame) else f).nbytes for f in frames)


def _retry_timeout_from_env(default: float) -> float:
    """``$BGL_SERVER_RETRY_TIMEOUT`` as seconds (ValueError naming it if malformed), else ``default``."""
    text = os.environ.get(ENV_RETRY_TIMEOUT)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"${ENV_RETRY_TIMEOUT} must be a number of seconds, got {text!r}") from None
    if value < 0:
        raise ValueError(f"${ENV_RETRY_TIMEOUT} must be >= 0, got {text!r}")
    return value


def resolve_curve(curve) -> curve_keys.ClientKeys | None:
    """``FROM_ENV`` -> keys from ``$BGL_CURVE_DIR`` (or None); keys or None pass through."""
    if isinstance(curve, str) and curve == FROM_ENV:
        return curve_keys.client_keys_from_env()
    if curve is not None and not isinstance(curve, curve_keys.ClientKeys):
        raise TypeError(f"curve must be ClientKeys, None or {FROM_ENV!r}, got {type(curve).__name__}")
    return curve


def _dealer(ctx: zmq.Context, address: str, curve: curve_keys.ClientKeys | None = None):
    """(DEALER connected to ``address``, its :class:`HandshakeWatch`); the watch starts before the
    connect so it sees the first handshake."""
    sock = ctx.socket(zmq.DEALER)
    watch = None
    try:
        watch = HandshakeWatch(sock)
        if curve is not None:
            sock.curve_serverkey = curve.server_public
            sock.curve_publickey = curve.pair.public
            sock.curve_secretkey = curve.pair.secret
        sock.linger = 0
        # Queue nothing for a server that is not connected: a send fails fast instead
        # of waiting for a server that may never come back.
        sock.setsockopt(zmq.IMMEDIATE, 1)
        try:
            sock.connect(address)
        except zmq.ZMQError as e:  # e.g. "tcp://host:abc": zmq's own message does not name the address
            raise ValueError(f"bad graph server address {address!r}: {e}") from e
    except BaseException:
        if watch is not None:
            watch.close()
        sock.close(linger=0)  # do not leak the socket
        raise
    return sock, watch


class HandshakeWatch:
    """Watches one socket's connection events, to say *why* it never connected.

    A CURVE server that refuses a client's key, or a plaintext/CURVE
    mismatch, looks to the client like a server that never answers; the
    socket monitor tells these apart for the error message.
    """

    def __init__(self, sock: zmq.Socket):
        self.sock = sock
        self.mon = sock.get_monitor_socket(_HANDSHAKE_EVENTS)
        self.seen = 0

    def drain(self) -> int:
        """OR of the events that arrived since the last drain (also kept in ``seen``)."""
        from zmq.utils.monitor import recv_monitor_message

        new = 0
        while self.mon.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            try:
                new |= recv_monitor_message(self.mon, zmq.NOBLOCK)["event"]
            except zmq.ZMQError:  # zmq.Again included
                break
        self.seen |= new
        return new

    def reason(self) -> str:
        """Why the socket is not connected, from the events seen so far."""
        self.drain()
        if self.seen & zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            return ("the server refused this client's CURVE key (authentication failed: the key is not "
                    "on the server's allow-list)")
        if self.seen & (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
            return ("the security handshake failed (CURVE on one side only, or the wrong server public "
                    "key)")
        if self.seen & zmq.EVENT_CONNECTED and not self.seen & zmq.EVENT_HANDSHAKE_SUCCEEDED:
            return ("a TCP connection was made but the security handshake never completed (CURVE on "
                    "one side only, the wrong server public key, or a client key the server does not "
                    "admit)")
        return "could not connect"

    def close(self) -> None:
        try:
            self.sock.disable_monitor()
        except zmq.ZMQError:
            pass
        self.mon.close(linger=0)


# INFO keys the client relies on (the server sends more)
INFO_KEYS = ("node_offset", "num_nodes", "global_num_nodes", "feat_dim", "feat_dtype", "num_classes")


def _parse_info(address: str, payload) -> dict:
    """The INFO reply of the server at ``address`` as a dict; ProtocolError if it is not JSON
    or lacks one of :data:`INFO_KEYS`."""
    try:
        info = json.loads(bytes(payload).decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"server {address} sent an INFO reply that is not JSON: {e}") from None
    if not isinstance(info, dict):
        raise ProtocolError(f"server {address} sent an INFO reply that is not a JSON object: {info!r:.80}")
    missing = [k for k in INFO_KEYS if k not in info]
    if missing:
        raise ProtocolError(f"server {address} sent an INFO reply without {', '.join(map(repr, missing))}")
    return info


def _request(address: str, frames: list, expect: P.Op, timeout: float, curve=FROM_ENV):
    """One request on a fresh socket (for ping/shutdown helpers)."""
    ctx = zmq.Context.instance()
    sock, watch = _dealer(ctx, address, resolve_curve(curve))
    try:
        deadline = time.monotonic() + timeout
        while True:  # IMMEDIATE: wait for the connection within the deadline, then send
            try:
                sock.send_multipart(frames, zmq.NOBLOCK)
                break
            except zmq.Again:
                if time.monotonic() > deadline:
                    raise ServerUnavailable(address, f"not connected within {timeout} s: "
                                                     f"{watch.reason()}") from None
                time.sleep(0.005)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(max(1, int(left * 1000))):
                raise ServerUnavailable(address, f"no reply within {timeout} s")
            reply = sock.recv_multipart()
            if P.peek_req_id(reply[0]) == P.peek_req_id(frames[0]):
                return P.parse_reply(reply, expect)
    finally:
        watch.close()
        sock.close()


def ping(address: str, timeout: float = 1.0, curve=FROM_ENV) -> bool:
    """True if a graph server answers PING at ``address`` within ``timeout`` seconds
    (``curve``: client keys, None for plaintext, default from ``$BGL_CURVE_DIR``)."""
    try:
        _request(address, P.simple_request(P.Op.PING, 1), P.Op.PING, timeout, curve)
        return True
    except (ServerUnavailable, ProtocolError, ServerError):
        return False


def shutdown(address: str, token: str, timeout: float = 2.0, curve=FROM_ENV) -> None:
    """Ask the server at ``address`` to stop; ServerError if the token is wrong."""
    _request(address, P.simple_request(P.Op.SHUTDOWN, 1, token.encode()), P.Op.SHUTDOWN, timeout, curve)


class SamplingClient:
    """Samples blocks and fetches features from graph servers (one per partition part).

    Same API as :class:`bgl.sampler.LocalSampler`.  Not thread-safe (ZeroMQ
    sockets are not): use one client per thread or process.

    Parameters
    ----------
    addresses : ZeroMQ endpoints of all graph servers (any order)
    timeout : seconds any single call may wait for a server before ServerUnavailable
    retry_timeout : seconds a call keeps re-sending to a server whose connection dropped
        (e.g. it was killed and is being restarted) before ServerUnavailable; default
        ``$BGL_SERVER_RETRY_TIMEOUT`` (``bgl launch`` sets it) or else ``timeout``
    curve : :class:`~bgl.sampler.curve_keys.ClientKeys` for CURVE servers, None for
        plaintext; by default the keys in ``$BGL_CURVE_DIR`` if set (``bgl launch``
        sets it), else plaintext

    Raises
    ------
    ValueError : a malformed address (e.g. ``tcp://host:abc``)
    CurveKeyError : ``$BGL_CURVE_DIR`` is set but its key files are missing or bad
    ServerUnavailable : a server does not answer INFO in time (also: it refused
        this client's CURVE key; the message says so)
    ProtocolError : a malformed INFO reply, or the servers' id ranges do not tile ``[0, num_nodes)``
    """

    def __init__(self, addresses: Sequence[str] | str, timeout: float = 5.0, curve=FROM_ENV,
                 retry_timeout: float | None = None):
        if isinstance(addresses, str):
            addresses = [a for a in addresses.split(",") if a]
        if not addresses:
            raise ValueError("SamplingClient needs at least one server address")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.timeout = float(timeout)
        if retry_timeout is None:
            retry_timeout = _retry_timeout_from_env(self.timeout)
        if retry_timeout < 0:
            raise ValueError(f"retry_timeout must be >= 0, got {retry_timeout}")
        self.retry_timeout = float(retry_timeout)
        self.reconnects = 0  # sockets replaced after a server went away (for logs and tests)
        self.curve = resolve_curve(curve)
        self._ids = itertools.count(1)
        self._ctx = zmq.Context.instance()
        self._socks: list[zmq.Socket] = []
        self._watches: list[HandshakeWatch] = []
        self.addresses: list[str] = []
        try:
            for a in addresses:  # appended one by one so close() also frees them if a later one fails
                sock, watch = _dealer(self._ctx, a, self.curve)
                self._socks.append(sock)
                self._watches.append(watch)
            self.addresses = list(addresses)
            infos = self._call_all([(i, P.simple_request(P.Op.INFO, next(self._ids)))
                                    for i in range(len(self._socks))], P.Op.INFO, wait_connect=True)
            # the watches stay: their monitors report a connection that drops later
            self.infos = [_parse_info(self.addresses[srv], arrs[0]) for srv, arrs in infos]
            order = np.argsort([info["node_offset"] for info in self.infos], kind="stable")
            self.addresses = [self.addresses[i] for i in order]
            self._socks = [self._socks[i] for i in order]
            self._watches = [self._watches[i] for i in order]
            self.infos = [self.infos[i] for i in order]
            self.bounds = np.array([info["node_offset"] for info in self.infos]
                                   + [self.infos[-1]["node_offset"] + self.infos[-1]["num_nodes"]], np.int64)
            self._check_ranges()
            # dense relabel markers over the global id space (hash fallback for huge ones);
            # it also rejects neighbour ids a server sent outside [0, num_nodes)
            self._relabel = ops.Relabeler(int(self.bounds[-1]))
        except BaseException:
            self.close()  # sockets are released here, not left to __del__
            raise

    def _check_ranges(self) -> None:
        total = self.infos[0]["global_num_nodes"]
        for addr, info in zip(self.addresses, self.infos):
            if info["global_num_nodes"] != total:
                raise ProtocolError(f"server {addr} serves a graph of {info['global_num_nodes']} nodes, "
                                    f"{self.addresses[0]} one of {total}")
        ends = self.bounds[:-1] + np.array([i["num_nodes"] for i in self.infos])
        if self.bounds[0] != 0 or self.bounds[-1] != total or np.any(ends[:-1] != self.bounds[1:-1]):
            ranges = [f"{a}: [{s}, {e})" for a, s, e in zip(self.addresses, self.bounds[:-1], ends)]
            raise ProtocolError(f"server id ranges do not tile [0, {total}): {'; '.join(ranges)}")
        for key in ("feat_dim", "feat_dtype", "num_classes"):
            values = {info[key] for info in self.infos}
            if len(values) > 1:
                raise ProtocolError(f"servers disagree on {key}: {sorted(map(str, values))}")

    # ------------------------------------------------------------------ transport
    def _call_all(self, requests: list[tuple[int, list]], expect: P.Op, wait_connect: bool = False):
        """Send every (server index, frames) at once; return [(server index, arrays)] in request order.

        A server whose connection drops (or that is not connected) gets its
        requests re-sent on a fresh socket until it answers or
        ``retry_timeout`` passes (see the module docstring); ``wait_connect``
        (at connect time) instead waits ``timeout`` for the first connection.
        """
        now = time.monotonic()
        deadline = now + self.timeout  # for replies to what was sent
        servers = {srv for srv, _ in requests}
        # server -> when we stop trying to (re)connect to it: set when it is first found not
        # connected or seen to go away in this call
        lost: dict[int, float] = {srv: deadline for srv in servers} if wait_connect else {}
        if not wait_connect:
            for srv in servers:  # a connection that dropped since the last call: start afresh now
                if self._watches[srv].drain() & zmq.EVENT_DISCONNECTED:
                    self._reconnect(srv)
        unsent = list(range(len(requests)))
        pending: dict[int, int] = {}  # req id -> position in requests
        results: list = [None] * len(requests)
        backoff = RETRY_BACKOFF_S[0]
        poller = None
        while unsent or pending:
            now = time.monotonic()
            waiting = []
            for pos in unsent:
                srv, frames = requests[pos]
                try:
                    self._socks[srv].send_multipart(frames, zmq.NOBLOCK, copy=False)
                except zmq.Again:  # IMMEDIATE: not connected (yet, or any more)
                    if srv not in lost:
                        lost[srv] = now + self.retry_timeout
                    if now > lost[srv]:
                        raise ServerUnavailable(self.addresses[srv], self._not_connected(srv, wait_connect)) \
                            from None
                    waiting.append(pos)
                    continue
                if srv in lost:  # back: give the restarted server a full timeout to answer
                    deadline = max(deadline, now + self.timeout)
                pending[P.peek_req_id(frames[0])] = pos
                _TRAFFIC[0] += _frames_nbytes(frames)
            unsent = waiting
            if poller is None:
                poller, monitors = self._poller(servers)
            left = deadline - time.monotonic()
            wait = min(backoff, max(0.0, min(lost[requests[pos][0]] for pos in unsent) - time.monotonic())) \
                if unsent else left
            if unsent:
                backoff = min(backoff * 2, RETRY_BACKOFF_S[1])
            events = dict(poller.poll(max(0, int(wait * 1000)))) if wait > 0 else {}
            if not events and not unsent:
                if time.monotonic() < deadline:
                    continue
                srv = requests[next(iter(pending.values()))][0]
                if srv in lost:
                    raise ServerUnavailable(self.addresses[srv], f"went away and sent no reply within "
                                                                 f"{self.retry_timeout:g} s")
                raise ServerUnavailable(self.addresses[srv], f"no reply within {self.timeout} s")
            for mon, srv in monitors.items():
                if mon not in events:
                    continue
                if self._watches[srv].drain() & zmq.EVENT_DISCONNECTED and not wait_connect:
                    # the server went away: nothing sent on this connection will be answered
                    again = [rid for rid, pos in pending.items() if requests[pos][0] == srv]
                    unsent += [pending.pop(rid) for rid in again]
                    self._reconnect(srv)
                    lost[srv] = time.monotonic() + self.retry_timeout
                    backoff = RETRY_BACKOFF_S[0]
                    poller = None
            if poller is None:  # a socket was replaced: do not read from the closed one
                continue
            for sock in events:
                if sock in monitors:
                    continue
                while True:
                    try:
                        reply = sock.recv_multipart(zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        break
                    _TRAFFIC[1] += _frames_nbytes(reply)
                    pos = pending.pop(P.peek_req_id(reply[0]), None)
                    if pos is None:
                        continue  # a late reply to a request that already timed out
                    srv = requests[pos][0]
                    try:
                        h, arrays = P.parse_reply(reply, expect)
                    except ServerError as e:
                        raise ServerError(f"{self.addresses[srv]}: {e}") from None
                    results[pos] = (srv, arrays)
        return results

    def _poller(self, servers) -> tuple[zmq.Poller, dict]:
        """A poller over the sockets of ``servers`` and their monitors; (poller, {monitor: server})."""
        poller = zmq.Poller()
        monitors = {}
        for srv in servers:
            poller.register(self._socks[srv], zmq.POLLIN)
            if srv < len(self._watches):
                monitors[self._watches[srv].mon] = srv
                poller.register(self._watches[srv].mon, zmq.POLLIN)
        return poller, monitors

    def _not_connected(self, srv: int, wait_connect: bool) -> str:
        if wait_connect:
            return f"not connected within {self.timeout:g} s: {self._watches[srv].reason()}"
        return f"not connected; retried for {self.retry_timeout:g} s"

    def _reconnect(self, srv: int) -> None:
        """Replace server ``srv``'s socket (and its monitor) with a fresh one to the same address."""
        self.reconnects += 1
        self._watches[srv].close()
        self._socks[srv].close(linger=0)
        self._socks[srv], self._watches[srv] = _dealer(self._ctx, self.addresses[srv], self.curve)

    def owner(self, ids: np.ndarray) -> np.ndarray:
        """int64 index (into ``addresses``) of the server owning each global id; ids are checked."""
        ops.check_range(ids, 0, int(self.bounds[-1]))
        return np.searchsorted(self.bounds, ids, side="right") - 1

    def _split(self, ids: np.ndarray):
        """(order, [(server, start, end)]): ids[order] grouped by owner, contiguous per server."""
        own = self.owner(ids)
        order = np.argsort(own, kind="stable")
        starts = np.searchsorted(own[order], np.arange(len(self._socks) + 1))
        groups = [(s, int(starts[s]), int(starts[s + 1])) for s in range(len(self._socks)) if starts[s + 1] > starts[s]]
        return order, groups

    # ------------------------------------------------------------------ sampling
    def sample_layer(self, dst: np.ndarray, fanout: int, replace: bool, seed: int):
        """One layer across servers: (counts int64 [m], nbrs [e] in dst order, None)."""
        fanout = ops.check_fanout(fanout)
        order, groups = self._split(dst)
        sorted_ids = dst[order]
        reqs = [(s, P.sample_request(next(self._ids), sorted_ids[a:b], fanout, replace, seed)) for s, a, b in groups]
        replies = self._call_all(reqs, P.Op.SAMPLE)
        for (s, a, b), (_, (counts, _nb)) in zip(groups, replies):
            if counts.shape[0] != b - a:
                raise ProtocolError(f"{self.addresses[s]} returned {counts.shape[0]} counts for {b - a} seeds")
        if len(groups) == 1 and np.array_equal(order, np.arange(order.shape[0])):
            counts, nbrs = replies[0][1]
            return counts, nbrs, None  # int32 or int64 as sent; the relabel takes both
        sorted_counts = np.concatenate([r[1][0] for r in replies])
        sorted_nbrs = np.concatenate([r[1][1].astype(np.int64, copy=False) for r in replies])
        sorted_indptr = np.zeros(order.shape[0] + 1, np.int64)
        np.cumsum(sorted_counts, out=sorted_indptr[1:])
        if sorted_indptr[-1] != sorted_nbrs.shape[0]:
            raise ProtocolError(f"servers returned {sorted_nbrs.shape[0]} neighbours for counts summing to {sorted_indptr[-1]}")
        # back to dst order: dst position i sits at sorted position inv[i]
        inv = np.empty_like(order)
        inv[order] = np.arange(order.shape[0])
        counts = sorted_counts[inv]
        out_indptr = np.zeros(order.shape[0] + 1, np.int64)
        np.cumsum(counts, out=out_indptr[1:])
        nbrs = np.empty(sorted_nbrs.shape[0], np.int64)
        K.permute_segments(sorted_indptr, sorted_nbrs, inv, out_indptr, nbrs)
        return counts, nbrs, None

    def sample_blocks(self, seeds, fanouts: Sequence[int], replace: bool = False,
                      seed: int | None = None) -> list[Block]:
        """Blocks for ``seeds`` (global ids, unique); ``blocks[-1].dst_ids == seeds``."""
        return multilayer.sample_blocks(seeds, fanouts, replace, seed, self.sample_layer, self._relabel)

    # ------------------------------------------------------------------ features
    def _fetch_plan(self, ids, field: int):
        """(ids, order, groups, requests, out) for one field: the requests and an empty result array."""
        ids = ops.as_ids(ids)
        order, groups = self._split(ids)
        sorted_ids = ids[order]
        reqs = [(s, P.features_request(next(self._ids), sorted_ids[a:b], field)) for s, a, b in groups]
        if field == P.FIELD_FEAT:
            dim = self.feat_dim
            if dim == 0:
                raise ValueError(f"the servers {self.addresses} have no features")
            out = np.empty((ids.shape[0], dim), np.dtype(self.infos[0]["feat_dtype"]))
        else:
            if not self.infos[0].get("has_label", True):
                raise ValueError(f"the servers {self.addresses} have no labels")
            out = np.empty(ids.shape[0], np.int64)
        return order, groups, reqs, out

    def _fetch_fill(self, order, groups, replies, out: np.ndarray) -> np.ndarray:
        row_size = int(np.prod(out.shape[1:], dtype=np.int64))
        for (s, a, b), (_, (rows,)) in zip(groups, replies):
            if rows.size != (b - a) * row_size:
                raise ProtocolError(f"{self.addresses[s]} returned {rows.size} values for {b - a} rows of {row_size}")
            out[order[a:b]] = rows.reshape((b - a,) + out.shape[1:])
        return out

    def _fetch(self, ids, field: int) -> np.ndarray:
        order, groups, reqs, out = self._fetch_plan(ids, field)
        return self._fetch_fill(order, groups, self._call_all(reqs, P.Op.FEATURES), out)

    def fetch_features(self, ids) -> torch.Tensor:
        """Feature rows [n, feat_dim] of global ``ids``, in the order given."""
        return torch.from_numpy(self._fetch(ids, P.FIELD_FEAT))

    def fetch_labels(self, ids) -> torch.Tensor:
        """int64 [n] labels of global ``ids``, in the order given."""
        return torch.from_numpy(self._fetch(ids, P.FIELD_LABEL))

    def fetch_features_and_labels(self, feat_ids, label_ids) -> tuple[torch.Tensor, torch.Tensor]:
        """``(fetch_features(feat_ids), fetch_labels(label_ids))`` in one round trip.

        Both fields' requests are in flight together, so a training batch pays one
        server round trip for its input features and its seeds' labels instead of two
        (profiled on Slashdot, batch 1024: the separate label fetch cost ~5.7 ms a batch,
        a third of the feature fetch; see bench/results/distdgl.md).
        """
        f_order, f_groups, f_reqs, feats = self._fetch_plan(feat_ids, P.FIELD_FEAT)
        l_order, l_groups, l_reqs, labels = self._fetch_plan(label_ids, P.FIELD_LABEL)
        replies = self._call_all(f_reqs + l_reqs, P.Op.FEATURES)
        self._fetch_fill(f_order, f_groups, replies[:len(f_reqs)], feats)
        self._fetch_fill(l_order, l_groups, replies[len(f_reqs):], labels)
        return torch.from_numpy(feats), torch.from_numpy(labels)

    # ---------------------------------------------------------------- properties
    @property
    def num_nodes(self) -> int:
        """Global number of nodes (end of the last server's id range)."""
        return int(self.bounds[-1])

    @property
    def feat_dim(self) -> int:
        """Feature columns (0 when the servers have no features)."""
        return int(self.infos[0]["feat_dim"])

    @property
    def feat_dtype(self) -> torch.dtype | None:
        """torch dtype of the feature rows, or None without features."""
        dt = self.infos[0]["feat_dtype"]
        return None if dt is None else torch.from_numpy(np.empty(0, np.dtype(dt))).dtype

    @property
    def num_classes(self) -> int:
        """Number of label classes the servers report."""
        return int(self.infos[0]["num_classes"])

    def close(self) -> None:
        """Close every server socket (linger 0); safe to call twice."""
        for w in getattr(self, "_watches", ()):
            w.close()
        self._watches = []
        for sock in getattr(self, "_socks", ()):
            sock.close(linger=0)
        self._socks = []

    def __enter__(self) -> "SamplingClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
