"""Sampling client: talks to one graph server per partition part, never hangs.

At connect the client asks every server for INFO, learns the contiguous id
range each one owns and checks that together they cover ``[0, num_nodes)``
exactly; "who owns id v" is then a ``searchsorted`` over the range bounds.

A layer of a multi-layer sample sends one SAMPLE per owning server, all in
flight at once on DEALER sockets, and matches the replies by request id.
Because a row's sample depends only on ``(seed, global id)``, the result is
the same however the graph is partitioned (and equals ``LocalSampler``).
Every wait has a deadline: a silent server raises ``ServerUnavailable``.

A call rides through a server restart: a server whose connection drops
gets its outstanding requests re-sent on a fresh socket until it is back or
``retry_timeout`` passes (the sockets and that logic:
:mod:`bgl.sampler.reconnect`).

Security: with :class:`~bgl.sampler.curve_keys.ClientKeys` (by default read
from ``$BGL_CURVE_DIR``, which ``bgl launch`` sets for its trainers) every
socket is a CURVE client: it checks the server's public key and proves its
own, and traffic is encrypted.  A client a CURVE server does not admit
never connects; it raises ``ServerUnavailable`` within its timeout, saying
the handshake was refused.
"""
from __future__ import annotations

import functools
import itertools
import json
import time
from typing import Sequence

import numpy as np
import torch
import zmq

from bgl.blocks import Block
from bgl.threads import Closes
from bgl.codec.wire import codec_of_info, row_buffer
from bgl.errors import ProtocolError, ServerError, ServerUnavailable

from . import _kernels as K
from . import colocated, curve_keys, multilayer, ops
from .temporal import remote as temporal_remote
from .typed import remote as typed_remote
from . import protocol as P
from .reconnect import ENV_RETRY_TIMEOUT  # noqa: F401 (re-exported: the old home of the name)
from .reconnect import ServerSockets, dealer, retry_timeout_from_env, traffic  # noqa: F401 (traffic: public here)

# ``curve=FROM_ENV`` (the default): CURVE keys from $BGL_CURVE_DIR when it is set, else plaintext.
FROM_ENV = "env"


def resolve_curve(curve) -> curve_keys.ClientKeys | None:
    """``FROM_ENV`` -> keys from ``$BGL_CURVE_DIR`` (or None); keys or None pass through."""
    if isinstance(curve, str) and curve == FROM_ENV:
        return curve_keys.client_keys_from_env()
    if curve is not None and not isinstance(curve, curve_keys.ClientKeys):
        raise TypeError(f"curve must be ClientKeys, None or {FROM_ENV!r}, got {type(curve).__name__}")
    return curve


# INFO keys the client relies on (the server sends more)
INFO_KEYS = ("node_offset", "num_nodes", "global_num_nodes", "num_edges", "feat_dim", "feat_dtype", "num_classes")


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
    sock, watch = dealer(ctx, address, resolve_curve(curve))
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


class SamplingClient(typed_remote.TypedClient, temporal_remote.TemporalClient, Closes):
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
    local_stores : part stores this host can read (:mod:`bgl.sampler.colocated`): their
        servers' samples and rows are read here from the memory-mapped files instead of
        over a socket (same results); by default the parts ``$BGL_LOCAL_PARTS`` names in
        ``$BGL_PARTITION`` (``bgl launch`` sets both), none when unset; ``()`` for none

    Raises
    ------
    ValueError : a malformed address (e.g. ``tcp://host:abc``)
    CurveKeyError : ``$BGL_CURVE_DIR`` is set but its key files are missing or bad
    ServerUnavailable : a server does not answer INFO in time (also: it refused
        this client's CURVE key; the message says so)
    ProtocolError : a malformed INFO reply, the servers' id ranges do not tile ``[0, num_nodes)``,
        or a local store is not the part its server serves
    """

    def __init__(self, addresses: Sequence[str] | str, timeout: float = 5.0, curve=FROM_ENV,
                 retry_timeout: float | None = None, local_stores=FROM_ENV):
        if isinstance(addresses, str):
            addresses = [a for a in addresses.split(",") if a]
        if not addresses:
            raise ValueError("SamplingClient needs at least one server address")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.timeout = float(timeout)
        if retry_timeout is None:
            retry_timeout = retry_timeout_from_env(self.timeout)
        if retry_timeout < 0:
            raise ValueError(f"retry_timeout must be >= 0, got {retry_timeout}")
        self.retry_timeout = float(retry_timeout)
        self.curve = resolve_curve(curve)
        self._ids = itertools.count(1)
        self._servers = ServerSockets(addresses, self.curve, self.timeout, self.retry_timeout)
        self.addresses = self._servers.addresses
        try:
            infos = self._servers.call_all([(i, P.simple_request(P.Op.INFO, next(self._ids)))
                                            for i in range(len(self._servers))], P.Op.INFO, wait_connect=True)
            # the watches stay: their monitors report a connection that drops later
            self.infos = [_parse_info(self.addresses[srv], arrs[0]) for srv, arrs in infos]
            order = np.argsort([info["node_offset"] for info in self.infos], kind="stable")
            self._servers.reorder(order)
            self.addresses = self._servers.addresses
            self.infos = [self.infos[i] for i in order]
            self.bounds = np.array([info["node_offset"] for info in self.infos]
                                   + [self.infos[-1]["node_offset"] + self.infos[-1]["num_nodes"]], np.int64)
            self._check_ranges()
            self.feat_codec = codec_of_info(self.addresses[0], self.infos[0])  # rows arrive encoded (bgl/codec)
            # global edge ids: part k's CSC positions follow the edges of the parts before it
            self.edge_bounds = np.zeros(len(self.infos) + 1, np.int64)
            np.cumsum([int(info["num_edges"]) for info in self.infos], out=self.edge_bounds[1:])
            # dense relabel markers over the global id space (hash fallback for huge ones);
            # it also rejects neighbour ids a server sent outside [0, num_nodes)
            self._relabel = ops.Relabeler(int(self.bounds[-1]))
            if isinstance(local_stores, str) and local_stores == FROM_ENV:
                local_stores = colocated.stores_from_env()
            self._local = colocated.LocalParts(local_stores or (), self.infos, self.addresses)
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
        for key in ("feat_dim", "feat_dtype", "num_classes", "feat_codec"):
            values = {str(info.get(key)) for info in self.infos}
            if len(values) > 1:
                raise ProtocolError(f"servers disagree on {key}: {sorted(map(str, values))}")

    @property
    def local_servers(self) -> list[str]:
        """Addresses of the servers whose part this client reads from its own files."""
        return [self.addresses[srv] for srv in sorted(self._local.stores)]

    @property
    def reconnects(self) -> int:
        """Sockets replaced after a server went away (for logs and tests)."""
        return self._servers.reconnects

    def owner(self, ids: np.ndarray) -> np.ndarray:
        """int64 index (into ``addresses``) of the server owning each global id; ids are checked."""
        ops.check_range(ids, 0, int(self.bounds[-1]))
        return np.searchsorted(self.bounds, ids, side="right") - 1

    def local_mask(self, ids: np.ndarray) -> np.ndarray:
        """bool [n]: True where the id's part is read from this host's files, not over a socket."""
        local = np.zeros(len(self._servers), bool)
        local[list(self._local.stores)] = True
        return local[self.owner(ops.as_ids(ids))]

    def read_local_features_into(self, ids, out: np.ndarray, pos: np.ndarray) -> None:
        """``out[pos[i]]`` = the feature row of ``ids[i]``, read from this host's part files.

        Every id must be in a co-located part (:meth:`local_mask`); ValueError otherwise.
        """
        ids = ops.as_ids(ids)
        own = self.owner(ids)
        for srv in np.unique(own):
            if srv not in self._local:
                raise ValueError(f"ids of {self.addresses[srv]}'s part are not readable on this host")
            sel = own == srv
            self._local.gather_into(int(srv), ids[sel], out, pos[sel])

    def _split(self, ids: np.ndarray):
        """(order, [(server, start, end)]): ids[order] grouped by owner, contiguous per server."""
        own = self.owner(ids)
        order = np.argsort(own, kind="stable")
        starts = np.searchsorted(own[order], np.arange(len(self._servers) + 1))
        groups = [(s, int(starts[s]), int(starts[s + 1])) for s in range(len(self._servers)) if starts[s + 1] > starts[s]]
        return order, groups

    # ------------------------------------------------------------------ sampling
    def _answer(self, jobs, expect: P.Op) -> list:
        """The reply arrays of each ``(server, request maker, local reader)`` job, in job order.

        Requests to remote servers go out first; the co-located parts are read
        here while those servers work, then the replies are collected.
        """
        results: list = [None] * len(jobs)
        remote = [i for i, (srv, _, _) in enumerate(jobs) if srv not in self._local]

        def read_local() -> None:
            for i, (srv, _, read) in enumerate(jobs):
                if srv in self._local:
                    results[i] = read()

        if not remote:
            read_local()
            return results
        replies = self._servers.call_all([(jobs[i][0], jobs[i][1]()) for i in remote], expect,
                                         while_waiting=read_local)
        for i, (_, arrays) in zip(remote, replies):
            results[i] = arrays
        return results

    def _part_exclude(self, exclude, srv: int):
        """The global edge ids of ``exclude`` (sorted) that part ``srv`` holds, as its CSC positions."""
        if exclude is None:
            return None
        lo, hi = int(self.edge_bounds[srv]), int(self.edge_bounds[srv + 1])
        a, b = np.searchsorted(exclude, [lo, hi])
        return exclude[a:b] - lo

    def sample_layer(self, dst: np.ndarray, fanout: int, replace: bool, seed: int, prob: str | None = None,
                     edge_data: Sequence[str] = (), labor: tuple[int, float] | None = None, exclude=None):
        """One layer across servers: (counts int64 [m], nbrs [e] in dst order, None), plus
        ``{name: rows [e, ...]}`` of the sampled edges when ``edge_data`` names edge arrays.

        ``prob`` names the servers' edge array (weights or bool mask) to sample by; ``labor`` =
        ``(seed2, mix)`` samples by LABOR instead (:func:`bgl.sampler.ops.sample_labor`).
        ``exclude``: sorted global edge ids (:attr:`edge_bounds` numbering) never drawn; each
        server gets its own part's share as CSC positions in the request's excluded-edges frame."""
        fanout = ops.check_fanout(fanout)
        if exclude is not None:
            ops.check_range(exclude, 0, int(self.edge_bounds[-1]), "excluded edges")
        edge_data = tuple(edge_data)
        order, groups = self._split(dst)
        sorted_ids = dst[order]
        args = (fanout, replace, seed, prob, edge_data, labor)
        parts = [(s, sorted_ids[a:b], *args, self._part_exclude(exclude, s)) for s, a, b in groups]
        jobs = [(p[0], functools.partial(self._sample_request, *p[1:]), functools.partial(self._local.sample, *p))
                for p in parts]
        replies = self._answer(jobs, P.Op.SAMPLE)
        for (s, a, b), reply in zip(groups, replies):
            if reply[0].shape[0] != b - a:
                raise ProtocolError(f"{self.addresses[s]} returned {reply[0].shape[0]} counts for {b - a} seeds")
            if edge_data and (len(reply) < 3 or sorted(reply[2]) != sorted(edge_data)):
                raise ProtocolError(f"{self.addresses[s]} did not return the edge data {list(edge_data)}")
        if len(groups) == 1 and np.array_equal(order, np.arange(order.shape[0])):
            counts, nbrs = replies[0][0], replies[0][1]  # int32 or int64 as sent; the relabel takes both
            return (counts, nbrs, None, replies[0][2]) if edge_data else (counts, nbrs, None)
        sorted_counts = np.concatenate([r[0] for r in replies])
        sorted_nbrs = np.concatenate([r[1].astype(np.int64, copy=False) for r in replies])
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
        if not edge_data:
            return counts, nbrs, None
        rows = ops.rows_in_dst_order([r[2] for r in replies], edge_data, sorted_indptr, inv, out_indptr)
        return counts, nbrs, None, rows

    def _sample_request(self, ids, fanout: int, replace: bool, seed: int, prob=None, edge_data=(),
                        labor=None, exclude=None) -> list:
        return P.sample_request(next(self._ids), ids, fanout, replace, seed, prob, edge_data, labor, exclude)

    def sample_blocks(self, seeds, fanouts: Sequence[int], replace: bool = False,
                      seed: int | None = None, prob: str | None = None,
                      edge_data: Sequence[str] = (), labor: "multilayer.Labor | None" = None,
                      exclude=None) -> list[Block]:
        """Blocks for ``seeds`` (global ids, unique); ``blocks[-1].dst_ids == seeds``; no edge whose
        global id is in ``exclude`` appears in any block.

        ``prob`` names the edge array to sample by (DGL's ``prob=`` / ``mask=``); each block's
        ``edata[name]`` holds the rows of the edge arrays ``edge_data`` names for its edges,
        sent by the servers with the sampled edges; ``labor`` samples by LABOR."""
        return multilayer.sample_blocks(seeds, fanouts, replace, seed, self.sample_layer, self._relabel,
                                        prob=prob, edge_data=edge_data, labor=labor, exclude=exclude)

    # ------------------------------------------------------------------ features
    def _fetch_plan(self, ids, field: int):
        """(order, groups, jobs, out) for one field: the jobs for :meth:`_answer` and an empty result array."""
        ids = ops.as_ids(ids)
        order, groups = self._split(ids)
        sorted_ids = ids[order]
        jobs = [(s, functools.partial(self._features_request, sorted_ids[a:b], field),
                 functools.partial(self._read_local_rows, s, sorted_ids[a:b], field)) for s, a, b in groups]
        if field == P.FIELD_FEAT:
            # ValueError without features; encoded rows (bgl/codec) arrive and stay encoded
            out = row_buffer(ids.shape[0], self.feat_dim, self.infos[0]["feat_dtype"], self.feat_codec, self.addresses)
        else:
            if not self.infos[0].get("has_label", True):
                raise ValueError(f"the servers {self.addresses} have no labels")
            out = np.empty(ids.shape[0], np.int64)
        return order, groups, jobs, out

    def _features_request(self, ids, field: int) -> list:
        return P.features_request(next(self._ids), ids, field)

    def _read_local_rows(self, srv: int, ids, field: int) -> tuple:
        return (self._local.gather(srv, ids, field),)

    def _fetch_fill(self, order, groups, replies, out: np.ndarray) -> np.ndarray:
        row_size = int(np.prod(out.shape[1:], dtype=np.int64))
        for (s, a, b), (rows,) in zip(groups, replies):
            if rows.size != (b - a) * row_size:
                raise ProtocolError(f"{self.addresses[s]} returned {rows.size} values for {b - a} rows of {row_size}")
            out[order[a:b]] = rows.reshape((b - a,) + out.shape[1:])
        return out

    def _fetch(self, ids, field: int) -> np.ndarray:
        order, groups, jobs, out = self._fetch_plan(ids, field)
        replies = self._answer(jobs, P.Op.FEATURES)
        if len(groups) == 1 and groups[0][0] in self._local:  # read here, already in order
            return replies[0][0].reshape(out.shape)
        return self._fetch_fill(order, groups, replies, out)

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
        f_order, f_groups, f_jobs, feats = self._fetch_plan(feat_ids, P.FIELD_FEAT)
        l_order, l_groups, l_jobs, labels = self._fetch_plan(label_ids, P.FIELD_LABEL)
        replies = self._answer(f_jobs + l_jobs, P.Op.FEATURES)
        self._fetch_fill(f_order, f_groups, replies[:len(f_jobs)], feats)
        self._fetch_fill(l_order, l_groups, replies[len(f_jobs):], labels)
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
        servers = getattr(self, "_servers", None)
        if servers is not None:
            servers.close()
