"""``bgl compress STORE --codec NAME``: add encoded feature rows to a graph store (bgl/codec)."""
from __future__ import annotations

import argparse

from .arguments import int_at_least

CODEC_CHOICES = ("float16", "bfloat16", "int8")  # bgl.codec.CODECS, without importing numba for --help


def register(subparsers) -> None:
    """Add the ``compress`` parser (encode a store's feature rows) to ``subparsers``."""
    p = subparsers.add_parser(
        "compress", help="store a graph store's feature rows encoded (float16, bfloat16, int8)",
        description="Encode STORE's float feature rows with a row codec into feat.<codec>.npy, beside "
                    "feat.npy (or instead of it with --drop-float32), atomically. Loaders, graph servers "
                    "and partitions of the store then move encoded rows; the transfer stage decodes them.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("store", help="graph store directory")
    p.add_argument("--codec", required=True, action="append", type=codec_arg, metavar="[NTYPE=]NAME",
                   help=f"row codec ({', '.join(CODEC_CHOICES)}); a typed store: NAME for every node type with "
                        "features, or NTYPE=NAME once per node type to encode (the others keep their rows)")
    p.add_argument("--block", type=int_at_least(0), default=0,
                   help="int8: columns per scale/offset pair (0 = one pair per row)")
    p.add_argument("--drop-float32", action="store_true", help="remove feat.npy: keep only the encoded rows")
    p.add_argument("--out", default=None, help="write the result as a new store here instead of replacing STORE")
    p.add_argument("--overwrite", action="store_true", help="with --out: replace a bgl store there")
    p.set_defaults(func=run)


def add_feat_codec_arguments(p) -> None:
    """``--feat-codec`` / ``--feat-codec-block`` for a command that writes a store (``bgl ingest``)."""
    p.add_argument("--feat-codec", action="append", type=codec_arg, default=None, metavar="[NTYPE=]NAME",
                   help=f"store the feature rows encoded with this codec ({', '.join(CODEC_CHOICES)}) instead of "
                        "float32 (bgl compress); a typed graph: NTYPE=NAME once per node type to encode")
    p.add_argument("--feat-codec-block", type=int_at_least(0), default=0,
                   help="int8: columns per scale/offset pair (0 = one pair per row)")


def codec_arg(text: str) -> tuple:
    """``(ntype or None, name)`` of one ``--codec`` / ``--feat-codec`` value, ``NAME`` or ``NTYPE=NAME``."""
    ntype, eq, name = text.rpartition("=")
    if name not in CODEC_CHOICES:
        where = f" in {text!r}" if ntype else ""
        raise argparse.ArgumentTypeError(f"invalid choice: {name!r}{where} (choose from {', '.join(CODEC_CHOICES)})")
    if eq and not ntype:
        raise argparse.ArgumentTypeError(f"{text!r}: NTYPE=NAME needs a node type before '='")
    return (ntype or None, name)


def codec_choice(values, flag: str = "--codec"):
    """The codec of repeated ``flag`` values: one name, or ``{ntype: name}``; ValueError when a bare name
    is mixed with per-type ones, given twice, or a node type is named twice."""
    if values is None:
        return None
    bare = [name for nt, name in values if nt is None]
    if bare:
        if len(values) > 1:
            raise ValueError(f"{flag} takes one NAME (every node type) or NTYPE=NAME per node type, not both or "
                             f"twice: got {', '.join(name if nt is None else f'{nt}={name}' for nt, name in values)}")
        return bare[0]
    out = {}
    for nt, name in values:
        if nt in out:
            raise ValueError(f"{flag} names node type {nt!r} twice ({nt}={out[nt]}, {nt}={name})")
        out[nt] = name
    return out


def run(args) -> int:
    """Encode the store's features; print its summary; return the exit code (0 = written)."""
    from ..codec import compress_store
    from ..output_dir import require_parent
    from .info import format_summary, store_summary

    if args.out is not None:
        require_parent(args.out)
    store = compress_store(args.store, codec_choice(args.codec), block=args.block, out=args.out,
                           keep_float32=not args.drop_float32, overwrite=args.overwrite)
    print(format_summary(store_summary(store)))
    return 0
