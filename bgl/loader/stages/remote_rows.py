"""Keep the feature cache for the rows a server has to send: co-located rows skip it.

With co-located reads (:mod:`bgl.sampler.colocated`) a trainer reads its own
host's parts from the memory-mapped part files: a gather from the page
cache, no socket.  Caching those rows again saves nothing and costs the
cache's bookkeeping on every one of them, and with proximity order most of a
batch's input rows are in the trainer's own part (its seeds are; profiled on
Slashdot, the lookahead cache's plan and admit took ~15 % of a trainer's CPU).
So the fetch stage hands the cache only the rows of remote parts; the whole
cache capacity then holds rows that would otherwise cross the network, as in
BGL, whose cache holds what the trainer's own machine does not.

Per batch this costs one owner lookup (a ``searchsorted`` over the part
bounds) and a boolean mask of the batch's input ids, kept from the cache
lookup until the rows are merged.
"""
from __future__ import annotations

import numpy as np
import torch


class RemoteRowsOnly:
    """Splits each batch's input rows into co-located ones (read here) and remote ones (cached).

    ``client`` is a :class:`~bgl.sampler.client.SamplingClient` reading some,
    but not all, of its parts locally (:meth:`applies`).
    """

    def __init__(self, client):
        self.client = client
        self._local: dict[int, np.ndarray] = {}  # id(batch) -> bool mask over its input ids

    @staticmethod
    def applies(sampler) -> bool:
        """True for a client that reads some but not all parts on this host."""
        local = getattr(sampler, "local_servers", None)
        return bool(local) and len(local) < len(sampler.addresses)

    def cache_ids(self, mb) -> torch.Tensor:
        """The input ids of ``mb`` that a server sends (what the cache sees), in input order."""
        src = mb.blocks[0].src_ids
        local = self.client.local_mask(src.numpy())
        self._local[id(mb)] = local
        return src[torch.from_numpy(~local)]

    def num_seeds(self, mb) -> int:
        """How many of :meth:`cache_ids` are seeds (the seeds lead the input ids)."""
        return int(np.count_nonzero(~self._local[id(mb)][:mb.blocks[-1].num_dst]))

    def merge(self, mb, remote_rows: torch.Tensor) -> torch.Tensor:
        """All input rows of ``mb``: ``remote_rows`` (for :meth:`cache_ids`) and the co-located
        rows read now, in input order, on ``remote_rows``' device."""
        local = self._local.pop(id(mb))
        src = mb.blocks[0].src_ids
        local_pos, remote_pos = np.flatnonzero(local), np.flatnonzero(~local)
        if remote_rows.device.type == "cpu" and remote_rows.dtype != torch.bfloat16:
            # each source writes its rows into the batch, one copy per row (torch's index_copy_
            # cost 0.4 ms per 5k rows here, NumPy's assignment 0.25, the part-file read 0.6 ms per 10k)
            out = np.empty((src.numel(), *remote_rows.shape[1:]), remote_rows.numpy().dtype)
            self.client.read_local_features_into(src.numpy()[local_pos], out, local_pos)
            out[remote_pos] = remote_rows.numpy()
            return torch.from_numpy(out)
        device = remote_rows.device
        out = torch.empty((src.numel(), *remote_rows.shape[1:]), dtype=remote_rows.dtype, device=device)
        if local_pos.size:
            rows = self.client.fetch_features(src.numpy()[local_pos])
            out.index_copy_(0, torch.from_numpy(local_pos).to(device), rows.to(device))
        out.index_copy_(0, torch.from_numpy(remote_pos).to(device), remote_rows)
        return out

    def forget(self) -> None:
        """Drop the masks of batches that were looked up but never merged (an abandoned stream)."""
        self._local.clear()
