"""bgl.cache: GPU feature caches (BGL's FIFO and the policies it is compared with),
proximity-aware ordering of training nodes, and the hit-rate benchmark.

This package never talks to sockets: a cache gets its missing rows from a
``miss_source`` callable (a sampling client's ``fetch_features``, or
:class:`bgl.cache.gpu_gather.HostFeatureSource` over a store's feature memmap).
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
