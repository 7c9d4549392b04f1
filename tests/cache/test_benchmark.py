"""bench-cache CLI smoke test and the benchmark's pieces (batch recording and replay, microbenchmark)."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from bgl.cache.benchmark import BenchConfig, fetch_microbenchmark
from bgl.cache.policies import make_cache
from bgl.cache.replay import input_node_sampler, record_batches, replay
from bgl.cli import main


def test_bench_cache_cli_writes_csv_and_png(random_store_factory, tmp_path, capsys):
    store = random_store_factory(num_nodes=400, avg_degree=4.0, feat_dim=8, seed=11)
    out = tmp_path / "out"
    rc = main(["bench-cache", str(store.path), "--policies", "none,static-degree,presample,lru,fifo",
               "--orders", "random,proximity", "--cache-ratios", "0.05,0.2", "--fanouts", "4,4",
               "--batch-size", "16", "--epochs", "1", "--out", str(out), "--no-progress"])
    assert rc == 0
    with open(out / "hit_rate.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 5 * 2 * 2
    assert {"policy", "order", "cache_ratio", "hit_rate", "bytes_from_source"} <= set(rows[0])
    for r in rows:
        assert 0.0 <= float(r["hit_rate"]) <= 1.0
        if r["policy"] == "none":
            assert float(r["hit_rate"]) == 0.0
    by = {(r["policy"], r["order"], float(r["cache_ratio"])): r for r in rows}
    # a cache never makes the source deliver more than no cache on the same stream
    assert int(by[("fifo", "random", 0.2)]["bytes_from_source"]) <= int(by[("none", "random", 0.05)]["bytes_from_source"])
    assert (out / "hit_rate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "hit rate" in capsys.readouterr().out


def test_bench_cache_cli_rejects_unknown_policy(random_store, tmp_path, capsys):
    rc = main(["bench-cache", str(random_store.path), "--policies", "fifo,arc", "--out", str(tmp_path)])
    assert rc == 1 and "'arc'" in capsys.readouterr().err


def test_record_and_replay_agree_with_a_direct_count(random_store):
    cfg = BenchConfig(fanouts=(3, 3), batch_size=50, epochs=1)
    batches = record_batches(random_store, input_node_sampler(random_store, cfg.fanouts), "proximity", cfg)
    # the ids start with the seeds; the seeds over the epoch are every training node once
    seeds = np.concatenate([b[:k].numpy() for b, k in batches])
    assert sorted(seeds.tolist()) == random_store.train_idx.tolist()
    assert [k for _, k in batches[:-1]] == [50] * (len(batches) - 1)
    cache = make_cache("none", 0, random_store.num_nodes, 1)
    stats, speed = replay(cache, batches, lambda ids: torch.zeros(ids.numel(), 1))
    assert stats["requests"] == sum(b.numel() for b, _ in batches) and speed > 0


@pytest.mark.parametrize("policy", ["fifo", "lru"])
def test_fetch_microbenchmark_runs_small(policy):
    res = fetch_microbenchmark(policy, num_nodes=5000, total_ids=20000, batch=4000, dim=4)
    assert res.ids > 0 and 0 < res.hit_rate < 1 and res.ids_per_s > 0


def test_bench_cache_cli_fifo_variants_and_chunked_order(random_store_factory, tmp_path):
    store = random_store_factory(num_nodes=300, avg_degree=4.0, feat_dim=4, seed=12)
    out = tmp_path / "v"
    rc = main(["bench-cache", str(store.path), "--policies", "fifo", "--orders", "proximity",
               "--cache-ratios", "0.1", "--fanouts", "3,3", "--batch-size", "16", "--epochs", "1",
               "--interleave-chunk", "0", "--fifo-variants", "request,reverse-no-seeds",
               "--out", str(out), "--no-progress"])
    assert rc == 0
    with open(out / "hit_rate.csv") as f:
        rows = {r["policy"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"fifo", "fifo[request]", "fifo[reverse-no-seeds]"}
    # same recorded stream for every variant: same requests and distinct ids
    assert len({r["requests"] for r in rows.values()}) == 1
    with pytest.raises(ValueError, match="'lifo'"):
        BenchConfig(fifo_variants=("lifo",))


def test_bench_cache_default_policies_include_lookahead_and_the_belady_bound(random_store_factory, tmp_path, capsys):
    store = random_store_factory(num_nodes=300, avg_degree=4.0, feat_dim=4, seed=13)
    out = tmp_path / "la"
    rc = main(["bench-cache", str(store.path), "--cache-ratios", "0.1", "--fanouts", "3,3", "--batch-size", "8",
               "--epochs", "1", "--lookahead-variants", "k0,k16,recency,presample", "--out", str(out),
               "--no-progress"])
    assert rc == 0
    with open(out / "hit_rate.csv") as f:
        rows = list(csv.DictReader(f))
    names = {r["policy"] for r in rows}
    assert {"lookahead", "belady", "lookahead[k16]", "lookahead[recency]"} <= names
    # MiB and rows from source are the first columns after the run's identity, and agree with bytes
    assert list(rows[0])[4:6] == ["mib_from_source", "rows_from_source"]
    for r in rows:
        assert int(r["rows_from_source"]) * 16 == int(r["bytes_from_source"])
        assert abs(float(r["mib_from_source"]) * 2**20 - int(r["bytes_from_source"])) < 1
    for order in ("random", "proximity"):
        by = {r["policy"]: int(r["rows_from_source"]) for r in rows if r["order"] == order}
        assert by["belady"] == min(by.values())  # the offline optimum bounds every policy on the stream
        assert by["lookahead[k16]"] <= by["lookahead[k0]"]
    assert "belady (offline bound)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="'k99'"):
        BenchConfig(lookahead_variants=("k99",))


def test_replay_announces_k_ahead_and_microbenchmark_times_the_gather(tmp_path):
    feat = torch.randn(50, 2)
    stream = [torch.tensor([10, 11, 1]), torch.tensor([10, 11]), torch.tensor([5, 6])]
    hits = []
    for k in (0, 3):  # without lookahead the fill (lower id first) keeps 1 and 10; with it 10 and 11
        cache = make_cache("lookahead", 2, 50, 2)
        stats, _ = replay(cache, stream, lambda m: feat[m], lookahead=k)
        hits.append(stats["hits"])
        assert cache.pending == 0
    assert hits == [1, 2]
    res = fetch_microbenchmark("lookahead", num_nodes=5000, total_ids=20000, batch=4000, dim=4,
                               gather_dir=str(tmp_path))
    assert res.batches == 5 and res.seconds_gather > 0 and res.policy_seconds > 0
    assert list(tmp_path.iterdir()) == []  # the memmap file is gone



def test_bench_cache_defaults_on_the_embedded_graph_show_the_policies_apart(tmp_path):
    """``bgl bench-cache`` with no options (Cora) used to replay two 1,024-seed batches an epoch, each
    touching most of the graph, so every policy fetched nearly the same bytes (issue #44).  The
    default batch is now sized to the graph: 65 on Cora's 1,626 training nodes."""
    import json

    out = tmp_path / "out"
    assert main(["bench-cache", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["batch_size"] == 65
    with open(out / "hit_rate.csv") as f:
        rows = list(csv.DictReader(f))
    top = max(float(r["cache_ratio"]) for r in rows)
    for order in ("random", "proximity"):
        mib = {r["policy"]: float(r["mib_from_source"]) for r in rows
               if r["order"] == order and float(r["cache_ratio"]) == top}
        policies = [mib[p] for p in ("static-degree", "presample", "lru", "fifo", "lookahead")]
        assert max(policies) > 1.15 * min(policies), (order, mib)  # at batch 1024: within 2 % of each other
        assert mib["none"] > 1.3 * min(policies), (order, mib)


def test_the_plot_legend_sits_beside_the_axes():
    """With a dozen lines any corner inside the axes covers some; the legend goes beside them."""
    import matplotlib.pyplot as plt

    from bgl.cache.benchmark import BenchRow, hit_rate_figure

    fields = {name: 0 for name in BenchRow.__dataclass_fields__}
    rows = [BenchRow(**{**fields, "policy": p, "order": o, "cache_ratio": r, "mib_from_source": m * (1 - r)})
            for p, m in (("none", 400.0), ("lru", 350.0), ("fifo", 330.0), ("lookahead", 280.0), ("belady", 270.0))
            for o in ("random", "proximity") for r in (0.01, 0.05, 0.1, 0.2)]
    fig = hit_rate_figure(rows, "test")
    try:
        fig.canvas.draw()
        (ax,) = fig.axes
        assert len(ax.get_lines()) == 10
        assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1
    finally:
        plt.close(fig)


def test_bench_cache_plain_lookahead_row_is_the_loaders_default_window(random_store_factory, tmp_path, capsys):
    """The plain ``lookahead`` row reads ahead as bgl.DataLoader does by default (the window sized to
    the cache): the same rows as ``lookahead[auto]``, no more than the old fixed depth ``k4``."""
    store = random_store_factory(num_nodes=400, avg_degree=4.0, feat_dim=4, seed=5)
    out = tmp_path / "default"
    rc = main(["bench-cache", str(store.path), "--policies", "lookahead,belady", "--cache-ratios", "0.1",
               "--fanouts", "3,3", "--batch-size", "4", "--epochs", "1", "--lookahead-variants", "auto,k4",
               "--out", str(out), "--no-progress"])
    assert rc == 0
    with open(out / "hit_rate.csv") as f:
        rows = list(csv.DictReader(f))
    for order in ("random", "proximity"):
        by = {r["policy"]: int(r["rows_from_source"]) for r in rows if r["order"] == order}
        assert by["lookahead"] == by["lookahead[auto]"] <= by["lookahead[k4]"]
    assert BenchConfig().lookahead_k == "auto"
    assert "lookahead reads ahead: the window sized to the cache, bgl.DataLoader's default" in capsys.readouterr().out
    assert main(["bench-cache", str(store.path), "--lookahead-k", "-2", "--out", str(out)]) == 2
    assert "expected 'auto' or an int >= 0, got -2" in capsys.readouterr().err
