"""Building graphs: DGL's ``graph``, ``heterograph``, ``create_block``, and bgl's own blocks and
pair graphs as ``bgl.dgl`` graphs (their index tensors shared, not copied).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from bgl.dgl.base import DEFAULT_ETYPE, DEFAULT_NTYPE, EID, NID, DGLError, not_built
from bgl.dgl.frames import Frame
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.relation import Compressed, Relation


def _id_tensor(data, idtype, device, what: str) -> torch.Tensor:
    if isinstance(data, torch.Tensor):
        t = data
    elif isinstance(data, np.ndarray):
        t = torch.from_numpy(data)
    else:
        t = torch.as_tensor(list(data), dtype=torch.int64)
    if t.dim() != 1:
        raise DGLError(f"{what} ids must be a 1-D sequence, got shape {tuple(t.shape)}.")
    if t.numel() and (t.dtype.is_floating_point or t.dtype == torch.bool):
        raise DGLError(f"{what} ids must be integers, got dtype {t.dtype}.")
    return t.to(device=device, dtype=idtype) if (idtype is not None or device is not None) else t


def _pair(data, idtype, device, cet) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) of one relation's input; DGLError for anything but a (src, dst) pair of id lists."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
        if data[0] != "coo":
            raise not_built(f"graph data in {data[0]!r} format", "pass (src, dst) id tensors (COO)")
        data = data[1]
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise DGLError(f"Graph data of relation {cet} must be a (src, dst) pair of node id tensors, "
                       f"got {type(data).__name__}.")
    src = _id_tensor(data[0], idtype, device, "source node")
    dst = _id_tensor(data[1], idtype, device, "destination node")
    if src.shape[0] != dst.shape[0]:
        raise DGLError(f"Input arrays should have the same length: {src.shape[0]} source and "
                       f"{dst.shape[0]} destination ids for relation {cet}.")
    for ids, what in ((src, "source"), (dst, "destination")):
        if ids.numel() and int(ids.min()) < 0:
            raise DGLError(f"All {what} node IDs must be non-negative, got {int(ids.min())}.")
    return src, dst


def _count(ids: torch.Tensor) -> int:
    return int(ids.max()) + 1 if ids.numel() else 0


def _check_counts(counts: dict, needed: dict, arg: str) -> None:
    for nt, need in needed.items():
        if nt in counts and counts[nt] < need:
            raise DGLError(f"The {arg} argument must be larger than the max ID in the data, "
                           f"but got {counts[nt]} and {need - 1}.")


def _idtype_of(data_pairs, idtype):
    if idtype is not None:
        if idtype not in (torch.int32, torch.int64):
            raise DGLError(f"idtype must be torch.int32 or torch.int64, got {idtype}.")
        return idtype
    for pair in data_pairs:
        if isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], torch.Tensor) \
                and pair[0].dtype in (torch.int32, torch.int64):
            return pair[0].dtype
    return torch.int64


def graph(data, num_nodes: Optional[int] = None, idtype=None, device=None, row_sorted=False, col_sorted=False):
    """A homogeneous graph from ``(src, dst)`` node ids (DGL's ``dgl.graph``).

    Parameters
    ----------
    data : (src, dst) int tensors / arrays / lists of equal length [E]
    num_nodes : node count (default: max id + 1); DGLError when smaller than an id needs
    idtype : torch.int32 / torch.int64 (default: the tensors' own, else int64); device : where

    Returns
    -------
    DGLGraph with one node type ``_N`` and one edge type ``_E``
    """
    cet = (DEFAULT_NTYPE, DEFAULT_ETYPE, DEFAULT_NTYPE)
    idtype = _idtype_of([data], idtype)
    src, dst = _pair(data, idtype, device, cet)
    need = max(_count(src), _count(dst))
    n = need if num_nodes is None else int(num_nodes)
    _check_counts({DEFAULT_NTYPE: n}, {DEFAULT_NTYPE: need}, "num_nodes")
    return DGLGraph({cet: Relation(n, n, src, dst)}, {DEFAULT_NTYPE: n}, idtype=idtype)


def heterograph(data_dict: dict, num_nodes_dict: Optional[dict] = None, idtype=None, device=None):
    """A graph of several node and edge types (DGL's ``dgl.heterograph``).

    Parameters
    ----------
    data_dict : {(src type, relation, dst type): (src, dst)}
    num_nodes_dict : optional {node type: count} (default: max id + 1 per type over its relations)
    """
    idtype = _idtype_of(list(data_dict.values()), idtype)
    pairs, need = {}, {}
    for cet, data in data_dict.items():
        if not (isinstance(cet, tuple) and len(cet) == 3):
            raise DGLError(f"Edge types must be (src type, relation, dst type) triples, got {cet!r}.")
        src, dst = _pair(data, idtype, device, cet)
        pairs[cet] = (src, dst)
        need[cet[0]] = max(need.get(cet[0], 0), _count(src))
        need[cet[2]] = max(need.get(cet[2], 0), _count(dst))
    counts = dict(need)
    if num_nodes_dict is not None:
        _check_counts(num_nodes_dict, need, "num_nodes")
        counts.update({nt: int(c) for nt, c in num_nodes_dict.items()})
    rels = {cet: Relation(counts[cet[0]], counts[cet[2]], s, d) for cet, (s, d) in pairs.items()}
    return DGLGraph(rels, counts, idtype=idtype)


def create_block(data_dict, num_src_nodes=None, num_dst_nodes=None, idtype=None, device=None):
    """A block (DGL's ``dgl.create_block``): ``(src, dst)`` for one relation or a
    ``{canonical etype: (src, dst)}`` dict, with src / dst node counts per type (int or dict)."""
    if not isinstance(data_dict, dict):
        data_dict = {(DEFAULT_NTYPE, DEFAULT_ETYPE, DEFAULT_NTYPE): data_dict}
        num_src_nodes = None if num_src_nodes is None else {DEFAULT_NTYPE: num_src_nodes}
        num_dst_nodes = None if num_dst_nodes is None else {DEFAULT_NTYPE: num_dst_nodes}
    idtype = _idtype_of(list(data_dict.values()), idtype)
    pairs, need_src, need_dst = {}, {}, {}
    for cet, data in data_dict.items():
        src, dst = _pair(data, idtype, device, cet)
        pairs[cet] = (src, dst)
        need_src[cet[0]] = max(need_src.get(cet[0], 0), _count(src))
        need_dst[cet[2]] = max(need_dst.get(cet[2], 0), _count(dst))
    num_src = dict(need_src)
    num_dst = dict(need_dst)
    if num_src_nodes is not None:
        _check_counts(num_src_nodes, need_src, "num_src_nodes")
        num_src.update({nt: int(c) for nt, c in num_src_nodes.items()})
    if num_dst_nodes is not None:
        _check_counts(num_dst_nodes, need_dst, "num_dst_nodes")
        num_dst.update({nt: int(c) for nt, c in num_dst_nodes.items()})
    for nt in set(num_src) | set(num_dst):  # DGL gives every node type both sides
        num_src.setdefault(nt, 0)
        num_dst.setdefault(nt, 0)
    rels = {cet: Relation(num_src[cet[0]], num_dst[cet[2]], s, d) for cet, (s, d) in pairs.items()}
    return DGLGraph(rels, num_src, num_dst, idtype=idtype)


def block_from_bgl(block, num_src: Optional[int] = None) -> DGLGraph:
    """A ``bgl.dgl`` block of a core :class:`bgl.blocks.Block` (what ``bgl.DataLoader`` yields)
    or of one relation of a typed block (:class:`bgl.blocks.RelationBlock`).

    Untyped: the block's ``indptr`` / ``indices`` become the relation's CSC as they are (zero
    copy; COO built only if asked for), ``srcdata[NID]`` = ``src_ids``, ``dstdata[NID]`` =
    ``dst_ids``, ``edata[EID]`` = ``edge_ids``, and every ``srcdata`` / ``dstdata`` / ``edata``
    tensor shared.  Typed (``etypes`` + ``schema`` set): one CSC per relation (one sort of the
    edges by relation; the same relations as :func:`bgl.blocks.relation_blocks`), type-local
    ``NID`` per type.

    Parameters
    ----------
    block : ``Block``, or a ``RelationBlock`` (its CSC only: no ids, no data)
    num_src : the source node count of a ``RelationBlock`` (it does not know it: its src nodes
        are another type's); a ``Block`` counts its own ``src_ids``
    """
    if getattr(block, "etypes", None) is not None:
        return _typed_block_from_bgl(block)
    if not hasattr(block, "src_ids"):
        if num_src is None:
            raise DGLError(f"block_from_bgl needs num_src for a {type(block).__name__} (it carries no src ids).")
        return _csc_block(int(num_src), block.num_dst, block.indptr, block.indices, {}, {}, {})
    edge_cols = {**block.edata, **({} if block.edge_ids is None else {EID: block.edge_ids})}
    return _csc_block(block.num_src, block.num_dst, block.indptr, block.indices,
                      {NID: block.src_ids, **block.srcdata}, {NID: block.dst_ids, **block.dstdata}, edge_cols)


def _csc_block(num_src: int, num_dst: int, indptr, indices, src_cols: dict, dst_cols: dict,
               edge_cols: dict) -> DGLGraph:
    cet = (DEFAULT_NTYPE, DEFAULT_ETYPE, DEFAULT_NTYPE)
    rel = Relation(num_src, num_dst, csc=Compressed(indptr, indices, None))
    frames = dict(src_frames={DEFAULT_NTYPE: Frame(num_src, columns=src_cols)},
                  dst_frames={DEFAULT_NTYPE: Frame(num_dst, columns=dst_cols)},
                  edge_frames={cet: Frame(int(indices.shape[0]), "edges", edge_cols)})
    return DGLGraph({cet: rel}, {DEFAULT_NTYPE: num_src}, {DEFAULT_NTYPE: num_dst}, **frames)


def _typed_block_from_bgl(block) -> DGLGraph:
    """One stable sort of the edges by relation (each relation's edges keep the block's CSC
    order, so their dst positions never decrease), then one CSC per relation over type-local
    positions: O(E log E) once, not a pass over every edge per relation."""
    from bgl.blocks import type_layout

    schema = block.schema
    if schema is None:
        raise DGLError("A typed bgl block (etypes set) needs its schema to become a bgl.dgl block.")
    local, members, num_dst = type_layout(block)
    offsets = torch.as_tensor(np.asarray(schema.offsets), device=block.src_ids.device)
    src_frames, dst_frames, num_src = {}, {}, {}
    for t, nt in enumerate(schema.ntypes):
        rows = members[nt]
        ids = block.src_ids[rows] - offsets[t]
        num_src[nt] = int(rows.shape[0])
        src_cols = {NID: ids, **{k: v[nt] for k, v in block.srcdata.items() if nt in v}}
        dst_cols = {NID: ids[:num_dst[nt]], **{k: v[nt] for k, v in block.dstdata.items() if nt in v}}
        src_frames[nt] = Frame(num_src[nt], columns=src_cols)
        dst_frames[nt] = Frame(num_dst[nt], columns=dst_cols)
    deg = (block.indptr[1:] - block.indptr[:-1]).long()
    dst_of_edge = torch.repeat_interleave(torch.arange(block.num_dst, device=deg.device), deg)
    etypes = block.etypes.long()
    order = torch.sort(etypes, stable=True).indices
    bounds = [0] + torch.cumsum(torch.bincount(etypes, minlength=len(schema.canonical_etypes)), 0).tolist()
    rels, edge_frames = {}, {}
    for r, cet in enumerate(schema.canonical_etypes):
        cet = tuple(cet)
        sel = order[bounds[r]:bounds[r + 1]]
        rows = local[dst_of_edge[sel]]  # type-local dst positions, non-decreasing
        indptr = torch.zeros(num_dst[cet[2]] + 1, dtype=torch.int64, device=deg.device)
        torch.cumsum(torch.bincount(rows, minlength=num_dst[cet[2]]), 0, out=indptr[1:])
        indices = local[block.indices[sel].long()]
        rels[cet] = Relation(num_src[cet[0]], num_dst[cet[2]], csc=Compressed(indptr, indices, None))
        cols = {k: v[sel] for k, v in block.edata.items()}
        if block.edge_ids is not None:
            cols[EID] = block.edge_ids[sel]
        edge_frames[cet] = Frame(int(sel.shape[0]), "edges", cols)
    return DGLGraph(rels, num_src, dict(num_dst), src_frames=src_frames, dst_frames=dst_frames,
                    edge_frames=edge_frames)


def graph_from_pair(pair) -> DGLGraph:
    """A ``bgl.dgl`` graph of a bgl :class:`~bgl.loader.seeds.edges.PairGraph` (link prediction's
    positive or negative pairs over the batch's seed nodes), its tensors shared: score it with
    ``g.apply_edges(fn.u_dot_v('h', 'h', 'score'))``."""
    src, dst = pair.edges()
    n = pair.num_nodes()
    cet = (DEFAULT_NTYPE, DEFAULT_ETYPE, DEFAULT_NTYPE)
    nodes = Frame(n, columns=dict(pair.ndata))
    edges = Frame(int(src.shape[0]), "edges", dict(pair.edata))
    return DGLGraph({cet: Relation(n, n, src, dst)}, {DEFAULT_NTYPE: n}, src_frames={DEFAULT_NTYPE: nodes},
                    edge_frames={cet: edges})


def distinct_pairs(pairs: int, num_edges: int) -> torch.Tensor:
    """``num_edges`` distinct ints drawn uniformly from ``[0, pairs)`` (int64, in draw order; torch's generator).
    Candidates are drawn in rounds and repeats dropped (first draw kept): O(num_edges) memory however large
    ``pairs`` is.  The draw behind :func:`rand_graph` and ``dgl.rand_bipartite``."""
    if not 0 <= num_edges <= pairs:
        raise DGLError(f"Cannot take more sample than population when 'replace=false': {num_edges} of {pairs}.")
    if num_edges * 2 >= pairs:  # dense: one permutation of the pairs
        return torch.randperm(pairs)[:num_edges]
    chosen = torch.zeros(0, dtype=torch.int64)
    while chosen.shape[0] < num_edges:
        draw = torch.cat([chosen, torch.randint(0, pairs, (2 * (num_edges - chosen.shape[0]) + 16,))])
        uniq, inverse = torch.unique(draw, return_inverse=True)
        first = torch.full((uniq.shape[0],), draw.shape[0], dtype=torch.int64)
        first.scatter_reduce_(0, inverse, torch.arange(draw.shape[0]), "amin")
        chosen = draw[torch.sort(first).values][:num_edges]
    return chosen


def rand_graph(num_nodes: int, num_edges: int, idtype=torch.int64, device=None) -> DGLGraph:
    """``num_edges`` distinct edges drawn uniformly among the ``num_nodes ** 2`` node pairs (DGL's
    ``dgl.rand_graph``; torch's generator, so ``torch.manual_seed`` repeats it): :func:`distinct_pairs`."""
    pairs = int(num_nodes) * int(num_nodes)
    if not 0 <= num_edges <= pairs:
        raise DGLError(f"num_edges must be in [0, {pairs}] for {num_nodes} nodes, got {num_edges}.")
    chosen = distinct_pairs(pairs, num_edges)
    return graph((chosen // num_nodes, chosen % num_nodes), num_nodes=num_nodes, idtype=idtype, device=device)


def _scipy_edges(sp_mat):
    """(src int64 [E], dst int64 [E], values [E]) of a SciPy matrix's entries in its storage order (CSR / CSC:
    position order; any other format: its COO), explicit zeros and duplicates kept."""
    fmt = getattr(sp_mat, "format", None)
    if fmt in ("csr", "csc"):
        counts = torch.from_numpy(np.diff(sp_mat.indptr).astype(np.int64))
        major = torch.repeat_interleave(torch.arange(counts.shape[0]), counts)
        minor = torch.from_numpy(sp_mat.indices.astype(np.int64))
        src, dst = (major, minor) if fmt == "csr" else (minor, major)
        return src, dst, sp_mat.data
    coo = sp_mat.tocoo()
    return torch.from_numpy(coo.row.astype(np.int64)), torch.from_numpy(coo.col.astype(np.int64)), coo.data


def from_scipy(sp_mat, eweight_name=None, idtype=None, device=None) -> DGLGraph:
    """A homogeneous graph of a square SciPy sparse matrix (DGL's ``dgl.from_scipy``): an edge row -> column
    per stored entry, edge ids in the matrix's storage order (CSR / CSC: position order; any other format:
    its COO), explicit zeros and duplicates kept; ``eweight_name``: the entries as that edge field.

    Raises
    ------
    DGLError : a matrix that is not square
    """
    rows, cols = sp_mat.shape
    if rows != cols:
        raise DGLError(f"Expect the number of rows to be the same as the number of columns for sp_mat, "
                       f"got {rows:d} and {cols:d}.")
    src, dst, data = _scipy_edges(sp_mat)
    g = graph((src, dst), num_nodes=rows, idtype=torch.int64 if idtype is None else idtype, device=device)
    if eweight_name is not None:
        g.edata[eweight_name] = torch.as_tensor(np.asarray(data), device=g.device)
    return g


def _bipartite(src, dst, utype, etype, vtype, num_u: int, num_v: int, idtype) -> DGLGraph:
    if utype == vtype and num_u != num_v:  # one node type: DGL's unit graph needs as many sources as destinations
        raise DGLError(f"utype and vtype are both {utype!r}: expect as many source as destination nodes, "
                       f"got {num_u} and {num_v}.")
    return heterograph({(utype, etype, vtype): (src, dst)}, {utype: num_u, vtype: num_v},
                       idtype=torch.int64 if idtype is None else idtype)


def bipartite_from_scipy(sp_mat, utype, etype, vtype, eweight_name=None, idtype=None, device=None) -> DGLGraph:
    """A graph of one relation ``(utype, etype, vtype)`` from an ``N x M`` SciPy sparse matrix (DGL's
    ``dgl.bipartite_from_scipy``): ``N`` nodes of ``utype``, ``M`` of ``vtype``, an edge per stored entry
    in :func:`from_scipy`'s order; ``eweight_name``: the entries as that edge field."""
    src, dst, data = _scipy_edges(sp_mat)
    g = _bipartite(src, dst, utype, etype, vtype, *sp_mat.shape, idtype)
    if eweight_name is not None:
        g.edata[eweight_name] = torch.as_tensor(np.asarray(data))
    return g if device is None else g.to(device)


def _batch_values(values: list) -> torch.Tensor:
    """One tensor of per-node / per-edge attribute values, as DGL stacks them."""
    if isinstance(values[0], torch.Tensor):
        return torch.stack(values)
    if isinstance(values[0], np.ndarray):
        return torch.as_tensor(np.array(values))
    return torch.as_tensor(values)


def _by_edge_id(edges: list, edge_id_attr_name) -> list:
    """NetworkX's ``(u, v, attrs)`` edges in the order of their ``edge_id_attr_name`` attribute (as given when
    None); DGLError for an id out of range."""
    if edge_id_attr_name is None or not edges:
        return edges
    ids = np.array([int(attrs[edge_id_attr_name]) for _, _, attrs in edges], dtype=np.int64)
    if ids.min() < 0 or ids.max() >= len(edges):
        bad = int(ids[(ids < 0) | (ids >= len(edges))][0])
        raise DGLError(f"Expect edge IDs to be a non-negative integer smaller than {len(edges):d}, got {bad:d}")
    order = np.empty_like(ids)
    order[ids] = np.arange(len(edges))
    return [edges[i] for i in order]


def from_networkx(nx_graph, node_attrs=None, edge_attrs=None, edge_id_attr_name=None, idtype=None,
                  device=None) -> DGLGraph:
    """A homogeneous graph of a NetworkX graph (DGL's ``dgl.from_networkx``): nodes relabelled 0.. in sorted
    order, an undirected graph made directed (both directions), edges in NetworkX's edge order or by the
    edge attribute ``edge_id_attr_name``; ``node_attrs`` / ``edge_attrs`` copied into ``ndata`` / ``edata``.
    Reads NetworkX's Python objects once per node and edge (there is no array form to read).

    Raises
    ------
    DGLError : ``edge_id_attr_name`` missing, edge attributes of an undirected graph, an edge id out of
        range; KeyError : a node or edge without one of the attributes asked for (as DGL's)
    """
    import networkx as nx

    first = next(iter(nx_graph.edges(data=True)), (None, None, {}))[-1]
    if edge_id_attr_name is not None and edge_id_attr_name not in first:
        raise DGLError(f"Failed to find the pre-specified edge IDs in the edge features of the NetworkX graph "
                       f"with name {edge_id_attr_name}")
    if not nx_graph.is_directed() and not (edge_id_attr_name is None and edge_attrs is None):
        raise DGLError(f"Expect edge_id_attr_name and edge_attrs to be None when nx_graph is undirected, "
                       f"got {edge_id_attr_name} and {edge_attrs}")
    nx_graph = nx.convert_node_labels_to_integers(nx_graph, ordering="sorted")
    if not nx_graph.is_directed():
        nx_graph = nx_graph.to_directed()
    edges = _by_edge_id(list(nx_graph.edges(data=True)), edge_id_attr_name)
    src = torch.as_tensor([e[0] for e in edges], dtype=torch.int64)
    dst = torch.as_tensor([e[1] for e in edges], dtype=torch.int64)
    g = graph((src, dst), num_nodes=nx_graph.number_of_nodes(), idtype=torch.int64 if idtype is None else idtype)
    for attr in node_attrs or ():
        g.ndata[attr] = _batch_values([nx_graph.nodes[nid][attr] for nid in range(g.num_nodes())])
    for attr in edge_attrs or ():
        g.edata[attr] = _batch_values([attrs[attr] for _, _, attrs in edges])
    return g if device is None else g.to(device)


def bipartite_from_networkx(nx_graph, utype, etype, vtype, u_attrs=None, e_attrs=None, v_attrs=None,
                             edge_id_attr_name=None, idtype=None, device=None) -> DGLGraph:
    """A graph of one relation ``(utype, etype, vtype)`` from a directed NetworkX graph whose nodes carry
    ``bipartite`` 0 (``utype``) or 1 (``vtype``) (DGL's ``dgl.bipartite_from_networkx``): each side relabelled
    0.. in sorted order, edges in NetworkX's order or by ``edge_id_attr_name``; ``u_attrs`` / ``v_attrs`` /
    ``e_attrs`` copied into each side's node data / ``edata``.  One Python pass over the nodes and edges.

    Raises
    ------
    DGLError : an undirected graph, ``edge_id_attr_name`` missing, a node without ``bipartite``, an edge
        not from side 0 to side 1, an edge id out of range; ValueError : ``bipartite`` not 0 / 1;
        KeyError : an edge without one of ``e_attrs`` (as DGL's)
    """
    if not nx_graph.is_directed():
        raise DGLError("Expect nx_graph to be a directed NetworkX graph.")
    edges = list(nx_graph.edges(data=True))
    if edge_id_attr_name is not None and edge_id_attr_name not in (edges[0][-1] if edges else {}):
        raise DGLError(f"Failed to find the pre-specified edge IDs in the edge features of the NetworkX graph "
                       f"with name {edge_id_attr_name}")
    sides = ([], [])
    for n, attrs in nx_graph.nodes(data=True):
        if "bipartite" not in attrs:
            raise DGLError(f"Expect the node {n} to have attribute bipartite")
        if attrs["bipartite"] not in (0, 1):
            raise ValueError(f"Expect the bipartite attribute of the node {n} to be 0 or 1, got {attrs['bipartite']}")
        sides[int(attrs["bipartite"])].append(n)
    top, bottom = ({n: i for i, n in enumerate(sorted(side))} for side in sides)
    for u, v, _ in edges:
        for node, side, bit in ((u, top, 0), (v, bottom, 1)):
            if node not in side:
                raise DGLError(f"Expect the node {node} to have attribute bipartite={bit} with edge {(u, v)}")
    edges = _by_edge_id(edges, edge_id_attr_name)
    src = torch.as_tensor([top[u] for u, _, _ in edges], dtype=torch.int64)
    dst = torch.as_tensor([bottom[v] for _, v, _ in edges], dtype=torch.int64)
    g = _bipartite(src, dst, utype, etype, vtype, len(top), len(bottom), idtype)
    for attrs, nodes, nt in ((u_attrs, top, utype), (v_attrs, bottom, vtype)):
        for attr in attrs or ():
            g.nodes[nt].data[attr] = _batch_values([nx_graph.nodes[n][attr] for n in nodes])
    for attr in e_attrs or ():
        g.edata[attr] = _batch_values([attrs[attr] for _, _, attrs in edges])
    return g if device is None else g.to(device)


def to_networkx(g, node_attrs=None, edge_attrs=None, ntype_attr="ntype", etype_attr="etype", eid_attr="id"):
    """A NetworkX ``MultiDiGraph`` of a homogeneous graph on the CPU (DGL's ``dgl.to_networkx``): nodes
    0..N-1, one edge per edge with its id as attribute ``"id"``, ``node_attrs`` / ``edge_attrs`` rows as
    attributes."""
    import networkx as nx

    if g.device.type != "cpu":
        raise DGLError("Cannot convert a CUDA graph to networkx. Call g.cpu() first.")
    if len(g.ntypes) != 1 or len(g.canonical_etypes) != 1:
        raise not_built("to_networkx of a graph with several node or edge types", "convert g.to_homogeneous()")
    out = nx.MultiDiGraph()
    out.add_nodes_from(range(g.num_nodes()))
    src, dst = g.edges()
    out.add_edges_from((u, v, {"id": eid}) for eid, (u, v) in enumerate(zip(src.tolist(), dst.tolist())))
    for nid, attrs in out.nodes(data=True):
        attrs.update({key: g.ndata[key][nid] for key in node_attrs or ()})
    for _, _, attrs in out.edges(data=True):
        attrs.update({key: g.edata[key][attrs["id"]] for key in edge_attrs or ()})
    return out


DGLGraph.to_networkx = to_networkx
