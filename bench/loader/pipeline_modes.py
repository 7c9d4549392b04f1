"""Which pipeline should ``bgl.DataLoader`` use by default?  The old default, the others and DGL, side by side.

One run times, on each workload, DGL's loader and ``bgl.DataLoader`` with ``pipeline="inline"`` (the
default on a local graph until issue #57), ``"thread"`` and ``"processes"``, and prints per mode:
the epoch time (median over the timed epochs and repeats), its ratio to inline's and to DGL's, the
trainer's wait (time blocked in ``next()``, ``bench/common/side_by_side.TrainerWait``, the same timer for
every system: per batch and share of the epoch) and the peak RSS (each run in its own child process,
its own ``VmHWM``: ``bench/common/own_rss.py``) against DGL's.  The model step is in every loop; only the
loader differs.  The workloads are the existing benchmarks' own children, with a ``bgl-<pipeline>``
system name (``side_by_side.bgl_loader_options``):

* ``node``: DGL's GraphSAGE node-classification example (``bench/loader/node_classification.py --suite dropin``'s
  child) on PubMed, 500-dim features;
* ``link``: DGL's GraphSAGE link-prediction example (``bench/link_pred/training.py``'s worker) on Cora
  (the embedded copy) or ``--link-graph``;
* ``typed``: DGL's R-GCN on the paper-word graph of Cora (``bench/typed/rgcn.py``'s worker);
* ``recsys``: the typed user-item recommendation loop, BPR loss (``bench/recsys/training.py``'s worker) on
  the SASRec video ratings.

Runs alternate the modes (the order reversed each repeat) so load drifts hit each alike.  Expected
duration at the default size on a quiet 2-core box: about 6-8 minutes, 32 child runs (an estimate
from the benchmarks' own run times, not measured on a quiet box: the session that wrote this had a
loaded one, where ``--small`` took 17 minutes at a load average of 20); ``--small`` runs every
workload tiny (Cora, a small power-law recommendation graph, one repeat, 4 batches a link or
recommendation epoch), a few minutes on a quiet box, to check that it works.

    nice -n 10 python bench/loader/pipeline_modes.py [--small] [--workloads node,link,typed,recsys]
        [--modes dgl,inline,thread,processes] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

from bench.common.side_by_side import DROPIN_SAMPLER_HELP, DROPIN_SAMPLERS  # noqa: E402

WORKLOADS = ("node", "link", "typed", "recsys")
MODES = ("dgl", "inline", "thread", "processes")


def system_of(mode: str) -> str:
    """The benchmarks' system name of a mode: DGL's loader, or bgl.DataLoader with that pipeline."""
    return "dgl" if mode == "dgl" else f"bgl-{mode}"


def node_run(mode: str, args, seed: int) -> dict:
    """bench/loader/node_classification.py's drop-in child: DGL's GraphSAGE example loop with ``mode``'s loader."""
    from bench.loader import node_classification

    opts = SimpleNamespace(torch_threads=1, dropin_epochs=args.epochs + 1, wide_dim=0, wide_batches=0,
                           dropin_sampler=args.node_sampler)
    row = node_classification._run_child(Path(node_classification.__file__), system_of(mode), args.node_graph, opts)
    epochs, waits = row["epoch_s"][1:], row["wait_s"][1:]  # the first epoch warms up
    batches = row["batches"] * len(epochs) / len(row["epoch_s"])
    return {"epoch_s": statistics.median(epochs), "wait_share": sum(waits) / sum(epochs),
            "wait_ms": 1000 * sum(waits) / max(batches, 1), "peak_rss_mb": row["peak_rss_mb"]}


def link_run(mode: str, args, seed: int) -> dict:
    """bench/link_pred/training.py's worker: DGL's GraphSAGE link-prediction loop with ``mode``'s loader."""
    from bench.link_pred import training

    store = training.store_for(args.link_graph, args.workdir)
    row = training.run_child(system_of(mode), store.path, seed, args.epochs, args.max_batches)
    return {**row, "peak_rss_mb": row["peak_rss_mib"]}


def typed_run(mode: str, args, seed: int) -> dict:
    """bench/typed/rgcn.py's worker: DGL's R-GCN on the paper-word graph with ``mode``'s loader."""
    from bench.typed import rgcn

    if args.typed_store is None:  # built in a child, as rgcn.py does (this process stays free of numba)
        out = subprocess.run([sys.executable, rgcn.__file__, "--workdir", str(args.workdir), "--build",
                              args.typed_graph], check=True, capture_output=True, text=True).stdout
        args.typed_store = Path(out.strip().splitlines()[-1])
    return rgcn.run_child(args.typed_store, system_of(mode), seed, args.epochs, args.typed_batch_size)


def recsys_run(mode: str, args, seed: int) -> dict:
    """bench/recsys/training.py's worker: the user-item BPR loop with ``mode``'s loader."""
    from bench.recsys import training

    opts = SimpleNamespace(workdir=str(args.workdir), epochs=args.epochs, max_batches=args.max_batches,
                           users=args.users, items=args.items, edges=args.edges, eval_users=args.eval_users)
    row = training.run_child(opts, system_of(mode), args.recsys_graph, seed)
    return {**row, "peak_rss_mb": row["peak_rss_mib"]}


RUNS = {"node": node_run, "link": link_run, "typed": typed_run, "recsys": recsys_run}


def table(workload: str, runs: dict) -> str:
    """Markdown rows of one workload: medians over the repeats, ratios to inline's and DGL's."""
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("epoch_s", "wait_share", "wait_ms", "peak_rss_mb")}
           for m, rs in runs.items() if rs}

    def ratio(mode: str, base: str, key: str) -> str:
        return f"{med[mode][key] / med[base][key]:.2f}x" if base in med else "-"

    lines = [f"### {workload}", "", "| mode | epoch s | vs inline | vs DGL | trainer wait ms / batch | wait share "
             "| peak RSS MiB | RSS vs DGL |", "|---|---|---|---|---|---|---|---|"]
    for mode, m in med.items():
        lines.append(f"| {mode} | {m['epoch_s']:.3f} | {ratio(mode, 'inline', 'epoch_s')} | "
                     f"{ratio(mode, 'dgl', 'epoch_s')} | {m['wait_ms']:.2f} | {100 * m['wait_share']:.1f} % | "
                     f"{m['peak_rss_mb']:.0f} | {ratio(mode, 'dgl', 'peak_rss_mb')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma list of {WORKLOADS}")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"comma list of {MODES}, a bgl one optionally with its queue depth (thread-q1)")
    p.add_argument("--repeats", type=int, default=2, help="runs per mode and workload, alternating")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs per run, after one warm-up epoch")
    p.add_argument("--max-batches", type=int, default=40, help="link, recsys: batches per epoch (0: all)")
    p.add_argument("--node-graph", default="pubmed",
                   help="cora, citeseer, pubmed (bench/loader/node_classification.py)")
    p.add_argument("--node-sampler", choices=DROPIN_SAMPLERS, default="example",
                   help="node: " + DROPIN_SAMPLER_HELP)
    p.add_argument("--link-graph", default="cora", help="a bench/link_pred/training.py graph (cora, slashdot, ...)")
    p.add_argument("--typed-graph", default="cora", help="cora or citeseer (bench/typed/rgcn.py)")
    p.add_argument("--typed-batch-size", type=int, default=256)
    p.add_argument("--recsys-graph", default="sasrec", help="sasrec or powerlaw (bench/recsys/training.py)")
    p.add_argument("--users", type=int, default=1_000_000, help="recsys powerlaw graph's size")
    p.add_argument("--items", type=int, default=200_000)
    p.add_argument("--edges", type=int, default=11_000_000)
    p.add_argument("--eval-users", type=int, default=2000, help="recsys: sampled test users")
    p.add_argument("--small", action="store_true",
                   help="tiny runs (Cora everywhere, a small power-law recommendation graph): checks it works")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/bgl-bench-default-pipeline"))
    args = p.parse_args(argv)
    if args.small:
        args.repeats, args.epochs, args.max_batches, args.node_graph = 1, 1, 4, "cora"
        args.recsys_graph, args.users, args.items, args.edges, args.eval_users = "powerlaw", 3000, 800, 30000, 200
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.typed_store = None
    modes = args.modes.split(",")
    # a mode may name its queue depth: thread-q1 is bgl.DataLoader(pipeline="thread", queue_size=1)
    unknown = [m for m in modes if m.split("-q")[0] not in MODES] + [w for w in args.workloads.split(",") if w not in RUNS]
    if unknown:
        raise SystemExit(f"unknown mode or workload: {', '.join(unknown)} (modes {MODES}, workloads {WORKLOADS})")
    print(f"load average at start: {open('/proc/loadavg').read().strip()} ({os.cpu_count()} cores)", flush=True)
    for workload in args.workloads.split(","):
        runs = {m: [] for m in modes}
        for rep in range(args.repeats):
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                runs[mode].append(RUNS[workload](mode, args, rep))
                print(f"{workload} {mode} run {rep}: epoch {runs[mode][-1]['epoch_s']:.3f} s, wait "
                      f"{100 * runs[mode][-1]['wait_share']:.1f} %", flush=True)
        print("\n" + table(workload, runs) + "\n", flush=True)
    print(f"load average at end: {open('/proc/loadavg').read().strip()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
