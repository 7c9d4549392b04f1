"""A feature codec per node type: a typed store compressed, then loaded, gives each type's features within
its codec's stated bound of the uncompressed store's, through the typed cache and stage processes; old typed
stores are read as before; a bad per-type entry is named."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.cli import main  # noqa: E402
from bgl.codec import compress_store  # noqa: E402
from bgl.errors import StoreFormatError  # noqa: E402
from bgl.store import GraphStore  # noqa: E402

from .test_rows import bound  # noqa: E402


def typed_graph(seed=0, users=40, items=60):
    """user-rates-item and its reverse; users with 5 features on their own scale, items with 3."""
    gen = torch.Generator().manual_seed(seed)
    u, i = torch.randint(0, users, (400,), generator=gen), torch.randint(0, items, (400,), generator=gen)
    g = dgl.heterograph({("user", "rates", "item"): (u, i), ("item", "rated-by", "user"): (i, u)},
                        num_nodes_dict={"user": users, "item": items})
    g.nodes["user"].data["feat"] = torch.randn(users, 5, generator=gen) * 100 + 7
    g.nodes["item"].data["feat"] = torch.rand(items, 3, generator=gen)
    g.nodes["user"].data["label"] = torch.randint(0, 3, (users,), generator=gen)
    return g


@pytest.fixture(scope="module")
def typed_store(tmp_path_factory):
    return bgl.ingest(typed_graph(), tmp_path_factory.mktemp("typed") / "plain")


def epoch(graph, **kw):
    torch.manual_seed(4)
    with bgl.DataLoader(graph, {"user": torch.arange(40)}, bgl.NeighborSampler([4, 4]), batch_size=16,
                        shuffle=True, **kw) as loader:
        return [(input_nodes, blocks[0].srcdata["feat"]) for input_nodes, _, blocks in loader]


@pytest.mark.parametrize("codec, block, keep, pipeline", [
    ("float16", 0, True, "inline"), ("bfloat16", 0, False, "inline"), ("int8", 0, False, "processes"),
    ("int8", 2, True, "thread"),
])
def test_each_type_decodes_within_its_codecs_bound(typed_store, tmp_path, codec, block, keep, pipeline):
    packed = compress_store(typed_store.path, codec, block=block, out=tmp_path / "packed", keep_float32=keep)
    assert packed.meta.version == 3 and sorted(packed.type_feat_codec) == ["item", "user"]
    assert {nt: c.dim for nt, c in packed.type_feat_codec.items()} == {"user": 5, "item": 3}
    assert sorted(packed.type_feat) == (["item", "user"] if keep else [])
    plain = epoch(typed_store)
    ours = epoch(packed.path, pipeline=pipeline, cache="lookahead", cache_ratio=0.3)
    assert len(ours) == len(plain) == 3
    for (ids_a, feat_a), (ids_b, feat_b) in zip(plain, ours):
        for nt in ("user", "item"):
            assert torch.equal(ids_a[nt], ids_b[nt])
            ids = ids_a[nt].numpy()
            x = np.asarray(typed_store.type_feat[nt])[ids]
            assert torch.equal(feat_a[nt], torch.from_numpy(x))  # the uncompressed store: its rows as they are
            assert feat_b[nt].dtype == torch.float32 and feat_b[nt].shape == feat_a[nt].shape
            c = packed.type_feat_codec[nt]
            err = np.abs(feat_b[nt].numpy().astype(np.float64) - x)
            assert (err <= bound(codec, x, np.asarray(packed.type_feat_encoded[nt])[ids], c)).all(), nt


def test_an_old_typed_store_reads_as_before(typed_store):
    g = typed_graph()
    assert typed_store.meta.version == 2 and typed_store.meta.feat_codec is None
    assert typed_store.type_feat_codec == {} and typed_store.type_feat_encoded == {}
    for input_nodes, feat in epoch(typed_store):
        for nt in ("user", "item"):
            assert torch.equal(feat[nt], g.nodes[nt].data["feat"][input_nodes[nt]])


def test_feat_dtype_decodes_each_type_into_it_and_the_cli_compresses_typed_stores(typed_store, tmp_path, capsys):
    assert main(["compress", str(typed_store.path), "--codec", "float16", "--out", str(tmp_path / "c"),
                 "--drop-float32"]) == 0
    capsys.readouterr()
    for _, feat in epoch(tmp_path / "c", feat_dtype=torch.float16):
        assert {feat[nt].dtype for nt in feat} == {torch.float16}
    assert main(["compress", str(tmp_path / "c"), "--codec", "int8"]) == 1
    assert "node type 'item' holds only encoded rows (no feat/item.npy) to encode from" in capsys.readouterr().err


def _edit(path, change):
    meta = json.loads((path / "meta.json").read_text())
    change(meta)
    (path / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("change, match", [
    (lambda m: m["feat_codec"]["by_type"].update(shop={"name": "int8", "dim": 3}),
     "feat_codec of node type 'shop': "),
    (lambda m: m["feat_codec"]["by_type"]["item"].update(dim=4), "feat_codec of node type 'item' is for 4 columns, "
                                                                 "its feat_dim is 3"),
    (lambda m: m.update(feat_codec={"name": "int8", "dim": 3}), "a typed store's feat_codec must be"),
    (lambda m: m.update(schema=None, version=3), "feat_codec: a feature codec entry needs name, dim"),
    (lambda m: m["feat_codec"]["by_type"].pop("item"), r"feat/item.npy: missing"),  # a type without codec: float rows
])
def test_a_bad_per_type_codec_entry_is_named(typed_store, tmp_path, change, match):
    compress_store(typed_store.path, "int8", out=tmp_path / "s", keep_float32=False)
    _edit(tmp_path / "s", change)
    with pytest.raises(StoreFormatError, match=match):
        GraphStore(tmp_path / "s")


@pytest.mark.parametrize("local, codec", [("", "int8"), ("0,1", "int8"), ("0,1", {"user": "int8"})])
def test_a_partition_over_servers_gives_the_stores_decoded_rows(typed_store, tmp_path, serve_partition, monkeypatch,
                                                                local, codec):
    """Each part keeps its types' encoded rows (and a type without a codec its float rows); servers send them
    encoded and co-located parts are read encoded, so the decoded batches are the compressed store's, bit for bit."""
    from bgl.partition import partition_graph

    packed = compress_store(typed_store.path, codec, out=tmp_path / "packed", keep_float32=False)
    book = partition_graph(packed, "random", 2, tmp_path / "parts", measure_samples=False)
    part = book.part_store(0)
    assert part.meta.version == 3 and part.type_feat_codec == packed.type_feat_codec
    assert sorted(part.type_feat) == sorted(packed.type_feat) == ([] if codec == "int8" else ["item"])
    want = epoch(packed.path)
    with serve_partition(book, tmp_path) as addresses:
        monkeypatch.setenv("BGL_SERVERS", ",".join(addresses))
        monkeypatch.setenv("BGL_PARTITION", str(book.path))
        monkeypatch.setenv("BGL_LOCAL_PARTS", local)
        got = epoch(str(book.path), cache="lookahead", cache_ratio=0.3)
    assert len(got) == len(want) == 3
    for (ids_a, feat_a), (ids_b, feat_b) in zip(want, got):
        for nt in ("user", "item"):
            assert torch.equal(ids_a[nt], ids_b[nt]) and torch.equal(feat_a[nt], feat_b[nt]), nt


def test_a_typed_store_without_features_is_refused_by_name(tmp_path):
    g = typed_graph()
    del g.nodes["user"].data["feat"], g.nodes["item"].data["feat"]
    bare = bgl.ingest(g, tmp_path / "bare")
    with pytest.raises(ValueError, match="has no features"):
        compress_store(bare.path, "int8", out=tmp_path / "x")


def test_a_codec_per_node_type_and_the_others_float_rows(typed_store, tmp_path):
    """``{ntype: name}`` encodes the named types only: the others keep their float rows (also with float32
    dropped), a later run adds a codec and keeps the first; batches within each codec's bound, exact elsewhere."""
    users = compress_store(typed_store.path, {"user": "int8"}, block=2, out=tmp_path / "u", keep_float32=False)
    assert {nt: c.name for nt, c in users.type_feat_codec.items()} == {"user": "int8"}
    assert sorted(users.type_feat) == ["item"] and not users.meta.feat_float32
    assert not (tmp_path / "u" / "feat" / "user.npy").exists()
    both = compress_store(users.path, {"item": "float16"}, out=tmp_path / "b")
    assert {nt: c.name for nt, c in both.type_feat_codec.items()} == {"user": "int8", "item": "float16"}
    assert both.type_feat == {} and not both.meta.feat_float32  # the users' float rows were gone already
    plain = epoch(typed_store)
    for store, coded in ((users, {"user"}), (both, {"user", "item"})):
        ours = epoch(store.path, pipeline="processes", cache="lookahead", cache_ratio=0.3)
        assert len(ours) == len(plain) == 3
        for (ids, feat_a), (_, feat_b) in zip(plain, ours):
            for nt in ("user", "item"):
                x = np.asarray(typed_store.type_feat[nt])[ids[nt].numpy()]
                if nt not in coded:
                    assert torch.equal(feat_b[nt], torch.from_numpy(x)), nt
                    continue
                c = store.type_feat_codec[nt]
                err = np.abs(feat_b[nt].numpy().astype(np.float64) - x)
                enc = np.asarray(store.type_feat_encoded[nt])[ids[nt].numpy()]
                assert (err <= bound(c.name, x, enc, c)).all(), nt


def test_the_cli_takes_a_codec_per_node_type_and_info_names_each(typed_store, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["compress", str(typed_store.path), "--codec", "user=int8", "--codec", "item=bfloat16",
                 "--out", str(out), "--drop-float32"]) == 0
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "node type    user: 40  feat 5 (float32, stored as int8)" in text
    assert "node type    item: 60  feat 3 (float32, stored as bfloat16)" in text
    assert {nt: c.name for nt, c in GraphStore(out).type_feat_codec.items()} == {"user": "int8", "item": "bfloat16"}


@pytest.mark.parametrize("argv, code, message", [
    (["--codec", "user=int4"], 2, "invalid choice: 'int4' in 'user=int4' (choose from float16, bfloat16, int8)"),
    (["--codec", "=int8"], 2, "'=int8': NTYPE=NAME needs a node type before '='"),
    (["--codec", "int8", "--codec", "user=float16"], 1, "--codec takes one NAME (every node type) or NTYPE=NAME"),
    (["--codec", "user=int8", "--codec", "user=float16"], 1, "--codec names node type 'user' twice"),
    (["--codec", "shop=int8"], 1, "unknown node type 'shop'; the graph has ['item', 'user']"),
])
def test_a_bad_per_type_codec_is_named(typed_store, tmp_path, capsys, argv, code, message):
    assert main(["compress", str(typed_store.path), *argv, "--out", str(tmp_path / "x")]) == code
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_per_type_codecs_on_a_store_without_types_and_a_featureless_type_are_refused(tmp_path, random_store):
    with pytest.raises(ValueError, match=r"a codec per node type \(\{'_N': 'int8'\}\) needs a store with node types"):
        compress_store(random_store.path, {"_N": "int8"}, out=tmp_path / "x")
    g = typed_graph()
    del g.nodes["item"].data["feat"]
    half = bgl.ingest(g, tmp_path / "half")
    with pytest.raises(ValueError, match=r"node type 'item' has no features to encode \(those with some: \['user'\]\)"):
        compress_store(half.path, {"item": "int8"}, out=tmp_path / "y")


def test_ingest_writes_a_typed_graphs_rows_with_a_codec_per_type(tmp_path):
    """``bgl ingest --feat-codec NTYPE=NAME`` (:func:`~bgl.codec.store_codec.write_encoded`): the named types
    encoded only, the others float rows, nothing else left behind."""
    from bgl.codec.store_codec import write_encoded

    g = typed_graph()
    store = write_encoded(tmp_path / "s", {"item": "float16"}, lambda path: bgl.ingest(g, path))
    assert {nt: c.name for nt, c in store.type_feat_codec.items()} == {"item": "float16"}
    assert sorted(store.type_feat) == ["user"] and sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    assert np.array_equal(np.asarray(store.type_feat["user"]), g.nodes["user"].data["feat"].numpy())
    items = np.asarray(store.type_feat_encoded["item"]).view(np.float16).astype(np.float32)
    assert np.allclose(items, g.nodes["item"].data["feat"].numpy(), rtol=1e-3)
