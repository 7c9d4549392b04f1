"""bgl.loader: ``bgl.DataLoader`` and the pipeline that feeds it.

A batch is made by four stages wired by :class:`~bgl.loader.dataloader.DataLoader`:
order (:mod:`bgl.loader.stages.order`) -> sample and fetch
(:mod:`bgl.loader.stages.map`) -> transfer to the training device.  The
stages run inline or one pinned process each (:mod:`bgl.loader.pipeline`); the cores of
each stage come from a short profiling run (:mod:`bgl.loader.pipeline.resources`).

=====================  =====================================================
``dataloader``         ``DataLoader``: epochs, seeds, DDP split, iteration
``loader_options``     ``LoaderOptions``: cache, order, pipeline, queues, resolved once
``sampler_options``    ``NeighborSampler``; ``SamplerOptions``: any sampler's settings, resolved once
``graph_info``         ``GraphInfo``: the graph, resolved once into the description every step reads
``arguments``          seed id checks
``graph_arrays``       ``GraphArrays``: a DGLGraph's own tensors (zero-copy) as the graph
``edge_prediction``    ``as_edge_prediction_sampler``: link prediction's settings, checked
``seeds/``             the seeds as one item kind (nodes or edges, typed, temporal)
``stages/``            order, sample, fetch and transfer stages; specs; ``MiniBatch``
``pipeline/``          running the stages: inline, threads or one process per stage; core split
``state/``             ``state_dict()`` / DCP: where a loader stands, to resume
=====================  =====================================================
"""
