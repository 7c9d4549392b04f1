"""The pieces under every format: chunked COO -> CSC builder (against a brute-force
reference), default split, synthetic node data, edge-list parsing kernel."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgl.sources import _parse_kernels as P
from bgl.sources.csc_build import array_chunks, build_csc, row_buckets
from bgl.errors import IngestError
from bgl.sources.splits import stratified_split
from bgl.sources.synthetic import fill_synthetic_features, synthetic_labels


def brute_force_csc(src, dst, n, symmetrize, drop_loops, dedupe):
    rows = [[] for _ in range(n)]
    for s, d in zip(src, dst):
        if drop_loops and s == d:
            continue
        rows[d].append(s)
        if symmetrize and s != d:
            rows[s].append(d)
    rows = [sorted(set(r)) if dedupe else sorted(r) for r in rows]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    return indptr, np.array([v for r in rows for v in r], np.int64)


def build(tmp_path, src, dst, n, chunk, **flags):
    res = build_csc(array_chunks(np.array(src, np.int64), np.array(dst, np.int64), chunk), n, np.int32,
                    tmp_path, **flags)
    assert not [p for p in tmp_path.iterdir() if p.name != "indices.raw"]
    ids = np.concatenate([b for _, b in res.iter_indices(chunk=5)]) if res.num_edges else np.zeros(0, np.int32)
    return res, ids


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), data=st.data(), chunk=st.integers(1, 9),
       symmetrize=st.booleans(), drop=st.booleans(), dedupe=st.booleans(),
       fill_bytes=st.sampled_from([4, 12, 40, None]))
def test_builder_matches_brute_force(tmp_path_factory, n, data, chunk, symmetrize, drop, dedupe, fill_bytes):
    """Every bucket size gives the same CSC: 4 bytes = one int32 entry per bucket (a row per pass)."""
    m = data.draw(st.integers(0, 40))
    src = data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    res, ids = build(tmp_path_factory.mktemp("b"), src, dst, n, chunk, symmetrize=symmetrize,
                     remove_self_loops=drop, dedupe=dedupe, fill_bytes=fill_bytes)
    ref_ptr, ref_ids = brute_force_csc(src, dst, n, symmetrize, drop, dedupe)
    np.testing.assert_array_equal(res.indptr, ref_ptr)
    np.testing.assert_array_equal(ids, ref_ids)
    assert res.num_edges == ref_ids.size
    # What ingest reports it dropped (issue #44): the self-loops, and the entries de-duplication removed.
    assert res.input_edges == m
    assert res.self_loops_dropped == (sum(s == d for s, d in zip(src, dst)) if drop else 0)
    kept_all = brute_force_csc(src, dst, n, symmetrize, drop, False)[1]
    assert res.duplicates_dropped == kept_all.size - ref_ids.size


@pytest.mark.parametrize("src, dst, message", [
    ([0, 1, 5], [1, 2, 0], r"source node id 5 at edge 2 is outside \[0, 4\)"),
    ([0, 1], [1, -3], r"destination node id -3 at edge 1 is outside"),
])
def test_builder_rejects_out_of_range_ids(tmp_path, src, dst, message):
    with pytest.raises(IngestError, match=message):
        build(tmp_path, src, dst, 4, 2, symmetrize=False, remove_self_loops=True, dedupe=True)


def test_builder_rejects_a_stream_that_changes(tmp_path):
    calls = []

    def chunks():
        calls.append(1)
        yield np.array([0, 1]), np.array([1, len(calls) % 2 + 1])

    with pytest.raises(IngestError, match="later pass"):
        build_csc(chunks, 3, np.int32, tmp_path, symmetrize=False, remove_self_loops=True, dedupe=True)


def test_row_buckets_cover_rows_within_the_budget():
    indptr = np.cumsum([0, 3, 0, 1, 9, 2, 2, 0])  # row 3 alone exceeds a budget of 4
    bounds = row_buckets(indptr, 4)
    assert bounds[0] == 0 and bounds[-1] == indptr.size - 1 and np.all(np.diff(bounds) > 0)
    sizes = indptr[bounds[1:]] - indptr[bounds[:-1]]
    rows = np.diff(bounds)
    assert np.all((sizes <= 4) | (rows == 1)), (bounds, sizes)
    # greedy: no two neighbouring buckets could have been merged
    assert np.all(sizes[:-1] + sizes[1:] > 4)


def test_builder_rejects_a_stream_that_grows_a_row(tmp_path):
    """A later pass with more entries for a counted row must fail, not write past the row."""
    calls = []

    def chunks():
        calls.append(1)
        # the first pass's last edge is a dropped self-loop; later passes make it 0 -> 2
        yield np.array([0, 2, 1, 0]), np.array([1, 1, 2, 0 if len(calls) == 1 else 2])

    with pytest.raises(IngestError, match="more edges for a row"):
        build_csc(chunks, 3, np.int32, tmp_path, symmetrize=False, remove_self_loops=True, dedupe=True,
                  fill_bytes=4)


def test_builder_rejects_float_ids(tmp_path):
    with pytest.raises(IngestError, match="must be integers"):
        build_csc(array_chunks(np.array([0.5]), np.array([1.0])), 3, np.int32, tmp_path,
                  symmetrize=False, remove_self_loops=True, dedupe=True)


# ----------------------------------------------------------------- splits
def test_stratified_split_per_class_fractions():
    rng = np.random.default_rng(0)
    label = rng.integers(-1, 5, 5000)  # -1 = unlabelled
    s = stratified_split(label, label.size, seed=4)
    allids = np.concatenate(list(s.values()))
    assert np.unique(allids).size == allids.size
    np.testing.assert_array_equal(np.sort(allids), np.flatnonzero(label >= 0))
    for c in range(5):
        size = (label == c).sum()
        for name, frac in (("train", 0.6), ("val", 0.2), ("test", 0.2)):
            assert abs((label[s[name]] == c).sum() - frac * size) <= 1
    again = stratified_split(label, label.size, seed=4)
    other = stratified_split(label, label.size, seed=5)
    assert all(np.array_equal(s[k], again[k]) for k in s)
    assert not np.array_equal(s["train"], other["train"])


def test_split_without_labels_and_bad_fractions():
    s = stratified_split(None, 101, seed=0)
    assert [s[k].size for k in ("train", "val", "test")] == [61, 20, 20]
    with pytest.raises(IngestError, match="summing to 1"):
        stratified_split(None, 10, fractions=(0.5, 0.5, 0.5))


# ----------------------------------------------------------------- synthetic data
def test_synthetic_features_are_chunk_independent_and_class_dependent():
    label = synthetic_labels(3000, 4, seed=2)
    assert label.min() == 0 and label.max() == 3
    a = np.zeros((3000, 8), np.float32)
    b = np.zeros((3000, 8), np.float32)
    fill_synthetic_features(a, label, seed=2, chunk=1 << 20)
    fill_synthetic_features(b, label, seed=2, chunk=1 << 20)
    np.testing.assert_array_equal(a, b)
    means = np.stack([a[label == c].mean(0) for c in range(4)])
    within = np.mean([a[label == c].std(0).mean() for c in range(4)])
    # class centroids are N(0, 1) per dim, noise is N(0, 1): the centroid gap is visible in the means
    assert np.linalg.norm(means[0] - means[1]) > 5 * within / np.sqrt(700)


# ----------------------------------------------------------------- parse kernel
def _parse(text, limit=0):
    buf = np.frombuffer(text, np.uint8)
    src, dst = np.empty(16, np.int64), np.empty(16, np.int64)
    ne, nl, err, line, value = P.parse_edge_lines(buf, src, dst, limit, -1, np.empty(0))
    return src[:ne].tolist(), dst[:ne].tolist(), nl, err, line, value


def test_parse_kernel_cases():
    assert _parse(b"1 2\n#c\n\n3\t4\n") == ([1, 3], [2, 4], 4, P.OK, -1, 0)
    assert _parse(b"+1,  2 ,x\n")[:2] == ([1], [2])  # extra columns ignored
    assert _parse(b"1 2\n3 9\n", limit=5)[3:] == (P.ERR_RANGE, 1, 9)
    assert _parse(b"1 2\n3 -9\n")[3:] == (P.ERR_NEGATIVE, 1, -9)
    assert _parse(b"12x 3\n")[3] == P.ERR_MALFORMED
    assert _parse(b"1 2\n\n7\n")[3:5] == (P.ERR_MISSING, 2)


def test_parse_kernel_weight_column():
    buf = np.frombuffer(b"1 2 0.5 x\n3 4 x -2.5e1\n5 6 7 1E-2\n", np.uint8)
    src, dst, w = np.empty(8, np.int64), np.empty(8, np.int64), np.empty(8)
    ne, _, err, _, _ = P.parse_edge_lines(buf, src, dst, 0, 2, w)
    assert (ne, err) == (1, P.ERR_WEIGHT)  # line 2's column 2 is 'x'
    ne, _, err, _, _ = P.parse_edge_lines(buf[buf.tobytes().index(b"3"):], src, dst, 0, 3, w)
    assert (ne, err) == (2, P.OK) and w[:2].tolist() == [-25.0, 0.01]
