"""DGL's data views and node/edge spaces: ``g.ndata``, ``g.srcdata``, ``g.nodes['user'].data``,
``g.edges['follows'].data``, ``g.nodes()``, ``g.edges(form=...)``.

A view reads and writes the graph's frames directly (no copies).  Over one type it maps a field
to a tensor; over several types a field maps to ``{type: tensor}`` and is written with such a
dict, as DGL's heterograph views.
"""
from __future__ import annotations

from collections.abc import MutableMapping

from bgl.dgl.base import DGLError, is_all


class DataView(MutableMapping):
    """Fields of one or more frames, keyed by type name (node types or canonical edge types)."""

    def __init__(self, frames: dict, ids=None):
        self._frames, self._ids = frames, ids

    def _single(self):
        return next(iter(self._frames.values())) if len(self._frames) == 1 else None

    def single_frame(self):
        """The one frame under a one-type view of whole frames (a loader fills it: ``in_place``)."""
        frame = self._single()
        if frame is None or not is_all(self._ids):
            raise DGLError("expected a view of one whole frame")
        return frame

    def __getitem__(self, key):
        frame = self._single()
        if frame is not None:
            value = frame[key]
            return value if is_all(self._ids) else value[self._ids]
        found = {t: f[key] for t, f in self._frames.items() if key in f}
        if not found:
            raise KeyError(key)
        return found

    def __setitem__(self, key, value):
        frame = self._single()
        if frame is not None and not isinstance(value, dict):
            frame.set_rows(key, self._ids, value)
            return
        if not isinstance(value, dict):
            raise DGLError("Current HeteroNodeDataView has multiple node types, please passing the node type "
                           "and the corresponding data through a dict.")
        for t, v in value.items():
            if t not in self._frames:
                raise DGLError(f"Type {t!r} does not exist in this view; types are {list(self._frames)}.")
            self._frames[t].set_rows(key, self._ids, v)

    def __delitem__(self, key):
        frame = self._single()
        if frame is not None:
            del frame[key]
            return
        for f in self._frames.values():
            if key in f:
                del f[key]

    def _keys(self):
        keys = []
        for f in self._frames.values():
            keys.extend(k for k in f if k not in keys)
        return keys

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def __repr__(self):
        return repr({k: self[k] for k in self._keys()})


class _Item:
    """``g.nodes[ntype]`` / ``g.edges[etype]``: a type (or id subset) with a ``.data`` view."""

    def __init__(self, frames: dict, ids=None):
        self.data = DataView(frames, ids)


class NodeSpace:
    """``g.nodes`` (also ``srcnodes`` / ``dstnodes``): call for node ids, index for ``.data``."""

    def __init__(self, graph, side: str):
        self._graph, self._side = graph, side

    def _frames(self):
        g = self._graph
        if self._side == "all":
            return g._node_frames()
        return g._src_frames if self._side == "src" else g._dst_frames

    def __call__(self, ntype=None):
        import torch

        g = self._graph
        count = {"src": g.num_src_nodes, "dst": g.num_dst_nodes, "all": g.num_nodes}[self._side](ntype)
        return torch.arange(count, dtype=g.idtype, device=g.device)

    def __getitem__(self, key):
        frames = self._frames()
        if isinstance(key, str):
            if key not in frames:
                raise DGLError(f'Node type "{key}" does not exist.')
            return _Item({key: frames[key]})
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str):
            return _Item({key[0]: frames[key[0]]}, key[1])
        if len(frames) != 1:
            raise DGLError("Node type name must be specified if there are more than one node types.")
        return _Item(frames, key)

    def __len__(self):
        return self._graph.num_nodes() if self._side == "all" else len(self())

    def __iter__(self):
        return iter(self())


class EdgeSpace:
    """``g.edges``: call for ``(u, v)`` / eids (``form``, ``order``), index for ``.data``."""

    def __init__(self, graph):
        self._graph = graph

    def __call__(self, form="uv", order="eid", etype=None):
        return self._graph.all_edges(form=form, order=order, etype=etype)

    def __getitem__(self, key):
        g = self._graph
        if isinstance(key, (str, tuple)) and (isinstance(key, str) or len(key) == 3):
            cet = g.to_canonical_etype(key)
            return _Item({cet: g._edge_frames[cet]})
        if len(g.canonical_etypes) != 1:
            raise DGLError("Edge type name must be specified if there are more than one edge types.")
        return _Item(dict(g._edge_frames), key)
