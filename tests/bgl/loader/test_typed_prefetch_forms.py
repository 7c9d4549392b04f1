"""DGL's forms of ``prefetch_node_feats`` / ``prefetch_labels`` on typed graphs, with bgl's sampler and DGL's.

DGL takes a list of names or ``{ntype: [names]}``; bgl's ``NeighborSampler`` once kept a dict's keys
(the node types) as field names, so the rows landed under ``srcdata["paper"]`` and the loop died far
away on a KeyError (issue #44).  Both samplers now resolve through one place
(:mod:`bgl.loader.sampler_options`) and give the same batches.
"""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.loader.sampler_options import prefetch_form, prefetch_names, resolve_sampler  # noqa: E402

from .test_hetero_loader import paper_word_graph  # noqa: E402

FANOUTS = [2, 2]


def _batches(graph, sampler, seed=3):
    torch.manual_seed(seed)
    return list(bgl.DataLoader(graph, {"paper": torch.arange(40)}, sampler, batch_size=16, shuffle=True))


def _rows(block_data, key):
    return {nt: t.clone() for nt, t in block_data[key].items()}


@pytest.mark.parametrize("feats", [{"paper": ["feat"]}, {"paper": ["feat"], "word": ["feat"]}, {"paper": "feat"}])
def test_dict_forms_give_the_same_batches_as_dgls_sampler_object(feats):
    g = paper_word_graph()
    labels = {"paper": ["label"]}
    ours = _batches(g, bgl.NeighborSampler(FANOUTS, prefetch_node_feats=feats, prefetch_labels=labels))
    theirs = _batches(g, dgl.dataloading.NeighborSampler(FANOUTS, prefetch_node_feats=feats,
                                                         prefetch_labels=labels))
    assert len(ours) == len(theirs) == 3
    for (in_a, out_a, blocks_a), (in_b, out_b, blocks_b) in zip(ours, theirs):
        assert all(torch.equal(in_a[nt], in_b[nt]) for nt in in_b)
        assert torch.equal(out_a["paper"], out_b["paper"])
        feat = blocks_a[0].srcdata["feat"]
        assert "paper" in feat, "the named type's rows must be under the field name, not the type name"
        for nt, rows in feat.items():
            assert torch.equal(rows, g.nodes[nt].data["feat"][in_a[nt]])
            assert torch.equal(rows, blocks_b[0].srcdata["feat"][nt])
        label = blocks_a[-1].dstdata["label"]
        assert torch.equal(label["paper"], g.nodes["paper"].data["label"][out_a["paper"]])
        assert torch.equal(label["paper"], blocks_b[-1].dstdata["label"]["paper"])


def test_dict_forms_read_a_typed_store_by_field_name(tmp_path):
    g = paper_word_graph()
    store = bgl.ingest(g, tmp_path / "pw")
    sampler = bgl.NeighborSampler(FANOUTS, prefetch_node_feats={"paper": ["x"], "word": ["x"]},
                                  prefetch_labels={"paper": ["y"]})
    for input_nodes, output_nodes, blocks in _batches(store, sampler):
        assert set(blocks[0].srcdata["x"]) == {"paper", "word"}
        for nt, rows in blocks[0].srcdata["x"].items():
            assert torch.equal(rows, g.nodes[nt].data["feat"][input_nodes[nt]].to(rows.dtype))
        assert torch.equal(blocks[-1].dstdata["y"]["paper"], g.nodes["paper"].data["label"][output_nodes["paper"]])


def test_several_field_names_of_a_dglgraph_are_read_as_dgl_reads_them():
    g = paper_word_graph()
    sampler = bgl.NeighborSampler(FANOUTS, prefetch_node_feats={"paper": ["feat", "train_mask"]},
                                  prefetch_labels={"paper": ["label"]})
    for input_nodes, _, blocks in _batches(g, sampler):
        src = blocks[0].srcdata
        assert torch.equal(src["feat"]["paper"], g.nodes["paper"].data["feat"][input_nodes["paper"]])
        assert torch.equal(src["train_mask"]["paper"], g.nodes["paper"].data["train_mask"][input_nodes["paper"]])


def test_a_dict_naming_a_node_type_the_graph_lacks_is_refused_naming_it():
    sampler = bgl.NeighborSampler(FANOUTS, prefetch_node_feats={"author": ["feat"]})
    with pytest.raises(ValueError, match="node type 'author'.*'paper', 'word'"):
        bgl.DataLoader(paper_word_graph(), {"paper": torch.arange(4)}, sampler, batch_size=2)


def test_several_names_on_a_typed_store_are_refused_naming_them(tmp_path):
    store = bgl.ingest(paper_word_graph(), tmp_path / "pw")
    sampler = bgl.NeighborSampler(FANOUTS, prefetch_node_feats={"paper": ["feat", "year"]})
    with pytest.raises(ValueError, match=r"\['feat', 'year'\].*one node feature array per type"):
        bgl.DataLoader(store, {"paper": torch.arange(4)}, sampler, batch_size=2)


def test_prefetch_forms_resolve_to_field_names():
    assert prefetch_names(prefetch_form("feat", "p")) == ["feat"]  # one name, not its letters
    assert prefetch_names(prefetch_form(("feat", "x"), "p")) == ["feat", "x"]
    assert prefetch_names(prefetch_form({"b": ["y"], "a": "x"}, "p")) == ["x", "y"]
    assert prefetch_form(None, "p") == []
    with pytest.raises(TypeError, match="prefetch_node_feats must be field names"):
        bgl.NeighborSampler(FANOUTS, prefetch_node_feats=[1, 2])
    with pytest.raises(TypeError, match="prefetch_labels must map node type names"):
        bgl.NeighborSampler(FANOUTS, prefetch_labels={"paper": [3]})
    options = resolve_sampler(dgl.dataloading.NeighborSampler(FANOUTS, prefetch_node_feats={"paper": ["feat"]},
                                                              prefetch_labels={"paper": ["label"]}))
    assert options.feat_keys == ("feat",) and options.label_keys == ("label",)
    assert options.named_types == ("paper",) and options.from_dgl
