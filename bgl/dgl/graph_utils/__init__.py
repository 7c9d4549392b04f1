"""DGL 2.1's top-level graph utilities that ``bgl.dgl`` loads on first use (``dgl.khop_in_subgraph``,
``dgl.topk_nodes``, ``dgl.merge``, ``dgl.u_add_v``, ``dgl.node_homophily``, ``dgl.bfs_nodes_generator``,
``dgl.prop_nodes_topo``, ``dgl.partition_graph_with_halo``, ...): :data:`NAMES` maps each public name to its
module here.
"""
from __future__ import annotations

NAMES = {
    **dict.fromkeys(["khop_in_subgraph", "khop_out_subgraph"], "khop"),
    **dict.fromkeys(["topk_nodes", "topk_edges"], "readout_topk"),
    **dict.fromkeys(["merge", "rand_bipartite", "adj_product_graph", "adj_sum_graph"], "combine"),
    **dict.fromkeys(["copy_u", "copy_v", "u_add_v", "u_sub_v", "u_mul_v", "u_div_v", "u_dot_v"], "edge_ops"),
    **dict.fromkeys(["node_homophily", "edge_homophily", "linkx_homophily", "adjusted_homophily",
                     "edge_label_informativeness", "node_label_informativeness"], "homophily"),
    **dict.fromkeys(["bfs_nodes_generator", "bfs_edges_generator", "topological_nodes_generator",
                     "dfs_edges_generator", "dfs_labeled_edges_generator"], "traversal"),
    **dict.fromkeys(["prop_nodes", "prop_edges", "prop_nodes_bfs", "prop_nodes_topo", "prop_edges_dfs"],
                    "propagate"),
    **dict.fromkeys(["double_radius_node_labeling", "apply_each"], "encodings"),
    **dict.fromkeys(["partition_graph_with_halo", "metis_partition_assignment", "metis_partition"],
                    "halo_partition"),
}

# the same names as a literal list: the docs' API reader (griffe) takes only strings in bgl.dgl's __all__
__all__ = ["khop_in_subgraph", "khop_out_subgraph", "topk_nodes", "topk_edges", "merge", "rand_bipartite",
           "adj_product_graph", "adj_sum_graph", "copy_u", "copy_v", "u_add_v", "u_sub_v", "u_mul_v", "u_div_v",
           "u_dot_v", "node_homophily", "edge_homophily", "linkx_homophily", "adjusted_homophily",
           "edge_label_informativeness", "node_label_informativeness", "bfs_nodes_generator", "bfs_edges_generator",
           "topological_nodes_generator", "dfs_edges_generator", "dfs_labeled_edges_generator", "prop_nodes",
           "prop_edges", "prop_nodes_bfs", "prop_nodes_topo", "prop_edges_dfs", "double_radius_node_labeling",
           "apply_each", "partition_graph_with_halo", "metis_partition_assignment", "metis_partition"]
assert __all__ == list(NAMES)

# DGLGraph methods DGL defines alongside them: (module, function) each, bound on first call
METHODS = {"khop_in_subgraph": ("khop", "khop_in_subgraph"), "khop_out_subgraph": ("khop", "khop_out_subgraph"),
           "prop_nodes": ("propagate", "prop_nodes_method"), "prop_edges": ("propagate", "prop_edges_method")}
