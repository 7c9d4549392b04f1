"""``bgl partition import-distdgl PART_CONFIG.json OUT``: a DistDGL partition as a bgl partition dir.

Kept apart from ``bgl/commands/partition.py``: :func:`install` makes the
``partition`` parser hand an argument list starting with ``import-distdgl``
to this module's own parser, so ``bgl partition STORE OUT --parts N`` keeps
its arguments unchanged.
"""
from __future__ import annotations

import argparse

from ..cli import OneLineParser

SUBCOMMAND = "import-distdgl"
EPILOG = (f"bgl partition {SUBCOMMAND} PART_CONFIG.json OUT [--orig-ids FILE.npy]: import a partition "
          "written by DGL's dgl.distributed.partition_graph without repartitioning "
          f"(see bgl partition {SUBCOMMAND} --help).")


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The parser of ``bgl partition import-distdgl``."""
    p = OneLineParser(
        prog=f"{prog} {SUBCOMMAND}", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Rewrite a DistDGL partition (dgl.distributed.partition_graph output: PART_CONFIG.json, "
                    "part-K/graph.dgl, part-K/node_feat.dgl) as a bgl partition dir that `bgl serve "
                    "--partition OUT` serves as is: each part keeps DGL's contiguous id range. Needs dgl.")
    p.add_argument("part_config", metavar="PART_CONFIG.json", help="DistDGL partition config")
    p.add_argument("out", metavar="OUT", help="bgl partition directory to create")
    p.add_argument("--orig-ids", default=None, metavar="FILE.npy",
                   help="orig_nids from partition_graph(..., return_mapping=True) saved with np.save (a "
                        "heterogeneous graph's per-type dict saved with np.savez, one array per node type); "
                        "default: original ids = DGL's shuffled ids")
    p.add_argument("--feat-key", default="feat", help="feature tensor name in node_feat.dgl")
    p.add_argument("--label-key", default="label", help="label tensor name in node_feat.dgl")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUT if it is a bgl partition directory (or empty); anything else there is refused")
    p.set_defaults(func=run, command="partition")
    return p


def install(partition_parser: argparse.ArgumentParser) -> None:
    """Route ``bgl partition import-distdgl ...`` to :func:`build_parser` (and name it in --help)."""
    partition_parser.epilog = EPILOG
    partition_parser.__class__ = _PartitionParser


class _PartitionParser(OneLineParser):
    def parse_known_args(self, args=None, namespace=None):
        if args and args[0] == SUBCOMMAND:
            return build_parser(self.prog).parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)


def run(args) -> int:
    """Import the DistDGL partition and print its parts; return the exit code (0 = written)."""
    from bgl.output_dir import require_parent
    from bgl.partition.distdgl.importer import import_distdgl

    require_parent(args.out)
    book = import_distdgl(args.part_config, args.out, orig_ids=args.orig_ids, feat_key=args.feat_key,
                          label_key=args.label_key, overwrite=args.overwrite)
    print(f"wrote {book.path} ({book.num_parts} parts, {book.num_nodes} nodes, {book.num_edges} edges, "
          f"edge cut {book.metrics['edge_cut']:.4f}, orig ids {book.meta['params']['orig_ids']})")
    for p in book.meta["parts"]:
        print(f"  part {p['part']}: ids [{p['node_start']}, {p['node_end']}), {p['num_edges']} edges, "
              f"{p['num_train']} train")
    return 0
