"""``dgl.nn.HeteroGraphConv``: one module per relation, results combined per destination type.

``mods`` is keyed like DGL's (relation name or canonical (src, rel, dst) triple); the
ModuleDict holds ``str(key)``, so parameter names (``mods.<rel>.weight``) and checkpoints
equal DGL's.
"""
from __future__ import annotations

from typing import Callable, Union

import torch
from torch import nn

from ..base import DGLError

CROSS_TYPE_AGGREGATES = ("sum", "max", "min", "mean", "stack")


def _stacked(reduce: Callable) -> Callable:
    def combine(outputs, dsttype):
        return reduce(torch.stack(outputs, dim=0), dim=0)
    return combine


def _stack(outputs, dsttype):
    return torch.stack(outputs, dim=1)


def cross_type_aggregate(name: str) -> Callable:
    """The combiner ``f(list of [num_dst, ...] tensors, dsttype)`` DGL names ``name``."""
    if name == "stack":
        return _stack
    reducers = {"sum": torch.sum, "mean": torch.mean,
                "max": lambda x, dim: torch.max(x, dim=dim)[0],
                "min": lambda x, dim: torch.min(x, dim=dim)[0]}
    if name not in reducers:
        raise DGLError('Invalid cross type aggregator. Must be one of "sum", "max", "min", "mean" '
                       f'or "stack". But got "{name}"')
    return _stacked(reducers[name])


class HeteroGraphConv(nn.Module):
    """Run ``mods[rel](g[rel], (h_src, h_dst), *mod_args[rel], **mod_kwargs[rel])`` per relation of
    ``g`` and combine the outputs that reach one destination type with ``aggregate``.

    Parameters
    ----------
    mods : {relation name or (src, rel, dst): module}; submodules that refuse zero-in-degree
        nodes are told to accept them (one relation rarely reaches every node), as DGL does
    aggregate : "sum" | "max" | "min" | "mean" | "stack", or a callable ``f(tensors, dsttype)``
    """

    def __init__(self, mods: dict, aggregate: Union[str, Callable] = "sum"):
        super().__init__()
        self.mod_dict = mods
        self.mods = nn.ModuleDict({str(key): module for key, module in mods.items()})
        for module in self.mods.values():
            allow = getattr(module, "set_allow_zero_in_degree", None)
            if callable(allow):
                allow(True)
        self.agg_fn = cross_type_aggregate(aggregate) if isinstance(aggregate, str) else aggregate

    def _get_module(self, etype):
        """The module of a canonical relation, else of its relation name (DGL's lookup order)."""
        module = self.mod_dict.get(etype)
        if module is not None:
            return module
        if isinstance(etype, tuple) and etype[1] in self.mod_dict:
            return self.mod_dict[etype[1]]
        raise KeyError(f"Cannot find module with edge type {etype}")

    def forward(self, g, inputs, mod_args: dict = None, mod_kwargs: dict = None) -> dict:
        """
        Parameters
        ----------
        g : bgl.dgl heterograph or typed block
        inputs : {ntype: [num_nodes_t, ...]}, or a ({src ntype: ...}, {dst ntype: ...}) pair;
            on a block one dict is read as src rows whose first ``num_dst_nodes(t)`` are the dst rows
        mod_args, mod_kwargs : {relation name: extra positional / keyword arguments}

        Returns
        -------
        {dst ntype: combined output} for the types some relation reached
        """
        mod_args = mod_args or {}
        mod_kwargs = mod_kwargs or {}
        outputs = {ntype: [] for ntype in g.dsttypes}
        paired = isinstance(inputs, tuple) or g.is_block
        if paired:
            if isinstance(inputs, tuple):
                src_inputs, dst_inputs = inputs
            else:
                src_inputs = inputs
                dst_inputs = {nt: value[: g.num_dst_nodes(nt)] for nt, value in inputs.items()}
        else:
            src_inputs = dst_inputs = inputs
        for stype, etype, dtype in g.canonical_etypes:
            # DGL skips a relation whose inputs are missing, except a graph's dst type (KeyError)
            if stype not in src_inputs or (paired and dtype not in dst_inputs):
                continue
            module = self._get_module((stype, etype, dtype))
            outputs[dtype].append(module(g[stype, etype, dtype], (src_inputs[stype], dst_inputs[dtype]),
                                         *mod_args.get(etype, ()), **mod_kwargs.get(etype, {})))
        return {ntype: self.agg_fn(found, ntype) for ntype, found in outputs.items() if found}
