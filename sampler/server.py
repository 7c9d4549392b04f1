"""Graph server: one process per store (or partition part), answering the bgl wire protocol.

A ROUTER socket faces clients; an inproc DEALER fans requests out to a pool
of worker threads, each with its own DEALER socket, and replies flow back the
same way (ROUTER routes them by the client identity frame).  Workers run the
serial ``nogil`` kernels, so ``threads`` requests are sampled truly in
parallel without nesting numba's own thread pool inside them.

Every request is validated (:func:`bgl.sampler.protocol.parse_request` plus
id-range and fanout checks); anything wrong becomes an ERROR reply and the
server keeps serving.  SHUTDOWN needs the token given at start.

Security: with ``curve`` keys (``bgl serve --curve-secret FILE --curve-clients
DIR``, see :mod:`bgl.sampler.curve_keys`) the ROUTER socket is a CURVE server:
traffic is encrypted and a ZAP authenticator admits only clients whose public
key is on the allow-list; anyone else fails the handshake and never reaches a
worker.  Without CURVE the server trusts whoever reaches its port, so it
refuses to bind anything but a loopback address unless told
``allow_plaintext_remote`` (``--insecure-plaintext``).

Run with ``bgl serve`` or ``python -m bgl.sampler.server`` (same options).
"""
from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import signal
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import zmq

from bgl.errors import ProtocolError, StoreFormatError
from bgl.store import GraphStore

from . import curve_keys
from .temporal import sampling as temporal, frames as temporal_frames
from . import ops
from .jit_pages import release_jit_pages
from .kernel_warmup import load_request_kernels
from . import protocol as P
from .endpoints import check_endpoint

log = logging.getLogger("bgl.sampler.server")

DEFAULT_BIND = "tcp://127.0.0.1:*"
# Messages larger than this close the sender's connection before they are buffered whole.
MAX_MESSAGE_BYTES = 1 << 30
# Largest FEATURES reply; bigger reads must be split by the caller (bounds server memory).
MAX_REPLY_BYTES = 1 << 31
POLL_MS = 100
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


def bind_host(endpoint: str) -> str:
    """The host part of a ``tcp://HOST:PORT`` endpoint (``*`` for all interfaces)."""
    return endpoint.split("//", 1)[-1].rsplit(":", 1)[0]


def is_loopback_endpoint(endpoint: str) -> bool:
    """True for ``tcp://127.x.y.z:P``, ``tcp://localhost:P``, ``tcp://[::1]:P`` and ``ipc://``/``inproc://``."""
    if not endpoint.startswith("tcp://"):
        return endpoint.startswith(("ipc://", "inproc://"))
    host = bind_host(endpoint)
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def open_part_store(partition_dir: str | os.PathLike, part: int) -> GraphStore:
    """The store of part ``part`` of a partition dir (read from partition.json, else ``part-K``)."""
    pdir = Path(partition_dir)
    meta_file = pdir / "partition.json"
    try:
        meta = json.loads(meta_file.read_text())
    except FileNotFoundError:
        raise StoreFormatError(f"{meta_file}: missing (not a partition dir)") from None
    except json.JSONDecodeError as e:
        raise StoreFormatError(f"{meta_file}: not valid JSON: {e}") from None
    num_parts = int(meta.get("num_parts", 0))
    if not 0 <= part < num_parts:
        raise ValueError(f"--part must be in [0, {num_parts}), got {part}")
    store_name = f"part-{part}"
    for entry in meta.get("parts", []):
        if entry.get("part") == part:
            store_name = entry.get("store", store_name)
    return GraphStore(pdir / store_name)


def _write_atomic(path: str | os.PathLike, text: str, mode: int = 0o644) -> None:
    """Write ``text`` to ``path`` via a temp name + rename, so readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed write (disk full, rename refused) leaves no stray file
        raise


class GraphServer:
    """Serves one :class:`GraphStore` over ZeroMQ.

    Parameters
    ----------
    store : the (part) store to serve
    bind : ZeroMQ endpoint; ``tcp://127.0.0.1:*`` picks a free loopback port
    token : SHUTDOWN token; random when None (see :attr:`token`)
    threads : worker threads
    part : partition part number, reported in INFO (-1 = whole store)
    curve : CURVE server keys (pair + client allow-list); None = plaintext
    allow_plaintext_remote : permit a plaintext server on a non-loopback address

    Raises
    ------
    ValueError : a plaintext server asked to bind a non-loopback address, or a TCP port outside 1..65535
    """

    def __init__(self, store: GraphStore, bind: str = DEFAULT_BIND, token: str | None = None,
                 threads: int = 2, part: int = -1, curve: curve_keys.ServerKeys | None = None,
                 allow_plaintext_remote: bool = False):
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        check_endpoint(bind, "bind", bind=True)  # zmq would wrap port 99999 to 34463
        if curve is None and not allow_plaintext_remote and not is_loopback_endpoint(bind):
            raise ValueError(
                f"refusing to serve plaintext on non-loopback address {bind}: anyone who reaches it "
                "could read the graph; give CURVE keys (--curve-secret FILE --curve-clients DIR, "
                "as bgl launch does) or pass --insecure-plaintext on a trusted network")
        self.curve = curve
        self.store = store
        self.bind = bind
        self._token_generated = not token
        self.token = token if token else secrets.token_hex(16)
        self.threads = threads
        self.part = part
        self.address: str | None = None
        self.requests = 0
        self._stop = threading.Event()
        self._indptr = np.asarray(store.indptr)
        self._weights = ops.EdgeWeights(store)
        self._temporal = temporal_frames.layer_for(store)  # typed or not; time orders built on first use
        self._lo = store.node_offset
        self._hi = store.node_offset + store.num_nodes
        # a typed store's relation count, which every typed SAMPLE's fanouts frame must match
        self._num_relations = len(store.schema.edge_types) if store.is_typed else None
        self._keys = None
        if self._num_relations is not None:
            from .typed.sampling import stream_keys

            self._keys = stream_keys(store)  # a typed part's original ids: the store's samples (typed.py)
        self._info = json.dumps(self.info()).encode()

    def info(self) -> dict:
        """The INFO reply as a dict: protocol version, owned id range (``node_offset``, ``num_nodes``),
        ``global_num_nodes``, feature dim/dtype, labels, splits.
        """
        s = self.store
        return {
            "protocol_version": P.PROTOCOL_VERSION, "name": s.meta.name, "part": self.part,
            "node_offset": s.node_offset, "num_nodes": s.num_nodes, "global_num_nodes": s.global_num_nodes,
            "num_edges": s.num_edges, "feat_dim": s.feat_dim,
            "feat_dtype": s.feat_dtype_name,
            # rows are sent encoded (bgl/codec); a client decodes them, or refuses an unknown codec
            "feat_codec": s.feat_codec.to_dict() if s.feat_codec is not None else s.meta.feat_codec,  # typed: by type
            "has_label": s.label is not None, "num_classes": s.num_classes,
            "id_dtype": s.indices.dtype.name, "splits": dict(s.meta.splits),
            "edata": {k: dict(v) for k, v in s.meta.edata.items()},
            "ndata": {k: dict(v) for k, v in s.meta.ndata.items()},
            # a typed store's own node/edge types (a part's per-type counts; bgl/schema.py), else None
            "schema": s.meta.schema,
        }

    # ----------------------------------------------------------------- handling
    def handle(self, frames: list) -> list:
        """Reply frames for one request's frames (without the routing id). Never raises."""
        req_id = P.peek_req_id(frames[0]) if frames else 0
        try:
            if temporal_frames.is_temporal(frames[0]):  # bit 5 is unknown to parse_request
                return temporal_frames.serve(self._temporal, frames)
            req = P.parse_request(frames, self._num_relations)
            return self._dispatch(req)
        except (ProtocolError, ValueError) as e:
            return P.error_reply(req_id, str(e))
        except Exception as e:  # a bug must cost one request, not the server
            log.exception("request %d failed", req_id)
            return P.error_reply(req_id, f"internal error: {type(e).__name__}: {e}")

    def _dispatch(self, req: P.Request) -> list:
        h = req.header
        if h.op == P.Op.SAMPLE and req.fanouts is not None:
            return self._typed_sample(req)
        if h.op == P.Op.FEATURES and h.ntype:
            return self._typed_features(req)
        if h.op == P.Op.SAMPLE:
            if req.exclude is not None:
                ops.check_range(req.exclude, 0, self.store.num_edges, "excluded edges")
            counts, nbrs, rows = ops.sample_with_edge_data(
                self._indptr, self.store, req.ids, h.fanout, bool(h.flags & P.FLAG_REPLACE), h.seed,
                self._weights(req.weights), req.edge_data, req.labor, exclude=req.exclude)
            return P.sample_reply(h.req_id, counts, nbrs, rows)
        if h.op == P.Op.FEATURES:
            array = self.store.feat_rows if h.field == P.FIELD_FEAT else self.store.label
            if array is None:
                what = "features" if h.field == P.FIELD_FEAT else "labels"
                raise ValueError(f"store {self.store.meta.name or self.store.path} has no {what}")
            row_bytes = array.dtype.itemsize * (array.shape[1] if array.ndim == 2 else 1)
            if req.ids.shape[0] * row_bytes > MAX_REPLY_BYTES:
                raise ValueError(f"FEATURES reply of {req.ids.shape[0]} rows x {row_bytes} bytes exceeds "
                                 f"{MAX_REPLY_BYTES} bytes; split the request")
            return P.features_reply(h.req_id, h.field, ops.gather(array, req.ids, self._lo, parallel=False))
        if h.op == P.Op.INFO:
            return [P.Header(P.Op.INFO, h.req_id, dtype0=6, len0=len(self._info)).pack(), self._info]
        if h.op == P.Op.PING:
            return [P.Header(P.Op.PING, h.req_id).pack()]
        if h.op == P.Op.SHUTDOWN:
            if not hmac.compare_digest(req.token, self.token.encode()):
                raise ValueError("SHUTDOWN refused: wrong token")
            self._stop.set()
            return [P.Header(P.Op.SHUTDOWN, h.req_id).pack()]
        raise ProtocolError(f"unknown op {h.op}")

    def _typed_sample(self, req: P.Request) -> list:
        """A typed SAMPLE (per-relation fanouts) over this server's fused CSC (bgl/sampler/typed/sampling.py)."""
        from .typed.sampling import sample_typed_store

        if self._num_relations is None:
            raise ValueError(f"store {self.store.meta.name or self.store.path} has no edge types; "
                             "sample it with one fanout per layer")
        h = req.header
        if req.exclude is not None:
            ops.check_range(req.exclude, 0, self.store.num_edges, "excluded edges")
        counts, nbrs, _, etypes, *rows = sample_typed_store(
            self.store, self._indptr, req.ids, req.fanouts, bool(h.flags & P.FLAG_REPLACE), h.seed, self._keys,
            exclude=req.exclude, prob=self._weights(req.weights), edge_data=req.edge_data, labor=req.labor)
        etypes = etypes.astype(self.store.etype.dtype)  # 1 byte per edge on the wire (2 above 256 relations)
        reply = P.Header(P.Op.SAMPLE, h.req_id, P.FLAG_TYPED, P.dtype_code(etypes.dtype), P.dtype_code(counts.dtype),
                         P.dtype_code(nbrs.dtype), len0=counts.shape[0], len1=nbrs.shape[0], width=1)
        # typed reply: etypes' dtype code in `field` (typed_frames), then the untyped reply's edge data frames
        return [reply.pack(), counts, nbrs, etypes, *P.sample_reply(0, counts, nbrs, *rows)[3:]]

    def _typed_features(self, req: P.Request) -> list:
        """A typed FEATURES: rows of one node type, that type's own width and dtype."""
        from .typed.sampling import typed_rows

        if self._num_relations is None:
            raise ValueError(f"store {self.store.meta.name or self.store.path} has no node types; "
                             "ask FEATURES without an ntype")
        h = req.header
        types = self.store.schema.node_types
        if 0 < h.ntype <= len(types) and h.field == P.FIELD_FEAT:
            nt = types[h.ntype - 1]
            row_bytes = nt.feat_dim * (np.dtype(nt.feat_dtype).itemsize if nt.feat_dtype else 0)
            if req.ids.shape[0] * row_bytes > MAX_REPLY_BYTES:
                raise ValueError(f"FEATURES reply of {req.ids.shape[0]} rows x {row_bytes} bytes exceeds "
                                 f"{MAX_REPLY_BYTES} bytes; split the request")
        return P.features_reply(h.req_id, h.field, typed_rows(self.store, req.ids, h.ntype - 1,
                                                              h.field == P.FIELD_LABEL))

    def _load_kernels(self) -> None:
        """Every request kind's numba kernels loaded before reporting ready (:mod:`.kernel_warmup`);
        then LLVM's library pages leave the resident set (:mod:`.jit_pages`: ~65 MB a server)."""
        load_request_kernels(self.store, self._indptr, self._num_relations, self._keys, self._temporal)
        release_jit_pages()

    # ------------------------------------------------------------------ serving
    def stop(self) -> None:
        """Ask :meth:`serve` to stop (thread- and signal-safe); it drains briefly and returns."""
        self._stop.set()

    def _worker(self, ctx: zmq.Context, backend_addr: str) -> None:
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        try:
            sock.connect(backend_addr)
            while not self._stop.is_set():
                if not sock.poll(POLL_MS):
                    continue
                msg = sock.recv_multipart(copy=False)
                if len(msg) < 2:
                    continue  # no routing id: nothing to answer
                reply = self.handle(msg[1:])
                sock.send_multipart([msg[0], *reply], copy=False)
        finally:
            sock.close()

    def serve(self, ready_file: str | os.PathLike | None = None, token_file: str | os.PathLike | None = None) -> int:
        """Bind, serve until SHUTDOWN (or :meth:`stop`, SIGTERM, SIGINT), clean up. Returns 0."""
        ctx = zmq.Context()
        front = ctx.socket(zmq.ROUTER)
        back = ctx.socket(zmq.DEALER)
        workers: list[threading.Thread] = []
        auth = None
        try:
            front.linger = 0
            back.linger = 0
            front.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
            if self.curve is not None:
                auth = self._start_authenticator(ctx)
                front.curve_secretkey = self.curve.pair.secret
                front.curve_publickey = self.curve.pair.public
                front.curve_server = True
            front.bind(self.bind)
            self.address = front.getsockopt_string(zmq.LAST_ENDPOINT)
            backend_addr = f"inproc://bgl-workers-{uuid.uuid4().hex}"
            back.bind(backend_addr)
            for i in range(self.threads):
                t = threading.Thread(target=self._worker, args=(ctx, backend_addr), name=f"bgl-worker-{i}", daemon=True)
                t.start()
                workers.append(t)
            self._load_kernels()
            if token_file:
                _write_atomic(token_file, self.token + "\n", 0o600)
            if ready_file:
                _write_atomic(ready_file, json.dumps({"address": self.address, "pid": os.getpid(),
                                                      "node_offset": self._lo, "num_nodes": self.store.num_nodes}))
            if self.curve is None and not is_loopback_endpoint(self.address):
                log.warning("serving PLAINTEXT on non-loopback address %s: anyone who can reach it can read "
                            "the graph", self.address)
            security = ("CURVE, %d allowed client key(s)" % len(self.curve.allowed_clients)
                        if self.curve is not None else "plaintext")
            log.info("serving %s nodes [%d, %d) on %s (%s), %d threads, pid %d%s", self.store.path, self._lo,
                     self._hi, self.address, security, self.threads, os.getpid(),
                     f", shutdown token {self.token}" if self._token_generated and not token_file else "")
            t0 = time.time()
            self._proxy(front, back)
            log.info("stopped %s after %d requests in %.1f s", self.address, self.requests, time.time() - t0)
        finally:
            self._stop.set()
            for t in workers:
                t.join(timeout=5)
            front.close()
            back.close()
            if auth is not None:
                auth.stop()
            ctx.term()
            if ready_file:  # says "serving at ADDRESS": gone with the server, unless a successor rewrote it
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    if json.loads(Path(ready_file).read_text()).get("pid") == os.getpid():
                        os.unlink(ready_file)
        return 0

    def _start_authenticator(self, ctx: zmq.Context):
        """A ZAP handler thread admitting only the allow-listed client public keys."""
        from zmq.auth.thread import ThreadAuthenticator

        allowed = self.curve.allowed_clients
        warned: set[bytes] = set()

        class AllowList:
            def callback(self, domain: str, client_key: bytes) -> bool:
                ok = client_key in allowed
                if not ok and client_key not in warned and len(warned) < 1000:  # once per key: it retries
                    warned.add(client_key)
                    log.warning("refused a CURVE client with unknown public key %s", client_key.decode())
                return ok

        auth = ThreadAuthenticator(ctx, log=logging.getLogger("bgl.sampler.server.zap"))
        auth.start()
        auth.configure_curve_callback(domain="*", credentials_provider=AllowList())
        return auth

    def _proxy(self, front: zmq.Socket, back: zmq.Socket) -> None:
        poller = zmq.Poller()
        poller.register(front, zmq.POLLIN)
        poller.register(back, zmq.POLLIN)
        drain_until = None
        while True:
            if self._stop.is_set() and drain_until is None:
                drain_until = time.monotonic() + 0.3  # let the SHUTDOWN ack (and in-flight replies) out
            if drain_until is not None and time.monotonic() > drain_until:
                return
            events = dict(poller.poll(POLL_MS if drain_until is None else 20))
            if front in events and drain_until is None:
                for _ in range(256):
                    try:
                        msg = front.recv_multipart(zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        break
                    self.requests += 1
                    back.send_multipart(msg, copy=False)
            if back in events:
                for _ in range(256):
                    try:
                        msg = back.recv_multipart(zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        break
                    try:
                        front.send_multipart(msg, zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        pass  # the client stopped reading (its queue is full): drop, it will time out


def main(argv: list[str] | None = None) -> int:
    """``python -m bgl.sampler.server`` — same options as ``bgl serve``."""
    import argparse

    from .server_options import DESCRIPTION, add_arguments

    parser = argparse.ArgumentParser(prog="python -m bgl.sampler.server", description=DESCRIPTION,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    # $BGL_LOG_LEVEL quiets a server a person's command started (``bgl demo``); INFO otherwise.
    level = logging.getLevelName(os.environ.get("BGL_LOG_LEVEL", "INFO").strip().upper())
    logging.basicConfig(level=level if isinstance(level, int) else logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    return run_server(args)


def run_server(args) -> int:
    """Entry used by ``bgl serve``: open the store, install signal handlers, serve."""
    if (args.store is None) == (args.partition is None):
        raise ValueError("give exactly one of --store DIR or --partition DIR --part K")
    if args.partition is not None:
        if args.part is None:
            raise ValueError("--partition needs --part K")
        store, part = open_part_store(args.partition, args.part), args.part
    else:
        store, part = GraphStore(args.store), -1
    curve = None
    if args.curve_dir and not (args.curve_secret or args.curve_clients):
        args.curve_secret = os.path.join(args.curve_dir, curve_keys.SERVER_SECRET)
        args.curve_clients = os.path.join(args.curve_dir, curve_keys.ALLOWED_DIR)
    if args.curve_secret:
        if not args.curve_clients:
            raise ValueError("--curve-secret needs --curve-clients DIR (the allowed clients' .key files)")
        curve = curve_keys.load_server_keys(args.curve_secret, args.curve_clients)
    elif args.curve_clients:
        raise ValueError("--curve-clients needs --curve-secret FILE (the server's key pair)")
    server = GraphServer(store, bind=args.bind, token=args.token, threads=args.threads, part=part,
                         curve=curve, allow_plaintext_remote=args.insecure_plaintext)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: server.stop())
    return server.serve(ready_file=args.ready_file, token_file=args.token_file)


if __name__ == "__main__":
    raise SystemExit(main())
