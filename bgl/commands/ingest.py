"""``bgl ingest SOURCE OUT_DIR``: convert a dataset (or generate R-MAT) into a graph store."""
from __future__ import annotations

import argparse

from .arguments import int_at_least, show_progress

FORMAT_CHOICES = ("gnn-benchmark", "csr-npz", "planetoid", "edgelist", "ogb", "typed-edgelist", "rmat",
                  "rmat-hetero")


def register(subparsers) -> None:
    """Add the ``ingest`` parser (dataset -> graph store) to ``subparsers``."""
    p = subparsers.add_parser(
        "ingest", help="convert a dataset into a graph store directory",
        description="Convert SOURCE (npz, Planetoid dir, SNAP edge list, OGB raw dir (ogbn-mag's typed layout "
                    "too), a typed edge-list dir, rmat:SCALE or rmat-hetero:SCALE) into the graph store OUT_DIR, "
                    "written atomically; with --distributed (MPI ranks), edge-list shards into the partition "
                    "directory OUT_DIR.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("source", help="dataset file/directory, rmat:SCALE or rmat-hetero:SCALE; with --distributed a "
                                  "glob, file or directory of edge-list shards")
    p.add_argument("out_dir", help="graph store directory to create (a partition directory with --distributed)")
    p.add_argument("--format", choices=FORMAT_CHOICES, default=None, help="input format; None = detect from SOURCE")
    p.add_argument("--feat-dim", type=int_at_least(0), default=0, help="add seeded synthetic features of this size")
    p.add_argument("--num-classes", type=int_at_least(0), default=0, help="add seeded synthetic labels with this many classes")
    sym = p.add_mutually_exclusive_group()
    sym.add_argument("--symmetrize", dest="symmetrize", action="store_const", const=True, default=None,
                     help="store every edge in both directions (default: per format; edge lists "
                          "follow a '# Undirected graph' / '# Directed graph' header)")
    sym.add_argument("--no-symmetrize", dest="symmetrize", action="store_const", const=False,
                     help="keep the edges' direction")
    p.add_argument("--add-reverse", action="store_true",
                   help="typed graphs: add reverse relations as dgl.AddReverse() does ((B, rev_r, A) for each "
                        "(A, r, B); a relation within one type gets its reversed edges)")
    p.add_argument("--keep-self-loops", action="store_true", help="keep v -> v edges")
    p.add_argument("--keep-duplicates", action="store_true", help="keep repeated edges")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the default split and synthetic data")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUT_DIR if it is a bgl graph store (or empty); anything else there is refused")
    p.add_argument("--name", default=None, help="Planetoid dataset name when the directory holds several")
    p.add_argument("--split", default=None, help="OGB split directory name when there are several")
    p.add_argument("--num-nodes", type=int_at_least(1), default=None, help="edge list: declared node count (ids must be below)")
    p.add_argument("--edge-weight-column", type=int_at_least(2), default=None, metavar="COL",
                   help="edge list: 0-based column whose numbers become the store's 'weight' edge array "
                        "(2 = the column after src dst)")
    p.add_argument("--edge-time-column", type=int_at_least(2), default=None, metavar="COL",
                   help="edge list: 0-based column of integer edge times (e.g. unix seconds) kept as the store's "
                        "int64 'timestamp' edge array for temporal sampling (add --keep-duplicates to keep "
                        "repeated messages between two nodes); typed edge list: that column of every text edge "
                        "file, a .npy edge file's times in <src>__<rel>__<dst>.time.npy beside it")
    p.add_argument("--node-time", action="append", default=None, metavar="[NTYPE=]FILE",
                   help="node times (one integer a node, e.g. unix seconds: a .npy or a text file of one per line) "
                        "kept as the store's int64 node array --node-time-name for temporal sampling "
                        "(node_timestamp_attr_name=); a typed graph: NTYPE=FILE once per node type, type-local ids")
    p.add_argument("--node-time-name", default="timestamp", metavar="NAME",
                   help="name of the node array --node-time fills")
    p.add_argument("--scale", type=int_at_least(1), default=None, help="rmat: log2 of the node count")
    p.add_argument("--edge-factor", type=int_at_least(1), default=16, help="rmat: generated edges per node")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (drawn only when stderr is a terminal)")
    p.add_argument("--distributed", action="store_true",
                   help="run as MPI ranks (mpirun -n R python -m bgl ingest 'DIR/part-*.txt' OUT --distributed "
                        "--parts P --num-nodes N): SOURCE is a glob, file or directory of edge-list shards (text, "
                        "gzip, .npy [E, 2], Parquet), each rank reads its share and OUT is written as a partition "
                        "directory (on a filesystem all ranks see); node data only from --feat/--label, a seeded "
                        "hash split")
    p.add_argument("--parts", type=int_at_least(1), default=None, metavar="P",
                   help="with --distributed: number of parts")
    from .partition import add_engine_arguments

    add_engine_arguments(p)
    p.add_argument("--feat", default=None, metavar="FILE.npy",
                   help="with --distributed: node features [N, D] (floats); each rank reads its nodes' rows")
    p.add_argument("--label", default=None, metavar="FILE.npy",
                   help="with --distributed: node labels [N] (ints, -1 = unlabelled); each rank reads its nodes' rows")
    from .compress import add_feat_codec_arguments

    add_feat_codec_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """Ingest the source into a graph store and print its summary; return the exit code (0 = written)."""
    from ..output_dir import require_parent
    from ..sources.datasets import ingest

    require_parent(args.out_dir)
    if args.distributed:
        return run_distributed(args)
    for flag, value in (("--parts", args.parts), ("--feat", args.feat), ("--label", args.label)):
        if value is not None:
            raise ValueError(f"{flag} applies to --distributed (one-machine ingest reads node data from SOURCE)")
    if args.engine_mode is not None:
        raise ValueError("--engine-mode applies to --distributed (one-machine ingest does not partition)")
    if args.balance is not None:
        raise ValueError("--balance applies to --distributed (one-machine ingest does not partition)")
    if args.coarsen is not None:
        raise ValueError("--coarsen applies to --distributed (one-machine ingest does not partition)")
    opts = {}
    if args.name is not None:
        opts["name"] = args.name
    if args.split is not None:
        opts["split"] = args.split
    if args.num_nodes is not None:
        opts["num_nodes"] = args.num_nodes
    if args.edge_weight_column is not None:
        opts["edge_weight_column"] = args.edge_weight_column
    if args.edge_time_column is not None:
        opts["edge_time_column"] = args.edge_time_column
    if args.node_time:
        opts.update(node_time=args.node_time, node_time_name=args.node_time_name)
    is_rmat = args.format in ("rmat", "rmat-hetero") or args.source.startswith(("rmat:", "rmat-hetero:"))
    if is_rmat:
        opts["edge_factor"] = args.edge_factor
        if args.scale is not None:
            opts["scale"] = args.scale
    if args.add_reverse:
        opts["add_reverse"] = True
    def write(out_dir, overwrite=args.overwrite):
        return ingest(args.source, out_dir, args.format, feat_dim=args.feat_dim,
                      num_classes=args.num_classes, symmetrize=args.symmetrize,
                      remove_self_loops=not args.keep_self_loops, dedupe=not args.keep_duplicates,
                      seed=args.seed, overwrite=overwrite, progress=show_progress(args), **opts)

    if args.feat_codec:  # float32 rows go to a scratch store, the encoded ones to OUT_DIR (bgl/codec)
        from ..codec.store_codec import write_encoded
        from .compress import codec_choice

        codec = codec_choice(args.feat_codec, "--feat-codec")
        store = write_encoded(args.out_dir, codec, lambda path: write(path, False),
                              block=args.feat_codec_block, overwrite=args.overwrite)
    else:
        store = write(args.out_dir)
    from .info import format_summary, store_summary

    print(format_summary(store_summary(store)))
    return 0


#: Options of one-machine ingest that edge-list shards do not take (flag, attribute, values allowed).
_NOT_DISTRIBUTED = (("--format", "format", (None, "edgelist")), ("--feat-dim", "feat_dim", (0,)),
                    ("--num-classes", "num_classes", (0,)), ("--add-reverse", "add_reverse", (False,)),
                    ("--name", "name", (None,)), ("--split", "split", (None,)),
                    ("--edge-weight-column", "edge_weight_column", (None,)), ("--scale", "scale", (None,)),
                    ("--feat-codec", "feat_codec", (None,)))


def run_distributed(args) -> int:
    """``--distributed``: every rank ingests and partitions together; rank 0 prints (as
    ``bgl partition --distributed`` does)."""
    from ..partition.distributed import coarsen as dist_coarsen, weights as dist_weights
    from ..partition.distributed.ingest import ingest_distributed
    from .partition import on_ranks

    def work():
        for flag, name, allowed in _NOT_DISTRIBUTED:
            if getattr(args, name) not in allowed:
                raise ValueError(f"{flag} does not apply to --distributed (edge-list shards, no node data)")
        if args.parts is None:
            raise ValueError("--distributed needs --parts P (it writes a partition directory)")
        return ingest_distributed(args.source, args.out_dir, args.parts, num_nodes=args.num_nodes,
                                  symmetrize=args.symmetrize, remove_self_loops=not args.keep_self_loops,
                                  dedupe=not args.keep_duplicates, engine=args.engine,
                                  engine_mode=args.engine_mode, seed=args.seed, balance=args.balance or dist_weights.DEFAULT_BALANCE,
                                  coarsen=args.coarsen or dist_coarsen.DEFAULT,
                                  overwrite=args.overwrite, feat=args.feat, label=args.label,
                                  edge_time_column=args.edge_time_column)

    return on_ranks(work)
