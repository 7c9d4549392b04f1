"""Sockets to the graph servers that ride through a server restart.

:class:`ServerSockets` holds one DEALER per graph server, each with a
:class:`HandshakeWatch` on its socket monitor, and sends a call's requests to
all servers at once (:meth:`ServerSockets.call_all`).

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

The same monitor says *why* a socket never connected (a CURVE key the
server refuses, CURVE on one side only), for the error message.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Sequence

import zmq

from bgl.errors import ServerError, ServerUnavailable

from . import curve_keys
from . import protocol as P
from .endpoints import check_endpoint

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


def retry_timeout_from_env(default: float) -> float:
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


def dealer(ctx: zmq.Context, address: str, curve: curve_keys.ClientKeys | None = None):
    """(DEALER connected to ``address``, its :class:`HandshakeWatch`); the watch starts before the
    connect so it sees the first handshake."""
    check_endpoint(address, "bad graph server address")  # before zmq wraps a port past 65535
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


class ServerSockets:
    """One DEALER (and its :class:`HandshakeWatch`) per graph server, in ``addresses`` order.

    Not thread-safe (ZeroMQ sockets are not).  Costs one socket and one
    monitor socket per server.

    Parameters
    ----------
    addresses : ZeroMQ endpoints of the servers
    curve : :class:`~bgl.sampler.curve_keys.ClientKeys`, or None for plaintext
    timeout : seconds a call waits for a reply (and, at connect, for the first connection)
    retry_timeout : seconds a call keeps re-sending to a server whose connection dropped

    Raises
    ------
    ValueError : a malformed address (the sockets opened so far are closed)
    """

    def __init__(self, addresses: Sequence[str], curve: curve_keys.ClientKeys | None, timeout: float,
                 retry_timeout: float):
        self.timeout = timeout
        self.retry_timeout = retry_timeout
        self.curve = curve
        self.reconnects = 0  # sockets replaced after a server went away (for logs and tests)
        self._ctx = zmq.Context.instance()
        self.socks: list[zmq.Socket] = []
        self.watches: list[HandshakeWatch] = []
        self.addresses = list(addresses)
        try:
            for a in self.addresses:  # appended one by one so close() also frees them if a later one fails
                sock, watch = dealer(self._ctx, a, curve)
                self.socks.append(sock)
                self.watches.append(watch)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.socks)

    def reorder(self, order) -> None:
        """Put the servers (addresses, sockets, watches) in ``order`` (indices into the current order)."""
        self.addresses = [self.addresses[i] for i in order]
        self.socks = [self.socks[i] for i in order]
        self.watches = [self.watches[i] for i in order]

    def call_all(self, requests: list[tuple[int, list]], expect: P.Op, wait_connect: bool = False,
                 while_waiting: Callable[[], None] | None = None):
        """Send every (server index, frames) at once; return [(server index, arrays)] in request order.

        ``while_waiting`` (if given) runs once, after the first sends and before
        any reply is awaited: work of the caller's that overlaps the servers'.

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
                if self.watches[srv].drain() & zmq.EVENT_DISCONNECTED:
                    self.reconnect(srv)
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
                    self.socks[srv].send_multipart(frames, zmq.NOBLOCK, copy=False)
                except zmq.Again:  # IMMEDIATE: not connected (yet, or any more)
                    if srv not in lost:
                        lost[srv] = now + self.retry_timeout
                    if now > lost[srv]:
                        raise ServerUnavailable(self.addresses[srv], self.not_connected(srv, wait_connect)) \
                            from None
                    waiting.append(pos)
                    continue
                if srv in lost:  # back: give the restarted server a full timeout to answer
                    deadline = max(deadline, now + self.timeout)
                pending[P.peek_req_id(frames[0])] = pos
                _TRAFFIC[0] += _frames_nbytes(frames)
            unsent = waiting
            if while_waiting is not None:
                while_waiting, work = None, while_waiting
                work()
            if poller is None:
                poller, monitors = self.poller(servers)
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
                if self.watches[srv].drain() & zmq.EVENT_DISCONNECTED and not wait_connect:
                    # the server went away: nothing sent on this connection will be answered
                    again = [rid for rid, pos in pending.items() if requests[pos][0] == srv]
                    unsent += [pending.pop(rid) for rid in again]
                    self.reconnect(srv)
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

    def poller(self, servers) -> tuple[zmq.Poller, dict]:
        """A poller over the sockets of ``servers`` and their monitors; (poller, {monitor: server})."""
        poller = zmq.Poller()
        monitors = {}
        for srv in servers:
            poller.register(self.socks[srv], zmq.POLLIN)
            if srv < len(self.watches):
                monitors[self.watches[srv].mon] = srv
                poller.register(self.watches[srv].mon, zmq.POLLIN)
        return poller, monitors

    def not_connected(self, srv: int, wait_connect: bool) -> str:
        if wait_connect:
            return f"not connected within {self.timeout:g} s: {self.watches[srv].reason()}"
        return f"not connected; retried for {self.retry_timeout:g} s"

    def reconnect(self, srv: int) -> None:
        """Replace server ``srv``'s socket (and its monitor) with a fresh one to the same address."""
        self.reconnects += 1
        self.watches[srv].close()
        self.socks[srv].close(linger=0)
        self.socks[srv], self.watches[srv] = dealer(self._ctx, self.addresses[srv], self.curve)

    def close(self) -> None:
        """Close every socket and monitor (linger 0); safe to call twice."""
        for w in self.watches:
            w.close()
        self.watches = []
        for sock in self.socks:
            sock.close(linger=0)
        self.socks = []
