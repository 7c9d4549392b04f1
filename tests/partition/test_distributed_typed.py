"""``bgl partition --distributed`` of a typed store as real MPI ranks (partition/distributed/typed.py): the
very typed partition the one-machine writer makes for the same assignment, and it serves.

The store (``hetero_store``): 3 node types (paper: float32 features of width 8, labels, train/val
splits; author: float16 features of width 3; venue: none), 4 relations with repeated edges and
self-loops.  Skipped without MPI / PT-Scotch, as test_distributed_partition.py says.
"""
from __future__ import annotations

import numpy as np
import pytest

from bgl.partition import metrics as M
from bgl.partition.format import TYPED_FORMAT_VERSION, open_partition, write_partition
from bgl.partition.graph_input import GraphInput
from bgl.sampler import SamplingClient
from bgl.sampler.local import LocalSampler
from bgl.sampler.typed.sampling import relation_fanouts

from ..bgl.conftest import _serve_partition
from ..conftest import HETERO_ETYPES, typed_edges
from .test_distributed_partition import mpirun, part_of, same_dirs
from .test_distributed_partition import engine as _engine, parhip_lib as _parhip_lib

engine, parhip_lib = _engine, _parhip_lib  # the engine a test names, its library built first


@pytest.mark.parametrize("ranks, parts", [(2, 2), (3, 4)])
def test_distributed_typed_partition_is_the_one_machine_directory(mpi, hetero_store, tmp_path, ranks, parts):
    book = same_as_one_machine(hetero_store, ranks, parts, tmp_path)
    assert sum(p["num_train"] for p in book.meta["parts"]) == hetero_store.type_splits["paper"]["train"].size


@pytest.mark.parametrize("engine", ["parhip"], indirect=True)
def test_a_typed_store_partitions_on_parhip_too(engine, hetero_store, tmp_path):
    """The typed rows ride the engine-independent pipeline: ParHIP's assignment gives the one-machine
    typed directory of that assignment as PT-Scotch's does."""
    book = same_as_one_machine(hetero_store, 2, 3, tmp_path, engine)
    assert book.meta["method"] == "parhip"


def test_encoded_rows_of_each_type_travel_too(mpi, tmp_path):
    """A store holding only int8-encoded rows (a codec per featured type, widths 8 and 3): each part
    keeps its types' encoded rows under the store's codecs."""
    from bgl.codec import compress_store
    from bgl.sources.hetero import schema_of, write_typed_store

    rng = np.random.default_rng(2)
    counts = {"paper": 300, "author": 200, "venue": 20}
    rel = [(rng.integers(0, counts[s], 500), rng.integers(0, counts[d], 500)) for s, _, d in HETERO_ETYPES]
    plain = write_typed_store(tmp_path / "plain", schema_of(counts, HETERO_ETYPES), rel,
                              feats={"paper": rng.standard_normal((300, 8)).astype(np.float32),
                                     "author": rng.standard_normal((200, 3)).astype(np.float32)},
                              splits={"author": {"train": np.arange(0, 200, 3)}}, name="coded")
    packed = compress_store(plain.path, "int8", out=tmp_path / "packed", keep_float32=False)
    book = same_as_one_machine(packed, 2, 3, tmp_path)
    assert sorted(book.part_store(0).type_feat_encoded) == ["author", "paper"]


def same_as_one_machine(store, ranks: int, parts: int, tmp_path, engine: str = "ptscotch"):
    """Partition ``store`` on ``ranks`` ranks with ``engine`` and check it against the one-machine typed
    partition of the same assignment, file for file; returns the distributed partition's book."""
    out = tmp_path / "dist"
    done = mpirun(ranks, [str(store.path), str(out), "--parts", str(parts), "--engine", engine])
    assert done.returncode == 0, done.stderr[-3000:]
    book = open_partition(out)
    assign = part_of(book)
    one = write_partition(store, assign, parts, tmp_path / "one", method=engine)
    for k in range(parts):  # etype, per-type feat/label/split, key_ids, schema: file for file
        same_dirs(book.part_path(k), one.part_path(k))
    assert np.array_equal(book.orig_ids, one.orig_ids) and np.array_equal(book.orig_eids, one.orig_eids)
    assert book.meta["parts"] == one.meta["parts"]
    assert book.meta["version"] == TYPED_FORMAT_VERSION and book.meta["schema"] == one.meta["schema"]
    assert np.array_equal(book.type_bounds, one.type_bounds)
    # every edge of every relation once (orig_eids above: each at its place)
    schema = store.schema
    assert sum(book.part_store(k).schema.edge_types[r].count for k in range(parts)
               for r in range(len(schema.edge_types))) == store.num_edges
    graph = GraphInput.from_store(store)
    bal = M.balance(graph, assign, parts)
    m = book.metrics
    assert m["edge_cut"] == pytest.approx(M.edge_cut(graph, assign))
    assert (m["balance_nodes"], m["balance_edges"], m["balance_train"]) == pytest.approx(
        (bal["nodes"], bal["edges"], bal["train"]))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    return book


def test_distributed_typed_partition_serves_typed_batches(mpi, hetero_store, tmp_path):
    """Two real ``bgl serve`` processes on the distributed partition draw the store's own typed
    blocks (the parts' stream keys are the original ids): every edge with its relation."""
    out = tmp_path / "dist"
    done = mpirun(2, [str(hetero_store.path), str(out), "--parts", "2"])
    assert done.returncode == 0, done.stderr[-3000:]
    book = open_partition(out)
    schema, orig = hetero_store.schema, np.asarray(book.orig_ids)
    fan = [relation_fanouts(layer, schema.canonical_etypes)
           for layer in ({"writes": 2, "cites": -1, "in": 1, "by": 0}, 3)]
    seeds = np.concatenate([book.to_new("paper", np.arange(0, 300, 5)), book.to_new("author", [0, 7, 150])])
    identity = np.arange(hetero_store.num_nodes)
    with _serve_partition(book, tmp_path) as addresses, SamplingClient(addresses, local_stores=()) as client:
        assert np.array_equal(client.type_bounds, book.type_bounds)
        got = client.sample_typed_blocks(seeds, fan, seed=5)
    want = LocalSampler(hetero_store).sample_typed_blocks(orig[seeds], fan, seed=5)
    dst_of = np.repeat(identity, np.diff(hetero_store.indptr))
    stored = set(zip(dst_of.tolist(), np.asarray(hetero_store.etype).tolist(),
                     np.asarray(hetero_store.indices).tolist()))
    for g, w in zip(got, want, strict=True):
        edges = typed_edges(g, orig)
        assert edges == typed_edges(w, identity) and edges
        assert all((d, r, s) in stored for (d, r), srcs in edges.items() for s in srcs)
    assert not any(r == 3 for _, r in typed_edges(got[0], orig))  # "by" has fanout 0 in the first layer
