"""``bgl bench-cache``: rows and MiB each cache policy × epoch order × cache size fetches from the source (plus hit rate), with Belady's bound."""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from .arguments import int_at_least, show_progress


def _csv(kind):
    def parse(text: str):
        try:
            return tuple(kind(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s, got {text!r}") from None
    return parse


def _depth(text: str):
    """``--lookahead-k``: ``auto`` or a batch count >= 0."""
    if text == "auto":
        return text
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an int >= 0, got {text!r}") from None
    if k < 0:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an int >= 0, got {k}")
    return k


def register(subparsers) -> None:
    """Add the ``bench-cache`` parser (cache hit-rate benchmark) to ``subparsers``."""
    parser = subparsers.add_parser(
        "bench-cache", help="replay sampled batches through cache policies; MiB-from-source table, CSV and plot",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("store", nargs="?", default=None,
                        help="graph store directory (default: the embedded Cora dataset, ingested to a temp dir)")
    parser.add_argument("--policies", type=_csv(str), default="none,static-degree,presample,lru,fifo,lookahead,belady",
                        help="cache policies to compare; 'belady' is the offline optimum for the same stream "
                             "and capacity (a bound, not a runnable policy)")
    parser.add_argument("--orders", type=_csv(str), default="random,proximity", help="epoch orders")
    parser.add_argument("--cache-ratios", type=_csv(float), default="0.01,0.05,0.1,0.2",
                        help="cache capacity as a fraction of the node count")
    parser.add_argument("--fanouts", type=_csv(int), default="15,10,5", help="neighbours per layer (DGL order)")
    parser.add_argument("--batch-size", type=int_at_least(1), default=None,
                        help="training nodes per batch (default: the training nodes / 25, within 32..1024, so "
                             "an epoch has batches enough for a cache to reuse rows across; Cora: 65)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs replayed per order")
    parser.add_argument("--num-sequences", type=int, default=4, help="BFS sequences of the proximity order")
    parser.add_argument("--interleave-chunk", type=int, default=1,
                        help="ids taken from one BFS sequence per turn when interleaving (0 = batch size)")
    parser.add_argument("--insert-order", choices=("reverse", "request"), default="reverse",
                        help="fifo: insert a batch's misses last-requested first (keeps seeds/inner hops "
                             "longest) or in request order")
    parser.add_argument("--no-seed-hint", action="store_true",
                        help="do not tell the fifo cache which ids are the batch's seeds")
    parser.add_argument("--no-degree-priority", action="store_true",
                        help="fifo: do not keep a batch's highest in-degree misses when they overflow the ring")
    parser.add_argument("--fifo-variants", type=_csv(str), default="",
                        help="extra fifo rows for comparison: request, reverse-no-seeds, reverse-no-priority")
    parser.add_argument("--lookahead-k", type=_depth, default="auto",
                        help="lookahead: sampled batches announced ahead of the fetch; 'auto' = the window sized "
                             "to the cache, as bgl.DataLoader reads ahead by default")
    parser.add_argument("--lookahead-fill", choices=("counts", "recency", "none"), default="counts",
                        help="lookahead: how rows no announced batch needs compete (presample counts, last use, id)")
    parser.add_argument("--lookahead-scores", choices=("degree", "presample"), default="degree",
                        help="lookahead: scores of the counts fill (in-degrees, or presample access counts)")
    parser.add_argument("--lookahead-variants", type=_csv(str), default="",
                        help="extra lookahead rows for comparison: k0, k1, k4, k16, auto (window sized to the cache), "
                             "recency, presample, degree")
    parser.add_argument("--presample-epochs", type=int, default=1, help="epochs presampled for 'presample'")
    parser.add_argument("--max-batches", type=int, default=None, help="cap on batches per epoch (huge graphs)")
    parser.add_argument("--feat-dim", type=int, default=0,
                        help="width of synthetic rows for a store without features")
    parser.add_argument("--seed", type=int, default=0, help="seeds orders, sampling and presampling")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (cache ops are memory-bound; extra OpenMP threads on a "
                             "busy machine only contend)")
    parser.add_argument("--out", default="bench-cache-out", help="directory for hit_rate.csv and hit_rate.png")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bar (drawn only when stderr is a terminal)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the cache benchmark, print the table and write CSV/plot; return the exit code (0 = done).

    ``--threads`` applies inside this call only: the caller's torch/numba counts are restored.
    """
    from bgl.threads import thread_limits

    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    with thread_limits(args.threads):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from bgl.cache.bench_config import auto_batch_size
    from bgl.cache.benchmark import BenchConfig, format_table, plot_hit_rates, run_benchmark, write_csv
    from bgl.store import GraphStore

    cfg = BenchConfig(
        policies=tuple(args.policies), orders=tuple(args.orders), cache_ratios=tuple(args.cache_ratios),
        fanouts=tuple(args.fanouts), batch_size=args.batch_size or 1, epochs=args.epochs,
        num_sequences=args.num_sequences, interleave_chunk=args.interleave_chunk,
        insert_order=args.insert_order, seed_hint=not args.no_seed_hint,
        degree_priority=not args.no_degree_priority,
        fifo_variants=tuple(args.fifo_variants), lookahead_k=args.lookahead_k,
        lookahead_fill=args.lookahead_fill, lookahead_scores=args.lookahead_scores,
        lookahead_variants=tuple(args.lookahead_variants),
        presample_epochs=args.presample_epochs, seed=args.seed,
        max_batches=args.max_batches, feat_dim=args.feat_dim,
    )
    out = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="bgl-bench-cache-") as tmp:
        if args.store is None:
            from bgl.data import default_dataset_path
            from bgl.sources.datasets import ingest

            store = ingest(str(default_dataset_path()), Path(tmp) / "cora")
        else:
            store = GraphStore(args.store)
        num_train = len(store.splits.get("train", ()))
        if num_train == 0:
            raise ValueError(f"store {store.path} has no training nodes (split 'train')")
        if args.batch_size is None:  # checked above with a placeholder; sized to the graph here
            cfg = replace(cfg, batch_size=auto_batch_size(num_train))
        rows = run_benchmark(store, cfg, progress=show_progress(args))
        name = store.meta.name or os.path.basename(str(store.path))
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "hit_rate.csv")
    plot_hit_rates(rows, out / "hit_rate.png",
                   title=f"{name}: fanouts {list(cfg.fanouts)}, batch {cfg.batch_size}")
    tmp_json = out / "config.json.tmp"
    tmp_json.write_text(json.dumps({"store": name, "version": 1, **cfg.to_dict()}, indent=2))
    os.replace(tmp_json, out / "config.json")
    print(format_table(rows))
    if any(p.startswith("lookahead") for p in cfg.policies):
        window = ("the window sized to the cache, bgl.DataLoader's default" if cfg.lookahead_k == "auto"
                  else f"{cfg.lookahead_k} batches")
        print(f"lookahead reads ahead: {window} (--lookahead-k)")
    print(f"wrote {out / 'hit_rate.csv'} and {out / 'hit_rate.png'}")
    return 0
