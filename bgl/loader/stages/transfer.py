"""The transfer stage: a batch onto the training device, as the trainer's objects (DGL blocks when asked).

Apart from :mod:`bgl.loader.stages.map` because it is the one map stage that never
leaves the trainer's process (it reads the live graph) and the one that turns the core's batch into a
frontend's objects: its own concerns (devices, codecs, typed ``input_nodes``, pair graphs) made ``map.py``
too long to read as one module.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from ...codec.decode import check_feat_dtype, decode_features
from ..seeds.typed_edges import typed_pair_graphs
from .minibatch import MiniBatch
from .protocol import Stage


@dataclass
class TransferStage(Stage):
    """Minibatch -> ``(input_nodes, output_nodes, blocks)`` on ``device``, in the trainer's process.

    ``frontend`` (:class:`bgl.loader.batch_frontend.BatchFrontend`, the edge's choice) converts the
    batch to the trainer's objects (``dgl.Block`` s); None keeps bgl's.  Remembers the latest cache counters
    seen, for :meth:`bgl.DataLoader.cache_stats`.

    ``graph`` is the user's DGLGraph when the loader samples one in place (this stage
    never leaves the trainer process, so it reads the live graph): ``node_feats`` (the
    ``prefetch_node_feats`` beyond the one the fetch stage and its cache serve) are
    gathered into ``blocks[0].srcdata``, ``edge_feats`` (``prefetch_edge_feats``) into
    every block's ``edata`` by the DGLGraph's own edge ids, and DGL blocks get every other
    ``ndata``/``edata`` field as lazy columns, as DGL's loader gives them.

    ``feat_codec`` (:class:`bgl.codec.RowCodec`): the rows under ``feat_keys`` move to ``device``
    encoded and are decoded there once per batch into ``feat_dtype`` (float32 by default).

    ``build_csr`` (``pipeline="thread"``, CPU): build here, off the trainer's thread, the CSR each block's backward reads.
    """

    device: str = "cpu"
    frontend: Any = None  # None: bgl's Blocks and pair graphs
    non_blocking: bool = False
    name: str = "transfer"
    last_cache_stats: Optional[dict] = field(default=None, repr=False)
    graph: Any = field(default=None, repr=False, compare=False)
    node_feats: tuple[str, ...] = ()
    edge_feats: tuple[str, ...] = ()
    type_names: tuple[str, str] = ("_N", "_E")
    schema: Any = None  # a typed graph's GraphSchema: ids per type and heterogeneous blocks
    feat_codec: Any = None
    feat_dtype: Optional[torch.dtype] = None
    feat_keys: tuple[str, ...] = ()
    build_csr: bool = False

    def __post_init__(self):
        check_feat_dtype(self.feat_dtype)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "graph": None}  # the live graph stays in the trainer

    def _attach_graph_fields(self, blocks) -> None:
        """Eager copies of the prefetched node/edge fields the fetch stage does not serve."""
        g = self.graph
        first = blocks[0]
        for key in self.node_feats:
            col = g.ndata[key]
            first.srcdata[key] = col[first.src_ids.to(col.device)].to(first.src_ids.device)
        for key in self.edge_feats:
            col = g.edata[key]
            for b in blocks:
                b.edata[key] = col[b.edge_ids.to(col.device)].to(b.edge_ids.device)

    def __call__(self, mb: MiniBatch):
        device = torch.device(self.device)
        blocks = [b.to(device, non_blocking=self.non_blocking) for b in mb.blocks]
        if mb.cache_stats is not None:
            self.last_cache_stats = mb.cache_stats
        if self.graph is not None:
            self._attach_graph_fields(blocks)
        input_data = mb.blocks[0].srcdata
        if self.feat_codec is not None or self.feat_dtype is not None:  # on the batch's device (bgl/codec)
            input_data = decode_features(blocks[0].srcdata, self.feat_keys, self.feat_codec, self.feat_dtype)
        if self.schema is not None:
            from ..typed import by_type, typed_input_nodes

            # DGL's output_nodes name the seeds' types only; input_nodes every type (their split by
            # type kept on the block for the frontend, which splits the same ids again otherwise).
            input_nodes = typed_input_nodes(blocks[0], self.schema, keep_split=self.frontend is not None)
            output_nodes = by_type(blocks[-1].dst_ids, self.schema, keep_empty=False)
            for b in blocks:
                b.schema = self.schema
            if self.frontend is not None:
                blocks = self._frontend_blocks(blocks)
            if mb.edges is not None:  # typed link prediction (seeds/typed_edges.py), or a caller's layout's payload
                pairs = (mb.edges,) if hasattr(mb.edges, "fields") else typed_pair_graphs(
                    mb.edges.to(device), self.schema, self.frontend, self.graph)
                return (input_nodes, *pairs, blocks)
            return input_nodes, output_nodes, blocks
        input_nodes = blocks[0].src_ids
        output_nodes = blocks[-1].dst_ids
        if self.frontend is not None:
            blocks = self._frontend_blocks(blocks)
        if mb.edges is not None:
            pairs = self._pair_graphs(mb.edges.to(device, non_blocking=self.non_blocking), input_data)
            return (input_nodes, *pairs, blocks)
        return input_nodes, output_nodes, blocks

    def _frontend_blocks(self, blocks) -> list:
        return self.frontend.blocks(blocks, self.schema, self.graph, self.type_names, with_csr=self.build_csr)

    def _pair_graphs(self, edges, input_data: dict) -> tuple:
        """``(pair_graph,)`` or ``(pair_graph, neg_pair_graph)``: ``dgl.DGLGraph`` s or bgl's
        :class:`~bgl.loader.seeds.edges.PairGraph` s over the batch's node seeds.

        The positive pair graph carries the input features of its nodes, as DGL's (an
        ``edge_subgraph`` keeps ``ndata``): they are the first rows of ``blocks[0]``'s input
        features, since a block's dst nodes lead its src nodes layer after layer (a view, no copy).
        """
        from ..seeds.edges import pair_graphs

        if hasattr(edges, "fields"):  # a caller's own per-batch layout (bgl/loader/seeds/temporal_edges.py)
            return (edges,)
        pairs = pair_graphs(edges)
        n = pairs[0].num_nodes()
        for key, value in input_data.items():
            pairs[0].ndata[key] = value[:n]
        if self.frontend is not None:  # the positive pairs carry the graph's fields, as DGL's
            return tuple(self.frontend.pair_graph(p, self.graph if i == 0 else None) for i, p in enumerate(pairs))
        return pairs
