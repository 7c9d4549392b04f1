"""Hit-rate benchmark: replay real sampled batches through every cache policy.

For each epoch order (``random`` = DGL's shuffle, ``proximity`` = BGL's BFS
order) the training nodes are cut into batches, each batch is sampled once
(multi-layer uniform neighbour sampling), and the input node ids of every
batch are recorded.  The same recorded stream is then replayed through each
policy at each cache size, so policies differ only in what they keep.

Per (policy, order, cache ratio) the benchmark reports the MiB the miss
source had to deliver (rows fetched from the source x row bytes: what crosses
the network or PCIe, the figure that matters; a store with a feature codec is
replayed on its encoded rows, so bytes are encoded bytes), the hit rate, and the cache's
own speed: ids looked up and inserted per second, miss-source time subtracted.

``lookahead`` replays as ``bgl.DataLoader`` reads ahead by default: each batch is
announced as soon as the window sized to the cache reaches it (``lookahead_k="auto"``,
:class:`~bgl.cache.lookahead_feeder.CacheSizedWindow`), or ``lookahead_k`` fetches
before it is fetched for a fixed depth (the ``lookahead[k4]`` variant: the loader's
old default).  ``belady`` is Belady's offline optimum for the same
stream and capacity (:class:`~bgl.cache.lookahead.BeladyBound`): a bound, not a
policy a loader can run.  Recording and replay live in :mod:`bgl.cache.replay`.
"""
from __future__ import annotations

import csv
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from .bench_config import FIFO_VARIANTS, LOOKAHEAD_VARIANTS, BenchConfig
from .gpu_gather import HostFeatureSource
from .lookahead import BeladyBound, LookaheadCache
from .ordering import random_order
from .policies import make_cache, presample_counts
from .replay import _TimedSource, input_node_sampler, memmap_gather_ms, record_batches, replay

log = logging.getLogger(__name__)

# one colour per policy, line style per order (solid = proximity, dashed = random)
POLICY_COLORS = {"none": "black", "static-degree": "tab:blue", "presample": "tab:orange",
                 "lru": "tab:green", "fifo": "tab:red", "lookahead": "tab:purple", "belady": "grey"}
CSV_COLUMNS = ("policy", "order", "cache_ratio", "capacity", "mib_from_source", "rows_from_source", "hit_rate",
               "requests", "hits", "bytes_from_source", "ids_per_s", "batches", "own_ms_per_batch",
               "policy_ms_per_batch", "gather_ms_per_batch", "mean_depth")


@dataclass(frozen=True)
class BenchRow:
    """One measured (policy, order, cache ratio) run of the hit-rate benchmark."""
    policy: str
    order: str
    cache_ratio: float
    capacity: int
    mib_from_source: float
    rows_from_source: int
    hit_rate: float
    requests: int
    hits: int
    bytes_from_source: int
    ids_per_s: float
    batches: int
    own_ms_per_batch: float = 0.0  # the cache's CPU time per batch (miss source subtracted)
    policy_ms_per_batch: float = 0.0  # of which the policy's bookkeeping (admission/eviction, announce)
    gather_ms_per_batch: float = 0.0  # CPU time of np.take of the batch's rows from the feature memmap
    mean_depth: float = 0.0  # lookahead: batches announced beyond the fetched one, on average

    def to_dict(self) -> dict:
        """The row as a JSON-ready dict."""
        return asdict(self)


def _synthetic_source(dim: int, dtype=torch.float32):
    """Rows derived from the id (so results stay checkable) for stores without features."""
    def source(ids: torch.Tensor) -> torch.Tensor:
        return ids.to(dtype).unsqueeze(1).expand(-1, dim).contiguous()
    return source


def run_benchmark(store, cfg: BenchConfig, progress: bool = True) -> list[BenchRow]:
    """Replay ``cfg.epochs`` of sampled batches per order through every policy × ratio."""
    from tqdm import tqdm

    feat = getattr(store, "feat_rows", store.feat)  # a store's encoded rows (bgl/codec) when it has them
    if feat is not None:
        dim = int(feat.shape[1])  # an encoded row's width: every policy, Belady too, counts encoded bytes
        source = HostFeatureSource(feat)
        dtype = source.dtype
    else:
        if cfg.feat_dim <= 0:
            raise ValueError(f"store {store.path} has no features; pass feat_dim > 0 for synthetic rows")
        dim, dtype = cfg.feat_dim, torch.float32
        source = _synthetic_source(dim, dtype)
    n = store.num_nodes
    train = np.asarray(store.train_idx, dtype=np.int64)
    sample_fn = input_node_sampler(store, cfg.fanouts)
    per_epoch = -(-train.size // cfg.batch_size)
    if cfg.max_batches is not None:
        per_epoch = min(per_epoch, cfg.max_batches)
    needs_presample = "presample" in cfg.policies or (
        "lookahead" in cfg.policies and cfg.lookahead_scores == "presample") or any(
        (LOOKAHEAD_VARIANTS[v][2] or cfg.lookahead_scores) == "presample" for v in cfg.lookahead_variants)
    total_sampling = len(cfg.orders) * cfg.epochs * per_epoch + (per_epoch * cfg.presample_epochs if needs_presample else 0)
    variants = [f"fifo[{v}]" for v in cfg.fifo_variants] + [f"lookahead[{v}]" for v in cfg.lookahead_variants]
    runs = [(p, o, r) for o in cfg.orders for p in list(cfg.policies) + variants for r in cfg.cache_ratios]
    bar = tqdm(total=total_sampling + len(runs), desc="bench-cache", unit="step", disable=not progress, leave=False)
    try:
        degrees = np.asarray(store.in_degrees())
        counts = None
        if needs_presample:
            # GNNLab presamples with its own (random) epochs, never the measured ones
            def order_fn(epoch):
                ids = random_order(train, cfg.seed + 7_777 + epoch)
                starts = range(0, ids.size, cfg.batch_size)
                if cfg.max_batches is not None:
                    starts = starts[: cfg.max_batches]
                for b in starts:
                    bar.update(1)
                    yield ids[b:b + cfg.batch_size]

            counts = presample_counts(sample_fn, order_fn, cfg.presample_epochs, num_nodes=n)
        streams = {o: record_batches(store, sample_fn, o, cfg, progress=bar) for o in cfg.orders}
        gather_ms = {o: memmap_gather_ms(store, streams[o]) for o in cfg.orders}
        rows = []
        no_cache: dict[str, tuple[dict, float]] = {}
        for policy, order, ratio in runs:
            capacity = int(round(ratio * n))
            insert_order, seed_hint, by_degree = cfg.insert_order, cfg.seed_hint, cfg.degree_priority
            k, fill, fill_scores = cfg.lookahead_k, cfg.lookahead_fill, cfg.lookahead_scores
            if policy.startswith("fifo["):
                insert_order, seed_hint, by_degree = FIFO_VARIANTS[policy[5:-1]]
            if policy.startswith("lookahead["):
                vk, fill, vs = LOOKAHEAD_VARIANTS[policy[10:-1]]
                k = cfg.lookahead_k if vk is None else vk
                fill_scores = vs or cfg.lookahead_scores
            base = policy.split("[")[0]
            use_degrees = base == "static-degree" or (base == "fifo" and by_degree)
            if base == "belady":
                cache = BeladyBound(capacity, n, dim, dtype, "cpu")
            elif base == "lookahead":
                cache = LookaheadCache(capacity, n, dim, dtype, "cpu", fill=fill,
                                       scores=counts if fill_scores == "presample" else degrees)
            else:
                cache = make_cache(base, capacity, n, dim, dtype, "cpu", degrees=degrees if use_degrees else None,
                                   presample_counts=counts, insert_order=insert_order)
            if policy == "none" and order in no_cache:  # capacity-independent: replay once per order
                stats, speed = no_cache[order]
            else:
                stats, speed = replay(cache, streams[order], source, seed_hint, lookahead=k)
                if policy == "none":
                    no_cache[order] = (stats, speed)
            row_bytes = cache.row_bytes
            rows.append(BenchRow(policy, order, float(ratio), cache.capacity,
                                 stats["bytes_from_source"] / 2**20, stats["bytes_from_source"] // row_bytes,
                                 stats["hit_rate"], stats["requests"], stats["hits"], stats["bytes_from_source"],
                                 speed, len(streams[order]),
                                 1e3 * stats["own_cpu_seconds"] / max(len(streams[order]), 1),
                                 1e3 * stats["policy_cpu_seconds"] / max(len(streams[order]), 1),
                                 gather_ms[order], stats.get("mean_depth", 0.0)))
            bar.update(1)
        return rows
    finally:
        bar.close()


def format_table(rows: Sequence[BenchRow]) -> str:
    """The rows as a fixed-width text table (policy, order, ratio, MiB and rows from source, hit rate, Mids/s).

    ``belady`` rows are labelled as the offline bound they are.
    """
    head = (f"{'policy':<24}{'order':<11}{'ratio':>7}{'MiB from source':>17}{'rows from source':>18}"
            f"{'hit rate':>10}{'Mids/s':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        name = "belady (offline bound)" if r.policy == "belady" else r.policy
        lines.append(f"{name:<24}{r.order:<11}{r.cache_ratio:>7.3f}{r.mib_from_source:>17.1f}"
                     f"{r.rows_from_source:>18}{r.hit_rate:>10.4f}{r.ids_per_s / 1e6:>9.2f}")
    return "\n".join(lines)


def write_csv(rows: Sequence[BenchRow], path: Path) -> None:
    """Atomic: written to ``path.tmp`` then renamed."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow(r.to_dict())
    os.replace(tmp, path)


def plot_hit_rates(rows: Sequence[BenchRow], path: Path, title: str = "") -> None:
    """Write :func:`hit_rate_figure` of ``rows`` to ``path`` as a PNG (atomically)."""
    fig = hit_rate_figure(rows, title)
    import matplotlib.pyplot as plt  # after the figure chose the Agg backend

    try:
        tmp = path.with_name(path.name + ".tmp.png")
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        plt.close(fig)


def hit_rate_figure(rows: Sequence[BenchRow], title: str = ""):
    """MiB from source vs cache ratio, one line per (policy, order), on matplotlib's Agg backend;
    the caller closes the figure.

    Belady's bound is drawn dotted, wide and underneath the policies, and labelled as a bound; the
    legend sits beside the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    try:
        keys = list(dict.fromkeys((r.policy, r.order) for r in rows))
        for policy, order in keys:
            pts = sorted((r.cache_ratio, r.mib_from_source) for r in rows
                         if (r.policy, r.order) == (policy, order))
            label = f"{policy} / {order}" + (" (offline bound)" if policy == "belady" else "")
            style = ":" if policy == "belady" else ("-" if order == "proximity" else "--")
            # The bound wide and underneath: a policy that reaches it (lookahead often does) stays visible.
            bound = dict(linewidth=4, alpha=0.45, zorder=1, marker=None) if policy == "belady" else \
                dict(marker="o", zorder=2)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=POLICY_COLORS.get(policy),
                    linestyle=style, label=label, **bound)
        ax.set_xlabel("cache capacity / num nodes")
        ax.set_ylabel("MiB from source (lower is better)")
        ax.set_ylim(0, None)
        ax.grid(alpha=0.3)
        # Beside the axes, not on them: with a dozen lines any corner inside covers some.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        if title:
            ax.set_title(title)
        fig.tight_layout()
    except BaseException:
        plt.close(fig)
        raise
    return fig


@dataclass(frozen=True)
class FetchSpeed:
    """Result of :func:`fetch_microbenchmark`.

    ``*_cpu`` figures are process CPU seconds: on a machine shared with other
    jobs they show what the cache costs, while wall-clock also counts the
    time other processes held the core.
    """

    policy: str
    ids: int
    dim: int
    hit_rate: float
    seconds_total: float
    seconds_cache: float
    cpu_seconds_total: float
    cpu_seconds_cache: float
    threads: int
    batches: int = 0
    policy_seconds: float = 0.0      # the policy's own bookkeeping (admission/eviction, announce)
    policy_cpu_seconds: float = 0.0
    #: the anchor of the bookkeeping budget: ``np.take`` of every batch's ids from a
    #: page-cached ``np.memmap`` of the same feature table, timed in the same loop
    seconds_gather: float = 0.0
    cpu_seconds_gather: float = 0.0

    @property
    def ids_per_s(self) -> float:
        """Cache-only ids per wall-clock second."""
        return self.ids / max(self.seconds_cache, 1e-9)

    @property
    def ids_per_cpu_s(self) -> float:
        """Cache-only ids per CPU second of this process."""
        return self.ids / max(self.cpu_seconds_cache, 1e-9)


def fetch_microbenchmark(policy: str = "fifo", num_nodes: int = 2_000_000, ratio: float = 0.1,
                         total_ids: int = 20_000_000, batch: int = 1_000_000, dim: int = 16,
                         skew: float = 3.0, unique_batches: bool = True, seed: int = 0,
                         reuse_out: bool = False, insert_order: str = "reverse",
                         priority: bool = False, lookahead: int = 4,
                         gather_dir: str | None = None) -> FetchSpeed:
    """Pure fetch speed on a large random id stream (cache work only; source time subtracted).

    Ids are ``floor(u**skew * num_nodes)`` (a skewed, hub-heavy stream); with
    ``unique_batches`` each batch is deduplicated first, as a sampled batch's
    input nodes are.  ``reuse_out`` passes one preallocated result buffer to
    every fetch (what a loader with per-slot buffers does); without it each
    fetch allocates a fresh result, whose first touch page-faults on CPU.
    ``priority`` gives the fifo a node priority (its insertion sort is then timed too).
    ``lookahead``: batches announced ahead of the fetch for policy ``lookahead`` (announce
    time counts as cache time).  With ``gather_dir`` the same feature table is also written
    there as a ``.npy`` memmap and each batch's ids are gathered from it (``np.take``) in
    the same loop: ``seconds_gather``, the budget the issue sets for a policy's bookkeeping.
    """
    g = torch.Generator().manual_seed(seed)
    feat = torch.randn(num_nodes, dim, generator=g)
    # the stream's hubs are the small ids, so -id stands in for an in-degree priority
    degrees = -np.arange(num_nodes) if (priority or policy == "static-degree") else None
    cache = make_cache(policy, int(ratio * num_nodes), num_nodes, dim, degrees=degrees,
                       presample_counts=-np.arange(num_nodes) if policy == "lookahead" else np.zeros(num_nodes),
                       insert_order=insert_order)
    timed = _TimedSource(lambda ids: feat.index_select(0, ids))
    memmap = None
    if gather_dir is not None:
        path = Path(gather_dir) / f"micro-feat-{os.getpid()}.npy"
        arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(num_nodes, dim))
        arr[:] = feat.numpy()
        arr.flush()
        del arr
        memmap = np.load(path, mmap_mode="r")
        os.unlink(path)  # the mapping stays valid; nothing is left behind
        np.asarray(memmap).sum()  # page it in once: the gather is timed from the page cache
    batches = []
    for start in range(0, total_ids, batch):
        ids = (torch.rand(min(batch, total_ids - start), generator=g) ** skew * num_nodes).long()
        if unique_batches:
            ids = ids.unique()
            ids = ids[torch.randperm(ids.numel(), generator=g)]
        batches.append(ids)
    n = sum(b.numel() for b in batches)
    buffer = torch.empty(max(b.numel() for b in batches), dim) if reuse_out else None
    if buffer is not None:
        buffer.fill_(0)  # fault the pages in once, outside the timed loop
    announce = getattr(cache, "announce", None)
    cache.reset_stats()
    ahead = 0
    gather_s = gather_cpu = 0.0
    t, c = time.perf_counter(), time.thread_time()
    for i, ids in enumerate(batches):
        while announce is not None and ahead < min(len(batches), i + lookahead + 1):
            announce(batches[ahead])
            ahead += 1
        cache.fetch(ids, timed, out=None if buffer is None else buffer[: ids.numel()])
        if memmap is not None:
            tg, cg = time.perf_counter(), time.thread_time()  # thread clock: cheap, unlike the process one
            np.take(memmap, ids.numpy(), axis=0)
            gather_s += time.perf_counter() - tg
            gather_cpu += time.thread_time() - cg
    total, cpu = time.perf_counter() - t - gather_s, time.thread_time() - c - gather_cpu
    return FetchSpeed(policy, n, dim, cache.stats()["hit_rate"], total, total - timed.seconds,
                      cpu, cpu - timed.cpu_seconds, torch.get_num_threads(), len(batches), cache.policy_seconds,
                      cache.policy_cpu_seconds, gather_s, gather_cpu)
