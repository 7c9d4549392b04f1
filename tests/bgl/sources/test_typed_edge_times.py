"""Edge times of a typed edge list (``bgl ingest --format typed-edgelist --edge-time-column COL``): every
relation's times become the typed store's int64 ``timestamp`` edge array in fused-CSC order (reverse
relations with their edge's time), and the typed temporal sampler reads them: no edge from the future."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import bgl
from bgl.cli import main
from bgl.errors import IngestError
from bgl.sources.hetero import fused_csc
from bgl.sources.typed.source import arrays_source, schema_of, write_typed_source

USERS, ITEMS = 40, 25


def clicks_and_links(seed=0):
    """Timed user->item clicks (a hub item 0) and item->item links, each with its own times."""
    rng = np.random.default_rng(seed)
    u, i = rng.integers(0, USERS, 400), rng.integers(0, ITEMS, 400)
    i[:60] = 0
    a, b = rng.integers(0, ITEMS, 90), rng.integers(0, ITEMS, 90)
    t_click = rng.integers(1_600_000_000, 1_600_100_000, 400)
    t_click[::37] = 2**53 + 1  # a float64 on the way would round it
    t_link = rng.integers(1_600_000_000, 1_600_100_000, 90)
    return {("user", "clicks", "item"): (u, i, t_click), ("item", "links", "item"): (a, b, t_link)}


def write_dir(root, rels, sep=" "):
    """Clicks as text (time in column 2, comments between lines), links as .npy [2, E] + .time.npy."""
    (root / "edges").mkdir(parents=True)
    (root / "nodes.json").write_text(json.dumps({"item": ITEMS, "user": USERS}))
    u, i, t = rels[("user", "clicks", "item")]
    lines = ["# user item time"]
    for k, row in enumerate(zip(u, i, t)):
        lines.append(sep.join(str(x) for x in row))
        if k % 100 == 0:
            lines.append("% a comment between edges")
    (root / "edges" / "user__clicks__item.txt").write_text("\n".join(lines) + "\n")
    a, b, t = rels[("item", "links", "item")]
    np.save(root / "edges" / "item__links__item.npy", np.stack([a, b]).astype(np.int32))
    np.save(root / "edges" / "item__links__item.time.npy", t)
    return root


def reversed_relations(rels):
    """What --add-reverse makes of them (dgl.AddReverse): (item, rev_clicks, user) with each click's time;
    links within one type get their reversed edges appended, each with its edge's time."""
    (u, i, t), (a, b, tl) = rels[("user", "clicks", "item")], rels[("item", "links", "item")]
    return {("item", "rev_clicks", "user"): (i, u, t),
            ("item", "links", "item"): (np.r_[a, b], np.r_[b, a], np.r_[tl, tl]),
            ("user", "clicks", "item"): (u, i, t)}


def brute_force_times(store, rels):
    """The times in the fused-CSC order bgl.sources.hetero.fused_csc gives the same edges."""
    etypes = store.schema.canonical_etypes
    schema = schema_of({"item": ITEMS, "user": USERS}, etypes)
    indptr, indices, etype, eids = fused_csc(schema, [rels[c][:2] for c in etypes])
    assert np.array_equal(indptr, store.indptr) and np.array_equal(indices, store.indices)
    assert np.array_equal(etype, store.etype)
    starts = np.r_[0, np.cumsum([len(rels[c][2]) for c in etypes])[:-1]]
    return np.concatenate([rels[c][2] for c in etypes])[starts[etype.astype(np.int64)] + eids]


def test_cli_keeps_every_relations_times_in_fused_csc_order_reverses_included(tmp_path):
    rels = clicks_and_links()
    src = write_dir(tmp_path / "in", rels)
    assert main(["ingest", str(src), str(tmp_path / "s"), "--format", "typed-edgelist", "--edge-time-column", "2",
                 "--add-reverse", "--no-progress"]) == 0
    store = bgl.open_store(tmp_path / "s")
    assert store.schema.canonical_etypes == [("item", "links", "item"), ("item", "rev_clicks", "user"),
                                             ("user", "clicks", "item")]
    ts = store.edge_array("timestamp")
    assert ts.dtype == np.int64 and ts.shape == (2 * (400 + 90),) and int(ts.max()) == 2**53 + 1
    assert store.meta.edata["timestamp"]["dtype"] == "int64"
    assert np.array_equal(ts, brute_force_times(store, reversed_relations(rels)))
    assert store.meta.extra["edge_time_column"] == 2
    assert not (tmp_path / "s" / "edata" / "timestamp.order.npy").exists()  # typed layers order in memory


@pytest.mark.parametrize("fill_bytes", [13, 200, None])
def test_times_follow_their_edges_through_every_bucket_size(tmp_path, fill_bytes):
    """13 B = one int32 id, one uint8 relation and one int64 time: a row per bucket."""
    rels = clicks_and_links(seed=3)
    etypes = sorted(rels)
    schema = schema_of({"item": ITEMS, "user": USERS}, etypes)
    src = arrays_source(schema, [rels[c][:2] for c in etypes], times=[rels[c][2] for c in etypes])
    store = write_typed_source(src, tmp_path / "s", fill_bytes=fill_bytes)
    assert np.array_equal(store.edge_array("timestamp"), brute_force_times(store, rels))
    plan = store.meta.extra["csc_build"]
    assert plan["store_bytes_per_edge"] == 4 + 1 + 8
    if fill_bytes == 13:
        assert plan["buckets"] >= ITEMS  # every item row alone (users have no in-edges here)


@pytest.mark.parametrize("layout", ["tree", "disjoint"])
def test_the_temporal_loader_on_the_ingested_store_takes_no_edge_from_the_future(tmp_path, layout):
    rels = clicks_and_links(seed=1)
    store = bgl.ingest(write_dir(tmp_path / "in", rels, sep=","), tmp_path / "s", edge_time_column=2,
                       add_reverse=True)
    ts = np.asarray(store.edge_array("timestamp"))
    rng = np.random.default_rng(2)
    seeds = {"user": torch.from_numpy(rng.integers(0, USERS, 30)), "item": torch.tensor([0, 0, 3, 7])}
    lo, hi = int(ts.min()), int(np.sort(ts)[-20])
    times = {"user": torch.from_numpy(rng.integers(lo, hi, 30)), "item": torch.tensor([lo, hi, (lo + hi) // 2, hi])}
    sampler = bgl.TemporalNeighborSampler([3, 2], edge_timestamp_attr_name="timestamp", layout=layout)
    loader = bgl.DataLoader(str(store.path), seeds, sampler, seed_time=times, batch_size=8, blocks="bgl")
    offsets, etype, indices, drawn = store.schema.offsets, np.asarray(store.etype), np.asarray(store.indices), 0
    for _, _, blocks in loader:
        first = blocks[0]
        types = np.searchsorted(offsets, first.src_ids.numpy(), side="right") - 1
        node_time = np.empty(types.shape[0], np.int64)
        for t, nt in enumerate(store.schema.ntypes):
            node_time[types == t] = first.srcdata["seed_time"][nt].numpy()
        for b in blocks:
            eid = b.edge_ids.numpy()
            dst = np.repeat(np.arange(b.num_dst), np.diff(b.indptr.numpy()))
            assert np.array_equal(b.etypes.numpy(), etype[eid])
            assert np.array_equal(indices[eid], b.src_ids.numpy()[b.indices.numpy()])
            assert (ts[eid] <= node_time[dst]).all(), "an edge from the future"
            drawn += eid.size
    assert drawn > 100


@pytest.mark.parametrize("method", ["random", "bgl"])
def test_typed_parts_carry_each_edges_time(tmp_path, method):
    """``bgl partition`` of the timed typed store: every part's ``timestamp`` rows are the store's times of
    that part's edges (``orig_eids``), each row still grouped by relation; no time is lost or moved."""
    from bgl.partition import open_partition

    store = bgl.ingest(write_dir(tmp_path / "in", clicks_and_links(seed=4)), tmp_path / "s", edge_time_column=2,
                       add_reverse=True)
    assert main(["partition", str(tmp_path / "s"), str(tmp_path / "p"), "--method", method, "--parts", "2",
                 "--num-batches", "4"]) == 0
    book = open_partition(tmp_path / "p")
    ts, orig_eids = np.asarray(store.edge_array("timestamp")), np.asarray(book.orig_eids)
    for k in range(book.num_parts):
        part = book.part_store(k)
        assert part.is_typed and part.meta.edata["timestamp"]["dtype"] == "int64"
        e = orig_eids[book.edge_bounds[k]:book.edge_bounds[k + 1]]
        assert np.array_equal(part.edge_array("timestamp"), ts[e])
        assert np.array_equal(part.etype, store.etype[e])
    assert np.array_equal(np.sort(orig_eids), np.arange(store.num_edges))


def test_missing_or_bad_times_are_one_line_naming_the_file(tmp_path):
    rels = clicks_and_links()
    src = write_dir(tmp_path / "in", rels)
    txt = src / "edges" / "user__clicks__item.txt"
    good = txt.read_text()
    lines = good.splitlines()  # line 5 of the file: the third click (after the header and a comment)
    lines[4] = " ".join(lines[4].split()[:2])  # a click without its time
    txt.write_text("\n".join(lines) + "\n")
    with pytest.raises(IngestError, match=r"user__clicks__item.txt:5: edge time column 2 missing or not an integer"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=2)
    lines[4] += " 1.5e9"
    txt.write_text("\n".join(lines) + "\n")
    with pytest.raises(IngestError, match=r"user__clicks__item.txt:5: edge time column 2 .*not an integer"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=2)
    txt.write_text(good)
    tfile = src / "edges" / "item__links__item.time.npy"
    np.save(tfile, rels[("item", "links", "item")][2][:-1])
    with pytest.raises(IngestError, match=r"item__links__item.time.npy: edge times must be an integer array \[90\].*"
                                          r"int64 \(89,\)"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=2)
    np.save(tfile, rels[("item", "links", "item")][2].astype(np.float64))
    with pytest.raises(IngestError, match=r"edge times must be an integer array .* got float64"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=2)
    tfile.unlink()  # all or none: a relation without times is refused
    with pytest.raises(IngestError, match=r"item__links__item.npy: no edge times: .*item__links__item.time.npy"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=2)
    np.save(src / "edges" / "item__other__item.time.npy", np.zeros(3, np.int64))
    with pytest.raises(IngestError, match=r"item__other__item.time.npy: edge times without their .npy edge file"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=2)
    with pytest.raises(IngestError, match="edge_time_column must be an int >= 2.*got 1"):
        bgl.ingest(src, tmp_path / "s", edge_time_column=1)
    assert not (tmp_path / "s").exists()


def test_without_the_option_a_time_file_is_left_out_with_a_warning(tmp_path, caplog):
    src = write_dir(tmp_path / "in", clicks_and_links())
    with caplog.at_level("WARNING", logger="bgl.sources.typed.edgelist"):
        store = bgl.ingest(src, tmp_path / "s")
    assert store.edata == {} and "1 .time.npy file(s) ignored" in caplog.text
    assert [e.count for e in store.schema.edge_types] == [90, 400]
