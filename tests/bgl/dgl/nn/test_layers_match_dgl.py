"""Each layer against DGL 2.1's own on the same weights (DGL's state dict loaded, strict): outputs,
input and parameter gradients within 1e-5 (float32) on blocks and graphs with hubs, isolated and
zero-in-degree nodes, and typed blocks.  Pinned lane only (skipped without DGL)."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="DGL is not installed: the layers are compared with DGL's own")
import dgl.nn as dglnn  # noqa: E402

import bgl.dgl  # noqa: E402
import bgl.dgl.nn as bglnn  # noqa: E402

TOL = dict(atol=1e-5, rtol=1e-5)


def leaves(obj) -> list:
    """Tensors requiring grad inside nested args (in a fixed order)."""
    if torch.is_tensor(obj):
        return [obj] if obj.requires_grad and obj.is_leaf else []
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in leaves(item)]
    if isinstance(obj, dict):
        return [t for key in sorted(obj, key=str) for t in leaves(obj[key])]
    return []


def outputs(result) -> list:
    if isinstance(result, dict):
        return [result[k] for k in sorted(result)]
    return list(result) if isinstance(result, tuple) else [result]


def check_same(make, graphs, make_inputs, seed: int = 0, grads: bool = True):
    """Build DGL's layer and ours from ``make(namespace)``, copy DGL's weights into ours and run
    both on ``graphs = (dgl graph, bgl graph)`` with equal fresh inputs ``make_inputs()``:
    (args, kwargs).  Outputs, and with ``grads`` input and parameter grads, must agree."""
    torch.manual_seed(seed)
    theirs = make(dglnn)
    ours = make(bglnn)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    results = []
    for layer, graph in ((theirs, graphs[0]), (ours, graphs[1])):
        torch.manual_seed(seed + 1)
        args, kwargs = make_inputs()
        out = outputs(layer(graph, *args, **kwargs))
        gen = torch.Generator().manual_seed(seed + 2)
        loss = sum((o * torch.randn(o.shape, generator=gen)).sum() for o in out if o.requires_grad)
        loss.backward()
        results.append((out, [t.grad for t in leaves((args, kwargs))],
                        {n: p.grad for n, p in layer.named_parameters()}))
    (out_d, grads_d, pgrads_d), (out_b, grads_b, pgrads_b) = results
    assert len(out_d) == len(out_b)
    for a, b in zip(out_d, out_b):
        torch.testing.assert_close(b, a, **TOL)
    if not grads:
        return
    for a, b in zip(grads_d, grads_b):
        torch.testing.assert_close(b, a, **TOL)
    assert pgrads_d.keys() == pgrads_b.keys()
    for name in pgrads_d:
        if pgrads_d[name] is None:
            assert pgrads_b[name] is None or not pgrads_b[name].any(), name
        else:
            torch.testing.assert_close(pgrads_b[name], pgrads_d[name], **TOL, msg=name)


def feat(rows: int, width: int):
    return torch.randn(rows, width).requires_grad_()


def both(build, edges):
    return build.dgl(edges), build.bgl(edges)


@pytest.mark.parametrize("norm,widths", [("both", (6, 4)), ("right", (6, 4)), ("left", (4, 6)), ("none", (4, 6))])
@pytest.mark.parametrize("where", ["block", "graph"])
def test_graphconv(build, block_edges, graph_edges, norm, widths, where):
    """Both sides of the width rule (W before or after aggregation)."""
    edges = block_edges if where == "block" else graph_edges
    check_same(lambda nn: nn.GraphConv(*widths, norm=norm, allow_zero_in_degree=True, activation=torch.tanh),
               both(build, edges), lambda: ((feat(edges.num_src, widths[0]),), {}))


def test_graphconv_edge_weight_and_pair_input(build, block_edges):
    e = block_edges
    check_same(lambda nn: nn.GraphConv(5, 3, norm="both", allow_zero_in_degree=True), both(build, e),
               lambda: (((feat(e.num_src, 5), feat(e.num_dst, 5)),),
                        {"edge_weight": torch.rand(e.src.shape[0]).add(0.1).requires_grad_()}))


def test_graphconv_external_weight(build, graph_edges):
    e = graph_edges
    check_same(lambda nn: nn.GraphConv(5, 3, weight=False, allow_zero_in_degree=True), both(build, e),
               lambda: ((feat(e.num_src, 5),), {"weight": torch.randn(5, 3).requires_grad_()}))


@pytest.mark.parametrize("norm", ["both", "right", "left", "none"])
@pytest.mark.parametrize("where", ["block", "graph"])
def test_edge_weight_norm(build, block_edges, graph_edges, norm, where):
    e = block_edges if where == "block" else graph_edges
    check_same(lambda nn: nn.EdgeWeightNorm(norm=norm, eps=0.01), both(build, e),
               lambda: ((torch.rand(e.src.shape[0]).add(0.1).requires_grad_(),), {}))


@pytest.mark.parametrize("aggregator,widths", [("mean", (6, 4)), ("mean", (4, 6)), ("gcn", (6, 4)), ("gcn", (4, 6)),
                                               ("pool", (6, 4)), ("lstm", (4, 6))])
def test_sageconv_block(build, block_edges, aggregator, widths):
    e = block_edges
    check_same(lambda nn: nn.SAGEConv(widths[0], widths[1], aggregator, activation=torch.relu), both(build, e),
               lambda: ((feat(e.num_src, widths[0]),), {}))


@pytest.mark.parametrize("aggregator", ["mean", "gcn", "pool", "lstm"])
def test_sageconv_graph_edge_weight(build, graph_edges, aggregator):
    e = graph_edges
    check_same(lambda nn: nn.SAGEConv(4, 5, aggregator, bias=aggregator != "pool"), both(build, e),
               lambda: ((feat(e.num_src, 4),), {"edge_weight": torch.rand(e.src.shape[0]).requires_grad_()}))


@pytest.mark.parametrize("aggregator", ["mean", "pool"])
def test_sageconv_pair_widths(build, block_edges, aggregator):
    e = block_edges
    check_same(lambda nn: nn.SAGEConv((6, 3), 4, aggregator), both(build, e),
               lambda: (((feat(e.num_src, 6), feat(e.num_dst, 3)),), {}))


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("widths", [(6, 2), (4, 2)])  # 4 -> 2 x 2 heads: residual is the identity
def test_gatconv(build, block_edges, residual, widths):
    e = block_edges
    check_same(lambda nn: nn.GATConv(widths[0], widths[1], num_heads=2, residual=residual, negative_slope=0.1,
                                     activation=torch.nn.functional.elu, allow_zero_in_degree=True),
               both(build, e), lambda: ((feat(e.num_src, widths[0]),), {"get_attention": True}))


def test_gatconv_pair_and_edge_weight(build, graph_edges):
    e = graph_edges
    check_same(lambda nn: nn.GATConv((5, 3), 4, num_heads=3, residual=True, bias=False,
                                     allow_zero_in_degree=True),
               both(build, e), lambda: (((feat(e.num_src, 5), feat(e.num_dst, 3)),),
                                        {"edge_weight": torch.rand(e.src.shape[0]).requires_grad_()}))


@pytest.mark.parametrize("share_weights", [False, True])
@pytest.mark.parametrize("residual", [False, True])
def test_gatv2conv(build, block_edges, share_weights, residual):
    e = block_edges
    check_same(lambda nn: nn.GATv2Conv(5, 3, num_heads=2, residual=residual, share_weights=share_weights,
                                       allow_zero_in_degree=True),
               both(build, e), lambda: ((feat(e.num_src, 5),), {"get_attention": True}))


def test_gatv2conv_pair(build, graph_edges):
    e = graph_edges
    check_same(lambda nn: nn.GATv2Conv((5, 6), 3, num_heads=2, residual=True, bias=False,
                                       allow_zero_in_degree=True),
               both(build, e), lambda: (((feat(e.num_src, 5), feat(e.num_dst, 6)),), {}))


@pytest.mark.parametrize("learn_eps", [True, False])  # False: bgl's one-pass (1 + eps) * x + h
@pytest.mark.parametrize("aggregator", ["sum", "max", "mean"])
@pytest.mark.parametrize("where", ["block", "graph"])
def test_ginconv(build, block_edges, graph_edges, aggregator, where, learn_eps):
    e = block_edges if where == "block" else graph_edges
    check_same(lambda nn: nn.GINConv(torch.nn.Linear(4, 3), aggregator, init_eps=0.1, learn_eps=learn_eps),
               both(build, e), lambda: ((feat(e.num_src, 4),),
                                        {"edge_weight": torch.rand(e.src.shape[0]).requires_grad_()}))


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("bdd", 2)])
@pytest.mark.parametrize("extras", [dict(), dict(self_loop=False, bias=False, layer_norm=True)])
def test_relgraphconv(build, block_edges, regularizer, num_bases, extras):
    e = block_edges
    num_edges = e.src.shape[0]

    def inputs():
        etypes = torch.randint(0, 3, (num_edges,))
        return (feat(e.num_src, 6), etypes), {"norm": torch.rand(num_edges, 1).requires_grad_()}

    check_same(lambda nn: nn.RelGraphConv(6, 4, 3, regularizer=regularizer, num_bases=num_bases, **extras),
               both(build, e), inputs)


def test_relgraphconv_presorted(build, graph_edges):
    e = graph_edges
    etypes = torch.randint(0, 4, (e.src.shape[0],)).sort().values  # edges "sorted by type"
    check_same(lambda nn: nn.RelGraphConv(5, 4, 4, regularizer="basis", num_bases=3), both(build, e),
               lambda: ((feat(e.num_src, 5), etypes), {"presorted": True}))


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("bdd", 2)])
@pytest.mark.parametrize("presorted", [False, True])
def test_relgraphconv_in_chunks(build, block_edges, monkeypatch, regularizer, num_bases, presorted):
    """Chunks of 3 rows (so a type's edges span several, and chunks end inside a type): still DGL's
    outputs and gradients, the norm's included."""
    from bgl.dgl.nn import typed_matmul

    monkeypatch.setattr(typed_matmul, "CHUNK_ELEMENTS", 3 * 6)
    e = block_edges
    etypes = torch.randint(0, 3, (e.src.shape[0],), generator=torch.Generator().manual_seed(5))
    if presorted:
        etypes = etypes.sort().values
    check_same(lambda nn: nn.RelGraphConv(6, 4, 3, regularizer=regularizer, num_bases=num_bases),
               both(build, e), lambda: ((feat(e.num_src, 6), etypes),
                                        {"norm": torch.rand(e.src.shape[0], 1).requires_grad_(),
                                         "presorted": presorted}))


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("bdd", 3)])
@pytest.mark.parametrize("sorted_by_type", [False, True])
def test_typed_linear(monkeypatch, regularizer, num_bases, sorted_by_type):
    """``TypedLinear`` alone (DGL's gather_mm / segment_mm / per-row bmm), in chunks of 4 rows."""
    from bgl.dgl.nn import typed_matmul

    monkeypatch.setattr(typed_matmul, "CHUNK_ELEMENTS", 4 * 6)
    types = torch.randint(0, 4, (23,), generator=torch.Generator().manual_seed(3))
    if sorted_by_type:
        types = types.sort().values
    layers = []
    for nn in (dglnn, bglnn):
        torch.manual_seed(0)
        layers.append(nn.TypedLinear(6, 6, 4, regularizer=regularizer, num_bases=num_bases))
    layers[1].load_state_dict(layers[0].state_dict(), strict=True)
    x = torch.randn(23, 6)
    weights = torch.randn(23, 6)
    results = []
    for layer in layers:
        leaf = x.clone().requires_grad_()
        out = layer(leaf, types, sorted_by_type)
        (out * weights).sum().backward()
        results.append((out, leaf.grad, {n: p.grad for n, p in layer.named_parameters()}))
    (out_d, grad_d, params_d), (out_b, grad_b, params_b) = results
    torch.testing.assert_close(out_b, out_d, **TOL)
    torch.testing.assert_close(grad_b, grad_d, **TOL)
    for name in params_d:
        torch.testing.assert_close(params_b[name], params_d[name], **TOL, msg=name)


@pytest.mark.parametrize("aggregate", ["sum", "mean", "max", "stack"])
def test_hetero_graphconv_typed_block(build, aggregate):
    sizes = build.typed_sizes

    def make(nn):
        return nn.HeteroGraphConv({"follows": nn.GraphConv(4, 3), "buys": nn.SAGEConv((4, 5), 3, "mean"),
                                   "bought-by": nn.SAGEConv((5, 4), 3, "pool")}, aggregate=aggregate)

    def inputs():
        return ({"user": feat(sizes["user"][0], 4), "item": feat(sizes["item"][0], 5)},), {}

    check_same(make, (build.typed_block(dgl, 3), build.typed_block(bgl.dgl, 3)), inputs)


def test_hetero_graphconv_mod_kwargs_and_canonical_keys(build):
    sizes = build.typed_sizes

    def make(nn):
        return nn.HeteroGraphConv({("user", "follows", "user"): nn.GraphConv(4, 3, norm="right"),
                                   "buys": nn.GraphConv(4, 3), "bought-by": nn.GraphConv(5, 3)})

    def inputs():
        user, item = feat(sizes["user"][0], 4), feat(sizes["item"][0], 5)
        weights = {"buys": {"edge_weight": torch.rand(50).requires_grad_()}}
        return ((({"user": user, "item": item}, {"user": user[:sizes["user"][1]], "item": item[:sizes["item"][1]]}),),
                {"mod_kwargs": weights})

    check_same(make, (build.typed_block(dgl, 4), build.typed_block(bgl.dgl, 4)), inputs)


@pytest.mark.parametrize("make", [lambda nn: nn.GraphConv(4, 3), lambda nn: nn.GATConv(4, 3, 2),
                                  lambda nn: nn.GATv2Conv(4, 3, 2)])
def test_zero_in_degree_refused_as_dgl_does(build, block_edges, make):
    e = block_edges
    x = torch.randn(e.num_src, 4)
    with pytest.raises(dgl.DGLError) as theirs:
        make(dglnn)(build.dgl(e), x)
    with pytest.raises(bgl.dgl.DGLError) as ours:
        make(bglnn)(build.bgl(e), x)
    assert str(ours.value) == str(theirs.value)


def test_dgl_saved_state_dict_loads(build, block_edges, tmp_path):
    e = block_edges
    torch.manual_seed(5)
    theirs = dglnn.GATConv(4, 3, num_heads=2, residual=True, allow_zero_in_degree=True)
    torch.save(theirs.state_dict(), tmp_path / "gat.pt")
    ours = bglnn.GATConv(4, 3, num_heads=2, residual=True, allow_zero_in_degree=True)
    ours.load_state_dict(torch.load(tmp_path / "gat.pt"))
    x = torch.randn(e.num_src, 4)
    torch.testing.assert_close(ours(build.bgl(e), x), theirs(build.dgl(e), x), **TOL)


@pytest.mark.parametrize("make", [
    lambda nn: nn.GraphConv(16, 8), lambda nn: nn.SAGEConv(16, 8, "pool"), lambda nn: nn.GATConv(16, 8, 4),
    lambda nn: nn.GATv2Conv(16, 8, 4, residual=True), lambda nn: nn.RelGraphConv(16, 8, 5, "basis", 2),
    lambda nn: nn.RelGraphConv(16, 8, 5, "bdd", 4)])
def test_initialisation_matches_dgl_in_distribution(make):
    """Same init scheme: each parameter's mean/std agree with DGL's over a few seeds."""
    stats = {}
    for nn in (dglnn, bglnn):
        torch.manual_seed(11)
        values = {}
        for _ in range(20):
            for name, p in make(nn).named_parameters():
                values.setdefault(name, []).append(p.detach().flatten())
        stats[nn] = {name: (torch.cat(v).mean().item(), torch.cat(v).std().item()) for name, v in values.items()}
    assert stats[dglnn].keys() == stats[bglnn].keys()
    for name, (mean, std) in stats[dglnn].items():
        ours_mean, ours_std = stats[bglnn][name]
        assert abs(ours_mean - mean) < 0.05 + 0.1 * std and abs(ours_std - std) <= 0.1 * std + 1e-6, name


def test_hetero_graphconv_on_a_heterograph(build):
    """A (non-block) heterograph with one feature dict; GAT outputs stacked per dst type."""
    sizes = {"user": 30, "item": 20}
    torch.manual_seed(7)
    relations = {("user", "follows", "user"): (torch.randint(0, 30, (60,)), torch.randint(0, 28, (60,))),
                 ("user", "buys", "item"): (torch.randint(0, 30, (40,)), torch.randint(0, 19, (40,))),
                 ("item", "bought-by", "user"): (torch.randint(0, 20, (40,)), torch.randint(0, 28, (40,)))}

    def make(nn):
        return nn.HeteroGraphConv({"follows": nn.GATConv(4, 3, 2), "buys": nn.GATConv((4, 5), 3, 2),
                                   "bought-by": nn.GATConv((5, 4), 3, 2)}, aggregate="stack")

    graphs = (dgl.heterograph(relations, num_nodes_dict=sizes), bgl.dgl.heterograph(relations, num_nodes_dict=sizes))
    check_same(make, graphs, lambda: (({"user": feat(30, 4), "item": feat(20, 5)},), {}))


EMPTY_SHAPES = {"no-edges": (5, 3, True), "no-dst": (4, 0, True), "graph-no-edges": (5, 5, False)}
EMPTY_LAYERS = {
    "graphconv": lambda nn: nn.GraphConv(6, 4, allow_zero_in_degree=True),
    "graphconv-refuses": lambda nn: nn.GraphConv(6, 4),
    "graphconv-right-wide": lambda nn: nn.GraphConv(6, 8, norm="right", allow_zero_in_degree=True),
    "sage-mean": lambda nn: nn.SAGEConv(6, 6, "mean"), "sage-gcn": lambda nn: nn.SAGEConv(6, 6, "gcn"),
    "sage-lstm": lambda nn: nn.SAGEConv(6, 4, "lstm"),
    "gat": lambda nn: nn.GATConv(6, 2, 2, residual=True, allow_zero_in_degree=True),
    "gat-refuses": lambda nn: nn.GATConv(6, 2, 2),
    "gatv2": lambda nn: nn.GATv2Conv(6, 2, 2, residual=True, allow_zero_in_degree=True),
    "gin-sum": lambda nn: nn.GINConv(torch.nn.Linear(6, 3), "sum", learn_eps=True),
    "gin-mean": lambda nn: nn.GINConv(None, "mean"),
    "relgraphconv": lambda nn: nn.RelGraphConv(6, 4, 3, "basis", 2, layer_norm=True),
}
# max reducers: DGL's max backward with no edges sends each dst row's gradient to src row 0 (its
# argmax default), which no input influenced; outputs are compared, gradients checked to be zero
EMPTY_MAX_LAYERS = {"sage-pool": lambda nn: nn.SAGEConv(6, 4, "pool"), "gin-max": lambda nn: nn.GINConv(None, "max")}


def empty_edges(build, shape: str):
    num_src, num_dst, block = EMPTY_SHAPES[shape]
    zero = torch.zeros(0, dtype=torch.int64)
    return type(build.random_edges(0, 5, 3, 1, True))(zero, zero, num_src, num_dst, block)


def empty_inputs(make, e):
    if make is EMPTY_LAYERS["relgraphconv"]:
        return lambda: ((feat(e.num_src, 6), torch.zeros(0, dtype=torch.int64)), {})
    return lambda: ((feat(e.num_src, 6),), {})


@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("layer", EMPTY_LAYERS)
def test_layers_without_edges(build, layer, shape):
    """No edge at all (a sampled block whose seeds have no neighbours) or no dst node: each dst row is
    its self term (or bias) alone, or the layer refuses it with DGL's own message."""
    e, make = empty_edges(build, shape), EMPTY_LAYERS[layer]
    graphs = both(build, e)
    torch.manual_seed(0)
    try:
        make(dglnn)(graphs[0], *empty_inputs(make, e)()[0])
    except dgl.DGLError as theirs:
        with pytest.raises(bgl.dgl.DGLError) as ours:
            make(bglnn)(graphs[1], *empty_inputs(make, e)()[0])
        assert str(ours.value) == str(theirs)
        return
    except RuntimeError as theirs:
        # DGL 2.1's GAT layers fail on 0 dst nodes (a reshape of 0 rows to [0, -1, F]); ours answer
        # the empty output of the shape DGL gives with dst nodes
        assert "reshape" in str(theirs) and e.num_dst == 0 and layer.startswith("gat")
        out = make(bglnn)(graphs[1], *empty_inputs(make, e)()[0])
        assert out.shape == (0, 2, 2)
        return
    check_same(make, graphs, empty_inputs(make, e))


@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("layer", EMPTY_MAX_LAYERS)
def test_max_layers_without_edges(build, layer, shape):
    e, make = empty_edges(build, shape), EMPTY_MAX_LAYERS[layer]
    check_same(make, both(build, e), lambda: ((feat(e.num_src, 6),), {}), grads=False)
    x = feat(e.num_src, 6)
    make(bglnn)(build.bgl(e), x).sum().backward()
    assert x.grad is None or not x.grad[e.num_dst:].any()  # src rows beyond the dst prefix reach no output


def test_edge_weight_norm_without_edges(build):
    e = empty_edges(build, "no-edges")
    check_same(lambda nn: nn.EdgeWeightNorm(norm="both"), both(build, e),
               lambda: ((torch.rand(0).requires_grad_(),), {}))


def test_hetero_graphconv_with_an_edgeless_relation(build):
    """One relation of a typed block without edges (its dst type still gets the other relations')."""
    sizes = build.typed_sizes

    def block(module):
        edges = build.typed_edges(5)
        edges[("user", "buys", "item")] = (torch.zeros(0, dtype=torch.int64),) * 2
        return module.create_block(edges, num_src_nodes={k: v[0] for k, v in sizes.items()},
                                   num_dst_nodes={k: v[1] for k, v in sizes.items()})

    def make(nn):
        return nn.HeteroGraphConv({"follows": nn.GraphConv(4, 3, allow_zero_in_degree=True),
                                   "buys": nn.GATConv((4, 5), 3, 1, allow_zero_in_degree=True),
                                   "bought-by": nn.SAGEConv((5, 4), 3, "mean")}, aggregate="sum")

    check_same(make, (block(dgl), block(bgl.dgl)),
               lambda: (({"user": feat(sizes["user"][0], 4), "item": feat(sizes["item"][0], 5)},), {}))


def test_every_dgl_layer_is_built_or_refused_by_name():
    """Each public class of DGL 2.1's dgl.nn.pytorch is here, or named in the refusal list."""
    import inspect

    import dgl.nn.pytorch as dgl_torch_layers

    public = {name for name, obj in vars(dgl_torch_layers).items()
              if inspect.isclass(obj) and not name.startswith("_") and obj.__module__.startswith("dgl.nn")}
    built = {name for name in bglnn.__all__ if name[0].isupper()}
    assert public - built - bglnn.NOT_BUILT == set()
    assert built <= public and bglnn.NOT_BUILT <= public


# ---- fixed propagation (SGConv, APPNPConv): cached propagation, edge dropout's draws, the refusal
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_sgconv(build, graph_edges, k, weighted):
    e = graph_edges
    kwargs = (lambda: {"edge_weight": torch.rand(e.src.shape[0]).add(0.1).requires_grad_()}) if weighted else dict
    check_same(lambda nn: nn.SGConv(5, 3, k=k, allow_zero_in_degree=True, norm=torch.nn.LayerNorm(5)),
               both(build, e), lambda: ((feat(e.num_src, 5),), kwargs()))


def test_sgconv_cached_keeps_the_first_propagation(build, graph_edges):
    e = graph_edges
    graphs = both(build, e)
    torch.manual_seed(0)
    theirs = dglnn.SGConv(4, 2, k=2, cached=True, allow_zero_in_degree=True)
    ours = bglnn.SGConv(4, 2, k=2, cached=True, allow_zero_in_degree=True)
    ours.load_state_dict(theirs.state_dict())
    x, y = torch.randn(e.num_src, 4), torch.randn(e.num_src, 4)
    for layer, g in ((theirs, graphs[0]), (ours, graphs[1])):
        first = layer(g, x)
        assert torch.equal(layer(g, y), first)  # the second input is not propagated
    torch.testing.assert_close(ours(graphs[1], y), theirs(graphs[0], y), atol=1e-5, rtol=1e-5)


def test_sgconv_refuses_zero_in_degree_as_dgl(build, graph_edges):
    graphs = both(build, graph_edges)
    for nn, g in ((dglnn, graphs[0]), (bglnn, graphs[1])):
        with pytest.raises(Exception, match="0-in-degree"):
            nn.SGConv(4, 2)(g, torch.randn(graph_edges.num_src, 4))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("edge_drop", [0.0, 0.3])
def test_appnpconv(build, graph_edges, weighted, edge_drop):
    e = graph_edges
    kwargs = (lambda: {"edge_weight": torch.rand(e.src.shape[0]).add(0.1).requires_grad_()}) if weighted else dict
    check_same(lambda nn: nn.APPNPConv(k=3, alpha=0.1, edge_drop=edge_drop), both(build, e),
               lambda: ((feat(e.num_src, 5),), kwargs()))


@pytest.mark.parametrize("weighted", [False, True])
def test_tagconv(build, graph_edges, weighted):
    e = graph_edges  # a graph: DGL's TAGConv propagates over graph.ndata, several hops
    kwargs = (lambda: {"edge_weight": torch.rand(e.src.shape[0]).add(0.1).requires_grad_()}) if weighted else dict
    check_same(lambda nn: nn.TAGConv(5, 3, k=2, activation=torch.tanh), both(build, e),
               lambda: ((feat(e.num_src, 5),), kwargs()))


@pytest.mark.parametrize("learn_eps", [False, True])
@pytest.mark.parametrize("where", ["graph", "block"])
def test_gineconv(build, graph_edges, block_edges, learn_eps, where):
    e = graph_edges if where == "graph" else block_edges
    check_same(lambda nn: nn.GINEConv(torch.nn.Linear(4, 3), init_eps=0.2, learn_eps=learn_eps), both(build, e),
               lambda: ((feat(e.num_src, 4), feat(e.src.shape[0], 4)), {}))


@pytest.mark.parametrize("where", ["graph", "block"])
@pytest.mark.parametrize("in_size,use_norm,dropout", [(6, False, 0.0), (8, True, 0.2)])
def test_hgtconv(build, graph_edges, block_edges, where, in_size, use_norm, dropout):
    """Node and edge type ids as dgl.to_homogeneous gives them; in_size 6 != 2 x 4 takes the residual map."""
    e = graph_edges if where == "graph" else block_edges
    num_edges = e.src.shape[0]

    def inputs():
        ntype = torch.randint(0, 3, (e.num_src,))
        return (feat(e.num_src, in_size), ntype, torch.randint(0, 4, (num_edges,))), {}

    check_same(lambda nn: nn.HGTConv(in_size, 4, 2, num_ntypes=3, num_etypes=4, dropout=dropout, use_norm=use_norm),
               both(build, e), inputs)


@pytest.mark.parametrize("project,weighted", [(True, False), (False, True)])
def test_gcn2conv(build, graph_edges, project, weighted):
    e = graph_edges
    kwargs = (lambda: {"edge_weight": torch.rand(e.src.shape[0]).add(0.1).requires_grad_()}) if weighted else dict
    check_same(lambda nn: nn.GCN2Conv(5, layer=2, alpha=0.2, lambda_=0.5, project_initial_features=project,
                                      allow_zero_in_degree=True, activation=torch.tanh),
               both(build, e), lambda: ((feat(e.num_src, 5), feat(e.num_src, 5)), kwargs()))


@pytest.mark.parametrize("where", ["graph", "block"])
@pytest.mark.parametrize("pair", [False, True])
def test_dotgatconv(build, graph_edges, block_edges, where, pair):
    e = graph_edges if where == "graph" else block_edges
    widths = (5, 3) if pair else 5
    inputs = (lambda: (((feat(e.num_src, 5), feat(e.num_dst, 3)),), {"get_attention": True})) if pair else \
        (lambda: ((feat(e.num_src, 5),), {"get_attention": True}))
    check_same(lambda nn: nn.DotGatConv(widths, 4, num_heads=2, allow_zero_in_degree=True), both(build, e), inputs)


@pytest.mark.parametrize("k,lambda_max", [(1, None), (2, [1.7]), (4, torch.tensor([2.3]))])
def test_chebconv(build, graph_edges, k, lambda_max):
    e = graph_edges
    with pytest.warns(UserWarning) if lambda_max is None else _no_warning():
        check_same(lambda nn: nn.ChebConv(5, 3, k), both(build, e),
                   lambda: ((feat(e.num_src, 5),), {"lambda_max": lambda_max}))


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


@pytest.mark.parametrize("aggregator", ["sum", "mean", "max"])
@pytest.mark.parametrize("where,residual", [("graph", True), ("block", False), ("graph", False)])
def test_nnconv(build, graph_edges, block_edges, aggregator, where, residual):
    e = graph_edges if where == "graph" else block_edges
    check_same(lambda nn: nn.NNConv(4, 3, torch.nn.Linear(2, 12), aggregator, residual=residual), both(build, e),
               lambda: ((feat(e.num_src, 4), feat(e.src.shape[0], 2)), {}))


@pytest.mark.parametrize("batch_norm", [False, True])
@pytest.mark.parametrize("where", ["graph", "block"])
def test_edgeconv(build, graph_edges, block_edges, batch_norm, where):
    e = graph_edges if where == "graph" else block_edges
    check_same(lambda nn: nn.EdgeConv(4, 3, batch_norm=batch_norm, allow_zero_in_degree=True), both(build, e),
               lambda: ((feat(e.num_src, 4),), {}))


@pytest.mark.parametrize("n_etypes,typed", [(1, False), (1, True), (3, True)])
def test_gatedgraphconv(build, graph_edges, n_etypes, typed):
    e = graph_edges
    kinds = torch.randint(0, n_etypes, (e.src.shape[0],), generator=torch.Generator().manual_seed(4))
    check_same(lambda nn: nn.GatedGraphConv(3, 5, 2, n_etypes), both(build, e),
               lambda: ((feat(e.num_src, 3),), {"etypes": kinds} if typed else {}))


@pytest.mark.parametrize("learn_beta", [True, False])
@pytest.mark.parametrize("where", ["graph", "block"])
def test_agnnconv(build, graph_edges, block_edges, learn_beta, where):
    e = graph_edges if where == "graph" else block_edges
    check_same(lambda nn: nn.AGNNConv(0.7, learn_beta=learn_beta, allow_zero_in_degree=True), both(build, e),
               lambda: ((feat(e.num_src, 4),), {}))


def test_sequential_of_layers_on_a_graph_and_on_blocks(build, graph_edges, block_edges):
    e = graph_edges
    check_same(lambda nn: nn.Sequential(nn.GraphConv(4, 5, allow_zero_in_degree=True),
                                        nn.GraphConv(5, 2, allow_zero_in_degree=True)),
               both(build, e), lambda: ((feat(e.num_src, 4),), {}))
    b = block_edges
    inner = build.random_edges(seed=9, num_src=b.num_dst, num_dst=5, num_edges=20, block=True)
    graphs = [build.dgl(b), build.dgl(inner)], [build.bgl(b), build.bgl(inner)]
    check_same(lambda nn: nn.Sequential(nn.SAGEConv(4, 5, "mean"), nn.SAGEConv(5, 2, "mean")), graphs,
               lambda: ((feat(b.num_src, 4),), {}))
