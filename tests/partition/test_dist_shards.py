"""Splitting edge-list shards among ranks (``bgl ingest --distributed``'s reader), without MPI.

Over any number of ranks and any block size, the ranks' pieces must read every edge exactly once,
in the shards' order, and a bad line must be reported with its file's own line number even when
the rank reading it starts in the middle of the file.
"""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from bgl.errors import IngestError
from bgl.partition.distributed import shards as S


@pytest.fixture
def shards(tmp_path):
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.integers(0, 1000, (k, 2)) for k in (400, 250, 90, 77))
    lines = ["src dst", "# comment"] + [f"{s} {t}" for s, t in a[:200]] + ["% other comment", ""]
    (tmp_path / "p0.txt").write_text("\n".join(lines + [f"{s}\t{t}\t9.5" for s, t in a[200:]]))  # no final \n
    (tmp_path / "p1.csv").write_text("".join(f"{s},{t}\r\n" for s, t in b))
    with gzip.open(tmp_path / "p2.gz", "wt") as f:
        f.write("".join(f"{s} {t}\n" for s, t in c))
    np.save(tmp_path / "p3.npy", d.astype(np.uint32))
    return tmp_path, np.concatenate([a, b, c, d])


def _read(shards, ranks: int, chunk: int, num_nodes: int = 1000) -> np.ndarray:
    got = [np.stack(chunk_[:2], 1) for r in range(ranks)
           for chunk_ in S.iter_edges(S.assign(shards, r, ranks), num_nodes, chunk)]
    return np.concatenate(got)


@pytest.mark.parametrize("ranks", [1, 2, 3, 7, 40])
def test_every_edge_is_read_once_in_order(shards, ranks):
    root, want = shards
    found = S.list_shards(root / "p*")
    assert [s.kind for s in found] == ["text", "text", "gzip", "npy"]
    for chunk in (5, 64, 1 << 20):  # blocks shorter than a line too
        assert np.array_equal(_read(found, ranks, chunk), want), chunk


def test_errors_name_the_file_and_its_line(shards):
    root, _ = shards
    bad = root / "p1.csv"
    rows = bad.read_text().splitlines(keepends=True)
    bad.write_text("".join(rows[:180] + ["7,x\r\n"] + rows[180:]))
    found = S.list_shards(root / "p*")
    for ranks in (1, 3, 8):  # the bad line is read by a rank starting inside p1.csv
        with pytest.raises(IngestError, match=r"p1\.csv:181: malformed line .*'7,x'"):
            for r in range(ranks):
                _read_rank(found, r, ranks)
    text = (root / "p0.txt").read_text().splitlines()
    first = next(i for i, line in enumerate(text[2:], 3)
                 if line[:1].isdigit() and max(map(int, line.split()[:2])) >= 900)
    with pytest.raises(IngestError, match=rf"p0\.txt:{first}: node id \d+ >= num_nodes 900: '{text[first - 1]}'"):
        _read(found, 2, 64, num_nodes=900)
    np.save(root / "p3.npy", np.array([[1, 2], [3, -4]]))
    with pytest.raises(IngestError, match=r"p3\.npy: row 1: negative node id -4"):
        _read(S.list_shards(root / "p3.npy"), 1, 64)


def _read_rank(found, rank, ranks):
    for _ in S.iter_edges(S.assign(found, rank, ranks), 1000, 64):
        pass


def test_shard_listing_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(IngestError, match="no edge-list shards match '.*/none-\\*'"):
        S.list_shards(tmp_path / "none-*")
    np.save(tmp_path / "e.npy", np.zeros((4, 3), np.int64))
    with pytest.raises(IngestError, match=r"e\.npy: a \.npy shard must be an integer array \[E, 2\].*\[4, 3\]"):
        S.list_shards(tmp_path)


@pytest.mark.parametrize("unique", [True, False])
def test_owner_sort_is_the_same_past_one_int64_key(unique):
    """A rank's received (dst, src) pairs sort (and de-duplicate) alike whether they fit one int64
    key or, for node ranges past ~2^31 x 2^31 pairs, fall back to a lexsort."""
    from bgl.partition.distributed.graph import sorted_pairs

    rng = np.random.default_rng(1)
    rows = 5 + rng.integers(0, 1 << 23, 3000)
    cols = rng.integers(0, 1 << 20, 3000)
    rows, cols = np.concatenate([rows, rows[:500]]), np.concatenate([cols, cols[:500]])
    small = sorted_pairs(rows, cols, 5, 1 << 20, unique=unique)  # (2^23) x 2^20 fits a key
    big = sorted_pairs(rows, cols, 5, 1 << 40, unique=unique)  # x 2^40 does not
    want = sorted(set(zip(rows.tolist(), cols.tolist()))) if unique else sorted(zip(rows.tolist(), cols.tolist()))
    for got in (small, big):
        assert list(zip(got[0].tolist(), got[1].tolist())) == want


def test_edge_times_follow_their_edges_and_bad_ones_name_their_line(tmp_path):
    rows = [f"{i} {i + 1} {1000 + i}\n" for i in range(300)]
    (tmp_path / "t.txt").write_text("".join(rows))
    found = S.list_shards(tmp_path / "t.txt")
    for ranks in (1, 4):
        got = [c for r in range(ranks) for c in S.iter_edges(S.assign(found, r, ranks), 1000, 64, time_column=2)]
        assert np.array_equal(np.concatenate([c[2] for c in got]), 1000 + np.arange(300))
        assert np.array_equal(np.concatenate([c[0] for c in got]), np.arange(300))
    (tmp_path / "t.txt").write_text("".join(rows[:250] + ["7 8 soon\n"] + rows[250:]))
    found = S.list_shards(tmp_path / "t.txt")
    with pytest.raises(IngestError, match=r"t\.txt:251: edge time column 2 missing or not an integer: '7 8 soon'"):
        for r in range(4):
            list(S.iter_edges(S.assign(found, r, 4), 1000, 64, time_column=2))


def test_parquet_row_groups_are_read_once_with_their_times(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(2)
    e = rng.integers(0, 1000, (1000, 2))
    times = rng.integers(0, 10**12, 1000)
    table = pa.table({"src": e[:, 0].astype(np.int32), "dst": e[:, 1], "t": times, "note": ["x"] * 1000})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=90)  # 12 row groups
    (tmp_path / "b.txt").write_text("".join(f"{s} {t} 5\n" for s, t in e[:50]))
    found = S.list_shards(tmp_path)
    assert [s.kind for s in found] == ["parquet", "text"] and len(found[0].groups) == 12
    for ranks in (1, 3, 5, 20):
        got = [c for r in range(ranks) for c in S.iter_edges(S.assign(found, r, ranks), 1000, 64, time_column=2)]
        assert np.array_equal(np.concatenate([np.stack(c[:2], 1) for c in got]), np.concatenate([e, e[:50]]))
        assert np.array_equal(np.concatenate([c[2] for c in got]), np.concatenate([times, np.full(50, 5)]))
    e[500, 1] = 1000
    pq.write_table(pa.table({"src": e[:, 0], "dst": e[:, 1]}), tmp_path / "a.parquet", row_group_size=90)
    with pytest.raises(IngestError, match=r"a\.parquet: row 500: node id 1000 >= num_nodes 1000"):
        _read(S.list_shards(tmp_path / "a.parquet"), 3, 64)
    pq.write_table(pa.table({"src": pa.array([1, None]), "dst": [2, 3]}), tmp_path / "a.parquet")
    with pytest.raises(IngestError, match=r"a\.parquet: row group 0: 1 null values in column 0 \('src'\)"):
        _read(S.list_shards(tmp_path / "a.parquet"), 1, 64)
    pq.write_table(pa.table({"src": ["a"], "dst": [2]}), tmp_path / "a.parquet")
    with pytest.raises(IngestError, match=r"first two columns must be integer src and dst, got src: string"):
        S.list_shards(tmp_path / "a.parquet")
