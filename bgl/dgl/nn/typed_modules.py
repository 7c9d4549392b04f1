"""Per-type dense modules of DGL's heterogeneous scripts: ``HeteroLinear`` (a linear map per node
type into one width) and ``HeteroEmbedding`` (a learned table per node type).

No graph op: a dict in, a dict out, one ``nn.Linear`` / ``nn.Embedding`` per type, kept in an
``nn.ModuleDict`` under the type's name as a string, so DGL's state dicts (``linears.<type>.weight``,
``embeds.<type>.weight``) load unchanged.  Cost: the parameters only (``out * (in + 1)`` floats per
type for the linear map, ``rows * dim`` for the table).
"""
from __future__ import annotations

from torch import nn


class HeteroLinear(nn.Module):
    """``{type: feat [N_t, in_size[t]]}`` -> ``{type: [N_t, out_size]}``, one linear map per type (DGL's
    ``HeteroLinear``); a type absent from the input is absent from the output."""

    def __init__(self, in_size: dict, out_size: int, bias: bool = True):
        super().__init__()
        self.linears = nn.ModuleDict({str(t): nn.Linear(size, out_size, bias=bias) for t, size in in_size.items()})

    def forward(self, feat: dict) -> dict:
        return {t: self.linears[str(t)](x) for t, x in feat.items()}


class HeteroEmbedding(nn.Module):
    """``{type: ids}`` -> ``{type: [len(ids), embedding_dim]}`` from one table per type (DGL's
    ``HeteroEmbedding``; ``weight`` is ``{type: table}`` under the types as given, e.g. canonical triples)."""

    def __init__(self, num_embeddings: dict, embedding_dim: int):
        super().__init__()
        self.embeds = nn.ModuleDict({str(t): nn.Embedding(rows, embedding_dim) for t, rows in num_embeddings.items()})
        self.raw_keys = {str(t): t for t in num_embeddings}

    @property
    def weight(self) -> dict:
        return {self.raw_keys[name]: table.weight for name, table in self.embeds.items()}

    def reset_parameters(self) -> None:
        """Every table drawn again (Xavier uniform, as DGL's ``reset_parameters``)."""
        for table in self.embeds.values():
            nn.init.xavier_uniform_(table.weight)

    def forward(self, input_ids: dict) -> dict:
        return {t: self.embeds[str(t)](ids) for t, ids in input_ids.items()}
