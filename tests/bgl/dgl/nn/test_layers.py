"""The layers without DGL: shapes, DGL's errors, refusals of layers not built, and brute-force
references (dense adjacency / per-node loops, written independently of the layer code) for
GraphConv, GATConv, GINConv and RelGraphConv.  Runs in both lanes."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl
import bgl.dgl.nn as dglnn

TOL = dict(atol=1e-5, rtol=1e-5)


def dense(e) -> torch.Tensor:
    """[num_dst, num_src] edge counts (multi-edges add up)."""
    a = torch.zeros(e.num_dst, e.num_src)
    for s, d in zip(e.src.tolist(), e.dst.tolist()):
        a[d, s] += 1
    return a


@pytest.mark.parametrize("norm", ["both", "right", "left", "none"])
@pytest.mark.parametrize("widths", [(6, 4), (4, 6)])
def test_graphconv_equals_dense_formula(build, block_edges, norm, widths):
    e = block_edges
    torch.manual_seed(0)
    layer = dglnn.GraphConv(*widths, norm=norm, allow_zero_in_degree=True)
    torch.nn.init.normal_(layer.bias)
    x = torch.randn(e.num_src, widths[0])
    a = dense(e)
    in_deg, out_deg = a.sum(1).clamp(min=1), a.sum(0).clamp(min=1)
    power = -0.5 if norm == "both" else -1.0
    left = out_deg.pow(power) if norm in ("both", "left") else torch.ones(e.num_src)
    right = in_deg.pow(power) if norm in ("both", "right") else torch.ones(e.num_dst)
    expected = right[:, None] * (a @ (left[:, None] * x)) @ layer.weight + layer.bias
    torch.testing.assert_close(layer(build.bgl(e), x), expected, **TOL)


def test_gatconv_equals_per_node_softmax(build, block_edges):
    e = block_edges
    torch.manual_seed(0)
    heads, out = 3, 2
    layer = dglnn.GATConv(5, out, heads, negative_slope=0.15, allow_zero_in_degree=True)
    x = torch.randn(e.num_src, 5)
    rst, attention = layer(build.bgl(e), x, get_attention=True)
    assert rst.shape == (e.num_dst, heads, out) and attention.shape == (e.src.shape[0], heads, 1)
    z = (x @ layer.fc.weight.T).view(-1, heads, out)
    left, right = (z * layer.attn_l).sum(-1), (z * layer.attn_r).sum(-1)  # [N, heads]
    expected = torch.zeros(e.num_dst, heads, out) + layer.bias.view(heads, out)
    for v in range(e.num_dst):
        edges = (e.dst == v).nonzero().flatten()
        if edges.numel() == 0:
            continue
        u = e.src[edges]
        scores = torch.nn.functional.leaky_relu(left[u] + right[v], 0.15)  # [deg, heads]
        alpha = torch.softmax(scores, dim=0)
        torch.testing.assert_close(attention[edges, :, 0], alpha, **TOL)
        expected[v] += (alpha[:, :, None] * z[u]).sum(0)
    torch.testing.assert_close(rst, expected, **TOL)


@pytest.mark.parametrize("aggregator", ["sum", "max", "mean"])
def test_ginconv_equals_per_node_reduce(build, graph_edges, aggregator):
    e = graph_edges
    x = torch.randn(e.num_src, 3)
    layer = dglnn.GINConv(None, aggregator, init_eps=0.5)
    expected = 1.5 * x
    for v in range(e.num_dst):
        u = e.src[e.dst == v]
        if u.numel():
            expected[v] += getattr(x[u], "amax" if aggregator == "max" else aggregator)(0)
    torch.testing.assert_close(layer(build.bgl(e), x), expected, **TOL)


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("bdd", 2)])
def test_relgraphconv_equals_per_edge_sum(build, block_edges, regularizer, num_bases):
    e = block_edges
    torch.manual_seed(0)
    layer = dglnn.RelGraphConv(4, 6, 3, regularizer=regularizer, num_bases=num_bases)
    x = torch.randn(e.num_src, 4)
    etypes = torch.randint(0, 3, (e.src.shape[0],))
    if regularizer == "bdd":  # block-diagonal weight per relation, written out densely
        blocks = layer.linear_r.W.view(3, 2, 2, 3)
        weights = torch.stack([torch.block_diag(*blocks[t]) for t in range(3)])
    else:
        weights = layer.linear_r.get_weight()
    expected = x[: e.num_dst] @ layer.loop_weight + layer.h_bias
    for i, (s, d) in enumerate(zip(e.src.tolist(), e.dst.tolist())):
        expected[d] += x[s] @ weights[etypes[i]]
    torch.testing.assert_close(layer(build.bgl(e), x, etypes), expected, **TOL)


@pytest.mark.parametrize("make,width", [
    (lambda: dglnn.SAGEConv(4, 7, "mean"), (7,)), (lambda: dglnn.SAGEConv(4, 7, "gcn"), (7,)),
    (lambda: dglnn.SAGEConv(4, 7, "pool"), (7,)), (lambda: dglnn.SAGEConv(4, 7, "lstm"), (7,)),
    (lambda: dglnn.GATv2Conv(4, 7, 2, allow_zero_in_degree=True), (2, 7)),
    (lambda: dglnn.GraphConv(4, 7, allow_zero_in_degree=True), (7,))])
def test_output_shapes(build, block_edges, make, width):
    e = block_edges
    out = make()(build.bgl(e), torch.randn(e.num_src, 4))
    assert out.shape == (e.num_dst,) + width


def test_sage_lstm_zero_in_degree_rows_are_neighbourless(build, block_edges):
    """A dst node without in-edges gets fc_self of itself only (its LSTM summary is 0)."""
    e = block_edges
    layer = dglnn.SAGEConv(4, 3, "lstm")
    x = torch.randn(e.num_src, 4)
    out = layer(build.bgl(e), x)
    lonely = e.num_dst - 1  # the fixture leaves the last dst node without in-edges
    torch.testing.assert_close(out[lonely], layer.fc_self(x[lonely]), **TOL)


@pytest.mark.parametrize("make", [lambda: dglnn.GraphConv(4, 3), lambda: dglnn.GATConv(4, 3, 2),
                                  lambda: dglnn.GATv2Conv(4, 3, 2)])
def test_zero_in_degree_refused(build, block_edges, make):
    with pytest.raises(bgl.dgl.DGLError, match="0-in-degree nodes"):
        make()(build.bgl(block_edges), torch.randn(block_edges.num_src, 4))


def test_bad_arguments_named(build, block_edges):
    with pytest.raises(bgl.dgl.DGLError, match='Invalid norm value.*"mine"'):
        dglnn.GraphConv(3, 2, norm="mine")
    with pytest.raises(bgl.dgl.DGLError, match="Invalid aggregator_type.*'max'"):
        dglnn.SAGEConv(3, 2, "max")
    with pytest.raises(KeyError, match="median"):
        dglnn.GINConv(None, "median")
    with pytest.raises(ValueError, match="divisible by num_bases"):
        dglnn.RelGraphConv(5, 4, 3, regularizer="bdd", num_bases=2)
    with pytest.raises(bgl.dgl.DGLError, match='cross type aggregator.*"prod"'):
        dglnn.HeteroGraphConv({}, aggregate="prod")
    e = block_edges
    with pytest.raises(bgl.dgl.DGLError, match="edge_weight has 3 rows but the graph has"):
        dglnn.GraphConv(3, 2, allow_zero_in_degree=True)(build.bgl(e), torch.randn(e.num_src, 3),
                                                         edge_weight=torch.ones(3))
    with pytest.raises(bgl.dgl.DGLError, match="Non-positive edge weight"):
        dglnn.EdgeWeightNorm("both")(build.bgl(e), torch.zeros(e.src.shape[0]))
    with pytest.raises(bgl.dgl.DGLError, match="External weight"):
        dglnn.GraphConv(3, 2, allow_zero_in_degree=True)(build.bgl(e), torch.randn(e.num_src, 3),
                                                         weight=torch.ones(3, 2))
    with pytest.raises(ValueError, match=r"types must lie in \[0, 3\)"):
        dglnn.RelGraphConv(3, 2, 3)(build.bgl(e), torch.randn(e.num_src, 3), torch.full((e.src.shape[0],), 3))


@pytest.mark.parametrize("name", ["CuGraphGATConv", "CuGraphSAGEConv"])
def test_unbuilt_dgl_layers_refused_by_name(name):
    with pytest.raises(AttributeError, match=f"does not provide DGL's {name}; its layers are GraphConv"):
        getattr(dglnn, name)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchConv'"):
        dglnn.NoSuchConv  # noqa: B018


def test_functional_edge_softmax_is_ops():
    from bgl.dgl.nn.functional import edge_softmax
    from bgl.dgl.ops import edge_softmax as ops_edge_softmax

    assert edge_softmax is ops_edge_softmax


def test_hetero_graphconv_sums_relations(build):
    """Per dst type: the sum of each relation's GraphConv on its own relation graph."""
    block = build.typed_block(bgl.dgl, 3)
    mods = {rel: dglnn.GraphConv(4, 2, norm="none", bias=False) for rel in ("follows", "buys", "bought-by")}
    layer = dglnn.HeteroGraphConv(mods, aggregate="sum")
    x = {nt: torch.randn(build.typed_sizes[nt][0], 4) for nt in ("user", "item")}
    out = layer(block, x)
    dst = {nt: x[nt][: build.typed_sizes[nt][1]] for nt in x}
    expected_user = mods["follows"](block["follows"], (x["user"], dst["user"])) + \
        mods["bought-by"](block["bought-by"], (x["item"], dst["user"]))
    torch.testing.assert_close(out["user"], expected_user, **TOL)
    assert out["item"].shape == (build.typed_sizes["item"][1], 2)


def test_layers_reachable_as_dgl_nn():
    """``import dgl`` then ``dgl.nn.GraphConv`` is how many DGL scripts name the layers (a fresh
    interpreter: here bgl.dgl.nn is imported already)."""
    import subprocess
    import sys

    code = "import bgl.dgl as dgl; print(dgl.nn.GraphConv.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "bgl.dgl.nn.graphconv"


def test_dgl_module_paths_of_the_layers():
    """``dgl.nn.pytorch``, ``dgl.nn.pytorch.conv`` (and ``.softmax``) paths name the same layers."""
    import bgl.dgl.nn.pytorch as torch_layers
    from bgl.dgl.nn.pytorch.conv import GATConv
    from bgl.dgl.nn.pytorch.softmax import edge_softmax

    assert torch_layers.SAGEConv is dglnn.SAGEConv and GATConv is dglnn.GATConv
    assert edge_softmax is bgl.dgl.ops.edge_softmax


def test_hetero_graphconv_passes_mod_args_and_kwargs(build):
    """``mod_args`` / ``mod_kwargs`` reach the relation's module by relation name."""
    block = build.typed_block(bgl.dgl, 3)
    mods = {rel: dglnn.GraphConv(4, 2, weight=False, bias=False) for rel in ("follows", "buys", "bought-by")}
    layer = dglnn.HeteroGraphConv(mods, aggregate="sum")
    x = {nt: torch.randn(build.typed_sizes[nt][0], 4) for nt in ("user", "item")}
    weight = torch.randn(4, 2)
    edge_weight = torch.rand(block.num_edges("follows"))
    out = layer(block, x, mod_args={rel: (weight,) for rel in mods},
                mod_kwargs={"follows": {"edge_weight": edge_weight}})
    dst = {nt: x[nt][: build.typed_sizes[nt][1]] for nt in x}
    expected = mods["follows"](block["follows"], (x["user"], dst["user"]), weight, edge_weight=edge_weight) + \
        mods["bought-by"](block["bought-by"], (x["item"], dst["user"]), weight)
    torch.testing.assert_close(out["user"], expected, **TOL)


def test_dense_modules_run_without_dgl():
    """Current lane: the graph-free modules give DGL's shapes (the pinned lane compares their values)."""
    import bgl.dgl.nn as nn

    h = {"user": torch.randn(4, 3), "item": torch.randn(2, 5)}
    out = nn.HeteroLinear({"user": 3, "item": 5}, 6)(h)
    assert {k: tuple(v.shape) for k, v in out.items()} == {"user": (4, 6), "item": (2, 6)}
    emb = nn.HeteroEmbedding({"user": 4}, 2)({"user": torch.tensor([0, 3])})
    assert emb["user"].shape == (2, 2)
    layers = [torch.randn(5, 4) for _ in range(3)]
    assert nn.JumpingKnowledge("cat")(layers).shape == (5, 12)
    assert nn.JumpingKnowledge("lstm", 4, 3)(layers).shape == (5, 4)
    assert nn.EdgePredictor("dot")(layers[0], layers[1]).shape == (5, 1)
    assert nn.EdgePredictor("cat", 4, 2)(layers[0], layers[1]).shape == (5, 2)


def test_propagation_layers_run_without_dgl():
    """Current lane: SGConv and APPNPConv on a bgl.dgl graph; APPNP with alpha=1 returns its input, one SGConv
    hop of a graph of self-loops only is the linear map (the pinned lane compares values with DGL's)."""
    import bgl.dgl as dgl
    import bgl.dgl.nn as nn

    g = dgl.graph((torch.arange(6), torch.arange(6)), num_nodes=6)
    x = torch.randn(6, 4)
    assert torch.equal(nn.APPNPConv(k=2, alpha=1.0)(g, x), x)
    layer = nn.SGConv(4, 3, k=1)
    torch.testing.assert_close(layer(g, x), layer.fc(x))


def test_tagconv_and_gineconv_run_without_dgl():
    """Current lane: TAGConv's and GINEConv's shapes and GINEConv's edge-feature check."""
    import bgl.dgl as dgl
    import bgl.dgl.nn as nn

    g = dgl.graph((torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1])), num_nodes=3)
    assert nn.TAGConv(4, 2, k=3)(g, torch.randn(3, 4)).shape == (3, 2)
    layer = nn.GINEConv(learn_eps=True)
    assert layer(g, torch.randn(3, 5), torch.randn(4, 5)).shape == (3, 5)
    with pytest.raises(dgl.DGLError, match="edge_feat has 3 rows"):
        layer(g, torch.randn(3, 5), torch.randn(3, 5))


def test_hgtconv_runs_without_dgl():
    """Current lane: HGTConv on a bgl.dgl graph of typed nodes and edges gives [N, heads * head_size]."""
    import bgl.dgl as dgl
    import bgl.dgl.nn as nn

    g = dgl.graph((torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 3, 0])), num_nodes=4)
    layer = nn.HGTConv(5, 3, 2, num_ntypes=2, num_etypes=2, dropout=0.0)
    out = layer(g, torch.randn(4, 5), torch.tensor([0, 1, 0, 1]), torch.tensor([0, 1, 1, 0]))
    assert out.shape == (4, 6) and torch.isfinite(out).all()


def test_gcn2conv_and_dotgatconv_run_without_dgl():
    """Current lane: GCN2Conv and DotGatConv shapes on a bgl.dgl graph (values: the pinned lane, against DGL)."""
    import bgl.dgl as dgl
    import bgl.dgl.nn as nn

    g = dgl.add_self_loop(dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0])), num_nodes=3))
    x = torch.randn(3, 4)
    assert nn.GCN2Conv(4, layer=1)(g, x, x).shape == (3, 4)
    out, attention = nn.DotGatConv(4, 2, num_heads=3)(g, x, get_attention=True)
    assert out.shape == (3, 3, 2) and attention.shape == (g.num_edges(), 3, 1)


def test_message_layers_and_readouts_run_without_dgl():
    """Current lane: ChebConv, NNConv, EdgeConv, GatedGraphConv, AGNNConv, Sequential, SortPooling and
    Set2Set shapes on bgl.dgl graphs (values: the pinned lane, against DGL); an EdgeConv node with two equal
    in-neighbours is their message's max, and a batch's graph smaller than SortPooling's k is zero-padded."""
    import bgl.dgl as dgl
    import bgl.dgl.nn as nn

    g = dgl.graph((torch.tensor([0, 1, 2, 3, 1]), torch.tensor([1, 2, 3, 0, 0])), num_nodes=4)
    x = torch.randn(4, 3)
    assert nn.ChebConv(3, 2, 3)(g, x, lambda_max=[2.0]).shape == (4, 2)
    assert nn.NNConv(3, 2, torch.nn.Linear(5, 6), "max")(g, x, torch.randn(5, 5)).shape == (4, 2)
    assert nn.EdgeConv(3, 2)(g, x).shape == (4, 2)
    assert nn.GatedGraphConv(3, 4, 2, 2)(g, x, torch.tensor([0, 1, 1, 0, 1])).shape == (4, 4)
    assert nn.AGNNConv()(g, x).shape == (4, 3)
    seq = nn.Sequential(nn.GraphConv(3, 4), nn.GraphConv(4, 2))
    assert seq(g, x).shape == (4, 2)
    batch = dgl.batch([g, dgl.graph((torch.tensor([0]), torch.tensor([1])), num_nodes=2)])
    pooled = nn.SortPooling(3)(batch, torch.randn(6, 3))
    assert pooled.shape == (2, 9) and not pooled[1, 6:].any()
    assert nn.Set2Set(3, 2, 1)(batch, torch.randn(6, 3)).shape == (2, 6)
    with pytest.raises(TypeError, match="DGLGraph"):
        seq("not a graph", x)


def test_node_embedding_state_dict_round_trip_and_refusals():
    """Current lane too: a SparseAdam state saved and loaded into another table's optimizer; what is refused."""
    import bgl.dgl as bdgl
    import bgl.dgl.optim  # noqa: F401

    def _init(table):
        return table.copy_(torch.randn(table.shape, generator=torch.Generator().manual_seed(0)))

    emb = bdgl.nn.NodeEmbedding(5, 2, "table", init_func=_init)
    opt = bdgl.optim.SparseAdam([emb], lr=0.1)
    emb(torch.tensor([1, 2])).sum().backward()
    opt.step()
    saved = opt.state_dict()
    other = bdgl.nn.NodeEmbedding(5, 2, "table")
    reloaded = bdgl.optim.SparseAdam([other], lr=0.5)
    reloaded.load_state_dict(saved)
    assert reloaded.param_groups[0]["lr"] == 0.1
    assert all(torch.equal(x, y) for x, y in zip(other.optm_state, emb.optm_state))
    with pytest.raises(bdgl.DGLError, match="NodeEmbedding"):
        bdgl.optim.SparseAdagrad([torch.nn.Embedding(3, 2)], lr=0.1)
    with pytest.raises(NotImplementedError, match="partition"):
        bdgl.nn.NodeEmbedding(5, 2, "t", partition=object())
