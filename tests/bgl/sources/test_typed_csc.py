"""The chunked typed CSC builder writes exactly the bytes of the in-memory fused CSC, in bounded memory."""
from __future__ import annotations

import io

import numpy as np
import pytest

from bgl.errors import IngestError
from bgl.sources.csc_build import array_chunks
from bgl.sources.hetero import fused_csc, schema_of, write_typed_store
from bgl.sources.typed.csc import count_typed
from bgl.sources.typed.source import TypedSource, write_typed_source
from bgl.store import GraphStore

COUNTS = {"a": 7, "b": 5, "c": 3}
ETYPES = [("a", "x", "b"), ("b", "y", "a"), ("a", "z", "a"), ("c", "w", "b"), ("b", "v", "c")]


def random_edges(seed, max_edges=60):
    rng = np.random.default_rng(seed)
    out = []
    for s, _, d in ETYPES:
        m = int(rng.integers(0, max_edges))
        out.append((rng.integers(0, COUNTS[s], m), rng.integers(0, COUNTS[d], m)))
    return out


def npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


@pytest.mark.parametrize("seed", range(6))
def test_fused_csc_is_the_stable_sort_by_destination_then_relation(seed):
    """The counting-sort build equals a stable sort of every edge by (global destination, relation),
    edge ids riding along: an independent reference, not the builder's own kernels."""
    schema = schema_of(COUNTS, ETYPES)
    rel = random_edges(seed)
    off = np.asarray(schema.offsets)
    ids = {nt: i for i, nt in enumerate(COUNTS)}
    src = np.concatenate([s + off[ids[st]] for (st, _, _), (s, _) in zip(ETYPES, rel)])
    dst = np.concatenate([d + off[ids[dt]] for (_, _, dt), (_, d) in zip(ETYPES, rel)])
    rid = np.concatenate([np.full(len(s), r) for r, (s, _) in enumerate(rel)])
    eid = np.concatenate([np.arange(len(s)) for s, _ in rel])
    order = np.lexsort((rid, dst))
    indptr, indices, etype, eids = fused_csc(schema, rel)
    assert np.array_equal(indptr, np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=int(off[-1])))]))
    assert np.array_equal(indices, src[order]) and np.array_equal(etype, rid[order])
    assert np.array_equal(eids, eid[order])
    assert indices.dtype == np.int32 and eids.dtype == np.int32  # 4 B an edge while ids fit


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fill_bytes", [5, 23, 64, None])
def test_store_bytes_equal_the_in_memory_fused_csc(tmp_path, seed, fill_bytes):
    """Every bucket size (5 B = one int32 id + one uint8 relation: a row per pass) gives the same bytes,
    duplicates and self-loops kept, each row grouped by relation, input order within a relation."""
    schema = schema_of(COUNTS, ETYPES)
    rel = random_edges(seed)
    rel[2] = (np.concatenate([rel[2][0], [1, 1, 1]]), np.concatenate([rel[2][1], [1, 1, 1]]))  # loop, repeated
    store = write_typed_store(tmp_path / "s", schema, rel, fill_bytes=fill_bytes)
    indptr, indices, etype, _ = fused_csc(schema, rel)
    for name, arr in (("indptr", indptr), ("indices", indices), ("etype", etype)):
        assert (tmp_path / "s" / f"{name}.npy").read_bytes() == npy_bytes(arr), name
    build = store.meta.extra["csc_build"]
    assert [e.count for e in store.schema.edge_types] == [len(s) for s, _ in rel]
    if fill_bytes is not None and fill_bytes < 64:
        assert build["buckets"] > 1
    assert build["store_bytes_per_edge"] == 5 and build["build_bytes_per_edge"] > 0
    # What ingest reports it kept (issue #44): a self-loop joins a node to itself (same type, same id);
    # a duplicate repeats an earlier edge of the same relation.
    loops = sum(int((s == d).sum()) for (st, _, dt), (s, d) in zip(ETYPES, rel) if st == dt)
    dups = sum(len(s) - len(set(zip(s.tolist(), d.tolist()))) for s, d in rel)
    assert store.meta.extra["kept"] == {"self_loops": loops, "duplicates": dups} and loops >= 3 and dups >= 2


def test_the_fill_buffer_is_bounded_by_the_budget_not_by_the_edges(tmp_path):
    schema = schema_of({"u": 2000, "i": 500}, [("u", "buys", "i"), ("i", "bought-by", "u")])
    rng = np.random.default_rng(1)
    s, d = rng.integers(0, 2000, 40_000), rng.integers(0, 500, 40_000)
    budget = 20_000  # 4000 entries of 5 B, a tenth of the 80k edges
    store = write_typed_store(tmp_path / "s", schema, [(s, d), (d, s)], fill_bytes=budget)
    build = store.meta.extra["csc_build"]
    per_node = 8 * (2500 + 1) + 8 * 2500
    assert build["build_bytes"] - per_node <= budget + 5 * 200  # + at most one row wider than the budget
    assert build["buckets"] >= 20
    ip, ind, et, _ = fused_csc(schema, [(s, d), (d, s)])
    assert np.array_equal(store.indices, ind) and np.array_equal(store.etype, et)


def streamed(schema, rel, chunk=7):
    return TypedSource("streamed", schema, [array_chunks(np.asarray(s), np.asarray(d), chunk) for s, d in rel])


def test_an_id_past_its_type_is_named_with_its_edge_and_nothing_is_written(tmp_path):
    schema = schema_of(COUNTS, ETYPES)
    rel = random_edges(0)
    rel[3] = (np.array([0, 2, 3, 1]), np.array([4, 4, 0, 1]))  # c has 3 nodes: source id 3 at edge 2
    with pytest.raises(IngestError, match=r"\('c', 'w', 'b'\): source id 3 at edge 2 is outside node type 'c'"):
        write_typed_source(streamed(schema, rel), tmp_path / "s")
    assert not any(tmp_path.iterdir())


def test_a_stream_that_changes_between_passes_is_refused(tmp_path):
    schema = schema_of({"a": 3, "b": 3}, [("a", "r", "b")])
    calls = []

    def chunks():
        calls.append(1)
        yield np.array([0, 1]), np.array([1, 2 if len(calls) == 1 else 1])

    with pytest.raises(IngestError, match="later pass"):
        write_typed_source(TypedSource("flaky", schema, [chunks]), tmp_path / "s", fill_bytes=5)
    assert not any(tmp_path.iterdir())


def test_count_pass_counts_each_relation_and_every_row():
    schema = schema_of(COUNTS, ETYPES)
    rel = random_edges(4)
    counts = count_typed(schema, [array_chunks(s, d, 5) for s, d in rel])
    assert counts.edge_counts.tolist() == [len(s) for s, _ in rel]
    indptr, *_ = fused_csc(schema, rel)
    assert np.array_equal(counts.indptr, indptr)


def test_a_graph_without_edges_is_a_valid_store(tmp_path):
    schema = schema_of({"a": 2, "b": 1}, [("a", "r", "b")])
    store = write_typed_store(tmp_path / "s", schema, [(np.zeros(0, np.int64), np.zeros(0, np.int64))])
    assert store.num_edges == 0 and GraphStore(tmp_path / "s").schema.edge_types[0].count == 0


def test_node_counts_too_big_for_memory_are_refused_naming_the_type(tmp_path):
    from bgl.sources.typed.source import check_typed_node_memory

    schema = schema_of({"user": 10, "item": 5_000_000_000}, [("user", "buys", "item")])
    src = streamed(schema, [(np.array([0]), np.array([4_999_999_999]))])
    with pytest.raises(IngestError, match=r"5,000,000,010 nodes \(5,000,000,000 of type 'item'\) need about 111.8 GiB"):
        check_typed_node_memory(src, available=8 << 30)
    check_typed_node_memory(streamed(schema_of({"a": 10}, [("a", "r", "a")]), [([0], [1])]), available=8 << 30)


def test_counting_kernel_matches_brute_force_on_short_and_long_runs():
    """``count_loops_and_repeats`` compares short runs pairwise and sorts a copy of long ones
    (``SMALL_RUN``); both agree with a set-based count, and the bucket is left as it was."""
    from bgl.sources.typed import _csc_kernels as K

    rng = np.random.default_rng(5)
    for _ in range(200):
        lens = rng.integers(0, 3 * K.SMALL_RUN, int(rng.integers(1, 8)))
        ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        lo = int(rng.integers(0, 5))
        ids = rng.integers(0, 12, ptr[-1]).astype(np.int32)
        rels = np.concatenate([np.sort(rng.integers(0, 3, n)) for n in lens]).astype(np.uint8)
        before = ids.copy()
        loops = sum(int((ids[ptr[r]:ptr[r + 1]] == lo + r).sum()) for r in range(len(lens)))
        repeats = sum(int(n) - len(set(zip(ids[ptr[r]:ptr[r + 1]].tolist(), rels[ptr[r]:ptr[r + 1]].tolist())))
                      for r, n in enumerate(lens))
        assert K.count_loops_and_repeats(ptr, ids, rels, lo) == (loops, repeats)
        np.testing.assert_array_equal(ids, before)


def test_scatter_kernel_puts_each_time_at_its_edges_position():
    """``scatter_typed_rows`` with times: an edge's time goes through its id's cursor (times = the edge's
    input index, so each output slot names the edge it holds); without times nothing is written to them."""
    from bgl.sources.typed import _csc_kernels as K

    rng = np.random.default_rng(8)
    for _ in range(50):
        e, rows, lo = int(rng.integers(0, 80)), int(rng.integers(1, 9)), int(rng.integers(0, 4))
        src, dst = rng.integers(0, 20, e), rng.integers(0, rows + 3, e)  # some rows outside [lo, lo + rows)
        inside = (dst + 2 >= lo) & (dst + 2 < lo + rows)
        ptr = np.concatenate([[0], np.cumsum(np.bincount(dst[inside] + 2 - lo, minlength=rows))]).astype(np.int64)
        cursor = ptr[:-1].copy()
        ids, rels, times = np.full(ptr[-1], -1, np.int32), np.zeros(ptr[-1], np.uint8), np.full(ptr[-1], -1)
        assert K.scatter_typed_rows(src, dst, 100, 2, 3, ptr, cursor, ids, rels, lo, lo + rows,
                                    np.arange(e, dtype=np.int64), times)
        want = np.flatnonzero(inside)[np.argsort(dst[inside], kind="stable")]  # stable by row: input order kept
        np.testing.assert_array_equal(times, want)
        np.testing.assert_array_equal(ids, src[want] + 100)
        untouched = np.full(3, 7, np.int64)
        cursor = ptr[:-1].copy()
        assert K.scatter_typed_rows(src, dst, 100, 2, 3, ptr, cursor, ids, rels, lo, lo + rows,
                                    np.zeros(0, np.int64), untouched)
        np.testing.assert_array_equal(untouched, 7)
