"""``use_ddp=True``: each rank's share of the seeds, cut as DGL's ``DDPTensorizedDataset`` cuts it."""
from __future__ import annotations

import numpy as np


def ddp_chunk(ids: np.ndarray, drop_last: bool) -> tuple[np.ndarray, int, int, int]:
    """(this rank's contiguous chunk of ``ids``, pad, rank, world size).

    Without ``drop_last`` every rank gets ``ceil(n / world)`` ids and the short last ranks
    repeat their first seeds ``pad`` times, so all ranks run the same number of batches.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("use_ddp=True needs torch.distributed initialised (init_process_group)")
    rank, world = dist.get_rank(), dist.get_world_size()
    n = ids.shape[0]
    per_rank = n // world if drop_last else -(-n // world)
    lo, hi = rank * per_rank, (rank + 1) * per_rank
    local = ids[lo:min(hi, n)]
    pad = 0 if drop_last else per_rank - local.shape[0]
    return np.ascontiguousarray(local), pad, rank, world
