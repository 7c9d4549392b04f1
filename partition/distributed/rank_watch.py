"""Rank 0 watches every other rank of a ``--distributed`` job over a TCP connection of bgl's own, so
that a rank that dies (SIGKILL, the OOM killer, a host's kernel ending it) ends the whole job at once,
with one line from bgl naming the rank, its pid and its host.

Why not leave it to MPI: a rank whose peer died waits in its collective until MPI's runtime aborts
the job, and that abort and its report are the runtime's own.  Open MPI 4's daemons race the dead
rank's hang-up: its report was seen not to name the rank, its daemon to segfault
(``orte_rml_oob_send_buffer_nb``), or the job to linger 65 s (issue #56).

How: once the arguments are checked, rank 0 listens on a TCP port of all its IPv4 addresses and
broadcasts the port, its addresses and a random token over MPI; every other rank connects to the
first address that answers with that token (so a port of another host that happens to be open is
never taken for rank 0) and says who it is (rank, pid, host name).  When a process dies its kernel
closes its sockets, so:

- a connection to rank 0 that closes before its rank said ``done`` (or ``failed``: it printed its
  own error) is a rank that died: rank 0 prints the line, tells every rank to end and leaves with
  status 1 (``os._exit``; its watcher process still removes the work directory);
- a rank told to end, or whose connection to rank 0 closes unannounced (rank 0 died: the rank
  prints the line naming rank 0), leaves the same way.

The job ends within milliseconds of the death, whatever MPI's runtime does, and ``mpirun``/``srun``
return non-zero.  Not seen: a host that vanishes without its kernel closing the connections (power
lost, cable cut); MPI's runtime is then the only judge.  A rank that cannot reach rank 0 over TCP
is logged and left to MPI alone.  Nothing read from a socket is unpickled: fixed-size integers and
a UTF-8 host name.
"""
from __future__ import annotations

import contextlib
import logging
import os
import secrets
import selectors
import socket
import struct
import sys
import threading
import time

import numpy as np

from .exchange import bcast_text

log = logging.getLogger(__name__)

TOKEN_BYTES = 16
HELLO = struct.Struct("<iiqH")  # rank, pid, connection nonce, length of the UTF-8 host name that follows
CONNECT_SECONDS = 2.0  # per address of rank 0's a rank tries
HELLO_SECONDS = 30.0  # a connection must say who it is, and rank 0 answer, within this (loaded hosts)
DONE, FAILED, END = b"D", b"F", b"E"


def _addresses() -> list[str]:
    """This host's IPv4 addresses, loopback last (a rank on another host reaches rank 0 through the others)."""
    import psutil

    found = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET]
    return sorted(set(found), key=lambda a: (a.startswith("127."), a))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed during the greeting")
        buf += chunk
    return buf


def _hello(rank: int, nonce: int) -> bytes:
    host = socket.gethostname().encode()
    return HELLO.pack(rank, os.getpid(), nonce, len(host)) + host


def _read_hello(sock: socket.socket) -> tuple[int, int, int, str]:
    rank, pid, nonce, n = HELLO.unpack(_recv_exact(sock, HELLO.size))
    return rank, pid, nonce, _recv_exact(sock, n).decode(errors="replace")


def _send(sock: socket.socket, byte: bytes) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(byte, socket.MSG_NOSIGNAL)


def _leave(line: str | None) -> None:
    """End this rank now (from the watch thread): the line first, if any, then status 1."""
    if line:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
            os.write(2, (line + "\n").encode())  # one write: mpirun's own text cannot land inside the line
    os._exit(1)


class RankWatch:
    """This rank's side of the watch; :meth:`start` is collective, :meth:`close` / :meth:`failed`
    are this rank's own.

    Parameters
    ----------
    comm : mpi4py communicator of the job's ranks.
    command : the ``bgl`` command the line names (``partition``, ``ingest``).
    """

    def __init__(self, comm, command: str):
        self.rank, self.size, self.command = comm.Get_rank(), comm.Get_size(), command
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        # rank 0: conn -> (rank, pid, host, address, nonce), and what each conn said
        self._peers: dict[socket.socket, tuple[int, int, str, str, int]] = {}
        self._said: dict[socket.socket, bytes] = {}
        self._watched: dict[int, int] | None = None  # rank 0, once armed: rank -> the nonce of its connection
        self._conn: socket.socket | None = None  # other ranks: the connection to rank 0
        self._nonce = secrets.randbits(62) + 1
        self._root = (0, 0, "?", "?")  # other ranks: rank 0's pid, host, address

    @classmethod
    def start(cls, comm, command: str) -> "RankWatch":
        """Connect every rank to rank 0 (collective) and start watching; a one-rank job watches nothing."""
        watch = cls(comm, command)
        if watch.size > 1:
            watch._start(comm)
        return watch

    # -- setting up ---------------------------------------------------------------------------
    def _start(self, comm) -> None:
        listener = None
        if self.rank == 0:
            listener = socket.create_server(("0.0.0.0", 0), backlog=min(self.size, socket.SOMAXCONN))
            token = self._token = secrets.token_bytes(TOKEN_BYTES)
            self._port = listener.getsockname()[1]
            self._thread = threading.Thread(target=self._serve, args=(listener, token), daemon=True,
                                            name="bgl-rank-watch")
            self._thread.start()
            offer = " ".join([token.hex(), str(self._port), *_addresses()])
        else:
            offer = ""
        token_hex, port, *addresses = bcast_text(comm, offer, 0).split()
        if self.rank != 0:
            self._connect(bytes.fromhex(token_hex), addresses, int(port))
        nonces = np.empty(self.size, np.int64)
        comm.Allgather(np.array([self._nonce if self._conn is not None else 0], np.int64), nonces)
        if self.rank == 0:
            # armed: from here on the closing of the one connection each rank says it holds is a death.
            # A rank that gave up a greeting (rank 0 answered too late) and tried another address
            # leaves a connection rank 0 may still take: its nonce is not the rank's, so it is no death
            self._watched = {r: int(n) for r, n in enumerate(nonces) if r > 0 and n != 0}
            missing = [r for r in range(1, self.size) if nonces[r] == 0]
            if missing:
                log.warning("rank watch: ranks %s could not reach rank 0 over TCP; only MPI watches them", missing)
        elif self._conn is not None:
            self._thread = threading.Thread(target=self._follow, daemon=True, name="bgl-rank-watch")
            self._thread.start()

    def _connect(self, token: bytes, addresses: list[str], port: int) -> None:
        """Connect to the first of rank 0's addresses that answers with ``token``."""
        for address in addresses:
            try:
                sock = socket.create_connection((address, port), timeout=CONNECT_SECONDS)
            except OSError:
                continue
            try:
                sock.settimeout(HELLO_SECONDS)
                sock.sendall(token + _hello(self.rank, self._nonce))
                if _recv_exact(sock, TOKEN_BYTES) != token:
                    raise ConnectionError("not rank 0")
                _, pid, _, host = _read_hello(sock)
                sock.settimeout(None)
            except (OSError, ValueError, struct.error):
                sock.close()
                continue
            self._conn, self._root = sock, (0, pid, host, address)
            return
        log.warning("rank watch: rank %d reached none of rank 0's addresses %s on port %d", self.rank, addresses, port)

    # -- rank 0 ------------------------------------------------------------------------------
    def _serve(self, listener: socket.socket, token: bytes) -> None:
        """Rank 0's thread: greet the ranks as they connect, then watch their connections."""
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ)
        try:
            while not self._stopping.is_set():
                for key, _ in sel.select(timeout=0.1):
                    if key.fileobj is listener:
                        self._greet(listener, token, sel)
                    else:
                        self._heard(key.fileobj, sel)
        finally:
            sel.close()
            listener.close()

    def _greet(self, listener: socket.socket, token: bytes, sel) -> None:
        conn, (address, _) = listener.accept()
        try:
            conn.settimeout(HELLO_SECONDS)
            if _recv_exact(conn, TOKEN_BYTES) != token:
                raise ConnectionError("wrong token")
            rank, pid, nonce, host = _read_hello(conn)
            # known before the rank hears back: its start (and so the collective after it) may end as soon
            # as it has the answer, and then every rank's greeting must be on record here
            self._peers[conn] = (rank, pid, host, address, nonce)
            conn.sendall(token + _hello(0, 0))
            conn.settimeout(None)
        except (OSError, ValueError, struct.error):
            self._peers.pop(conn, None)
            conn.close()
            return
        sel.register(conn, selectors.EVENT_READ)

    def _heard(self, conn: socket.socket, sel) -> None:
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if data:
            self._said[conn] = self._said.get(conn, b"") + data
            if FAILED in data and not self._stopping.is_set() and self._is_watched(conn):  # its own line is out
                self._end_all(None)
            return
        sel.unregister(conn)
        conn.close()
        watched, said = self._is_watched(conn), self._said.pop(conn, b"")
        rank, pid, host, address, _ = self._peers.pop(conn)
        if self._stopping.is_set() or DONE in said or not watched:
            return
        if FAILED in said:
            self._end_all(None)
        self._end_all(f"bgl {self.command}: error: rank {rank} of {self.size} (pid {pid} on host {host}, "
                      f"address {address}) died before the job finished; bgl ends every rank")

    def _is_watched(self, conn: socket.socket) -> bool:
        watched = self._watched
        rank, *_, nonce = self._peers[conn]
        return watched is not None and watched.get(rank) == nonce

    def _end_all(self, line: str | None) -> None:
        for conn in self._peers:
            _send(conn, END)
        _leave(line)

    # -- the other ranks ---------------------------------------------------------------------
    def _follow(self) -> None:
        """Another rank's thread: wait for rank 0's word, or for its connection to close."""
        try:
            data = self._conn.recv(1)
        except OSError:
            data = b""
        if self._stopping.is_set() or data == DONE:
            return
        if data == END:
            _leave(None)  # rank 0 has printed why
        _, pid, host, address = self._root
        _leave(f"bgl {self.command}: error: rank 0 of {self.size} (pid {pid} on host {host}, address {address}) "
               f"died before the job finished; rank {self.rank} ends")

    # -- ending --------------------------------------------------------------------------------
    def close(self) -> None:
        """This rank is done (its work returned, or raised an error every rank raised): stop watching
        and tell the other side, so that its closing connection is not taken for a death."""
        self._stop(DONE)

    def failed(self) -> None:
        """This rank has printed its own error and is about to abort the job: rank 0 ends every rank
        without a second line (rank 0 itself tells them to end)."""
        if self.rank == 0:
            self._stop(END)
        else:
            self._stop(FAILED)
            time.sleep(0.5)  # rank 0 ends the job; MPI's abort, next, is the fallback

    def _stop(self, word: bytes) -> None:
        if self.size == 1 or self._stopping.is_set():
            return
        self._stopping.set()
        if self.rank == 0 and self._thread is not None:
            self._thread.join(timeout=5)  # within one select timeout: no greeting or hearing runs after this
        conns = list(self._peers) if self.rank == 0 else [self._conn] if self._conn is not None else []
        for conn in conns:
            _send(conn, word)
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self.rank != 0 and self._thread is not None:
            self._thread.join(timeout=5)
        for conn in conns:
            conn.close()
