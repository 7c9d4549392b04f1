"""bgl.cache: GPU feature caches (BGL's FIFO and the policies it is compared with),
proximity-aware ordering of training nodes, and the hit-rate benchmark.

This package never talks to sockets: a cache gets its missing rows from a
``miss_source`` callable (a sampling client's ``fetch_features``, or
:class:`bgl.cache.gpu_gather.HostFeatureSource` over a store's feature memmap).

Module by module:

| file | role |
|---|---|
| `cache/base.py` | `CacheBase`: validation, lookup, dedupe, counters; a fetch is plan → miss source → commit, so a failing miss source leaves the cache as it was |
| `cache/fifo.py` | `FeatureCache`: BGL's FIFO ring on the GPU or CPU |
| `cache/policies.py` | `none`, `lru`, `static-degree` (PaGraph), `presample` (GNNLab), `make_cache` |
| `cache/sharded.py` | `ShardedFeatureCache`: shard = id % num_shards, one miss-source call per fetch |
| `cache/lookahead.py` | `LookaheadCache`: keeps what the already-sampled batches need, fills the rest by a static score; `BeladyBound`, the offline optimum it is measured against |
| `cache/lookahead_feeder.py` | `LookaheadFeeder`: announces sampled batches `depth` ahead of the fetch, so a lookahead cache hears of them before it fetches the current one |
| `cache/typed.py` | `TypedFeatureCache`: one cache of any policy per featured node type, behind the API of one cache over global ids |
| `cache/_kernels.py` | numba kernels of the cache package and of the BFS order |
| `cache/gpu_gather.py` | `HostFeatureSource`: cache misses from host memory by UVA or pinned CPU gather (a miss source the cache package owns, so the benchmark needs nothing from the loader) |
| `cache/bench_config.py` | `BenchConfig`, what the hit-rate benchmark replays; imported by both `benchmark.py` and `replay.py`, which do not import each other's way |
| `cache/benchmark.py` | replay real sampled batches through every policy × order × size (`bgl bench-cache`, `bgl/commands/bench_cache.py`; its default batch, `bench_config.auto_batch_size`, cuts the training nodes into ~25 batches within 32..1024, so a small graph's epoch has batches enough for a cache to reuse rows across) |
| `cache/replay.py` | record each batch's sampled input ids once and replay the stream through a cache, announcing ahead for lookahead and the whole stream for Belady's bound (the benchmark's and `bench/cache/partition_order.py`'s measuring loop) |
| `cache/ordering/store_order.py` | `random_order`, `proximity_order` over a whole store |
| `cache/ordering/partition_order.py` | `PartitionOrder`: the same proximity order over a partition dir, part by part |
| `cache/ordering/saved_orders.py` | `SavedOrders`: each epoch's proximity order as a `.npy` in the loader's `order_dir` (named by a hash of graph, seed items, sequences and the epoch seed, plus the array's CRC-32, checked on read; written through a temporary name; newest 3 kept), read back by a loader built the same way |
"""
from .base import CacheBase, resolve_device
from .fifo import FeatureCache
from .lookahead import BeladyBound, LookaheadCache
from .lookahead_feeder import LookaheadFeeder
from .policies import POLICIES, LRUCache, NoCache, StaticCache, make_cache, presample_counts
from .sharded import ShardedFeatureCache

__all__ = [
    "CacheBase", "FeatureCache", "LookaheadCache", "BeladyBound", "LookaheadFeeder", "ShardedFeatureCache", "LRUCache", "NoCache", "StaticCache",
    "POLICIES", "make_cache", "presample_counts", "resolve_device",
]
