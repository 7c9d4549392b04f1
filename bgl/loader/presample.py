"""GNNLab's presampling for the ``presample`` cache policy: input-node access counts of a capped epoch."""
from __future__ import annotations

from dataclasses import replace

from .specs import CacheSpec


def presample_cache_spec(spec: CacheSpec, info, order_stage, sample_stage, max_batches: int,
                         edges=None) -> CacheSpec:
    """``spec`` with ``presample_counts``: how often each node is an input over the first
    ``max_batches`` batches of a presampled epoch (the loader's own order and sampler; with edge
    seeds, a batch's node seeds are its edges' endpoints)."""
    from ..cache import presample_counts

    sampler = info.spec.open()
    try:
        def order_fn(epoch):
            for i, mb in enumerate(order_stage.items((epoch, 12345 + epoch))):
                if i >= max_batches:
                    break
                if edges is not None:
                    yield edges.batch(mb.seeds.numpy(), mb.sample_seed)[0].node_ids.numpy()
                else:
                    yield mb.seeds.numpy()

        def sample_fn(seeds, seed):
            blocks = sampler.sample_blocks(seeds, list(sample_stage.fanouts), replace=sample_stage.replace, seed=seed)
            return blocks[0].src_ids.numpy()

        counts = presample_counts(sample_fn, order_fn, epochs=1, num_nodes=info.num_nodes)
    finally:
        sampler.close()
    return replace(spec, presample_counts=counts)
