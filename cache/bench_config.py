"""What the hit-rate benchmark replays: :class:`BenchConfig` and the names it is checked against.

A module of its own so that both the benchmark (:mod:`bgl.cache.benchmark`) and
the recorder it drives (:mod:`bgl.cache.replay`) can import it without
importing each other.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .fifo import INSERT_ORDERS
from .lookahead import FILLS
from .policies import POLICIES

ORDERS = ("random", "proximity")
#: what ``--policies`` accepts: the runnable policies plus Belady's offline bound
BENCH_POLICIES = POLICIES + ("belady",)
# fifo variant -> (insert_order, pass num_seeds to fetch, in-degrees as insertion priority);
# the plain "fifo" rows use (cfg.insert_order, cfg.seed_hint, cfg.degree_priority)
FIFO_VARIANTS = {"request": ("request", False, False), "reverse-no-seeds": ("reverse", False, False),
                 "reverse-no-priority": ("reverse", True, False)}
# lookahead variant -> (k, fill, fill scores: "presample" = presample counts, "degree" = in-degrees,
# None = cfg.lookahead_scores); the plain "lookahead" rows use (cfg.lookahead_k, cfg.lookahead_fill,
# cfg.lookahead_scores)
# "auto": the window sized to the cache (bgl.cache.lookahead_feeder.CacheSizedWindow), the loader's default
# and so the plain rows' default too; "k4": the loader's fixed depth before that (its queue size)
LOOKAHEAD_VARIANTS = {"k0": (0, "counts", None), "k1": (1, "counts", None), "k4": (4, "counts", None),
                      "k16": (16, "counts", None),
                      "auto": ("auto", "counts", None),
                      "recency": (None, "recency", None), "presample": (None, "counts", "presample"),
                      "degree": (None, "counts", "degree")}
LOOKAHEAD_SCORES = ("degree", "presample")
#: ``bgl bench-cache``'s default batch: the training nodes cut into about this many batches an epoch.
AUTO_BATCHES_PER_EPOCH = 25
AUTO_BATCH_RANGE = (32, 1024)


def auto_batch_size(num_train: int) -> int:
    """The default batch of the benchmark: ``num_train / AUTO_BATCHES_PER_EPOCH`` within
    :data:`AUTO_BATCH_RANGE`.  A cache saves only what a later batch of the epoch asks for again;
    on a small graph (Cora: 1,626 training nodes) 1,024-seed batches with fanouts 15,10,5 each touch
    most of the graph, two batches make an epoch, and every policy fetches the same bytes."""
    lo, hi = AUTO_BATCH_RANGE
    return int(min(hi, max(lo, num_train // AUTO_BATCHES_PER_EPOCH)))


@dataclass(frozen=True)
class BenchConfig:
    """What to replay.  ``max_batches`` caps batches per epoch (for huge graphs)."""

    policies: tuple[str, ...] = BENCH_POLICIES
    orders: tuple[str, ...] = ORDERS
    cache_ratios: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2)
    fanouts: tuple[int, ...] = (15, 10, 5)
    batch_size: int = 1024
    epochs: int = 2
    num_sequences: int = 4
    interleave_chunk: int = 1  # ids per turn when interleaving BFS sequences; 0 = batch_size
    insert_order: str = "reverse"  # fifo: see bgl.cache.fifo.INSERT_ORDERS
    seed_hint: bool = True  # pass num_seeds (the batch size) to fetch, as the loader can
    degree_priority: bool = True  # fifo: in-degrees as node_priority (hubs kept when a batch overflows)
    # extra fifo rows for comparison, labelled "fifo[<variant>]", see FIFO_VARIANTS
    fifo_variants: tuple[str, ...] = ()
    # batches announced ahead of the fetch: "auto" = the window sized to the cache, as bgl.DataLoader reads
    # ahead by default (bgl.loader.cache_choice.sized_window), or a fixed depth
    lookahead_k: int | str = "auto"
    lookahead_fill: str = "counts"  # see bgl.cache.lookahead.FILLS
    # fill scores: in-degrees (default: no presample pass, and as good or better in bench/results/cache.md)
    # or GNNLab's presample counts
    lookahead_scores: str = "degree"
    # extra lookahead rows, labelled "lookahead[<variant>]", see LOOKAHEAD_VARIANTS
    lookahead_variants: tuple[str, ...] = ()
    presample_epochs: int = 1
    seed: int = 0
    max_batches: int | None = None
    feat_dim: int = 0  # synthetic rows of this width when the store has no features

    def __post_init__(self):
        bad = [p for p in self.policies if p not in BENCH_POLICIES]
        if bad:
            raise ValueError(f"unknown cache policy {bad[0]!r}; choose from {', '.join(BENCH_POLICIES)}")
        bad = [v for v in self.lookahead_variants if v not in LOOKAHEAD_VARIANTS]
        if bad:
            raise ValueError(f"unknown lookahead variant {bad[0]!r}; choose from {', '.join(LOOKAHEAD_VARIANTS)}")
        if self.lookahead_k != "auto" and (isinstance(self.lookahead_k, bool) or not isinstance(self.lookahead_k, int)
                                           or self.lookahead_k < 0):
            raise ValueError(f"lookahead_k must be an int >= 0 or 'auto', got {self.lookahead_k!r}")
        if self.lookahead_scores not in LOOKAHEAD_SCORES:
            raise ValueError(f"lookahead_scores must be one of {LOOKAHEAD_SCORES}, got {self.lookahead_scores!r}")
        if self.lookahead_fill not in FILLS:
            raise ValueError(f"lookahead_fill must be one of {FILLS}, got {self.lookahead_fill!r}")
        bad = [o for o in self.orders if o not in ORDERS]
        if bad:
            raise ValueError(f"unknown order {bad[0]!r}; choose from {', '.join(ORDERS)}")
        bad = [r for r in self.cache_ratios if not 0 <= r <= 1]
        if bad:
            raise ValueError(f"cache ratios must be in [0, 1], got {bad[0]}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if not self.fanouts or any(f < -1 or f == 0 for f in self.fanouts):
            raise ValueError(f"fanouts must be > 0 or -1, got {list(self.fanouts)}")
        if self.interleave_chunk < 0:
            raise ValueError(f"interleave_chunk must be >= 0 (0 = batch_size), got {self.interleave_chunk}")
        bad = [v for v in self.fifo_variants if v not in FIFO_VARIANTS]
        if bad:
            raise ValueError(f"unknown fifo variant {bad[0]!r}; choose from {', '.join(FIFO_VARIANTS)}")
        if self.insert_order not in INSERT_ORDERS:
            raise ValueError(f"insert_order must be one of {INSERT_ORDERS}, got {self.insert_order!r}")

    @property
    def chunk(self) -> int:
        """Interleave chunk of the proximity order in ids."""
        return self.interleave_chunk or self.batch_size

    def to_dict(self) -> dict:
        """The config as a JSON-ready dict."""
        return asdict(self)
