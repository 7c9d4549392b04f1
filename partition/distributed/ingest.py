"""``bgl ingest --distributed``: edge-list shards straight to a partition directory, as MPI ranks.

Run as ``mpirun -n R python -m bgl ingest 'DIR/part-*.txt' OUT --distributed --parts P --num-nodes N``.
A graph that never existed as one store on one machine is partitioned; no rank reads the whole
input or holds an array as long as the graph:

1. each rank parses its share of the shards (:mod:`.shards`: by file, by byte range inside a
   text file, by row range inside a ``.npy``) one block at a time;
2. every block's edges go at once to the rank owning their destination (and, symmetrized, the
   reversed edge to the source's owner) through :class:`.exchange.Exchange`, so each rank ends
   with the in-edges of its node range; the ranges are cut on a histogram of the first block every
   rank parsed (a sample: an exact cut would cost a second parse of the input);
3. the owner sorts its in-edges by (destination, source) and drops repeats as ``bgl ingest`` does
   (self-loops dropped before the exchange unless kept): each rank's rows are then what a
   one-machine ``bgl ingest`` of the concatenated shards would store for that range, edge ids its
   CSC positions;
4. from there on exactly the store path of :mod:`.driver` (symmetric CSR, engine, write).

Memory per rank, for ``e`` in-edges owned: the received ``(dst, src)`` pairs as one int64 key
each (8 B/edge), up to 24 B/edge while they are joined, sorted and split again, then the slice's
sources (8 B/edge) and ``indptr`` (8 B/node); parsing and routing add one block of text and its
ids (about 40 B per edge of the block while it is grouped by owner); edge times add 16 B per
entry (time and input position) and 8 B more while sorted.  The rest is the store path's
(:mod:`.graph`, :mod:`.write`).

Node data: shards carry none.  ``feat`` / ``label`` name ``.npy`` files ([N, D] floats, [N] ints,
-1 = unlabelled) on the shared filesystem, memory-mapped: each rank reads only its nodes' rows.
The splits are a seeded 60/20/20 hash of each (labelled) node id (:func:`hash_splits`: each rank
computes its own nodes' membership), not the one-machine ingest's permutation of all ids.

A malformed line, an id outside ``[0, num_nodes)``, a glob matching nothing or node data of the
wrong shape fails on every rank with one line, before anything is written.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bgl.errors import IngestError
from bgl.sources.readers.edgelist import CHUNK_BYTES, TIME_NAME, header_direction

from . import graph as G
from . import shards as S
from . import driver as D
from .. import engines
from . import coarsen as dist_coarsen
from .weights import DEFAULT_BALANCE, check_balance
from ..format import check_out_dir
from ..phase_memory import PhaseMemory

log = logging.getLogger(__name__)

SPLIT_FRACTIONS = (0.6, 0.2)  # train, val; the rest is test
#: Buckets of the histogram that cuts the node ranges (at most; one bucket per node below it).
RANGE_BUCKETS = 1 << 16


@dataclass(frozen=True)
class _Meta:
    name: str


@dataclass
class ShardGraph:
    """The whole graph's facts the distributed writer reads of a store (see
    :func:`.driver.partition_slice`): sizes, a name, and no node arrays or edge data."""

    path: str
    num_nodes: int
    num_edges: int
    meta: _Meta
    label: np.ndarray | None = None  # memmaps of whole-graph .npy files: ranks read their rows
    feat: np.ndarray | None = None
    num_classes: int = 0
    feat_encoded: None = None
    feat_codec: None = None
    edata: dict = field(default_factory=dict)
    ndata: dict = field(default_factory=dict)  # no node arrays (node times) from shards


def hash_splits(lo: int, hi: int, seed: int) -> tuple[list[str], np.ndarray]:
    """``(["test", "train", "val"], flags uint8 [hi-lo, 3])`` for nodes ``[lo, hi)``: a node is in
    train when a seeded 64-bit mix of its id, read as a fraction, is below 0.6, in val below 0.8,
    else in test; any rank computes any node's split alone."""
    with np.errstate(over="ignore"):  # splitmix64: wrapping arithmetic is the point
        x = np.arange(lo, hi, dtype=np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    u = (x >> np.uint64(11)).astype(np.float64) * 2.0**-53
    train, val = SPLIT_FRACTIONS
    flags = np.stack([u >= train + val, u < train, (u >= train) & (u < train + val)], axis=1).astype(np.uint8)
    return ["test", "train", "val"], flags


def ingest_distributed(source, out_dir, num_parts: int, *, num_nodes: int, symmetrize: bool | None = None,
                       remove_self_loops: bool = True, dedupe: bool = True, engine: str = "auto",
                       engine_mode: str | None = None, seed: int = 0, overwrite: bool = False, imbalance: float = 0.03,
                       balance: str = DEFAULT_BALANCE, coarsen: str = dist_coarsen.DEFAULT,
                       feat=None, label=None, edge_time_column: int | None = None, chunk_bytes: int = CHUNK_BYTES, comm=None):
    """Partition the edge-list shards ``source`` (glob, file or directory) into ``num_parts`` parts
    over the ranks of ``comm`` (default: all) and write the partition directory ``out_dir``.

    ``symmetrize`` None follows the first shard's header (``# Undirected graph``), as ``bgl ingest``
    does for one file.  ``feat`` / ``label``: ``.npy`` paths of node features [N, D] (floating) and
    labels [N] (integers, -1 = unlabelled), or None.  ``edge_time_column`` (0-based, >= 2): that
    column's integers become the parts' int64 ``timestamp`` edge array, as one machine's
    ``--edge-time-column`` (text shards only).  ``engine, engine_mode, balance, coarsen`` : as
    :func:`.driver.partition_distributed`.  Returns the opened
    :class:`~bgl.partition.format.PartitionBook` on every rank.  Bad arguments or shards raise the same error
    on every rank (ValueError, FileExistsError, IngestError, EngineMissing) with nothing written;
    a rank failing otherwise aborts the job.
    """
    MPI = D._mpi()
    comm = comm if comm is not None else MPI.COMM_WORLD
    engine = engines.resolve(engine, comm)
    try:
        check_balance(balance)
        dist_coarsen.check_coarsen(coarsen)
        shards, mode = _check(source, out_dir, num_parts, num_nodes, engine, engine_mode, overwrite, comm.Get_size(),
                              edge_time_column)
        node_data, error = _node_data(feat, label, num_nodes), None
    except Exception as e:  # noqa: BLE001 - every rank must learn of any rank's failed check
        shards = mode = None
        error = e
    D.agree(comm, error)
    sym = bool(symmetrize) if symmetrize is not None else header_direction(shards[0].path) == "undirected"

    def work():
        from .exchange import Exchange

        ex = Exchange(comm)
        mem = PhaseMemory()
        t0 = time.perf_counter()
        with mem.phase("read"):
            sl, times = read_shards(shards, int(num_nodes), ex, symmetrize=sym, remove_self_loops=remove_self_loops,
                                    dedupe=dedupe, chunk_bytes=chunk_bytes, time_column=edge_time_column)
        total = int(ex.allreduce_sum(np.array([sl.src.size], np.int64))[0])
        graph = ShardGraph(str(source), int(num_nodes), total, _Meta(Path(str(source)).parent.name or "graph"),
                           **node_data)
        if times is not None:
            graph.edata[TIME_NAME] = RankRows(sl.edge_start, times)
        names, flags = hash_splits(sl.lo, sl.hi, seed)
        if graph.label is not None:  # as one machine splits: labelled nodes only, and their class count
            labels = np.asarray(graph.label[sl.lo : sl.hi])
            low = labels[labels < -1]
            D.agree(ex.comm, ValueError(f"--label: label {int(low[0])} < -1 (-1 marks an unlabelled node)")
                    if low.size else None)
            flags[labels < 0] = 0
            graph.num_classes = int(ex.allgather(np.array([labels.max(initial=-1)], np.int64)).max()) + 1
        return D.partition_slice(graph, sl, names, flags, Path(out_dir), int(num_parts), engine=engine, mode=mode,
                                 seed=seed, overwrite=overwrite, imbalance=imbalance, ex=ex, t0=t0, command="ingest",
                                 balance=balance, coarsen=coarsen, mem=mem)

    return D.run_guarded(comm, "ingest", work)


def _check(source, out_dir, num_parts, num_nodes, engine: str, mode: str | None, overwrite: bool, ranks: int,
           time_column) -> tuple[list[S.Shard], str | None]:
    """Every rank's own checks (cheap: file headers only; nothing is written): the shards and the
    engine's mode."""
    mode = engines.check(engine, mode)
    if not isinstance(num_parts, (int, np.integer)) or num_parts < 1:
        raise ValueError(f"num_parts must be an int >= 1, got {num_parts!r}")
    if num_nodes is None or not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
        raise ValueError(f"--distributed ingest needs num_nodes (--num-nodes) >= 1: ranks cut the node range "
                         f"before all shards are read; got {num_nodes!r}")
    if num_parts > num_nodes:
        raise ValueError(f"num_parts={num_parts} exceeds the number of nodes ({num_nodes})")
    if ranks > num_nodes:
        raise ValueError(f"{ranks} ranks for {num_nodes} nodes: run at most one rank per node")
    if time_column is not None and (isinstance(time_column, bool) or not isinstance(time_column, int)
                                    or time_column < 2):
        raise ValueError(f"edge_time_column must be an int >= 2 (columns 0 and 1 are src and dst), got {time_column!r}")
    shards = S.list_shards(source)
    npy = [str(sh.path) for sh in shards if sh.kind == S.NPY]
    if time_column is not None and npy:
        raise IngestError(f"{npy[0]}: a .npy shard has no edge time column (--edge-time-column)")
    check_out_dir(out_dir, overwrite, inputs=[s.path for s in shards])
    return shards, mode


def _node_data(feat, label, num_nodes: int) -> dict:
    """``{"feat": memmap, "label": memmap}`` of the given ``.npy`` paths, checked against the graph
    (headers only; ValueError naming the file otherwise)."""
    out = {}
    for name, path, ndim, kinds in (("feat", feat, 2, "f"), ("label", label, 1, "iu")):
        if path is None:
            continue
        try:
            arr = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise ValueError(f"--{name} {path}: not a readable .npy file: {e}") from None
        if arr.ndim != ndim or arr.shape[0] != num_nodes or arr.dtype.kind not in kinds:
            want = f"[{num_nodes}, D] floats" if ndim == 2 else f"[{num_nodes}] integers"
            raise ValueError(f"--{name} {path}: expected {want}, got {arr.dtype} {list(arr.shape)}")
        out[name] = arr
    return out


def read_shards(shards: list[S.Shard], num_nodes: int, ex, *, symmetrize: bool, remove_self_loops: bool,
                dedupe: bool, chunk_bytes: int = CHUNK_BYTES,
                time_column: int | None = None) -> tuple[G.Slice, np.ndarray | None]:
    """This rank's :class:`~.graph.Slice` of the graph in ``shards`` (collective): its node
    range and their in-edges, sorted by (destination, source) and de-duplicated as ``bgl ingest``
    stores them; ``edge_start`` numbers the edges in that order over all ranks.  With
    ``time_column``, also the edges' times (int64, slice order): equal pairs stay in input order and
    a repeated pair keeps its first occurrence's time, as one machine does.  A bad shard on any
    rank raises its IngestError on every rank."""
    comm, rank = ex.comm, ex.comm.Get_rank()
    chunks = S.iter_edges(S.assign(shards, rank, ex.size), num_nodes, chunk_bytes, time_column)
    chunk = _pull(chunks, comm)
    vtxdist = _cut(chunk, num_nodes, symmetrize, remove_self_loops, ex)
    lo, hi = int(vtxdist[rank]), int(vtxdist[rank + 1])
    owner = lambda ids: np.searchsorted(vtxdist, ids, side="right").astype(np.int64) - 1  # noqa: E731
    fits = (hi - lo) * num_nodes < 2**62  # one int64 key per (dst, src) pair, else the pairs
    track = time_column is not None
    # an edge's input position: ranks read the input in order, so (rank, index on the rank) orders it
    base = np.int64(rank) << np.int64(40)
    got, positions, times, parsed = [], [], [], 0
    empty = np.zeros(0, np.int64)
    while ex.allreduce_sum(np.array([chunk is not None], np.int64))[0]:
        src, dst, t = chunk if chunk is not None else (empty, empty, empty if track else None)
        s, d, take = _entries(src, dst, symmetrize, remove_self_loops)
        arrays = [d, s] + ([base + parsed + take, t[take]] if track else [])
        parsed += src.size
        del src, dst, s, take
        received, _ = ex.route(arrays, owner(d))
        del arrays, d
        r, c = received[:2]
        got.append((r - lo) * num_nodes + c if fits else (r, c))
        if track:
            positions.append(received[2])
            times.append(received[3])
        del received, r, c
        chunk = _pull(chunks, comm)
    if track:
        dst, src, edge_times = _sort_timed(got, positions, times, lo, num_nodes, fits, dedupe)
    elif fits:
        key = np.concatenate(got) if got else empty
        del got
        key.sort()
        if dedupe and key.size:
            key = key[np.concatenate([[True], key[1:] != key[:-1]])]
        dst, src, edge_times = key // num_nodes + lo, key % num_nodes, None
        del key
    else:
        dst, src = G.sorted_pairs(np.concatenate([r for r, _ in got]), np.concatenate([c for _, c in got]), lo,
                                  num_nodes, unique=dedupe)
        edge_times = None
    indptr = np.zeros(hi - lo + 1, np.int64)
    np.cumsum(np.bincount(dst - lo, minlength=hi - lo), out=indptr[1:])
    counts = ex.allgather(np.array([src.size], np.int64)).ravel()
    log.info("rank %d: parsed %d edges; holds nodes [%d, %d) with %d in-edges", rank, parsed, lo, hi, src.size)
    return G.Slice(lo, hi, vtxdist, indptr, src, int(counts[:rank].sum())), edge_times


def _sort_timed(got: list, positions: list, times: list, lo: int, n: int, fits: bool, dedupe: bool):
    """``(dst, src, times)`` of the received entries sorted by (dst, src, input position), the
    first of each repeated pair kept when ``dedupe``: 24 B per entry more than the untimed sort."""
    pos = np.concatenate(positions)
    if fits:
        key = np.concatenate(got)
        order = np.lexsort((pos, key))
        key = key[order]
        same = key[1:] == key[:-1]
        dst, src = key // n + lo, key % n
        del key
    else:
        r, c = np.concatenate([r for r, _ in got]), np.concatenate([c for _, c in got])
        order = np.lexsort((pos, c, r))
        dst, src = r[order], c[order]
        same = (dst[1:] == dst[:-1]) & (src[1:] == src[:-1])
    edge_times = np.concatenate(times)[order]
    if dedupe and dst.size:
        keep = np.concatenate([[True], ~same])
        dst, src, edge_times = dst[keep], src[keep], edge_times[keep]
    return dst, src, edge_times


class RankRows:
    """This rank's rows ``[start, start + len(values))`` of a whole-graph edge array, read as the
    writer reads a store's (``array[start:stop]``); no other rows exist here."""

    def __init__(self, start: int, values: np.ndarray):
        self.start, self.values = start, values
        self.shape, self.dtype = values.shape, values.dtype

    def __getitem__(self, rows: slice) -> np.ndarray:
        if rows != slice(self.start, self.start + self.values.shape[0]):
            raise IndexError(f"rows {rows} of an edge array held as rows [{self.start}, "
                             f"{self.start + self.values.shape[0]}) on this rank")
        return self.values


def _pull(chunks, comm):
    """The next ``(src, dst, times)`` chunk of this rank, or None at its end; a bad shard on any
    rank is raised on every rank (collective: every rank calls it once per round)."""
    try:
        chunk, error = next(chunks, None), None
    except IngestError as e:
        chunk, error = None, e
    D.agree(comm, error)
    return chunk


def _entries(src: np.ndarray, dst: np.ndarray, symmetrize: bool, remove_self_loops: bool):
    """``(src, dst, take)``: the entries the store holds for input edges, as ``bgl ingest`` builds
    them (self-loops dropped unless kept; symmetrized, every other edge also reversed), and the
    input edge each comes from (int64 index into the chunk)."""
    take = np.flatnonzero(src != dst) if remove_self_loops else np.arange(src.size, dtype=np.int64)
    s, d = src[take], dst[take]
    if symmetrize:
        rev = take[s != d]
        s, d, take = np.concatenate([s, dst[rev]]), np.concatenate([d, src[rev]]), np.concatenate([take, rev])
    return s, d, take


def _cut(chunk, num_nodes: int, symmetrize: bool, remove_self_loops: bool, ex) -> np.ndarray:
    """``vtxdist`` from the in-entry histogram of every rank's first chunk (equal node ranges when
    no rank has an edge); collective."""
    width = -(-num_nodes // RANGE_BUCKETS)
    buckets = -(-num_nodes // width)
    hist = np.zeros(buckets, np.int64)
    if chunk is not None:
        _, dst, _ = _entries(chunk[0], chunk[1], symmetrize, remove_self_loops)
        hist += np.bincount(dst // width, minlength=buckets)
    hist = ex.allreduce_sum(hist)
    if not hist.any():
        hist[:] = 1
    return G.ranges_from_histogram(hist, width, num_nodes, ex.size)
