"""A DistDGL partition, imported as is and served by real ``bgl serve`` processes, feeds bgl.pyg.NeighborLoader."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")


@pytest.fixture(scope="module")
def served_distdgl(random_store, tmp_path_factory, serve_partition):
    """``random_store`` partitioned by DGL (2 parts), imported with its orig_nids, served by 2 servers."""
    from bgl.partition.distdgl.importer import import_distdgl

    root = tmp_path_factory.mktemp("distdgl-served")
    from bgl.dgl.real_dgl.graph_reader import csc_to_dglgraph

    st = random_store
    g = csc_to_dglgraph(st.indptr, st.indices)
    g.ndata["feat"] = torch.from_numpy(np.array(st.feat))
    g.ndata["label"] = torch.from_numpy(np.array(st.label))
    mask = torch.zeros(st.num_nodes, dtype=torch.bool)
    mask[torch.from_numpy(np.array(st.train_idx))] = True
    g.ndata["train_mask"] = mask
    orig_nids, _ = dgl.distributed.partition_graph(g, "rand", 2, str(root / "dgl"), part_method="random",
                                                   return_mapping=True)
    book = import_distdgl(root / "dgl" / "rand.json", root / "bgl", orig_ids=orig_nids.numpy())
    with serve_partition(book, root) as addresses:
        yield book, addresses


def test_pyg_loader_on_served_distdgl_partition(served_distdgl, random_store):
    from bgl.pyg import NeighborLoader

    book, addresses = served_distdgl
    orig = np.asarray(book.orig_ids)
    st = random_store
    train = book.split("train")
    assert np.array_equal(np.sort(orig[train]), np.sort(np.asarray(st.train_idx)))
    real = {(int(s), int(t)) for t in range(st.num_nodes) for s in st.indices[st.indptr[t]:st.indptr[t + 1]]}
    seen = []
    for num_neighbors in ([4, 4], [-1, -1]):
        with NeighborLoader(addresses, num_neighbors=num_neighbors, batch_size=64, input_nodes=train,
                            server_timeout=30) as loader:
            for batch in loader:
                n_id, bs = batch.n_id.numpy(), batch.batch_size
                assert np.array_equal(batch.x.numpy(), np.asarray(st.feat)[orig[n_id]])
                assert np.array_equal(batch.y.numpy(), np.asarray(st.label)[orig[n_id[:bs]]])
                s, t = orig[n_id[batch.edge_index[0].numpy()]], orig[n_id[batch.edge_index[1].numpy()]]
                edges = set(zip(s.tolist(), t.tolist()))
                assert edges <= real
                if num_neighbors == [-1, -1]:  # the seeds' full in-neighbourhoods, as in the whole store
                    for v in orig[n_id[:bs]]:
                        want = set(np.asarray(st.indices[st.indptr[v]:st.indptr[v + 1]]).tolist())
                        assert {a for a, b in edges if b == v} == want
                seen.append(n_id[:bs])
    assert np.array_equal(np.sort(np.concatenate(seen)), np.sort(np.concatenate([train, train])))
