"""Part stores serve exactly the neighbourhoods of the unpartitioned store (via bgl.sampler)."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.partition import partition_graph

sampler = pytest.importorskip("bgl.sampler.local")


def neighbour_lists(block, ids_map=None):
    """{dst id: sorted in-neighbour ids} of a one-layer block, optionally mapped through ids_map."""
    src = block.src_ids.numpy()
    ptr, idx = block.indptr.numpy(), block.indices.numpy()
    dst = block.dst_ids.numpy()
    if ids_map is not None:
        src, dst = ids_map[src], ids_map[dst]
    return {int(d): sorted(src[idx[ptr[j]:ptr[j + 1]]].tolist()) for j, d in enumerate(dst)}


@pytest.mark.parametrize("method", ["random", "bgl"])
def test_part_sampling_matches_whole_graph(planted, tmp_path, method):
    book = partition_graph(planted, method, 3, tmp_path / "p", measure_samples=False)
    orig = np.asarray(book.orig_ids)
    whole = sampler.LocalSampler(planted)
    checked = 0
    for k in range(book.num_parts):
        seeds = np.asarray(book.part_store(k).train_idx)  # new ids owned by part k
        part_sampler = sampler.LocalSampler(book.part_store(k))
        got = neighbour_lists(part_sampler.sample_blocks(seeds, [-1], seed=1)[0], orig)
        want = neighbour_lists(whole.sample_blocks(np.sort(orig[seeds]), [-1], seed=1)[0])
        assert got == want
        checked += len(got)
        # a part refuses seeds it does not own
        other = int(book.bounds[(k + 1) % book.num_parts])
        with pytest.raises(ValueError):
            part_sampler.sample_blocks(np.array([other]), [-1])
    assert checked == planted.train_idx.size
