"""``bgl partition --distributed``: partition a store as MPI ranks on a distributed engine.

Run as ``mpirun -n R python -m bgl partition STORE OUT --parts P --distributed --engine parhip``
(or ``srun``; ``--engine ptscotch``); every rank runs this module.  No rank holds the whole graph:

1. each rank reads its node range's rows of the store (:func:`.graph.read_slice`) and builds
   its slice of the symmetric distributed CSR (:func:`.graph.symmetric_csr`);
2. with ``--coarsen`` (on from :data:`.coarsen.AUTO_MIN_NODES` nodes by default) each rank
   clusters its own vertices and the ranks contract their slices into a smaller weighted graph
   (:mod:`.coarsen`), and the fine CSR is freed; the engine (:mod:`bgl.partition.engines`: ParHIP or
   PT-Scotch, on ParMETIS's distributed CSR) assigns parts, to the clusters when coarsened (each
   vertex takes its cluster's part);
3. new ids are numbered as the one-machine writer numbers them (stable by part, then original id:
   the same partition directory for the same assignment) and the in-neighbours translated;
4. each node's rows go to the rank writing its part (:mod:`.write`), which writes it into one
   hidden work directory next to OUT (rank 0 creates and locks it); rank 0 writes
   ``partition.json`` and renames the directory into place when every rank has succeeded.

A typed store goes the same way; its relation ids and per-type rows travel too, and each part is the
typed part store the one-machine writer makes (:mod:`.typed`).

OUT must be on a filesystem all ranks see.  Bad arguments fail on every rank before any work,
with one line from rank 0.  A rank that fails later prints its error and the job ends (rank 0 ends
every rank, :mod:`.rank_watch`; ``MPI_Abort`` after it); a rank that dies (killed) is named by rank 0's
line and the job ends the same way: the other ranks end within a second and OUT is not created; rank 0's work
directory is removed by a small watcher process it starts (when rank 0 dies without finishing)
or by the next writer there, as for a killed one-machine run.

Metrics: edge cut and node/edge/train balance as the one-machine path computes them, summed over
ranks.  ``remote_sample_share`` is null: it samples multi-hop neighbourhoods of the whole graph,
which no rank holds (``metrics["remote_sample_share_note"]`` says so).
"""
from __future__ import annotations

import contextlib
import json
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

from bgl.errors import IngestError
from bgl.kernel_cache.numba_setup import prepare_numba
from bgl.output_dir import PARTITION, WorkDir, remove_stale, replace_output
from bgl.schema import id_dtype_for
from bgl.store import GraphStore

from .exchange import bcast_text
from . import coarsen as dist_coarsen
from .. import engines
from .weights import DEFAULT_BALANCE, check_balance, vertex_weights
from ..engines import EngineMissing
from ..format import FORMAT_NAME, FORMAT_VERSION, META_FILE, ORIG_EIDS_FILE, ORIG_IDS_FILE, check_out_dir, open_partition
from ..phase_memory import PhaseMemory, release_free_heap

log = logging.getLogger(__name__)
T = TypeVar("T")

SHARE_NOTE = ("not measured by --distributed: the share samples multi-hop neighbourhoods of the whole "
              "graph, which no rank holds")


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise EngineMissing("--distributed needs mpi4py and MPI: pip install 'bgl[distributed]' with Open MPI "
                            "installed (apt-get install openmpi-bin libopenmpi-dev), or run .ci/setup-mpi.sh") from None
    return MPI


def mpi_rank() -> int:
    """This process's rank in ``MPI.COMM_WORLD`` (EngineMissing, naming the fix, without mpi4py)."""
    return _mpi().COMM_WORLD.Get_rank()


#: Exceptions a failed check is raised as on every rank (by type name); anything else is a RuntimeError.
_CHECK_ERRORS = {"ValueError": ValueError, "FileExistsError": FileExistsError, "OutputError": RuntimeError,
                 "StoreFormatError": ValueError, "EngineMissing": None, "IngestError": IngestError}


def agree(comm, error: BaseException | None) -> None:
    """Raise the first failing rank's check error on every rank (prefixed with its rank unless rank
    0), so all ranks leave a failed check together; collective.  The raised error is marked
    ``_bgl_agreed``: every rank raises it, so none needs to abort the job."""
    flags = np.empty(comm.Get_size(), np.int64)
    comm.Allgather(np.array([error is not None], np.int64), flags)
    if not flags.any():
        return
    first = int(np.flatnonzero(flags)[0])
    kind = bcast_text(comm, type(error).__name__ if error is not None else "", first)
    body = bcast_text(comm, str(error) if error is not None else "", first)
    body = body if first == 0 else f"rank {first}: {body}"
    if kind == "EngineMissing":
        agreed = EngineMissing(body)
    else:
        agreed = (_CHECK_ERRORS.get(kind) or RuntimeError)(body)
    agreed._bgl_agreed = True
    raise agreed


def _check(store_path, out_dir, num_parts: int, engine: str, mode: str | None, overwrite: bool,
           ranks: int) -> tuple[GraphStore, str | None]:
    """Every rank's own checks of the arguments (cheap; nothing is written): the store and the
    engine's mode."""
    mode = engines.check(engine, mode)
    if not isinstance(num_parts, (int, np.integer)) or num_parts < 1:
        raise ValueError(f"num_parts must be an int >= 1, got {num_parts!r}")
    store = GraphStore(store_path, validate="none")
    if store.node_offset != 0 or store.global_num_nodes != store.num_nodes:
        raise ValueError(f"{store.path} is a part store; partition a whole-graph store")
    if num_parts > store.num_nodes:
        raise ValueError(f"num_parts={num_parts} exceeds the number of nodes ({store.num_nodes})")
    if ranks > store.num_nodes:
        raise ValueError(f"{ranks} ranks for {store.num_nodes} nodes: run at most one rank per node")
    check_out_dir(out_dir, overwrite, inputs=[store.path])
    return store, mode


def _watch(work: WorkDir) -> subprocess.Popen:
    """A process outside the MPI job that removes rank 0's work dir if rank 0 dies unfinished: it
    waits for its stdin to close (rank 0's exit, however it ends), then lets ``remove_stale`` take
    the dead run's lock; a finished run's dir is gone by then and nothing else is touched."""
    code = ("import sys, time, os\n"
            "from bgl.output_dir import remove_stale\n"
            "sys.stdin.buffer.read()\n"
            "deadline = time.monotonic() + 10\n"
            "while os.path.exists(sys.argv[2]) and time.monotonic() < deadline:\n"
            "    remove_stale(sys.argv[1]); time.sleep(0.1)\n")
    return subprocess.Popen([sys.executable, "-c", code, str(work.path.parent), str(work.path)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)  # holds none of the job's output pipes


def partition_distributed(store_path, out_dir, num_parts: int, *, engine: str = "auto",
                          engine_mode: str | None = None, seed: int = 0, overwrite: bool = False,
                          imbalance: float = 0.03, balance: str = DEFAULT_BALANCE,
                          coarsen: str = dist_coarsen.DEFAULT, comm=None):
    """Partition ``store_path`` into ``num_parts`` parts over the ranks of ``comm`` (default: all).

    ``engine`` : one of :data:`bgl.partition.engines.ENGINES`, or ``"auto"`` (:func:`bgl.partition.engines.resolve`: ParHIP where
    every rank has it, else PT-Scotch); ``engine_mode`` : one of its modes, None = its default
    (ParHIP: ``fastsocial``); ``balance`` : what the parts hold equal shares of
    (:mod:`.weights`: nodes and in-edges by default); ``coarsen`` : ``auto`` / ``on`` / ``off``,
    whether the engine partitions a rank-locally clustered graph (:mod:`.coarsen`).  Returns the opened :class:`~bgl.partition.format.PartitionBook` on every
    rank.  Raises ValueError / FileExistsError / :class:`~bgl.partition.engines.EngineMissing` (the same on every
    rank) for bad arguments; a rank failing after the checks aborts the MPI job.
    """
    MPI = _mpi()
    comm = comm if comm is not None else MPI.COMM_WORLD
    size = comm.Get_size()
    engine = engines.resolve(engine, comm)
    try:
        check_balance(balance)
        dist_coarsen.check_coarsen(coarsen)
        (store, mode), error = _check(store_path, out_dir, num_parts, engine, engine_mode, overwrite, size), None
    except Exception as e:  # noqa: BLE001 - every rank must learn of any rank's failed check
        store = mode = None
        error = e
    agree(comm, error)
    out = Path(out_dir)
    return run_guarded(comm, "partition", lambda: _run(store, out, int(num_parts), engine, mode, seed, overwrite,
                                                        imbalance, balance, coarsen, comm))


def run_guarded(comm, command: str, work: Callable[[], T]) -> T:
    """``work()`` on every rank, watched by rank 0 (:mod:`.rank_watch`: a rank that dies ends every
    rank at once, with bgl's line naming it); a failure that is not one :func:`agree` raised on every
    rank prints its one line and ends the job (one rank's failure must end the job, not hang it)."""
    from .rank_watch import RankWatch

    watch = RankWatch.start(comm, command)
    try:
        result = work()
    except BaseException as e:  # noqa: BLE001
        rank, size = comm.Get_rank(), comm.Get_size()
        if size == 1 or getattr(e, "_bgl_agreed", False):
            watch.close()
            raise
        _report(e, rank, size, command)
        watch.failed()
        comm.Abort(1)
        raise
    watch.close()
    return result


def _report(e: BaseException, rank: int, size: int, command: str = "partition") -> None:
    """One line on stderr naming the failing rank, its host and the error (once per error)."""
    if size > 1 and not getattr(e, "_bgl_reported", False):
        print(f"bgl {command}: error: rank {rank} of {size} on {socket.gethostname()}: "
              f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
        with contextlib.suppress(AttributeError):
            e._bgl_reported = True


def _run(store: GraphStore, out: Path, num_parts: int, engine: str, mode: str | None, seed: int,
         overwrite: bool, imbalance: float, balance: str, coarsen: str, comm):
    from . import graph as G
    from . import write as W
    from .exchange import Exchange

    ex = Exchange(comm)
    mem = PhaseMemory()
    t0 = time.perf_counter()
    with mem.phase("read"):
        sl = G.read_slice(store, comm.Get_rank(), comm.Get_size())
        names, flags = W.split_flags(store, sl.lo, sl.hi)
    return partition_slice(store, sl, names, flags, out, num_parts, engine=engine, mode=mode, seed=seed,
                           overwrite=overwrite, imbalance=imbalance, balance=balance, coarsen=coarsen, ex=ex,
                           t0=t0, mem=mem)


def partition_slice(store, sl, names: list[str], flags: np.ndarray, out: Path, num_parts: int, *, engine: str,
                    mode: str | None, seed: int, overwrite: bool, imbalance: float, ex, t0: float,
                    command: str = "partition", balance: str = DEFAULT_BALANCE, coarsen: str = dist_coarsen.DEFAULT,
                    mem: PhaseMemory | None = None):
    """Partition and write from every rank's :class:`~.graph.Slice` (collective): the steps
    after reading, shared by a store's slices and edge-list shards (:mod:`.ingest`).

    ``store`` : the whole graph's :class:`~bgl.store.GraphStore`, or an object with the attributes
    of it the writer reads (``num_nodes``, ``num_edges``, ``path``, ``meta.name``, ``label``,
    ``feat``, ``feat_encoded``, ``feat_codec``, ``num_classes``, ``edata``: arrays over the whole
    graph's ids, of which each rank reads its own rows); ``names, flags`` : this rank's split
    membership (:func:`.write.split_flags`); ``engine, mode`` : as :func:`bgl.partition.engines.check`
    returned them; ``t0`` : when reading began (``metrics["seconds"]``);
    ``command`` : the ``bgl`` command a failing rank's line names; ``coarsen`` : as
    :func:`partition_distributed`; ``mem`` : the phases measured
    so far (reading), to which this adds its own (``metrics["distributed"]["phases"]``).
    """
    from . import graph as G
    from . import write as W
    comm, rank, size = ex.comm, ex.comm.Get_rank(), ex.size
    mem = mem if mem is not None else PhaseMemory()
    with mem.phase("read"):
        typed = _typed_rows(store, sl)
    with mem.phase("jit"):  # numba's code generator, set up once per process: not per edge
        prepare_numba()
    with mem.phase("csr"):
        xadj, adjncy = G.symmetric_csr(sl, ex, store.num_nodes)
        G.drop_mapped_pages(sl.src)  # the store's rows it read: page cache, not the engine's rank memory
        release_free_heap()  # the exchange's round temporaries (glibc keeps freed blocks under 32 MiB)
    entries = adjncy.size
    log.info("rank %d: nodes [%d, %d), %d in-edges, %d undirected entries (%.1f s)", rank, sl.lo, sl.hi,
             sl.src.size, entries, time.perf_counter() - t0)
    train = typed.train_flags() if typed else flags[:, names.index("train")] if "train" in names else None
    coarse = coarse_sizes = vwgt = None
    if dist_coarsen.resolve(coarsen, store.num_nodes, num_parts):
        with mem.phase("coarsen"):
            vwgt = vertex_weights(balance, np.diff(sl.indptr), train, ex)
            coarse = dist_coarsen.coarsen(sl.vtxdist, xadj, adjncy, vwgt, num_parts, ex, seed=seed)
            xadj = adjncy = vwgt = None  # the engine sees only the coarse graph: free the fine one now
            release_free_heap()
        coarse_sizes = dist_coarsen.summary(sl.num_nodes, entries, coarse, ex)
        log.info("rank %d: coarsened %d nodes / %d entries to %d / %d", rank, sl.num_nodes, entries,
                 coarse.num_nodes, coarse.adjncy.size)
    with mem.phase("engine"):
        if num_parts == 1:
            part = np.zeros(sl.num_nodes, np.int64)
        elif coarse is not None:
            part = coarse.project(engines.part_kway(
                engine, comm, coarse.vtxdist, coarse.xadj, coarse.adjncy, num_parts, imbalance=imbalance, seed=seed,
                mode=mode, vwgt=coarse.vwgt, adjwgt=coarse.adjwgt))
        else:  # as before coarsening existed: the same answer bit for bit
            vwgt = vertex_weights(balance, np.diff(sl.indptr), train, ex)
            part = engines.part_kway(engine, comm, sl.vtxdist, xadj, adjncy, num_parts, imbalance=imbalance,
                                     seed=seed, mode=mode, vwgt=vwgt)
        del xadj, adjncy, vwgt, coarse
        release_free_heap()  # what the engine freed, so the phases after it do not carry it
    seconds = time.perf_counter() - t0
    log.info("rank %d: %s assigned %d parts (%.1f s since start)", rank, engine, num_parts, seconds)
    with mem.phase("translate"):
        rel = G.relabel(part, num_parts, ex)
        new_src = G.translate(sl.src, sl, rel.new_ids, ex, id_dtype_for(store.num_nodes))
        stats = _stats(sl, part, rel, new_src, train, num_parts, ex)
        G.drop_mapped_pages(sl.src)
        release_free_heap()
    t1 = time.perf_counter()
    work = watcher = None
    if rank == 0:
        remove_stale(out.absolute().parent)
        work = WorkDir(out, "tmp")
        watcher = _watch(work)
        np.lib.format.open_memmap(work.path / ORIG_IDS_FILE, mode="w+", dtype=np.int64, shape=(store.num_nodes,))
        np.lib.format.open_memmap(work.path / ORIG_EIDS_FILE, mode="w+", dtype=np.int64, shape=(store.num_edges,))
    path = bcast_text(comm, str(work.path) if rank == 0 else "", 0)
    try:
        with mem.phase("ship"):
            rows = W.local_rows(store, sl, rel, new_src, flags)
            del new_src
            if typed:
                typed.add_etype(rows, sl)
            got = W.ship(rows, rel.bounds, ex)
            del rows
            if typed:
                typed.ship(part, rel, ex)
            release_free_heap()
        log.info("rank %d: received %d nodes and %d edges for its parts", rank, got.nodes["deg"].size,
                 got.edges["src"].size)
        with mem.phase("write"):
            written = ex.allreduce_sum(W.write_parts(store, got, rel, Path(path), names, ex, engine, typed))
            del got
        write_seconds = time.perf_counter() - t1
        rss = ex.allgather(np.array([mem.peak_bytes()], np.int64)).ravel()
        sent = ex.allreduce_sum(np.array([ex.bytes_sent], np.int64))
        sizes = ex.allgather(np.array([sl.num_nodes, sl.src.size, entries], np.int64))
        phases = _gather_phases(mem, ex)
        if rank == 0:
            dist = {"peak_rss_bytes_per_rank": rss.tolist(), "bytes_exchanged": int(sent[0]),
                    "local_nodes_per_rank": sizes[:, 0].tolist(), "local_edges_per_rank": sizes[:, 1].tolist(),
                    "csr_entries_per_rank": sizes[:, 2].tolist(), "phases": phases,
                    "phase_peaks_own": bool(mem.resettable), "coarsen": coarse_sizes}
            _finish(store, work, out, overwrite, rel, written, stats, engine, mode, seed, imbalance, size,
                    seconds, write_seconds, dist, typed.partition_meta() if typed else {}, balance, coarsen)
        comm.Barrier()
    except BaseException as e:
        _report(e, rank, size, command)  # before the cleanup: the other ranks' aborts may end this one any moment
        if work is not None:
            work.remove()
        raise
    finally:
        if watcher is not None:
            watcher.stdin.close()
            watcher.wait(timeout=30)
    return open_partition(out)


def _gather_phases(mem: PhaseMemory, ex) -> list[dict]:
    """Every rank's phases (the same names in the same order on every rank: the steps are
    collective), as ``[{name, seconds_per_rank, start_bytes_per_rank, peak_bytes_per_rank}]``; a
    name measured twice (reading, then a typed store's rows) is merged: summed seconds, the first start,
    the highest peak."""
    merged: dict[str, list[float]] = {}
    for p in mem.phases:
        s, a, b = merged.get(p.name, (0.0, p.start_bytes, 0))
        merged[p.name] = [s + p.seconds, a, max(b, p.peak_bytes)]
    table = ex.allgather(np.array(list(merged.values()), np.float64).reshape(-1, 3))
    return [{"name": name, "seconds_per_rank": table[:, i, 0].tolist(),
             "start_bytes_per_rank": table[:, i, 1].astype(np.int64).tolist(),
             "peak_bytes_per_rank": table[:, i, 2].astype(np.int64).tolist()} for i, name in enumerate(merged)]


def _typed_rows(store, sl):
    """A typed store's :class:`~.typed.TypedRows` of this rank's slice (None for an untyped one)."""
    if not getattr(store, "is_typed", False):
        return None
    from .typed import TypedRows

    return TypedRows(store, sl)


def _stats(sl, part: np.ndarray, rel, new_src: np.ndarray, train_flags: np.ndarray | None, num_parts: int,
           ex) -> dict:
    """Edge cut count and per-part loads, summed over ranks (the one-machine metrics' inputs); the
    cut is counted a chunk of rows at a time (no per-edge part arrays of the whole slice)."""
    from . import graph as G

    cut = 0
    rows = np.searchsorted(sl.indptr, np.arange(0, int(sl.indptr[-1]), G.TRANSLATE_CHUNK), side="right") - 1
    for a, b in zip(rows, [*rows[1:], sl.num_nodes]):
        e0, e1 = int(sl.indptr[a]), int(sl.indptr[b])
        dst_part = np.repeat(part[a:b], np.diff(sl.indptr[a : b + 1]))
        cut += np.count_nonzero(np.searchsorted(rel.bounds, new_src[e0:e1], side="right") - 1 != dst_part)
    cut = ex.allreduce_sum(np.array([cut], np.int64))[0]
    train = np.zeros(sl.num_nodes) if train_flags is None else train_flags.astype(np.float64)
    loads = np.stack([np.bincount(part, minlength=num_parts).astype(np.float64),
                      np.bincount(part, weights=np.diff(sl.indptr).astype(np.float64), minlength=num_parts),
                      np.bincount(part, weights=train, minlength=num_parts)])
    return {"cut": int(cut), "loads": ex.allreduce_sum(loads)}


def _balance(load: np.ndarray) -> float:
    return float(load.max() / load.mean()) if load.sum() > 0 else 1.0


def _finish(store, work: WorkDir, out: Path, overwrite: bool, rel, written: np.ndarray, stats: dict, engine: str,
            mode: str | None, seed: int, imbalance: float, size: int, seconds: float, write_seconds: float,
            dist: dict, typed_meta: dict, balance: str, coarsen: str) -> None:
    """Rank 0: partition.json (``dist`` : the per-rank measurements of ``metrics["distributed"]``,
    ``typed_meta`` : what a typed partition adds), a check that the directory opens, and the rename
    into place."""
    n, e = store.num_nodes, store.num_edges
    bounds = rel.bounds
    parts = [{"part": k, "store": f"part-{k}", "node_start": int(bounds[k]), "node_end": int(bounds[k + 1]),
              "num_nodes": int(bounds[k + 1] - bounds[k]), "num_edges": int(written[k, 0]),
              "num_train": int(written[k, 1])} for k in range(bounds.size - 1)]
    loads = stats["loads"]
    metrics = {"edge_cut": stats["cut"] / e if e else 0.0, "remote_sample_share": None,
               "balance_nodes": _balance(loads[0]), "balance_edges": _balance(loads[1]),
               "balance_train": _balance(loads[2]), "seconds": seconds, "write_seconds": write_seconds,
               "peak_rss_bytes": int(max(dist["peak_rss_bytes_per_rank"])), "sampler": "",
               "remote_sample_share_note": SHARE_NOTE,
               "distributed": {"ranks": size, "engine": engine, "engine_mode": mode, **dist}}
    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "method": engine,
            "params": {"seed": seed, "distributed": True, "ranks": size, "imbalance": imbalance, "engine_mode": mode,
                       "balance": balance, "coarsen": coarsen},
            "num_parts": bounds.size - 1, "num_nodes": n, "num_edges": e, "source_store": str(store.path),
            "parts": parts, "metrics": metrics, **typed_meta}
    (work.path / META_FILE).write_text(json.dumps(meta, indent=2))
    open_partition(work.path)  # never rename an inconsistent partition into place
    replace_output(work, out, PARTITION, overwrite)
