"""GNNLab's presampling for the ``presample`` cache policy: input-node access counts of a capped epoch."""
from __future__ import annotations

from dataclasses import replace

from .specs import TypedCacheSpec


def presample_cache_spec(spec, info, order_stage, sample_stage, max_batches: int, edges=None):
    """``spec`` with ``presample_counts``: how often each node is an input over the first
    ``max_batches`` batches of a presampled epoch (the loader's own order and sampler; with edge
    seeds, a batch's node seeds are its edges' endpoints).  A typed graph's :class:`TypedCacheSpec`
    samples by its relation fanouts and gives each node type's cache its slice of the counts (over
    the type's local ids, as its cache is keyed)."""
    from ...cache import presample_counts
    from ..seeds.edges import negative_seed, negatives_graph

    typed = isinstance(spec, TypedCacheSpec)

    sampler = info.spec.open()
    try:
        def order_fn(epoch):
            for i, mb in enumerate(order_stage.items((epoch, 12345 + epoch))):
                if i >= max_batches:
                    break
                if edges is not None:  # the sample stage's negatives (GlobalUniform's avoid the graph's edges)
                    graph = negatives_graph(sampler, edges.negative)
                    yield edges.batch(mb.seeds.numpy(), negative_seed(mb.sample_seed), graph)[0].node_ids.numpy()
                else:
                    yield mb.seeds.numpy()

        def sample_fn(seeds, seed):
            if typed:
                blocks = sampler.sample_typed_blocks(seeds, list(sample_stage.typed_fanouts), sample_stage.replace,
                                                     seed)
            else:
                blocks = sampler.sample_blocks(seeds, list(sample_stage.fanouts), replace=sample_stage.replace,
                                               seed=seed)
            return blocks[0].src_ids.numpy()

        counts = presample_counts(sample_fn, order_fn, epochs=1, num_nodes=info.num_nodes)
    finally:
        sampler.close()
    if typed:
        starts = dict(zip(spec.ntypes, spec.offsets.tolist()))
        return replace(spec, specs={nt: replace(s, presample_counts=counts[starts[nt]:starts[nt] + s.num_nodes].copy())
                                    for nt, s in spec.specs.items()})
    return replace(spec, presample_counts=counts)
