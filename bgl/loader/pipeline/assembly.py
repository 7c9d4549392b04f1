"""Which of a loader's stages run where: the producer's chain, the trainer's side, the queue between them.

Separate from :mod:`~bgl.loader.dataloader` because it is one decision with its own reasons, taken
each time a loader (re)builds its pipeline: the transfer stage joins the producer when it builds DGL's
CSR (``pipeline="thread"`` on a CPU device: DGL objects arrive built, the trainer does not build them
while it holds the GIL) and otherwise runs in the trainer's thread; the queue then holds finished
batches (``FINISHED_BATCHES_QUEUE``) instead of fetched ones (``DEFAULT_QUEUE``); stage processes
get the cores a short profile gives them (BGL's resource isolation, :mod:`.resources`).  A producer
thread over a local graph runs below the trainer's priority (``bgl.threads.producer_nice``: measured
there); over graph servers it keeps the trainer's, since its CPU then competes with the servers'
processes on the same machines, where a lower priority was not measured.
"""
from __future__ import annotations

import logging
from typing import Optional

from ..loader_options import DEFAULT_QUEUE, FINISHED_BATCHES_QUEUE
from .chain import Pipeline
from ...threads import producer_nice
from .resources import CoreSplit, profile_core_split
from .spawn import start_zygote

log = logging.getLogger(__name__)


def assemble_pipeline(mode: str, order_stage, sample_stage, fetch_stage, transfer_stage, queue_size: Optional[int],
                      core_split: Optional[CoreSplit], servers: bool = False) -> tuple[Pipeline, Optional[CoreSplit]]:
    """The loader's stages as a :class:`~bgl.loader.pipeline.chain.Pipeline` in ``mode``, and the core split used.

    ``core_split`` (a user's ``stage_cores``, or an earlier profile's) is kept; in ``processes`` mode
    without one the stages are profiled now, and the new split is returned for the next rebuild.
    ``queue_size`` None takes the default for where the transfer stage runs.  ``servers``: the graph
    is served by graph servers (the producer keeps the trainer's priority).  ValueError for a bad
    ``$BGL_PRODUCER_NICE``.
    """
    nice = 0 if servers or mode != "thread" else producer_nice()
    cores = None
    if mode == "processes":
        start_zygote()  # its imports (seconds) overlap the core-split probe below
        core_split = core_split or profile_core_split(order_stage, sample_stage, fetch_stage)
        log.info("%s", core_split.describe())
        cores = dict(core_split.cores)
        if "sample" in cores and "order" not in cores:  # a few permutations an epoch: the sampler's cores
            cores["order"] = cores["sample"]
    producer, trainer = [sample_stage, fetch_stage], [transfer_stage]
    if transfer_stage.build_csr:
        producer, trainer = producer + [transfer_stage], []
    if queue_size is None:
        queue_size = FINISHED_BATCHES_QUEUE if transfer_stage.build_csr else DEFAULT_QUEUE
    return Pipeline(order_stage, producer, cores=cores, trainer_stages=trainer, mode=mode,
                    queue_size=queue_size, producer_nice=nice), core_split
