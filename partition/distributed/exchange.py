"""Moving arrays between MPI ranks for ``bgl partition --distributed`` (mpi4py, no pickling).

MPI's counts and displacements are C ``int``: one message of more than 2^31 - 1 elements, or a
buffer whose displacements pass it, fails (DistDGL's ParMETIS step overflowed there at 3.7B
edges).  :meth:`Exchange.alltoallv` therefore sends bytes in rounds: each round moves at most
``round_bytes`` between any two ranks, packed into a fresh buffer whose displacements stay below
2^31, and the ranks agree on the number of rounds first.  Totals are int64 throughout.

Cost: one packed copy of a round's bytes on each side (at most ``R x round_bytes``, 64 MiB by
default whatever R is) on top of the arrays themselves: the caller's send array and the received
array.  The send array need not be grouped by destination: with ``order`` each round gathers its
own rows, so a caller ships a permutation of its rows without a second copy of them.
"""
from __future__ import annotations

import numpy as np

#: Most bytes one rank sends all others together in one round (its packed buffer, and the one it
#: receives into): each pair of ranks gets ``ROUND_BYTES // R`` per round.
ROUND_BYTES = 1 << 26


class Exchange:
    """All-to-all transfers over ``comm`` that count the bytes they send (``bytes_sent``)."""

    def __init__(self, comm, round_bytes: int | None = None):
        from mpi4py import MPI

        self.comm = comm
        self.size = comm.Get_size()
        self._mpi = MPI
        # ``round_bytes`` per pair of ranks (default: ROUND_BYTES over all R); a round's packed
        # buffer (R pieces) must keep its displacements inside a C int
        per_pair = ROUND_BYTES // max(self.size, 1) if round_bytes is None else round_bytes
        self.round_bytes = int(max(1, min(per_pair, (2**31 - 1) // max(self.size, 1))))
        self.bytes_sent = 0

    def counts(self, send_counts: np.ndarray) -> np.ndarray:
        """int64 [R]: how many rows each rank sends here, given what this rank sends each (int64 [R])."""
        send = np.ascontiguousarray(send_counts, np.int64)
        recv = np.empty(self.size, np.int64)
        self.comm.Alltoall(send, recv)
        return recv

    def alltoallv(self, send: np.ndarray, send_counts: np.ndarray, recv_counts: np.ndarray,
                  order: np.ndarray | None = None) -> np.ndarray:
        """Rows of ``send`` grouped by destination rank (``send_counts[r]`` rows for rank r, in rank
        order) -> the rows sent here, grouped by source rank in rank order (``recv_counts`` rows each,
        from :meth:`counts`).  Any dtype and row shape; the same on every rank.

        ``order`` : int64 [n] (optional): send ``send[order]`` (then grouped by destination)
        without building it; each round gathers only its own rows."""
        send = np.ascontiguousarray(send) if order is None else np.asarray(send)
        row_shape, dtype = send.shape[1:], send.dtype
        row_bytes = dtype.itemsize * int(np.prod(row_shape, dtype=np.int64))
        out = np.empty((int(np.sum(recv_counts)),) + row_shape, dtype)
        if row_bytes == 0:
            return out
        s_bytes = np.asarray(send_counts, np.int64) * row_bytes
        r_bytes = np.asarray(recv_counts, np.int64) * row_bytes
        s_start = np.concatenate([[0], np.cumsum(s_bytes)[:-1]]).astype(np.int64)
        r_start = np.concatenate([[0], np.cumsum(r_bytes)[:-1]]).astype(np.int64)
        dst = out.reshape(-1).view(np.uint8)

        def piece(a: int, b: int) -> np.ndarray:
            """Bytes ``[a, b)`` of the send rows grouped by destination (whole rows gathered)."""
            r0, r1 = a // row_bytes, -(-b // row_bytes)
            rows = send[r0:r1] if order is None else send[order[r0:r1]]
            return np.ascontiguousarray(rows).reshape(-1).view(np.uint8)[a - r0 * row_bytes : b - r0 * row_bytes]

        local = int(max(s_bytes.max(initial=0), r_bytes.max(initial=0)))
        rounds = np.array([-(-local // self.round_bytes)], np.int64)
        self.comm.Allreduce(self._mpi.IN_PLACE, rounds, op=self._mpi.MAX)
        step = self.round_bytes
        for i in range(int(rounds[0])):
            lo = i * step
            s_piece = np.clip(s_bytes - lo, 0, step)
            r_piece = np.clip(r_bytes - lo, 0, step)
            s_buf = np.concatenate([piece(s_start[r] + lo, s_start[r] + lo + s_piece[r]) for r in range(self.size)])
            r_buf = np.empty(int(r_piece.sum()), np.uint8)
            s_disp = np.concatenate([[0], np.cumsum(s_piece)[:-1]])
            r_disp = np.concatenate([[0], np.cumsum(r_piece)[:-1]])
            byte = self._mpi.BYTE
            self.comm.Alltoallv([s_buf, (s_piece.tolist(), s_disp.tolist()), byte],
                                [r_buf, (r_piece.tolist(), r_disp.tolist()), byte])
            self.bytes_sent += int(s_piece.sum() - s_piece[self.comm.Get_rank()])
            for r in range(self.size):
                dst[r_start[r] + lo : r_start[r] + lo + r_piece[r]] = r_buf[r_disp[r] : r_disp[r] + r_piece[r]]
        return out

    def route(self, arrays: list[np.ndarray], dest: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Send row i of every array in ``arrays`` to rank ``dest[i]``; returns the arrays received
        here (grouped by source rank, each source's rows in their order there) and their counts
        by source rank (int64 [R])."""
        order = np.argsort(dest, kind="stable")
        send_counts = np.bincount(dest, minlength=self.size).astype(np.int64)
        recv_counts = self.counts(send_counts)
        return [self.alltoallv(a, send_counts, recv_counts, order) for a in arrays], recv_counts

    def reply(self, values: np.ndarray, recv_counts: np.ndarray) -> np.ndarray:
        """Send back one row per request received (``values`` in the order the requests arrived,
        ``recv_counts`` by source rank, as :meth:`route` returned them): each source gets its answers
        in the order it sent the requests in rank-sorted (stable) order."""
        return self.alltoallv(values, recv_counts, self.counts(recv_counts))

    def allreduce_sum(self, values: np.ndarray) -> np.ndarray:
        """Element-wise sum over ranks of an int64/float64 array (same shape on every rank)."""
        buf = np.ascontiguousarray(values).copy()
        self.comm.Allreduce(self._mpi.IN_PLACE, buf, op=self._mpi.SUM)
        return buf

    def allgather(self, values: np.ndarray) -> np.ndarray:
        """``[R, *values.shape]``: every rank's ``values`` (same shape and dtype on every rank)."""
        values = np.ascontiguousarray(values)
        out = np.empty((self.size,) + values.shape, values.dtype)
        self.comm.Allgather(values, out)
        return out


def bcast_text(comm, text: str, root: int) -> str:
    """``text`` of rank ``root`` on every rank (as bytes: nothing is pickled)."""
    raw = np.frombuffer(text.encode(), np.uint8) if comm.Get_rank() == root else None
    size = np.array([0 if raw is None else raw.size], np.int64)
    comm.Bcast(size, root=root)
    buf = raw.copy() if raw is not None else np.empty(int(size[0]), np.uint8)
    comm.Bcast(buf, root=root)
    return buf.tobytes().decode(errors="replace")
