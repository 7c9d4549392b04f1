"""``bgl.dgl`` without DGL (both lanes): message passing against a per-edge brute force, the
frame and ``local_scope`` semantics, bad input, bgl blocks and pair graphs as ``bgl.dgl``
graphs (zero copy), and that the package never imports the real ``dgl``."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import bgl.dgl as dgl
import bgl.dgl.function as fn
from bgl.blocks import Block
from bgl.dgl.ops import edge_map

N, E = 12, 40


def _graph(hub_edges):
    src, dst = hub_edges(N, E, seed=4)
    return dgl.graph((src, dst), num_nodes=N)


def _brute_force(src, dst, msgs, reducer, num_dst):
    """Per-node reduction with a Python loop over nodes (reference only)."""
    rows = []
    for v in range(num_dst):
        mine = msgs[dst == v]
        if mine.shape[0] == 0:
            rows.append(torch.zeros(msgs.shape[1:]))
        elif reducer == "sum":
            rows.append(mine.sum(0))
        elif reducer == "mean":
            rows.append(mine.mean(0))
        elif reducer == "max":
            rows.append(mine.max(0).values)
        else:
            rows.append(mine.min(0).values)
    return torch.stack(rows)


@pytest.mark.parametrize("reducer", ["sum", "mean", "max", "min"])
def test_update_all_matches_a_brute_force(hub_edges, reducer):
    g = _graph(hub_edges)
    x = torch.randn(N, 2, 3, requires_grad=True)
    w = torch.randn(E, 2, 1, requires_grad=True)
    g.ndata["x"], g.edata["w"] = x, w
    g.update_all(fn.u_mul_e("x", "w", "m"), getattr(fn, reducer)("m", "h"))
    src, dst = g.edges()
    want = _brute_force(src, dst, x[src.long()] * w, reducer, N)
    torch.testing.assert_close(g.ndata["h"], want)
    if reducer in ("sum", "mean"):
        gx, gw = torch.autograd.grad(g.ndata["h"].sum(), (x, w))
        wx, ww = torch.autograd.grad(want.sum(), (x, w))
        torch.testing.assert_close(gx, wx)
        torch.testing.assert_close(gw, ww)


def test_chunked_messages_equal_one_chunk(hub_edges, monkeypatch):
    """The edge-chunk loop (16 MiB chunks in use) gives what one chunk gives, values and grads."""
    results = []
    for chunk in (edge_map.CHUNK_ELEMENTS, 7):
        monkeypatch.setattr(edge_map, "CHUNK_ELEMENTS", chunk)
        g = _graph(hub_edges)
        x = torch.linspace(-2, 2, N * 4).view(N, 4).requires_grad_(True)
        y = torch.linspace(1, 3, E * 4).view(E, 4).requires_grad_(True)
        g.ndata["x"], g.edata["y"] = x, y
        g.update_all(fn.u_div_e("x", "y", "m"), fn.max("m", "a"))
        g.update_all(fn.u_add_e("x", "y", "m"), fn.sum("m", "b"))
        g.apply_edges(fn.u_dot_v("x", "x", "s"))
        loss = g.ndata["a"].sum() + g.ndata["b"].pow(2).sum() + g.edata["s"].sum()
        results.append((g.ndata["a"], g.ndata["b"], g.edata["s"], *torch.autograd.grad(loss, (x, y))))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want)


def test_edge_softmax_matches_a_brute_force(hub_edges):
    g = _graph(hub_edges)
    logits = torch.randn(E, 3)
    got = dgl.ops.edge_softmax(g, logits)
    _, dst = g.edges()
    want = torch.empty_like(logits)
    for v in range(N):
        sel = dst == v
        if sel.any():
            want[sel] = torch.softmax(logits[sel], 0)
    torch.testing.assert_close(got, want)


def test_local_scope_keeps_dgl_semantics(hub_edges):
    g = _graph(hub_edges)
    x = torch.zeros(N, 2)
    g.ndata["x"] = x
    with g.local_scope():
        g.ndata["x"] = torch.ones(N, 2)  # replaced inside: restored after
        g.ndata["tmp"] = torch.ones(N)  # new inside: gone after
        g.edata["e"] = torch.ones(E)
        with g.local_scope():
            del g.ndata["tmp"]
        assert "tmp" in g.ndata
    assert g.ndata["x"] is x and "tmp" not in g.ndata and "e" not in g.edata
    with g.local_scope():
        g.ndata["x"][0, 0] = 5.0  # an in-place edit stays, as in DGL
    assert x[0, 0] == 5.0


def test_relation_slices_and_views_share_frames():
    g = dgl.heterograph({("user", "buys", "item"): ([0, 1, 2], [0, 0, 1]),
                         ("user", "follows", "user"): ([0, 1], [1, 2])})
    g.nodes["user"].data["h"] = torch.arange(3.0)
    sub = g["buys"]
    assert sub.srctypes == ["user"] and sub.dsttypes == ["item"]
    sub.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
    assert torch.equal(g.nodes["item"].data["s"], torch.tensor([1.0, 2.0]))
    assert set(g.ndata["h"]) == {"user"}
    g.ndata["z"] = {"item": torch.ones(2)}
    assert torch.equal(g.nodes["item"].data["z"], torch.ones(2))
    with pytest.raises(dgl.DGLError, match="multiple node types"):
        g.ndata["bad"] = torch.ones(3)


def test_rows_write_through_a_node_subset(hub_edges):
    g = _graph(hub_edges)
    g.nodes[torch.tensor([1, 3])].data["h"] = torch.ones(2, 2)
    assert g.ndata["h"].shape == (N, 2) and g.ndata["h"].sum() == 4


BAD = {
    "feature rows": (lambda g: g.ndata.__setitem__("x", torch.ones(N + 1)), "match number of nodes"),
    "edge rows": (lambda g: g.edata.__setitem__("x", torch.ones(3)), "match number of edges"),
    "unknown node type": (lambda g: g.nodes["paper"], 'Node type "paper"'),
    "unknown edge type": (lambda g: g.edges["cites"], 'Edge type "cites"'),
    "node id range": (lambda g: g.in_degrees(torch.tensor([N])), f"[0, {N})"),
    "edge id range": (lambda g: g.find_edges(E + 3), f"[0, {E})"),
    "no such edge": (lambda g: g.edge_ids(N - 1, N - 1), "non-existing edge"),
    "broadcast": (lambda g: dgl.ops.u_add_v(g, torch.ones(N, 3), torch.ones(N, 4)), "not valid for broadcasting"),
    "dot": (lambda g: dgl.ops.u_dot_v(g, torch.ones(N, 3), torch.ones(N, 4)), "same size on last dimension"),
    "operand rows": (lambda g: dgl.ops.copy_u_sum(g, torch.ones(N - 1, 2)), "rows"),
    "missing field": (lambda g: g.update_all(fn.copy_u("nope", "m"), fn.sum("m", "h")), "'nope'"),
    "norm_by": (lambda g: dgl.ops.edge_softmax(g, torch.ones(E), norm_by="both"), "norm_by"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_naming_it(hub_edges, case):
    call, words = BAD[case]
    with pytest.raises(dgl.DGLError) as info:
        call(_graph(hub_edges))
    assert words in str(info.value) and "\n" not in str(info.value)


def test_graph_construction_errors():
    with pytest.raises(dgl.DGLError, match="same length"):
        dgl.graph(([0, 1], [1]))
    with pytest.raises(dgl.DGLError, match="larger than the max ID"):
        dgl.graph(([0, 5], [1, 2]), num_nodes=3)
    with pytest.raises(dgl.DGLError, match="non-negative"):
        dgl.graph(([0, -1], [1, 2]))
    with pytest.raises(dgl.DGLError, match="int32 or torch.int64"):
        dgl.graph(([0], [1]), idtype=torch.float32)


def test_what_bgl_dgl_lacks_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="dgl.graphbolt.*bgl.DataLoader"):
        dgl.graphbolt
    assert not hasattr(dgl, "graphbolt")  # also an AttributeError: hasattr and from-imports work
    with pytest.raises(NotImplementedError, match="dgl.sampling.sample_neighbors_fused"):
        dgl.sampling.sample_neighbors_fused
    from bgl.dgl import function  # noqa: F401
    with pytest.raises(NotImplementedError, match="return_uv"):
        dgl.graph(([0], [1])).edge_ids(0, 1, return_uv=True)


def test_old_builtin_aliases_are_the_new_ones(hub_edges):
    outs = []
    for msg in (fn.src_mul_edge("x", "w", "m"), fn.u_mul_e("x", "w", "m")):
        g = _graph(hub_edges)
        g.ndata["x"], g.edata["w"] = torch.ones(N, 2), torch.arange(E, dtype=torch.float32)
        g.update_all(msg, fn.sum("m", "h"))
        outs.append(g.ndata["h"])
    torch.testing.assert_close(*outs)
    assert fn.copy_src("x", "m").name == "copy_u" and fn.copy_edge("x", "m").name == "copy_e"


def test_a_bgl_block_becomes_a_block_without_copies():
    indptr, indices = torch.tensor([0, 2, 2, 5]), torch.tensor([3, 4, 0, 1, 4])
    core = Block(torch.tensor([10, 20, 30, 40, 50]), 3, indptr, indices, edge_ids=torch.tensor([7, 8, 9, 10, 11]),
                 srcdata={"feat": torch.arange(5.0).unsqueeze(1)}, dstdata={"label": torch.tensor([0, 1, 2])})
    b = dgl.block_from_bgl(core)
    assert b.is_block and (b.num_src_nodes(), b.num_dst_nodes(), b.num_edges()) == (5, 3, 5)
    assert b.srcdata["feat"] is core.srcdata["feat"] and b.dstdata["label"] is core.dstdata["label"]
    assert torch.equal(b.srcdata[dgl.NID], core.src_ids) and torch.equal(b.edata[dgl.EID], core.edge_ids)
    csc = b._relation(None).csc()
    assert csc.indptr.data_ptr() == indptr.data_ptr() and csc.indices.data_ptr() == indices.data_ptr()
    b.update_all(fn.copy_u("feat", "m"), fn.sum("m", "h"))
    assert torch.equal(b.dstdata["h"], torch.tensor([[7.0], [0.0], [5.0]]))
    assert b.formats()["created"] == ["csc"]  # the COO is built only when asked for
    assert torch.equal(b.edges()[1], torch.tensor([0, 0, 2, 2, 2]))


def test_a_typed_bgl_block_becomes_a_typed_block():
    from bgl.schema import EdgeType, GraphSchema, NodeType

    schema = GraphSchema((NodeType("user", 0, 10), NodeType("item", 10, 5)),
                         (EdgeType("user", "buys", "item"), EdgeType("user", "follows", "user")))
    # src: user 0, item 10, user 1, item 11, user 2; dst: user 0, item 10
    core = Block(torch.tensor([0, 10, 1, 11, 2]), 2, torch.tensor([0, 2, 4]), torch.tensor([2, 4, 0, 4]),
                 etypes=torch.tensor([1, 1, 0, 0]), schema=schema,
                 srcdata={"x": {"user": torch.tensor([1.0, 2.0, 4.0]), "item": torch.zeros(2)}})
    b = dgl.block_from_bgl(core)
    assert b.srctypes == ["item", "user"] and b.num_src_nodes("user") == 3 and b.num_dst_nodes("item") == 1
    assert torch.equal(b.srcnodes["item"].data[dgl.NID], torch.tensor([0, 1]))
    assert torch.equal(b.edges(etype="follows")[0], torch.tensor([1, 2]))
    assert torch.equal(b.edges(etype="buys")[0], torch.tensor([0, 2]))
    b.update_all(fn.copy_u("x", "m"), fn.sum("m", "h"))
    assert torch.equal(b.dstnodes["user"].data["h"], torch.tensor([6.0]))
    assert torch.equal(b.dstnodes["item"].data["h"], torch.tensor([5.0]))


def test_a_pair_graph_scores_with_u_dot_v():
    from bgl.loader.seeds.edges import PairGraph

    pair = PairGraph(torch.tensor([0, 1]), torch.tensor([2, 2]), torch.tensor([5, 6, 7]), torch.tensor([3, 4]))
    g = dgl.graph_from_pair(pair)
    g.ndata["h"] = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])
    g.apply_edges(fn.u_dot_v("h", "h", "score"))
    assert torch.equal(g.edata["score"], torch.tensor([[3.0], [8.0]]))
    assert torch.equal(g.edata[dgl.EID], torch.tensor([3, 4]))


def test_bgl_dgl_never_imports_dgl():
    code = ("import sys; sys.modules['dgl'] = None\n"
            "import torch, bgl.dgl as dgl, bgl.dgl.function as fn\n"
            "g = dgl.graph(([0, 1], [1, 2])); g.ndata['x'] = torch.ones(3, 2)\n"
            "g.update_all(fn.copy_u('x', 'm'), fn.sum('m', 'h'))\n"
            "assert g.ndata['h'].sum() == 4\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DGLBACKEND": "pytorch"})
    assert done.returncode == 0, done.stderr[-2000:]


def test_cpu_kernels_equal_the_torch_path_a_gpu_takes(hub_edges, monkeypatch):
    """The numba kernels (CPU) and the torch ops (the GPU path, run here on the CPU) agree."""
    from bgl.dgl.ops import cpu_rows

    monkeypatch.setattr(cpu_rows, "SPLIT_EDGES", 8)  # several row ranges on the thread pool
    results = []
    for kernels in (True, False):
        monkeypatch.setattr(cpu_rows, "USE_KERNELS", kernels)
        src, dst = hub_edges(N, E, seed=6, num_dst=5)
        b = dgl.create_block((src, dst), num_src_nodes=N, num_dst_nodes=5)
        x = torch.linspace(-3, 3, N * 6).view(N, 2, 3).requires_grad_(True)
        a = torch.linspace(0.5, 2, E * 2).view(E, 2, 1).requires_grad_(True)
        b.srcdata["x"], b.edata["a"] = x, a
        b.update_all(fn.u_mul_e("x", "a", "m"), fn.sum("m", "s"))
        b.update_all(fn.u_mul_e("x", "a", "m"), fn.mean("m", "me"))
        b.update_all(fn.copy_u("x", "m"), fn.max("m", "mx"))
        b.update_all(fn.copy_e("a", "m"), fn.min("m", "mn"))
        soft = dgl.ops.edge_softmax(b, a * 3)
        y = torch.linspace(-1, 2, 5 * 6).view(5, 2, 3).requires_grad_(True)
        b.dstdata["y"] = y
        b.apply_edges(fn.u_add_v("x", "y", "uv"))
        b.apply_edges(fn.e_dot_v("uv", "y", "d"))
        loss = (b.dstdata["s"].pow(2).sum() + b.dstdata["me"].pow(2).sum() + b.dstdata["mx"].sum() + b.dstdata["mn"].sum()
                + (soft * torch.arange(E * 2.0).view(E, 2, 1)).sum() + b.edata["d"].pow(2).sum())
        results.append((b.dstdata["s"], b.dstdata["me"], b.dstdata["mx"], b.dstdata["mn"], soft, b.edata["d"],
                        *torch.autograd.grad(loss, (x, a, y))))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_take_the_torch_path(hub_edges, dtype):
    outs = []
    for dt in (torch.float32, dtype):
        g = _graph(hub_edges)
        g.ndata["x"] = torch.linspace(-1, 1, N * 2).view(N, 2).to(dt)
        g.edata["w"] = torch.linspace(0, 1, E).to(dt)
        g.update_all(fn.u_mul_e("x", "w", "m"), fn.sum("m", "s"))
        g.update_all(fn.copy_u("x", "m"), fn.max("m", "mx"))
        outs.append((g.ndata["s"], g.ndata["mx"], dgl.ops.edge_softmax(g, g.edata["w"])))
    for want, got in zip(*outs):
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), want, atol=0.05, rtol=0.05)


def test_bgl_ingest_takes_a_bgl_dgl_graph(hub_edges, tmp_path):
    import bgl

    g = _graph(hub_edges)
    g.ndata["feat"] = torch.randn(N, 3)
    store = bgl.ingest(g, tmp_path / "store")
    assert store.num_nodes == N and 0 < store.num_edges <= E


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # the point
def test_kernels_run_in_a_forked_child_after_the_parent_used_them(hub_edges, monkeypatch):
    import multiprocessing as mp

    from bgl.dgl.ops import cpu_rows

    monkeypatch.setattr(cpu_rows, "SPLIT_EDGES", 4)  # the parent starts its thread pool
    g = _graph(hub_edges)
    g.ndata["x"] = torch.ones(N, 2)
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "h"))
    ctx = mp.get_context("fork")
    child = ctx.Process(target=_child_update_all, args=(g,))
    child.start()
    child.join(60)
    if child.is_alive():  # a hung kernel pool: do not leave the child behind
        child.kill()
        child.join()
    assert child.exitcode == 0


def _child_update_all(g):
    g.update_all(fn.copy_u("x", "m"), fn.sum("m", "h2"))
    raise SystemExit(0 if torch.equal(g.ndata["h2"], g.ndata["h"]) else 1)


def test_to_and_idtype_keep_types_frames_and_sides():
    g = dgl.heterograph({("user", "buys", "item"): ([0, 1, 2], [0, 0, 1]),
                         ("user", "follows", "user"): ([0, 1], [1, 2])})
    g.nodes["user"].data["h"] = torch.arange(3.0)
    for other in (g.to("cpu"), g.int(), g["buys"].to("cpu")):
        assert other.nodes["user"].data["h"].tolist() == [0.0, 1.0, 2.0]
    assert g.int().idtype == torch.int32 and g.int().edges(etype="buys")[0].dtype == torch.int32
    sliced = g["buys"].int()
    assert sliced.srctypes == ["user"] and sliced.dsttypes == ["item"]
    b = dgl.create_block(([0, 1], [0, 0]), num_src_nodes=3, num_dst_nodes=1)
    b.srcdata["x"] = torch.ones(3)
    moved = b.to("cpu").long()
    assert moved.is_block and moved.num_src_nodes() == 3 and torch.equal(moved.srcdata["x"], torch.ones(3))


@pytest.mark.parametrize("kernels", [True, False], ids=["cpu-kernel", "torch-path"])
def test_a_bgl_block_with_int32_indices(kernels, monkeypatch):
    from bgl.dgl.ops import cpu_rows

    monkeypatch.setattr(cpu_rows, "USE_KERNELS", kernels)
    core = Block(torch.tensor([10, 20, 30]), 2, torch.tensor([0, 2, 3]), torch.tensor([1, 2, 0], dtype=torch.int32),
                 srcdata={"x": torch.tensor([[1.0], [2.0], [4.0]], requires_grad=True)})
    b = dgl.block_from_bgl(core)
    b.update_all(fn.copy_u("x", "m"), fn.sum("m", "h"))
    b.dstdata["h"].sum().backward()
    assert torch.equal(b.dstdata["h"], torch.tensor([[6.0], [1.0]]))
    assert torch.equal(core.srcdata["x"].grad, torch.tensor([[1.0], [1.0], [1.0]]))


def test_a_random_typed_bgl_block_has_the_relations_of_relation_blocks():
    """Against the core's own per-relation split (:func:`bgl.blocks.relation_blocks`)."""
    from bgl.blocks import relation_blocks
    from bgl.schema import EdgeType, GraphSchema, NodeType

    gen = torch.Generator().manual_seed(5)
    schema = GraphSchema((NodeType("a", 0, 50), NodeType("b", 50, 30)),
                         (EdgeType("a", "r0", "a"), EdgeType("b", "r1", "a"), EdgeType("a", "r2", "b")))
    rest = [i for i in torch.randperm(80, generator=gen).tolist() if i not in (3, 60, 7, 51)][:20]
    src_ids = torch.tensor([3, 60, 7, 51] + rest)  # dst nodes first, every id once
    num_dst, ends = 4, torch.tensor([[0, 0], [1, 0], [0, 1]])  # (src type, dst type) of each relation
    src_type = (src_ids >= 50).long()
    indptr, indices, etypes = [0], [], []
    for v in range(num_dst):
        for r in range(3):
            if int(ends[r, 1]) != int(src_type[v]):
                continue
            cands = (src_type == ends[r, 0]).nonzero().view(-1)
            picked = cands[torch.randint(0, cands.shape[0], (int(torch.randint(0, 4, (1,), generator=gen)),),
                                         generator=gen)]
            indices.extend(picked.tolist())
            etypes.extend([r] * picked.shape[0])
        indptr.append(len(indices))
    core = Block(src_ids, num_dst, torch.tensor(indptr), torch.tensor(indices, dtype=torch.int64),
                 etypes=torch.tensor(etypes), schema=schema)
    b = dgl.block_from_bgl(core)
    for cet, part in relation_blocks(core).items():
        csc = b._relation(tuple(cet)).csc()
        assert torch.equal(csc.indptr, part.indptr) and torch.equal(csc.indices, part.indices), cet


def test_graph_edits_change_the_graph_itself_and_module_functions_a_copy(hub_edges):
    """DGL's ``g.remove_edges(eids)`` / ``add_edges`` / ``add_nodes`` / ``remove_nodes`` edit ``g`` and return
    None (a script goes on with ``g``); ``dgl.remove_edges(g, ...)`` and the like return an edited copy."""
    g = _graph(hub_edges)
    g.edata["w"] = torch.arange(E, dtype=torch.float32)
    src, dst = g.edges()
    copy = dgl.remove_edges(g, torch.tensor([0, 1]))
    assert copy.num_edges() == E - 2 and g.num_edges() == E
    assert g.remove_edges(torch.tensor([0, 1])) is None
    assert g.num_edges() == E - 2
    assert torch.equal(g.edges()[0], src[2:]) and torch.equal(g.edata["w"], torch.arange(2, E, dtype=torch.float32))
    assert g.add_edges(torch.tensor([0]), torch.tensor([N + 1])) is None  # its end node is added too
    assert g.num_nodes() == N + 2 and g.num_edges() == E - 1 and float(g.edata["w"][-1]) == 0.0
    assert g.add_nodes(3) is None and g.num_nodes() == N + 5
    assert g.remove_nodes(torch.tensor([0])) is None
    assert g.num_nodes() == N + 4 and int((g.edges()[0] == -1).sum()) == 0
    assert g.num_edges() == int(((src[2:] != 0) & (dst[2:] != 0)).sum())
    with pytest.raises(dgl.DGLError, match="edge IDs"):
        g.remove_edges(torch.tensor([10_000]))


def test_filters_type_subgraphs_and_local_var(hub_edges):
    """Without DGL (current lane): ``filter_nodes`` / ``filter_edges`` pick by a predicate, a type subgraph
    shares its parent's frames, ``local_var`` does not (the pinned lane checks these against DGL)."""
    g = _graph(hub_edges)
    g.ndata["x"] = torch.arange(N, dtype=torch.float32)
    src, dst = g.edges()
    assert torch.equal(g.filter_nodes(lambda n: n.data["x"] >= 5), torch.arange(5, N))
    assert torch.equal(g.filter_edges(lambda e: e.src["x"] < e.dst["x"]), (src < dst).nonzero().view(-1))
    with pytest.raises(dgl.DGLError, match="1-D tensor"):
        g.filter_nodes(lambda n: True)
    local = g.local_var()
    local.ndata["y"] = torch.ones(N)
    assert "y" not in g.ndata and local.num_edges() == g.num_edges()
    h = dgl.heterograph({("a", "r", "b"): (torch.tensor([0, 1]), torch.tensor([1, 0])),
                         ("b", "s", "c"): (torch.tensor([0]), torch.tensor([0]))})
    sub = dgl.edge_type_subgraph(h, ["r"])
    assert sub.ntypes == ["a", "b"] and sub.canonical_etypes == [("a", "r", "b")]
    sub.nodes["b"].data["z"] = torch.ones(2)
    assert "z" in h.nodes["b"].data
    assert h.node_type_subgraph(["b", "c"]).canonical_etypes == [("b", "s", "c")]
    assert g.is_multigraph == bool(torch.unique(src * N + dst).shape[0] < src.shape[0])


def test_transform_objects_without_dgl():
    """Current lane: DGL's transform objects under both names; AddReverse adds ``rev_`` types, DropEdge edits
    a copy (the pinned lane compares them with DGL's)."""
    import bgl.dgl.transforms as T

    g = dgl.heterograph({("u", "r", "i"): (torch.tensor([0, 1, 1]), torch.tensor([1, 0, 1])),
                         ("u", "f", "u"): (torch.tensor([0, 1]), torch.tensor([1, 1]))})
    g.edges["r"].data["w"] = torch.ones(3)
    out = T.Compose([dgl.AddReverse(copy_edata=True), T.RemoveSelfLoop()])(g)
    assert ("i", "rev_r", "u") in out.canonical_etypes and out.num_edges(("u", "f", "u")) == 2
    assert torch.equal(out.edges[("i", "rev_r", "u")].data["w"], torch.ones(3))
    torch.manual_seed(0)
    dropped = dgl.DropEdge(1.0)(g)
    assert dropped.num_edges("r") == 0 and g.num_edges("r") == 3


def test_dgl_random_seed_is_dgl_seed():
    """``dgl.random.seed(val)`` (DGL's other name of ``dgl.seed``) seeds torch's generator the same way."""
    import random

    import numpy as np

    states = torch.get_rng_state(), np.random.get_state(), random.getstate()
    try:
        dgl.random.seed(11)
        first = torch.rand(3), np.random.rand(), random.random()
        dgl.seed(11)
        assert torch.equal(first[0], torch.rand(3)) and first[1:] == (np.random.rand(), random.random())
    finally:
        torch.set_rng_state(states[0])
        np.random.set_state(states[1])
        random.setstate(states[2])


def test_batches_of_graphs_without_dgl():
    """Current lane: dgl.batch / unbatch round trip, a readout per graph, the pooling layers and
    GraphDataLoader's batches (the pinned lane compares all of it with DGL's)."""
    import bgl.dgl.nn as nn

    graphs = [dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 2])), num_nodes=3),
              dgl.graph((torch.tensor([], dtype=torch.int64), torch.tensor([], dtype=torch.int64)), num_nodes=2)]
    for i, g in enumerate(graphs):
        g.ndata["x"] = torch.full((g.num_nodes(), 2), float(i + 1))
    bg = dgl.batch(graphs)
    assert bg.batch_size == 2 and bg.batch_num_nodes().tolist() == [3, 2] and bg.batch_num_edges().tolist() == [2, 0]
    assert torch.equal(dgl.sum_nodes(bg, "x"), torch.tensor([[3.0, 3.0], [4.0, 4.0]]))
    assert torch.equal(nn.AvgPooling()(bg, bg.ndata["x"]), torch.tensor([[1.0, 1.0], [2.0, 2.0]]))
    back = dgl.unbatch(bg)
    assert [g.num_edges() for g in back] == [2, 0] and torch.equal(back[1].ndata["x"], graphs[1].ndata["x"])
    loaded = next(iter(dgl.dataloading.GraphDataLoader(list(zip(graphs, [0, 1])), batch_size=2)))
    assert loaded[0].batch_size == 2 and loaded[1].tolist() == [0, 1]
    assert dgl.add_self_loop(bg).batch_size == 1  # as DGL's: adding edges drops the batch
    assert dgl.remove_edges(bg, torch.tensor([0])).batch_num_edges().tolist() == [1, 0]


def test_a_refused_edit_changes_nothing(hub_edges):
    """add_edges with a feature of the wrong length adds no node either; remove_edges on a graph of several
    edge types without ``etype`` names the problem (the edges given would be any type's)."""
    g = _graph(hub_edges)
    with pytest.raises(dgl.DGLError, match="number of features"):
        g.add_edges(torch.tensor([0]), torch.tensor([N + 3]), {"w": torch.ones(2)})
    assert g.num_nodes() == N and g.num_edges() == E
    h = dgl.heterograph({("a", "r", "b"): (torch.tensor([0]), torch.tensor([0])),
                         ("b", "s", "a"): (torch.tensor([0]), torch.tensor([0]))})
    with pytest.raises(dgl.DGLError):
        h.remove_edges(torch.tensor([0]))
    assert h.num_edges("r") == 1 and h.num_edges("s") == 1


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_counting_sort_csc_is_the_sorted_one(monkeypatch, dtype):
    """A CPU relation of >= COUNTING_MIN_EDGES edges is grouped by numba's counting sort: the same CSC
    (offsets, other ends, edge ids in edge-id order within a row) as the sort it replaces."""
    from bgl.dgl import relation

    gen = torch.Generator().manual_seed(3)
    n = relation.COUNTING_MIN_EDGES + 123
    rows, cols = torch.randint(0, 700, (n,), generator=gen).to(dtype), torch.randint(0, 900, (n,), generator=gen).to(dtype)
    counted = relation.compress(rows, cols, 700, 900)
    monkeypatch.setattr(relation, "COUNTING_MIN_EDGES", n + 1)
    sorted_ = relation.compress(rows, cols, 700, 900)
    for a, b in ((counted.indptr, sorted_.indptr), (counted.indices, sorted_.indices), (counted.eids, sorted_.eids)):
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_in_out_subgraphs_topk_casts_and_rand_graph_without_dgl():
    """Current lane too (values against DGL: test_selections_vs_dgl.py): the edges each picks, and that
    in_subgraph, which draws nothing, leaves torch's random state as it was."""
    g = dgl.graph((torch.tensor([5, 0, 2, 3, 4, 1, 0]), torch.tensor([0, 1, 1, 2, 2, 3, 0])), num_nodes=7)
    g.edata["w"] = torch.tensor([5.0, 1.0, 2.0, 7.0, 3.0, 4.0, 6.0])
    g.ndata["x"] = torch.arange(7.0)
    state = torch.get_rng_state()
    sub = dgl.in_subgraph(g, torch.tensor([2, 0]))
    assert torch.equal(torch.get_rng_state(), state)
    assert sub.edges()[1].tolist() == [2, 2, 0, 0] and sub.edata[dgl.EID].tolist() == [3, 4, 0, 6]
    assert g.out_subgraph(torch.tensor([0]), relabel_nodes=True).ndata[dgl.NID].tolist() == [0, 1]
    top = dgl.sampling.select_topk(g, 1, "w")
    assert top.edata[dgl.EID].tolist() == [6, 2, 3, 5]  # each node's heaviest in-edge
    half = dgl.to_half(g)
    assert half.ndata["x"].dtype == torch.float16 and g.ndata["x"].dtype == torch.float32
    assert g.astype(torch.int32).idtype == torch.int32
    r = dgl.rand_graph(20, 50)
    assert r.num_edges() == 50 and torch.unique(r.edges()[0] * 20 + r.edges()[1]).shape[0] == 50
