"""What the loader does differently for a typed (heterogeneous) graph: seeds, fanouts, fetch, outputs.

Everything else is the homogeneous pipeline: the order stage cuts global seed ids
into batches, the sample stage samples over global ids (per relation, see
:mod:`bgl.sampler.typed.sampling`), blocks stay bgl Blocks with ``etypes``; only the
edges of the pipeline change shape:

* seeds: DGL's ``{ntype: type-local ids}`` become global ids (type offset added);
* fanouts: each layer an int (every relation) or a dict naming every relation,
  as DGL's heterogeneous ``NeighborSampler``, resolved to int64 [R];
* fetch: each node type's rows from its own feature array (own width and dtype), through
  that type's own cache when one is asked for (:mod:`bgl.cache.typed`), labels of the
  seeds' types, as ``srcdata[key] = {ntype: rows}``;
* outputs: ``input_nodes`` / ``output_nodes`` as ``{ntype: type-local ids}`` and
  heterogeneous DGL blocks (:func:`bgl.dgl.real_dgl.blocks.to_dgl_hetero_block`);
* edge features (``prefetch_edge_feats``, a list or DGL's ``{etype: [names]}``, whose names apply
  to every relation that has them): a store's or servers' rows come with the sample, each block's
  ``edata[name]`` aligned with its ``etypes`` and split per relation into DGL's
  ``{canonical etype: rows}``; a heterogeneous DGLGraph's are read in place by each relation's edge ids.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import torch

from ..sampler.typed.sampling import relation_fanouts
from .graph_info import is_dgl_object


def check_typed_options(info, sampler, cache, lazy_rows: bool = False):
    """The schema of a typed loader, after refusing (with what to do) what typed graphs lack so far.

    ``sampler`` is the loader's :class:`~bgl.loader.sampler_options.SamplerOptions`: the node types
    its ``prefetch_*`` dicts name must be the graph's; several feature names are served where a
    DGLGraph's rows are read lazily (``lazy_rows``: DGL's own columns, every field), a store holds
    one feature array per type.
    """
    if info.schema is None:
        raise TypeError("dict indices ({ntype: ids}) need a graph with node types; this graph has one type: "
                        "pass one id tensor")
    from ..cache.typed import TypedFeatureCache

    if cache is not None and not isinstance(cache, (str, bool, float, np.floating, TypedFeatureCache)):
        raise TypeError(f"a typed graph's cache object must be a bgl.cache.typed.TypedFeatureCache (one cache "
                        f"per node type), got {type(cache).__name__}; or pass a policy name")
    unknown = [t for t in sampler.named_types if t not in info.schema.ntypes]
    if unknown:
        raise ValueError(f"prefetch_node_feats / prefetch_labels name node type {unknown[0]!r}, which the graph "
                         f"does not have; it has {list(info.schema.ntypes)}")
    if len(dict.fromkeys(sampler.feat_keys)) > 1 and not lazy_rows:
        raise ValueError(f"prefetch_node_feats names {list(dict.fromkeys(sampler.feat_keys))}: a typed store serves "
                         "one node feature array per type (under any one name); pass one name, or pass the "
                         "DGLGraph itself with DGL blocks and no cache to read several")
    return info.schema


def typed_seed_ids(indices, schema) -> np.ndarray:
    """Global ids of DGL-style ``{ntype: type-local ids}`` seeds (types in the dict's order).

    Raises ValueError naming the type and the id for an unknown type or an id outside
    that type's range, TypeError for non-integer ids.
    """
    from .arguments import check_indices

    if not isinstance(indices, Mapping):
        if len(schema.node_types) != 1:
            raise TypeError(f"a graph with node types {schema.ntypes} takes seeds as {{ntype: ids}}")
        indices = {schema.ntypes[0]: indices}
    parts = []
    for nt, ids in indices.items():
        t = schema.node_type(nt)  # ValueError naming an unknown type
        try:
            local = check_indices(ids, t.count)
        except ValueError as e:
            raise ValueError(f"seeds of node type {nt!r}: {e}") from None
        parts.append(local + t.offset)
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def typed_fanouts(fanouts: Sequence[Any], schema) -> tuple[np.ndarray, ...]:
    """Per-layer int64 [R] relation fanouts (DGL order: the last applies to the seeds)."""
    if isinstance(fanouts, (int, np.integer)) or not len(fanouts):
        raise ValueError(f"fanouts must be a non-empty list of ints or dicts, got {fanouts!r}")
    return tuple(relation_fanouts(layer, schema.canonical_etypes) for layer in fanouts)


@dataclass(frozen=True)
class TypeSplit:
    """Global ids split by node type: :func:`~bgl.loader._typed_block_kernels.type_positions`' arrays.

    ``src_type``, ``local`` : int64 [n] each id's type and position among its type's ids; ``num_src``,
    ``num_dst`` : int64 [T] each type's count of ids and of the first ``num_dst`` ids (a block's dst
    nodes); ``type_ids`` : int64 [n] type-local ids, type after type, each type's in the order given.
    ``of`` : the tensor of ids it split, where a block keeps it (``Block.type_split``): a reader reuses
    the split only for that very tensor, never for ids written to the block after it.
    """

    src_type: np.ndarray
    local: np.ndarray
    num_src: np.ndarray
    num_dst: np.ndarray
    type_ids: np.ndarray
    of: Any = field(default=None, repr=False, compare=False)

    def by_type(self, ntypes: Sequence[str]) -> dict[str, torch.Tensor]:
        """``{ntype: type-local ids}``, views of one int64 array (:attr:`type_ids`)."""
        out, lo = {}, 0
        for nt, n in zip(ntypes, self.num_src.tolist()):
            out[nt] = torch.from_numpy(self.type_ids[lo:lo + n])
            lo += n
        return out


def split_by_type(gids: np.ndarray, schema, num_dst: int = 0) -> TypeSplit:
    """:class:`TypeSplit` of global ``gids`` (CPU, one numba pass: per batch this is a few thousand ids,
    where torch's threaded ops and a NumPy sort cost more in dispatch than in work; ~10^5 on the power-law
    recommendation graph).  ValueError naming an id outside the schema's ids."""
    from ._typed_block_kernels import type_positions

    *arrays, bad = type_positions(gids if gids.dtype == np.int64 else gids.astype(np.int64), num_dst, schema.offsets)
    if bad >= 0:
        raise ValueError(f"node id {int(gids[bad])} is outside the graph's global ids [0, {schema.num_nodes})")
    return TypeSplit(*arrays)


def by_type(gids: torch.Tensor, schema, keep_empty: bool = True) -> dict[str, torch.Tensor]:
    """``{ntype: type-local ids}`` of global ``gids``, each type's in the order given
    (types with no id left out unless ``keep_empty``).  On the CPU :func:`split_by_type` (the types'
    tensors are views of one int64 [len(gids)] array).  ValueError naming an id outside the schema's ids."""
    if gids.device.type != "cpu":
        offsets = torch.from_numpy(schema.offsets).to(gids.device)
        types = torch.searchsorted(offsets, gids, right=True) - 1
        out = {nt: gids[types == t] - offsets[t] for t, nt in enumerate(schema.ntypes)}
    else:
        out = split_by_type(gids.numpy(), schema).by_type(schema.ntypes)
    return out if keep_empty else {nt: ids for nt, ids in out.items() if ids.numel()}


def typed_input_nodes(block, schema, keep_split: bool) -> dict[str, torch.Tensor]:
    """A typed batch's ``input_nodes``: :func:`by_type` of ``block``'s src ids (its first block).

    On the CPU with ``keep_split``, ``block.type_split`` keeps the split for the frontend's block, which
    splits the same ids by type (:func:`bgl.dgl.real_dgl.blocks.to_dgl_hetero_block`): one pass over the
    batch's input ids instead of two (~0.8 ms a power-law recommendation batch of ~118k input ids), and
    ``input_nodes`` shares its array with the block's ``NID`` ids, as DGL's does (its ``input_nodes`` are
    ``blocks[0].srcdata[NID]``).  The caller keeps it only where the block is converted next: a block
    the user keeps holds 16 B per src node more with it.
    """
    if block.src_ids.device.type != "cpu":
        return by_type(block.src_ids, schema)
    split = split_by_type(block.src_ids.numpy(), schema, block.num_dst)
    if keep_split:
        block.type_split = dataclasses.replace(split, of=block.src_ids)
    return split.by_type(schema.ntypes)


def fetch_typed(sampler, blocks, feat_keys: Sequence[str], label_keys: Sequence[str], schema,
                rows: Optional[dict] = None) -> None:
    """Attach each type's input rows to ``blocks[0].srcdata`` and the seeds' labels to
    ``blocks[-1].dstdata``, as ``{key: {ntype: tensor}}`` (types without data are left out).
    ``rows``: the input rows already fetched (by a typed cache, in :func:`by_type` order)."""
    first, last = blocks[0], blocks[-1]
    if feat_keys:
        if rows is None:
            rows = {nt: sampler.fetch_type_features(nt, ids) for nt, ids in by_type(first.src_ids, schema).items()
                    if schema.node_type(nt).feat_dim > 0}
        for key in feat_keys:
            first.srcdata[key] = rows
    if label_keys:
        labels = {nt: sampler.fetch_type_labels(nt, ids) for nt, ids in by_type(last.dst_ids, schema).items()
                  if schema.node_type(nt).has_label}
        for key in label_keys:
            last.dstdata[key] = labels


def reads_in_place(info, sampler, want_dgl: bool, cache) -> tuple[bool, bool]:
    """``(lazy_rows, live_graph)``: :func:`reads_rows_lazily`, and whether the transfer stage reads the
    heterogeneous DGLGraph itself, there or for DGL blocks with ``prefetch_edge_feats``: DGL's blocks
    carry each relation's fields read by its edge ids, on the relations that have them
    (:func:`bgl.dgl.real_dgl.blocks.to_dgl_hetero_block`), instead of rows gathered with the sample."""
    lazy = reads_rows_lazily(info, sampler, want_dgl, cache)
    return lazy, lazy or (info.from_dgl and want_dgl and bool(sampler.edge_keys))


def reads_rows_lazily(info, sampler, want_dgl: bool, cache) -> bool:
    """True where a typed DGLGraph's input rows are left to DGL's lazy columns, as DGL's own loader
    leaves them: a heterogeneous DGLGraph read in place, DGL blocks, no cache, and a DGL sampler
    without ``prefetch_node_feats``, or any sampler naming several feature fields (a lazy column
    serves every field of every type, as DGL's blocks do).  The model's first read gathers them,
    after the loop has dropped the previous batch, instead of the loader gathering the next batch's
    rows while the loop still holds the last one (45 MB more at the peak on CiteSeer's paper-word graph).
    """
    node_sampler = sampler.node_sampler
    prefetch = getattr(node_sampler, "prefetch_node_feats", None)
    several = len(dict.fromkeys(sampler.feat_keys)) > 1
    return (info.from_dgl and want_dgl and cache is None and info.feat_codec is None
            and ((is_dgl_object(node_sampler) and not prefetch) or several))
