"""The recommendation loop's model step on DGL's batches against bgl's, and the batches' sizes.

    python bench/recsys/model_step.py --workdir <training.py's workdir> [--batches 30] [--rounds 8]
                                      [--size-batches 300] [--beside-producer]

What is left between bgl's epoch and the floor (``training.py --systems model-only``) once the trainer
no longer waits is the model step itself.  This script separates what the batches cost from what the
loader's producer costs the step, with ``training.py``'s own graph, sampler, model and step (one torch
thread):

1. **Sizes**: ``--size-batches`` batches of each loader (DGL's, bgl's ``pipeline="inline"``), per layer
   and relation: mean and standard error of edges, dst and src nodes, bgl/DGL, and how many seed edges
   (or reverses) reached a block (0 for both).  A systematic gap is a difference of sampling rule, not
   chance (see docs/ARCHITECTURE.md, "Excluded edges").
2. **Step time**: ``--batches`` batches drawn once from each loader, then ``--rounds`` rounds of the
   model step over each set in turn (the order alternates).  The first round builds DGL's blocks'
   sparse formats in the step (as every batch of DGL's own loop does); bgl's come built.  Later
   rounds compare the steps with every format built.
3. ``--beside-producer``: step rounds over bgl's batches alone against beside a thread that makes one
   bgl batch (inline loader) per step, as the thread pipeline's producer does, and beside it with a
   1 ms switch interval: what the producer's CPU and GIL cost the step.

Printed: the size table, each round's ms a step, and mean / median over rounds after the first.
Run on a quiet box: the figures are wall-clock times, and this VM's steps move ~5 % between rounds.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.common.side_by_side import setup  # noqa: E402
from bench.recsys import training as loop  # noqa: E402


def make_loader(system: str, g, eids, **options):
    import dgl

    import bgl

    torch.manual_seed(0)
    loader_class = dgl.dataloading.DataLoader if system == "dgl" else bgl.DataLoader
    return loader_class(g, {"rates": eids}, loop.edge_sampler(), batch_size=1024, shuffle=True, **options)


def batch_sizes(batch) -> tuple[list[str], list[int]]:
    """(names, values): each block's edges per relation and its dst and src nodes per type, last block first."""
    _, pair, _, blocks = batch
    names, values = ["pair users", "pair items"], [pair.num_nodes("user"), pair.num_nodes("item")]
    for layer, block in zip(("last", "first"), blocks[::-1]):
        for etype in block.canonical_etypes:
            names.append(f"{layer} block: {etype[1]} edges")
            values.append(block.num_edges(etype))
        for nt in ("user", "item"):
            names += [f"{layer} block: dst {nt}s", f"{layer} block: src {nt}s"]
            values += [block.num_dst_nodes(nt), block.num_src_nodes(nt)]
    return names, values


def seed_edges_in_blocks(batch) -> int:
    """How many of the batch's seed edges, or their reverses (the same ids in ``rated-by``), a block holds:
    0 for both loaders, or the exclusion is broken and the sizes below compare nothing."""
    import dgl

    _, pair, _, blocks = batch
    seeds = pair.edges["rates"].data[dgl.EID]
    return sum(int(torch.isin(block.edges[etype].data[dgl.EID], seeds).sum())
               for block in blocks for etype in block.canonical_etypes)


def compare_sizes(g, eids, count: int) -> None:
    table, names, leaked = {}, None, {}
    for system, options in (("dgl", {}), ("bgl", {"pipeline": "inline"})):
        rows, leaked[system] = [], 0
        for k, batch in enumerate(make_loader(system, g, eids, **options)):
            if k >= count:
                break
            names, values = batch_sizes(batch)
            rows.append(values)
            leaked[system] += seed_edges_in_blocks(batch)
        table[system] = np.array(rows, dtype=np.float64)
    print(f"seed edges or their reverses found in the blocks: DGL {leaked['dgl']}, bgl {leaked['bgl']}", flush=True)
    print(f"batch sizes, mean ± standard error over {count} batches:", flush=True)
    se = (lambda x: x.std() / np.sqrt(x.shape[0]))
    for j, name in enumerate(names):
        d, b = table["dgl"][:, j], table["bgl"][:, j]
        print(f"  {name:28s} DGL {d.mean():10.1f} ± {se(d):6.1f}   bgl {b.mean():10.1f} ± {se(b):6.1f}   "
              f"bgl/DGL {b.mean() / d.mean():.4f}", flush=True)


class PacedProducer:
    """A thread that makes one batch of ``loader`` each time :meth:`ask` is called (the thread pipeline's pace)."""

    def __init__(self, loader):
        self.loader, self.items = loader, iter(loader)
        self.asked = threading.Semaphore(0)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True, name="model-step-producer")
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.asked.acquire()
            if self.stopping:
                return
            try:
                next(self.items)
            except StopIteration:
                self.items = iter(self.loader)
                next(self.items)

    def ask(self, times: int = 1) -> None:
        for _ in range(times):
            self.asked.release()

    def drain(self) -> None:
        """Forget the asks not yet served, then give the batch being made 0.3 s to finish (the producer idle)."""
        while self.asked.acquire(blocking=False):
            pass
        time.sleep(0.3)

    def stop(self) -> None:
        self.stopping = True
        self.asked.release()
        self.thread.join()


def timed_rounds(trainer, sets: dict, rounds: int, producer=None) -> dict:
    """Per set, the ms a step of each round (``trainer``: :class:`training.Trainer`); a set whose name holds
    ``producer`` runs beside ``producer``, and one whose name ends in ``1ms`` with a 1 ms switch interval."""
    default_interval = sys.getswitchinterval()
    times = {name: [] for name in sets}
    try:
        for r in range(rounds):
            for name in (list(sets) if r % 2 == 0 else list(sets)[::-1]):
                beside = "producer" in name
                sys.setswitchinterval(0.001 if name.endswith("1ms") else default_interval)
                if beside:
                    producer.ask(2)  # the queue's two batches ahead
                start = time.perf_counter()
                for batch in sets[name]:
                    trainer.step(batch)
                    if beside:
                        producer.ask()
                times[name].append(1000 * (time.perf_counter() - start) / len(sets[name]))
                if beside:
                    producer.drain()
            print(f"  round {r}: " + "  ".join(f"{k} {v[-1]:.1f}" for k, v in times.items()) + " ms a step", flush=True)
    finally:
        sys.setswitchinterval(default_interval)
    return times


def report(times: dict) -> None:
    for name, ms in times.items():
        later = ms[1:] or ms
        print(f"  {name:24s} first round {ms[0]:7.1f}   later rounds: mean {statistics.mean(later):7.1f}, "
              f"median {statistics.median(later):7.1f} ms a step", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="/tmp/bgl-bench-recsys", help="training.py's (the generated pairs)")
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--items", type=int, default=200_000)
    ap.add_argument("--edges", type=int, default=11_000_000)
    ap.add_argument("--batches", type=int, default=30, help="batches per timed set")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--size-batches", type=int, default=300, help="batches per loader in the size table (0: none)")
    ap.add_argument("--beside-producer", action="store_true")
    args = ap.parse_args(argv)
    setup(args.workdir)
    from bgl.loader.pipeline.chain import quiet_numba_threads

    quiet_numba_threads()
    torch.set_num_threads(1)  # as training.py's workers
    g, _ = loop.build_graph("powerlaw", Path(args.workdir), (args.users, args.items, args.edges))
    eids = torch.arange(g.num_edges("rates"))
    if args.size_batches:
        compare_sizes(g, eids, args.size_batches)
    drawn = {}
    for system, options in (("dgl", {}), ("bgl", {"pipeline": "inline"})):
        items = iter(make_loader(system, g, eids, **options))
        drawn[system] = [next(items) for _ in range(args.batches)]
        del items
    trainer = loop.Trainer(g)
    print(f"model step over {args.batches} DGL batches and {args.batches} bgl batches:", flush=True)
    report(timed_rounds(trainer, {"DGL's batches": drawn["dgl"], "bgl's batches": drawn["bgl"]}, args.rounds))
    if args.beside_producer:
        producer = PacedProducer(make_loader("bgl", g, eids, pipeline="inline"))
        try:
            print("model step over bgl's batches, alone and beside a producer making one batch a step:", flush=True)
            sets = {"alone": drawn["bgl"], "beside producer": drawn["bgl"], "beside producer, si 1ms": drawn["bgl"]}
            report(timed_rounds(trainer, sets, args.rounds, producer))
        finally:
            producer.stop()


if __name__ == "__main__":
    main()
