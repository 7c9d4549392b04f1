"""partition/distributed/rank_watch.py without MPI: ranks as threads of this process over a small
in-process communicator, the watch's exit (``_leave``) recorded instead of ending the process.

The mpirun tests (tests/partition/test_distributed_partition.py, test_distributed_netns.py) kill real
ranks; these check, in a second, which closings count as a death: an unannounced close of a watched
rank's connection does (one line naming the rank, its pid, host and address); a rank that said done,
a rank that failed and said so, and a connection left over from a greeting a rank gave up on do not.
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import time

import numpy as np
import pytest

from bgl.partition.distributed import rank_watch as RW


class ThreadComm:
    """The few collectives the watch uses (Bcast, Allgather of int64/uint8 arrays), between threads."""

    def __init__(self, shared: dict, rank: int, size: int):
        self.shared, self.rank, self.size = shared, rank, size

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def _exchange(self, mine):
        barrier, slots = self.shared["barrier"], self.shared["slots"]
        slots[self.rank] = None if mine is None else np.array(mine, copy=True)
        barrier.wait()
        got = list(slots)
        barrier.wait()
        return got

    def Bcast(self, buf, root=0):
        got = self._exchange(buf if self.rank == root else None)
        buf[...] = got[root]

    def Allgather(self, send, recv):
        recv[...] = np.concatenate(self._exchange(send))


# the recorded _leave ends a watch thread with SystemExit (os._exit's stand-in), which pytest reports
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
STARTED: list[RW.RankWatch] = []


def start_ranks(size: int) -> list[RW.RankWatch]:
    shared = {"barrier": threading.Barrier(size), "slots": [None] * size}
    watches = [None] * size

    def start(rank):
        watches[rank] = RW.RankWatch.start(ThreadComm(shared, rank, size), "partition")

    threads = [threading.Thread(target=start, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert all(w is not None for w in watches)
    STARTED.extend(watches)
    return watches


@pytest.fixture
def left(monkeypatch):
    """What each watch thread would have printed on leaving (None: left quietly); the thread ends."""
    lines = []

    def leave(line):
        lines.append(line)
        raise SystemExit  # ends the watch thread here, as os._exit would end the rank

    monkeypatch.setattr(RW, "_leave", leave)
    yield lines
    for watch in STARTED:  # every socket of the ranks started, closed
        watch._stopping.set()
        for conn in [*watch._peers, *([watch._conn] if watch._conn is not None else [])]:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked on it (close alone does not)
            conn.close()
        if watch._thread is not None:
            watch._thread.join(timeout=5)
    STARTED.clear()


def wait_for(lines, n, timeout=10.0):
    deadline = time.monotonic() + timeout
    while len(lines) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return lines


def test_an_unannounced_close_is_a_death_named_once_and_every_rank_is_told_to_end(left):
    root, one, two = start_ranks(3)
    (address,) = [peer[3] for peer in root._peers.values() if peer[0] == 1]
    one._stopping.set()  # rank 1's own thread stays quiet: it is the dead one
    one._conn.shutdown(socket.SHUT_RDWR)  # its kernel closing the socket as the process dies, without a word
    wait_for(left, 2)
    named = [line for line in left if line]
    assert named == [f"bgl partition: error: rank 1 of 3 (pid {os.getpid()} on host {socket.gethostname()}, "
                     f"address {address}) died before the job finished; bgl ends every rank"]
    assert left.count(None) == 1  # rank 2, told to end, leaves without a line of its own
    two._stopping.set()


def test_done_and_a_failure_said_first_are_not_deaths(left):
    root, one, two = start_ranks(3)
    one.close()
    two.close()
    root.close()
    time.sleep(0.5)
    assert left == []
    root, one, two = start_ranks(3)
    one.failed()  # its own error line is out: rank 0 ends every rank, adding none
    wait_for(left, 2)
    assert left == [None, None]
    two._stopping.set()


def test_a_greeting_given_up_is_not_taken_for_the_rank(left):
    root, one = start_ranks(2)
    assert [peer[0] for peer in root._peers.values()] == [1]
    # a second connection of rank 1 (a greeting it gave up on, answered late) closes: not its watched one
    stale = socket.create_connection(("127.0.0.1", root._port))
    stale.sendall(root._token + RW._hello(1, 12345))
    assert RW._recv_exact(stale, RW.TOKEN_BYTES) == root._token
    stale.close()
    time.sleep(0.5)
    assert left == []
    one.close()
    root.close()
    assert left == []
