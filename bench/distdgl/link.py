"""Link prediction, bgl vs DistDGL over 2 loopback "machines": time and bytes per epoch (issue #24).

The node-classification comparison's setup (bench/distdgl/node_classification.py, imported, not copied): one bgl store
per graph (``bgl ingest``, 128-dim synthetic features where there are none); DistDGL partitions it
with METIS into 2 parts (``return_mapping=True``: the reverse edge ids are mapped into its edge
numbering) and runs 2 servers + 2 trainers in private ``/dev/shm`` namespaces
(bench/distdgl/link_worker.py: ``DistEdgeDataLoader``); bgl partitions it into 2 parts and runs
``bgl launch --backend local`` on 127.0.0.1 and 127.0.0.2, one server and one trainer each
(examples/train_link_pred.py: ``bgl.DataLoader`` over the servers, co-located reads).  Both:
``as_edge_prediction_sampler(NeighborSampler(fanouts), exclude="reverse_id", Uniform(1))``,
GraphSAGE + dot scorer, every edge a seed edge, batch 512 per trainer, ``--max-batches`` per
trainer per epoch when given.  ``--loader-only``: the loaders alone, features read, no model step.

Reported per system: median epoch time after the first, seed edges per second, loopback rx bytes
per epoch (machine-wide, gradient all-reduce included), bgl's client payload bytes, and the
ratios to DistDGL.

Usage::

    nice -n 10 .venv/bin/python bench/distdgl/link.py --graphs pubmed --epochs 3 [--loader-only]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
from bench.distdgl import node_classification as D  # noqa: E402  (ingest, partitions, launch, /dev/shm namespaces)

WORKER = D.REPO / "bench" / "distdgl" / "link_worker.py"
TRAIN_SCRIPT = D.REPO / "examples" / "train_link_pred.py"


def partition_distdgl_with_reverse(store_dir: Path, out: Path) -> Path:
    """METIS 2-part DistDGL partition of the store, and ``reverse_eids.npy`` in its edge ids."""
    import dgl
    import numpy as np

    import bgl

    store = bgl.GraphStore(store_dir)
    g = D.store_to_dglgraph(store)
    _, orig_eids = dgl.distributed.partition_graph(g, D.GRAPH_NAME, 2, str(out), part_method="metis",
                                                   balance_edges=True, return_mapping=True)
    orig = orig_eids.numpy()  # new edge id -> store edge id (CSC position)
    new_of = np.empty_like(orig)
    new_of[orig] = np.arange(orig.shape[0])
    np.save(out / "reverse_eids.npy", new_of[bgl.reverse_edge_ids(store)[orig]])
    return out / f"{D.GRAPH_NAME}.json"


def run_distdgl(conf: Path, work: Path, args) -> dict | None:
    stats = work / f"distdgl-link{D.LOADER_ONLY[args.loader_only]}-stats.json"
    spec = {"workdir": str(work), "part_config": str(conf), "trainers": 2, "timeout": args.timeout,
            "worker": str(WORKER),
            "worker_args": ["--reverse-eids", str(conf.parent / "reverse_eids.npy"), "--epochs", str(args.epochs),
                            "--batch-size", str(args.batch_size), "--fanouts", args.fanouts,
                            "--hidden", str(args.hidden), "--max-batches", str(args.max_batches),
                            "--stats-json", str(stats), *(["--loader-only"] if args.loader_only else [])]}
    spec_path = work / "distdgl-link-spec.json"
    spec_path.write_text(json.dumps(spec))
    cmd = [*D.private_shm_prefix(), sys.executable, D.__file__, "--distdgl-machine", str(spec_path)]
    print("$ " + " ".join(cmd), flush=True)
    code = subprocess.run(cmd, timeout=args.timeout + 120).returncode
    return json.loads(stats.read_text()) if code == 0 and stats.is_file() else None


def run_bgl(parts: Path, work: Path, args, cache: str, order: str) -> dict | None:
    stats = work / f"bgl-link-{cache}-{order}{D.LOADER_ONLY[args.loader_only]}-stats.json"
    cmd = [*D.bgl_launch_prefix(parts, work), sys.executable, str(TRAIN_SCRIPT), "--graph", str(parts),
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--fanouts", args.fanouts,
           "--hidden", str(args.hidden), "--cache", cache, "--order", order, "--test-share", "0",
           "--skip-eval", "--max-batches", str(args.max_batches), "--stats-json", str(stats),
           *(["--loader-only"] if args.loader_only else [])]
    print("$ " + " ".join(cmd), flush=True)
    code = subprocess.run(cmd, timeout=args.timeout, env=D.one_thread_env()).returncode
    if code != 0 or not stats.is_file():
        return None
    out = json.loads(stats.read_text())
    out["test_accuracy"] = float("nan")  # link prediction: no accuracy here (MRR in bench/link_pred/training.py)
    return out


def report(graph: str, rows: dict) -> str:
    """Markdown table of one graph's rows and the bgl/DistDGL ratios."""
    def cells(r, base):
        wait, client = D.wait_and_client_cells(r)
        t, b = (f"{r['time'] / base['time']:.2f}", f"{r['lo_bytes'] / base['lo_bytes']:.2f}") if base else ("-", "-")
        return [f"{r['time']:.2f} / {r['best_time']:.2f}", wait, f"{r['seeds_per_s']:.0f}", f"{r['lo_bytes'] / 1e6:.1f}",
                client, t, b]

    return D.system_table(graph, ["epoch s (median / best)", "trainer wait ms / batch (share)", "seed edges/s",
                                  "loopback MB/epoch", "bgl client MB/epoch", "time / DistDGL (median)",
                                  "loopback bytes / DistDGL"], rows, cells)


def main(argv=None) -> int:
    p = D.comparison_parser(__doc__, graphs="pubmed", batch_size=512, hidden=64)
    p.add_argument("--max-batches", type=int, default=0, help="per trainer per epoch (0: all)")
    p.add_argument("--systems", default="distdgl,bgl,bgl-cache-proximity")
    args = p.parse_args(argv)
    os.environ.setdefault("DGLBACKEND", "pytorch")
    systems = args.systems.split(",")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    tables = []
    for graph, work, store_dir in D.graph_stores(args, "bgl-distdgl-link-"):
        rows = {}
        if "distdgl" in systems:
            conf = work / "dgl-link-parts" / f"{D.GRAPH_NAME}.json"
            if not conf.exists():
                conf = partition_distdgl_with_reverse(store_dir, work / "dgl-link-parts")
            stats = run_distdgl(conf, work, args)
            rows["distdgl"] = D.summarize(stats) if stats else None
        parts = work / "bgl-parts"
        if any(s.startswith("bgl") for s in systems) and not (parts / "partition.json").exists():
            D.partition_bgl(store_dir, parts)
        for name, cache, order in (("bgl", "none", "random"), ("bgl-cache-proximity", "lookahead", "proximity")):
            if name in systems:
                stats = run_bgl(parts, work, args, cache, order)
                rows[name] = D.summarize(stats) if stats else None
        table = report(graph + (" (loader only)" if args.loader_only else ""), rows)
        print(json.dumps({"graph": graph, "rows": rows}), flush=True)
        print(table, flush=True)
        tables.append(table)
    print(f"load average at end: {os.getloadavg()[0]:.1f}", flush=True)
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
