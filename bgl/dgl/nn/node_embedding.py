"""``dgl.nn.NodeEmbedding``: a learnable embedding table updated row by row by ``dgl.optim``'s sparse optimizers.

What DGL's big-graph scripts use for node types without features (the R-GCN on ogbn-mag, embeddings of
users and items): ``emb(node_ids)`` returns the rows as a fresh leaf that records its gradient, and the
call is kept in ``emb.trace`` (while autograd records) so that ``dgl.optim.SparseAdam`` /
``SparseAdagrad`` (:mod:`bgl.dgl.optim`) update only the rows a batch read.  Not an ``nn.Module``: its
table is not a parameter of the model, as DGL's is not.

One process's table (``num_embeddings x embedding_dim`` float32, zeros then ``init_func``); DGL's
multi-process sharing (a table in shared memory named ``name`` across DDP ranks) and multi-GPU
``partition`` are refused in one line.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

from ..base import not_built


class NodeEmbedding:
    """``num_embeddings`` rows of ``embedding_dim`` floats (module doc); ``name`` keys its optimizer state."""

    def __init__(self, num_embeddings: int, embedding_dim: int, name: str, init_func: Optional[Callable] = None,
                 device=None, partition=None):
        if partition is not None:
            raise not_built("NodeEmbedding(partition=...) (embeddings split over GPUs)", "leave partition unset")
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            raise not_built("NodeEmbedding shared by DDP ranks", "give each rank torch.nn.Embedding(sparse=True) "
                            "under DistributedDataParallel")
        table = torch.zeros((num_embeddings, embedding_dim), dtype=torch.float32,
                            device=torch.device(device) if device is not None else torch.device("cpu"))
        if init_func is not None:
            table = init_func(table)
        self._tensor = table
        self._num_embeddings, self._embedding_dim, self._name = int(num_embeddings), int(embedding_dim), name
        self._optm_state = None
        self._trace: list = []

    def __call__(self, node_ids, device=torch.device("cpu")) -> torch.Tensor:
        """Rows ``node_ids`` on ``device``; while autograd records, a leaf whose gradient the optimizer reads."""
        emb = self._tensor[node_ids].to(device)
        if torch.is_grad_enabled():
            emb.requires_grad_()
            self._trace.append((node_ids.to(device), emb))
        return emb

    @property
    def name(self) -> str:
        return self._name

    @property
    def num_embeddings(self) -> int:
        return self._num_embeddings

    @property
    def embedding_dim(self) -> int:
        return self._embedding_dim

    @property
    def weight(self) -> torch.Tensor:
        return self._tensor

    @property
    def trace(self) -> list:
        return self._trace

    def reset_trace(self) -> None:
        self._trace = []

    def set_optm_state(self, state) -> None:
        self._optm_state = state

    @property
    def optm_state(self):
        return self._optm_state

    @property
    def rank(self) -> int:
        return -1  # one process, as DGL's without torch.distributed

    @property
    def world_size(self) -> int:
        return 0

    def all_set_embedding(self, values: torch.Tensor) -> None:
        self._tensor[:] = values.to(self._tensor.device)[:]

    def all_get_embedding(self) -> torch.Tensor:
        return self._tensor

    def _all_get_optm_state(self):
        return tuple(s.clone() for s in self._optm_state) if self._optm_state is not None else None

    def _all_set_optm_state(self, states) -> None:
        for mine, theirs in zip(self._optm_state, states):
            mine[:] = theirs.to(mine.device)[:]
