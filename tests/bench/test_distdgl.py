"""bench/distdgl/node_classification.py helpers: DistDGL's ip_config and DGL_* environment, the
store -> DGLGraph bridge, report."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from .conftest import load_bench_script

DISTDGL = Path(__file__).resolve().parents[2] / "bench" / "distdgl" / "node_classification.py"


@pytest.fixture(scope="module")
def bench():
    yield from load_bench_script(DISTDGL, "bench_distdgl")


def test_ip_config_has_one_ip_port_line_per_machine(bench):
    assert bench.ip_config_text([31001, 31002]) == "127.0.0.1 31001\n127.0.0.1 31002\n"


def test_server_and_trainer_env_cover_what_dgl_initialize_reads(bench):
    """Every DGL_* variable dgl.distributed.initialize reads is set, with the role DGL expects."""
    dgl = pytest.importorskip("dgl")
    source = (Path(dgl.__file__).parent / "distributed" / "dist_context.py").read_text()
    asserted = set(re.findall(r'os\.environ\.get\("(DGL_[A-Z_]+)"\) is not None', source))
    assert {"DGL_SERVER_ID", "DGL_IP_CONFIG", "DGL_NUM_SERVER", "DGL_NUM_CLIENT", "DGL_CONF_PATH"} <= asserted
    common = dict(num_servers=1, num_clients=2, conf_path="/p/g.json", ip_config="/p/ip.txt")
    server = bench.dgl_server_env(1, **common)
    assert asserted <= set(server)
    assert (server["DGL_ROLE"], server["DGL_SERVER_ID"], server["DGL_NUM_CLIENT"]) == ("server", "1", "2")
    assert server["DGL_DIST_MODE"] == "distributed" and server["DGL_NUM_SAMPLER"] == "0"
    trainer = bench.dgl_trainer_env(1, 2, 31005, **common)
    assert trainer["DGL_ROLE"] == "client" and "DGL_SERVER_ID" not in trainer
    assert (trainer["RANK"], trainer["WORLD_SIZE"], trainer["MASTER_PORT"]) == ("1", "2", "31005")
    assert all(isinstance(v, str) for v in {**server, **trainer}.values())


def test_store_to_dglgraph_keeps_edges_features_labels_and_split(bench, random_store):
    pytest.importorskip("dgl")
    g = bench.store_to_dglgraph(random_store)
    assert (g.num_nodes(), g.num_edges()) == (random_store.num_nodes, random_store.num_edges)
    indptr, indices, _ = g.adj_tensors("csc")
    assert np.array_equal(indptr.numpy(), np.asarray(random_store.indptr))
    assert np.array_equal(np.sort(indices.numpy()), np.sort(np.asarray(random_store.indices)))
    assert np.array_equal(g.ndata["feat"].numpy(), np.asarray(random_store.feat))
    assert np.array_equal(g.ndata["label"].numpy(), np.asarray(random_store.label))
    for name in ("train", "test"):
        assert np.array_equal(np.flatnonzero(g.ndata[f"{name}_mask"].numpy()),
                              np.sort(np.asarray(random_store.split(name))))


def test_summary_takes_medians_after_the_warmup_epoch_and_report_gives_ratios(bench):
    dgl_stats = {"epochs": [{"time": 9.0, "seeds": 100, "loopback_bytes": 900},
                            {"time": 2.0, "seeds": 100, "loopback_bytes": 1000},
                            {"time": 30.0, "seeds": 100, "loopback_bytes": 1000},
                            {"time": 1.0, "seeds": 100, "loopback_bytes": 1000}], "test_accuracy": 0.80}
    bgl_stats = {"epochs": [{"time": 5.0, "seeds": 100, "loopback_bytes": 9, "client_bytes": 8},
                            {"time": 1.0, "seeds": 100, "loopback_bytes": 400, "client_bytes": 300,
                             "cache_hit_rate": 0.5}], "test_accuracy": 0.805}
    d, b = bench.summarize(dgl_stats), bench.summarize(bgl_stats)
    assert (d["time"], d["seeds_per_s"], d["lo_bytes"]) == (2.0, 50.0, 1000)
    assert (b["client_bytes"], b["hit"]) == (300, 0.5)
    table = bench.report("g", {"distdgl": d, "bgl": b, "bgl-x": None})
    row = next(line for line in table.splitlines() if line.startswith("| bgl |"))
    assert d["best_time"] == 1.0
    assert "| 0.50, 1.00 | 0.40 | +0.5 |" in row
    assert "| bgl-x | failed |" in table
