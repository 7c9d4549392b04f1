"""bgl.dgl on graphs and blocks without edges (a sampled block whose seeds have no neighbours) and
blocks without dst nodes, without DGL: every builtin, ``edge_softmax``, ``dgl.ops`` and layer
answers with what no edge means (empty per-edge results, 0 per node, a layer's self term and bias
alone) and zero gradients.  The DGL comparison is test_empty_graphs_vs_dgl.py and
nn/test_layers_match_dgl.py (pinned lane); this runs in both lanes."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl as bdgl
import bgl.dgl.function as fn
import bgl.dgl.nn as bglnn

NONE = torch.zeros(0, dtype=torch.int64)
STRUCTURES = {"block-no-edges": (5, 3, True), "block-no-dst": (4, 0, True), "block-empty": (0, 0, True),
              "graph-no-edges": (5, 5, False)}
MESSAGES = {"copy_u": fn.copy_u("x", "m"), "copy_e": fn.copy_e("w", "m"), "u_mul_e": fn.u_mul_e("x", "w", "m"),
            "u_add_v": fn.u_add_v("x", "y", "m"), "u_dot_v": fn.u_dot_v("x", "y", "m"),
            "e_div_v": fn.e_div_v("w", "y", "m")}


def empty(structure: str):
    num_src, num_dst, block = STRUCTURES[structure]
    if block:
        return bdgl.create_block((NONE, NONE), num_src_nodes=num_src, num_dst_nodes=num_dst)
    return bdgl.graph((NONE, NONE), num_nodes=num_src)


def leaves(g, width=(2, 3)):
    return (torch.randn(g.num_src_nodes(), *width).requires_grad_(),
            torch.randn(g.num_dst_nodes(), *width).requires_grad_(), torch.randn(0, *width).requires_grad_())


def assert_zero_grads(out, inputs):
    out.sum().backward() if out.requires_grad else None
    for t in inputs:
        assert t.grad is None or not t.grad.any()


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("message", MESSAGES)
@pytest.mark.parametrize("reducer", ["sum", "mean", "max", "min"])
def test_update_all_gives_zero_rows(structure, message, reducer):
    g = empty(structure)
    x, y, w = leaves(g)
    g.srcdata["x"], g.dstdata["y"], g.edata["w"] = x, y, w
    g.update_all(MESSAGES[message], getattr(fn, reducer)("m", "h"))
    width = (2, 1) if message == "u_dot_v" else (2, 3)
    h = g.dstdata["h"]
    assert h.shape == (g.num_dst_nodes(), *width) and not h.any()
    assert_zero_grads(h, (x, y, w))


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("message", MESSAGES)
def test_apply_edges_gives_no_rows(structure, message):
    g = empty(structure)
    x, y, w = leaves(g)
    g.srcdata["x"], g.dstdata["y"], g.edata["w"] = x, y, w
    g.apply_edges(MESSAGES[message])
    assert g.edata["m"].shape == ((0, 2, 1) if message == "u_dot_v" else (0, 2, 3))
    assert_zero_grads(g.edata["m"], (x, y, w))


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("norm_by", ["dst", "src"])
@pytest.mark.parametrize("shape", [(), (1,), (2, 1)])
def test_edge_softmax_gives_no_rows(structure, norm_by, shape):
    logits = torch.randn(0, *shape).requires_grad_()
    out = bdgl.ops.edge_softmax(empty(structure), logits, norm_by=norm_by)
    assert out.shape == logits.shape
    assert_zero_grads(out, (logits,))


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("name", ["copy_u_sum", "copy_u_max", "copy_e_min", "u_mul_e_mean"])
def test_gspmm_shortcuts_give_zero_rows(structure, name):
    """DGL's gspmm leaves its zero-filled output when there is no edge: 0 for max / min too."""
    g = empty(structure)
    x, _, w = leaves(g, (4,))
    args = {"copy_u": (x,), "copy_e": (w,), "u_mul_e": (x, w)}[name.rsplit("_", 1)[0]]
    out = getattr(bdgl.ops, name)(g, *args)
    assert out.shape == (g.num_dst_nodes(), 4) and not out.any()
    assert_zero_grads(out, args)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_layers_answer_their_self_terms(structure):
    """With no edge each layer's dst row is what it adds to the neighbour term: the formulas of
    GraphSAGE, GCN, GAT, GIN and R-GCN with that term set to zero."""
    g = empty(structure)
    n_dst = g.num_dst_nodes()
    torch.manual_seed(0)
    x = torch.randn(g.num_src_nodes(), 6)
    dst = x[:n_dst]
    gcn = bglnn.GraphConv(6, 4, allow_zero_in_degree=True)
    torch.nn.init.normal_(gcn.bias)
    sage = bglnn.SAGEConv(6, 4, "mean")
    gin = bglnn.GINConv(None, "sum", init_eps=0.5)
    gat = bglnn.GATConv(6, 2, 2, allow_zero_in_degree=True)
    torch.nn.init.normal_(gat.bias)
    rgcn = bglnn.RelGraphConv(6, 4, 3, "basis", 2)
    torch.nn.init.normal_(rgcn.h_bias)
    cases = [(gcn(g, x), gcn.bias.expand(n_dst, 4)), (sage(g, x), sage.fc_self(dst)), (gin(g, x), 1.5 * dst),
             (gat(g, x), gat.bias.view(1, 2, 2).expand(n_dst, 2, 2)),
             (rgcn(g, x, NONE), dst @ rgcn.loop_weight + rgcn.h_bias)]
    for got, want in cases:
        torch.testing.assert_close(got, want)
    with pytest.raises(bdgl.DGLError, match="0-in-degree") if n_dst else _no_error():
        bglnn.GATConv(6, 2, 2)(g, x)


class _no_error:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_gat_attention_on_no_edges():
    g = empty("block-no-edges")
    out, attention = bglnn.GATv2Conv(6, 2, 3, residual=True, allow_zero_in_degree=True)(
        g, torch.randn(5, 6), get_attention=True)
    assert out.shape == (3, 3, 2) and attention.shape == (0, 3, 1)
