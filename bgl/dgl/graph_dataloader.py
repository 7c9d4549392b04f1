"""``dgl.dataloading.GraphDataLoader``: minibatches of whole small graphs (graph classification), as DGL's.

DGL's is torch's ``DataLoader`` with a collate function that joins the graphs of a batch into one
(``dgl.batch``) and stacks what comes with them (labels, dicts, tuples), plus a ``DistributedSampler``
under ``use_ddp``; so is this one, over ``bgl.dgl`` graphs.  It is not bgl's sampling pipeline: a
dataset of many small graphs has nothing to sample or cache, each item is read whole.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from bgl.dgl.base import DGLError
from bgl.dgl.batching import batch
from bgl.dgl.heterograph import DGLGraph


def collate_graphs(items: list):
    """A batch of dataset items, field by field: graphs batched, tensors stacked, numbers into a tensor,
    strings kept as a list, mappings and sequences collated per key / position (DGL's ``GraphCollator``)."""
    elem = items[0]
    if isinstance(elem, DGLGraph):
        return batch(items)
    if isinstance(elem, torch.Tensor):
        return torch.stack(items, 0)
    if isinstance(elem, (float, int)):
        return torch.tensor(items)
    if isinstance(elem, str):
        return items
    if isinstance(elem, Mapping):
        return {key: collate_graphs([d[key] for d in items]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(collate_graphs(list(samples)) for samples in zip(*items)))
    if isinstance(elem, Sequence):
        return [collate_graphs(list(samples)) for samples in zip(*items)]
    raise TypeError(f"GraphDataLoader cannot batch items of type {type(elem).__name__}; pass collate_fn=")


class GraphDataLoader(DataLoader):
    """``GraphDataLoader(dataset, collate_fn=None, use_ddp=False, ddp_seed=0, **kwargs)``: torch's
    ``DataLoader`` (``batch_size``, ``shuffle``, ``drop_last``, ``num_workers``, ...) whose batches are
    :func:`collate_graphs` of the items; ``use_ddp`` gives each rank its share of every epoch
    (``set_epoch`` reshuffles it)."""

    def __init__(self, dataset, collate_fn=None, use_ddp: bool = False, ddp_seed: int = 0, **kwargs):
        self.use_ddp = use_ddp
        if use_ddp:
            self.dist_sampler = DistributedSampler(dataset, shuffle=kwargs.get("shuffle", False),
                                                   drop_last=kwargs.get("drop_last", False), seed=ddp_seed)
            kwargs.update(shuffle=False, drop_last=False, sampler=self.dist_sampler)
        super().__init__(dataset=dataset, collate_fn=collate_fn or collate_graphs, **kwargs)

    def set_epoch(self, epoch: int) -> None:
        if not self.use_ddp:
            raise DGLError("set_epoch is only available when use_ddp is True.")
        self.dist_sampler.set_epoch(epoch)
