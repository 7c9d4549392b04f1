"""A DistDGL partition of Cora, imported with ``bgl partition import-distdgl``, serves the same graph."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bgl.errors import PartitionFormatError

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
sampler = pytest.importorskip("bgl.sampler.local")
from bgl.partition.distdgl.importer import import_distdgl  # noqa: E402


def neighbour_lists(block, ids_map=None):
    """{dst id: sorted in-neighbour ids} of a one-layer block, optionally mapped through ids_map."""
    src, dst = block.src_ids.numpy(), block.dst_ids.numpy()
    ptr, idx = block.indptr.numpy(), block.indices.numpy()
    if ids_map is not None:
        src, dst = ids_map[src], ids_map[dst]
    return {int(d): sorted(src[idx[ptr[j]:ptr[j + 1]]].tolist()) for j, d in enumerate(dst)}


def store_edges(indptr, indices, offset=0):
    dst = np.repeat(np.arange(indptr.size - 1, dtype=np.int64) + offset, np.diff(indptr))
    return np.asarray(indices, np.int64), dst


@pytest.fixture(scope="module")
def distdgl_cora(cora_store, tmp_path_factory):
    """Cora partitioned by DGL's partition_graph into 2 parts, with orig_nids saved as .npy."""
    out = tmp_path_factory.mktemp("distdgl")
    from bgl.dgl.real_dgl.graph_reader import csc_to_dglgraph

    n = cora_store.num_nodes
    g = csc_to_dglgraph(cora_store.indptr, cora_store.indices)
    g.ndata["feat"] = torch.from_numpy(np.array(cora_store.feat))
    g.ndata["label"] = torch.from_numpy(np.array(cora_store.label))
    for name in ("train", "val", "test"):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(cora_store.split(name)))] = True
        g.ndata[f"{name}_mask"] = mask
    orig_nids, _ = dgl.distributed.partition_graph(g, "cora", 2, str(out / "dgl"), part_method="random",
                                                   return_mapping=True)
    np.save(out / "orig_nids.npy", orig_nids.numpy())
    return out / "dgl" / "cora.json", out / "orig_nids.npy", out


def test_import_keeps_every_node_and_edge_once(cora_store, distdgl_cora):
    config, orig_path, out = distdgl_cora
    book = import_distdgl(config, out / "bgl", orig_ids=orig_path)
    orig = np.asarray(book.orig_ids)
    assert (book.num_parts, book.num_nodes, book.num_edges) == (2, cora_store.num_nodes, cora_store.num_edges)
    assert np.array_equal(np.sort(orig), np.arange(cora_store.num_nodes))
    dgl_ranges = json.loads(config.read_text())["node_map"]["_N"]
    assert [[int(book.bounds[k]), int(book.bounds[k + 1])] for k in range(2)] == dgl_ranges
    got_src, got_dst, train = [], [], []
    for k in range(2):
        part = book.part_store(k)
        s, e = int(book.bounds[k]), int(book.bounds[k + 1])
        src, dst = store_edges(np.asarray(part.indptr), part.indices, s)
        got_src.append(orig[src])
        got_dst.append(orig[dst])
        assert np.array_equal(np.asarray(part.feat), np.asarray(cora_store.feat)[orig[s:e]])
        assert np.array_equal(np.asarray(part.label), np.asarray(cora_store.label)[orig[s:e]])
        assert part.num_classes == cora_store.num_classes
        train.append(orig[np.asarray(part.train_idx)])
    whole_src, whole_dst = store_edges(np.asarray(cora_store.indptr), cora_store.indices)
    key = lambda s, d: np.sort(d * cora_store.num_nodes + s)
    assert np.array_equal(key(np.concatenate(got_src), np.concatenate(got_dst)), key(whole_src, whole_dst))
    assert np.array_equal(np.sort(np.concatenate(train)), np.sort(np.asarray(cora_store.train_idx)))


def test_imported_parts_sample_like_the_whole_store(cora_store, distdgl_cora):
    config, orig_path, out = distdgl_cora
    book = import_distdgl(config, out / "bgl-s", orig_ids=orig_path)
    orig = np.asarray(book.orig_ids)
    whole = sampler.LocalSampler(cora_store)
    checked = 0
    for k in range(book.num_parts):
        seeds = np.asarray(book.part_store(k).train_idx)
        part_sampler = sampler.LocalSampler(book.part_store(k))
        got = neighbour_lists(part_sampler.sample_blocks(seeds, [-1], seed=1)[0], orig)
        want = neighbour_lists(whole.sample_blocks(np.sort(orig[seeds]), [-1], seed=1)[0])
        assert got == want
        checked += len(got)
    assert checked == cora_store.train_idx.size


def test_cli_import_without_orig_ids_and_bad_inputs(distdgl_cora, tmp_path):
    config, _, _ = distdgl_cora
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    run = lambda *a: subprocess.run([sys.executable, "-m", "bgl", *map(str, a)], capture_output=True,
                                    text=True, timeout=300, env=env)
    r = run("partition", "import-distdgl", config, tmp_path / "p")
    assert r.returncode == 0, r.stderr
    assert "2 parts" in r.stdout and "identity" in r.stdout
    from bgl.partition import open_partition

    book = open_partition(tmp_path / "p")
    assert np.array_equal(np.asarray(book.orig_ids), np.arange(book.num_nodes))
    with pytest.raises(FileExistsError):
        import_distdgl(config, tmp_path / "p")
    (tmp_path / "bad.json").write_text('{"graph_name": "x"}')
    with pytest.raises(PartitionFormatError, match="not a DistDGL partition config"):
        import_distdgl(tmp_path / "bad.json", tmp_path / "q")
    with pytest.raises(PartitionFormatError, match="permutation|must be int"):
        import_distdgl(config, tmp_path / "r", orig_ids=np.zeros(book.num_nodes, np.int64))
    assert sorted(os.listdir(tmp_path)) == ["bad.json", "p"]
    from bgl.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["partition", "import-distdgl", "c.json", "o", "--orig-ids", "x.npy"])
    assert (args.part_config, args.out, args.orig_ids) == ("c.json", "o", "x.npy")
    args = parser.parse_args(["partition", "store", "out", "--parts", "2"])  # the usual form is unchanged
    assert (args.store, args.out, args.parts) == ("store", "out", 2)


def test_read_config_old_node_map_and_refusals(tmp_path):
    from bgl.partition.distdgl.importer import read_config

    base = {"graph_name": "g", "num_nodes": 10, "num_parts": 2, "part-0": {"part_graph": "p0/graph.dgl"},
            "part-1": {"part_graph": "p1/graph.dgl"}}
    cfg = tmp_path / "g.json"
    cfg.write_text(json.dumps({**base, "node_map": {"_N": [4, 10]}}))  # DGL's old form: end ids only
    assert read_config(cfg)[1].tolist() == [0, 4, 10]
    cfg.write_text(json.dumps({**base, "node_map": {"_N": [[0, 4], [5, 10]]}}))
    with pytest.raises(PartitionFormatError, match="contiguously"):
        read_config(cfg)
    cfg.write_text(json.dumps({**base, "node_map": {"user": [[0, 4], [4, 6]], "item": [[6, 8], [8, 10]]}}))
    with pytest.raises(PartitionFormatError, match="homogeneous"):
        read_config(cfg)
    cfg.write_text(json.dumps({**base, "node_map": {"_N": [[0, 4], [4, 10]]}, "part-1": {}}))
    with pytest.raises(PartitionFormatError, match="part-1"):
        read_config(cfg)
