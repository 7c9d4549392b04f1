"""``bgl partition --distributed --engine ptscotch|parhip`` as real MPI ranks (mpirun, 2 and 3 ranks).

Needs Open MPI, mpi4py and PT-Scotch's 64-bit ParMETIS library; ``.ci/setup-mpi.sh`` installs
them (root, network) when missing, else the tests skip saying what is missing.  The ParHIP cases
also need ``libparhip_interface.so``: ``.ci/setup-parhip.sh`` builds it once (cmake, a few
minutes) into ~/.cache/bgl/parhip-VERSION, where later runs find it.  The distributed
partition must be the very directory the one-machine writer makes for the same assignment, hold
exactly the store's edges, features and edge arrays, and serve; a rank that dies or fails ends the
job and leaves nothing behind.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bgl.partition import metrics as M
from bgl.partition.format import open_partition, write_partition
from bgl.partition.graph_input import GraphInput
from bgl.store import GraphStore, write_store

from ..bgl.conftest import _serve_partition
from .conftest import csc_from_edges

REPO = Path(__file__).resolve().parents[2]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "NUMBA_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="session")
def parhip_lib():
    """ParHIP's library, built by .ci/setup-parhip.sh when missing (cached across runs under
    ~/.cache/bgl); skip, saying why, when it cannot be built here (no cmake, MPI or network)."""
    from bgl.partition.parhip_engine import library_dir, library_path

    if library_path() is not None:
        return
    setup = REPO / ".ci" / "setup-parhip.sh"
    done = subprocess.run(["bash", str(setup), sys.prefix], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or library_path() is None:
        pytest.skip(f"no libparhip_interface.so in {library_dir()} and {setup} could not build it: "
                    f"{(done.stderr or done.stdout).strip()[-500:]}")


@pytest.fixture
def engine(request, mpi) -> str:
    """The engine a test is parametrized with (``indirect``), its library made ready first."""
    if request.param == "parhip":
        request.getfixturevalue("parhip_lib")
    return request.param


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory) -> GraphStore:
    """1,500 nodes of 6 loose communities, both edge directions mostly but not always stored, a
    few self-loops, features, labels, splits and two edge arrays."""
    rng = np.random.default_rng(7)
    n, m = 1500, 9000
    comm = rng.integers(0, 6, n)
    src = rng.integers(0, n, m)
    same = rng.random(m) < 0.85
    pool = [np.flatnonzero(comm == c) for c in range(6)]
    dst = np.where(same, [pool[comm[s]][rng.integers(0, pool[comm[s]].size)] for s in src], rng.integers(0, n, m))
    indptr, indices = csc_from_edges(n, np.concatenate([src, dst[:6000]]), np.concatenate([dst, src[:6000]]))
    # a few self-loops: kept in the parts, dropped from the engine's graph
    loops = np.arange(0, n, 97)
    dst_of = np.repeat(np.arange(n), np.diff(indptr))
    dst_of, indices = np.concatenate([dst_of, loops]), np.concatenate([indices, loops])
    order = np.argsort(dst_of, kind="stable")
    indices = indices[order]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst_of, minlength=n), out=indptr[1:])
    e = indices.size
    ids = rng.permutation(n)
    splits = {"train": np.sort(ids[:600]), "val": np.sort(ids[600:800]), "test": np.sort(ids[800:1000])}
    return write_store(tmp_path_factory.mktemp("dstore") / "g", indptr, indices,
                       feat=rng.standard_normal((n, 5)).astype(np.float32), label=comm, splits=splits,
                       num_classes=6, name="dist", edata={"weight": rng.random(e).astype(np.float32),
                                                          "pair": rng.integers(0, 9, (e, 2))},
                       ndata={"timestamp": rng.integers(0, 10**6, n)})  # with its per-edge source copy in parts


def mpirun(ranks: int, args: list[str], timeout: float = 120, script: list[str] | None = None,
           env: dict | None = None):
    """Run ``bgl partition ARGS --distributed`` (or ``script``) on ``ranks`` local ranks."""
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable,
           *(script or ["-m", "bgl"]), "partition", *args, "--distributed"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **MPI_ENV, **(env or {})})


def part_of(book) -> np.ndarray:
    """The assignment a partition directory encodes (original id -> part)."""
    out = np.empty(book.num_nodes, np.int64)
    for k in range(book.num_parts):
        out[np.asarray(book.orig_ids[book.bounds[k] : book.bounds[k + 1]])] = k
    return out


def same_dirs(a: Path, b: Path) -> None:
    """Every file under ``a`` is under ``b`` with equal arrays (.npy) or equal JSON (meta.json)."""
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for f in files:
        if f.suffix == ".npy":
            x, y = np.load(a / f), np.load(b / f)
            assert x.dtype == y.dtype and np.array_equal(x, y), f
        elif f.name == "meta.json":
            assert json.loads((a / f).read_text()) == json.loads((b / f).read_text()), f


# ParHIP on 2 and 3 ranks, parts = and != ranks; --parts 1 runs no engine
@pytest.mark.parametrize("engine, ranks, parts", [("ptscotch", 2, 2), ("ptscotch", 3, 4),
                                                  pytest.param("ptscotch", 3, 2, marks=pytest.mark.extended),
                                                  ("ptscotch", 2, 1), ("parhip", 2, 2), ("parhip", 3, 4)],
                         indirect=["engine"])
def test_distributed_partition_is_the_one_machine_directory(engine, edge_store, tmp_path, ranks, parts):
    out = tmp_path / "dist"
    done = mpirun(ranks, [str(edge_store.path), str(out), "--parts", str(parts), "--engine", engine])
    assert done.returncode == 0, done.stderr[-3000:]
    assert_one_machine_directory(done, edge_store, out, tmp_path, engine, ranks, parts)


def assert_one_machine_directory(done, store: GraphStore, out: Path, tmp_path: Path, engine: str, ranks: int,
                                 parts: int):
    """The partition ``done`` (a finished ``bgl partition --distributed``) wrote at ``out`` is the directory
    the one-machine writer makes of ``store`` for the same assignment, with exactly the store's edges and
    the one-machine metrics; returns it opened."""
    assert done.stdout.count("wrote ") == 1  # rank 0 reports, the others stay quiet
    book = open_partition(out)
    assign = part_of(book)
    assert np.bincount(assign, minlength=parts).min() > 0
    one = write_partition(store, assign, parts, tmp_path / "one", method=engine)
    for k in range(parts):
        same_dirs(book.part_path(k), one.part_path(k))
    assert np.array_equal(book.orig_ids, one.orig_ids) and np.array_equal(book.orig_eids, one.orig_eids)
    assert book.meta["parts"] == one.meta["parts"]
    # exactly the store's edges, in original ids
    got = np.concatenate([book.orig_ids[np.repeat(np.arange(book.bounds[k], book.bounds[k + 1]),
                                                  np.diff(book.part_store(k).indptr))] * book.num_nodes
                          + book.orig_ids[np.asarray(book.part_store(k).indices)] for k in range(parts)])
    dst = np.repeat(np.arange(store.num_nodes), np.diff(store.indptr))
    assert np.array_equal(np.sort(got), np.sort(dst * store.num_nodes + np.asarray(store.indices)))
    # the metrics the one-machine path computes, from the ranks' sums
    graph = GraphInput.from_store(store)
    m = book.metrics
    assert m["edge_cut"] == pytest.approx(M.edge_cut(graph, assign))
    bal = M.balance(graph, assign, parts)
    assert (m["balance_nodes"], m["balance_edges"], m["balance_train"]) == pytest.approx(
        (bal["nodes"], bal["edges"], bal["train"]))
    assert m["remote_sample_share"] is None and "not measured" in m["remote_sample_share_note"]
    assert m["distributed"]["ranks"] == ranks and len(m["distributed"]["peak_rss_bytes_per_rank"]) == ranks
    assert book.meta["method"] == m["distributed"]["engine"] == engine
    assert m["distributed"]["engine_mode"] == book.meta["params"]["engine_mode"] == (
        "fastsocial" if engine == "parhip" else None)
    # both engines get the same balance target (3 %) on the default weights, a node weighing as many edges
    # as the mean in-degree (partition/distributed/weights.py): every part's d * nodes + in-edges within ~1.06x
    # of the mean (rounding; PT-Scotch reaches ~1.05)
    assert book.meta["params"]["imbalance"] == 0.03 and book.meta["params"]["balance"] == "nodes+edges"
    n, e = store.num_nodes, store.num_edges
    d = max(1, round(e / n))
    weights = [d * p["num_nodes"] + p["num_edges"] for p in book.meta["parts"]]
    assert max(weights) <= 1.06 * (d * n + e) / parts, weights
    # a community graph: the engine cuts far less than a random split (~5/6 for 6 parts)
    assert m["edge_cut"] < 0.5
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]
    return book


def test_distributed_partition_serves_the_store(mpi, edge_store, tmp_path):
    from bgl.sampler import LocalSampler, SamplingClient

    out = tmp_path / "dist"
    done = mpirun(2, [str(edge_store.path), str(out), "--parts", "2"])
    assert done.returncode == 0, done.stderr[-3000:]
    book = open_partition(out)
    orig = np.asarray(book.orig_ids)
    seeds = np.random.default_rng(3).permutation(book.num_nodes)[:200]  # both parts, mixed order
    whole = LocalSampler(edge_store)
    with _serve_partition(book, tmp_path) as addresses, SamplingClient(addresses, timeout=120) as client:
        got = client.sample_blocks(seeds, [-1], seed=1)[0]
        want = whole.sample_blocks(orig[seeds], [-1], seed=1)[0]
        nbrs = lambda b, ids: {int(ids[d]): sorted(ids[b.src_ids.numpy()[b.indices.numpy()[  # noqa: E731
            b.indptr.numpy()[j]:b.indptr.numpy()[j + 1]]]].tolist()) for j, d in enumerate(b.dst_ids.numpy())}
        assert nbrs(got, orig) == nbrs(want, np.arange(book.num_nodes))
        assert np.array_equal(client.fetch_features(seeds).numpy(), np.asarray(edge_store.feat)[orig[seeds]])
        assert np.array_equal(client.fetch_labels(seeds).numpy(), np.asarray(edge_store.label)[orig[seeds]])


FAILING_RANK = """\
import os, signal, sys, time
from mpi4py import MPI
import bgl.partition.distributed.write as W
import bgl.partition.engines as E
write, part_kway = W._write_part_store, E.part_kway
def mark():  # when rank 1 goes (killed-at), so a test times the job's end from then, not from its start
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "killed-at"), "w") as f:
        f.write(repr(time.time()))
def die():
    mark()
    os.kill(os.getpid(), signal.SIGKILL)
def failing(*args, **kwargs):
    result = write(*args, **kwargs)  # the part is in the work dir when rank 1 goes
    if MPI.COMM_WORLD.Get_rank() == 1:
        if sys.argv[1] == "kill":
            die()
        mark()
        raise OSError("disk full (injected)")
    return result
def dying_engine(*args, **kwargs):  # rank 1 dies as the engine starts: the others wait in its collectives
    if MPI.COMM_WORLD.Get_rank() == 1:
        die()
    return part_kway(*args, **kwargs)
W._write_part_store = failing
E.part_kway = dying_engine if sys.argv[1] == "kill-in-engine" else part_kway
from bgl.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("engine, how", [("ptscotch", "kill"), pytest.param("ptscotch", "raise", marks=pytest.mark.extended),
                                         ("parhip", "kill-in-engine")],
                         indirect=["engine"])
def test_a_failing_rank_ends_the_job_and_leaves_nothing(engine, edge_store, tmp_path, how):
    script = tmp_path / "failing.py"
    script.write_text(FAILING_RANK)
    out = tmp_path / "out" / "dist"
    out.parent.mkdir()
    done = mpirun(3, [str(edge_store.path), str(out), "--parts", "3", "--engine", engine], script=[str(script), how],
                  timeout=120)
    assert done.returncode != 0
    if how == "raise":
        assert "rank 1 of 3" in done.stderr and "disk full (injected)" in done.stderr
        assert "died" not in done.stderr, done.stderr[-3000:]  # its own line only, not also a death
    else:
        assert_bgl_names_the_dead_rank(done.stderr, 1, 3)
    # timed from rank 1's end, not the job's start (< 45 s from the start failed on a loaded box)
    assert_ended_soon_after_the_death(script.parent / "killed-at", done.stderr)
    assert_left_nothing(out)


#: How soon after a rank's death (or failure) the job must have ended (mpirun returned): bgl ends every
#: rank within milliseconds; the rest is mpirun's teardown on a loaded 2-core box.
ENDS_WITHIN = 15.0


def assert_ended_soon_after_the_death(killed_at: Path, stderr: str) -> None:
    """mpirun has just returned: no more than :data:`ENDS_WITHIN` seconds after the rank's death (the
    time FAILING_RANK wrote before its SIGKILL), however long the job took to get there."""
    after = time.time() - float(killed_at.read_text())
    assert 0 <= after < ENDS_WITHIN, f"the job ended {after:.1f} s after the death\n{stderr[-3000:]}"


def assert_bgl_names_the_dead_rank(stderr: str, rank: int, size: int, address: str | None = None) -> None:
    """bgl's own line (partition/distributed/rank_watch.py), not MPI's runtime's, names the killed rank,
    its pid and host (and the address it reached rank 0 from, when given); once."""
    where = re.escape(address) if address else r"[\d.]+"
    found = re.findall(rf"^bgl partition: error: rank {rank} of {size} \(pid \d+ on host \S+, address {where}\) "
                       r"died before the job finished; bgl ends every rank$", stderr, re.M)
    assert len(found) == 1, stderr[-3000:]


def assert_left_nothing(out: Path) -> None:
    """Neither ``out`` nor anything else is in its (otherwise empty) parent once a failed job has
    ended, and no process mentions it."""
    deadline = time.monotonic() + 15  # rank 0's watcher removes its work dir once rank 0 is gone
    while list(out.parent.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not out.exists()
    assert list(out.parent.iterdir()) == []
    # no rank outlives the job (mpirun ends them all; a rank stuck in ParHIP would show here)
    ps = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert ps.stdout.strip() == "", ps.stdout


def test_the_default_engine_is_parhip_where_every_rank_has_it(mpi, parhip_lib, edge_store, tmp_path):
    """No ``--engine``: ``auto`` runs ParHIP (built here) and says so in partition.json; the fallback to
    PT-Scotch when no rank has ParHIP is the last case of the next test."""
    out = tmp_path / "auto"
    done = mpirun(2, [str(edge_store.path), str(out), "--parts", "2"])
    assert done.returncode == 0, done.stderr[-3000:]
    book = open_partition(out)
    assert book.meta["method"] == book.metrics["distributed"]["engine"] == "parhip"
    assert book.metrics["distributed"]["engine_mode"] == "fastsocial"


def test_balance_nodes_is_the_engines_unit_weights(mpi, parhip_lib, edge_store, tmp_path):
    """``--balance nodes``: no vertex weights, node counts within the 3 % target, and the choice recorded."""
    out = tmp_path / "nodes"
    done = mpirun(2, [str(edge_store.path), str(out), "--parts", "3", "--engine", "parhip", "--balance", "nodes"])
    assert done.returncode == 0, done.stderr[-3000:]
    book = open_partition(out)
    assert book.meta["params"]["balance"] == "nodes" and book.metrics["balance_nodes"] <= 1.04


# coarsened (partition/distributed/coarsen.py): the engine partitions rank-local clusters with edge weights, and the
# directory still holds exactly the store's edges, balanced within the target (assert_one_machine_directory)
@pytest.mark.parametrize("engine, ranks, parts", [("ptscotch", 3, 4), pytest.param("parhip", 2, 2, marks=pytest.mark.extended),
                                                  ("parhip", 3, 4)],
                         indirect=["engine"])
def test_coarsened_partition_is_the_one_machine_directory(engine, edge_store, tmp_path, ranks, parts):
    out = tmp_path / "dist"
    done = mpirun(ranks, [str(edge_store.path), str(out), "--parts", str(parts), "--engine", engine, "--coarsen", "on"])
    assert done.returncode == 0, done.stderr[-3000:]
    book = assert_one_machine_directory(done, edge_store, out, tmp_path, engine, ranks, parts)
    d = book.metrics["distributed"]
    c = d["coarsen"]
    assert book.meta["params"]["coarsen"] == "on"
    assert c["fine_nodes_per_rank"] == d["local_nodes_per_rank"] and c["fine_entries_per_rank"] == d["csr_entries_per_rank"]
    assert sum(c["coarse_nodes_per_rank"]) < sum(c["fine_nodes_per_rank"]) / 3
    # entries shrink less: clusters are rank-local, and most of this shuffled graph's edges cross ranks
    assert 0 < sum(c["coarse_entries_per_rank"]) < 0.8 * sum(c["fine_entries_per_rank"])
    assert "coarsen" in [p["name"] for p in d["phases"]]


def test_coarsen_off_is_the_uncoarsened_answer(mpi, parhip_lib, edge_store, tmp_path):
    """``--coarsen off`` (and ``auto`` on a graph this small) hands the engine the fine graph, as before
    coarsening existed: the same assignment; ``on`` gives another one."""
    books = {}
    for how in ("off", "auto", "on"):
        done = mpirun(2, [str(edge_store.path), str(tmp_path / how), "--parts", "3", "--engine", "parhip",
                          "--coarsen", how])
        assert done.returncode == 0, done.stderr[-3000:]
        books[how] = open_partition(tmp_path / how)
    assert np.array_equal(part_of(books["off"]), part_of(books["auto"]))
    assert not np.array_equal(part_of(books["off"]), part_of(books["on"]))
    assert books["off"].metrics["distributed"]["coarsen"] is None
    assert "coarsen" not in [p["name"] for p in books["off"].metrics["distributed"]["phases"]]
    assert [books[h].meta["params"]["coarsen"] for h in ("off", "auto", "on")] == ["off", "auto", "on"]


def test_bad_arguments_fail_once_before_any_work(mpi, edge_store, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("x")
    (tmp_path / "taken" / "no-parhip").mkdir()
    no_lib = {"BGL_PARHIP_DIR": str(tmp_path / "taken" / "no-parhip")}
    for args, want, env in (
            ([str(tmp_path / "p"), "--parts", "0"], "num_parts must be an int >= 1, got 0", None),
            ([str(tmp_path / "p"), "--parts", "99999"], "num_parts=99999 exceeds the number of nodes", None),
            ([str(tmp_path / "taken"), "--parts", "2"], "already exists", None),
            ([str(tmp_path / "p"), "--parts", "2", "--method", "metis"], "--distributed uses --engine", None),
            ([str(tmp_path / "p"), "--parts", "2", "--engine", "parhip"],
             f"no libparhip_interface.so in {no_lib['BGL_PARHIP_DIR']} ($BGL_PARHIP_DIR", no_lib),
            # the default --engine auto, with no ParHIP on any rank: PT-Scotch, which has no modes
            ([str(tmp_path / "p"), "--parts", "2", "--engine-mode", "fastsocial"], "--engine ptscotch has no modes",
             no_lib)):
        done = mpirun(2, [str(edge_store.path), *args], env=env)
        assert done.returncode != 0
        errors = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1 and want in errors[0], done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


EXCHANGE = """\
import sys
import numpy as np
from mpi4py import MPI
from bgl.partition.distributed.exchange import Exchange
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
def rows_of(r):  # what rank r sends: (values [k, 3] int16, destinations)
    rng = np.random.default_rng(r)
    k = int(rng.integers(0, 40))
    return rng.integers(-999, 999, (k, 3)).astype(np.int16), rng.integers(0, size, k)
ex = Exchange(comm, round_bytes=int(sys.argv[1]))
values, dest = rows_of(rank)
(got,), counts = ex.route([values], dest)
want = [v[d == rank] for v, d in (rows_of(r) for r in range(size))]
assert np.array_equal(got, np.concatenate(want)), (rank, got, want)
assert counts.tolist() == [w.shape[0] for w in want]
back = ex.reply(got, counts)  # answers return in the order the requests were sent (stable by rank)
assert np.array_equal(back, values[np.argsort(dest, kind="stable")])
print("ok", rank, ex.bytes_sent)
"""


@pytest.mark.parametrize("round_bytes", [5, 1 << 20])
def test_exchange_moves_rows_in_rounds(mpi, tmp_path, round_bytes):
    """Small rounds (5 bytes: rows split across messages) give the same rows as one round."""
    script = tmp_path / "exchange.py"
    script.write_text(EXCHANGE)
    cmd = ["mpirun", "--oversubscribe", "-n", "3", sys.executable, str(script), str(round_bytes)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, **MPI_ENV})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("ok") == 3
