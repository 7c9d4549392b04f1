"""Typed link prediction over 2 graph servers: bytes per batch with and without the lookahead cache.

The sasrec user–item training graph of ``bench/recsys/training.py`` (leave-one-out split), with small random
node features (``--feat-dim`` float32 per user and per item: the graph has none, and the cache holds
feature rows), ingested into a typed store, partitioned ``random`` into 2 parts, each part served by
a real ``bgl serve`` process on 127.0.0.1.  ``bgl.DataLoader`` over the partition with seeds
``{"rates": ids}``, DGL's ``as_edge_prediction_sampler(NeighborSampler([10, 10],
prefetch_node_feats=["feat"]), exclude="reverse_types", negative_sampler=Uniform(1))``, batch 1024,
``cache="none"`` vs ``cache="lookahead"``, alternating; per run: one untimed epoch, then
``--epochs`` timed ones; reported: feature bytes read from the servers per batch (the fetch
stage's ``bytes_from_source``), the hit rate and seconds per epoch.

Usage::

    python bench/recsys/servers.py [--repeats 2] [--epochs 1] [--feat-dim 32]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
TOKEN = "bench-recsys"


@contextmanager
def servers(book, root: Path):
    """One ``bgl serve`` per part; their addresses; shut down (token, then kill) whatever happens."""
    from bgl.sampler.client import shutdown
    from bench.sampling.throughput import stop_servers

    procs, addresses = [], []
    try:
        for k in range(book.num_parts):
            ready = root / f"ready-{k}.json"
            ready.unlink(missing_ok=True)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "bgl", "serve", "--partition", str(book.path), "--part", str(k),
                 "--bind", "tcp://127.0.0.1:*", "--token", TOKEN, "--threads", "1", "--ready-file", str(ready)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for k, proc in enumerate(procs):
            ready, deadline = root / f"ready-{k}.json", time.monotonic() + 300
            while not ready.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"graph server {k} did not come up")
                time.sleep(0.2)
            addresses.append(json.loads(ready.read_text())["address"])
        yield addresses
    finally:
        for a in addresses:
            try:
                shutdown(a, TOKEN)
            except Exception:  # a server already gone: terminated below all the same
                pass
        stop_servers(procs)


def run(book_path: str, seeds, policy: str, epochs: int, seed: int, max_batches: int = 0) -> dict:
    import dgl
    import torch

    import bgl

    torch.manual_seed(seed)
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([10, 10], prefetch_node_feats=["feat"]), exclude="reverse_types",
        reverse_etypes={"rates": "rated-by", "rated-by": "rates"},
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(1))
    loader = bgl.DataLoader(book_path, {"rates": seeds}, sampler, batch_size=1024, shuffle=True, cache=policy)
    try:
        for step, _ in enumerate(loader):  # warm-up epoch (the cache fills)
            if max_batches and step + 1 >= max_batches:
                break
        before, batches, times, waited = loader.cache_stats(), 0, [], 0.0
        for _ in range(epochs):
            t0 = time.perf_counter()
            for step, (_input_nodes, _pair, _neg, blocks) in enumerate(loader):
                assert all(x.shape[0] for x in blocks[0].srcdata["feat"].values())
                batches += 1
                if max_batches and step + 1 >= max_batches:
                    break
            times.append(time.perf_counter() - t0)
            waited += loader.stats()["wait_s"]  # the trainer's time blocked in next() this epoch
        after = loader.cache_stats()
    finally:
        loader.close()
    moved = after["bytes_from_source"] - before["bytes_from_source"]
    requests = max(1, after["requests"] - before["requests"])
    return {"policy": policy, "seed": seed, "batches": batches, "bytes_per_batch": moved / batches,
            "hit_rate": (after["hits"] - before["hits"]) / requests, "s_per_epoch": sum(times) / len(times),
            "wait_ms": 1e3 * waited / batches, "wait_share": waited / sum(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--feat-dim", type=int, default=32)
    parser.add_argument("--workdir", default="/tmp/bgl-bench-recsys-servers")
    parser.add_argument("--graph", default="sasrec", choices=("sasrec", "powerlaw"),
                        help="bench/recsys/training.py's real graph or its 10.6M-edge power-law one")
    parser.add_argument("--max-batches", type=int, default=0, help="batches per epoch (0: all)")
    args = parser.parse_args()
    import numpy as np
    import torch

    import bgl
    from bgl.partition import partition_graph
    from bench.recsys.training import build_graph

    root = Path(args.workdir)
    root.mkdir(parents=True, exist_ok=True)
    print(f"loadavg at start: {open('/proc/loadavg').read().strip()}", flush=True)
    g, _ = build_graph(args.graph, root, (1_000_000, 200_000, 11_000_000) if args.graph == "powerlaw" else None)
    gen = torch.Generator().manual_seed(0)
    for nt in g.ntypes:
        g.nodes[nt].data["feat"] = torch.randn(g.num_nodes(nt), args.feat_dim, generator=gen)
    store = bgl.ingest(g, root / "store", overwrite=True)
    book = partition_graph(store, "random", 2, root / "parts", measure_samples=False, overwrite=True)
    orig = np.asarray(book.orig_eids)
    to_partition = np.empty_like(orig)
    to_partition[orig] = np.arange(orig.shape[0])
    seeds = to_partition[np.flatnonzero(np.asarray(store.etype) == store.schema.etype_id("rates"))]
    with servers(book, root) as addresses:
        os.environ["BGL_SERVERS"] = ",".join(addresses)
        try:
            for seed in range(args.repeats):
                for policy in ("none", "lookahead"):
                    print(json.dumps(run(str(book.path), seeds, policy, args.epochs, seed, args.max_batches)),
                          flush=True)
        finally:
            os.environ.pop("BGL_SERVERS", None)
    print(f"loadavg at end: {open('/proc/loadavg').read().strip()}", flush=True)


if __name__ == "__main__":
    main()
