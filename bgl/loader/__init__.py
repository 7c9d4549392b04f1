"""bgl.loader: ``bgl.DataLoader`` and the pipeline that feeds it.

A batch is made by four stages wired by :class:`~bgl.loader.dataloader.DataLoader`:
order (:mod:`bgl.loader.stages.order`) -> sample and fetch
(:mod:`bgl.loader.stages.map`) -> transfer to the training device.  The
stages run inline or one pinned process each (:mod:`bgl.loader.pipeline.chain`, the
process side in :mod:`bgl.loader.pipeline.stage_process`); the cores of each stage come
from a short profiling run (:mod:`bgl.loader.pipeline.resources`).

=====================  =====================================================
``dataloader``         ``DataLoader``: epochs, seeds, DDP split, iteration
``loader_options``     ``LoaderOptions``: cache, order, pipeline, queues, resolved once
``sampler_options``    ``NeighborSampler``; ``SamplerOptions``: any sampler's settings, resolved once
``arguments``          ``GraphInfo``: the graph as one of its kinds; seed id checks
``seed_items``         ``SeedItems``: the seeds as one item kind (nodes or edges, typed or not)
``specs``              picklable ``SamplingSpec`` / ``CacheSpec``
``minibatch``          ``MiniBatch``, what travels between stages
``order_stage``        the source stage: random or proximity epoch order
``stages``             sample, fetch (cache + miss source) and transfer stages
``stage_protocol``     ``Stage`` / ``SourceStage``: the contract every stage keeps
``pipeline``           ``Pipeline``: inline generator or one process per stage
``stage_process``      what runs inside one stage process (queues, pinning)
``resources``          ``CoreSplit``: profile stages, split cores
``graph_arrays``       ``GraphArrays``: a DGLGraph's own tensors (zero-copy) as the graph
``edge_prediction``    ``as_edge_prediction_sampler``: link prediction's settings, checked
``edge_seeds``         edge seeds through the same stages: pairs, negatives, exclusion
=====================  =====================================================
"""
