"""``dgl.optim``: DGL's sparse optimizers (``SparseAdam``, ``SparseAdagrad``) for :class:`bgl.dgl.nn.NodeEmbedding`.

As DGL's: ``step()`` gathers the rows every traced call read and their gradients, averages the gradients
of a row read more than once (DGL divides the summed gradient by the row's count), and updates those rows
and their state only (Adam: a step count per row, so each row's bias correction counts its own updates);
``zero_grad()`` marks the traces to be dropped at the next ``step`` (after it has used them), so a loop
that never calls it updates with every batch's traces again.  State per table: Adagrad one
``embedding_dim`` float row per node, Adam two and an int32 step.  ``state_dict`` / ``load_state_dict`` /
``param_groups`` in DGL's form, so its checkpoints load.  One process (see :mod:`bgl.dgl.nn.node_embedding`).
"""
from __future__ import annotations

import torch

from .base import DGLError


class SparseGradOptimizer:
    """What both sparse optimizers share: the traced rows and gradients of each table, and the state dict."""

    def __init__(self, params, lr: float):
        from .nn.node_embedding import NodeEmbedding

        if len(params) == 0:
            raise DGLError("Empty parameters")
        for emb in params:
            if not isinstance(emb, NodeEmbedding):
                raise DGLError("DGL SparseOptimizer only supports dgl.nn.NodeEmbedding")
        self._params, self._lr, self._clean_grad = params, lr, False

    def step(self) -> None:
        with torch.no_grad():
            taken = [(emb, *self._traced(emb)) for emb in self._params]
            if self._clean_grad:
                for emb in self._params:
                    emb.reset_trace()
                self._clean_grad = False
            for emb, idx, grad in taken:
                self.update(idx, grad, emb)

    @staticmethod
    def _traced(emb):
        if not emb.trace:
            return (torch.zeros(0, dtype=torch.long, device=emb.weight.device),
                    torch.zeros((0, emb.embedding_dim), dtype=torch.float32, device=emb.weight.device))
        ids = torch.cat([i for i, _ in emb.trace])
        grads = [rows.grad if rows.grad is not None else torch.zeros_like(rows) for _, rows in emb.trace]
        return ids, torch.cat(grads)

    def zero_grad(self) -> None:
        self._clean_grad = True

    def update(self, idx, grad, emb) -> None:
        raise NotImplementedError

    @staticmethod
    def _averaged(idx, grad):
        """(distinct rows, each one's gradient averaged over its reads): DGL's reduction."""
        rows, inverse, count = torch.unique(idx, return_inverse=True, return_counts=True)
        values = torch.zeros((rows.shape[0], grad.shape[1]), device=grad.device)
        values.index_add_(0, inverse, grad)
        return rows, values / count.unsqueeze(1)

    def state_dict(self, **kwargs) -> dict:
        return {"state": {emb.name: emb._all_get_optm_state() for emb in self._params},
                "param_groups": self.param_groups}

    def load_state_dict(self, state_dict: dict, **kwargs) -> None:
        for emb in self._params:
            emb._all_set_optm_state(state_dict["state"][emb.name])
        self._set_param_groups(state_dict["param_groups"])


class SparseAdagrad(SparseGradOptimizer):
    """Adagrad over the rows a batch read: ``w -= lr * g / sqrt(sum of g^2 + eps)``."""

    def __init__(self, params, lr: float, eps: float = 1e-10):
        super().__init__(params, lr)
        self._eps = eps
        for emb in params:
            emb.set_optm_state((torch.zeros(emb.weight.shape, dtype=torch.float32, device=emb.weight.device),))

    def update(self, idx, grad, emb) -> None:
        rows, values = self._averaged(idx, grad)
        (state,) = emb.optm_state
        where = rows.to(state.device)
        summed = state[where].to(grad.device) + values * values
        state[where] = summed.to(state.device)
        emb.weight[where] -= (self._lr * values / summed.add_(self._eps).sqrt_()).to(state.device)

    @property
    def param_groups(self) -> list:
        return [{"lr": self._lr, "eps": self._eps}]

    def _set_param_groups(self, groups) -> None:
        self._lr, self._eps = groups[0]["lr"], groups[0]["eps"]


class SparseAdam(SparseGradOptimizer):
    """Adam over the rows a batch read, each row's bias correction by its own update count (DGL's ``dtype``
    for the two moment tables; ``use_uva`` is a GPU option and changes nothing here)."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-08, use_uva=None,
                 dtype=torch.float32):
        super().__init__(params, lr)
        if dtype not in (torch.float16, torch.float32):
            raise DGLError(f"Unsupported dtype {dtype}. Valid choices are th.float32 and th.float32")
        self._beta1, self._beta2, self._eps, self._dtype = betas[0], betas[1], eps, dtype
        for emb in params:
            shape, device = emb.weight.shape, emb.weight.device
            emb.set_optm_state((torch.zeros((shape[0],), dtype=torch.int32, device=device),
                                torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device)))

    def update(self, idx, grad, emb) -> None:
        steps, mem, power = emb.optm_state
        rows, values = self._averaged(idx, grad)
        where = rows.to(steps.device)
        steps[where] += 1
        step = steps[where].to(grad.device)
        new_mem = self._beta1 * mem[where].to(grad.device, grad.dtype) + (1.0 - self._beta1) * values
        new_power = self._beta2 * power[where].to(grad.device, grad.dtype) + (1.0 - self._beta2) * values * values
        mem[where] = new_mem.to(mem.device, self._dtype)
        power[where] = new_power.to(power.device, self._dtype)
        mem_corr = new_mem / (1.0 - torch.pow(torch.tensor(self._beta1, device=grad.device), step)).unsqueeze(1)
        power_corr = new_power / (1.0 - torch.pow(torch.tensor(self._beta2, device=grad.device), step)).unsqueeze(1)
        emb.weight[where] -= (self._lr * mem_corr / (torch.sqrt(power_corr) + self._eps)).to(emb.weight.device)

    @property
    def param_groups(self) -> list:
        return [{"lr": self._lr, "betas": (self._beta1, self._beta2), "eps": self._eps}]

    def _set_param_groups(self, groups) -> None:
        self._lr = groups[0]["lr"]
        self._beta1, self._beta2 = groups[0]["betas"]
        self._eps = groups[0]["eps"]
