"""DGL's message propagation along traversal frontiers: ``g.prop_nodes`` / ``g.prop_edges`` (one
``pull`` / ``send_and_recv`` per frontier, in order) and ``dgl.prop_nodes``, ``dgl.prop_edges``,
``dgl.prop_nodes_bfs``, ``dgl.prop_nodes_topo``, ``dgl.prop_edges_dfs`` (frontiers from
:mod:`bgl.dgl.graph_utils.traversal`).  Each frontier is one vectorised message-passing call, so the cost is
the traversal's plus one ``pull`` per level over that level's edges.
"""
from __future__ import annotations

from bgl.dgl.base import DGLError
from bgl.dgl.graph_utils import traversal as trv
from bgl.dgl.heterograph import DGLGraph


def _funcs(message_func, reduce_func, apply_node_func):
    """DGL's module-level ``prop_*`` default to the string 'default' (a leftover its graphs no longer accept)."""
    if isinstance(message_func, str) or isinstance(reduce_func, str):
        raise DGLError("prop_nodes / prop_edges need a message_func and a reduce_func (no 'default' ones).")
    return message_func, reduce_func, None if apply_node_func == "default" else apply_node_func


def prop_nodes_method(self: DGLGraph, nodes_generator, message_func, reduce_func, apply_node_func=None, etype=None):
    """``g.prop_nodes``: :meth:`pull` into each node frontier of ``nodes_generator`` in turn."""
    for frontier in nodes_generator:
        self.pull(frontier, message_func, reduce_func, apply_node_func, etype=etype)


def prop_edges_method(self: DGLGraph, edges_generator, message_func, reduce_func, apply_node_func=None, etype=None):
    """``g.prop_edges``: :meth:`send_and_recv` over each edge frontier of ``edges_generator`` in turn."""
    for frontier in edges_generator:
        self.send_and_recv(frontier, message_func, reduce_func, apply_node_func, etype=etype)


def prop_nodes(graph, nodes_generator, message_func="default", reduce_func="default", apply_node_func="default"):
    """``graph.prop_nodes(nodes_generator, ...)`` (DGL's ``dgl.prop_nodes``)."""
    prop_nodes_method(graph, nodes_generator, *_funcs(message_func, reduce_func, apply_node_func))


def prop_edges(graph, edges_generator, message_func="default", reduce_func="default", apply_node_func="default"):
    """``graph.prop_edges(edges_generator, ...)`` (DGL's ``dgl.prop_edges``)."""
    prop_edges_method(graph, edges_generator, *_funcs(message_func, reduce_func, apply_node_func))


def _on_device(frontiers, graph: DGLGraph) -> list:
    return [f.to(graph.device) for f in frontiers]


def prop_nodes_bfs(graph, source, message_func, reduce_func, reverse=False, apply_node_func=None):
    """Pull into the breadth-first frontiers from ``source`` (:func:`bfs_nodes_generator`), nearest first."""
    trv._check(graph, "prop_nodes_bfs")
    prop_nodes_method(graph, _on_device(trv.bfs_nodes_generator(graph, source, reverse), graph), message_func,
                      reduce_func, apply_node_func)


def prop_nodes_topo(graph, message_func, reduce_func, reverse=False, apply_node_func=None):
    """Pull into the topological frontiers (:func:`topological_nodes_generator`), sources first."""
    trv._check(graph, "prop_nodes_topo")
    prop_nodes_method(graph, _on_device(trv.topological_nodes_generator(graph, reverse), graph), message_func,
                      reduce_func, apply_node_func)


def prop_edges_dfs(graph, source, message_func, reduce_func, reverse=False, has_reverse_edge=False,
                   has_nontree_edge=False, apply_node_func=None):
    """Send and receive over the depth-first labelled edge frontiers (:func:`dfs_labeled_edges_generator`)."""
    trv._check(graph, "prop_edges_dfs")
    frontiers = trv.dfs_labeled_edges_generator(graph, source, reverse, has_reverse_edge, has_nontree_edge,
                                                return_labels=False)
    prop_edges_method(graph, _on_device(frontiers, graph), message_func, reduce_func, apply_node_func)
