"""``bgl demo``: the whole system on the embedded dataset, on this machine.

1. ingest the embedded default dataset (Cora) into a graph store;
2. partition it with BGL's partitioner into 2 parts;
3. ``bgl launch --backend local``: 2 graph servers and 2 data-parallel
   trainers (torch.distributed, gloo on CPU) running
   ``examples/train_sage.py``, which trains GraphSAGE with ``bgl.DataLoader``
   (feature cache, ``lookahead`` policy by default, + BGL ordering) and prints
   the cache policy, per-epoch time, cache hit rate and test accuracy;
   with ``--task link``, ``examples/train_link_pred.py`` instead: link prediction
   over seed edges (reverse edges excluded, uniform negatives) and the test MRR;
   with ``--task recsys``, a generated user–item graph (``bgl.sources.recsys``) and
   ``examples/train_recsys.py``: typed link prediction (users rate items), BPR, and
   recall@20 / NDCG@20 of each user's held-out item over all items.

It prints one line per phase (sizes, seconds, the partition's share of remote
samples) and the trainers' own lines; ``bgl -v demo`` adds the store summary as
JSON, every partition metric and the partitioner's, launcher's and servers' log.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# The training scripts the demo launches: examples/ next to the package in a source checkout,
# bgl/examples/ in an installed wheel (pyproject installs the folder as bgl.examples).
_INSTALLED_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = (_INSTALLED_EXAMPLES if (_INSTALLED_EXAMPLES / "train_sage.py").is_file()
            else Path(__file__).resolve().parents[2] / "examples")
TRAIN_SCRIPT = EXAMPLES / "train_sage.py"
TRAIN_SCRIPTS = {"node": TRAIN_SCRIPT, "link": EXAMPLES / "train_link_pred.py",
                 "recsys": EXAMPLES / "train_recsys.py"}
DEFAULT_BATCH = {"node": 32, "link": 256, "recsys": 512}


def register(subparsers) -> None:
    """Add the ``demo`` parser (ingest, partition, local launch on the embedded dataset) to ``subparsers``."""
    parser = subparsers.add_parser(
        "demo", help="ingest -> partition -> launch 2 servers + 2 trainers on the embedded dataset",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--workdir", default=None,
                        help="keep the store and partition here (default: a temporary directory)")
    parser.add_argument("--task", default="node", choices=sorted(TRAIN_SCRIPTS),
                        help="node classification (examples/train_sage.py), link prediction "
                             "(examples/train_link_pred.py) or a user-item recommender (examples/train_recsys.py)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--trainers", type=int, default=2, help="data-parallel trainer processes")
    parser.add_argument("--parts", type=int, default=2, help="partitions = graph servers")
    parser.add_argument("--order", default="proximity", choices=["proximity", "random"],
                        help="seed order for the DataLoader: BGL's proximity order (per part) or random")
    # Small enough that one batch's input rows fit in the cache (a 256-seed Cora batch
    # needs ~1800 rows, more than a 20 % cache), so the ordering's effect on hits shows.
    parser.add_argument("--batch-size", type=int, default=None,
                        help="seeds per batch per trainer (default 32 nodes, 256 edges with --task link, "
                             "512 ratings with --task recsys)")
    parser.add_argument("--cache", default="lookahead",
                        choices=["lookahead", "fifo", "lru", "static-degree", "presample", "none"],
                        help="feature cache policy of the DataLoader (fifo = BGL's)")
    parser.add_argument("--port-base", type=int, default=None,
                        help="first server port (default: first free range from 30050)")
    parser.add_argument("--summary-only", action="store_true",
                        help="only ingest and print the store summary")
    parser.set_defaults(func=run)


def find_port_base(count: int, start: int = 30050) -> int:
    """First ``start + 10*k`` such that ``count`` consecutive loopback ports are free now."""
    from bgl.launch.backends import port_is_free

    for base in range(start, 65535 - count, 10):
        if all(port_is_free("127.0.0.1", p) for p in range(base, base + count)):
            return base
    raise RuntimeError(f"no {count} free consecutive ports on 127.0.0.1 above {start}")


def run(args: argparse.Namespace) -> int:
    """Run the demo end to end on this machine; return the exit code (0 = every process succeeded)."""
    verbose = getattr(args, "verbose", 0) > 0
    with quiet_children(not verbose):
        if args.workdir:
            root = Path(args.workdir)
            root.mkdir(parents=True, exist_ok=True)
            return _run_in(root, args, verbose)
        with tempfile.TemporaryDirectory(prefix="bgl-demo-") as tmp:
            return _run_in(Path(tmp), args, verbose)


@contextlib.contextmanager
def quiet_children(quiet: bool):
    """While the demo runs, the processes it starts log warnings only (``$BGL_LOG_LEVEL``), and
    ``OMP_NUM_THREADS=1`` is set where unset (what torchrun sets then, without its banner); the
    environment is restored afterwards."""
    wanted = {"BGL_LOG_LEVEL": "WARNING", "OMP_NUM_THREADS": "1"} if quiet else {}
    added = {k: v for k, v in wanted.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def store_line(s: dict) -> str:
    """One line for a store summary: name, sizes, features, classes and split sizes."""
    feat = f"{s['feat_dim']:,}-dim {s['feat_dtype']} features" if s["feat_dim"] else "no features"
    splits = "/".join(map(str, s["splits"].values()))
    names = "/".join(s["splits"])
    return (f"{s['name'] or 'graph'}: {s['num_nodes']:,} nodes, {s['num_edges']:,} edges, {feat}, "
            f"{s['num_classes'] or 'no'} classes" + (f", {names} {splits}" if splits else ""))


def partition_line(metrics: dict) -> str:
    """One line for a partition's metrics: the cut, the remote share of samples and the balance."""
    def pct(key):
        value = metrics.get(key)
        return "n/a" if value is None else f"{100 * value:.1f} %"
    return (f"edge cut {pct('edge_cut')}, remote samples {pct('remote_sample_share')}, balance nodes "
            f"{metrics.get('balance_nodes', 0):.2f} / edges {metrics.get('balance_edges', 0):.2f} / train "
            f"{metrics.get('balance_train') or 0:.2f}")


def _run_in(root: Path, args: argparse.Namespace, verbose: bool = False) -> int:
    with kernel_log(root) as compile_log:
        return _run_logged(root, args, verbose, compile_log)


@contextlib.contextmanager
def kernel_log(root: Path):
    """``(path, offset)`` of the ``$BGL_COMPILE_LOG`` this run's processes append to (the user's, made
    absolute, else ``root/kernels.jsonl``; restored after), so the demo can say how many kernels the run
    compiled -- time its first batch paid unless ``bgl compile`` paid it at install."""
    from bgl.kernel_cache.log import ENV_COMPILE_LOG

    given = os.environ.get(ENV_COMPILE_LOG)
    # absolute: the launched processes run in other directories
    path = os.environ[ENV_COMPILE_LOG] = os.path.abspath(given or root / "kernels.jsonl")
    try:
        yield path, os.path.getsize(path) if os.path.exists(path) else 0
    finally:
        if given:
            os.environ[ENV_COMPILE_LOG] = given
        else:
            os.environ.pop(ENV_COMPILE_LOG, None)


def _run_logged(root: Path, args: argparse.Namespace, verbose: bool, compile_log: tuple) -> int:
    from bgl.kernel_cache.log import tally
    from bgl.data import default_dataset_path
    from bgl.sources.datasets import ingest

    start = time.perf_counter()
    extra = []
    if args.task == "recsys":
        from bgl.sources.recsys import write_ratings_store

        store, test_pairs = write_ratings_store(root / "store", overwrite=True, seed=0)
        extra = ["--test", str(test_pairs)]
        types = ", ".join(f"{t.count:,} {t.name}s" + (f" ({t.feat_dim}-dim features)" if t.feat_dim else "")
                          for t in store.schema.node_types)
        print(f"[1/3] generate {store.meta.name}: {types}, {store.num_edges:,} edges of "
              f"{len(store.schema.edge_types)} relations ({time.perf_counter() - start:.1f} s)", flush=True)
    else:
        store = ingest(str(default_dataset_path()), root / "store", overwrite=True)
        print(f"[1/3] ingest {store_line(store.summary())} ({time.perf_counter() - start:.1f} s)", flush=True)
    if verbose or args.summary_only:
        print(json.dumps(store.summary(), indent=2), flush=True)
    if args.summary_only:
        return 0

    from bgl.partition import partition_graph

    start = time.perf_counter()
    book = partition_graph(store, "bgl", args.parts, root / "parts", seed=0, overwrite=True)
    metrics = book.meta.get("metrics", {})
    print(f"[2/3] partition into {args.parts} parts (bgl): {partition_line(metrics)} "
          f"({time.perf_counter() - start:.1f} s)", flush=True)
    if verbose:
        shown = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
        print("      " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in shown.items()), flush=True)

    from bgl.launch.backends import LocalBackend
    from bgl.launch.hosts import parse_hosts_text
    from bgl.launch.spec import build_cluster_spec
    from bgl.launch.supervisor import LaunchAborted, Supervisor

    script = TRAIN_SCRIPTS[args.task]
    if not script.is_file():
        print(f"bgl demo: {script} not found (the demo runs from a source checkout or an installed wheel)",
              file=sys.stderr)
        return 1
    port_base = args.port_base or find_port_base(args.parts + 1)
    batch_size = args.batch_size or DEFAULT_BATCH[args.task]
    command = [sys.executable, str(script), "--graph", str(root / "parts"), *extra,
               "--epochs", str(args.epochs), "--order", args.order, "--batch-size", str(batch_size),
               "--cache", args.cache]
    spec = build_cluster_spec(parse_hosts_text("127.0.0.1\n", source="<demo hosts>"),
                              root / "parts", args.parts, command, num_trainers=args.trainers,
                              num_servers_per_host=args.parts, port_base=port_base,
                              server_threads=1, workdir=root)
    print(f"[3/3] launch --backend local: {args.parts} graph servers on ports "
          f"{port_base}..{port_base + args.parts - 1}, {args.trainers} trainers, cache policy {args.cache}",
          flush=True)
    start = time.perf_counter()
    supervisor = Supervisor(spec, LocalBackend(grace=3.0), grace=3.0)
    try:
        code = supervisor.run()
    except LaunchAborted as e:
        print(f"bgl demo: launch failed: {e}", file=sys.stderr)
        return e.exit_code
    kernels = tally(*compile_log)
    print(f"done: servers and trainers {'stopped cleanly' if code == 0 else f'exited with {code}'} "
          f"({time.perf_counter() - start:.1f} s)" + (f"; {kernels}" if kernels else ""), flush=True)
    lifecycle = supervisor.lifecycle()
    if lifecycle is not None:  # where the launch's wall time went, as bgl launch ends with it
        print(lifecycle.line(), flush=True)
    return code
