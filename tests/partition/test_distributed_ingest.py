"""``bgl ingest --distributed`` from edge-list shards as real MPI ranks (mpirun, 2 and 3 ranks).

The partition directory the ranks write from shards must hold exactly what a one-machine
``bgl ingest`` of the concatenated shards stores (same edges, same edge ids, after the same
self-loop, duplicate and symmetrize handling), laid out as the one-machine writer lays out the
same assignment, and serve; bad shards fail with one line naming the file and line, leaving
nothing.  Needs what tests/partition/test_distributed_partition.py needs (its ``mpi`` fixture).
"""
from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bgl.partition.distributed.ingest import hash_splits
from bgl.partition.format import open_partition, write_partition
from bgl.sources.datasets import ingest

from ..bgl.conftest import _serve_partition
from .test_distributed_partition import MPI_ENV, engine, parhip_lib, part_of  # noqa: F401 - fixtures

N = 900


def _edges(seed: int) -> np.ndarray:
    """[E, 2] edges of 6 loose communities, with self-loops and repeated edges (some reversed)."""
    rng = np.random.default_rng(seed)
    comm = rng.integers(0, 6, N)
    src = rng.integers(0, N, 7000)
    pool = [np.flatnonzero(comm == c) for c in range(6)]
    dst = np.array([pool[comm[s]][rng.integers(0, pool[comm[s]].size)] for s in src])
    dst = np.where(rng.random(src.size) < 0.85, dst, rng.integers(0, N, src.size))
    e = np.stack([src, dst], 1)
    e[:40, 1] = e[:40, 0]
    return np.concatenate([e, e[100:400], e[400:600, ::-1]])[rng.permutation(e.shape[0] + 500)]


def _write_shards(root, edges: np.ndarray) -> str:
    """Shards of mixed kinds and sizes (one large text file, so ranks split it by bytes): text with
    a column-name row and comments, CSV, gzip, .npy and Parquet (.npy without pyarrow; text when
    ``edges`` has a third column, edge times).  Returns their glob."""
    a, b, c, d = np.split(edges, [5000, 5800, 6600])
    text = lambda rows, sep=" ": "".join(sep.join(map(str, row)) + "\n" for row in rows)  # noqa: E731
    (root / "part-0.txt").write_text("src dst t\n# the first shard\n" + text(a[:10]) + "% a comment\n\n"
                                     + text(a[10:]))
    (root / "part-1.txt").write_text(text(b, ","))
    with gzip.open(root / "part-2.txt.gz", "wt") as f:
        f.write(text(c, "\t"))
    if edges.shape[1] == 2:
        np.save(root / "part-3.npy", d[:300].astype(np.int32))
        try:  # row groups of a Parquet shard, where pyarrow is installed (bgl[distributed])
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({"src": d[300:, 0], "dst": d[300:, 1]}), root / "part-4.parquet", row_group_size=40)
        except ImportError:
            np.save(root / "part-4.npy", d[300:])
    else:
        (root / "part-3.txt").write_text(text(d))
    return str(root / "part-*")


def mpirun_ingest(ranks: int, args: list[str], timeout: float = 120):
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable, "-m", "bgl", "ingest", *args, "--distributed"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **MPI_ENV})


def _arrays(path):
    """A part store's arrays by file name, except the splits (hashed here, permuted on one machine)."""
    return {p.name: np.load(p) for p in sorted(path.glob("*.npy")) if not p.name.endswith("_idx.npy")}


# ParHIP on 2 ranks with node data, edge times and serving (the 2-rank branch), parts != ranks
@pytest.mark.parametrize("engine, ranks, parts, flags", [("ptscotch", 2, 2, ["--symmetrize"]),
                                                         ("ptscotch", 3, 4, ["--keep-duplicates", "--keep-self-loops"]),
                                                         ("parhip", 2, 3, ["--symmetrize"]),
                                                         ("parhip", 3, 2, ["--coarsen", "on"])], indirect=["engine"])
def test_shards_give_the_one_machine_partition(engine, tmp_path, ranks, parts, flags):
    node_data = ranks == 2  # the 2-rank cases also read node data and edge times, and serve
    book, store, feat = shards_give_the_one_machine_partition(mpirun_ingest, tmp_path, engine, ranks, parts, flags,
                                                              node_data=node_data)
    if node_data:
        _serves_the_store(book, store, tmp_path, feat)


def shards_give_the_one_machine_partition(run, tmp_path, engine: str, ranks: int, parts: int, flags: list[str], *,
                                          node_data: bool):
    """``run(ranks, args)`` (``bgl ingest ARGS --distributed`` on ``ranks`` ranks) of shards of a
    community graph into ``tmp_path/dist``, checked against a one-machine ``bgl ingest`` of the
    concatenated shards and the one-machine writer of the same assignment: the same edges, edge ids,
    node data (``node_data``: features, labels and edge times too) and layout.  Returns ``(partition,
    one-machine store, features)``."""
    edges = _edges(ranks)
    out = tmp_path / "dist"
    rng = np.random.default_rng(ranks)
    feat, label = rng.standard_normal((N, 3)).astype(np.float32), rng.integers(-1, 5, N)
    if node_data:  # node data from .npy memmaps, each rank reading its rows; edge times (repeats differ)
        np.save(tmp_path / "feat.npy", feat)
        np.save(tmp_path / "label.npy", label)
        flags = [*flags, "--feat", str(tmp_path / "feat.npy"), "--label", str(tmp_path / "label.npy"),
                 "--edge-time-column", "2"]
        edges = np.concatenate([edges, rng.integers(0, 10**12, (edges.shape[0], 1))], axis=1)
    pattern = _write_shards(tmp_path, edges)
    done = run(ranks, [pattern, str(out), "--parts", str(parts), "--num-nodes", str(N), "--engine", engine, *flags])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("wrote ") == 1
    book = open_partition(out)
    assert (book.metrics["distributed"]["coarsen"] is not None) == ("--coarsen" in flags)
    # one machine: `bgl ingest` of the concatenated shards, then the same assignment written
    whole = tmp_path / "whole.txt"
    whole.write_text("".join(" ".join(map(str, row)) + "\n" for row in edges))
    store = ingest(whole, tmp_path / "store", "edgelist", num_nodes=N, symmetrize="--symmetrize" in flags,
                   remove_self_loops="--keep-self-loops" not in flags, dedupe="--keep-duplicates" not in flags,
                   **({"edge_time_column": 2} if node_data else {}))
    assert book.num_edges == store.num_edges
    assert book.meta["method"] == engine
    one = write_partition(store, part_of(book), parts, tmp_path / "one", method=engine)
    assert np.array_equal(book.orig_ids, one.orig_ids) and np.array_equal(book.orig_eids, one.orig_eids)
    names, in_split = hash_splits(0, N, 0)
    if node_data:
        in_split[label < 0] = 0  # as one machine splits: labelled nodes only
    orig = np.asarray(book.orig_ids)
    for k in range(parts):
        got, want = _arrays(book.part_path(k)), _arrays(one.part_path(k))
        lo, hi = book.bounds[k], book.bounds[k + 1]
        if node_data:
            assert np.array_equal(got.pop("feat.npy"), feat[orig[lo:hi]])
            assert np.array_equal(got.pop("label.npy"), label[orig[lo:hi]])
            assert book.part_store(k).num_classes == 5
        assert got.keys() == want.keys() and all(np.array_equal(got[f], want[f]) for f in got), k
        if node_data:  # the first occurrence's time of a repeated edge, as on one machine
            times = book.part_store(k).edge_array("timestamp")
            assert times.dtype == np.int64 and np.array_equal(times, one.part_store(k).edge_array("timestamp"))
        for j, split in enumerate(names):  # the split each node's id hashes to, in new ids
            ids = np.load(book.part_path(k) / f"{split}_idx.npy")
            assert np.array_equal(ids, lo + np.flatnonzero(in_split[orig[lo:hi], j]))
    assert [{**p, "num_train": 0} for p in book.meta["parts"]] == [{**p, "num_train": 0} for p in one.meta["parts"]]
    assert book.metrics["edge_cut"] < 0.5  # the engine saw the communities
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    return book, store, feat


def _serves_the_store(book, store, tmp_path, feat):
    from bgl.sampler import LocalSampler, SamplingClient

    orig = np.asarray(book.orig_ids)
    seeds = np.random.default_rng(3).permutation(book.num_nodes)[:150]
    with _serve_partition(book, tmp_path) as addresses, SamplingClient(addresses, timeout=120) as client:
        got = client.sample_blocks(seeds, [-1], seed=1)[0]
        want = LocalSampler(store).sample_blocks(orig[seeds], [-1], seed=1)[0]
        nbrs = lambda b, ids: {int(ids[d]): sorted(ids[b.src_ids.numpy()[b.indices.numpy()[  # noqa: E731
            b.indptr.numpy()[j]:b.indptr.numpy()[j + 1]]]].tolist()) for j, d in enumerate(b.dst_ids.numpy())}
        assert nbrs(got, orig) == nbrs(want, np.arange(book.num_nodes))
        assert np.array_equal(client.fetch_features(seeds).numpy(), feat[orig[seeds]])


def test_bad_shards_fail_with_one_line_and_leave_nothing(mpi, tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    pattern = _write_shards(shards, _edges(5))
    bad = shards / "part-1.txt"  # the second shard: rank 1's share of 3 ranks
    lines = bad.read_text().splitlines(keepends=True)
    out = tmp_path / "out"
    cases = []
    for line, want in ((f"{N} 4\n", f"{bad}:201: node id {N} >= num_nodes {N}"),
                       ("5 x\n", f"{bad}:201: malformed line")):
        cases.append((lambda text=line: bad.write_text("".join(lines[:200] + [text] + lines[200:])), pattern, want))
    cases.append((lambda: None, str(tmp_path / "none-*.txt"), f"no edge-list shards match '{tmp_path}/none-*.txt'"))
    cases.append((lambda: None, pattern, "--feat-dim does not apply to --distributed", "--feat-dim", "4"))
    np.save(shards / "feat.npy", np.zeros((N - 1, 2), np.float32))
    cases.append((lambda: None, pattern, f"--feat {shards}/feat.npy: expected [{N}, D] floats, got float32 "
                  f"[{N - 1}, 2]", "--feat", str(shards / "feat.npy")))
    for prepare, source, want, *more in cases:
        prepare()
        done = mpirun_ingest(3, [source, str(out), "--parts", "3", "--num-nodes", str(N), *more])
        assert_one_error_line(done, want)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["shards"]


def assert_one_error_line(done, want: str) -> None:
    """``done`` (a ``bgl ingest --distributed`` job of 3 ranks) failed with one error line, ``want``."""
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    # the same error raised on every rank (none aborts the job): rank 0 prints it, naming the rank
    # that found it, not as a failing rank's "rank R of 3 on HOST: IngestError" line before MPI_Abort
    assert len(errors) == 1 and re.match(rf"bgl ingest: error: (rank [12]: )?{re.escape(want)}", errors[0]), \
        done.stderr[-2000:]
    assert "MPI_ABORT" not in done.stderr
