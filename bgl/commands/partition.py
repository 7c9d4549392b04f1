"""``bgl partition``: split a graph store into parts (BGL, KaMinPar, METIS, random) and report quality."""
from __future__ import annotations

import argparse

from .arguments import int_at_least

DESCRIPTION = ("Partition a graph store into N parts and write a partition dir (partition.json, "
               "orig_ids.npy, part-K/ stores). Prints edge cut, remote-sample share, balance, "
               "time and peak memory.")


def register(subparsers) -> None:
    """Add the ``partition`` parser (split a store into parts) to ``subparsers``."""
    p = subparsers.add_parser("partition", help="partition a graph store", description=DESCRIPTION,
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("store", metavar="STORE", help="graph store directory (from bgl ingest)")
    p.add_argument("out", metavar="OUT", help="partition directory to create")
    p.add_argument("--method", choices=("bgl", "kaminpar", "metis", "random"), default="bgl",
                   help="partitioner: bgl = KaMinPar with sampler edge weights, multi-constraint balance and "
                        "sampler-aware refinement; kaminpar = plain KaMinPar (the anchor)")
    p.add_argument("--memory-budget", type=parse_bytes, default=None, metavar="BYTES",
                   help="memory the bgl/kaminpar engine may use, e.g. 12G (default: 60%% of the available "
                        "RAM); picks KaMinPar's memory-lean TeraPart preset or refuses when over")
    p.add_argument("--parts", type=int, required=True, metavar="N", help="number of parts")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="random seed")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUT if it is a bgl partition directory (or empty); anything else there is refused")
    p.add_argument("--num-batches", type=int_at_least(0), default=200,
                   help="sampled training batches for the remote-sample share (0 = skip)")
    p.add_argument("--distributed", action="store_true",
                   help="run as MPI ranks (mpirun -n R python -m bgl partition ... --distributed): each rank "
                        "reads its share of STORE and the --engine partitions (--method does not apply); OUT must "
                        "be on a shared filesystem")
    add_engine_arguments(p)
    p.set_defaults(func=run)
    from .import_distdgl import install  # `bgl partition import-distdgl ...`

    install(p)


def add_engine_arguments(p) -> None:
    """``--engine`` and ``--engine-mode`` (with --distributed; ``bgl ingest`` has them too), from the
    engines' table (a stdlib-only module: no MPI or engine library loads at ``--help``)."""
    from bgl.partition.engines import ALL_MODES, AUTO, ENGINES, help_text, mode_help

    p.add_argument("--engine", choices=(AUTO, *ENGINES), default=AUTO,
                   help=f"with --distributed: the partitioning engine ({help_text()})")
    p.add_argument("--engine-mode", choices=ALL_MODES, default=None, metavar="MODE",
                   help=f"with --distributed: the engine's preset ({mode_help()}); the social ones are made for "
                        "power-law graphs")
    from bgl.partition.distributed.weights import BALANCES, DEFAULT_BALANCE

    p.add_argument("--balance", choices=BALANCES, default=None,
                   help=f"with --distributed: what every part holds an equal share of (the engine's vertex "
                        f"weights): {DEFAULT_BALANCE} by default, also training nodes, or nodes only (the "
                        "engines' own unit weights, which left one part ~3x the mean in-edges on R-MAT)")
    from bgl.partition.distributed.coarsen import AUTO_MIN_NODES, CHOICES, DEFAULT

    p.add_argument("--coarsen", choices=CHOICES, default=None,
                   help=f"with --distributed: cluster each rank's own vertices and hand the engine the smaller "
                        f"weighted graph (its memory grows with its input): {DEFAULT} by default, which "
                        f"coarsens graphs of at least {AUTO_MIN_NODES} nodes")


def parse_bytes(text: str) -> int:
    """``"12G"``, ``"512M"``, ``"2.5GiB"`` or a plain byte count -> bytes (argparse type)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    try:
        value = float(t[:-1]) * scale[t[-1]] if t and t[-1] in scale else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a memory size: {text!r} (use e.g. 12G or 800M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"memory budget must be positive, got {text!r}")
    return int(value)


def format_metrics(book) -> str:
    """The metrics table printed after partitioning (also used by bench/partition/methods.py)."""
    m = book.meta["metrics"]
    share = m.get("remote_sample_share")
    no_share = "n/a (not measured by --distributed)" if m.get("remote_sample_share_note") else "n/a (no training nodes)"
    rows = [
        ("method", book.meta["method"]),
        ("parts", str(book.num_parts)),
        ("nodes / edges", f"{book.num_nodes} / {book.num_edges}"),
        ("edge cut", f"{m['edge_cut']:.4f}"),
        ("remote-sample share", no_share if share is None else f"{share:.4f}"),
        ("balance nodes/edges/train (max/avg)",
         f"{m['balance_nodes']:.3f} / {m['balance_edges']:.3f} / {m['balance_train']:.3f}"),
        ("partition seconds", f"{m['seconds']:.2f}"),
        ("write seconds", f"{m['write_seconds']:.2f}"),
        ("peak RSS", f"{m['peak_rss_bytes'] / 2**20:.1f} MiB"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    lines.append("")
    lines.append(f"{'part':>4} {'node range':>24} {'edges':>12} {'train':>9}")
    for p in book.meta["parts"]:
        lines.append(f"{p['part']:>4} {'[' + str(p['node_start']) + ', ' + str(p['node_end']) + ')':>24} "
                     f"{p['num_edges']:>12} {p['num_train']:>9}")
    return "\n".join(lines)


def run(args) -> int:
    """Partition the store, write the partition dir and print the metrics; return the exit code (0 = written)."""
    from bgl.output_dir import require_parent
    from bgl.partition import partition_graph

    require_parent(args.out)
    if args.distributed:
        return run_distributed(args)
    if args.engine_mode is not None:
        raise ValueError("--engine-mode applies to --distributed (the one-machine path has --method)")
    if args.balance is not None:
        raise ValueError("--balance applies to --distributed (the one-machine path has --method)")
    if args.coarsen is not None:
        raise ValueError("--coarsen applies to --distributed (the one-machine path has --method)")
    params = {}
    if args.memory_budget is not None:
        if args.method not in ("bgl", "kaminpar"):
            raise ValueError(f"--memory-budget applies to --method bgl or kaminpar, not {args.method}")
        params["memory_budget"] = args.memory_budget
    # A MemoryError (the engine's plan is over --memory-budget) names its numbers; bgl.cli prints it.
    book = partition_graph(args.store, args.method, args.parts, args.out, seed=args.seed,
                           overwrite=args.overwrite, measure_samples=args.num_batches > 0,
                           num_batches=max(args.num_batches, 1), **params)
    print(f"wrote {book.path}")
    print(format_metrics(book))
    return 0


def run_distributed(args) -> int:
    """``--distributed``: every rank partitions together (see :func:`on_ranks`)."""
    from bgl.partition.distributed import coarsen as dist_coarsen, weights as dist_weights
    from bgl.partition.distributed import partition_distributed

    def work():
        if args.memory_budget is not None:
            raise ValueError("--memory-budget applies to the one-machine --method bgl or kaminpar, not --distributed")
        if args.method != "bgl":  # the default; anything else was asked for and would be ignored
            raise ValueError(f"--method {args.method} is the one-machine partitioner; --distributed uses --engine")
        return partition_distributed(args.store, args.out, args.parts, engine=args.engine,
                                     engine_mode=args.engine_mode, seed=args.seed, overwrite=args.overwrite,
                                     balance=args.balance or dist_weights.DEFAULT_BALANCE,
                                     coarsen=args.coarsen or dist_coarsen.DEFAULT)

    return on_ranks(work)


def on_ranks(work) -> int:
    """Run ``work()`` (returning the written PartitionBook) on every MPI rank: rank 0 prints the
    result, the others stay quiet (a failed check is the same error on every rank, and rank 0
    reports it; the others exit 1 silently)."""
    from bgl.partition.distributed import mpi_rank

    rank = mpi_rank()
    try:
        book = work()
    except Exception:
        if rank != 0:
            return 1
        raise
    if rank == 0:
        print(f"wrote {book.path}")
        print(format_metrics(book))
    return 0
